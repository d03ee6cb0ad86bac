// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_set_default() / thp_get_default(), the process-wide default policy:
 * the fork-safe lock, validation, the order in which the mechanisms
 * (default_mechanisms.c) are tried and undone, and the get side.
 *
 * Mechanisms, best first: PR_SET_THP_POLICY (RFC, only when declared:
 * mainline gave 78 to PR_FUTEX_HASH), process_madvise(PMADV_SET_FORK_EXEC_DEFAULT)
 * (RFC), PR_SET_THP_DISABLE (+ EXCEPT_ADVISED, 6.18), and for HUGE where
 * nothing persists: advise the existing mappings and say so.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compat.h"
#include "default.h"
#include "internal.h"
#include "proc.h"
#include "syscall.h"
#include "thp_config.h"

#define DEFAULT_FLAGS (THP_DEFAULT_F_REQUIRE_PERSISTENT | THP_DEFAULT_F_NO_EXISTING | \
		       THP_DEFAULT_F_RFC_PRCTL)

/*
 * The highest prctl option mainline assigns (doc/design.md lists the
 * numbers near it and the release they were last checked against).
 * A declared RFC number at or below it names some other prctl on current
 * kernels and is refused, except the RFC's own posted pair 78/79, which the
 * read-back handshake tells apart.  Raise it when mainline assigns more.
 */
#define MAINLINE_PRCTL_MAX 81

#if THP_RFC_PRCTL_SET > 0
_Static_assert((THP_RFC_PRCTL_SET == RFC_PR_SET_THP_POLICY_POSTED &&
		(THP_RFC_PRCTL_GET == 0 || THP_RFC_PRCTL_GET == RFC_PR_GET_THP_POLICY_POSTED)) ||
		       (THP_RFC_PRCTL_SET > MAINLINE_PRCTL_MAX &&
			(THP_RFC_PRCTL_GET == 0 || THP_RFC_PRCTL_GET > MAINLINE_PRCTL_MAX)),
	       "rfc_prctl_set/rfc_prctl_get: a mainline prctl number other than the RFC's 78/79");
#endif

/*
 * The default policy is process-wide, and both calls run sequences that
 * must not interleave with another thread's (set, then read back; map a
 * probe page, then read smaps): one lock serialises them.  It is never
 * held across a fork() of the caller's: the atfork handlers take it before
 * and give the child a fresh one.  (The probe children forked inside use
 * a raw fork and only make raw system calls.)
 */
static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t default_atfork_once = PTHREAD_ONCE_INIT;

static void default_lock_prepare(void)
{
	pthread_mutex_lock(&default_lock);
}

static void default_lock_parent(void)
{
	pthread_mutex_unlock(&default_lock);
}

static void default_lock_child(void)
{
	pthread_mutex_init(&default_lock, NULL);
}

static void default_atfork_register(void)
{
	pthread_atfork(default_lock_prepare, default_lock_parent, default_lock_child);
}

static void default_lock_take(void)
{
	pthread_once(&default_atfork_once, default_atfork_register);
	pthread_mutex_lock(&default_lock);
}

/*
 * The policy this process last set with the RFC prctl (under default_lock;
 * fork() copies it with the mm state), or -1.  A get that cannot issue the
 * undeclared prctl sees only a fresh mapping's advice, which PMADV gives
 * too: this names the mechanism, if the advice still matches.
 */
static int rfc_prctl_policy = -1;

/*
 * Declared RFC prctl numbers: the posted pair, or both above every
 * mainline prctl, and not the same.  Checked before any system call.
 */
static int validate_rfc_prctl(const struct thp_default_opts *o)
{
	int set, get;

	if (!(o->flags & THP_DEFAULT_F_RFC_PRCTL))
		return 0;
	default_mechanisms_rfc_numbers(o, &set, &get);
	if (set == RFC_PR_SET_THP_POLICY_POSTED && get == RFC_PR_GET_THP_POLICY_POSTED)
		return 0;
	if (set <= MAINLINE_PRCTL_MAX || get <= MAINLINE_PRCTL_MAX || set == get) {
		report_set_detail("RFC prctl numbers %d/%d refused: options up to %d are mainline "
				  "prctls; only the RFC's own 78/79, or two distinct numbers above "
				  "%d, are accepted", set, get, MAINLINE_PRCTL_MAX, MAINLINE_PRCTL_MAX);
		return -EINVAL;
	}
	return 0;
}

