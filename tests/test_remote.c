// SPDX-License-Identifier: LGPL-2.1-or-later
/* Advice for another process through a pidfd. */
#define _GNU_SOURCE
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
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
#include "compat.h" /* __NR_pidfd_open */

struct child {
	pid_t pid;
	int pidfd;
	uint64_t addr; /* 4 MiB, 2 MiB aligned, touched, not advised */
	uint64_t sentinel; /* 4 MiB right after a gap, touched */
};

static void start_child(struct child *c)
{
	int p[2];
	uint64_t addrs[2];

	ck_assert(pipe(p) == 0);
	c->pid = fork();
	ck_assert_int_ge(c->pid, 0);
	if (c->pid == 0) {
		char *m, *s;

		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		m = map_aligned(4, 0);
		s = map_aligned(4, 0);
		touch_range(m, 4 * MiB);
		touch_range(s, 4 * MiB);
		addrs[0] = (uintptr_t)m;
		addrs[1] = (uintptr_t)s;
		if (write(p[1], addrs, sizeof(addrs)) != (ssize_t)sizeof(addrs))
			_exit(1);
		close(p[1]);
		for (;;)
			pause();
	}
	close(p[1]);
	ck_assert(read(p[0], addrs, sizeof(addrs)) == (ssize_t)sizeof(addrs));
	close(p[0]);
	c->addr = addrs[0];
	c->sentinel = addrs[1];
	c->pidfd = (int)syscall(__NR_pidfd_open, c->pid, 0);
	ck_assert_msg(c->pidfd >= 0, "pidfd_open: %s", strerror(errno));
}

static void stop_child(struct child *c)
{
	int status;

	kill(c->pid, SIGKILL);
	ck_assert(waitpid(c->pid, &status, 0) == c->pid);
	close(c->pidfd);
}

static bool mentions_other_process(const char *s)
{
	char low[512];
	size_t i;

	for (i = 0; s[i] && i < sizeof(low) - 1; i++)
		low[i] = (char)tolower((unsigned char)s[i]);
	low[i] = '\0';
	return strstr(low, "another process") || strstr(low, "other process") ||
	       strstr(low, "remote");
}

/* The child's two regions as start_child() left them: no advice, no huge pages. */
static void assert_child_untouched(const struct child *c, const char *what)
{
	static const char *const names[] = { "region", "sentinel" };
	const uint64_t at[] = { c->addr, c->sentinel };

	for (size_t i = 0; i < 2; i++) {
		struct smaps_info si;

		ck_assert_int_eq(smaps_lookup(c->pid, at[i], &si), 0);
		ck_assert_msg(si.found && !si.hg && !si.nh && si.anon_huge == 0 &&
			      si.rss == 4 * MiB,
			      "%s: child %s changed: AnonHugePages %llu Rss %llu VmFlags:%s", what,
			      names[i], (unsigned long long)si.anon_huge,
			      (unsigned long long)si.rss, si.vmflags);
	}
}

/*
 * No process_madvise(): remote thp_apply_ranges() is refused before any
 * system call; reports and backend_used stay as the caller left them, and
 * the child is untouched.
 */
static void check_remote_refused(const struct thp_range *r, size_t n,
				 struct thp_apply_opts *o, const struct child *c,
				 const char *what)
{
	check_ranges_refused(r, n, o, what);
	assert_child_untouched(c, what);
}

