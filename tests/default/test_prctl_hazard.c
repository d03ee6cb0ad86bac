// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Hazard: prctl 78 / 79 were the RFC's PR_SET/GET_THP_POLICY, but mainline
 * gave 78 to PR_FUTEX_HASH.  libthp must never issue them unless the caller
 * sets THP_DEFAULT_F_RFC_PRCTL.  A seccomp filter that kills the process on
 * prctl(78|79, ...) proves it: every libthp entry point runs under it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thp/thp.h>
#include "../helpers.h"
#include "compat.h" /* __NR_pidfd_open */

#define PMD (2UL << 20)

/*
 * prctl options the filter kills on: 78 and 79 (PR_FUTEX_HASH and, on 7.2,
 * PR_RSEQ_SLICE_EXTENSION), and while a test widens it (kill_also), the
 * numbers it hands libthp as RFC prctl numbers that must be refused.
 */
static const unsigned int *kill_also;
static size_t nr_kill_also;

#define MAX_KILLED 16

/* Kill the process on prctl(78|79|kill_also..., ...); allow everything else. */
static int install_filter(void)
{
	struct seccomp_rule rules[MAX_KILLED] = {
		{ __NR_prctl, 0, 78, SECCOMP_RET_KILL_PROCESS },
		{ __NR_prctl, 0, 79, SECCOMP_RET_KILL_PROCESS },
	};
	size_t n = 2;

	for (size_t i = 0; i < nr_kill_also && n < MAX_KILLED; i++)
		rules[n++] = (struct seccomp_rule){ __NR_prctl, 0, kill_also[i],
						    SECCOMP_RET_KILL_PROCESS };
	return seccomp_install(rules, n);
}

/*
 * Run @body in a forked child under the filter.  Returns the wait status.
 * Exit codes: 0 ok, 100 filter failed to install, else @body's failure step.
 */
static int run_filtered(int (*body)(void))
{
	int st;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (install_filter())
			_exit(100);
		_exit(body());
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return st;
}

static const char *describe(int st)
{
	static char buf[64];

	if (WIFEXITED(st))
		snprintf(buf, sizeof(buf), "exited %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, sizeof(buf), "killed by signal %d (%s)", WTERMSIG(st),
			 strsignal(WTERMSIG(st)));
	else
		snprintf(buf, sizeof(buf), "status 0x%x", st);
	return buf;
}

/* ------------------------------------------------------------------ */

/* A refusal this kernel documents for @policy (see call_everything()). */
static bool refused_here(uint32_t policy, int ret, bool pmadv, bool nohuge_refused)
{
	if (ret != -EOPNOTSUPP)
		return false;
	return (policy == THP_POLICY_NOHUGE && nohuge_refused) ||
	       (policy == THP_POLICY_SYSTEM && pmadv);
}

/* Every libthp entry point, every policy and backend.  Results do not
 * matter here (many combinations are -EOPNOTSUPP): only that no call issues
 * prctl 78/79.  Step numbers are the exit code on an unexpected failure. */
