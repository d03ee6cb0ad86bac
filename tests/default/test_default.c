// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_set_default() / thp_get_default(): libthp's own versions of the RFC
 * PR_SET_THP_POLICY selftest scenarios (seeds/011), proven by measurement
 * (AnonHugePages, VmFlags) in the process, in a fork()ed child and in an
 * exec()ed child (THP_CHILD_REPORT).
 *
 * These tests change the global sysfs THP mode.  It is saved once by the
 * runner process and restored there after every test (each test is its own
 * TCase with an unchecked fixture, which runs in the runner, not in the
 * CK_FORK child), at exit, and from a signal handler; each test also restores
 * it itself before its assertions.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thp/thp.h>

#include "thp_default_util.c"
#include "../helpers.h"
#include "compat.h" /* PR_*THP_DISABLE*, __NR_pidfd_open */

#define SYSFS_ENABLED "/sys/kernel/mm/transparent_hugepage/enabled"
#define SYSFS_2M_ENABLED "/sys/kernel/mm/transparent_hugepage/hugepages-2048kB/enabled"
#define SYSFS_64K_ENABLED "/sys/kernel/mm/transparent_hugepage/hugepages-64kB/enabled"
#define SYSFS_PMD_SIZE "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"

/* ------------------------------------------------------------------ */
/* sysfs save / restore (restore is async-signal-safe)                */

static char saved_enabled[32];
static char saved_2m[32];
static char saved_64k[32];
static volatile sig_atomic_t saved_ok;

static int read_bracketed(const char *path, char *out, size_t len)
{
	char buf[256];
	char *l, *r;

	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	l = strchr(buf, '[');
	r = l ? strchr(l, ']') : NULL;
	if (!l || !r || (size_t)(r - l) >= len)
		return -1;
	memcpy(out, l + 1, r - l - 1);
	out[r - l - 1] = 0;
	return 0;
}

static int write_str(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* Async-signal-safe: open/write/close on static buffers only. */
static void restore_sysfs(void)
{
	if (!saved_ok)
		return;
	write_str(SYSFS_ENABLED, saved_enabled);
	if (saved_2m[0])
		write_str(SYSFS_2M_ENABLED, saved_2m);
	if (saved_64k[0])
		write_str(SYSFS_64K_ENABLED, saved_64k);
}

static void restore_on_signal(int sig)
{
	restore_sysfs();
	signal(sig, SIG_DFL);
	raise(sig);
}

/*
 * A runner killed with SIGKILL cannot restore anything itself: a guardian
 * child waits on a pipe only the runner (and its test children) hold, and
 * restores the saved mode when the pipe reaches EOF without the runner's
 * "done" byte.  It leaves the process group that meson signals on a
 * timeout, and ignores the catchable signals.
 */
static pid_t runner_pid, guardian_pid;
static int guardian_fd = -1;

static void start_guardian(void)
{
	static const int ignored[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM };
	int p[2];
	char c;
	ssize_t n;

	if (pipe2(p, O_CLOEXEC))
		return;
	guardian_pid = fork();
	if (guardian_pid < 0) {
		close(p[0]);
		close(p[1]);
		return;
	}
	if (guardian_pid > 0) {
		close(p[0]);
		guardian_fd = p[1];
		return;
	}
	close(p[1]);
	/* Out of the runner's process group: meson's SIGKILL goes to the group. */
	setpgid(0, 0);
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		signal(ignored[i], SIG_IGN);
	do
		n = read(p[0], &c, 1);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		restore_sysfs();
	_exit(0);
}

/* atexit: the runner restores and dismisses the guardian; test children only restore. */
static void restore_at_exit(void)
{
	restore_sysfs();
	if (getpid() != runner_pid || guardian_fd < 0)
		return;
	if (write(guardian_fd, "d", 1) == 1)
		close(guardian_fd);
	else
		close(guardian_fd); /* EOF instead: the guardian restores once more */
	guardian_fd = -1;
	waitpid(guardian_pid, NULL, 0);
}

static void save_sysfs_once(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM,
				    SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE };
	struct sigaction sa;

	if (saved_ok)
		return;
	if (read_bracketed(SYSFS_ENABLED, saved_enabled, sizeof(saved_enabled)))
		return;
	if (read_bracketed(SYSFS_2M_ENABLED, saved_2m, sizeof(saved_2m)))
		saved_2m[0] = 0;
	/* Absent before 6.8 (no per-size controls) and where pages are not 4 KiB. */
	if (read_bracketed(SYSFS_64K_ENABLED, saved_64k, sizeof(saved_64k)))
		saved_64k[0] = 0;
	saved_ok = 1;
	runner_pid = getpid();
	start_guardian();
	atexit(restore_at_exit);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = restore_on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
}

/* Unchecked fixture: runs in the runner process around every TCase. */
static void runner_setup(void)
{
	save_sysfs_once();
}

static void runner_teardown(void)
{
	restore_sysfs();
}

/* Checked fixture (in the test child): preconditions of every scenario. */
static void child_setup(void)
{
	char pmd[32] = "";

	ck_assert_msg(saved_ok, "could not read %s", SYSFS_ENABLED);
	ck_assert_int_gt(read_file(SYSFS_PMD_SIZE, pmd, sizeof(pmd)), 0);
	ck_assert_msg(strtoul(pmd, NULL, 10) == TU_PMD, "PMD size %s, tests need 2 MiB", pmd);
	/* The 2 MiB size must follow the global mode we set. */
	if (saved_2m[0] && strcmp(saved_2m, "inherit"))
		ck_assert_int_eq(write_str(SYSFS_2M_ENABLED, "inherit"), 0);
	ck_assert_int_eq(prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0), 0);
}

