// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Resource limits and a missing /proc:
 * - with every descriptor slot in use (RLIMIT_NOFILE reached), calls that
 *   must read /proc (thp_apply_all(), thp_query()) fail with -EMFILE, while
 *   thp_apply_ranges() on self still works: with PIDFD_SELF (or, on a
 *   kernel without process_madvise(), with the madvise() loop) the happy
 *   path needs no descriptor.  Both with the library already probed and with the
 *   very first libthp call made under the limit.
 * - with /proc unmounted (private mount namespace), thp_apply_all() fails
 *   cleanly with -ENOENT and thp_apply_ranges() on self still works.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../helpers.h"
#include "thp/thp.h"

#define FD_LIMIT 64

struct results {
	int setup;
	int apply_all;
	int query;
	int apply;
	int apply_pidfd_self; /* thp_apply_ranges() through THP_SELF, other range */
};

/* Fill every descriptor slot below the limit; returns how many were opened. */
static int exhaust_fds(int *opened, int cap)
{
	struct rlimit rl = { FD_LIMIT, FD_LIMIT };
	int n = 0, fd;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = FD_LIMIT;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	while ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0) {
		ck_assert_int_lt(n, cap);
		opened[n++] = fd;
	}
	ck_assert_int_eq(errno, EMFILE);
	return n;
}

/*
 * PIDFD_SELF found where the environment has it (6.14+), and not claimed
 * where it has not (valgrind refuses the pseudo-descriptor): either way the
 * self path below must then work without a free descriptor.
 */
static void check_pidfd_self(const struct thp_probe_info *info, const char *when)
{
	if (expect_pidfd_self())
		ck_assert_msg(info->pidfd_self != 0, "%s: this kernel has PIDFD_SELF (6.14+)", when);
	else
		ck_assert_msg(info->pidfd_self == 0, "%s: pidfd_self %d, but this environment "
			      "has no PIDFD_SELF", when, info->pidfd_self);
}

static void emfile_case(bool probe_first)
{
	char *map = map_aligned(4, 0), *map2 = map_aligned(2, 0);
	struct thp_range rg = { (uintptr_t)map, 4 * MiB };
	struct thp_probe_info info = { .sz = sizeof(info) };
	int opened[FD_LIMIT], n, r;

	if (probe_first) {
		ck_assert_int_eq(thp_probe(&info), 0);
		check_pidfd_self(&info, "probed first");
	}
	n = exhaust_fds(opened, FD_LIMIT);
	{
		THP_OPTS(thp_apply_all_opts, a, .advice = THP_ADVICE_NOHUGE);
		r = thp_apply_all(&a);
		ck_assert_msg(r == -EMFILE, "thp_apply_all at RLIMIT_NOFILE returned %d (%s)", r,
			      thp_strerror(r));
		ck_assert_int_eq(errno, EMFILE);
	}
	{
		THP_OPTS(thp_query_opts, q);
		r = thp_query(&q);
		ck_assert_msg(r == -EMFILE, "thp_query at RLIMIT_NOFILE returned %d (%s)", r,
			      thp_strerror(r));
	}
	{
		struct thp_report rep;
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = &rep);

		r = thp_apply_ranges(&rg, 1, &o);
		ck_assert_msg(r == 1, "thp_apply_ranges(self) at RLIMIT_NOFILE returned %d (%s: %s)",
			      r, thp_strerror(r), thp_strerror_detail());
		ck_assert_uint_eq(rep.bytes_advised, 4 * MiB);
		/* process_madvise() through PIDFD_SELF, or else the madvise() loop. */
		ck_assert_uint_eq(o.backend_used, expected_self_backend());
	}
	{
		struct thp_range rg2 = { (uintptr_t)map2, 2 * MiB };
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_NOHUGE);

		r = thp_apply_ranges(&rg2, 1, &o);
		ck_assert_msg(r == 1, "thp_apply_ranges(self, NOHUGE) returned %d", r);
	}
	/* Give the descriptors back, then check the effects via smaps. */
	for (int i = 0; i < n; i++)
		close(opened[i]);
	ck_assert(vma_hg(0, (uintptr_t)map));
	ck_assert(vma_nh(0, (uintptr_t)map2));
	if (!probe_first) {
		ck_assert_int_eq(thp_probe(&info), 0);
		check_pidfd_self(&info, "probed at RLIMIT_NOFILE: probing must not need a descriptor");
	}
}

