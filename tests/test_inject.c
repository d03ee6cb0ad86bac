// SPDX-License-Identifier: LGPL-2.1-or-later
/* The inject backend: a running, multi-threaded child made to advise itself and set its default. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <thp/thp.h>

#include "helpers.h"
#include "../lib/compat.h"

#define PROBE_ARG "--inject-probe-thp-disable"
#define REGION (4 * MiB)
#define SLEEP_NS (30 * 1000 * 1000L)

/* What the child's main thread sits in while the parent injects. */
enum wait_mode { WAIT_READ, WAIT_NANOSLEEP, WAIT_FUTEX };

/* Shared between the parent and the child (MAP_SHARED before fork). */
struct shared {
	_Atomic uint32_t futex_word; /* 1: the futex waiter thread may go */
	_Atomic uint32_t seq;        /* WAIT_FUTEX: bumped after each command */
	_Atomic int stop;            /* the child's threads end */
	_Atomic int errors;          /* self-checks that failed in the child */
	char what[128];              /* the first failure */
};

struct child {
	pid_t pid;
	int pidfd;
	int cmd, res;    /* pipes to and from the child's main thread */
	uint64_t addr;   /* REGION bytes, 2 MiB aligned, filled */
	struct shared *sh;
};

static const char *self_exe = "/proc/self/exe";

static void child_fail(struct shared *sh, const char *what)
{
	if (atomic_fetch_add(&sh->errors, 1) == 0)
		snprintf(sh->what, sizeof(sh->what), "%s (errno %d)", what, errno);
}

static uint64_t sum(const unsigned char *p, size_t n)
{
	uint64_t s = 0;

	for (size_t i = 0; i < n; i++)
		s = s * 31 + p[i];
	return s;
}

static uint64_t now_ns_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* nanosleep() always sleeps its full time and never fails with EINTR. */
static bool checked_sleep(struct shared *sh)
{
	struct timespec ts = { 0, SLEEP_NS };
	uint64_t t0 = now_ns_mono();

	if (nanosleep(&ts, NULL) != 0) {
		child_fail(sh, "nanosleep failed");
		return false;
	}
	if (now_ns_mono() - t0 < (uint64_t)SLEEP_NS) {
		child_fail(sh, "nanosleep returned early");
		return false;
	}
	return true;
}

/* FUTEX_WAIT returns 0 or EAGAIN, never EINTR, until the word is 1. */
static void checked_futex_wait(struct shared *sh)
{
	while (atomic_load(&sh->futex_word) == 0) {
		long r = syscall(SYS_futex, &sh->futex_word, FUTEX_WAIT, 0, NULL, NULL, 0);

		if (r != 0 && errno != EAGAIN) {
			child_fail(sh, "futex wait failed");
			return;
		}
	}
}

/* The main thread in WAIT_FUTEX: FUTEX_WAIT until the parent bumps seq. */
static uint32_t seq_seen;

static void checked_seq_wait(struct shared *sh)
{
	while (atomic_load(&sh->seq) == seq_seen) {
		long r = syscall(SYS_futex, &sh->seq, FUTEX_WAIT, seq_seen, NULL, NULL, 0);

		if (r != 0 && errno != EAGAIN) {
			child_fail(sh, "futex wait (main thread) failed");
			return;
		}
	}
	seq_seen = atomic_load(&sh->seq);
}

static void *sleeper(void *arg)
{
	struct shared *sh = arg;

	while (!atomic_load(&sh->stop) && checked_sleep(sh))
		;
	return NULL;
}

static void *futex_waiter(void *arg)
{
	checked_futex_wait(arg);
	return NULL;
}