static void set_mode(const char *mode)
{
	char now[32];

	ck_assert_msg(write_str(SYSFS_ENABLED, mode) == 0, "cannot write %s to %s", mode,
		      SYSFS_ENABLED);
	ck_assert_int_eq(read_bracketed(SYSFS_ENABLED, now, sizeof(now)), 0);
	ck_assert_str_eq(now, mode);
}

/* ------------------------------------------------------------------ */
/* libthp wrappers                                                     */

static int set_policy(uint32_t policy, uint32_t flags, struct thp_default_opts *out)
{
	THP_OPTS(thp_default_opts, o, .policy = policy, .flags = flags);
	int r;

	errno = 0;
	r = thp_set_default(&o);
	if (out)
		*out = o;
	return r;
}

static int get_policy(int pidfd, struct thp_default_opts *out)
{
	THP_OPTS(thp_default_opts, o, .pidfd = pidfd, .policy = 77);
	int r = thp_get_default(&o);

	if (out)
		*out = o;
	return r < 0 ? r : (int)o.policy;
}

static int reset_system(void)
{
	return set_policy(THP_POLICY_SYSTEM, 0, NULL);
}

static long thp_disable_now(void)
{
	return prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
}

/* anonhuge_kb of a fresh touched mapping, -1 on measurement failure */
static long fresh_anonhuge(bool advise)
{
	struct tu_smaps s;

	return tu_probe_fresh(advise, &s) ? -1 : s.anonhuge_kb;
}

/*
 * For measurements expected to be huge: unadvised faults under "always" do
 * no direct compaction, so on a fragmented machine one try may miss.  Retry
 * while nothing is huge: where 0 is expected this only makes the check
 * stricter, so it can never hide a wrong result.
 */
static long fresh_anonhuge_pos(bool advise)
{
	long kb = -1;

	for (int i = 0; i < 5 && kb <= 0; i++)
		kb = fresh_anonhuge(advise);
	return kb;
}

/* ------------------------------------------------------------------ */
/* fork()ed child measurements                                         */

struct child_result {
	int get;        /* thp_get_default() policy or -errno */
	long plain_kb;  /* AnonHugePages, no advice */
	long advised_kb; /* AnonHugePages, MADV_HUGEPAGE */
	long thp_disable;
	int status;     /* wait status (filled by the parent) */
};

static struct child_result forked_measure(void)
{
	struct child_result r = { .get = -1, .plain_kb = -2, .advised_kb = -2, .status = -1 };
	int p[2];
	pid_t pid;

	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct child_result c;

		close(p[0]);
		c.get = get_policy(THP_SELF, NULL);
		c.plain_kb = fresh_anonhuge(false);
		c.advised_kb = fresh_anonhuge_pos(true);
		c.thp_disable = thp_disable_now();
		c.status = 0;
		_exit(write(p[1], &c, sizeof(c)) == sizeof(c) ? 0 : 3);
	}
	close(p[1]);
	if (read(p[0], &r, sizeof(r)) != sizeof(r))
		r.get = -EIO;
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &r.status, 0), pid);
	return r;
}

/* ------------------------------------------------------------------ */
/* fork()+execv() THP_CHILD_REPORT                                     */

struct report {
	char line[512];
	char policy[32];
	long anonhuge_kb;
	int hg, nh;
	int status;
};

static const char *kv(const char *line, const char *key, char *val, size_t len)
{
	size_t k = strlen(key);

	for (const char *p = line; (p = strstr(p, key)); p++) {
		if ((p == line || p[-1] == ' ') && p[k] == '=') {
			size_t n = strcspn(p + k + 1, " \n");

			if (n >= len)
				n = len - 1;
			memcpy(val, p + k + 1, n);
			val[n] = 0;
			return val;
		}
	}
	return NULL;
}

static struct report exec_report(bool advise)
{
	const char *exe = getenv("THP_CHILD_REPORT");
	struct report r;
	char v[64];
	int p[2];
	ssize_t n, got = 0;
	pid_t pid;

	memset(&r, 0, sizeof(r));
	r.anonhuge_kb = -2;
	ck_assert_msg(exe && *exe, "THP_CHILD_REPORT is not set (meson sets it)");
	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char *argv[] = { (char *)exe, advise ? "--madvise" : NULL, NULL };

		dup2(p[1], 1);
		close(p[0]);
		close(p[1]);
		execv(exe, argv);
		_exit(127);
	}
	close(p[1]);
	while (got < (ssize_t)sizeof(r.line) - 1 &&
	       (n = read(p[0], r.line + got, sizeof(r.line) - 1 - got)) > 0)
		got += n;
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &r.status, 0), pid);
	if (kv(r.line, "policy", r.policy, sizeof(r.policy)) == NULL)
		strcpy(r.policy, "?");
	if (kv(r.line, "anonhuge_kb", v, sizeof(v)))
		r.anonhuge_kb = strtol(v, NULL, 10);
	r.hg = kv(r.line, "hg", v, sizeof(v)) ? atoi(v) : -1;
	r.nh = kv(r.line, "nh", v, sizeof(v)) ? atoi(v) : -1;
	return r;
}

#define ck_child_ok(st) \
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status 0x%x", (st))

/* ------------------------------------------------------------------ */
/* Scenario: global always, process NOHUGE (the RFC selftest)          */

