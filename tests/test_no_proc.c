// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Without /proc, a valid pidfd of another process cannot be resolved (its
 * pid comes from /proc/self/fdinfo): every call on it fails with -ENOENT
 * and a detail naming the missing path, never -EBADF "not a pidfd".  A
 * descriptor that is not open stays -EBADF.  The child unmounts /proc in a
 * private mount namespace (root only; outside CI a non-root run says why
 * it cannot check this).
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "helpers.h"

enum { CALL_QUERY, CALL_APPLY_ALL, CALL_APPLY_RANGES, CALL_GET_DEFAULT, CALL_CLOSED_FD, NR_CALLS };

static const char *const call_names[NR_CALLS] = {
	"thp_query", "thp_apply_all", "thp_apply_ranges", "thp_get_default",
	"thp_query(closed descriptor)",
};

struct results {
	int setup; /* errno of the namespace setup, 0 when /proc is gone */
	int ret[NR_CALLS];
	char detail[NR_CALLS][256];
};

static int call(int which, int pidfd)
{
	switch (which) {
	case CALL_QUERY:
	case CALL_CLOSED_FD: {
		THP_OPTS(thp_query_opts, q, .pidfd = pidfd);
		return thp_query(&q);
	}
	case CALL_APPLY_ALL: {
		THP_OPTS(thp_apply_all_opts, a, .pidfd = pidfd, .advice = THP_ADVICE_COLLAPSE,
			 .flags = THP_F_SKIP_ERRORS);
		return thp_apply_all(&a);
	}
	case CALL_APPLY_RANGES: {
		struct thp_range rg = { 0x200000, 0x200000 };
		THP_OPTS(thp_apply_opts, o, .pidfd = pidfd, .advice = THP_ADVICE_COLLAPSE,
			 .flags = THP_F_SKIP_ERRORS);
		return thp_apply_ranges(&rg, 1, &o);
	}
	default: {
		THP_OPTS(thp_default_opts, d, .pidfd = pidfd);
		return thp_get_default(&d);
	}
	}
}

static void noproc_child(int wfd, pid_t parent)
{
	struct results res;
	int pidfd = (int)syscall(SYS_pidfd_open, parent, 0);

	memset(&res, 0, sizeof(res));
	if (pidfd < 0 || unshare(CLONE_NEWNS) ||
	    mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) ||
	    umount2("/proc", MNT_DETACH))
		res.setup = errno;
	else if (access("/proc/self", F_OK) == 0)
		res.setup = EEXIST; /* something else is mounted there */
	for (int i = 0; !res.setup && i < NR_CALLS; i++) {
		res.ret[i] = call(i, i == CALL_CLOSED_FD ? 1000 : pidfd);
		snprintf(res.detail[i], sizeof(res.detail[i]), "%s", thp_strerror_detail());
	}
	_exit(write(wfd, &res, sizeof(res)) == (ssize_t)sizeof(res) ? 0 : 3);
}

START_TEST(pidfd_without_proc)
{
	static struct results res;
	int pipefd[2];
	pid_t pid;

	ck_assert_int_eq(pipe(pipefd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(pipefd[0]);
		noproc_child(pipefd[1], getppid());
	}
	close(pipefd[1]);
	ck_assert_int_eq(read(pipefd[0], &res, sizeof(res)), (ssize_t)sizeof(res));
	ck_assert_int_eq(wait_status(pid), 0);
	if (res.setup == EPERM && getuid() != 0 && !in_ci()) {
		fprintf(stderr, "pidfd_without_proc: not checked: unmounting /proc needs root\n");
		return;
	}
	ck_assert_msg(res.setup == 0, "cannot unmount /proc in a private namespace: %s",
		      strerror(res.setup));
	for (int i = 0; i < NR_CALLS; i++) {
		if (i == CALL_CLOSED_FD) {
			ck_assert_msg(res.ret[i] == -EBADF, "%s without /proc: %d (%s: %s)",
				      call_names[i], res.ret[i], thp_strerror(res.ret[i]),
				      res.detail[i]);
			continue;
		}
		ck_assert_msg(res.ret[i] == -ENOENT, "%s on a pidfd without /proc: %d (%s: %s)",
			      call_names[i], res.ret[i], thp_strerror(res.ret[i]),
			      res.detail[i]);
		ck_assert_msg(strstr(res.detail[i], "/proc/self/fdinfo/") &&
			      strstr(res.detail[i], "/proc is not mounted"),
			      "%s: detail \"%s\"", call_names[i], res.detail[i]);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("no_proc");
	TCase *tc = tcase_create("no_proc");

	tcase_add_test(tc, pidfd_without_proc);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