/* Keeps mapping, filling and checking memory while the parent injects. */
static void *allocator(void *arg)
{
	struct shared *sh = arg;

	for (unsigned int round = 0; !atomic_load(&sh->stop); round++) {
		unsigned char *p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t s;

		if (p == MAP_FAILED) {
			child_fail(sh, "mmap");
			return NULL;
		}
		for (size_t i = 0; i < 2 * MiB; i++)
			p[i] = (unsigned char)(i * 7 + round);
		s = sum(p, 2 * MiB);
		sched_yield();
		if (sum(p, 2 * MiB) != s)
			child_fail(sh, "allocator checksum");
		munmap(p, 2 * MiB);
	}
	return NULL;
}

static int probe_thp_disable_exec(void)
{
	char *argv[] = { (char *)self_exe, (char *)PROBE_ARG, NULL };
	pid_t p = fork();
	int st;

	if (p == 0) {
		execv(self_exe, argv);
		_exit(100);
	}
	if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static int probe_thp_disable_fork(void)
{
	pid_t p = fork();
	int st;

	if (p == 0)
		_exit((int)prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
	if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/*
 * The child's main thread: waits as @mode says, answers 'P' with
 * PR_GET_THP_DISABLE read by itself, a forked and an exec()ed child;
 * 'Q' ends it after its threads and the checksum are checked.
 */
static void child_main(struct child *c, enum wait_mode mode)
{
	struct shared *sh = c->sh;
	unsigned char *m = map_aligned(4, 0);
	pthread_t th[3];
	uint64_t s0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (size_t i = 0; i < REGION; i++)
		m[i] = (unsigned char)(i * 13 + 1);
	s0 = sum(m, REGION);
	pthread_create(&th[0], NULL, sleeper, sh);
	pthread_create(&th[1], NULL, futex_waiter, sh);
	pthread_create(&th[2], NULL, allocator, sh);
	c->addr = (uintptr_t)m;
	if (write(c->res, &c->addr, sizeof(c->addr)) != sizeof(c->addr))
		_exit(1);
	if (mode != WAIT_READ)
		fcntl(c->cmd, F_SETFL, O_NONBLOCK);
	for (;;) {
		char cmd;
		ssize_t n;

		if (mode == WAIT_NANOSLEEP)
			checked_sleep(sh);
		else if (mode == WAIT_FUTEX)
			checked_seq_wait(sh);
		n = read(c->cmd, &cmd, 1);
		if (n < 0 && mode != WAIT_READ && errno == EAGAIN)
			continue;
		if (n != 1) {
			child_fail(sh, "read on the command pipe");
			_exit(1);
		}
		if (cmd == 'P') {
			int r[3] = { (int)prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0),
				     probe_thp_disable_fork(), probe_thp_disable_exec() };

			if (write(c->res, r, sizeof(r)) != sizeof(r))
				_exit(1);
			continue;
		}
		atomic_store(&sh->stop, 1);
		atomic_store(&sh->futex_word, 1);
		syscall(SYS_futex, &sh->futex_word, FUTEX_WAKE, 100, NULL, NULL, 0);
		for (int i = 0; i < 3; i++)
			pthread_join(th[i], NULL);
		if (sum(m, REGION) != s0)
			child_fail(sh, "region checksum");
		_exit(0);
	}
}

static void start_child(struct child *c, enum wait_mode mode)
{
	int cmd[2], res[2];

	c->sh = mmap(NULL, sizeof(*c->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	ck_assert(c->sh != MAP_FAILED);
	memset(c->sh, 0, sizeof(*c->sh));
	ck_assert(pipe(cmd) == 0 && pipe(res) == 0);
	c->pid = fork();
	ck_assert_int_ge(c->pid, 0);
	if (c->pid == 0) {
		close(cmd[1]);
		close(res[0]);
		c->cmd = cmd[0];
		c->res = res[1];
		child_main(c, mode);
	}
	close(cmd[0]);
	close(res[1]);
	c->cmd = cmd[1];
	c->res = res[0];
	ck_assert(read(c->res, &c->addr, sizeof(c->addr)) == sizeof(c->addr));
	c->pidfd = (int)syscall(__NR_pidfd_open, c->pid, 0);
	ck_assert_msg(c->pidfd >= 0, "pidfd_open: %s", strerror(errno));
}

/* Wakes the child's main thread in WAIT_FUTEX (the others ignore it). */
static void bump_seq(struct child *c)
{
	atomic_fetch_add(&c->sh->seq, 1);
	syscall(SYS_futex, &c->sh->seq, FUTEX_WAKE, 100, NULL, NULL, 0);
}

/* PR_GET_THP_DISABLE as the child, a child it forks and one it execs read it. */
static void child_probe(struct child *c, int want)
{
	int r[3];

	ck_assert(write(c->cmd, "P", 1) == 1);
	bump_seq(c);
	ck_assert(read(c->res, r, sizeof(r)) == sizeof(r));
	ck_assert_msg(r[0] == want && r[1] == want && r[2] == want,
		      "PR_GET_THP_DISABLE: child %d, its fork %d, its exec %d; want %d", r[0], r[1],
		      r[2], want);
}

/* The child ends by itself, its self-checks clean. */
static void finish_child(struct child *c)
{
	int st;

	atomic_store(&c->sh->futex_word, 1);
	syscall(SYS_futex, &c->sh->futex_word, FUTEX_WAKE, 100, NULL, NULL, 0);
	ck_assert(write(c->cmd, "Q", 1) == 1);
	bump_seq(c);
	ck_assert(waitpid(c->pid, &st, 0) == c->pid);
	ck_assert_msg(atomic_load(&c->sh->errors) == 0, "child self-check: %s", c->sh->what);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	close(c->cmd);
	close(c->res);
	close(c->pidfd);
	munmap(c->sh, sizeof(*c->sh));
}

static int set_default(struct child *c, unsigned int policy, struct thp_default_opts *o)
{
	THP_OPTS(thp_default_opts, d, .pidfd = c->pidfd, .policy = policy,
		 .backend = THP_BACKEND_INJECT);
	int ret = thp_set_default(&d);

	*o = d;
	return ret;
}

static void advise(struct child *c, int advice)
{
	struct thp_range r = { c->addr, REGION };
	struct thp_report rep;
	THP_OPTS(thp_apply_opts, o, .advice = advice, .reports = &rep);
	int ret;

	o.pidfd = c->pidfd;
	o.backend = THP_BACKEND_INJECT;
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_msg(ret == 1, "inject advice %d: %d (%s)", advice, ret, thp_strerror_detail());
	ck_assert_int_eq(rep.backend, THP_BACKEND_INJECT);
	ck_assert_int_eq(o.backend_used, THP_BACKEND_INJECT);
	ck_assert_uint_eq(rep.bytes_advised, REGION);
	ck_assert_msg(vma_hg(c->pid, c->addr) == (advice == THP_ADVICE_HUGE) &&
			      vma_nh(c->pid, c->addr) == (advice == THP_ADVICE_NOHUGE),
		      "child's VmFlags do not show advice %d", advice);
}

static void every_policy(enum wait_mode mode)
{
	static const struct {
		unsigned int policy;
		int thp_disable; /* PR_GET_THP_DISABLE then */
	} steps[] = {
		{ THP_POLICY_NEVER, 1 },
		{ THP_POLICY_SYSTEM, 0 },
		{ THP_POLICY_NOHUGE, 1 | PR_THP_DISABLE_EXCEPT_ADVISED },
		{ THP_POLICY_NEVER, 1 },
		{ THP_POLICY_SYSTEM, 0 },
	};
	struct thp_default_opts o;
	struct child c;

	start_child(&c, mode);
	advise(&c, THP_ADVICE_HUGE);
	advise(&c, THP_ADVICE_NOHUGE);
	advise(&c, THP_ADVICE_HUGE);
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		int ret = set_default(&c, steps[i].policy, &o);

		/* Before 6.18 NOHUGE is refused, the detail says why. */
		if (ret == -EOPNOTSUPP && steps[i].policy == THP_POLICY_NOHUGE &&
		    strstr(thp_strerror_detail(), "6.18"))
			continue;
		ck_assert_msg(ret == 0, "policy %s: %d (%s)", thp_policy_name(steps[i].policy), ret,
			      thp_strerror_detail());
		ck_assert_int_eq(o.backend_used, THP_BACKEND_INJECT);
		ck_assert(o.persistent);
		child_probe(&c, steps[i].thp_disable);
	}
	/* The advice set before stays: a default is not advice. */
	ck_assert(vma_hg(c.pid, c.addr));
	finish_child(&c);
}

START_TEST(inject_in_read)
{
	every_policy(WAIT_READ);
}
END_TEST

START_TEST(inject_in_nanosleep)
{
	every_policy(WAIT_NANOSLEEP);
}
END_TEST

START_TEST(inject_in_futex)
{
	every_policy(WAIT_FUTEX);
}
END_TEST

START_TEST(inject_huge_default_refused)
{
	struct thp_default_opts o;
	struct child c;

	start_child(&c, WAIT_READ);
	ck_assert_int_eq(set_default(&c, THP_POLICY_HUGE, &o), -EOPNOTSUPP);
	ck_assert_msg(strstr(thp_strerror_detail(), "HUGE"), "detail: %s", thp_strerror_detail());
	child_probe(&c, 0);
	finish_child(&c);
}
END_TEST

START_TEST(inject_not_auto)
{
	struct child c;
	struct thp_range r;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE);

	start_child(&c, WAIT_READ);
	r.addr = c.addr;
	r.len = REGION;
	o.pidfd = c.pidfd;
	ck_assert_int_lt(thp_apply_ranges(&r, 1, &o), 0);
	ck_assert(!vma_hg(c.pid, c.addr));
	finish_child(&c);
}
END_TEST

static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return '?';
	p = strrchr(buf, ')');
	return p && p[1] ? p[2] : '?';
}

/* A child stopped by SIGSTOP is advised and its default set, and stays stopped. */
START_TEST(inject_sigstopped_stays_stopped)
{
	struct thp_default_opts o;
	struct child c;
	int st;

	start_child(&c, WAIT_READ);
	ck_assert(kill(c.pid, SIGSTOP) == 0);
	ck_assert(waitpid(c.pid, &st, WUNTRACED) == c.pid && WIFSTOPPED(st));
	advise(&c, THP_ADVICE_HUGE);
	ck_assert_int_eq(set_default(&c, THP_POLICY_NEVER, &o), 0);
	/* Detach puts it back into the group-stop; wait for that, however long it takes. */
	for (int i = 0; i < 100000 && proc_state(c.pid) != 'T'; i++)
		sched_yield();
	ck_assert_msg(proc_state(c.pid) == 'T', "child state %c, not stopped", proc_state(c.pid));
	ck_assert(kill(c.pid, SIGCONT) == 0);
	child_probe(&c, 1);
	finish_child(&c);
}
END_TEST

static void *park(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* Its main thread gone (pthread_exit()), another thread is stopped instead. */
START_TEST(inject_main_thread_exited)
{
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NEVER, .backend = THP_BACKEND_INJECT);
	char path[64], buf[4096];
	pid_t pid = fork();
	int st;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pthread_t t;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pthread_create(&t, NULL, park, NULL);
		pthread_exit(NULL);
	}
	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)pid);
	/* Wait for the main thread to be a zombie, however long it takes. */
	for (;;) {
		char *p;

		ck_assert(read_file(path, buf, sizeof(buf)) > 0);
		p = strrchr(buf, ')');
		if (p && p[2] == 'Z')
			break;
		sched_yield();
	}
	o.pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
	ck_assert_int_ge(o.pidfd, 0);
	ck_assert_msg(thp_set_default(&o) == 0, "%s", thp_strerror_detail());
	ck_assert_int_eq(o.backend_used, THP_BACKEND_INJECT);
	/* The live thread's status shows the process's mm flags. */
	{
		DIR *d;
		struct dirent *e;
		bool seen = false;

		snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
		d = opendir(path);
		ck_assert(d);
		while ((e = readdir(d))) {
			int tid = atoi(e->d_name);

			if (tid <= 0 || tid == pid)
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, tid);
			ck_assert(read_file(path, buf, sizeof(buf)) > 0);
			ck_assert_msg(strstr(buf, "THP_enabled:\t0"), "%s", buf);
			seen = true;
		}
		closedir(d);
		ck_assert(seen);
	}
	kill(pid, SIGKILL);
	ck_assert(waitpid(pid, &st, 0) == pid);
	close(o.pidfd);
}
END_TEST

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