START_TEST(always_nohuge)
{
	struct thp_default_opts set, got;
	long base_plain, self_plain, self_adv, sys_plain, sys_adv;
	struct child_result fc;
	struct report ex_plain, ex_adv, ex_sys;
	int rset, rget, rsys, rget_sys, set_errno;

	set_mode("always");
	/* Sanity: this machine does give THP to an unadvised mapping under always. */
	base_plain = fresh_anonhuge_pos(false);

	rset = set_policy(THP_POLICY_NOHUGE, 0, &set);
	set_errno = errno;
	rget = get_policy(THP_SELF, &got);
	self_plain = fresh_anonhuge(false);
	self_adv = fresh_anonhuge_pos(true);
	fc = forked_measure();
	ex_plain = exec_report(false);
	ex_adv = exec_report(true);

	rsys = reset_system();
	rget_sys = get_policy(THP_SELF, NULL);
	sys_plain = fresh_anonhuge_pos(false);
	sys_adv = fresh_anonhuge_pos(true);
	ex_sys = exec_report(false);
	for (int i = 0; i < 4 && ex_sys.anonhuge_kb == 0; i++)
		ex_sys = exec_report(false);

	restore_sysfs();

	ck_assert_int_gt(base_plain, 0);
	ck_assert_msg(rset == 0, "set NOHUGE: %d (%s)", rset, strerror(set_errno));
	ck_assert_uint_eq(set.backend_used, THP_BACKEND_PRCTL_DISABLE);
	ck_assert(set.persistent);
	ck_assert_int_eq(rget, THP_POLICY_NOHUGE);
	ck_assert(got.persistent);
	/* own process */
	ck_assert_int_eq(self_plain, 0);
	ck_assert_int_gt(self_adv, 0);
	/* fork()ed child */
	ck_child_ok(fc.status);
	ck_assert_int_eq(fc.get, THP_POLICY_NOHUGE);
	ck_assert_int_eq(fc.plain_kb, 0);
	ck_assert_int_gt(fc.advised_kb, 0);
	/* exec()ed child */
	ck_child_ok(ex_plain.status);
	ck_assert_str_eq(ex_plain.policy, "nohuge");
	ck_assert_msg(ex_plain.anonhuge_kb == 0, "exec child: %s", ex_plain.line);
	ck_child_ok(ex_adv.status);
	ck_assert_str_eq(ex_adv.policy, "nohuge");
	ck_assert_int_eq(ex_adv.hg, 1);
	ck_assert_msg(ex_adv.anonhuge_kb > 0, "exec child: %s", ex_adv.line);
	/* back to SYSTEM: unadvised memory is huge again */
	ck_assert_int_eq(rsys, 0);
	ck_assert_int_eq(rget_sys, THP_POLICY_SYSTEM);
	ck_assert_int_gt(sys_plain, 0);
	ck_assert_int_gt(sys_adv, 0);
	ck_child_ok(ex_sys.status);
	ck_assert_str_eq(ex_sys.policy, "system");
	ck_assert_msg(ex_sys.anonhuge_kb > 0, "exec child: %s", ex_sys.line);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Scenario: global madvise, process HUGE (not persistent on mainline) */

START_TEST(madvise_huge)
{
	struct thp_default_opts set, req, got;
	struct tu_smaps before, after, fresh;
	struct tu_map existing;
	struct report ex;
	struct child_result fc;
	int rset, rreq, req_errno, rget, rsys;
	bool reset_clean;

	set_mode("madvise");
	ck_assert_int_eq(tu_map_touch(&existing, false, true), 0);
	ck_assert_int_eq(tu_smaps_at(existing.addr, &before), 0);

	rset = set_policy(THP_POLICY_HUGE, 0, &set);
	tu_smaps_at(existing.addr, &after);
	rget = get_policy(THP_SELF, &got);
	tu_probe_fresh(false, &fresh);
	rreq = set_policy(THP_POLICY_HUGE, THP_DEFAULT_F_REQUIRE_PERSISTENT, &req);
	req_errno = errno;
	fc = forked_measure();
	ex = exec_report(false);

	rsys = reset_system();
	reset_clean = thp_disable_now() == 0;
	tu_unmap(&existing);
	restore_sysfs();

	ck_assert(!before.hg && !before.nh);
	ck_assert_int_eq(rset, 0);
	ck_assert_uint_eq(set.backend_used, THP_BACKEND_EXISTING_ONLY);
	ck_assert(!set.persistent);
	ck_assert_uint_gt(set.mappings_changed, 0);
	ck_assert_msg(after.hg, "existing unadvised mapping was not advised MADV_HUGEPAGE");
	ck_assert(!after.nh);
	/* Honest: a fresh mapping is not huge by default, and get says so. */
	ck_assert(!fresh.hg);
	ck_assert_int_eq(rget, THP_POLICY_SYSTEM);
	/* Demanding persistence fails cleanly. */
	ck_assert_int_eq(rreq, -EOPNOTSUPP);
	ck_assert_int_eq(req_errno, EOPNOTSUPP);
	/* Children: the default did not survive. */
	ck_child_ok(fc.status);
	ck_assert_int_eq(fc.get, THP_POLICY_SYSTEM);
	ck_assert_int_eq(fc.plain_kb, 0); /* global madvise, no advice */
	ck_assert_int_gt(fc.advised_kb, 0);
	ck_child_ok(ex.status);
	ck_assert_msg(!strcmp(ex.policy, "system") && ex.hg == 0 && ex.anonhuge_kb == 0,
		      "exec child: %s", ex.line);
	ck_assert_int_eq(rsys, 0);
	ck_assert(reset_clean);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Scenario: global never, every policy                                */

START_TEST(never_each_policy)
{
	static const uint32_t pol[] = { THP_POLICY_NEVER, THP_POLICY_NOHUGE, THP_POLICY_SYSTEM,
					THP_POLICY_HUGE };
	int rset[4], rget[4];
	long plain[4], adv[4];
	int rsys;

	set_mode("never");
	for (int i = 0; i < 4; i++) {
		rset[i] = set_policy(pol[i], 0, NULL);
		rget[i] = get_policy(THP_SELF, NULL);
		plain[i] = fresh_anonhuge(false);
		adv[i] = fresh_anonhuge(true);
	}
	rsys = reset_system();
	restore_sysfs();

	for (int i = 0; i < 4; i++) {
		ck_assert_msg(rset[i] == 0, "set %s: %d", thp_policy_name(pol[i]), rset[i]);
		ck_assert_msg(plain[i] == 0 && adv[i] == 0, "%s under never: %ld/%ld kB huge",
			      thp_policy_name(pol[i]), plain[i], adv[i]);
	}
	ck_assert_int_eq(rget[0], THP_POLICY_NEVER);
	ck_assert_int_eq(rget[1], THP_POLICY_NOHUGE);
	ck_assert_int_eq(rget[2], THP_POLICY_SYSTEM);
	ck_assert_int_eq(rget[3], THP_POLICY_SYSTEM); /* HUGE does not persist */
	ck_assert_int_eq(rsys, 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Scenario: NEVER survives fork() and exec(), beats MADV_HUGEPAGE      */

START_TEST(never_persistence)
{
	struct thp_default_opts set;
	struct child_result fc;
	struct report ex_plain, ex_adv;
	long self_adv, sys_adv;
	int rset, rsys;

	set_mode("always");
	rset = set_policy(THP_POLICY_NEVER, 0, &set);
	self_adv = fresh_anonhuge_pos(true);
	fc = forked_measure();
	ex_plain = exec_report(false);
	ex_adv = exec_report(true);
	rsys = reset_system();
	sys_adv = fresh_anonhuge_pos(true); /* proves the measurement can see THP */
	restore_sysfs();

	ck_assert_int_eq(rset, 0);
	ck_assert_uint_eq(set.backend_used, THP_BACKEND_PRCTL_DISABLE);
	ck_assert(set.persistent);
	ck_assert_int_eq(self_adv, 0);
	ck_child_ok(fc.status);
	ck_assert_int_eq(fc.get, THP_POLICY_NEVER);
	ck_assert_int_eq(fc.thp_disable, 1);
	ck_assert_int_eq(fc.plain_kb, 0);
	ck_assert_int_eq(fc.advised_kb, 0);
	ck_child_ok(ex_plain.status);
	ck_assert_msg(!strcmp(ex_plain.policy, "never") && ex_plain.anonhuge_kb == 0,
		      "exec child: %s", ex_plain.line);
	ck_child_ok(ex_adv.status);
	ck_assert_msg(!strcmp(ex_adv.policy, "never") && ex_adv.hg == 1 && ex_adv.anonhuge_kb == 0,
		      "exec child: %s", ex_adv.line);
	ck_assert_int_eq(rsys, 0);
	ck_assert_int_gt(sys_adv, 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* thp_get_default() of another process through a pidfd                */

/* Fork a child that sets @policy and waits; returns its pid, *pidfd. */
static pid_t policy_child(uint32_t policy, int *pidfd, int *release_fd)
{
	int ready[2], release[2];
	char c = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(release), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char ok;

		close(ready[0]);
		close(release[1]);
		ok = set_policy(policy, 0, NULL) == 0 ? 'y' : 'n';
		if (write(ready[1], &ok, 1) != 1)
			_exit(3);
		(void)read(release[0], &ok, 1); /* until the parent closes it */
		_exit(0);
	}
	close(ready[1]);
	close(release[0]);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	close(ready[0]);
	ck_assert_msg(c == 'y', "child could not set %s", thp_policy_name(policy));
	*pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
	ck_assert_int_ge(*pidfd, 0);
	*release_fd = release[1];
	return pid;
}

static void end_child(pid_t pid, int pidfd, int release_fd)
{
	int st;

	close(release_fd);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_child_ok(st);
	close(pidfd);
}

START_TEST(get_remote_pidfd)
{
	struct thp_default_opts got_never, got_sys;
	int pidfd, rel, r_never, r_sys;
	pid_t pid;

	pid = policy_child(THP_POLICY_NEVER, &pidfd, &rel);
	r_never = get_policy(pidfd, &got_never);
	end_child(pid, pidfd, rel);

	pid = policy_child(THP_POLICY_SYSTEM, &pidfd, &rel);
	r_sys = get_policy(pidfd, &got_sys);
	end_child(pid, pidfd, rel);

	ck_assert_msg(r_never == THP_POLICY_NEVER, "remote NEVER read as %d", r_never);
	ck_assert(got_never.persistent);
	ck_assert_uint_eq(got_never.backend_used, THP_BACKEND_PRCTL_DISABLE);
	/* SYSTEM and NOHUGE look alike from outside: libthp must not guess. */
	ck_assert_msg(r_sys == -EOPNOTSUPP, "remote SYSTEM read as %d", r_sys);
	/* our own policy was not touched */
	ck_assert_int_eq(thp_disable_now(), 0);
}
END_TEST

/*
 * A NOHUGE process shows "THP_enabled: 1" in /proc/PID/status, exactly like
 * a SYSTEM one: the remote answer must not claim SYSTEM (it may say NOHUGE
 * or fail), since that is a confident wrong answer.
 */
START_TEST(get_remote_nohuge_not_system)
{
	struct thp_default_opts got;
	int pidfd, rel, r;
	pid_t pid;

	pid = policy_child(THP_POLICY_NOHUGE, &pidfd, &rel);
	r = get_policy(pidfd, &got);
	end_child(pid, pidfd, rel);

	ck_assert_msg(r == THP_POLICY_NOHUGE || r < 0,
		      "remote get of a NOHUGE process returned %d (%s), backend %s, persistent %d",
		      r, r >= 0 ? thp_policy_name((unsigned)r) : "error",
		      thp_backend_name(got.backend_used), (int)got.persistent);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Bad input: the right error, and the process policy untouched        */

struct big_default_opts {
	struct thp_default_opts o;
	uint64_t tail[2];
};

/* One bad call from each of the starting states SYSTEM, NEVER and NOHUGE. */
static void check_bad(const char *what, int (*call)(void), int want)
{
	static const uint32_t start[] = { THP_POLICY_SYSTEM, THP_POLICY_NEVER, THP_POLICY_NOHUGE };

	for (size_t i = 0; i < 3; i++) {
		long before, after;
		int r, e;

		ck_assert_int_eq(set_policy(start[i], 0, NULL), 0);
		before = thp_disable_now();
		errno = 0;
		r = call();
		e = errno;
		after = thp_disable_now();
		ck_assert_int_eq(reset_system(), 0);
		ck_assert_msg(r == want && e == -want, "%s from %s: ret %d errno %d, want %d",
			      what, thp_policy_name(start[i]), r, e, want);
		ck_assert_msg(before == after, "%s from %s changed PR_GET_THP_DISABLE %ld -> %ld",
			      what, thp_policy_name(start[i]), before, after);
	}
}

static int bad_policy(void)
{
	THP_OPTS(thp_default_opts, o, .policy = 99);
	return thp_set_default(&o);
}

static int bad_policy_count(void)
{
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_COUNT);
	return thp_set_default(&o);
}

static int bad_flags(void)
{
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NEVER, .flags = 1u << 7);
	return thp_set_default(&o);
}

static int bad_flags_get(void)
{
	THP_OPTS(thp_default_opts, o, .flags = 1u << 30);
	return thp_get_default(&o);
}

static int bad_backend(void)
{
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NEVER, .backend = 99);
	return thp_set_default(&o);
}

static int small_sz(void)
{
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NEVER);
	o.sz = THP_DEFAULT_OPTS_SIZE_VER0 - 1;
	return thp_set_default(&o);
}

static int zero_sz_get(void)
{
	THP_OPTS(thp_default_opts, o);
	o.sz = 0;
	return thp_get_default(&o);
}

static int null_opts(void)
{
	return thp_set_default(NULL);
}

static int null_opts_get(void)
{
	return thp_get_default(NULL);
}

static int nonzero_tail(void)
{
	struct big_default_opts b;

	memset(&b, 0, sizeof(b));
	b.o.sz = sizeof(b);
	b.o.policy = THP_POLICY_NEVER;
	b.tail[1] = 1;
	return thp_set_default(&b.o);
}

static int nonzero_tail_get(void)
{
	struct big_default_opts b;

	memset(&b, 0, sizeof(b));
	b.o.sz = sizeof(b);
	b.tail[0] = 0xff;
	return thp_get_default(&b.o);
}

static int other_pidfd(void)
{
	int fd = (int)syscall(__NR_pidfd_open, getppid(), 0);
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NEVER, .pidfd = fd);
	int r, e;

	if (fd < 0)
		return -1000;
	r = thp_set_default(&o);
	e = errno;
	close(fd);
	errno = e;
	return r;
}

static int negative_pidfd(void)
{
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NEVER, .pidfd = -1);
	return thp_set_default(&o);
}

