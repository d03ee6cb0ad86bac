// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_apply_all(): advice for every mapping of a process.
 *
 * With the RFC PMADV_ENTIRE_ADDRESS_SPACE flag and SKIP_ERRORS the kernel
 * does it in one call and the walk only counts.  Otherwise the VMA walk
 * collects mappings in batches, joins neighbours into runs and hands the
 * runs to the range engine: one system call per batch when nothing fails,
 * and per-mapping detail only where something did.
 */
#include <errno.h>
#include <string.h>

#include "internal.h"

#define VMA_BATCH 128
#define ALL_FLAGS (THP_F_SKIP_ERRORS | THP_F_NO_ERROR_ON_UNMAPPED)

struct all_state {
	struct thp_apply_all_opts *opts;
	const struct thp_vma *vmas;
	size_t nr_vmas;
	bool failed[VMA_BATCH];
	uint64_t stop_addr;   /* first failure when not skipping */
	unsigned int backend;
	uint32_t flags;
};

static void record_failure(void *arg, uint64_t start, uint64_t end, uint64_t fail_addr,
			   int error)
{
	struct all_state *s = arg;
	struct thp_apply_all_opts *o = s->opts;

	if (o->failures && o->failures_needed < o->failures_cap) {
		struct thp_report *r = &o->failures[o->failures_needed];

		memset(r, 0, sizeof(*r));
		r->addr = start;
		r->len = end - start;
		r->fail_addr = fail_addr;
		r->error = error;
		r->backend = s->backend;
		r->attempted = 1;
	}
	o->failures_needed++;
	/* Without SKIP_ERRORS nothing after the first failure was advised. */
	if (!(s->flags & THP_F_SKIP_ERRORS) && start < s->stop_addr)
		s->stop_addr = start;
	for (size_t i = 0; i < s->nr_vmas; i++)
		if (s->vmas[i].start < end && s->vmas[i].end > start)
			s->failed[i] = true;
}

/* Advise one batch of mappings; returns the engine's result. */
static int apply_batch(const struct apply_ctx *base, struct all_state *s,
		       const struct thp_vma *vmas, size_t n)
{
	struct thp_range runs[VMA_BATCH];
	struct thp_report reports[VMA_BATCH];
	struct apply_ctx ctx = *base;
	size_t nr_runs = 0;
	int r;

	for (size_t i = 0; i < n; i++) {
		if (nr_runs && runs[nr_runs - 1].addr + runs[nr_runs - 1].len == vmas[i].start) {
			runs[nr_runs - 1].len += vmas[i].end - vmas[i].start;
			continue;
		}
		runs[nr_runs].addr = vmas[i].start;
		runs[nr_runs].len = vmas[i].end - vmas[i].start;
		nr_runs++;
	}
	s->vmas = vmas;
	s->nr_vmas = n;
	memset(s->failed, 0, sizeof(s->failed));
	s->stop_addr = UINT64_MAX;
	ctx.on_fail = record_failure;
	ctx.on_fail_arg = s;
	/* A failing run is explained from this walk, not by asking again. */
	ctx.layout = vmas;
	ctx.nr_layout = n;
	r = apply_engine(&ctx, runs, nr_runs, reports);

	for (size_t i = 0; i < n; i++) {
		if (s->failed[i]) {
			if (ctx.flags & THP_F_SKIP_ERRORS)
				s->opts->mappings_skipped++;
		} else if (vmas[i].start < s->stop_addr) {
			s->opts->mappings_advised++;
		}
	}
	/* The engine's count: for COLLAPSE, what is huge, failed mappings included. */
	for (size_t i = 0; i < nr_runs; i++)
		s->opts->bytes_advised += reports[i].bytes_advised;
	return r;
}

