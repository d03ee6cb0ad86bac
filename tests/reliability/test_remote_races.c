// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A child exits (or execs /bin/true) while the parent runs
 * thp_apply_all(COLLAPSE) and thp_apply_ranges(COLLAPSE) on it through a
 * pidfd, in a loop.  Every return is >= 0 or -ESRCH (the pidfd stays valid:
 * never -EBADF), nothing crashes, and the advice never lands elsewhere: a
 * populated, unadvised region of the parent stays without huge pages.
 * Without process_madvise() (valgrind) a live child's calls are refused
 * with -EOPNOTSUPP instead, the race with its exit stays the same.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../helpers.h"
#include "thp/thp.h"

#define NR_CHILDREN 150
#define CALLS_PER_CHILD 40
#define TIME_BUDGET_S 10

static int pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static long long now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

static volatile pid_t reaped;

/* Reap the child as soon as it exits (see "refused" below). */
static void *reap(void *arg)
{
	reaped = waitpid(*(pid_t *)arg, NULL, 0);
	return NULL;
}

START_TEST(apply_while_child_exits)
{
	pthread_t reaper;
	char *bystander = map_aligned(4, 0);
	char *child_map = map_aligned(2, 0);
	long long t0 = now_s();
	unsigned long ok = 0, esrch = 0;
	int children = 0;
	/*
	 * Without process_madvise() a call fails before it reaches the
	 * target's mm, so a zombie looks alive: only reaping ends it.  There
	 * a thread reaps the child at once, and the calls go on until they
	 * see it gone, racing exit and reaping.  fork() is ~50x slower under
	 * valgrind: fewer children.
	 */
	const bool refused = !expect_process_madvise();
	const int nr_children = (int)scaled(NR_CHILDREN, 15);
	const int calls_per_child = refused ? 100000 : CALLS_PER_CHILD;
	unsigned long eopnotsupp = 0;

	require_madvise_mode();
	touch_range(bystander, 4 * MiB);
	touch_range(child_map, 2 * MiB);
	ck_assert_uint_eq(range_anon_huge(0, (uintptr_t)bystander, 4 * MiB), 0);

	for (int c = 0; c < nr_children && now_s() - t0 < TIME_BUDGET_S; c++, children++) {
		int mode = c % 3, pidfd;
		pid_t pid = fork();

		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			/* Exit soon, at a slightly different moment each time. */
			for (volatile int spin = 0; spin < (c % 7) * 20000; spin++)
				;
			if (mode == 1) {
				execl("/bin/true", "true", (char *)NULL);
				_exit(127);
			}
			if (mode == 2)
				usleep((useconds_t)(c % 10) * 300);
			_exit(0);
		}
		pidfd = pidfd_open(pid);
		ck_assert_msg(pidfd > 0, "pidfd_open: %s", strerror(errno));
		if (refused) {
			reaped = 0;
			ck_assert_int_eq(pthread_create(&reaper, NULL, reap, &pid), 0);
		}
		for (int i = 0; i < calls_per_child; i++) {
			THP_OPTS(thp_apply_all_opts, a, .pidfd = pidfd,
				 .advice = THP_ADVICE_COLLAPSE, .flags = THP_F_SKIP_ERRORS);
			struct thp_range rg = { (uintptr_t)child_map, 2 * MiB };
			struct thp_report rep;
			THP_OPTS(thp_apply_opts, o, .pidfd = pidfd, .advice = THP_ADVICE_COLLAPSE,
				 .flags = THP_F_SKIP_ERRORS, .reports = &rep);
			int r;

			r = i % 2 ? thp_apply_all(&a) : thp_apply_ranges(&rg, 1, &o);
			if (refused && r == -EOPNOTSUPP) {
				/*
				 * Refused for want of the call, while the pidfd
				 * still names a task (alive or a zombie).
				 */
				ck_assert_str_eq(thp_strerror_detail(), DETAIL_NO_PROCESS_MADVISE);
				eopnotsupp++;
				continue;
			}
			ck_assert_msg(refused ? r == -ESRCH : r >= 0 || r == -ESRCH,
				      "child %d (mode %d) call %d: %s returned %d (%s)", c, mode,
				      i, i % 2 ? "thp_apply_all" : "thp_apply_ranges", r,
				      thp_strerror(r));
			if (i % 2 == 0 && r >= 0) {
				ck_assert_uint_le(rep.bytes_advised + rep.bytes_unmapped, rep.len);
				ck_assert(rep.error != 0 || rep.fail_addr == 0);
			}
			if (r == -ESRCH) {
				esrch++;
				break;
			}
			ok++;
		}
		if (refused) {
			ck_assert_int_eq(pthread_join(reaper, NULL), 0);
			ck_assert_int_eq(reaped, pid);
		} else {
			ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
		}
		/* After the child is reaped: still -ESRCH, never -EBADF. */
		{
			THP_OPTS(thp_apply_all_opts, a, .pidfd = pidfd,
				 .advice = THP_ADVICE_COLLAPSE, .flags = THP_F_SKIP_ERRORS);
			int r = thp_apply_all(&a);

			ck_assert_msg(r == -ESRCH, "reaped child: thp_apply_all returned %d (%s)",
				      r, thp_strerror(r));
		}
		close(pidfd);
	}
	ck_assert_int_ge(children, 10);
	fprintf(stderr, "%d children, %lu calls on live children, %lu -ESRCH, %lu -EOPNOTSUPP\n",
		children, ok, esrch, eopnotsupp);
	/* The parent's unadvised, populated region was never collapsed. */
	ck_assert_msg(range_anon_huge(0, (uintptr_t)bystander, 4 * MiB) == 0,
		      "advice for the children reached the parent (%d children, %lu ok, %lu ESRCH)",
		      children, ok, esrch);
	ck_assert_uint_eq(range_anon_huge(0, (uintptr_t)child_map, 2 * MiB), 0);
	assert_vma_unadvised(0, (uintptr_t)bystander, "parent's bystander");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("remote_races");
	TCase *tc = tcase_create("remote_races");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, apply_while_child_exits);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