static int validate_default_opts(struct thp_default_opts *o)
{
	int err = opts_check(o, sizeof(*o), THP_DEFAULT_OPTS_SIZE_VER0);

	if (!err)
		err = validate_flags_backend(o->flags, DEFAULT_FLAGS, o->backend);
	return err ? err : validate_rfc_prctl(o);
}

/* Another process's default, set by that process through the inject backend. */
static int set_remote_injected(struct thp_default_opts *o)
{
	struct thp_target t;
	int err;

	if (o->flags & (THP_DEFAULT_F_RFC_PRCTL)) {
		report_set_detail("the inject backend issues only PR_SET_THP_DISABLE");
		return -EOPNOTSUPP;
	}
	err = target_open(o->pidfd, &t);
	if (err)
		return err;
	o->mappings_changed = 0;
	o->persistent = false;
	err = t.self ? (report_set_detail("the inject backend acts on another process"),
			-EOPNOTSUPP) : inject_set_default(o, &t);
	target_close(&t);
	return err;
}

static int set_default_locked(struct thp_default_opts *o)
{
	const struct thp_caps *c;
	struct default_set s;
	preload_control_fn preload;
	bool want_persistent, preload_in_env;
	long prev_disable, prev_rfc;
	int set, err;
	int advice;

	report_clear_detail();
	err = validate_default_opts(o);
	if (err)
		return ret_errno(err);
	if (o->policy >= THP_POLICY_COUNT) {
		report_set_detail("unknown policy %u", o->policy);
		return ret_errno(-EINVAL);
	}
	if (o->pidfd != THP_SELF && o->backend == THP_BACKEND_INJECT && o->pidfd >= 0)
		return ret_errno(set_remote_injected(o));
	if (o->pidfd != THP_SELF) {
		report_set_detail("no kernel interface sets another process's default THP "
				  "policy; run it under thpctl, have it call thp_set_default(), or "
				  "force the inject backend");
		return ret_errno(o->pidfd < 0 ? -EBADF : -EOPNOTSUPP);
	}
	want_persistent = o->flags & THP_DEFAULT_F_REQUIRE_PERSISTENT;
	/*
	 * Under libthp-preload.so new mappings get MADV_HUGEPAGE from the
	 * preload, not the kernel: it is switched with the policy below.  One
	 * loaded other than through LD_PRELOAD would be back in exec()ed
	 * children, so SYSTEM/NOHUGE/NEVER cannot persist then.
	 */
	preload = preload_control(NULL);
	preload_in_env = preload && preload_follows_env();
	if (preload && !preload_in_env && o->policy != THP_POLICY_HUGE && want_persistent) {
		report_set_detail("libthp-preload.so is loaded, but not through LD_PRELOAD: "
				  "exec()ed children would load it again and get HUGE");
		return ret_errno(-EOPNOTSUPP);
	}
	c = caps_get_prctl();
	advice = o->policy == THP_POLICY_HUGE ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;
	o->mappings_changed = 0;
	o->persistent = false;

	/*
	 * Leave a PR_SET_THP_DISABLE from an earlier NEVER/NOHUGE behind
	 * first, or it would hide the new policy (also NOHUGE: set by the RFC
	 * prctl or PMADV, a plain disable left from NEVER would still disable
	 * THP completely); put it back on failure.
	 */
	prev_disable = c->thp_disable ? sys_prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) : 0;
	if (o->policy != THP_POLICY_NEVER && prev_disable > 0)
		sys_prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);

	/* Each mechanism the backend allows, best first, until one sets the policy. */
	s = (struct default_set){ .o = o, .advice = advice, .want_persistent = want_persistent,
				  .prev_rfc = -1, .err = -EOPNOTSUPP };
	for (size_t i = 0; i < DEFAULT_MECHANISMS; i++) {
		const struct default_mechanism_ops *m = default_mechanisms[i];

		if (s.err && (o->backend == THP_BACKEND_AUTO || o->backend == (unsigned int)m->id) &&
		    m->fits(&s, c))
			s.err = m->set(&s);
	}
	err = s.err;
	set = s.set;
	prev_rfc = s.prev_rfc;
	/*
	 * The RFC flag can set VM_HUGEPAGE/VM_NOHUGEPAGE as default but has no
	 * way to clear it, and an undeclared call cannot clear an RFC prctl
	 * default: SYSTEM is not reached while fresh mappings still get
	 * advice.  Say so rather than report success.
	 */
	if (!err && o->policy == THP_POLICY_SYSTEM && c->pmadv_set_default) {
		bool huge = false, nohuge = false;

		if (default_probe_fresh_advice(&huge, &nohuge) == 0 && (huge || nohuge)) {
			report_set_detail("fresh mappings still get %s: a default set with "
					  "PMADV_SET_FORK_EXEC_DEFAULT cannot be cleared on this kernel%s",
					  huge ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE",
					  o->backend_used == THP_BACKEND_PRCTL_POLICY ? "" :
					  " (nor, undeclared, an RFC PR_SET_THP_POLICY default)");
			err = -EOPNOTSUPP;
		}
	}
	/* A call that fails leaves the policy as it found it. */
	if (err) {
		if (o->backend_used == THP_BACKEND_PRCTL_POLICY && prev_rfc >= 0)
			sys_prctl(set, (unsigned long)prev_rfc, 0, 0, 0);
		if (prev_disable > 0 && sys_prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 0)
			sys_prctl(PR_SET_THP_DISABLE, 1,
				  (unsigned long)prev_disable & PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0);
		o->mappings_changed = 0;
		return ret_errno(err);
	}
	/*
	 * The preload follows the policy in this process, its forked and its
	 * exec()ed children.  Switched back on for HUGE, it still does not
	 * count as persistent: that reports what the kernel keeps (thpctl run
	 * adds the preload to CMD's environment when it is false).
	 */
	if (preload) {
		err = preload_switch(preload, o->policy == THP_POLICY_HUGE);
		if (err)
			return ret_errno(err);
		if (o->policy != THP_POLICY_HUGE && !preload_in_env)
			o->persistent = false;
	}
	rfc_prctl_policy = o->backend_used == THP_BACKEND_PRCTL_POLICY ? (int)o->policy : -1;
	/* HUGE / NOHUGE also advise existing mappings, as both RFCs do. */
	if ((o->policy == THP_POLICY_HUGE || o->policy == THP_POLICY_NOHUGE) &&
	    !(o->flags & THP_DEFAULT_F_NO_EXISTING) && o->backend_used != THP_BACKEND_PRCTL_DISABLE) {
		uint64_t n = 0;

		/* After those the RFC prctl's kernel advised itself (set_by_rfc_prctl()). */
		err = advise_existing(advice, &n);
		o->mappings_changed += n;
	}
	return ret_errno(err);
}

