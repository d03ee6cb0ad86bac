// SPDX-License-Identifier: LGPL-2.1-or-later
/* thp_query(): per-mapping THP state from /proc/PID/smaps. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "folio_scan.h"
#include "internal.h"
#include "proc.h"
#include "syscall.h"

/* Does @line start with the string literal @lit? */
#define HAS_PREFIX(line, len, lit) ((len) >= sizeof(lit) - 1 && !memcmp((line), (lit), sizeof(lit) - 1))

/*
 * "Name:   1234 kB" from @skip on, in bytes; digits read in place.  The
 * kernel right-aligns the number before " kB": read it from there back,
 * not through the padding.
 */
static uint64_t kb_field(const char *line, size_t len, size_t skip)
{
	uint64_t v = 0;
	size_t i, end = len;

	/* Most fields of most mappings are "       0 kB": one compare. */
	if (len >= skip + 5 && !memcmp(line + len - 5, " 0 kB", 5))
		return 0;
	if (len >= skip + 4 && !memcmp(line + len - 3, " kB", 3))
		end = len - 3;
	i = end;
	while (i > skip && line[i - 1] >= '0' && line[i - 1] <= '9')
		i--;
	if (i == end) {
		/* Not right-aligned digits: the first number after @skip. */
		for (i = skip; i < len && line[i] == ' '; i++)
			;
		end = len;
	}
	for (; i < end && line[i] >= '0' && line[i] <= '9' && v < UINT64_MAX / 10240; i++)
		v = v * 10 + (uint64_t)(line[i] - '0');
	return v * 1024;
}

/* Header: "start-end perms offset dev inode   name". */
/* The rest of a header whose range [start, end) maps_parse_line() has read. */
static void parse_header(const char *line, size_t len, uint64_t start, uint64_t end,
			 struct thp_mapping_state *m, struct smaps_extra *x)
{
	/* The range is read: start at the space after it. */
	const char *sp = memchr(line, ' ', len);
	size_t field = 0, i = sp ? (size_t)(sp - line) : len;

	memset(m, 0, sizeof(*m));
	memset(x, 0, sizeof(*x));
	m->start = start;
	m->end = end;
	while (i < len && field < 5) {
		while (i < len && line[i] != ' ')
			i++;
		/* The kernel pads the name to column 73: most of a header is spaces. */
		for (uint64_t w; i + 8 <= len; i += 8) {
			memcpy(&w, line + i, sizeof(w));
			if (w != 0x2020202020202020ULL)
				break;
		}
		while (i < len && line[i] == ' ')
			i++;
		field++;
		/* perms "rwxp": the fourth letter is p(rivate) or s(hared). */
		if (field == 1 && i + 3 < len)
			x->shared = line[i + 3] == 's';
		/* inode: anything but "0" is a file. */
		if (field == 4 && i < len)
			x->file = !(line[i] == '0' && (i + 1 == len || line[i + 1] == ' '));
	}
	if (i < len) {
		size_t n = len - i < sizeof(m->name) - 1 ? len - i : sizeof(m->name) - 1;

		memcpy(m->name, line + i, n);
	}
	m->anonymous = m->name[0] != '/';
}

static void parse_vmflags(const char *line, size_t len, struct thp_mapping_state *m,
			  struct smaps_extra *x)
{
	for (size_t i = 9; i + 2 <= len; i += 3) {
		if (line[i] == 'h' && line[i + 1] == 'g')
			m->advised_huge = true;
		if (line[i] == 'n' && line[i + 1] == 'h')
			m->advised_nohuge = true;
		if ((line[i] == 'i' && line[i + 1] == 'o') || (line[i] == 'p' && line[i + 1] == 'f'))
			x->special = true;
	}
}

bool smaps_private_anon(const struct thp_mapping_state *m, const struct smaps_extra *x)
{
	if (x->shared || x->file || x->special)
		return false;
	/* [vdso], [vvar], [vsyscall] and the like are anonymous but not memory. */
	return !m->name[0] || !strcmp(m->name, "[heap]") || !strcmp(m->name, "[stack]") ||
	       !strncmp(m->name, "[anon:", 6);
}

uint64_t aligned_span(uint64_t start, uint64_t end, uint64_t unit)
{
	uint64_t s = (start + unit - 1) & ~(unit - 1), e = end & ~(unit - 1);

	return unit && s < e && s >= start ? e - s : 0;
}

void smaps_reader_init(struct smaps_reader *sr, int fd)
{
	line_reader_init(&sr->lr, fd);
	sr->have = false;
}

