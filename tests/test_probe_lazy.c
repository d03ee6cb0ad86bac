// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What probing may do to the caller: a range call never forks it and never
 * touches its prctl state; the default-policy probe works whatever the
 * caller's SIGCHLD disposition; the one child libthp still makes (the
 * PMADV persistence probe) is neither reaped by SIG_IGN nor seen by the
 * caller's waitpid(-1).  White-box for sys_fork_raw(); the rest through the
 * public API, each in a fresh child process.
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

#include "helpers.h"
#include "syscall.h"

#ifndef __NR_clone3
#define __NR_clone3 435
#endif

/* Run @body in a forked child; its exit code (0: passed) or 128 + signal. */
static int in_child(int (*body)(void))
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(body());
	return wait_status(pid);
}

/* Kill the process on any new process or thread, and on PR_SET_THP_DISABLE. */
static int forbid_fork_and_prctl(void)
{
	const struct seccomp_rule rules[] = {
#ifdef __NR_fork
		{ __NR_fork, -1, 0, SECCOMP_RET_KILL_PROCESS },
#endif
#ifdef __NR_vfork
		{ __NR_vfork, -1, 0, SECCOMP_RET_KILL_PROCESS },
#endif
		{ __NR_clone, -1, 0, SECCOMP_RET_KILL_PROCESS },
		{ __NR_clone3, -1, 0, SECCOMP_RET_KILL_PROCESS },
		{ __NR_prctl, 0, PR_SET_THP_DISABLE, SECCOMP_RET_KILL_PROCESS },
	};

	return seccomp_install(rules, sizeof(rules) / sizeof(rules[0]));
}

/* Exit codes: the failing step. */
static int first_calls_are_range_calls(void)
{
	char *p = mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct thp_range r;
	struct thp_mapping_state st[4];
	struct smaps_info si;
	THP_OPTS(thp_apply_opts, ro, .advice = THP_ADVICE_HUGE);
	THP_OPTS(thp_apply_all_opts, ao, .advice = THP_ADVICE_NOHUGE, .flags = THP_F_SKIP_ERRORS);
	THP_OPTS(thp_query_opts, qo, .states = st, .states_cap = 4);

	if (p == MAP_FAILED)
		return 1;
	r.addr = (uintptr_t)p;
	r.len = 8 * MiB;
	if (forbid_fork_and_prctl())
		return 2;
	if (thp_apply_ranges(&r, 1, &ro) != 1)
		return 3;
	if (smaps_lookup(0, r.addr, &si) || !si.hg || si.nh)
		return 4;
	if (thp_apply_all(&ao) <= 0)
		return 5;
	if (smaps_lookup(0, r.addr, &si) || si.hg || !si.nh)
		return 6;
	qo.addr = r.addr;
	qo.len = r.len;
	if (thp_query(&qo) < 1 || !st[0].advised_nohuge || st[0].advised_huge)
		return 7;
	return 0;
}

/*
 * The first libthp calls of a process are range calls: none of them may
 * fork (a JVM with 200k mappings paid 189 ms for its page tables) or touch
 * PR_SET_THP_DISABLE.  SIGSYS (159) here means one did.
 */
START_TEST(range_calls_do_not_fork)
{
	int st = in_child(first_calls_are_range_calls);

	ck_assert_msg(st == 0, "range calls under a no-fork/no-prctl filter: %s %d",
		      st > 128 ? "killed by signal" : "failed at step",
		      st > 128 ? st - 128 : st);
}
END_TEST

/* NEVER under the SIGCHLD disposition installed just before. */
static int set_never(void)
{
	char *p = map_aligned(2, 0);
	struct smaps_info si;
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NEVER);
	THP_OPTS(thp_default_opts, g);

	if (thp_set_default(&o)) {
		fprintf(stderr, "thp_set_default(NEVER): %s (%s)\n", strerror(errno),
			thp_strerror_detail());
		return 1;
	}
	if (thp_get_default(&g) || g.policy != THP_POLICY_NEVER)
		return 2;
	if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) != 1)
		return 3;
	/* Disabled completely: not even an advised mapping is eligible. */
	must_madvise(p, 2 * MiB, MADV_HUGEPAGE);
	if (smaps_lookup(0, (uintptr_t)p, &si) || si.thp_eligible != 0)
		return 4;
	return 0;
}

static int set_never_sigchld_ignored(void)
{
	if (signal(SIGCHLD, SIG_IGN) == SIG_ERR)
		return 10;
	return set_never();
}

static int set_never_nocldwait(void)
{
	struct sigaction sa = { .sa_handler = SIG_DFL, .sa_flags = SA_NOCLDWAIT };

	if (sigaction(SIGCHLD, &sa, NULL))
		return 10;
	return set_never();
}

START_TEST(never_with_sigchld_ignored)
{
	int st = in_child(set_never_sigchld_ignored);

	ck_assert_msg(st == 0, "SIGCHLD SIG_IGN: step %d failed", st);
	st = in_child(set_never_nocldwait);
	ck_assert_msg(st == 0, "SA_NOCLDWAIT: step %d failed", st);
}
END_TEST

START_TEST(thpctl_run_never_sigchld_ignored)
{
	const char *const argv[] = { "/usr/bin/env", "--ignore-signal=CHLD", env_path("THPCTL"),
				     "run", "--policy", "never", "--", "true", NULL };
	struct run r;

	run_cmd(&r, NULL, (char *const *)argv);
	ck_assert_msg(r.status == 0, "env --ignore-signal=CHLD thpctl run --policy never: "
		      "exit %d\nstderr: %s", r.status, r.err);
}
END_TEST

static int child_exit_code;

static void on_sigchld(int sig)
{
	(void)sig;
	child_exit_code = -1; /* must not run */
}

/*
 * sys_fork_raw()'s child sends no SIGCHLD: SIG_IGN cannot reap it, a
 * handler does not run, and waitpid(-1) without __WALL does not see it.
 */
static int raw_fork_is_ours(void)
{
	struct sigaction sa = { .sa_handler = on_sigchld };
	pid_t pid;
	int st;

	for (int round = 0; round < 2; round++) {
		if (round == 0 ? signal(SIGCHLD, SIG_IGN) == SIG_ERR :
				 sigaction(SIGCHLD, &sa, NULL) != 0)
			return 1;
		pid = sys_fork_raw();
		if (pid == 0)
			sys_exit_group(42);
		if (pid < 0)
			return 2;
		/* The caller's own reaper, as a library cannot rule out. */
		if (waitpid(-1, &st, 0) != -1 || errno != ECHILD)
			return 3;
		if (sys_wait_exit(pid) != 42)
			return 4;
		if (child_exit_code)
			return 5;
	}
	return 0;
}

START_TEST(raw_fork_child_not_stolen)
{
	int st = in_child(raw_fork_is_ours);

	ck_assert_msg(st == 0, "sys_fork_raw under the caller's SIGCHLD handling: step %d", st);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("probe_lazy");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, require_madvise_mode, NULL);
	tcase_add_test(tc, range_calls_do_not_fork);
	tcase_add_test(tc, never_with_sigchld_ignored);
	tcase_add_test(tc, thpctl_run_never_sigchld_ignored);
	tcase_add_test(tc, raw_fork_child_not_stolen);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