static int call_everything(void)
{
	struct thp_probe_info info = { .sz = sizeof(info) };
	struct thp_mapping_state states[8];
	struct thp_report rep[2];
	char *raw, *p;
	int ppidfd;
	bool pmadv, nohuge_refused;

	if (thp_probe(&info))
		return 1;
	/*
	 * Documented refusals on the QEMU guests' kernels: NOHUGE needs
	 * PR_THP_DISABLE_EXCEPT_ADVISED (6.18) or the RFC's PMADV, and a PMADV
	 * default has no way back to SYSTEM.
	 */
	pmadv = info.backends & (1u << THP_BACKEND_PMADV);
	nohuge_refused = !info.thp_disable_except_advised && !pmadv;

	raw = mmap(NULL, 3 * PMD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return 2;
	p = (char *)(((uintptr_t)raw + PMD - 1) & ~(PMD - 1));
	memset(p, 1, PMD);
	{
		static const int adv[] = { THP_ADVICE_HUGE, THP_ADVICE_NOHUGE,
					   THP_ADVICE_COLLAPSE };
		struct thp_range r = { (uintptr_t)p, PMD };

		for (size_t a = 0; a < 3; a++) {
			for (uint32_t b = 0; b < THP_BACKEND_COUNT; b++) {
				THP_OPTS(thp_apply_opts, o, .advice = adv[a], .backend = b,
					 .reports = rep);
				int ret = thp_apply_ranges(&r, 1, &o);

				if (a == 0 && b == THP_BACKEND_AUTO && ret != 1)
					return 3;
			}
		}
	}
	for (uint32_t b = 0; b < THP_BACKEND_COUNT; b++) {
		THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_HUGE, .backend = b,
			 .flags = THP_F_SKIP_ERRORS, .failures = rep, .failures_cap = 2);

		if (thp_apply_all(&o) < 0 && b == THP_BACKEND_AUTO)
			return 4;
	}
	{
		THP_OPTS(thp_query_opts, q, .states = states, .states_cap = 8);

		if (thp_query(&q) < 0)
			return 5;
	}

	/* thp_set_default: every policy x every backend x flag mix (no RFC_PRCTL). */
	for (uint32_t pol = 0; pol < THP_POLICY_COUNT; pol++) {
		for (uint32_t b = 0; b < THP_BACKEND_COUNT; b++) {
			static const uint32_t fl[] = { 0, THP_DEFAULT_F_REQUIRE_PERSISTENT,
						       THP_DEFAULT_F_NO_EXISTING,
						       THP_DEFAULT_F_REQUIRE_PERSISTENT |
							       THP_DEFAULT_F_NO_EXISTING };

			for (size_t f = 0; f < 4; f++) {
				THP_OPTS(thp_default_opts, o, .policy = pol, .backend = b,
					 .flags = fl[f], .prctl_set = 78, .prctl_get = 79);
				int ret = thp_set_default(&o);
				THP_OPTS(thp_default_opts, g);

				if (b == THP_BACKEND_AUTO && fl[f] == 0 && ret != 0 &&
				    !refused_here(pol, ret, pmadv, nohuge_refused))
					return 6;
				if (thp_get_default(&g) < 0)
					return 7;
			}
		}
	}
	/* the auto path of each policy once more, with a read-back */
	for (uint32_t pol = 0; pol < THP_POLICY_COUNT; pol++) {
		THP_OPTS(thp_default_opts, o, .policy = pol);
		THP_OPTS(thp_default_opts, g);

		int ret = thp_set_default(&o);

		if (refused_here(pol, ret, pmadv, nohuge_refused))
			continue;
		if (ret || thp_get_default(&g))
			return 8;
	}
	/* another process's policy through a pidfd */
	ppidfd = (int)syscall(__NR_pidfd_open, getppid(), 0);
	if (ppidfd >= 0) {
		THP_OPTS(thp_default_opts, g, .pidfd = ppidfd);
		THP_OPTS(thp_query_opts, q, .pidfd = ppidfd);
		THP_OPTS(thp_default_opts, s, .pidfd = ppidfd, .policy = THP_POLICY_NEVER);

		/* the parent runs SYSTEM: ambiguous from outside, -EOPNOTSUPP */
		if (thp_get_default(&g) != -EOPNOTSUPP)
			return 9;
		(void)thp_query(&q);
		(void)thp_set_default(&s); /* -EOPNOTSUPP */
		close(ppidfd);
	}
	{
		THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_SYSTEM);
		int ret = thp_set_default(&o);

		if (ret && !refused_here(THP_POLICY_SYSTEM, ret, pmadv, nohuge_refused))
			return 10;
	}
	munmap(raw, 3 * PMD);
	return 0;
}

START_TEST(no_rfc_prctl_without_opt_in)
{
#if defined(THP_BUILD_RFC_PRCTL_SET) && THP_BUILD_RFC_PRCTL_SET != 0
	ck_abort_msg("this libthp was built with -Drfc_prctl_set=%d: it declares the RFC prctl, "
		     "which this kernel does not implement",
		     THP_BUILD_RFC_PRCTL_SET);
#endif
	int st = run_filtered(call_everything);

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "child calling every libthp function under the prctl 78/79 filter: %s%s",
		      describe(st),
		      WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS ? " (libthp issued prctl 78/79)"
								: "");
}
END_TEST

/* ------------------------------------------------------------------ */

static int direct_prctl78(void)
{
	/* PR_FUTEX_HASH_GET_SLOTS: harmless, but the filter must kill first. */
	prctl(78, 2, 0, 0, 0);
	return 0;
}

static int direct_prctl79(void)
{
	prctl(79, 0, 0, 0, 0);
	return 0;
}

static int allowed_prctl(void)
{
	/* Other prctls pass: the filter is not just "kill every prctl". */
	return prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) < 0 ? 1 : 0;
}

START_TEST(filter_kills_direct_prctl)
{
	int st78 = run_filtered(direct_prctl78);
	int st79 = run_filtered(direct_prctl79);
	int stok = run_filtered(allowed_prctl);

	ck_assert_msg(WIFSIGNALED(st78) && WTERMSIG(st78) == SIGSYS, "prctl(78): %s",
		      describe(st78));
	ck_assert_msg(WIFSIGNALED(st79) && WTERMSIG(st79) == SIGSYS, "prctl(79): %s",
		      describe(st79));
	ck_assert_msg(WIFEXITED(stok) && WEXITSTATUS(stok) == 0, "prctl(PR_GET_THP_DISABLE): %s",
		      describe(stok));
}
END_TEST

