// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The inject backend whatever happens to its caller: a caller SIGKILLed at
 * random moments of its sessions never leaves the target dead, corrupted,
 * stopped or traced; a target that cannot be stopped (its main thread in
 * vfork()) is left alone within a bound.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <thp/thp.h>

#include "../helpers.h"

#define REGION (4 * MiB)
#define BLOCK 4096

/* Shared between the test, its target and its injectors (MAP_SHARED before fork). */
struct kshared {
	uint64_t addr;		      /* the target's REGION */
	_Atomic uint64_t blocks;      /* checksum blocks the target verified */
	_Atomic uint64_t bad;	      /* ... that came out wrong */
	_Atomic uint64_t signals;     /* SIGALRMs its handler took */
	_Atomic uint64_t bad_signals; /* ... whose own check failed */
	_Atomic uint64_t sessions;    /* inject requests an injector completed */
	_Atomic uint64_t started;     /* injectors that began their loop */
};

static uint64_t now_ns_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct kshared *ksh;
static volatile uint64_t seed = 0x9e3779b97f4a7c15ull;

/* Eight accumulators the compiler keeps in registers, caller- and callee-saved alike. */
static __attribute__((noinline)) uint64_t block_sum(uint64_t s)
{
	uint64_t a = s, b = s ^ 1, c = s + 3, d = s * 5, e = 7, f = 11, g = 13, h = 17;

	for (uint64_t i = 0; i < BLOCK; i++) {
		a += i;
		b ^= a * 0x9e3779b97f4a7c15ull;
		c = c * 31 + b;
		d += c >> 3;
		e ^= d << 1;
		f += e * 3;
		g ^= f + i;
		h += g ^ a;
	}
	return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h;
}

static void on_alarm(int sig)
{
	volatile uint64_t x = 0;

	(void)sig;
	for (int i = 1; i <= 64; i++)
		x += (uint64_t)i;
	if (x != 2080)
		atomic_fetch_add(&ksh->bad_signals, 1);
	atomic_fetch_add(&ksh->signals, 1);
}

/* The target: checksums in registers, verified; a SIGALRM every 500 us; now and then a syscall. */
static void target_main(void)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = SA_RESTART };
	struct itimerval it = { { 0, 500 }, { 0, 500 } };
	uint64_t want = block_sum(seed);
	unsigned int n = 0;

	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (;;) {
		if (block_sum(seed) != want)
			atomic_fetch_add(&ksh->bad, 1);
		atomic_fetch_add(&ksh->blocks, 1);
		if (++n % 8 == 0) {
			struct timespec ts = { 0, 20 * 1000 };

			nanosleep(&ts, NULL);
		}
	}
}

static pid_t start_target(void)
{
	pid_t pid;
	void *p = map_aligned(REGION / MiB, 0);

	ck_assert_ptr_nonnull(p);
	touch_range(p, REGION);
	ksh->addr = (uint64_t)(uintptr_t)p;
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		target_main();
	}
	munmap(p, REGION);
	return pid;
}

/* An injector: inject requests against @target in a loop, until killed. */
static void injector_main(pid_t target)
{
	int pidfd = (int)syscall(SYS_pidfd_open, target, 0);
	struct thp_range r = { ksh->addr, REGION };

	setpgid(0, 0);
	if (pidfd < 0)
		_exit(2);
	atomic_fetch_add(&ksh->started, 1);
	for (unsigned int i = 0;; i++) {
		if (i % 2 == 0) {
			THP_OPTS(thp_apply_opts, o, .pidfd = pidfd, .backend = THP_BACKEND_INJECT,
				 .advice = i % 4 ? THP_ADVICE_HUGE : THP_ADVICE_NOHUGE);

			thp_apply_ranges(&r, 1, &o);
		} else {
			THP_OPTS(thp_default_opts, d, .pidfd = pidfd, .backend = THP_BACKEND_INJECT,
				 .policy = i % 4 == 1 ? THP_POLICY_NEVER : THP_POLICY_SYSTEM);

			thp_set_default(&d);
		}
		atomic_fetch_add(&ksh->sessions, 1);
	}
}