START_TEST(remote_collapse)
{
	struct child c;
	struct thp_range r;
	struct thp_report rep;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .reports = &rep);
	struct smaps_info si;
	int ret;

	start_child(&c);
	r.addr = c.addr;
	r.len = 4 * MiB;
	ck_assert_int_eq(smaps_lookup(c.pid, c.addr, &si), 0);
	ck_assert_msg(si.found && si.anon_huge == 0, "child region already huge");
	o.pidfd = c.pidfd;
	if (!expect_process_madvise()) {
		check_remote_refused(&r, 1, &o, &c, "remote COLLAPSE");
		/* thp_query needs only /proc: it still sees the region as it was. */
		{
			struct thp_mapping_state st[2];
			THP_OPTS(thp_query_opts, q, .pidfd = c.pidfd, .addr = c.addr,
				 .len = 4 * MiB, .states = st, .states_cap = 2);

			ck_assert_int_eq(thp_query(&q), 1);
			ck_assert_uint_eq(st[0].start, c.addr);
			ck_assert_uint_eq(st[0].anon_huge_bytes, 0);
			ck_assert(!st[0].advised_huge && !st[0].advised_nohuge);
		}
		stop_child(&c);
		return;
	}
	memset(&rep, 0xa5, sizeof(rep));
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_msg(ret == 1, "remote COLLAPSE: %d (%s: %s)", ret, thp_strerror(ret),
		      thp_strerror_detail());
	ck_assert_msg(o.backend_used == THP_BACKEND_PMADV ||
		      o.backend_used == THP_BACKEND_PROCESS_MADVISE,
		      "remote work done by backend %u", o.backend_used);
	ck_assert_uint_eq(rep.addr, c.addr);
	ck_assert_uint_eq(rep.len, 4 * MiB);
	ck_assert_uint_eq(rep.bytes_advised, 4 * MiB);
	ck_assert_uint_eq(rep.bytes_unmapped, 0);
	ck_assert_int_eq(rep.error, 0);
	ck_assert_uint_eq(rep.attempted, 1);
	ck_assert_uint_eq(rep.backend, o.backend_used);
	ck_assert_int_eq(smaps_lookup(c.pid, c.addr, &si), 0);
	ck_assert_msg(si.anon_huge > 0, "child AnonHugePages 0 after remote COLLAPSE");
	ck_assert_msg(si.anon_huge == 4 * MiB, "child AnonHugePages %llu, expected 4 MiB",
		      (unsigned long long)si.anon_huge);
	ck_assert_msg(vma_anon_huge(c.pid, c.sentinel) == 0, "child sentinel collapsed");
	/* Our own address space at those addresses was not touched. */
	ck_assert_msg(!vma_mapped(0, c.addr) || vma_anon_huge(0, c.addr) == 0,
		      "COLLAPSE landed in the caller");

	/* thp_query through the pidfd sees it too. */
	{
		struct thp_mapping_state st[2];
		THP_OPTS(thp_query_opts, q, .pidfd = c.pidfd, .addr = c.addr, .len = 4 * MiB,
			 .states = st, .states_cap = 2);

		ck_assert_int_eq(thp_query(&q), 1);
		ck_assert_uint_eq(st[0].start, c.addr);
		ck_assert_uint_eq(st[0].anon_huge_bytes, 4 * MiB);
		ck_assert(st[0].anonymous);
	}
	stop_child(&c);
}
END_TEST