static int huge_require_persistent(void)
{
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_HUGE,
		 .flags = THP_DEFAULT_F_REQUIRE_PERSISTENT);
	return thp_set_default(&o);
}

START_TEST(bad_input)
{
	check_bad("policy 99", bad_policy, -EINVAL);
	check_bad("policy THP_POLICY_COUNT", bad_policy_count, -EINVAL);
	check_bad("unknown flags", bad_flags, -EINVAL);
	check_bad("get: unknown flags", bad_flags_get, -EINVAL);
	check_bad("backend 99", bad_backend, -EINVAL);
	check_bad("sz < VER0", small_sz, -EINVAL);
	check_bad("get: sz 0", zero_sz_get, -EINVAL);
	check_bad("NULL opts", null_opts, -EINVAL);
	check_bad("get: NULL opts", null_opts_get, -EINVAL);
	check_bad("non-zero tail", nonzero_tail, -E2BIG);
	check_bad("get: non-zero tail", nonzero_tail_get, -E2BIG);
	check_bad("set through another process's pidfd", other_pidfd, -EOPNOTSUPP);
	check_bad("negative pidfd", negative_pidfd, -EBADF);
}
END_TEST

/* A larger struct whose tail is zero is accepted (forward compatibility). */
START_TEST(zero_tail_accepted)
{
	struct big_default_opts b;
	int r, g;

	memset(&b, 0, sizeof(b));
	b.o.sz = sizeof(b);
	b.o.policy = THP_POLICY_NEVER;
	r = thp_set_default(&b.o);
	g = get_policy(THP_SELF, NULL);
	ck_assert_int_eq(reset_system(), 0);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(g, THP_POLICY_NEVER);
}
END_TEST