/* A field of /proc/PID/status: a number, or State's letter; -1 when the file is gone. */
static long status_of(pid_t pid, const char *key)
{
	char path[64], buf[4096], *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_file(path, buf, sizeof(buf)) <= 0 || !(p = strstr(buf, key)))
		return -1;
	p += strlen(key);
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p >= 'A' && *p <= 'Z')
		return *p;
	return strtol(p, NULL, 10);
}

/* Our children other than @target (inject helpers orphaned to us, the subreaper). */
static int other_children(pid_t target)
{
	char path[64], buf[4096], *tok, *save = NULL;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	if (read_file(path, buf, sizeof(buf)) < 0)
		return 0;
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (atoi(tok) != target)
			n++;
	return n;
}

/* SIGTERM every child of ours but @target (the helpers orphaned to us). */
static void sigterm_others(pid_t target)
{
	char path[64], buf[4096], *tok, *save = NULL;

	snprintf(path, sizeof(path), "/proc/self/task/%d/children", (int)getpid());
	if (read_file(path, buf, sizeof(buf)) < 0)
		return;
	for (tok = strtok_r(buf, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save))
		if (atoi(tok) != target)
			kill(atoi(tok), SIGTERM);
}

/* Reap every child but @target that has ended: how many; *target_st when the target did. */
static int reap_others(pid_t target, bool *target_died, int *target_st)
{
	int n = 0, st;
	pid_t r;

	while ((r = waitpid(-1, &st, WNOHANG | __WALL)) > 0) {
		if (r == target) {
			*target_died = true;
			*target_st = st;
		} else {
			n++;
		}
	}
	return n;
}

static unsigned int kill_rounds(void)
{
	const char *e = getenv("THP_INJECT_KILL_ROUNDS");
	unsigned int n = e ? (unsigned int)strtoul(e, NULL, 10) : 10000;

	return under_valgrind() ? (n / 50 ? n / 50 : 1) : n;
}

/*
 * Injectors SIGKILLed (with their process group) at random moments that
 * span a whole request, against one target, and their helpers then sent
 * SIGTERM (as systemd stops a unit): after every kill, once the
 * helper (if any) is gone, the target lives, is neither stopped nor
 * traced, and its checksums and signal handler never saw a wrong value.
 */
