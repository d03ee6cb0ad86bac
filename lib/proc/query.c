// SPDX-License-Identifier: LGPL-2.1-or-later
/* thp_query(): per-mapping THP state from /proc/PID/smaps. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "folio_scan.h"
#include "internal.h"
#include "proc.h"
#include "syscall.h"

/* Bytes of [@start, @end) in whole @unit-aligned units. */
static uint64_t aligned_span(uint64_t start, uint64_t end, uint64_t unit)
{
	uint64_t s = (start + unit - 1) & ~(unit - 1), e = end & ~(unit - 1);

	return unit && s < e && s >= start ? e - s : 0;
}

/* What thp_query() gathers by folio size (THP_QUERY_F_FOLIO_SIZES). */
struct query_sizes {
	struct thp_probe_info pi;
	struct folio_scan fs;
	bool scanning;
	uint32_t source;
	uint64_t min_huge_size; /* smallest size a HUGE-advised mapping can get; 0 none */
	uint64_t sized_alignable;
	uint64_t base, other, bytes[THP_PROBE_MAX_SIZES];
};

/* @c in bytes by the probe's sizes: @base, @other and @bytes[] grow. */
static void sizes_add(const struct query_sizes *q, const struct folio_counts *c, size_t page_size,
		      uint64_t *base, uint64_t *other, uint64_t *bytes)
{
	size_t n = q->pi.nr_sizes < THP_PROBE_MAX_SIZES ? q->pi.nr_sizes : THP_PROBE_MAX_SIZES;

	*base += c->pages[0] * page_size;
	*other += c->other_pages * page_size;
	for (unsigned int order = 1; order <= FOLIO_MAX_ORDER; order++) {
		uint64_t size = (uint64_t)page_size << order, b = c->pages[order] * page_size;
		size_t i;

		if (!b)
			continue;
		for (i = 0; i < n && q->pi.sizes[i].size != size; i++)
			;
		if (i < n)
			bytes[i] += b;
		else
			*other += b;
	}
}

static int query_sizes_open(struct query_sizes *q, const struct thp_target *t)
{
	const struct thp_caps *c = caps_get();
	int r;

	memset(q, 0, sizeof(*q));
	probe_folio_sizes(&q->pi);
	for (uint32_t i = 0; i < q->pi.nr_sizes && i < THP_PROBE_MAX_SIZES; i++) {
		if (q->pi.sizes[i].huge_policy) {
			q->min_huge_size = q->pi.sizes[i].size;
			break;
		}
	}
	r = folio_scan_open(&q->fs, t, c->page_size, c->pmd_size);
	if (r < 0)
		return r;
	q->scanning = r == 0;
	q->source = q->scanning ? THP_FOLIO_SOURCE_KPAGEFLAGS : THP_FOLIO_SOURCE_NONE;
	return 0;
}

/* One matching mapping: its folios counted, and written to @mf if not NULL. */
static int query_sizes_mapping(struct query_sizes *q, const struct thp_mapping_state *m,
			       const struct smaps_extra *x, struct thp_mapping_folios *mf)
{
	struct folio_counts fc;
	int r;

	if (mf)
		memset(mf, 0, sizeof(*mf));
	if (!q->scanning || !x->anon_bytes)
		return 0;
	memset(&fc, 0, sizeof(fc));
	/*
	 * pagemap is read entry by entry over the whole span: a mapping of a
	 * terabyte or more (a sanitizer's shadow) would take minutes.  Every
	 * figure is then unknown, as below, rather than partial.
	 */
	r = m->end - m->start >= (1ull << 40) ? 1 : folio_scan_range(&q->fs, m->start, m->end, &fc);
	if (r < 0)
		return r;
	if (r == 1) {
		/* PFNs hidden or span too large: every figure is unknown, also those summed. */
		q->scanning = false;
		q->source = THP_FOLIO_SOURCE_NONE;
		return 0;
	}
	sizes_add(q, &fc, q->fs.page_size, &q->base, &q->other, q->bytes);
	if (mf)
		sizes_add(q, &fc, q->fs.page_size, &mf->base_bytes, &mf->other_bytes, mf->bytes);
	return 0;
}

/* The VER2 results; all 0 (source none) unless the sizes were read. */
static void query_sizes_write(const struct query_sizes *q, struct thp_query_opts *opts, bool asked)
{
	bool known = asked && q->source == THP_FOLIO_SOURCE_KPAGEFLAGS;
	uint32_t n = asked ? q->pi.nr_sizes : 0;

	if (n > THP_PROBE_MAX_SIZES)
		n = THP_PROBE_MAX_SIZES;
	opts->folio_source = asked ? q->source : THP_FOLIO_SOURCE_NONE;
	opts->nr_sizes = n;
	opts->anon_base_bytes = known ? q->base : 0;
	opts->anon_other_bytes = known ? q->other : 0;
	opts->anon_sized_alignable_bytes = asked ? q->sized_alignable : 0;
	memset(opts->sizes, 0, sizeof(opts->sizes));
	for (uint32_t i = 0; i < n; i++) {
		opts->sizes[i].size = q->pi.sizes[i].size;
		opts->sizes[i].bytes = known ? q->bytes[i] : 0;
	}
}

