// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The engine every range backend shares.
 *
 * Fast path: the whole vector goes to the backend in one call.  Only when
 * that call comes back short does the engine look closer, and only at the
 * range where it stopped: it walks that range's mappings, advises each
 * piece on its own and records gaps and the first failure.  So the same
 * request on the same layout gives the same result through any backend,
 * and a happy request costs one system call.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "internal.h"
#include "proc.h"
#include "syscall.h"

#define IOV_BATCH 1024

/* Advise [start, start+len) strictly, resuming after short counts. */
static int apply_piece(const struct apply_ctx *ctx, uint64_t start, uint64_t len,
		       uint64_t *done)
{
	*done = 0;
	while (*done < len) {
		struct iovec iov = {
			.iov_base = (void *)(uintptr_t)(start + *done),
			.iov_len = (size_t)(len - *done),
		};
		long r = ctx->be->apply_vec(ctx->t, &iov, 1, ctx->advice);

		if (r <= 0)
			return r < 0 ? (int)r : -EIO;
		*done += (uint64_t)r;
	}
	return 0;
}

/*
 * ENOMEM means "unmapped" to madvise() but also "no huge page" to
 * MADV_COLLAPSE: for collapse, look again before calling it a gap.  (For
 * the other advice a second look would race with concurrent mmap().)
 */
static bool still_mapped(const struct thp_target *t, uint64_t addr)
{
	struct thp_vma_walk w;
	struct thp_vma v;
	int r;

	if (vma_walk_open(&w, t, false))
		return false;
	r = vma_walk_next(&w, addr, &v);
	vma_walk_close(&w);
	return r == 1 && v.start <= addr;
}

/* The next mapping ending above @addr: from ctx->layout, or from the kernel. */
static int next_mapping(const struct apply_ctx *ctx, struct thp_vma_walk *w, size_t *idx,
			uint64_t addr, struct thp_vma *v)
{
	if (!ctx->layout)
		return vma_walk_next(w, addr, v);
	while (*idx < ctx->nr_layout && ctx->layout[*idx].end <= addr)
		(*idx)++;
	if (*idx == ctx->nr_layout)
		return 0;
	*v = ctx->layout[*idx];
	return 1;
}

/*
 * Which extents have a page, from PAGEMAP_SCAN (6.7+) on the target's
 * pagemap, opened on first use.  MADV_COLLAPSE may refuse an extent
 * without one (EINVAL) or fill it with a zeroed huge page, and a sparse
 * mapping has millions of them (a sanitizer's shadow: terabytes): once a
 * mapping has failed, its empty extents are passed over instead of asked
 * about one system call each (thp_apply_ranges(3)).
 */
struct page_scan {
	int fd;                     /* -1: not open, or no PAGEMAP_SCAN */
	bool tried;
	uint64_t known_to;          /* reg[] describes everything below */
	size_t nr, idx;
	struct page_region reg[64];
};

/* False only when [start, end) surely has no page; @limit bounds a scan. */
static bool extent_has_page(struct page_scan *ps, const struct thp_target *t, uint64_t start,
			    uint64_t end, uint64_t limit)
{
	if (!ps->tried) {
		ps->tried = true;
		ps->fd = proc_open(t, "pagemap");
	}
	if (ps->fd < 0)
		return true;
	if (start >= ps->known_to) {
		static const struct proc_pagemap_query q = {
			.category_anyof_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
			.return_mask = PAGE_IS_PRESENT | PAGE_IS_SWAPPED,
		};
		uint64_t walk_end = 0;
		long r = proc_pagemap_scan(ps->fd, start, limit, &q, ps->reg, ARRAY_LEN(ps->reg),
					   &walk_end);

		if (r < 0 || walk_end <= start) {
			sys_close(ps->fd);
			ps->fd = -1;
			return true;
		}
		ps->nr = (size_t)r;
		ps->idx = 0;
		ps->known_to = walk_end;
	}
	while (ps->idx < ps->nr && ps->reg[ps->idx].end <= start)
		ps->idx++;
	if (ps->idx < ps->nr && ps->reg[ps->idx].start < end)
		return true;
	return end > ps->known_to;
}

/*
 * Record a real failure at @fail_addr of the mapping [map_start, map_end)
 * (its part inside the range): the first one in the range wins over a gap,
 * and the caller hears of each failing mapping once.
 */