START_TEST(inject_caller_killed)
{
	const unsigned int rounds = kill_rounds();
	unsigned int deaths = 0, stopped = 0, traced = 0, helpers = 0, late = 0;
	uint64_t span_ns, t0, sessions0, blocks0;
	pid_t target;
	int first_death = 0;

	ksh = mmap(NULL, sizeof(*ksh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(ksh, MAP_FAILED);
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	target = start_target();

	/* The library's probes once, here, so that each injector inherits them. */
	{
		int pidfd = (int)syscall(SYS_pidfd_open, target, 0);
		struct thp_range r = { ksh->addr, REGION };
		THP_OPTS(thp_apply_opts, o, .pidfd = pidfd, .backend = THP_BACKEND_INJECT,
			 .advice = THP_ADVICE_HUGE);
		THP_OPTS(thp_default_opts, d, .pidfd = pidfd, .backend = THP_BACKEND_INJECT,
			 .policy = THP_POLICY_SYSTEM);

		ck_assert_msg(thp_apply_ranges(&r, 1, &o) == 1, "%s", thp_strerror_detail());
		ck_assert_msg(thp_set_default(&d) == 0, "%s", thp_strerror_detail());
		close(pidfd);
	}
	/* Calibrate: how long one request takes here, run by an injector that is not killed. */
	{
		pid_t inj = fork();

		if (inj == 0)
			injector_main(target);
		while (atomic_load(&ksh->started) == 0)
			usleep(100);
		sessions0 = atomic_load(&ksh->sessions);
		t0 = now_ns_mono();
		usleep(300 * 1000);
		span_ns = (now_ns_mono() - t0) / (atomic_load(&ksh->sessions) - sessions0 + 1);
		kill(inj, SIGKILL);
		waitpid(inj, NULL, 0);
		while (other_children(target)) {
			reap_others(target, &(bool){ false }, &(int){ 0 });
			usleep(100);
		}
	}
	ck_assert_msg(atomic_load(&ksh->sessions) > 0, "the injector made no request");
	srandom((unsigned int)getpid());
	blocks0 = atomic_load(&ksh->blocks);
	for (unsigned int round = 0; round < rounds; round++) {
		uint64_t started = atomic_load(&ksh->started), deadline;
		bool died = false;
		int st = 0;
		pid_t inj = fork();
		long v;

		ck_assert_int_ge(inj, 0);
		if (inj == 0)
			injector_main(target);
		deadline = now_ns_mono() + 5000000000ull;
		while (atomic_load(&ksh->started) == started && now_ns_mono() < deadline)
			sched_yield();
		/* Random moments over one and a half requests: every phase of one is hit. */
		{
			struct timespec ts = { 0, (long)((uint64_t)random() % (3 * span_ns / 2 + 1)) };

			nanosleep(&ts, NULL);
		}
		kill(-inj, SIGKILL);
		kill(inj, SIGKILL);
		ck_assert_int_eq(waitpid(inj, &st, 0), inj);
		/* As systemd stops a unit: SIGTERM to what is left, which the helper ignores. */
		sigterm_others(target);
		/* The helper, if the kill came during a request, finishes it and ends. */
		deadline = now_ns_mono() + 5000000000ull;
		while (other_children(target) && now_ns_mono() < deadline) {
			helpers += (unsigned int)reap_others(target, &died, &st);
			usleep(20);
		}
		helpers += (unsigned int)reap_others(target, &died, &st);
		if (other_children(target))
			late++;
		if (!died) {
			v = status_of(target, "\nState:");
			if (v == 't' || v == 'T')
				stopped++;
			if (status_of(target, "\nTracerPid:") != 0)
				traced++;
			if (v == 'Z') {
				ck_assert_int_eq(waitpid(target, &st, 0), target);
				died = true;
			}
		}
		if (died) {
			if (!deaths++)
				first_death = (int)round;
			fprintf(stderr, "round %u: target %d died: status %#x (%s)\n", round,
				(int)target, st, WIFSIGNALED(st) ? strsignal(WTERMSIG(st)) : "exit");
			target = start_target();
		}
	}
	/* The target still runs its checks after the last round. */
	{
		uint64_t b = atomic_load(&ksh->blocks);

		usleep(50 * 1000);
		ck_assert_msg(atomic_load(&ksh->blocks) > b, "the target no longer runs");
	}
	printf("inject_caller_killed: %u kills (one request takes ~%llu us here); %u landed in a "
	       "request (helpers reaped); target deaths %u (first in round %d), wrong checksums "
	       "%llu of %llu blocks, bad signal checks %llu of %llu SIGALRM, left stopped %u, "
	       "left traced %u, helpers alive after 5 s %u\n",
	       rounds, (unsigned long long)(span_ns / 1000), helpers, deaths, first_death,
	       (unsigned long long)atomic_load(&ksh->bad),
	       (unsigned long long)(atomic_load(&ksh->blocks) - blocks0),
	       (unsigned long long)atomic_load(&ksh->bad_signals),
	       (unsigned long long)atomic_load(&ksh->signals), stopped, traced, late);
	fflush(stdout);
	ck_assert_msg(deaths == 0, "%u target deaths in %u kills", deaths, rounds);
	ck_assert_msg(atomic_load(&ksh->bad) == 0, "%llu wrong checksums",
		      (unsigned long long)atomic_load(&ksh->bad));
	ck_assert_uint_eq(atomic_load(&ksh->bad_signals), 0);
	ck_assert_uint_eq(stopped, 0);
	ck_assert_uint_eq(traced, 0);
	ck_assert_uint_eq(late, 0);
	ck_assert_msg(helpers > 0, "no kill landed in a request: the test did not test");
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
}
END_TEST

/* ---- a target whose main thread sits in vfork() ---- */

struct vfork_target {
	pid_t pid;   /* its main thread waits in vfork() */
	int done_fd; /* reads a byte once vfork() returned */
};

static void start_vfork_target(struct vfork_target *vt)
{
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	vt->pid = fork();
	ck_assert_int_ge(vt->pid, 0);
	if (vt->pid == 0) {
		pid_t c;

		close(p[0]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		c = vfork();
		if (c == 0) {
			struct timespec ts = { 30, 0 };

			/* Only system calls in a vfork() child: it runs on its parent's stack. */
			syscall(SYS_nanosleep, &ts, NULL);
			syscall(SYS_exit, 0);
		}
		waitpid(c, NULL, 0);
		if (write(p[1], "v", 1) != 1)
			_exit(3);
		for (;;)
			pause();
	}
	close(p[1]);
	vt->done_fd = p[0];
	/* Until its main thread is in vfork(): it has a child, and waits (D). */
	for (int i = 0; i < 5000; i++) {
		char path[64], buf[64] = "";

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)vt->pid,
			 (int)vt->pid);
		if (read_file(path, buf, sizeof(buf)) > 0 && atoi(buf) > 0 &&
		    status_of(vt->pid, "\nState:") == 'D')
			return;
		usleep(1000);
	}
	ck_abort_msg("the vfork() target did not get into vfork()");
}

/* What a request against the vfork() target gave, run by a child so that a hang is seen. */
struct outcome {
	int ret;
	uint64_t ns;
	char detail[256];
	uint32_t policy;
};

static bool run_request(pid_t target, bool set, struct outcome *out, uint64_t bound_ns)
{
	struct outcome *o = mmap(NULL, sizeof(*o), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t t0 = now_ns_mono();
	bool done = false;
	pid_t c;

	ck_assert_ptr_ne(o, MAP_FAILED);
	o->ret = 1;
	c = fork();
	ck_assert_int_ge(c, 0);
	if (c == 0) {
		int pidfd = (int)syscall(SYS_pidfd_open, target, 0);
		THP_OPTS(thp_default_opts, d, .pidfd = pidfd, .backend = THP_BACKEND_INJECT,
			 .policy = THP_POLICY_NEVER);
		uint64_t s = now_ns_mono();

		o->ret = set ? thp_set_default(&d) : thp_get_default(&d);
		o->ns = now_ns_mono() - s;
		o->policy = d.policy;
		snprintf(o->detail, sizeof(o->detail), "%s", thp_strerror_detail());
		_exit(0);
	}
	while (now_ns_mono() - t0 < bound_ns) {
		if (waitpid(c, NULL, WNOHANG) == c) {
			done = true;
			break;
		}
		usleep(1000);
	}
	if (!done) {
		kill(c, SIGKILL);
		waitpid(c, NULL, 0);
	}
	*out = *o;
	munmap(o, sizeof(*o));
	return done;
}

/*
 * A target whose main thread is in vfork() cannot be stopped: set and get
 * fail with -ETIMEDOUT and a detail within a bound, leaving it running
 * and untraced; once the vfork() child ends it is injected as any other.
 */
START_TEST(inject_vfork_unstoppable)
{
	struct vfork_target vt;
	struct outcome o;
	char path[64], buf[64] = "", v;
	pid_t child;

	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	start_vfork_target(&vt);
	for (int set = 1; set >= 0; set--) {
		ck_assert_msg(run_request(vt.pid, set, &o, 5000000000ull),
			      "thp_%s_default() on a target in vfork() did not return within 5 s",
			      set ? "set" : "get");
		ck_assert_msg(o.ret == -ETIMEDOUT, "%s: %d (%s)", set ? "set" : "get", o.ret,
			      o.detail);
		ck_assert_msg(strstr(o.detail, "did not stop within"), "detail: %s", o.detail);
		/* The helper has ended (reaped by the caller): nothing traces it. */
		ck_assert_int_eq(status_of(vt.pid, "\nTracerPid:"), 0);
		ck_assert_int_eq(status_of(vt.pid, "\nState:"), 'D');
		printf("inject_vfork_unstoppable: %s returned %d after %llu ms: %s\n",
		       set ? "set" : "get", o.ret, (unsigned long long)(o.ns / 1000000), o.detail);
	}
	/* End the vfork() child: the target goes on by itself, and can be injected. */
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)vt.pid, (int)vt.pid);
	ck_assert_int_gt(read_file(path, buf, sizeof(buf)), 0);
	child = atoi(buf);
	ck_assert_int_gt(child, 0);
	kill(child, SIGKILL);
	ck_assert_int_eq(read(vt.done_fd, &v, 1), 1);
	ck_assert_msg(run_request(vt.pid, true, &o, 5000000000ull), "set did not return");
	ck_assert_msg(o.ret == 0, "set after vfork(): %d (%s)", o.ret, o.detail);
	ck_assert_int_eq(status_of(vt.pid, "\nTHP_enabled:"), 0);
	ck_assert_msg(run_request(vt.pid, false, &o, 5000000000ull), "get did not return");
	ck_assert_msg(o.ret == 0 && o.policy == THP_POLICY_NEVER, "get after vfork(): %d %u (%s)",
		      o.ret, o.policy, o.detail);
	ck_assert_int_eq(status_of(vt.pid, "\nTracerPid:"), 0);
	v = (char)status_of(vt.pid, "\nState:");
	ck_assert_msg(v == 'S' || v == 'R', "target state %c", v);
	kill(vt.pid, SIGKILL);
	waitpid(vt.pid, NULL, 0);
}
END_TEST