/* ------------------------------------------------------------------ */

static int opt_in_nohuge(void)
{
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NOHUGE,
		 .flags = THP_DEFAULT_F_RFC_PRCTL); /* prctl_set / prctl_get left 0 */

	thp_set_default(&o);
	return 0; /* reached only if prctl 78 was not issued */
}

static int opt_in_get(void)
{
	THP_OPTS(thp_default_opts, o, .flags = THP_DEFAULT_F_RFC_PRCTL);

	thp_get_default(&o);
	return 0; /* reached only if prctl 79 was not issued */
}

START_TEST(opt_in_issues_rfc_prctl)
{
	int st_set = run_filtered(opt_in_nohuge);
	int st_get = run_filtered(opt_in_get);

	ck_assert_msg(WIFSIGNALED(st_set) && WTERMSIG(st_set) == SIGSYS,
		      "thp_set_default(NOHUGE, THP_DEFAULT_F_RFC_PRCTL): %s (expected SIGSYS: "
		      "the opt-in must issue prctl 79, the handshake before any set)",
		      describe(st_set));
	ck_assert_msg(WIFSIGNALED(st_get) && WTERMSIG(st_get) == SIGSYS,
		      "thp_get_default(THP_DEFAULT_F_RFC_PRCTL): %s (expected SIGSYS: the opt-in "
		      "reads with prctl 79)",
		      describe(st_get));
}
END_TEST

/* ------------------------------------------------------------------ */

/*
 * Declared RFC prctl numbers are checked before any system call: a number
 * at or below the last mainline prctl (81 in 7.2) other than the RFC's own
 * 78/79 pair is refused with -EINVAL, and the filter, which also kills on
 * every number handed in here, proves none of them was issued.  38/39 are
 * PR_SET/GET_NO_NEW_PRIVS: an unchecked NOHUGE would set no_new_privs and
 * read back 1, the RFC's DEFAULT_NOHUGE.
 */
static const unsigned int refused_prctls[] = { 1, 38, 39, 80, 81 };

struct declared {
	int set, get;
};

static const struct declared refused_pairs[] = {
	{ 38, 39 }, { 80, 81 }, { 78, 80 }, { 81, 79 }, { 1, 1001 }, { 1000, 38 }, { 1000, 1000 },
};

static int declared_numbers_refused(void)
{
	int step = 10;

	for (size_t i = 0; i < sizeof(refused_pairs) / sizeof(refused_pairs[0]); i++) {
		for (uint32_t pol = 0; pol < THP_POLICY_COUNT; pol++, step++) {
			THP_OPTS(thp_default_opts, o, .policy = pol, .flags = THP_DEFAULT_F_RFC_PRCTL,
				 .prctl_set = refused_pairs[i].set,
				 .prctl_get = refused_pairs[i].get);
			int r;

			errno = 0;
			r = thp_set_default(&o);
			if (r != -EINVAL || errno != EINVAL || !strstr(thp_strerror_detail(), "81"))
				return step;
		}
		{
			THP_OPTS(thp_default_opts, g, .flags = THP_DEFAULT_F_RFC_PRCTL,
				 .prctl_set = refused_pairs[i].set, .prctl_get = refused_pairs[i].get);

			if (thp_get_default(&g) != -EINVAL)
				return 100 + (int)i;
		}
	}
	/* Nothing changed: no_new_privs aside (set by the filter), THP as before. */
	if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) != 0)
		return 120;
	/* Numbers above every mainline prctl pass the check: the handshake fails here. */
	{
		THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NEVER,
			 .flags = THP_DEFAULT_F_RFC_PRCTL, .prctl_set = 1000, .prctl_get = 1001);

		if (thp_set_default(&o) != 0 || o.backend_used != THP_BACKEND_PRCTL_DISABLE ||
		    prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) != 1)
			return 121;
	}
	return 0;
}

START_TEST(declared_rfc_numbers_checked)
{
	int st;

	kill_also = refused_prctls;
	nr_kill_also = sizeof(refused_prctls) / sizeof(refused_prctls[0]);
	st = run_filtered(declared_numbers_refused);
	kill_also = NULL;
	nr_kill_also = 0;
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "RFC prctl numbers that are mainline prctls: %s%s", describe(st),
		      WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS
			      ? " (libthp issued a declared number it should have refused)"
			      : " (exit code: the failing step)");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("prctl_hazard");
	TCase *tc = tcase_create("prctl_78_79");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, no_rfc_prctl_without_opt_in);
	tcase_add_test(tc, filter_kills_direct_prctl);
	tcase_add_test(tc, opt_in_issues_rfc_prctl);
	tcase_add_test(tc, declared_rfc_numbers_checked);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
