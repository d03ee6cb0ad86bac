// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Another process's default policy, set or read by that process itself:
 * PR_SET_THP_DISABLE / PR_GET_THP_DISABLE run through an inject session
 * (inject_session.c), each in a helper process (inject_helper.c).
 */
#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "compat.h"
#include "default.h"
#include "inject_arch.h"
#include "inject_helper.h"
#include "inject_session.h"
#include "internal.h"

/* A request: its arguments, for the helper process (inject_helper.c) that runs it. */
struct default_req {
	const struct thp_target *t;
	unsigned int policy;
	unsigned long flags;
};

/* Set the policy: 0 or -errno. */
static long set_session(void *arg)
{
	const struct default_req *q = arg;
	const struct thp_target *t = q->t;
	unsigned long flags = q->flags;
	struct inject_session s;
	long prev = -1, r = 0, got = -1;
	int err;

	err = inject_begin(&s, t);
	/* Every call of the policy vetted before the first runs; the way back once prev is known. */
	if (!err)
		err = inject_vet(&s, false, SYS_prctl, PR_GET_THP_DISABLE, 0, 0, 0, 0);
	if (!err)
		err = inject_vet(&s, false, SYS_prctl, PR_SET_THP_DISABLE, 0, 0, 0, 0);
	if (!err && q->policy != THP_POLICY_SYSTEM)
		err = inject_vet(&s, false, SYS_prctl, PR_SET_THP_DISABLE, 1, flags, 0, 0);
	if (!err)
		prev = inject_syscall(&s, SYS_prctl, PR_GET_THP_DISABLE, 0, 0, 0, 0, &err);
	if (!err && prev > 0)
		err = inject_vet(&s, false, SYS_prctl, PR_SET_THP_DISABLE, 1,
				 (unsigned long)prev & PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0);
	/* Clear first: one disable mode is not set over the other. */
	if (!err)
		r = inject_syscall(&s, SYS_prctl, PR_SET_THP_DISABLE, 0, 0, 0, 0, &err);
	if (!err && !r && q->policy != THP_POLICY_SYSTEM)
		r = inject_syscall(&s, SYS_prctl, PR_SET_THP_DISABLE, 1, flags, 0, 0, &err);
	if (!err && !r)
		got = inject_syscall(&s, SYS_prctl, PR_GET_THP_DISABLE, 0, 0, 0, 0, &err);
	if (!err && (r < 0 || got < 0 ||
		     (q->policy == THP_POLICY_SYSTEM ? got != 0 : !(got & 1)) ||
		     (q->policy == THP_POLICY_NOHUGE && !(got & PR_THP_DISABLE_EXCEPT_ADVISED)))) {
		/* Leave it as it was. */
		if (prev >= 0) {
			int err2 = 0;

			inject_syscall(&s, SYS_prctl, PR_SET_THP_DISABLE, 0, 0, 0, 0, &err2);
			if (!err2 && prev)
				inject_syscall(&s, SYS_prctl, PR_SET_THP_DISABLE, 1,
					       (unsigned long)prev & PR_THP_DISABLE_EXCEPT_ADVISED,
					       0, 0, &err2);
		}
		report_set_detail("process %d: prctl(PR_SET_THP_DISABLE) %s", (int)t->pid,
				  r < 0 ? strerror((int)-r) : "is not shown by PR_GET_THP_DISABLE");
		err = r < 0 ? (int)r : -EIO;
	}
	return inject_finish(&s, t, err);
}

/* Read the policy: PR_GET_THP_DISABLE's answer (>= 0), or -errno. */
static long get_session(void *arg)
{
	const struct default_req *q = arg;
	struct inject_session s;
	long r = -1;
	int err;

	err = inject_begin(&s, q->t);
	if (!err)
		err = inject_vet(&s, false, SYS_prctl, PR_GET_THP_DISABLE, 0, 0, 0, 0);
	if (!err)
		r = inject_syscall(&s, SYS_prctl, PR_GET_THP_DISABLE, 0, 0, 0, 0, &err);
	if (!err && r < 0) {
		report_set_detail("process %d: prctl(PR_GET_THP_DISABLE): %s", (int)q->t->pid,
				  strerror((int)-r));
		err = (int)r;
	}
	err = inject_finish(&s, q->t, err);
	return err ? err : r;
}

int inject_set_default(struct thp_default_opts *o, const struct thp_target *t)
{
	const struct thp_caps *c = caps_get_prctl();
	struct default_req q = { t, o->policy, 0 };
	unsigned long flags = 0;
	int err = inject_arch_supported();

	if (err)
		return err;
	if (o->policy == THP_POLICY_HUGE) {
		report_set_detail("HUGE cannot be made the default of another process on this "
				  "kernel: no call the process could make keeps MADV_HUGEPAGE for "
				  "new mappings; start it under thpctl run --policy huge, or advise "
				  "its mappings with thp_apply_all() through the inject backend");
		return -EOPNOTSUPP;
	}
	if (o->policy == THP_POLICY_NOHUGE) {
		if (!c->thp_disable_except_advised) {
			report_set_detail("NOHUGE needs PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18)");
			return -EOPNOTSUPP;
		}
		flags = PR_THP_DISABLE_EXCEPT_ADVISED;
	}
	q.flags = flags;
	err = (int)inject_helper_run(set_session, &q);
	if (err)
		return err;
	o->backend_used = THP_BACKEND_INJECT;
	o->persistent = true;
	o->mappings_changed = 0;
	return 0;
}

int inject_get_default(struct thp_default_opts *o, const struct thp_target *t)
{
	struct default_req q = { t, 0, 0 };
	long r = inject_arch_supported();

	if (!r)
		r = inject_helper_run(get_session, &q);
	if (r < 0)
		return (int)r;
	o->policy = r == 0				  ? THP_POLICY_SYSTEM
		    : (r & PR_THP_DISABLE_EXCEPT_ADVISED) ? THP_POLICY_NOHUGE
							  : THP_POLICY_NEVER;
	o->backend_used = THP_BACKEND_INJECT;
	o->persistent = true;
	return 0;
}
