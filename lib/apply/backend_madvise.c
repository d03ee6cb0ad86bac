// SPDX-License-Identifier: LGPL-2.1-or-later
/* Backend: a madvise() loop.  Works on every kernel, own process only. */
#include <errno.h>

#include "internal.h"
#include "syscall.h"

static int madvise_can_apply(const struct thp_caps *c, const struct thp_target *t, int advice)
{
	(void)c;
	(void)advice;
	if (!t->self) {
		report_set_detail("the madvise() backend can only advise the calling process");
		return -EOPNOTSUPP;
	}
	return 0;
}

static long madvise_apply_vec(const struct thp_target *t, const struct iovec *iov,
			      size_t n, int advice)
{
	const iovec_alias *v = (const iovec_alias *)iov;
	long done = 0;

	(void)t;
	for (size_t i = 0; i < n; i++) {
		long r = sys_madvise((unsigned long)v[i].iov_base, v[i].iov_len, advice);

		if (r < 0)
			return done ? done : r;
		done += (long)v[i].iov_len;
	}
	return done;
}

const struct thp_backend_ops backend_madvise_ops = {
	.id = THP_BACKEND_MADVISE,
	.name = "madvise",
	.can_apply = madvise_can_apply,
	.apply_vec = madvise_apply_vec,
};