static void note_failure(const struct apply_ctx *ctx, struct range_outcome *o,
			 uint64_t map_start, uint64_t map_end, uint64_t fail_addr,
			 int error, bool *mapping_failed)
{
	if (!o->error || o->gap_error) {
		o->error = error;
		o->fail_addr = fail_addr;
		o->gap_error = false;
	}
	if (ctx->on_fail && !*mapping_failed)
		ctx->on_fail(ctx->on_fail_arg, map_start, map_end, fail_addr, error);
	*mapping_failed = true;
}

/*
 * Advise [start, end), part of the mapping that starts at @map_start (both
 * clipped to the range).  HUGE/NOHUGE go in one piece.  COLLAPSE goes one
 * PMD-size extent at a time: the kernel collapses only whole aligned
 * extents, stops a multi-extent call at the first extent it cannot collapse
 * without saying which, and may have collapsed extents before (and, for
 * some failures, after) it.  Per extent, a success means that extent is
 * huge now, so only whole extents inside one mapping are asked for and
 * credited; a part of an extent (the range's or the mapping's unaligned
 * head or tail) is left alone.  Returns true when the walk must stop;
 * *fatal then holds -ESRCH when the target is gone.
 */
static bool advise_mapping(const struct apply_ctx *ctx, uint64_t map_start, uint64_t start,
			   uint64_t end, struct range_outcome *o, struct page_scan *scan,
			   int *fatal)
{
	bool skip = ctx->flags & THP_F_SKIP_ERRORS;
	bool gaps_ok = skip || (ctx->flags & THP_F_NO_ERROR_ON_UNMAPPED);
	bool collapse = ctx->advice == MADV_COLLAPSE;
	uint64_t pmd = ctx->pmd_size;
	bool mapping_failed = false;
	uint64_t cur = start;

	while (cur < end) {
		uint64_t piece_end = end, done;
		bool whole_extent;
		int r;

		if (collapse && (cur | (pmd - 1)) + 1 < end)
			piece_end = (cur | (pmd - 1)) + 1; /* the next extent boundary */
		whole_extent = collapse && piece_end - cur == pmd;
		/*
		 * A part of an extent is never collapsed and is no error
		 * (thp_apply_ranges(3)); the kernel would say EINVAL for one
		 * that does not reach an extent boundary.
		 */
		if (collapse && !whole_extent) {
			cur = piece_end;
			continue;
		}
		/* Its failure is recorded: an extent without a page cannot add to it. */
		if (collapse && mapping_failed && !extent_has_page(scan, ctx->t, cur, piece_end, end)) {
			cur = piece_end;
			continue;
		}
		r = apply_piece(ctx, cur, piece_end - cur, &done);
		/*
		 * EAGAIN is the kernel's "a page was busy, try again" (e.g.
		 * isolated by compaction for the very huge page being
		 * allocated); a call over several extents would have gone on
		 * past it.  Up to three times more (a loaded machine's
		 * compaction keeps pages busy longer), then it counts.
		 */
		for (int again = 0; collapse && r == -EAGAIN && again < 3; again++) {
			sched_yield();
			r = apply_piece(ctx, cur, piece_end - cur, &done);
		}
		if (!collapse)
			o->advised += done;
		if (r == 0) {
			if (whole_extent)
				o->advised += pmd;
		} else if (r == -ENOMEM && (!collapse || !still_mapped(ctx->t, cur + done))) {
			/* The mapping went away under us: it is a gap now. */
			o->unmapped += piece_end - cur - done;
			if (!gaps_ok && !o->error) {
				o->error = ENOMEM;
				o->fail_addr = cur + done;
				o->gap_error = true;
			}
		} else if (r == -ESRCH) {
			/* The target is gone: nothing more can be advised, whatever the flags. */
			*fatal = r;
			return true;
		} else {
			note_failure(ctx, o, map_start, end, cur + done, -r, &mapping_failed);
			if (!skip)
				return true;
		}
		cur = piece_end;
	}
	return false;
}