#define STRESS_CALLS 400

/*
 * Many injections into a thread that is computing (stopped anywhere in
 * user code) while SIGALRM arrives every 200 us: its checksums and the
 * parent's smaps checks stay right, and no signal is lost or doubled in
 * a way its handler could see (it only counts them).
 */
START_TEST(inject_stress_signals)
{
	struct shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct child c = { 0 };
	int res[2], st;

	ck_assert(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	ck_assert(pipe(res) == 0);
	c.pid = fork();
	ck_assert_int_ge(c.pid, 0);
	if (c.pid == 0) {
		struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
		struct itimerval it = { { 0, 200 }, { 0, 200 } };
		unsigned char *m = map_aligned(4, 0);
		uint64_t s0, addr = (uintptr_t)m;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (size_t i = 0; i < REGION; i++)
			m[i] = (unsigned char)(i * 5 + 3);
		s0 = sum(m, 64 << 10);
		sigaction(SIGALRM, &sa, NULL);
		setitimer(ITIMER_REAL, &it, NULL);
		if (write(res[1], &addr, sizeof(addr)) != sizeof(addr))
			_exit(1);
		while (!atomic_load(&sh->stop))
			if (sum(m, 64 << 10) != s0)
				child_fail(sh, "checksum under injection");
		_exit(alarms > 0 ? 0 : 3);
	}
	ck_assert(read(res[0], &c.addr, sizeof(c.addr)) == sizeof(c.addr));
	c.pidfd = (int)syscall(__NR_pidfd_open, c.pid, 0);
	ck_assert_int_ge(c.pidfd, 0);
	for (int i = 0; i < STRESS_CALLS; i++)
		advise(&c, i & 1 ? THP_ADVICE_NOHUGE : THP_ADVICE_HUGE);
	atomic_store(&sh->stop, 1);
	ck_assert(waitpid(c.pid, &st, 0) == c.pid);
	ck_assert_msg(atomic_load(&sh->errors) == 0, "child self-check: %s", sh->what);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	close(c.pidfd);
	close(res[0]);
	close(res[1]);
	munmap(sh, sizeof(*sh));
}
END_TEST

/* A target that has exited (a zombie, not reaped yet): -ESRCH, nothing claimed. */
START_TEST(inject_exited_esrch)
{
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NEVER, .backend = THP_BACKEND_INJECT);
	siginfo_t si;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0)
		_exit(0);
	o.pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
	ck_assert_int_ge(o.pidfd, 0);
	ck_assert(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) == 0);
	ck_assert_int_eq(thp_set_default(&o), -ESRCH);
	ck_assert_int_eq(o.backend_used, 0);
	ck_assert(!o.persistent);
	ck_assert(waitpid(pid, NULL, 0) == pid);
	close(o.pidfd);
}
END_TEST