START_TEST(remote_huge_nohuge_refused)
{
	static const int adv[] = { THP_ADVICE_HUGE, THP_ADVICE_NOHUGE };
	static const uint32_t be[] = { THP_BACKEND_AUTO, THP_BACKEND_PROCESS_MADVISE };
	struct child c;

	char problems[2048] = "";
	size_t plen = 0;

	start_child(&c);
	for (size_t a = 0; a < 2; a++) {
		for (size_t b = 0; b < 2; b++) {
			struct thp_range r = { c.addr, 4 * MiB };
			THP_OPTS(thp_apply_opts, o, .advice = adv[a], .pidfd = c.pidfd,
				 .backend = be[b]);
			const char *d;
			int ret;

			errno = 0;
			ret = thp_apply_ranges(&r, 1, &o);
			ck_assert_msg(ret == -EOPNOTSUPP,
				      "remote advice %d backend %u: %d, expected -EOPNOTSUPP",
				      adv[a], be[b], ret);
			ck_assert_int_eq(errno, EOPNOTSUPP);
			d = thp_strerror_detail();
			ck_assert_ptr_nonnull(d);
			ck_assert_msg(d[0] != '\0', "no detail for remote advice %d", adv[a]);
			/*
			 * Without process_madvise() the missing call is the
			 * first reason, and the one reported.
			 */
			if (!expect_process_madvise())
				ck_assert_msg(!strcmp(d, DETAIL_NO_PROCESS_MADVISE),
					      "advice %d backend %u: detail \"%s\"", adv[a], be[b],
					      d);
			/* Collect these so every combination is checked. */
			else if (!mentions_other_process(d) && plen < sizeof(problems) - 1)
				plen += (size_t)snprintf(problems + plen, sizeof(problems) - plen,
					"[advice %d backend %u: detail does not mention another "
					"process: \"%s\"] ", adv[a], be[b], d);
			ck_assert_msg(!vma_hg(c.pid, c.addr) && !vma_nh(c.pid, c.addr),
				      "child VmFlags changed by a refused call");
		}
	}
	/* Same for the whole address space. */
	{
		THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_HUGE, .pidfd = c.pidfd);

		ck_assert_int_eq(thp_apply_all(&o), -EOPNOTSUPP);
		if (!expect_process_madvise())
			ck_assert_str_eq(thp_strerror_detail(), DETAIL_NO_PROCESS_MADVISE);
		else if (!mentions_other_process(thp_strerror_detail()) &&
			 plen < sizeof(problems) - 1)
			plen += (size_t)snprintf(problems + plen, sizeof(problems) - plen,
				"[apply_all HUGE: detail \"%s\"]", thp_strerror_detail());
		ck_assert(!vma_hg(c.pid, c.addr));
	}
	assert_child_untouched(&c, "refused HUGE/NOHUGE");
	stop_child(&c);
	ck_assert_msg(problems[0] == '\0', "%s", problems);
}
END_TEST

/* madvise() cannot reach another process: forced, it is -EOPNOTSUPP. */
START_TEST(remote_madvise_backend_refused)
{
	struct child c;
	struct thp_range r;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE,
		 .backend = THP_BACKEND_MADVISE);

	start_child(&c);
	r.addr = c.addr;
	r.len = 4 * MiB;
	o.pidfd = c.pidfd;
	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), -EOPNOTSUPP);
	ck_assert_msg(vma_anon_huge(c.pid, c.addr) == 0, "collapsed anyway");
	stop_child(&c);
}
END_TEST

/* A target that exited: -ESRCH, not a crash and not EBADF. */
START_TEST(remote_exited)
{
	struct child c;
	struct thp_range r;
	int status;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE);

	start_child(&c);
	r.addr = c.addr;
	r.len = 4 * MiB;
	o.pidfd = c.pidfd;
	kill(c.pid, SIGKILL);
	ck_assert(waitpid(c.pid, &status, 0) == c.pid);
	errno = 0;
	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), -ESRCH);
	ck_assert_int_eq(errno, ESRCH);
	close(c.pidfd);
}
END_TEST