/*
 * HUGE with THP_DEFAULT_F_REQUIRE_PERSISTENT fails with -EOPNOTSUPP on this
 * kernel; a failed set must leave the previous policy in place.
 */
START_TEST(failed_require_persistent_keeps_policy)
{
	check_bad("HUGE + REQUIRE_PERSISTENT", huge_require_persistent, -EOPNOTSUPP);
}
END_TEST

/*
 * HUGE on existing mappings: every unadvised one among thousands is advised
 * (one pass over smaps that advises as it goes must not lose any when
 * advised neighbours merge), and those advised NOHUGE keep their advice:
 * one apart and one amid the others (each run between two NOHUGE mappings
 * is advised in one madvise() call, which must stop short of them).
 */
START_TEST(huge_advises_every_existing_mapping)
{
	const int pages = scaled(3000, 200);
	const size_t ps = 4096;
	char *region = mmap(NULL, (size_t)pages * ps, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *nohuge = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			    -1, 0);
	const uint64_t lo = (uintptr_t)region, hi = lo + (uint64_t)pages * ps;
	struct thp_default_opts set;
	struct vma_counts c;
	int r;

	ck_assert(region != MAP_FAILED && nohuge != MAP_FAILED);
	/* Every other page read-only: one VMA per page, none can merge. */
	for (int i = 1; i < pages; i += 2)
		ck_assert_int_eq(mprotect(region + (size_t)i * ps, ps, PROT_READ), 0);
	must_madvise(nohuge, 4 * MiB, MADV_NOHUGEPAGE);
	/* A read-only page (odd index): its neighbours differ in protection. */
	must_madvise(region + (size_t)(pages / 2 | 1) * ps, ps, MADV_NOHUGEPAGE);
	smaps_count(0, lo, hi, true, &c);
	ck_assert_int_eq(c.vmas, pages);
	ck_assert_int_eq(c.hg, 0);
	ck_assert_int_eq(c.nh, 1);

	r = set_policy(THP_POLICY_HUGE, 0, &set);
	smaps_count(0, lo, hi, true, &c);
	ck_assert_int_eq(reset_system(), 0);

	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(c.vmas, pages);
	ck_assert_msg(c.hg == pages - 1, "%d of %d existing mappings advised huge", c.hg,
		      pages - 1);
	ck_assert_int_eq(c.nh, 1);
	ck_assert_uint_ge(set.mappings_changed, (uint64_t)pages - 1);
	{
		struct smaps_info si;

		ck_assert_int_eq(smaps_lookup(0, (uintptr_t)nohuge, &si), 0);
		ck_assert_msg(si.found && si.nh && !si.hg, "NOHUGE mapping VmFlags:%s", si.vmflags);
	}
	munmap(region, (size_t)pages * ps);
	munmap(nohuge, 4 * MiB);
}
END_TEST

