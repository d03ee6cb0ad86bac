// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The mechanisms thp_set_default() tries, best first, one ops struct each:
 * the RFC prctl (only when declared), process_madvise(PMADV_SET_FORK_EXEC_DEFAULT)
 * (RFC), PR_SET_THP_DISABLE, and for HUGE where nothing persists the
 * existing mappings alone.  Every effect is read back before it is believed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "compat.h"
#include "default.h"
#include "internal.h"
#include "syscall.h"
#include "thp_config.h"

/* The RFC prctl numbers, if the caller or the build declared them; else false. */
bool default_mechanisms_rfc_numbers(const struct thp_default_opts *o, int *set, int *get)
{
	if (o->flags & THP_DEFAULT_F_RFC_PRCTL) {
		*set = o->prctl_set ? o->prctl_set : RFC_PR_SET_THP_POLICY_POSTED;
		*get = o->prctl_get ? o->prctl_get : RFC_PR_GET_THP_POLICY_POSTED;
		return true;
	}
#if THP_RFC_PRCTL_SET > 0
	*set = THP_RFC_PRCTL_SET;
	*get = THP_RFC_PRCTL_GET > 0 ? THP_RFC_PRCTL_GET : THP_RFC_PRCTL_SET + 1;
	return true;
#else
	return false;
#endif
}

/*
 * The RFC's PR_GET_THP_POLICY handshake: 0, 1 or 2 for a get with zero
 * arguments, else -EOPNOTSUPP with a detail.  Issued before any set: on
 * kernels without the RFC, 79 is unassigned or (7.2) PR_RSEQ_SLICE_EXTENSION,
 * both EINVAL for these arguments, while the set number 78 would change the
 * futex hash (PR_FUTEX_HASH_SET_SLOTS is 1, the RFC's DEFAULT_NOHUGE).
 */
long default_mechanisms_rfc_handshake(int get)
{
	long r = sys_prctl(get, 0, 0, 0, 0);

	if (r == RFC_PR_THP_POLICY_DEFAULT_HUGE || r == RFC_PR_THP_POLICY_DEFAULT_NOHUGE ||
	    r == RFC_PR_THP_POLICY_SYSTEM)
		return r;
	report_set_detail("prctl(%d) does not answer as PR_GET_THP_POLICY (%ld): the kernel does "
			  "not implement the RFC prctl with these numbers", get, r);
	return -EOPNOTSUPP;
}

static int set_by_pmadv(struct default_set *s)
{
	struct thp_default_opts *o = s->o;
	int advice = s->advice;
	bool want_persistent = s->want_persistent;
	const struct thp_caps *c = caps_get();
	bool huge = false, nohuge = false;
	int persists, err;

	if (!c->pmadv_set_default)
		return -EOPNOTSUPP;
	err = default_probe_fresh_advice(&huge, &nohuge);
	if (err)
		return err;
	persists = default_probe_pmadv_persists(advice, !huge && !nohuge);
	if (persists < 0) {
		report_set_detail("fresh mappings would also get %s from a default "
				  "PMADV_SET_FORK_EXEC_DEFAULT cannot clear (an RFC PR_SET_THP_POLICY "
				  "default: declare it with THP_DEFAULT_F_RFC_PRCTL)",
				  advice == MADV_HUGEPAGE ? "MADV_NOHUGEPAGE" : "MADV_HUGEPAGE");
		return persists;
	}
	if (want_persistent && !persists) {
		report_set_detail("PMADV_SET_FORK_EXEC_DEFAULT keeps this default only in the "
				  "calling process, not across fork() and exec()");
		return -EOPNOTSUPP;
	}
	err = default_probe_pmadv_set(advice);
	if (!err)
		err = default_probe_fresh_advice(&huge, &nohuge);
	if (err)
		return err;
	if (!default_probe_only_advice(advice, huge, nohuge)) {
		report_set_detail("PMADV_SET_FORK_EXEC_DEFAULT returned success but fresh "
				  "mappings do not show the advice alone");
		return -EOPNOTSUPP;
	}
	o->backend_used = THP_BACKEND_PMADV;
	o->persistent = persists;
	return 0;
}

/*
 * The RFC prctl, declared.  s->prev_rfc gets the policy it had (put back by
 * the caller if the call fails later).  The kernel with the RFC's fix advises
 * the existing mappings itself: what it advised counts in
 * mappings_changed.  A PMADV_SET_FORK_EXEC_DEFAULT default of the other
 * advice would stay in fresh mappings beside the prctl's (both hg and nh,
 * where nh wins): it is replaced with this advice through PMADV too.
 */
