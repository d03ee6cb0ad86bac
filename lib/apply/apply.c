// SPDX-License-Identifier: LGPL-2.1-or-later
/* thp_apply_ranges(): validation, the one-system-call path for the own process, then the engine. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "compat.h"
#include "internal.h"
#include "syscall.h"

#define APPLY_FLAGS (THP_F_SKIP_ERRORS | THP_F_NO_ERROR_ON_UNMAPPED)

/*
 * The common call in one system call, without opening a target or
 * building a context: the own process, HUGE or NOHUGE, the auto backend
 * already learnt to be process_madvise() with PIDFD_SELF, and ranges that
 * are the vector within one call's limits.  Returns the range count after
 * a whole success; -1 sends the call down the general path, which starts
 * over and explains what failed (advising a range again changes nothing).
 */
static int apply_self_one_call(const struct thp_range *ranges, size_t n,
			       struct thp_apply_opts *opts, uint64_t total)
{
	const struct thp_caps *c;

	if (!RANGES_ARE_IOVECS || opts->pidfd != THP_SELF || opts->backend != THP_BACKEND_AUTO ||
	    opts->advice == THP_ADVICE_COLLAPSE || n > IOV_MAX)
		return -1;
	c = caps_get();
	if (backend_self_auto_learnt(opts->advice) != &backend_process_madvise_ops ||
	    !c->pidfd_self || !total || total > THP_MAX_RW_COUNT(c->page_size))
		return -1;
	if (sys_process_madvise(c->pidfd_self, (const struct iovec *)(const void *)ranges, n,
				opts->advice, 0) != (long)total)
		return -1;
	for (size_t i = 0; opts->reports && i < n; i++)
		report_whole(&opts->reports[i], ranges[i].addr, ranges[i].len,
			     THP_BACKEND_PROCESS_MADVISE);
	opts->backend_used = THP_BACKEND_PROCESS_MADVISE;
	return (int)n;
}

THP_API int thp_apply_ranges(const struct thp_range *ranges, size_t nr_ranges,
			     struct thp_apply_opts *opts)
{
	struct thp_target t;
	struct apply_ctx ctx;
	bool as_vector = false;
	uint64_t total = 0;
	int err, opts_err;

	report_clear_detail();
	err = opts_err = opts_check(opts, sizeof(*opts), THP_APPLY_OPTS_SIZE_VER0);
	if (!err)
		err = validate_flags_backend(opts->flags, APPLY_FLAGS, opts->backend);
	if (!err)
		err = validate_advice(opts->advice);
	if (!err)
		err = validate_ranges(ranges, nr_ranges, caps_get()->page_size, &as_vector, &total);
	if (!err && as_vector) {
		int done = apply_self_one_call(ranges, nr_ranges, opts, total);

		if (done >= 0)
			return ret_errno(done);
	}
	if (!err)
		err = apply_ctx_open(&ctx, &t, opts->pidfd, opts->advice, opts->flags,
				     opts->backend);
	if (err) {
		reports_refused(ranges, nr_ranges, opts, opts_err, err);
		return ret_errno(err);
	}
	ctx.ranges_are_iovecs = as_vector;
	ctx.total_bytes = total;

	opts->backend_used = ctx.be->id;
	err = apply_engine(&ctx, ranges, nr_ranges, opts->reports);
	if (err == -ESRCH || (err < 0 && target_alive(&t)))
		report_set_detail("the target process exited");
	target_close(&t);
	return ret_errno(err);
}