/* Remote COLLAPSE with a gap: the report is as precise as for self. */
START_TEST(remote_collapse_gap_report)
{
	struct child c;
	struct thp_range r[2];
	struct thp_report rep[2];
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .reports = rep,
		 .flags = THP_F_NO_ERROR_ON_UNMAPPED);
	int ret;

	start_child(&c);
	/* [addr, addr+6M): 4 MiB mapped then a gap (map_aligned leaves one). */
	r[0].addr = c.addr;
	r[0].len = 4 * MiB + 4096;
	r[1].addr = c.sentinel;
	r[1].len = 2 * MiB;
	o.pidfd = c.pidfd;
	ck_assert_msg(!vma_mapped(c.pid, c.addr + 4 * MiB), "layout: no gap after the region");
	if (!expect_process_madvise()) {
		check_remote_refused(r, 2, &o, &c, "remote COLLAPSE with gap");
		o.flags = THP_F_SKIP_ERRORS;
		check_remote_refused(r, 2, &o, &c, "remote COLLAPSE with gap, SKIP_ERRORS");
		stop_child(&c);
		return;
	}
	memset(rep, 0xa5, sizeof(rep));
	ret = thp_apply_ranges(r, 2, &o);
	ck_assert_msg(ret == 2, "remote COLLAPSE with gap, NO_ERROR_ON_UNMAPPED: %d (%s)", ret,
		      thp_strerror_detail());
	ck_assert_uint_eq(rep[0].bytes_advised, 4 * MiB);
	ck_assert_uint_eq(rep[0].bytes_unmapped, 4096);
	ck_assert_int_eq(rep[0].error, 0);
	ck_assert_uint_eq(rep[1].bytes_advised, 2 * MiB);
	ck_assert_uint_eq(vma_anon_huge(c.pid, c.addr), 4 * MiB);
	ck_assert_uint_eq(vma_anon_huge(c.pid, c.sentinel), 2 * MiB);
	stop_child(&c);
}
END_TEST

/* A pidfd of the calling process itself is self: HUGE works (6.13+). */
START_TEST(pidfd_of_self)
{
	char *m = map_aligned(6, 0);
	int pidfd = (int)syscall(__NR_pidfd_open, getpid(), 0);
	struct thp_range r = { (uintptr_t)m + 2 * MiB, 2 * MiB };
	struct thp_report rep;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = &rep);
	int ret;

	ck_assert_int_ge(pidfd, 0);
	o.pidfd = pidfd;
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_msg(ret == 1, "HUGE through a pidfd of self: %d (%s)", ret,
		      thp_strerror_detail());
	ck_assert_uint_eq(rep.bytes_advised, 2 * MiB);
	ck_assert(vma_hg(0, r.addr));
	ck_assert(!vma_hg(0, (uintptr_t)m));
	ck_assert(!vma_hg(0, (uintptr_t)m + 4 * MiB));
	/* The caller's pidfd is still open and usable. */
	ck_assert(fcntl(pidfd, F_GETFD) != -1);
	close(pidfd);
	munmap(m, 6 * MiB);
}
END_TEST

/* thp_apply_all() COLLAPSE on another process: works, skipping what fails. */
START_TEST(remote_apply_all_collapse)
{
	struct child c;
	THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_COLLAPSE,
		 .flags = THP_F_SKIP_ERRORS);
	int ret;

	start_child(&c);
	o.pidfd = c.pidfd;
	if (!expect_process_madvise()) {
		/* Refused before the walk: no counts, backend_used not set. */
		check_all_refused(&o, "remote apply_all COLLAPSE");
		assert_child_untouched(&c, "refused remote apply_all COLLAPSE");
		stop_child(&c);
		return;
	}
	ret = thp_apply_all(&o);
	/* Check the effect first, then the counts. */
	ck_assert_uint_eq(vma_anon_huge(c.pid, c.addr), 4 * MiB);
	ck_assert_msg(ret > 0 && o.bytes_advised >= 8 * MiB &&
		      o.mappings_seen == o.mappings_advised + o.mappings_skipped,
		      "remote apply_all COLLAPSE: ret %d seen %llu advised %llu skipped %llu "
		      "failures %llu bytes_advised %llu, but the child's two 4 MiB regions were "
		      "collapsed", ret, (unsigned long long)o.mappings_seen,
		      (unsigned long long)o.mappings_advised,
		      (unsigned long long)o.mappings_skipped, (unsigned long long)o.failures_needed,
		      (unsigned long long)o.bytes_advised);
	ck_assert_uint_eq((uint64_t)ret, o.mappings_advised);
	ck_assert_msg(o.mappings_seen >= o.mappings_advised + o.mappings_skipped,
		      "seen %llu advised %llu skipped %llu", (unsigned long long)o.mappings_seen,
		      (unsigned long long)o.mappings_advised,
		      (unsigned long long)o.mappings_skipped);
	ck_assert_uint_eq(vma_anon_huge(c.pid, c.addr), 4 * MiB);
	ck_assert_uint_eq(vma_anon_huge(c.pid, c.sentinel), 4 * MiB);
	stop_child(&c);
}
END_TEST