int smaps_open(struct smaps_reader *sr, const struct thp_target *t, char *buf, size_t cap)
{
	int err;

	sr->have = false;
	err = line_reader_open_proc(&sr->lr, t, "smaps");
	if (err)
		return err;
	/* 64 KiB a read(): one in eight system calls at 60k mappings. */
	if (buf)
		line_reader_lend(&sr->lr, buf, cap);
	else
		line_reader_grow(&sr->lr, SMAPS_READ_SIZE);
	return 0;
}

/*
 * An entry is complete when the next header (or the end) is read, so the
 * reader keeps the entry being filled and hands it out then.
 */
int smaps_next(struct smaps_reader *sr, struct thp_mapping_state *m)
{
	return smaps_next_x(sr, m, NULL);
}

static const bool smaps_line_matters[256] = {
	['A'] = true, ['R'] = true, ['T'] = true, ['V'] = true,
	['0' ... '9'] = true, ['a' ... 'f'] = true,
};

int smaps_next_x(struct smaps_reader *sr, struct thp_mapping_state *m, struct smaps_extra *x)
{
	for (;;) {
		const char *line = NULL;
		size_t len = 0;
		uint64_t s, e;
		int r = line_reader_next_if(&sr->lr, smaps_line_matters, &line, &len);

		if (r < 0)
			return r;
		if (r == 0) {
			if (!sr->have)
				return 0;
			*m = sr->cur;
			if (x)
				*x = sr->cur_x;
			sr->have = false;
			return 1;
		}
		/*
		 * About 24 lines an entry, and only six matter: dispatch on
		 * the first byte.  Field names start upper case; a header
		 * starts with a lower-case hex digit.  The reader passes over
		 * the lines whose first byte smaps_line_matters[] does not mark.
		 */
		switch (line[0]) {
		case 'A':
			if (sr->have && HAS_PREFIX(line, len, "AnonHugePages:"))
				sr->cur.anon_huge_bytes = kb_field(line, len, 14);
			else if (sr->have && HAS_PREFIX(line, len, "Anonymous:"))
				sr->cur_x.anon_bytes = kb_field(line, len, 10);
			continue;
		case 'R':
			if (sr->have && HAS_PREFIX(line, len, "Rss:"))
				sr->cur.rss_bytes = kb_field(line, len, 4);
			continue;
		case 'T':
			if (sr->have && HAS_PREFIX(line, len, "THPeligible:"))
				sr->cur.thp_eligible = kb_field(line, len, 12) != 0;
			continue;
		case 'V':
			if (sr->have && HAS_PREFIX(line, len, "VmFlags:"))
				parse_vmflags(line, len, &sr->cur, &sr->cur_x);
			continue;
		case '0' ... '9':
		case 'a' ... 'f':
			break;
		default:
			continue;
		}
		if (maps_parse_line(line, len, &s, &e) == 0) {
			bool had = sr->have;

			if (had) {
				*m = sr->cur;
				if (x)
					*x = sr->cur_x;
			}
			parse_header(line, len, s, e, &sr->cur, &sr->cur_x);
			sr->have = true;
			if (had)
				return 1;
		}
	}
}

/*
 * Headers and VmFlags only.  VmFlags is the last line of every entry (the
 * kernel has printed it there since 3.8), so after a header the reader
 * jumps to the next line that starts with 'V', and the line after that is
 * the next header: two lines an entry looked at instead of 24.
 */
int smaps_next_advice(struct smaps_reader *sr, struct smaps_advice *a)
{
	for (;;) {
		const char *line = NULL;
		size_t len = 0;
		uint64_t s, e;
		int r = sr->have ? line_reader_next_starting(&sr->lr, 'V', &line, &len)
				 : line_reader_next(&sr->lr, &line, &len);

		if (r <= 0) {
			if (r < 0 || !sr->have)
				return r;
			*a = sr->cur_advice;
			sr->have = false;
			return 1;
		}
		if (sr->have) {
			/* Another 'V' line (none today) is passed over: VmFlags is the last. */
			if (!HAS_PREFIX(line, len, "VmFlags:"))
				continue;
			for (size_t i = 9; i + 2 <= len; i += 3) {
				sr->cur_advice.huge |= line[i] == 'h' && line[i + 1] == 'g';
				sr->cur_advice.nohuge |= line[i] == 'n' && line[i + 1] == 'h';
			}
			*a = sr->cur_advice;
			sr->have = false;
			return 1;
		}
		/* The line after a VmFlags line (or the first): a header. */
		if (maps_parse_line(line, len, &s, &e) == 0) {
			sr->cur_advice = (struct smaps_advice){ .start = s, .end = e };
			sr->have = true;
		}
	}
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
	caps_folio_sizes(&q->pi);
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