/*
 * thp_get_default() on self looks at a fresh mapping, placed low so that
 * smaps stops early.  It must leave nothing behind, and it must never take
 * a place that is in use: with the low addresses occupied it maps elsewhere
 * and their contents stay as they were.
 */
START_TEST(get_self_probe_mapping)
{
	static const uintptr_t low[] = { 0x40000000, 0x10000000, 0x1000000 };
	struct vma_counts before, after;
	char *mine[3];
	int taken = 0;

	ck_assert_int_eq(get_policy(THP_SELF, NULL), THP_POLICY_SYSTEM);
	{
		struct smaps_info si;

		ck_assert_int_eq(smaps_lookup(0, low[0], &si), 0);
		ck_assert_msg(!si.found, "the probe mapping at 0x%lx was left behind",
			      (unsigned long)low[0]);
	}
	for (int i = 0; i < 3; i++) {
		mine[i] = mmap((void *)low[i], 4096, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
		if (mine[i] == MAP_FAILED) {
			mine[i] = NULL;
			continue;
		}
		ck_assert_ptr_eq(mine[i], (void *)low[i]);
		memset(mine[i], 0x5a + i, 4096);
		taken++;
	}
	ck_assert_msg(taken > 0, "could not map any of the low addresses");
	smaps_count(0, 0, UINT64_MAX, true, &before);
	ck_assert_int_eq(get_policy(THP_SELF, NULL), THP_POLICY_SYSTEM);
	smaps_count(0, 0, UINT64_MAX, true, &after);
	ck_assert_int_eq(after.vmas, before.vmas);
	for (int i = 0; i < 3; i++) {
		if (!mine[i])
			continue;
		for (int b = 0; b < 4096; b++)
			ck_assert_int_eq((unsigned char)mine[i][b], 0x5a + i);
		munmap(mine[i], 4096);
	}
}
END_TEST

/* ------------------------------------------------------------------ */
/* Concurrency: the policy is process-wide, calls are serialised       */

#define RACE_THREADS 8

struct race_arg {
	unsigned int id, calls;
	pthread_barrier_t *start;
	int bad_ret;          /* first return value that is neither 0 nor documented */
	uint32_t bad_policy;
	unsigned int bad_calls;
	unsigned int get_bad;
};

/* thp_set_default() documents 0 or -EOPNOTSUPP for a valid request. */
static bool documented_set_ret(int r)
{
	return r == 0 || r == -EOPNOTSUPP;
}

static void *race_thread(void *p)
{
	static const uint32_t pol[] = { THP_POLICY_NEVER, THP_POLICY_SYSTEM, THP_POLICY_NOHUGE };
	struct race_arg *a = p;

	pthread_barrier_wait(a->start);
	for (unsigned int i = 0; i < a->calls; i++) {
		uint32_t policy = pol[(i + a->id) % 3];
		THP_OPTS(thp_default_opts, o, .policy = policy);
		THP_OPTS(thp_default_opts, g);
		int r = thp_set_default(&o);

		if (!documented_set_ret(r) && !a->bad_calls++) {
			a->bad_ret = r;
			a->bad_policy = policy;
		}
		r = thp_get_default(&g);
		if (r != 0 || g.policy >= THP_POLICY_COUNT)
			a->get_bad++;
	}
	/* Every thread ends on NOHUGE: whatever the order, that is the last policy set. */
	{
		THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NOHUGE);
		int r = thp_set_default(&o);

		if (!documented_set_ret(r) && !a->bad_calls++) {
			a->bad_ret = r;
			a->bad_policy = THP_POLICY_NOHUGE;
		}
	}
	return NULL;
}

