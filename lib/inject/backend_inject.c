// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Backend: make another process issue madvise() itself, as a debugger's
 * "call" does, through an inject session (inject_session.c).  Opt-in only
 * (a forced backend): it pauses the target and needs ptrace rights.
 * Each request runs in a helper process (inject_helper.c).
 * Where the architecture has no session (lib/arch/generic/) it is unavailable.
 */
#include <errno.h>
#include <sys/syscall.h>
#include <sys/uio.h>

#include "inject_arch.h"
#include "inject_helper.h"
#include "inject_session.h"
#include "internal.h"

static int inject_can_apply(const struct thp_caps *c, const struct thp_target *t, int advice)
{
	int err = inject_arch_supported();

	(void)c;
	(void)advice;
	if (err)
		return err;
	if (t->self) {
		report_set_detail("the inject backend acts on another process; the calling "
				  "process uses madvise()");
		return -EOPNOTSUPP;
	}
	return 0;
}

/* One request: its arguments, for the helper process (inject_helper.c) that runs it. */
struct apply_req {
	const struct thp_target *t;
	const struct iovec *iov;
	size_t n;
	int advice;
};

static long apply_session(void *arg)
{
	const struct apply_req *q = arg;
	const struct thp_target *t = q->t;
	const iovec_alias *v = (const iovec_alias *)q->iov;
	size_t n = q->n;
	int advice = q->advice;
	struct inject_session s;
	long done = 0, ret = 0;
	size_t ok = n;
	int err, refused = 0;

	err = inject_begin(&s, t);
	/*
	 * Every range vetted before the first call: a refused one ends the
	 * vector there, as a failing range ends it for the other backends
	 * (the ranges before it are done and the count says so).
	 */
	for (size_t i = 0; !err && !refused && i < n; i++) {
		refused = inject_vet(&s, false, SYS_madvise, (unsigned long)v[i].iov_base,
				     v[i].iov_len, (unsigned long)advice, 0, 0);
		if (refused)
			ok = i;
	}
	for (size_t i = 0; !err && i < ok; i++) {
		long r = inject_syscall(&s, SYS_madvise, (unsigned long)v[i].iov_base,
					v[i].iov_len, (unsigned long)advice, 0, 0, &err);

		if (err)
			break;
		if (r < 0) {
			ret = r;
			break;
		}
		done += (long)v[i].iov_len;
	}
	if (!err && !ret && ok < n)
		ret = refused;
	err = inject_finish(&s, t, err);
	if (err == -ESRCH)
		return -ESRCH;
	if (err)
		return done ? done : err;
	return done ? done : ret;
}

static long inject_apply_vec(const struct thp_target *t, const struct iovec *iov, size_t n,
			     int advice)
{
	struct apply_req q = { t, iov, n, advice };

	return inject_helper_run(apply_session, &q);
}

const struct thp_backend_ops backend_inject_ops = {
	.id = THP_BACKEND_INJECT,
	.name = "inject",
	.can_apply = inject_can_apply,
	.apply_vec = inject_apply_vec,
};