/* thp_query through the pidfd of an exited process: -ESRCH. */
START_TEST(remote_query_exited)
{
	struct child c;
	int status;
	THP_OPTS(thp_query_opts, q);

	start_child(&c);
	q.pidfd = c.pidfd;
	ck_assert_int_ge(thp_query(&q), 0);
	ck_assert_msg(q.states_needed > 3, "child has %llu mappings",
		      (unsigned long long)q.states_needed);
	kill(c.pid, SIGKILL);
	ck_assert(waitpid(c.pid, &status, 0) == c.pid);
	errno = 0;
	ck_assert_int_eq(thp_query(&q), -ESRCH);
	ck_assert_int_eq(errno, ESRCH);
	close(c.pidfd);
}
END_TEST

/*
 * A zombie (exited, not yet reaped) still accepts signal 0, but it has no
 * address space left: every remote call must say -ESRCH, never report an
 * empty success.
 */
START_TEST(remote_zombie)
{
	struct child c;
	siginfo_t si;
	int status, r;
	THP_OPTS(thp_query_opts, q);
	THP_OPTS(thp_apply_all_opts, all, .advice = THP_ADVICE_COLLAPSE,
		 .flags = THP_F_SKIP_ERRORS);
	THP_OPTS(thp_default_opts, d);

	start_child(&c);
	kill(c.pid, SIGKILL);
	/* Wait for the exit without reaping it (WNOWAIT keeps the zombie). */
	ck_assert_int_eq(waitid(P_PID, (id_t)c.pid, &si, WEXITED | WNOWAIT), 0);
	q.pidfd = all.pidfd = d.pidfd = c.pidfd;

	ck_assert_int_eq(thp_query(&q), -ESRCH);
	r = thp_apply_all(&all);
	if (expect_process_madvise())
		ck_assert_msg(r == -ESRCH, "apply_all on a zombie: %d (%s)", r, thp_strerror(r));
	else
		ck_assert_msg(r == -ESRCH || r == -EOPNOTSUPP, "apply_all on a zombie: %d", r);
	ck_assert_uint_eq(all.mappings_advised, 0);
	r = thp_get_default(&d);
	ck_assert_msg(r == -ESRCH, "get_default on a zombie: %d (%s)", r, thp_strerror(r));

	ck_assert(waitpid(c.pid, &status, 0) == c.pid);
	close(c.pidfd);
}
END_TEST

static Suite *remote_suite(void)
{
	Suite *s = suite_create("remote");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, require_madvise_mode, NULL);
	tcase_add_test(tc, remote_huge_nohuge_refused);
	tcase_add_test(tc, remote_madvise_backend_refused);
	tcase_add_test(tc, remote_exited);
	tcase_add_test(tc, pidfd_of_self);
	tcase_add_test(tc, remote_query_exited);
	tcase_add_test(tc, remote_zombie);
	suite_add_tcase(s, tc);

	/* Another process's memory: the kernel wants CAP_SYS_NICE for that. */
	tc = tcase_create("remote-privileged");
	tcase_set_tags(tc, PRIVILEGED_TAG);
	tcase_add_checked_fixture(tc, require_madvise_mode, NULL);
	tcase_add_test(tc, remote_collapse);
	tcase_add_test(tc, remote_collapse_gap_report);
	tcase_add_test(tc, remote_apply_all_collapse);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(remote_suite());
}