THP_API int thp_query(struct thp_query_opts *opts)
{
	struct smaps_reader sr;
	struct thp_target t;
	struct thp_mapping_state cur;
	struct smaps_extra x;
	struct query_sizes *q = NULL;
	uint64_t anon = 0, anon_huge = 0, alignable = 0;
	size_t written = 0;
	bool read_any = false, want_sizes;
	uint64_t qend;
	bool thp_off = false;
	int err;

	report_clear_detail();
	err = opts_check(opts, sizeof(*opts), THP_QUERY_OPTS_SIZE_VER0);
	_Static_assert(sizeof(*opts) == THP_QUERY_OPTS_SIZE_VER2, "published size");
	if (err)
		return ret_errno(err);
	if (opts->flags & ~THP_QUERY_F_FOLIO_SIZES) {
		report_set_detail("unknown flags 0x%x", opts->flags);
		return ret_errno(-EINVAL);
	}
	want_sizes = opts->flags & THP_QUERY_F_FOLIO_SIZES;
	if (want_sizes && !OPTS_HAS(opts, sizes)) {
		report_set_detail("THP_QUERY_F_FOLIO_SIZES needs sz >= THP_QUERY_OPTS_SIZE_VER2 (%d), "
				  "not %llu", THP_QUERY_OPTS_SIZE_VER2, (unsigned long long)opts->sz);
		return ret_errno(-EINVAL);
	}
	if (opts->states_cap && !opts->states) {
		report_set_detail("states is NULL but states_cap is %llu",
				  (unsigned long long)opts->states_cap);
		return ret_errno(-EINVAL);
	}
	if (opts->len && opts->addr + opts->len < opts->addr)
		return ret_errno(-EINVAL);
	qend = opts->len ? opts->addr + opts->len : UINT64_MAX;
	err = target_open(opts->pidfd, &t);
	if (err)
		return ret_errno(err);
	if (OPTS_HAS(opts, anon_alignable_bytes)) {
		err = proc_thp_disabled(&t);
		if (err < 0)
			goto out;
		thp_off = err == 1;
	}
	if (want_sizes) {
		q = malloc(sizeof(*q));
		if (!q) {
			err = -ENOMEM;
			goto out;
		}
		err = query_sizes_open(q, &t);
		if (err) {
			free(q);
			q = NULL;
			goto out;
		}
	}
	err = smaps_open(&sr, &t, NULL, 0);
	if (err)
		goto out;
	opts->states_needed = 0;
	/* Address order: nothing past qend can match, so stop reading there. */
	while ((err = smaps_next_x(&sr, &cur, &x)) == 1 && cur.start < qend) {
		struct thp_mapping_folios *mf = NULL;

		read_any = true;
		if (cur.end <= opts->addr)
			continue;
		if (written < opts->states_cap) {
			if (OPTS_HAS(opts, folios) && opts->folios)
				mf = &opts->folios[written];
			opts->states[written++] = cur;
		}
		opts->states_needed++;
		anon += x.anon_bytes;
		anon_huge += cur.anon_huge_bytes;
		if (!thp_off && !cur.advised_nohuge && smaps_private_anon(&cur, &x)) {
			uint64_t span = aligned_span(cur.start, cur.end, caps_get()->pmd_size);

			alignable += x.anon_bytes < span ? x.anon_bytes : span;
			if (q && q->min_huge_size) {
				span = aligned_span(cur.start, cur.end, q->min_huge_size);
				q->sized_alignable += x.anon_bytes < span ? x.anon_bytes : span;
			}
		}
		if (q) {
			err = query_sizes_mapping(q, &cur, &x, mf);
			if (err)
				break;
		} else if (mf) {
			memset(mf, 0, sizeof(*mf));
		}
	}
	if (err > 0)
		err = 0;
	/*
	 * A live process always has mappings: smaps empty from its start
	 * means the address space was gone (a truncated read is -ESRCH from
	 * the reader already).
	 */
	if (!err && !read_any && qend == UINT64_MAX)
		err = -ESRCH;
	line_reader_close(&sr.lr);
	if (!err && OPTS_HAS(opts, anon_alignable_bytes)) {
		opts->anon_bytes = anon;
		opts->anon_huge_bytes = anon_huge;
		opts->anon_alignable_bytes = alignable;
	}
	if (!err && OPTS_HAS(opts, sizes))
		query_sizes_write(q, opts, want_sizes);
	if (!err) {
		err = target_alive(&t);
		if (!err)
			err = (int)written;
	}
out:
	err = proc_explain_gone(&t, err, "read the memory of");
	if (q) {
		folio_scan_close(&q->fs);
		free(q);
	}
	target_close(&t);
	return ret_errno(err);
}