/*
 * Threads setting and reading the default at once: every call returns 0 or
 * a documented error (set and read-back used to interleave with another
 * thread's set: -EIO), and the state at the end is the last policy set,
 * in the kernel (PR_GET_THP_DISABLE), read back, and on a fresh mapping in
 * a forked and an exec()ed child.
 */
START_TEST(concurrent_set_get)
{
	const unsigned int calls = scaled(1000, 50);
	struct race_arg a[RACE_THREADS];
	pthread_t th[RACE_THREADS];
	pthread_barrier_t start;
	struct child_result fc;
	struct report ex;
	int get, disable;

	set_mode("always");
	ck_assert_int_eq(pthread_barrier_init(&start, NULL, RACE_THREADS), 0);
	for (unsigned int i = 0; i < RACE_THREADS; i++) {
		a[i] = (struct race_arg){ .id = i, .calls = calls, .start = &start };
		ck_assert_int_eq(pthread_create(&th[i], NULL, race_thread, &a[i]), 0);
	}
	for (unsigned int i = 0; i < RACE_THREADS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&start);
	disable = (int)thp_disable_now();
	get = get_policy(THP_SELF, NULL);
	fc = forked_measure();
	ex = exec_report(false);
	ck_assert_int_eq(reset_system(), 0);
	restore_sysfs();

	for (unsigned int i = 0; i < RACE_THREADS; i++) {
		ck_assert_msg(a[i].bad_calls == 0,
			      "thread %u: %u of %u thp_set_default() calls returned an undocumented "
			      "error, first %d (%s) for %s", i, a[i].bad_calls, calls + 1,
			      a[i].bad_ret, thp_strerror(a[i].bad_ret), thp_policy_name(a[i].bad_policy));
		ck_assert_msg(a[i].get_bad == 0, "thread %u: %u thp_get_default() calls failed", i,
			      a[i].get_bad);
	}
	ck_assert_int_eq(disable, 1 | PR_THP_DISABLE_EXCEPT_ADVISED);
	ck_assert_int_eq(get, THP_POLICY_NOHUGE);
	ck_child_ok(fc.status);
	ck_assert_int_eq(fc.get, THP_POLICY_NOHUGE);
	ck_assert_int_eq(fc.plain_kb, 0);
	ck_child_ok(ex.status);
	ck_assert_msg(!strcmp(ex.policy, "nohuge") && ex.anonhuge_kb == 0, "exec child: %s",
		      ex.line);
}
END_TEST

/*
 * A call made after a failure (so a detail was showing) that itself passes
 * over a mechanism or backend before it succeeds: thp_strerror_detail() is
 * "" afterwards, as the header promises, for every entry point.
 */
static void prime_detail(void)
{
	ck_assert_int_eq(thp_set_default(NULL), -EINVAL);
	ck_assert_msg(thp_strerror_detail()[0], "a failed call left no detail to clear");
}

#define ck_detail_clear(what)                                                              \
	ck_assert_msg(!thp_strerror_detail()[0], "%s succeeded but the detail says \"%s\"", \
		      what, thp_strerror_detail())

START_TEST(detail_empty_after_success)
{
	struct thp_probe_info info = { .sz = sizeof(info) };
	struct thp_mapping_state st;
	struct thp_range r;
	char *p = map_aligned(4, 0);
	int ret;

	r = (struct thp_range){ (uintptr_t)p, 4 * MiB };
	/* The RFC handshake fails here (no such prctl): NOHUGE falls back to PR_SET_THP_DISABLE. */
	prime_detail();
	{
		THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NOHUGE,
			 .flags = THP_DEFAULT_F_RFC_PRCTL, .prctl_set = 1000, .prctl_get = 1001);

		ret = thp_set_default(&o);
		ck_assert_int_eq(ret, 0);
		ck_assert_uint_eq(o.backend_used, THP_BACKEND_PRCTL_DISABLE);
		ck_assert_int_eq(thp_disable_now(), 1 | PR_THP_DISABLE_EXCEPT_ADVISED);
		ck_detail_clear("thp_set_default(NOHUGE, RFC prctl 1000/1001)");
	}
	prime_detail();
	{
		THP_OPTS(thp_default_opts, o, .flags = THP_DEFAULT_F_RFC_PRCTL, .prctl_set = 1000,
			 .prctl_get = 1001);

		ck_assert_int_eq(thp_get_default(&o), 0);
		ck_assert_uint_eq(o.policy, THP_POLICY_NOHUGE);
		ck_detail_clear("thp_get_default(RFC prctl 1000/1001)");
	}
	ck_assert_int_eq(reset_system(), 0);
	/* Passes over the backends this kernel lacks (PMADV) on the way. */
	prime_detail();
	ck_assert_int_eq(thp_probe(&info), 0);
	ck_detail_clear("thp_probe()");
	prime_detail();
	{
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE);

		ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), 1);
		ck_assert(vma_hg(0, (uintptr_t)p));
		ck_detail_clear("thp_apply_ranges()");
	}
	prime_detail();
	{
		THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_NOHUGE,
			 .flags = THP_F_SKIP_ERRORS);

		ck_assert_int_ge(thp_apply_all(&o), 1);
		ck_assert(vma_nh(0, (uintptr_t)p));
		ck_detail_clear("thp_apply_all()");
	}
	prime_detail();
	{
		THP_OPTS(thp_query_opts, q, .addr = (uintptr_t)p, .len = 1, .states = &st,
			 .states_cap = 1);

		ck_assert_int_eq(thp_query(&q), 1);
		ck_detail_clear("thp_query()");
	}
	munmap(p, 4 * MiB);
}
END_TEST