static int walk_all(const struct apply_ctx *ctx, struct all_state *s, bool count_only)
{
	struct thp_vma vmas[VMA_BATCH];
	struct thp_vma_walk w;
	uint64_t addr = 0;
	size_t n = 0;
	int err, r;

	err = vma_walk_open(&w, ctx->t, true);
	if (err)
		return err;
	for (;;) {
		r = vma_walk_next(&w, addr, &vmas[n]);
		if (r < 0) {
			err = r;
			break;
		}
		if (r > 0) {
			addr = vmas[n].end;
			s->opts->mappings_seen++;
			if (count_only) {
				s->opts->mappings_advised++;
				s->opts->bytes_advised += vmas[n].end - vmas[n].start;
				continue;
			}
			n++;
		}
		if (n == VMA_BATCH || (r == 0 && n)) {
			err = apply_batch(ctx, s, vmas, n);
			n = 0;
			if (err < 0)
				break;
			err = 0;
		}
		if (r == 0)
			break;
	}
	vma_walk_close(&w);
	return err;
}

THP_API int thp_apply_all(struct thp_apply_all_opts *opts)
{
	struct thp_target t;
	struct apply_ctx ctx;
	struct all_state s;
	int err;

	report_clear_detail();
	err = opts_check(opts, sizeof(*opts), THP_APPLY_ALL_OPTS_SIZE_VER0);
	/*
	 * The results are written on every return where the options can be
	 * read: a refused call leaves them zero, not what they held before
	 * (thp_apply_all(3)).
	 */
	if (err != -EINVAL) {
		opts->failures_needed = 0;
		opts->mappings_seen = opts->mappings_advised = opts->mappings_skipped = 0;
		opts->bytes_advised = 0;
		opts->backend_used = THP_BACKEND_AUTO;
	}
	if (!err)
		err = validate_flags_backend(opts->flags, ALL_FLAGS, opts->backend);
	if (err)
		return ret_errno(err);
	if (opts->failures_cap && !opts->failures) {
		report_set_detail("failures is NULL but failures_cap is %llu",
				  (unsigned long long)opts->failures_cap);
		return ret_errno(-EINVAL);
	}
	err = validate_advice(opts->advice);
	/* Gaps between mappings are never errors for the whole address space. */
	if (!err)
		err = apply_ctx_open(&ctx, &t, opts->pidfd, opts->advice,
				     opts->flags | THP_F_NO_ERROR_ON_UNMAPPED, opts->backend);
	if (err)
		return ret_errno(err);

	opts->backend_used = ctx.be->id;
	memset(&s, 0, sizeof(s));
	s.opts = opts;
	s.backend = ctx.be->id;
	s.flags = ctx.flags;

	/*
	 * One kernel call for everything; walk only to count, or to explain.
	 * The count comes first: the advice merges neighbours that now carry
	 * the same flags, and the counts must be those of the layout the call
	 * was made on, as the strict walk and every other backend report.
	 * Not for COLLAPSE: it would stop each mapping at its first empty extent.
	 */
	if (ctx.be->apply_entire && (opts->flags & THP_F_SKIP_ERRORS) &&
	    opts->advice != THP_ADVICE_COLLAPSE) {
		err = walk_all(&ctx, &s, true);
		if (err)
			goto done;
		err = ctx.be->apply_entire(&t, opts->advice);
		if (err == 0)
			goto done;
		if (err < 0)
			goto out;
		opts->mappings_seen = opts->mappings_advised = opts->bytes_advised = 0;
	}
	err = walk_all(&ctx, &s, false);
done:
	/* A live process always has mappings; none means its memory was gone. */
	if (err == 0 && opts->mappings_seen == 0)
		err = -ESRCH;
	/*
	 * A process that died during the walk was not advised completely, and
	 * its last mappings may have left the walk without an error: success
	 * needs a target still alive at the end, whatever the flags.
	 */
	if (err == 0)
		err = target_alive(&t);
	if (err == 0)
		err = (int)(opts->mappings_advised > INT32_MAX ? INT32_MAX : opts->mappings_advised);
	else if (target_alive(&t))
		err = -ESRCH;
	if (err == -ESRCH)
		report_set_detail("the target process exited");
out:
	target_close(&t);
	return ret_errno(err);
}