/* The preload's HUGE, unless THP is disabled completely (NEVER wins). */
static int check_preload(struct thp_default_opts *o, const struct thp_target *t)
{
	int r = preload_active(t);

	/* Another process's unreadable maps are no error of the caller's. */
	if (r < 0)
		report_clear_detail();
	if (r <= 0)
		return r;
	o->policy = THP_POLICY_HUGE;
	o->backend_used = THP_BACKEND_PRELOAD;
	o->persistent = true;
	return 1;
}

/* Policy of another process from /proc/PID/status "THP_enabled:". */
static int get_remote(struct thp_default_opts *o, const struct thp_target *t)
{
	char buf[4096];
	const char *p;
	long n = proc_status_read(t->pid, 0, buf, sizeof(buf));

	if (n < 0)
		return (int)n;
	/* A zombie's status still reads, without its memory's THP state. */
	if (target_alive(t))
		return -ESRCH;
	p = strstr(buf, "\nTHP_enabled:");
	if (p && !strtol(p + 13, NULL, 10)) {
		o->policy = THP_POLICY_NEVER;
		o->backend_used = THP_BACKEND_PRCTL_DISABLE;
		o->persistent = true;
		return 0;
	}
	/* The preload's HUGE shows in the maps: check the target outlived the read. */
	if (check_preload(o, t) > 0)
		return target_alive(t);
	/* Asked for: the process reads its own flags, which tell NOHUGE from SYSTEM. */
	if (o->backend == THP_BACKEND_INJECT)
		return inject_get_default(o, t);
	if (!p)
		report_set_detail("this kernel's /proc/PID/status has no THP_enabled line");
	else
		/*
		 * THP_enabled: 1 covers both SYSTEM and NOHUGE (EXCEPT_ADVISED
		 * is not shown for another process): do not guess.
		 */
		report_set_detail("the kernel does not show whether another process has "
				  "PR_THP_DISABLE_EXCEPT_ADVISED: its policy is system or nohuge "
				  "(the inject backend can ask the process)");
	return -EOPNOTSUPP;
}