/*
 * The helper itself SIGKILLed (what a cgroup-wide kill or the OOM killer
 * does): the caller, alive, gets -EIO and a detail saying the target may
 * not have been restored.  Nothing is promised for the target then.
 */
START_TEST(inject_helper_killed)
{
	struct outcome *o = mmap(NULL, sizeof(*o), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	uint64_t t0 = now_ns_mono();
	pid_t target, inj;
	int st = 0;

	ck_assert_ptr_ne(o, MAP_FAILED);
	target = fork();
	ck_assert_int_ge(target, 0);
	if (target == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	inj = fork();
	ck_assert_int_ge(inj, 0);
	if (inj == 0) {
		int pidfd = (int)syscall(SYS_pidfd_open, target, 0);

		for (int i = 0; i < 100000; i++) {
			THP_OPTS(thp_default_opts, d, .pidfd = pidfd,
				 .backend = THP_BACKEND_INJECT);
			int ret = thp_get_default(&d);

			if (ret == -EIO) {
				o->ret = ret;
				snprintf(o->detail, sizeof(o->detail), "%s", thp_strerror_detail());
				_exit(0);
			}
			if (ret != 0 && ret != -ESRCH)
				_exit(2);
		}
		_exit(1);
	}
	while (waitpid(inj, &st, WNOHANG) == 0 && now_ns_mono() - t0 < 20000000000ull) {
		char path[64], buf[256] = "";

		snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)inj, (int)inj);
		if (read_file(path, buf, sizeof(buf)) > 0 && atoi(buf) > 0)
			kill(atoi(buf), SIGKILL);
	}
	kill(inj, SIGKILL);
	waitpid(inj, &st, 0);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "the caller never saw -EIO for a killed helper (status %#x)", st);
	ck_assert_msg(strstr(o->detail, "was killed before it finished"), "detail: %s", o->detail);
	printf("inject_helper_killed: %d (%s)\n", o->ret, o->detail);
	munmap(o, sizeof(*o));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("inject_kill");
	TCase *tc = tcase_create("inject_vfork");

	tcase_add_test(tc, inject_vfork_unstoppable);
	tcase_add_test(tc, inject_helper_killed);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("inject_kill");
	tcase_add_test(tc, inject_caller_killed);
	tcase_set_timeout(tc, 600);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