/*
 * Explain range [start, end) (@range_start is where the range itself
 * begins): walk its mappings, advise each piece, count gaps, record the
 * first failure.  Without SKIP_ERRORS a real failure stops the advising
 * there, as madvise() does; the walk still goes on to the end of the range
 * so that bytes_unmapped counts every hole of it.  Gaps never stop it but
 * are ENOMEM unless NO_ERROR_ON_UNMAPPED.
 */
static int detail_range(const struct apply_ctx *ctx, struct thp_vma_walk **shared,
			uint64_t range_start, uint64_t start, uint64_t end, struct range_outcome *o)
{
	bool gaps_ok = ctx->flags & (THP_F_SKIP_ERRORS | THP_F_NO_ERROR_ON_UNMAPPED);
	struct page_scan scan = { .fd = -1 };
	struct thp_vma_walk own, *w = *shared;
	bool stopped = false;
	uint64_t cur = start;
	size_t idx = 0;
	int err = 0;

	/*
	 * One walk for all the call's ranges that need one: a COLLAPSE of
	 * 1,000 ranges opened the maps file (and, before 6.11, read its text)
	 * 1,000 times.  Without the memory for it, one walk per range.
	 */
	if (!ctx->layout && !w) {
		w = malloc(sizeof(*w));
		err = vma_walk_open(w ? w : &own, ctx->t, false);
		if (err) {
			free(w);
			return err;
		}
		if (!w)
			w = &own;
		else
			*shared = w;
	}
	while (cur < end) {
		struct thp_vma v;
		uint64_t piece_end;
		int r = next_mapping(ctx, w, &idx, cur, &v);

		if (r < 0) {
			err = r;
			break;
		}
		if (r == 0 || v.start >= end)
			v.start = v.end = end; /* the rest is a gap */
		if (v.start > cur) {
			o->unmapped += v.start - cur;
			if (!gaps_ok && !o->error) {
				o->error = ENOMEM;
				o->fail_addr = cur;
				o->gap_error = true;
			}
			cur = v.start;
			continue;
		}
		piece_end = v.end < end ? v.end : end;
		if (!stopped)
			stopped = advise_mapping(ctx, v.start > range_start ? v.start : range_start,
						 cur, piece_end, o, &scan, &err);
		if (err)
			break;
		cur = piece_end;
	}
	if (scan.fd >= 0)
		sys_close(scan.fd);
	if (w == &own)
		vma_walk_close(&own);
	return err;
}

/*
 * Advise up to IOV_BATCH ranges from ranges[pos] + off (empty ranges are
 * trivially done) through a vector on the stack; *m is how many entries.
 * Not inlined: the happy path of the caller's own array does not pay for
 * (nor probe the stack pages of) a 16 KiB frame.
 */
static __attribute__((noinline)) long apply_batch(const struct apply_ctx *ctx,
						  const struct thp_range *ranges, size_t n,
						  size_t pos, uint64_t off, size_t *m)
{
	struct iovec iov[IOV_BATCH];

	*m = 0;
	for (size_t i = pos; i < n && *m < IOV_BATCH; i++) {
		uint64_t skip = i == pos ? off : 0;
		uint64_t len = range_len(&ranges[i], ctx->page_size);

		if (len == skip)
			continue;
		iov[*m].iov_base = (void *)(uintptr_t)(ranges[i].addr + skip);
		iov[*m].iov_len = (size_t)(len - skip);
		(*m)++;
	}
	return *m ? ctx->be->apply_vec(ctx->t, iov, *m, ctx->advice) : 0;
}

/* Where the first pass stopped for a range to explain (engine_run()'s ENGINE_DETAIL). */
struct engine_resume {
	size_t pos;
	uint64_t off;
	size_t ok;
};

#define ENGINE_DETAIL INT_MIN

/*
 * Each report is written once, when its range is done (or left
 * untouched): a happy call makes one pass over them, after its one system
 * call.  From ranges[pos] + off on, with @ok ranges done, explaining
 * ranges[pos] first if @detail_now.  @walk is the detail walk's holder:
 * NULL in the first pass, which stops with ENGINE_DETAIL and where it got
 * to in @resume when a range needs explaining: apply_engine() then hands
 * the call to engine_detailed(), so that the happy path carries nothing of
 * it.
 */
