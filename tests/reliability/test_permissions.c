// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * An unprivileged process (uid/gid 65534, "nobody") opens a pidfd of its
 * root parent and asks for MADV_COLLAPSE on the parent's mapping: the kernel
 * refuses (process_madvise() -> mm_access() -> -EACCES on Linux 6.x; -EPERM
 * would be CAP_SYS_NICE), the library passes that on, and the parent's
 * mapping is unchanged.  thp_query() on the parent fails the same way
 * (/proc/PID/smaps is not readable).
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../helpers.h"
#include "thp/thp.h"

struct results {
	int setup;      /* 0, or the errno of the failing setup step */
	int apply;      /* thp_apply_ranges() */
	int apply_all;  /* thp_apply_all() */
	int query;      /* thp_query() */
	struct thp_report rep;
	char apply_detail[128], apply_all_detail[128]; /* thp_strerror_detail() */
};

static void child(int wfd, pid_t parent, char *map)
{
	struct results res;
	struct thp_range rg = { (uintptr_t)map, 2 * MiB };
	int pidfd;

	memset(&res, 0, sizeof(res));
	if (setgroups(0, NULL) || setgid(65534) || setuid(65534)) {
		res.setup = errno;
		goto out;
	}
	pidfd = (int)syscall(SYS_pidfd_open, parent, 0);
	if (pidfd < 0) {
		res.setup = errno;
		goto out;
	}
	{
		THP_OPTS(thp_apply_opts, o, .pidfd = pidfd, .advice = THP_ADVICE_COLLAPSE,
			 .reports = &res.rep);
		res.apply = thp_apply_ranges(&rg, 1, &o);
		snprintf(res.apply_detail, sizeof(res.apply_detail), "%s",
			 thp_strerror_detail());
	}
	{
		THP_OPTS(thp_apply_all_opts, a, .pidfd = pidfd, .advice = THP_ADVICE_COLLAPSE,
			 .flags = THP_F_SKIP_ERRORS);
		res.apply_all = thp_apply_all(&a);
		snprintf(res.apply_all_detail, sizeof(res.apply_all_detail), "%s",
			 thp_strerror_detail());
	}
	{
		struct thp_mapping_state st[4];
		THP_OPTS(thp_query_opts, q, .pidfd = pidfd, .states = st, .states_cap = 4);
		res.query = thp_query(&q);
	}
out:
	if (write(wfd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(3);
	_exit(0);
}

START_TEST(unprivileged_child_cannot_advise_root_parent)
{
	char *map = map_aligned(2, 0);
	struct results res;
	int fds[2], status;
	pid_t pid;

	ck_assert_msg(geteuid() == 0, "this test needs root (it drops to uid 65534)");
	require_madvise_mode();
	touch_range(map, 2 * MiB);
	ck_assert_uint_eq(vma_anon_huge(0, (uintptr_t)map), 0);
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		child(fds[1], getppid(), map);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &res, sizeof(res)), (ssize_t)sizeof(res));
	status = wait_status(pid);
	ck_assert_msg(status == 0, "child exit status %d", status);
	ck_assert_msg(res.setup == 0, "child setup failed: %s", strerror(res.setup));

	if (expect_process_madvise()) {
		ck_assert_msg(res.apply == -EACCES || res.apply == -EPERM,
			      "thp_apply_ranges from nobody returned %d (%s)", res.apply,
			      thp_strerror(res.apply));
		ck_assert_msg(res.apply_all == -EACCES || res.apply_all == -EPERM,
			      "thp_apply_all from nobody returned %d (%s)", res.apply_all,
			      thp_strerror(res.apply_all));
	} else {
		/*
		 * Without process_madvise() both are refused before the kernel
		 * could check permissions: -EOPNOTSUPP and the reason.
		 */
		ck_assert_msg(res.apply == -EOPNOTSUPP &&
			      !strcmp(res.apply_detail, DETAIL_NO_PROCESS_MADVISE),
			      "thp_apply_ranges from nobody without process_madvise(): %d (%s)",
			      res.apply, res.apply_detail);
		ck_assert_msg(res.apply_all == -EOPNOTSUPP &&
			      !strcmp(res.apply_all_detail, DETAIL_NO_PROCESS_MADVISE),
			      "thp_apply_all from nobody without process_madvise(): %d (%s)",
			      res.apply_all, res.apply_all_detail);
	}
	ck_assert_uint_eq(res.rep.bytes_advised, 0);
	ck_assert_msg(res.query == -EACCES || res.query == -EPERM,
		      "thp_query from nobody returned %d (%s)", res.query,
		      thp_strerror(res.query));
	/* Nothing changed in the parent. */
	ck_assert_uint_eq(vma_anon_huge(0, (uintptr_t)map), 0);
	assert_vma_unadvised(0, (uintptr_t)map, "root parent's map");
	fprintf(stderr, "kernel refusal seen: apply_ranges %d, apply_all %d, query %d\n",
		res.apply, res.apply_all, res.query);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("permissions");
	TCase *tc = tcase_create("permissions");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, unprivileged_child_cannot_advise_root_parent);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