START_TEST(emfile_after_probe)
{
	emfile_case(true);
}
END_TEST

START_TEST(emfile_first_call)
{
	emfile_case(false);
}
END_TEST

static void noproc_child(int wfd, int go_fd, char *map, char *map2)
{
	struct results res;

	memset(&res, 0, sizeof(res));
	/* Strings, not NULL, for the ignored names: valgrind 3.24 flags NULL. */
	if (unshare(CLONE_NEWNS) || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) ||
	    umount2("/proc", MNT_DETACH)) {
		res.setup = errno;
		goto out;
	}
	if (access("/proc/self/maps", R_OK) == 0) {
		res.setup = EEXIST; /* something else is mounted there */
		goto out;
	}
	{
		THP_OPTS(thp_apply_all_opts, a, .advice = THP_ADVICE_HUGE);
		res.apply_all = thp_apply_all(&a);
	}
	{
		THP_OPTS(thp_query_opts, q);
		res.query = thp_query(&q);
	}
	{
		struct thp_range rg = { (uintptr_t)map, 2 * MiB };
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE);
		res.apply = thp_apply_ranges(&rg, 1, &o);
	}
	{
		struct thp_range rg = { (uintptr_t)map2, 2 * MiB };
		THP_OPTS(thp_apply_opts, o, .pidfd = THP_SELF, .advice = THP_ADVICE_NOHUGE);
		res.apply_pidfd_self = thp_apply_ranges(&rg, 1, &o);
	}
out:
	if (write(wfd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(3);
	/* Stay alive until the parent has looked at our smaps. */
	{
		char c;

		if (read(go_fd, &c, 1) < 0)
			_exit(4);
	}
	_exit(0);
}

START_TEST(proc_not_mounted)
{
	/* Mapped before fork: same addresses in the child. */
	char *map = map_aligned(2, 0), *map2 = map_aligned(2, 0);
	int res_pipe[2], go_pipe[2], status;
	struct results res;
	pid_t pid;

	ck_assert_int_eq(pipe(res_pipe), 0);
	ck_assert_int_eq(pipe(go_pipe), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(res_pipe[0]);
		close(go_pipe[1]);
		noproc_child(res_pipe[1], go_pipe[0], map, map2);
	}
	close(res_pipe[1]);
	close(go_pipe[0]);
	ck_assert_int_eq(read(res_pipe[0], &res, sizeof(res)), (ssize_t)sizeof(res));
	if (res.setup == 0) {
		/* Look at the child's mappings from our /proc. */
		ck_assert(vma_hg(pid, (uintptr_t)map));
		ck_assert(vma_nh(pid, (uintptr_t)map2));
	}
	close(go_pipe[1]);
	status = wait_status(pid);
	ck_assert_msg(status == 0, "child exit status %d", status);
	ck_assert_msg(res.setup == 0, "cannot unmount /proc in a private namespace: %s",
		      strerror(res.setup));
	ck_assert_msg(res.apply_all == -ENOENT, "thp_apply_all without /proc returned %d (%s)",
		      res.apply_all, thp_strerror(res.apply_all));
	ck_assert_msg(res.query < 0, "thp_query without /proc returned %d", res.query);
	ck_assert_msg(res.apply == 1, "thp_apply_ranges(self) without /proc returned %d (%s)",
		      res.apply, thp_strerror(res.apply));
	ck_assert_msg(res.apply_pidfd_self == 1, "thp_apply_ranges(self, NOHUGE) returned %d",
		      res.apply_pidfd_self);
	fprintf(stderr, "without /proc: thp_query returned %d (%s)\n", res.query,
		thp_strerror(res.query));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("limits");
	TCase *tc = tcase_create("limits");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, emfile_after_probe);
	tcase_add_test(tc, emfile_first_call);
	suite_add_tcase(s, tc);
	/* Unmounts /proc in a private mount namespace: root only. */
	tc = tcase_create("limits-privileged");
	tcase_set_tags(tc, PRIVILEGED_TAG);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, proc_not_mounted);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