/* A child whose seccomp filter kills on prctl() is never made to call it. */
START_TEST(inject_seccomp_refused)
{
	const struct seccomp_rule kill_prctl = { SYS_prctl, -1, 0, SECCOMP_RET_KILL_PROCESS };
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NEVER, .backend = THP_BACKEND_INJECT);
	int p[2], st;
	pid_t pid;
	char ok;

	ck_assert(pipe(p) == 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (seccomp_install(&kill_prctl, 1))
			_exit(2);
		if (write(p[1], "k", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	ck_assert(read(p[0], &ok, 1) == 1);
	o.pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
	ck_assert_int_eq(thp_set_default(&o), -EOPNOTSUPP);
	ck_assert_msg(strstr(thp_strerror_detail(), "seccomp"), "detail: %s",
		      thp_strerror_detail());
	ck_assert_int_eq(waitpid(pid, &st, WNOHANG), 0); /* still alive */
	kill(pid, SIGKILL);
	ck_assert(waitpid(pid, &st, 0) == pid);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	close(o.pidfd);
}
END_TEST

/*
 * A kernel without process_vm_readv() (CONFIG_CROSS_MEMORY_ATTACH unset, as
 * in the 6.12 RFC kernels): the target's vDSO is read through ptrace, and
 * the advice lands.  The filter is on the caller, never on the target.
 */
START_TEST(inject_without_process_vm_readv)
{
	const struct seccomp_rule enosys = { SYS_process_vm_readv, -1, 0,
					     SECCOMP_RET_ERRNO | ENOSYS };
	struct child c;

	start_child(&c, WAIT_READ);
	ck_assert_msg(seccomp_install(&enosys, 1) == 0, "seccomp: %s", strerror(errno));
	advise(&c, THP_ADVICE_HUGE);
	advise(&c, THP_ADVICE_NOHUGE);
	finish_child(&c);
}
END_TEST

/* A target someone else traces: -EBUSY, and it stays traced by that one. */
START_TEST(inject_traced_busy)
{
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NEVER, .backend = THP_BACKEND_INJECT);
	int p[2], st;
	pid_t tracer, target;

	ck_assert(pipe(p) == 0);
	tracer = fork();
	ck_assert_int_ge(tracer, 0);
	if (tracer == 0) {
		pid_t t;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		t = fork();
		if (t == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				pause();
		}
		if (ptrace(PTRACE_SEIZE, t, 0, 0) != 0)
			_exit(2);
		if (write(p[1], &t, sizeof(t)) != sizeof(t))
			_exit(1);
		for (;;)
			pause();
	}
	ck_assert(read(p[0], &target, sizeof(target)) == sizeof(target));
	o.pidfd = (int)syscall(__NR_pidfd_open, target, 0);
	ck_assert_int_ge(o.pidfd, 0);
	ck_assert_int_eq(thp_set_default(&o), -EBUSY);
	ck_assert_msg(strstr(thp_strerror_detail(), "traced"), "detail: %s",
		      thp_strerror_detail());
	{
		char path[64], buf[4096];

		snprintf(path, sizeof(path), "/proc/%d/status", (int)target);
		ck_assert(read_file(path, buf, sizeof(buf)) > 0);
		ck_assert(strstr(buf, "THP_enabled:\t1") || !strstr(buf, "THP_enabled"));
	}
	close(o.pidfd);
	kill(tracer, SIGKILL);
	ck_assert(waitpid(tracer, &st, 0) == tracer);
}
END_TEST

static Suite *inject_suite(void)
{
	Suite *s = suite_create("inject");
	TCase *tc = tcase_create("inject");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, inject_in_read);
	tcase_add_test(tc, inject_in_nanosleep);
	tcase_add_test(tc, inject_in_futex);
	tcase_add_test(tc, inject_huge_default_refused);
	tcase_add_test(tc, inject_not_auto);
	tcase_add_test(tc, inject_sigstopped_stays_stopped);
	tcase_add_test(tc, inject_exited_esrch);
	tcase_add_test(tc, inject_stress_signals);
	tcase_add_test(tc, inject_main_thread_exited);
	tcase_add_test(tc, inject_seccomp_refused);
	tcase_add_test(tc, inject_traced_busy);
	tcase_add_test(tc, inject_without_process_vm_readv);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	/* The exec()ed grandchild of child_main(): report its own PR_GET_THP_DISABLE. */
	if (argc == 2 && strcmp(argv[1], PROBE_ARG) == 0)
		return (int)prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	return run_suite(inject_suite());
}