static int get_default_locked(struct thp_default_opts *o)
{
	const struct thp_caps *c;
	struct thp_target t;
	bool huge = false, nohuge = false, declared;
	int set, get, err;
	long r;

	report_clear_detail();
	err = validate_default_opts(o);
	if (err)
		return ret_errno(err);
	err = target_open(o->pidfd, &t);
	if (err)
		return ret_errno(err);
	c = caps_get_prctl();
	o->mappings_changed = 0;
	if (!t.self) {
		err = get_remote(o, &t);
		goto out;
	}
	o->persistent = true;
	r = c->thp_disable ? sys_prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) : 0;
	/*
	 * The preload's HUGE unless THP is disabled completely; checked before
	 * the fresh mapping, which the preload advises too.
	 */
	if (!(r > 0 && !(r & PR_THP_DISABLE_EXCEPT_ADVISED)) && check_preload(o, &t) > 0)
		goto out;
	if (r > 0) {
		o->policy = (r & PR_THP_DISABLE_EXCEPT_ADVISED) ? THP_POLICY_NOHUGE
								: THP_POLICY_NEVER;
		o->backend_used = THP_BACKEND_PRCTL_DISABLE;
		goto out;
	}
	declared = default_mechanisms_rfc_numbers(o, &set, &get);
	if (declared) {
		r = default_mechanisms_rfc_handshake(get);
		if (r == RFC_PR_THP_POLICY_DEFAULT_HUGE || r == RFC_PR_THP_POLICY_DEFAULT_NOHUGE) {
			o->policy = r == RFC_PR_THP_POLICY_DEFAULT_HUGE ? THP_POLICY_HUGE
									: THP_POLICY_NOHUGE;
			o->backend_used = THP_BACKEND_PRCTL_POLICY;
			goto out;
		}
	}
	/*
	 * A fresh mapping shows mm->def_flags, where only the RFC mechanisms
	 * put advice (PR_SET_THP_DISABLE's is read above).  Without PMADV
	 * probed or the prctl declared nothing can have set it: skip the probe
	 * mapping and its smaps read (many times the prctl's cost).
	 */
	if (c->pmadv_set_default || declared || rfc_prctl_policy >= 0)
		err = default_probe_fresh_advice(&huge, &nohuge);
	if (err)
		goto out;
	if (huge || nohuge) {
		o->policy = huge ? THP_POLICY_HUGE : THP_POLICY_NOHUGE;
		o->backend_used = rfc_prctl_policy == (int)o->policy ? THP_BACKEND_PRCTL_POLICY
								      : THP_BACKEND_PMADV;
		/* Measured each time: the state may come from more than PMADV. */
		o->persistent = default_probe_new_mm_keeps(huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) > 0;
		goto out;
	}
	o->policy = THP_POLICY_SYSTEM;
	o->backend_used = THP_BACKEND_AUTO;
out:
	target_close(&t);
	return ret_errno(err);
}

/* @call under default_lock. */
static int with_default_lock(int (*call)(struct thp_default_opts *), struct thp_default_opts *o)
{
	int r;

	default_lock_take();
	r = call(o);
	pthread_mutex_unlock(&default_lock);
	return r;
}

THP_API int thp_set_default(struct thp_default_opts *o)
{
	return with_default_lock(set_default_locked, o);
}

THP_API int thp_get_default(struct thp_default_opts *o)
{
	return with_default_lock(get_default_locked, o);
}
