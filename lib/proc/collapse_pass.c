// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_collapse(): one khugepaged-like pass over a process, from user space.
 *
 * 1. smaps, read once: which mappings are private anonymous memory the
 *    policy allows (not nohuge, THP not disabled), and whether any of their
 *    resident anonymous memory is not huge yet (Anonymous > AnonHugePages):
 *    a mapping that is all huge costs nothing more.
 * 2. For the rest, resident pages per 2 MiB extent, from the target's
 *    pagemap (extent_count.c).
 * 3. process_madvise(MADV_COLLAPSE) per extent: over a longer range the
 *    kernel stops at the first extent it cannot collapse (an empty one is
 *    enough), so one call per extent is what makes the pass complete.
 *    Where the caller can read folio sizes (kpageflags), each extent's
 *    pages are counted by folio size first: memory in smaller large folios
 *    is reported as such, and kept when the PMD size is set to never.
 *    Not where the kernel says no such folio exists (its per-size
 *    counters): reading kpageflags run by run cost more than the pass.
 *    An extent whose pages are mostly mapped by another process too (a
 *    fork's copy-on-write pages) is left alone, as khugepaged does:
 *    collapsing would copy them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock_ns.h"
#include "collapse_extents.h"
#include "compat.h"
#include "extent_count.h"
#include "folio_scan.h"
#include "access.h"
#include "internal.h"
#include "proc.h"
#include "syscall.h"

#define SCAN_WINDOW 64 /* extents counted at a time (128 MiB) */

_Static_assert(sizeof(struct thp_collapse_opts) == THP_COLLAPSE_OPTS_SIZE_VER2,
	       "published size of struct thp_collapse_opts");

/* The aligned part of an eligible mapping that holds non-huge anonymous memory. */
struct span {
	uint64_t start, end;
};

struct pass {
	struct thp_collapse_opts *o;
	struct thp_target *t;
	uint64_t pmd, page;
	uint32_t min_present;
	uint32_t max_shared; /* pages per PMD: no limit */
	struct extent_count ec;
	uint64_t t0;
	struct span *spans;
	size_t nr_spans, cap_spans;
	struct folio_scan fs;
	bool fs_open;    /* fs is open */
	bool folios;     /* folio sizes are read */
	bool small_none; /* the kernel says no smaller large anonymous folio exists: none read */
	bool pmd_never;  /* per-size controls say never for the PMD size */
	unsigned int pmd_order;
	uint64_t small_before, small_collapsed;
	uint64_t small_before_extent; /* of the extent being collapsed */
	/*
	 * pagemap without PAGEMAP_SCAN and without frame numbers (no
	 * CAP_SYS_ADMIN, before 6.7) cannot tell a PMD-mapped extent from one
	 * in base pages, and the kernel accepts MADV_COLLAPSE on either.  Such
	 * extents are collapsed "unproven"; the AnonHugePages gain of their
	 * mappings since huge_mark decides how many of them count as collapsed.
	 */
	uint64_t unproven;  /* extents accepted since huge_mark was read */
	uint64_t huge_mark; /* the spans' mappings' AnonHugePages when unproven was last 0 */
};

/* A khugepaged tunable (max_ptes_none, max_ptes_shared), capped at @cap, or @fallback. */
static uint32_t khugepaged_tunable(const char *name, uint32_t cap, uint32_t fallback)
{
	char path[96], buf[32];
	unsigned long v;
	long n;

	snprintf(path, sizeof(path), "/sys/kernel/mm/transparent_hugepage/khugepaged/%s", name);
	n = sys_read_file(path, buf, sizeof(buf));
	if (n <= 0)
		return fallback;
	v = strtoul(buf, NULL, 10);
	return v >= cap ? cap : (uint32_t)v;
}

/* The kernel's own threshold: khugepaged collapses with up to max_ptes_none empty. */
static uint32_t default_min_present(uint32_t pages_per_pmd)
{
	uint32_t none = khugepaged_tunable("max_ptes_none", pages_per_pmd, pages_per_pmd - 1);

	return none >= pages_per_pmd ? 1 : pages_per_pmd - none;
}

/* khugepaged's limit on pages mapped by another process too (255 by default). */
static uint32_t default_max_shared(uint32_t pages_per_pmd)
{
	return khugepaged_tunable("max_ptes_shared", pages_per_pmd, pages_per_pmd / 2 - 1);
}

static int validate(struct thp_collapse_opts *o, uint32_t pages_per_pmd)
{
	int err = opts_check(o, sizeof(*o), THP_COLLAPSE_OPTS_SIZE_VER0);

	if (err)
		return err;
	if ((OPTS_HAS(o, reserved2) && o->reserved2) || (OPTS_HAS(o, reserved3) && o->reserved3)) {
		report_set_detail("reserved fields must be zero");
		return -EINVAL;
	}
	if (OPTS_HAS(o, max_shared_pages) && o->max_shared_pages > pages_per_pmd) {
		report_set_detail("max_shared_pages %u is above the %u pages of a huge page",
				  o->max_shared_pages, pages_per_pmd);
		return -EINVAL;
	}
	if (o->flags & ~(THP_COLLAPSE_F_PEER_ONLY | THP_COLLAPSE_F_CHECK_ONLY)) {
		report_set_detail("unknown flags 0x%x",
				  o->flags & ~(THP_COLLAPSE_F_PEER_ONLY | THP_COLLAPSE_F_CHECK_ONLY));
		return -EINVAL;
	}
	if (o->reserved0 || o->reserved1) {
		report_set_detail("reserved fields must be zero");
		return -EINVAL;
	}
	if (o->failures_cap && !o->failures) {
		report_set_detail("failures is NULL but failures_cap is %llu",
				  (unsigned long long)o->failures_cap);
		return -EINVAL;
	}
	if (o->min_present_pages > pages_per_pmd) {
		report_set_detail("min_present_pages %u is above the %u pages of a huge page",
				  o->min_present_pages, pages_per_pmd);
		return -EINVAL;
	}
	return 0;
}

static void reset_results(struct thp_collapse_opts *o)
{
	o->failures_needed = 0;
	o->mappings_seen = o->mappings_eligible = o->mappings_nohuge = 0;
	o->extents_collapsed = o->extents_sparse = o->extents_failed = 0;
	o->extents_over_budget = o->bytes_collapsed = 0;
	o->anon_bytes = o->anon_huge_before = o->anon_huge_after = 0;
	o->thp_disabled = 0;
	o->elapsed_ns = 0;
	if (OPTS_HAS(o, reserved2)) {
		o->extents_small_folios = 0;
		o->small_folio_bytes_before = o->small_folio_bytes_after = 0;
		o->folio_source = THP_FOLIO_SOURCE_NONE;
	}
	if (OPTS_HAS(o, extents_shared))
		o->extents_shared = 0;
}

static int permission_error(const struct thp_target *t, const char *what)
{
	report_set_detail("not allowed to %s of process %d: that needs ptrace read access (the "
			  "same user, not a setuid program) and CAP_SYS_NICE", what, (int)t->pid);
	return -EPERM;
}

static int add_span(struct pass *p, uint64_t start, uint64_t end)
{
	if (p->nr_spans == p->cap_spans) {
		size_t cap = p->cap_spans ? 2 * p->cap_spans : 32;
		struct span *n = realloc(p->spans, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		p->spans = n;
		p->cap_spans = cap;
	}
	p->spans[p->nr_spans].start = start;
	p->spans[p->nr_spans].end = end;
	p->nr_spans++;
	return 0;
}

/* What a reading of smaps is for. */
enum smaps_use {
	/* Step 1: collect the spans and count the mappings (before anything is
	 * collapsed: smaps is read in pieces at file offsets, and collapsing
	 * changes its text). */
	SMAPS_COLLECT_SPANS,
	/* AnonHugePages of the whole process (before and after the pass). */
	SMAPS_SUM_ALL,
	/* AnonHugePages of the mappings that hold the pass's spans only, so
	 * that huge memory made elsewhere in the process meanwhile is not
	 * credited to the pass. */
	SMAPS_SUM_SPANS,
};

static int read_smaps(struct pass *p, enum smaps_use use, uint64_t *anon_huge)
{
	struct thp_collapse_opts *o = p->o;
	struct smaps_reader sr;
	struct thp_mapping_state m;
	struct smaps_extra x;
	size_t next_span = 0;
	int r;

	r = smaps_open(&sr, p->t, NULL, 0);
	if (r == -EACCES || r == -EPERM)
		return permission_error(p->t, "read the mappings");
	if (r)
		return r == -ENOENT ? -ESRCH : r;
	*anon_huge = 0;
	while ((r = smaps_next_x(&sr, &m, &x)) == 1) {
		uint64_t start = (m.start + p->pmd - 1) & ~(p->pmd - 1);
		uint64_t end = m.end & ~(p->pmd - 1);

		if (use == SMAPS_SUM_ALL) {
			*anon_huge += m.anon_huge_bytes;
			continue;
		}
		if (use == SMAPS_SUM_SPANS) {
			/* Both in address order: skip the spans that end before this mapping. */
			while (next_span < p->nr_spans && p->spans[next_span].end <= m.start)
				next_span++;
			if (next_span < p->nr_spans && p->spans[next_span].start < m.end)
				*anon_huge += m.anon_huge_bytes;
			continue;
		}
		*anon_huge += m.anon_huge_bytes;
		o->mappings_seen++;
		o->anon_bytes += x.anon_bytes;
		if (!smaps_private_anon(&m, &x))
			continue;
		if (m.advised_nohuge) {
			o->mappings_nohuge++;
			continue;
		}
		o->mappings_eligible++;
		/* Nothing small enough to collapse: no page table walk for it. */
		if (start >= end || x.anon_bytes < m.anon_huge_bytes ||
		    x.anon_bytes - m.anon_huge_bytes < (uint64_t)p->min_present * p->page)
			continue;
		r = add_span(p, start, end);
		if (r)
			break;
		p->huge_mark += m.anon_huge_bytes;
	}
	line_reader_close(&sr.lr);
	return r < 0 ? r : 0;
}

static void record_failure(struct pass *p, uint64_t addr, int error)
{
	struct thp_collapse_opts *o = p->o;

	o->extents_failed++;
	if (o->failures && o->failures_needed < o->failures_cap) {
		struct thp_report *r = &o->failures[o->failures_needed];

		memset(r, 0, sizeof(*r));
		r->addr = addr;
		r->len = p->pmd;
		r->fail_addr = addr;
		r->error = error;
		r->backend = THP_BACKEND_PROCESS_MADVISE;
		r->attempted = 1;
	}
	o->failures_needed++;
}

/*
 * Credits the unproven extents with what their mappings' AnonHugePages
 * gained since they started: no more than were accepted, none for a loss
 * (the target freed huge memory meanwhile).  A huge page made meanwhile
 * in the same mappings (the target's own fault, khugepaged) may be
 * credited to an extent that was huge already; the documentation says so.
 */
static int settle_unproven(struct pass *p)
{
	struct thp_collapse_opts *o = p->o;
	uint64_t now, gained;
	int r;

	if (!p->unproven)
		return 0;
	r = read_smaps(p, SMAPS_SUM_SPANS, &now);
	if (r)
		return r;
	gained = now > p->huge_mark ? (now - p->huge_mark) / p->pmd : 0;
	if (gained > p->unproven)
		gained = p->unproven;
	o->extents_collapsed += gained;
	o->bytes_collapsed += gained * p->pmd;
	p->unproven = 0;
	p->huge_mark = now;
	return 0;
}

static bool over_budget(const struct pass *p)
{
	const struct thp_collapse_opts *o = p->o;

	if (o->budget_bytes && o->bytes_collapsed + (p->unproven + 1) * p->pmd > o->budget_bytes)
		return true;
	return o->budget_ns && now_ns() - p->t0 >= o->budget_ns;
}

/* One window of at most SCAN_WINDOW extents, counted: collapse_extents()'s callbacks. */
struct window {
	struct pass *p;
	uint64_t start;
	uint32_t count[SCAN_WINDOW], shared[SCAN_WINDOW];
};

/* Step 3's checks: whether the extent at @s is worth collapsing. */
static int window_before(void *arg, uint64_t s)
{
	struct window *w = arg;
	struct pass *p = w->p;
	struct thp_collapse_opts *o = p->o;
	uint32_t present = w->count[(s - w->start) / p->pmd];
	int r;

	if (!present)
		return COLLAPSE_NEXT; /* empty or huge already */
	p->small_before_extent = 0;
	if (present < p->min_present) {
		o->extents_sparse++;
		return COLLAPSE_NEXT;
	}
	if (p->max_shared < present) {
		uint32_t *sh = &w->shared[(s - w->start) / p->pmd];

		r = extent_count_shared(&p->ec, s, present, sh);
		if (r)
			return r;
		if (*sh > p->max_shared) {
			if (OPTS_HAS(o, extents_shared))
				o->extents_shared++;
			return COLLAPSE_NEXT;
		}
	}
	if (p->folios && !p->small_none) {
		struct folio_counts fc;
		uint64_t small = 0;

		memset(&fc, 0, sizeof(fc));
		r = folio_scan_range(&p->fs, s, s + p->pmd, &fc);
		if (r < 0)
			return r;
		if (r == 1) {
			/* Frame numbers hidden after all: nothing is known. */
			p->folios = false;
			p->small_before = p->small_collapsed = 0;
		} else {
			for (unsigned int k = 1; k < p->pmd_order && k <= FOLIO_MAX_ORDER; k++)
				small += fc.pages[k];
			p->small_before += small * p->page;
			p->small_before_extent = small * p->page;
			/*
			 * Large folios the policy gets are there, and the PMD
			 * size is never: collapsing would only override that.
			 * Not "all pages": one fault that fell back to base
			 * pages is enough to make an extent mixed.
			 */
			if (p->pmd_never && small) {
				if (OPTS_HAS(o, extents_small_folios))
					o->extents_small_folios++;
				return COLLAPSE_NEXT;
			}
		}
	}
	/* The byte budget may be spent on extents that were huge already. */
	if (p->unproven && over_budget(p)) {
		r = settle_unproven(p);
		if (r)
			return r;
	}
	if (over_budget(p)) {
		o->extents_over_budget++;
		return COLLAPSE_NEXT;
	}
	return COLLAPSE_TRY;
}

static long window_collapse(void *arg, uint64_t s, uint64_t len)
{
	struct window *w = arg;
	struct iovec iov = { .iov_base = (void *)(uintptr_t)s, .iov_len = (size_t)len };

	return sys_process_madvise(w->p->t->pidfd, &iov, 1, MADV_COLLAPSE, 0);
}

/* What the collapse of the extent at @s gave: @n bytes or -errno. */
static int window_after(void *arg, uint64_t s, long n)
{
	struct window *w = arg;
	struct pass *p = w->p;
	struct thp_collapse_opts *o = p->o;

	if (n == (long)p->pmd && p->ec.pfns_hidden && p->ec.no_scan_ioctl) {
		p->unproven++;
	} else if (n == (long)p->pmd) {
		o->extents_collapsed++;
		o->bytes_collapsed += p->pmd;
		if (p->folios)
			p->small_collapsed += p->small_before_extent;
	} else if (n == -EPERM) {
		return permission_error(p->t, "collapse the memory");
	} else if (n == -ESRCH) {
		return -ESRCH;
	} else {
		/* EINVAL: changed or unmapped meanwhile, or not collapsible;
		 * EAGAIN/ENOMEM: no huge page now.  Later passes retry. */
		record_failure(p, s, n < 0 ? (int)-n : EAGAIN);
	}
	return COLLAPSE_NEXT;
}

static const struct collapse_extents_ops window_ops = {
	.before = window_before,
	.collapse = window_collapse,
	.after = window_after,
	/* A busy page is a failure of this pass: the next one retries it. */
	.busy_retries = 0,
};

/* Steps 2 and 3 for one window of at most SCAN_WINDOW extents. */
static int collapse_window(struct pass *p, uint64_t start, uint64_t end)
{
	struct window w = { .p = p, .start = start };
	int r = extent_count_window(&p->ec, start, end, w.count, w.shared);

	if (r)
		return r;
	return collapse_extents(start, end, p->pmd, &window_ops, &w);
}

/* Folio sizes for the pass where the caller may read them; no error if not. */
static void folios_open(struct pass *p)
{
	struct thp_probe_info pi;

	probe_folio_sizes(&pi);
	for (uint32_t i = 0; i < pi.nr_sizes && i < THP_PROBE_MAX_SIZES; i++)
		if (pi.sizes[i].size == p->pmd)
			p->pmd_never = pi.sizes_source == THP_SIZES_PER_SIZE &&
				       pi.sizes[i].mode == THP_MODE_NEVER;
	p->pmd_order = 0;
	while ((p->page << p->pmd_order) < p->pmd)
		p->pmd_order++;
	p->folios = p->fs_open = folio_scan_open(&p->fs, p->t, (size_t)p->page, p->pmd) == 0;
	/*
	 * Then every extent's count is 0 without a kpageflags read per folio
	 * run.  Frames hidden: the scan of the first extent finds that out and
	 * the source is none, as the figures are for such a caller.
	 */
	p->small_none = p->folios && folio_scan_small_anon_none(&pi, p->pmd) == 1 &&
			folio_scan_frames_visible() == 1;
}

static int run_pass(struct pass *p)
{
	struct thp_collapse_opts *o = p->o;
	int r;

	r = proc_thp_disabled(p->t);
	if (r < 0)
		return r;
	if (r == 1) {
		o->thp_disabled = 1;
		r = read_smaps(p, SMAPS_SUM_ALL, &o->anon_huge_before);
		o->anon_huge_after = o->anon_huge_before;
		return r;
	}
	r = read_smaps(p, SMAPS_COLLECT_SPANS, &o->anon_huge_before);
	if (r)
		return r;
	o->anon_huge_after = o->anon_huge_before;
	if (OPTS_HAS(o, reserved2))
		folios_open(p);
	if (!p->nr_spans) {
		if (p->folios)
			o->folio_source = THP_FOLIO_SOURCE_KPAGEFLAGS;
		return 0;
	}
	r = extent_count_open(&p->ec, p->t);
	if (r == -EACCES || r == -EPERM)
		return permission_error(p->t, "read the page tables");
	if (r)
		return r;
	for (size_t i = 0; i < p->nr_spans && !r; i++)
		for (uint64_t s = p->spans[i].start; s < p->spans[i].end && !r;
		     s += SCAN_WINDOW * p->pmd) {
			uint64_t e = p->spans[i].end - s > SCAN_WINDOW * p->pmd
					     ? s + SCAN_WINDOW * p->pmd : p->spans[i].end;

			r = collapse_window(p, s, e);
		}
	if (!r)
		r = settle_unproven(p);
	if (r)
		return r;
	if (p->folios) {
		o->folio_source = THP_FOLIO_SOURCE_KPAGEFLAGS;
		o->small_folio_bytes_before = p->small_before;
		o->small_folio_bytes_after = p->small_before - p->small_collapsed;
	}
	if (o->extents_collapsed)
		r = read_smaps(p, SMAPS_SUM_ALL, &o->anon_huge_after);
	return r;
}

THP_API int thp_collapse(struct thp_collapse_opts *opts)
{
	const struct thp_caps *c = caps_get();
	struct thp_target t;
	struct pass p;
	uint32_t pages_per_pmd;
	int err;

	report_clear_detail();
	if (!c->pmd_size || c->pmd_size % c->page_size) {
		report_set_detail("the huge page size is unknown (no THP in this kernel?)");
		return ret_errno(-EOPNOTSUPP);
	}
	pages_per_pmd = (uint32_t)(c->pmd_size / c->page_size);
	err = validate(opts, pages_per_pmd);
	if (err)
		return ret_errno(err);
	if (!c->process_madvise || !c->madvise_collapse) {
		report_set_detail(!c->process_madvise ? "this kernel has no process_madvise()"
						      : "this kernel has no MADV_COLLAPSE (6.1+)");
		return ret_errno(-EOPNOTSUPP);
	}
	err = target_open(opts->pidfd, &t);
	if (err)
		return ret_errno(err);
	memset(&p, 0, sizeof(p));
	p.o = opts;
	p.t = &t;
	extent_count_init(&p.ec, c->pmd_size, c->page_size);
	err = target_need_pidfd(&t);
	if (err)
		goto out;
	if (opts->flags & THP_COLLAPSE_F_PEER_ONLY) {
		err = access_is_peer(&t);
		if (err == 0)
			err = -EPERM; /* the detail says why */
		else if (err == 1)
			err = 0;
		if (err)
			goto out;
	}
	if (!t.self) {
		/* An empty vector passes the kernel's permission checks and touches nothing. */
		struct iovec none = { 0 };
		long r = sys_process_madvise(t.pidfd, &none, 1, MADV_COLLAPSE, 0);

		if (r == -EPERM || r == -EACCES) {
			err = permission_error(&t, "collapse the memory");
			goto out;
		}
		if (r == -ESRCH) {
			err = -ESRCH;
			goto out;
		}
	}
	if (opts->flags & THP_COLLAPSE_F_CHECK_ONLY)
		goto out;
	reset_results(opts);
	p.pmd = c->pmd_size;
	p.page = c->page_size;
	p.min_present = opts->min_present_pages ? opts->min_present_pages
						: default_min_present(pages_per_pmd);
	p.max_shared = OPTS_HAS(opts, max_shared_pages) && opts->max_shared_pages
			       ? opts->max_shared_pages
			       : default_max_shared(pages_per_pmd);
	p.t0 = now_ns();
	err = run_pass(&p);
	opts->elapsed_ns = now_ns() - p.t0;
	/* An exited target leaves empty files behind: not a pass with nothing to do. */
	if (!err || err == -ENOENT)
		err = target_alive(&t) ? -ESRCH : err;
	if (!err)
		err = opts->extents_collapsed > INT32_MAX ? INT32_MAX : (int)opts->extents_collapsed;
	if (err == -ESRCH)
		report_set_detail("the process exited");
out:
	err = proc_explain_gone(&t, err, "collapse the memory of");
	extent_count_close(&p.ec);
	if (p.fs_open)
		folio_scan_close(&p.fs);
	free(p.spans);
	target_close(&t);
	return ret_errno(err);
}