/*
 * thp_probe() follows a per-size "enabled" switched under it: each value
 * for 64 KiB under two top-level modes, read on the next call (no cache).
 * The settings are put back before the assertions (and by the runner).
 */
START_TEST(probe_follows_size_enabled)
{
	static const struct {
		const char *top, *size;
		unsigned int enabled, mode;
	} steps[] = {
		{ "madvise", "always", THP_MODE_ALWAYS, THP_MODE_ALWAYS },
		{ "madvise", "madvise", THP_MODE_MADVISE, THP_MODE_MADVISE },
		{ "madvise", "never", THP_MODE_NEVER, THP_MODE_NEVER },
		{ "madvise", "inherit", THP_MODE_INHERIT, THP_MODE_MADVISE },
		{ "never", "inherit", THP_MODE_INHERIT, THP_MODE_NEVER },
		{ "always", "inherit", THP_MODE_INHERIT, THP_MODE_ALWAYS },
		{ "never", "madvise", THP_MODE_MADVISE, THP_MODE_MADVISE },
	};
	struct thp_size_info got[sizeof(steps) / sizeof(steps[0])];
	unsigned int top[sizeof(steps) / sizeof(steps[0])];
	struct thp_probe_info info;
	char now[32];

	if (!saved_64k[0]) {
		ck_assert_msg(!in_ci(), "no %s on the CI host", SYSFS_64K_ENABLED);
		return;
	}
	memset(got, 0, sizeof(got));
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		set_mode(steps[i].top);
		ck_assert_int_eq(write_str(SYSFS_64K_ENABLED, steps[i].size), 0);
		ck_assert_int_eq(read_bracketed(SYSFS_64K_ENABLED, now, sizeof(now)), 0);
		ck_assert_str_eq(now, steps[i].size);
		memset(&info, 0, sizeof(info));
		info.sz = sizeof(info);
		ck_assert_int_eq(thp_probe(&info), 0);
		top[i] = info.thp_mode;
		for (unsigned int k = 0; k < info.nr_sizes && k < THP_PROBE_MAX_SIZES; k++)
			if (info.sizes[k].size == 64 * 1024)
				got[i] = info.sizes[k];
	}
	restore_sysfs();
	ck_assert_int_eq(read_bracketed(SYSFS_64K_ENABLED, now, sizeof(now)), 0);
	ck_assert_str_eq(now, saved_64k);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		bool huge = steps[i].mode == THP_MODE_ALWAYS || steps[i].mode == THP_MODE_MADVISE;

		ck_assert_msg(got[i].size == 64 * 1024, "step %zu: no 64 KiB entry", i);
		ck_assert_msg(got[i].enabled == steps[i].enabled && got[i].mode == steps[i].mode &&
			      got[i].huge_policy == huge,
			      "step %zu (top %s, 64 KiB %s): enabled %u mode %u huge_policy %d, "
			      "top-level mode %u", i, steps[i].top, steps[i].size, got[i].enabled,
			      got[i].mode, got[i].huge_policy, top[i]);
	}
}
END_TEST

/* ------------------------------------------------------------------ */

static void add(Suite *s, const char *name, const TTest *t)
{
	TCase *tc = tcase_create(name);

	tcase_add_unchecked_fixture(tc, runner_setup, runner_teardown);
	tcase_add_checked_fixture(tc, child_setup, NULL);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, t);
	suite_add_tcase(s, tc);
}

int main(void)
{
	Suite *s = suite_create("default");
	int rc;

	save_sysfs_once();
	add(s, "always_nohuge", always_nohuge);
	add(s, "madvise_huge", madvise_huge);
	add(s, "never_each_policy", never_each_policy);
	add(s, "never_persistence", never_persistence);
	add(s, "get_remote_pidfd", get_remote_pidfd);
	add(s, "get_remote_nohuge_not_system", get_remote_nohuge_not_system);
	add(s, "bad_input", bad_input);
	add(s, "zero_tail_accepted", zero_tail_accepted);
	add(s, "failed_require_persistent_keeps_policy", failed_require_persistent_keeps_policy);
	add(s, "get_self_probe_mapping", get_self_probe_mapping);
	add(s, "huge_advises_every_existing_mapping", huge_advises_every_existing_mapping);
	add(s, "concurrent_set_get", concurrent_set_get);
	add(s, "detail_empty_after_success", detail_empty_after_success);
	add(s, "probe_follows_size_enabled", probe_follows_size_enabled);
	rc = run_suite(s);
	restore_sysfs();
	return rc;
}