static int set_by_rfc_prctl(struct default_set *s)
{
	static const int arg[THP_POLICY_COUNT] = {
		[THP_POLICY_SYSTEM] = RFC_PR_THP_POLICY_SYSTEM,
		[THP_POLICY_HUGE] = RFC_PR_THP_POLICY_DEFAULT_HUGE,
		[THP_POLICY_NOHUGE] = RFC_PR_THP_POLICY_DEFAULT_NOHUGE,
	};
	struct thp_default_opts *o = s->o;
	int set = s->set, get = s->get, advice = s->advice;
	bool advises = o->policy != THP_POLICY_SYSTEM, huge = false, nohuge = false;
	uint64_t before = 0, after = 0;
	long r = default_mechanisms_rfc_handshake(get);
	int err;

	if (r < 0)
		return (int)r;
	s->prev_rfc = r;
	if (advises) {
		err = advise_existing_count_unadvised(&before);
		if (err)
			return err;
	}
	r = sys_prctl(set, (unsigned long)arg[o->policy], 0, 0, 0);
	if (r < 0)
		return (int)r;
	/* Believe it only if the read-back agrees. */
	if (sys_prctl(get, 0, 0, 0, 0) != arg[o->policy]) {
		report_set_detail("prctl(%d) did not read back the policy: the kernel does not "
				  "implement the RFC PR_SET_THP_POLICY with these numbers", set);
		return -EOPNOTSUPP;
	}
	o->backend_used = THP_BACKEND_PRCTL_POLICY;
	o->persistent = true;
	if (!advises)
		return 0;
	err = default_probe_fresh_advice(&huge, &nohuge);
	if (!err && !default_probe_only_advice(advice, huge, nohuge)) {
		err = caps_get()->pmadv_set_default ? default_probe_pmadv_set(advice) : -EOPNOTSUPP;
		if (!err)
			err = default_probe_fresh_advice(&huge, &nohuge);
		if (!err && !default_probe_only_advice(advice, huge, nohuge)) {
			report_set_detail("fresh mappings also get %s, from a default the RFC prctl "
					  "does not replace",
					  advice == MADV_HUGEPAGE ? "MADV_NOHUGEPAGE" : "MADV_HUGEPAGE");
			err = -EOPNOTSUPP;
		}
	}
	if (!err)
		err = advise_existing_count_unadvised(&after);
	if (err) {
		/* Back to where it was: the caller goes on from that state. */
		sys_prctl(set, (unsigned long)s->prev_rfc, 0, 0, 0);
		o->backend_used = THP_BACKEND_AUTO;
		o->persistent = false;
		return err;
	}
	o->mappings_changed = before > after ? before - after : 0;
	return 0;
}

static int set_by_thp_disable(struct default_set *s)
{
	struct thp_default_opts *o = s->o;
	const struct thp_caps *c = caps_get_prctl();
	unsigned long flags = 0;
	long r, got;

	if (o->policy == THP_POLICY_NOHUGE) {
		if (!c->thp_disable_except_advised) {
			report_set_detail("NOHUGE needs PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18) or "
					  "an RFC kernel; use NEVER to turn THP off for the process "
					  "(advised memory too)");
			return -EOPNOTSUPP;
		}
		flags = PR_THP_DISABLE_EXCEPT_ADVISED;
	}
	r = sys_prctl(PR_SET_THP_DISABLE, o->policy != THP_POLICY_SYSTEM, flags, 0, 0);
	if (r < 0)
		return (int)r;
	got = sys_prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	if (got < 0 || (o->policy == THP_POLICY_SYSTEM ? got != 0 : !(got & 1)) ||
	    (o->policy == THP_POLICY_NOHUGE && !(got & PR_THP_DISABLE_EXCEPT_ADVISED))) {
		report_set_detail("PR_GET_THP_DISABLE does not show the policy just set");
		return -EIO;
	}
	o->backend_used = THP_BACKEND_PRCTL_DISABLE;
	o->persistent = true;
	return 0;
}

/*
 * HUGE where nothing persists: only the existing mappings are advised
 * (thp_set_default() does that after the mechanism), and the call says so.
 * Refused when a persistent default is required, with the error of the
 * mechanisms before it.
 */
static int set_existing_only(struct default_set *s)
{
	if (s->want_persistent) {
		report_set_detail("this kernel cannot keep a HUGE default across fork() and "
				  "exec(); use thpctl run --policy huge (preload)");
		return s->err;
	}
	s->o->backend_used = THP_BACKEND_EXISTING_ONLY;
	s->o->persistent = false;
	return 0;
}

static bool rfc_prctl_fits(struct default_set *s, const struct thp_caps *c)
{
	(void)c;
	return s->o->policy != THP_POLICY_NEVER && default_mechanisms_rfc_numbers(s->o, &s->set, &s->get);
}

static bool pmadv_fits(struct default_set *s, const struct thp_caps *c)
{
	(void)c;
	return s->o->policy == THP_POLICY_HUGE || s->o->policy == THP_POLICY_NOHUGE;
}

static bool thp_disable_fits(struct default_set *s, const struct thp_caps *c)
{
	return s->o->policy != THP_POLICY_HUGE && c->thp_disable;
}

static bool existing_only_fits(struct default_set *s, const struct thp_caps *c)
{
	(void)c;
	return s->o->policy == THP_POLICY_HUGE;
}

static const struct default_mechanism_ops rfc_prctl_ops = {
	.id = THP_BACKEND_PRCTL_POLICY,
	.fits = rfc_prctl_fits,
	.set = set_by_rfc_prctl,
};

static const struct default_mechanism_ops pmadv_ops = {
	.id = THP_BACKEND_PMADV,
	.fits = pmadv_fits,
	.set = set_by_pmadv,
};

static const struct default_mechanism_ops thp_disable_ops = {
	.id = THP_BACKEND_PRCTL_DISABLE,
	.fits = thp_disable_fits,
	.set = set_by_thp_disable,
};

static const struct default_mechanism_ops existing_only_ops = {
	.id = THP_BACKEND_EXISTING_ONLY,
	.fits = existing_only_fits,
	.set = set_existing_only,
};

const struct default_mechanism_ops *const default_mechanisms[DEFAULT_MECHANISMS] = {
	&rfc_prctl_ops,
	&pmadv_ops,
	&thp_disable_ops,
	&existing_only_ops,
};
