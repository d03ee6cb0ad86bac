// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Backend: mainline process_madvise() with a vector and no flags.  On the
 * own process it needs 6.13+ for THP advice ("any advice on self"); on
 * another process the kernel accepts only MADV_COLLAPSE of our advice.
 */
#include <errno.h>

#include "compat.h"
#include "internal.h"
#include "syscall.h"

int backend_process_madvise_check(const struct thp_caps *c, const struct thp_target *t, int advice)
{
	if (!c->process_madvise) {
		report_set_detail("this kernel has no process_madvise()");
		return -EOPNOTSUPP;
	}
	if (advice == THP_ADVICE_COLLAPSE)
		return 0; /* allowed on self and remote since 6.1 */
	if (!t->self) {
		report_set_detail("the kernel cannot apply MADV_HUGEPAGE/MADV_NOHUGEPAGE to "
				  "another process: process_madvise() accepts only MADV_COLD, "
				  "MADV_PAGEOUT, MADV_WILLNEED and MADV_COLLAPSE remotely");
		return -EOPNOTSUPP;
	}
	if (!c->pm_self_any_advice) {
		report_set_detail("this kernel's process_madvise() refuses THP advice on the "
				  "calling process (needs Linux 6.13)");
		return -EOPNOTSUPP;
	}
	return 0;
}

long backend_process_madvise_vec(const struct thp_target *t, const struct iovec *iov,
				 size_t n, int advice)
{
	const iovec_alias *v = (const iovec_alias *)iov;
	long done = 0;

	/* The kernel takes at most IOV_MAX entries per call. */
	while (n) {
		size_t m = n > IOV_MAX ? IOV_MAX : n;
		size_t want = 0;
		long r;

		r = sys_process_madvise(t->pidfd, iov, m, advice, 0);
		if (r < 0)
			return done ? done : r;
		done += r;
		/* The last call's short count is the caller's to find. */
		if (m == n)
			return done;
		for (size_t i = 0; i < m; i++)
			want += v[i].iov_len;
		if ((size_t)r != want)
			return done; /* short: failure or MAX_RW_COUNT; caller continues */
		iov += m;
		v += m;
		n -= m;
	}
	return done;
}

const struct thp_backend_ops backend_process_madvise_ops = {
	.id = THP_BACKEND_PROCESS_MADVISE,
	.name = "process_madvise",
	.can_apply = backend_process_madvise_check,
	.apply_vec = backend_process_madvise_vec,
};