static inline __attribute__((always_inline)) int
engine_run(const struct apply_ctx *ctx, const struct thp_range *ranges, size_t n,
	   struct thp_report *reports, size_t pos, uint64_t off, size_t ok, bool detail_now,
	   struct thp_vma_walk **walk, struct engine_resume *resume)
{
	while (pos < n) {
		struct range_outcome o;
		uint64_t len;
		size_t m = 0;
		long r;
		int err;

		/*
		 * COLLAPSE is explained from the start, extent by extent: one
		 * call over several extents cannot say which one failed.  The
		 * system calls cost little beside collapsing the extent.
		 */
		if (ctx->advice == MADV_COLLAPSE || detail_now)
			goto detail;

		if (RANGES_ARE_IOVECS && ctx->ranges_are_iovecs && pos == 0 && off == 0) {
			/* The caller's array is the vector (its layout is asserted in internal.h). */
			m = n;
			r = ctx->be->apply_vec(ctx->t, (const struct iovec *)(const void *)ranges, m,
					       ctx->advice);
			/* All of it: every report is a whole success, in one plain pass. */
			if (r > 0 && (uint64_t)r == ctx->total_bytes) {
				for (size_t i = 0; reports && i < n; i++)
					report_whole(&reports[i], ranges[i].addr, ranges[i].len,
						     ctx->be->id);
				return (int)n;
			}
		} else {
			r = apply_batch(ctx, ranges, n, pos, off, &m);
		}

		/*
		 * Credit the bytes advised to ranges in order.  A short count
		 * is the kernel's per-call limit or a failure whose errno the
		 * kernel dropped: the next round starts where it stopped and
		 * finds out which.
		 */
		if (r > 0 || m == 0) {
			while (pos < n) {
				uint64_t take;

				len = range_len(&ranges[pos], ctx->page_size);
				take = len - off;
				if ((uint64_t)r < take) {
					off += (uint64_t)r;
					break;
				}
				r -= (long)take;
				if (reports)
					report_whole(&reports[pos], ranges[pos].addr, len, ctx->be->id);
				ok++;
				pos++;
				off = 0;
			}
			continue;
		}

detail:
		if (!walk) {
			*resume = (struct engine_resume){ .pos = pos, .off = off, .ok = ok };
			return ENGINE_DETAIL;
		}
		detail_now = false;
		/* ranges[pos] fails from off on: explain it mapping by mapping. */
		len = range_len(&ranges[pos], ctx->page_size);
		memset(&o, 0, sizeof(o));
		o.advised = off;
		err = detail_range(ctx, walk, ranges[pos].addr, ranges[pos].addr + off,
				   ranges[pos].addr + len, &o);
		if (err) {
			reports_not_attempted(ctx, ranges, pos, n, reports, -err);
			return err;
		}
		if (reports) {
			report_init(&reports[pos], &ranges[pos], ctx->page_size, ctx->be->id);
			reports[pos].bytes_advised = o.advised;
			reports[pos].bytes_unmapped = o.unmapped;
			reports[pos].fail_addr = o.error ? o.fail_addr : 0;
			reports[pos].error = o.error;
			reports[pos].attempted = 1;
		}
		pos++;
		off = 0;
		if (!o.error) {
			ok++;
		} else if (!(ctx->flags & THP_F_SKIP_ERRORS)) {
			reports_not_attempted(ctx, ranges, pos, n, reports, 0);
			return -o.error;
		}
	}
	return (int)ok;
}

/* The rest of a call from its first range to explain on, with the walk it opens. */
static __attribute__((noinline)) int engine_detailed(const struct apply_ctx *ctx,
						      const struct thp_range *ranges, size_t n,
						      struct thp_report *reports,
						      const struct engine_resume *at)
{
	struct thp_vma_walk *walk = NULL;
	int r = engine_run(ctx, ranges, n, reports, at->pos, at->off, at->ok, true, &walk, NULL);

	if (walk) {
		vma_walk_close(walk);
		free(walk);
	}
	return r;
}

int apply_engine(const struct apply_ctx *ctx, const struct thp_range *ranges, size_t n,
		 struct thp_report *reports)
{
	struct engine_resume at;
	int r = engine_run(ctx, ranges, n, reports, 0, 0, 0, false, NULL, &at);

	return r == ENGINE_DETAIL ? engine_detailed(ctx, ranges, n, reports, &at) : r;
}
