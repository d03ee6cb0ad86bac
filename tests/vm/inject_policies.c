// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest check: the inject backend on a running, multi-threaded child (every
 * policy and both advices, seen in its smaps, by itself, its forked and its
 * exec'd child, its in-flight system calls undisturbed), and its refusal of
 * a 32-bit (i386) process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vm_check.h"

#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1)
#endif

#define REGION (4 * MiB)
#define MAIN_SLEEP_NS (20 * 1000 * 1000L)
#define READER_PAYLOAD "INJECTOK"
/* In a 'P' command: the policy has not changed, its children need no new look. */
#define CHILDREN_SKIP 0x100u

/* What the target's main thread waits in while the guest injects. */
enum main_wait { MW_READ, MW_NANOSLEEP, MW_FUTEX, MW_COUNT };
/* glibc's nanosleep() is clock_nanosleep() since 2.31. */
static const long main_wait_nr[MW_COUNT] = { SYS_read, SYS_clock_nanosleep, SYS_futex };
static const char *const main_wait_name[MW_COUNT] = { "read", "nanosleep", "futex" };

/* Shared between the guest's /init and the target (MAP_SHARED before fork). */
struct tgt_shared {
	_Atomic uint32_t seq;      /* MW_FUTEX: bumped with each command */
	_Atomic uint32_t futex_go; /* the futex waiter thread's word */
	_Atomic int main_wait;     /* enum main_wait of the coming wait */
	_Atomic int stop;
	_Atomic int errors;
	_Atomic unsigned long alloc_rounds;
	char what[160];            /* the first self-check that failed */
};

/* The target's answer to a command: what it sees itself. */
struct tgt_reply {
	int self_disable;  /* PR_GET_THP_DISABLE, read by the target */
	int sum_ok;        /* the region's checksum unchanged */
	int errors;        /* self-checks failed so far */
	char why[512];     /* check_children()'s first failure, or the first self-check's */
};

struct target {
	pid_t pid;
	int pidfd;
	int cmd, res, rd; /* command pipe, reply pipe, the reader thread's pipe */
	uintptr_t addr;
	struct tgt_shared *sh;
};

static void tgt_fail(struct tgt_shared *sh, const char *what)
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

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* nanosleep() sleeps its full time and returns 0, never EINTR. */
static bool checked_sleep(struct tgt_shared *sh, long ns)
{
	struct timespec ts = { ns / 1000000000L, ns % 1000000000L };
	uint64_t t0 = mono_ns();

	if (nanosleep(&ts, NULL) != 0) {
		tgt_fail(sh, "nanosleep failed");
		return false;
	}
	if (mono_ns() - t0 < (uint64_t)ns) {
		tgt_fail(sh, "nanosleep returned early");
		return false;
	}
	return true;
}

/* FUTEX_WAIT returns 0 or EAGAIN, never EINTR, until *word != old. */
static void checked_futex_wait(struct tgt_shared *sh, _Atomic uint32_t *word, uint32_t old)
{
	while (atomic_load(word) == old) {
		long r = syscall(SYS_futex, word, FUTEX_WAIT, old, NULL, NULL, 0);

		if (r != 0 && errno != EAGAIN) {
			tgt_fail(sh, "futex wait failed");
			return;
		}
	}
}

static void *sleeper(void *arg)
{
	struct tgt_shared *sh = arg;

	while (!atomic_load(&sh->stop) && checked_sleep(sh, 50 * 1000 * 1000L))
		;
	return NULL;
}

static void *futex_waiter(void *arg)
{
	struct tgt_shared *sh = arg;

	checked_futex_wait(sh, &sh->futex_go, 0);
	return NULL;
}

struct reader_arg {
	struct tgt_shared *sh;
	int fd;
};

/* Parked in read() on a pipe for the whole check: gets the payload whole. */
static void *reader(void *arg)
{
	struct reader_arg *ra = arg;
	char buf[sizeof(READER_PAYLOAD)] = { 0 };
	ssize_t n = read(ra->fd, buf, sizeof(READER_PAYLOAD) - 1);

	if (n != (ssize_t)sizeof(READER_PAYLOAD) - 1 || memcmp(buf, READER_PAYLOAD, (size_t)n))
		tgt_fail(ra->sh, "the reader thread's read()");
	return NULL;
}

/* Keeps mapping, filling, checking and unmapping memory. */
static void *allocator(void *arg)
{
	struct tgt_shared *sh = arg;
	const size_t len = 512 << 10;

	for (unsigned int round = 0; !atomic_load(&sh->stop); round++) {
		unsigned char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint64_t s = 0;

		if (p == MAP_FAILED) {
			tgt_fail(sh, "allocator mmap");
			return NULL;
		}
		for (size_t i = 0; i < len; i += 64)
			p[i] = (unsigned char)(i / 64 + round);
		for (size_t i = 0; i < len; i += 64)
			s += p[i];
		checked_sleep(sh, 2 * 1000 * 1000L);
		for (size_t i = 0; i < len; i += 64)
			s -= p[i];
		if (s)
			tgt_fail(sh, "allocator checksum");
		munmap(p, len);
		atomic_fetch_add(&sh->alloc_rounds, 1);
	}
	return NULL;
}

/*
 * The target: a 4 MiB region it checksums, four threads (sleeper, futex
 * waiter, reader, allocator), and a main thread that waits for each
 * command in read(), nanosleep() or FUTEX_WAIT in turn.  'P' + a policy:
 * reply with what it sees (check_children() for its forked and exec'd
 * children, unless CHILDREN_SKIP); 'Q': end its threads, reply, exit.
 */
static void target_main(struct target *t, int rd)
{
	struct tgt_shared *sh = t->sh;
	struct reader_arg ra = { sh, rd };
	unsigned char *m = (unsigned char *)map_pmd_aligned(REGION);
	uint32_t seq_seen = 0;
	pthread_t th[4];
	uint64_t s0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (!m)
		_exit(2);
	for (size_t i = 0; i < REGION; i++)
		m[i] = (unsigned char)(i * 13 + 1);
	s0 = sum(m, REGION);
	pthread_create(&th[0], NULL, sleeper, sh);
	pthread_create(&th[1], NULL, futex_waiter, sh);
	pthread_create(&th[2], NULL, reader, &ra);
	pthread_create(&th[3], NULL, allocator, sh);
	t->addr = (uintptr_t)m;
	if (write(t->res, &t->addr, sizeof(t->addr)) != sizeof(t->addr))
		_exit(1);
	for (unsigned int step = 0;; step++) {
		enum main_wait mw = (enum main_wait)(step % MW_COUNT);
		struct tgt_reply rep;
		unsigned int policy = 0;
		char cmd = 0;
		ssize_t n;

		fcntl(t->cmd, F_SETFL, mw == MW_READ ? 0 : O_NONBLOCK);
		for (;;) {
			if (mw == MW_NANOSLEEP)
				checked_sleep(sh, MAIN_SLEEP_NS);
			else if (mw == MW_FUTEX)
				checked_futex_wait(sh, &sh->seq, seq_seen);
			n = read(t->cmd, &cmd, 1);
			if (n < 0 && mw != MW_READ && errno == EAGAIN)
				continue;
			break;
		}
		seq_seen = atomic_load(&sh->seq);
		fcntl(t->cmd, F_SETFL, 0);
		if (n != 1) {
			tgt_fail(sh, "read() on the command pipe");
			_exit(1);
		}
		memset(&rep, 0, sizeof(rep));
		if (cmd == 'P' && read(t->cmd, &policy, sizeof(policy)) == sizeof(policy) &&
		    !(policy & CHILDREN_SKIP)) {
			struct check c = { .name = "inject_policies" };

			check_children(&c, "inject_policies: the target's children", policy, false,
				       policy == THP_POLICY_NOHUGE);
			if (c.failed)
				memcpy(rep.why, c.why, sizeof(rep.why));
		} else if (cmd == 'Q') {
			atomic_store(&sh->stop, 1);
			for (int i = 0; i < 4; i++)
				pthread_join(th[i], NULL);
		}
		rep.self_disable = (int)prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
		rep.sum_ok = sum(m, REGION) == s0;
		rep.errors = atomic_load(&sh->errors);
		if (rep.errors && !rep.why[0])
			snprintf(rep.why, sizeof(rep.why), "self-check: %s", sh->what);
		/* Said before the reply: the guest reads it for its next step. */
		atomic_store(&sh->main_wait, (int)((step + 1) % MW_COUNT));
		if (write(t->res, &rep, sizeof(rep)) != sizeof(rep))
			_exit(1);
		if (cmd == 'Q')
			_exit(0);
	}
}

static int target_start(struct target *t)
{
	int cmd[2], res[2], rd[2];

	memset(t, 0, sizeof(*t));
	t->sh = mmap(NULL, sizeof(*t->sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		     -1, 0);
	if (t->sh == MAP_FAILED)
		return -errno;
	if (pipe(cmd) || pipe(res) || pipe(rd))
		return -errno;
	fflush(stdout);
	t->pid = fork();
	if (t->pid < 0)
		return -errno;
	if (t->pid == 0) {
		close(cmd[1]);
		close(res[0]);
		close(rd[1]);
		t->cmd = cmd[0];
		t->res = res[1];
		target_main(t, rd[0]);
	}
	close(cmd[0]);
	close(res[1]);
	close(rd[0]);
	t->cmd = cmd[1];
	t->res = res[0];
	t->rd = rd[1];
	if (read(t->res, &t->addr, sizeof(t->addr)) != sizeof(t->addr))
		return -EIO;
	t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);
	return t->pidfd < 0 ? -errno : 0;
}

/* Send @cmd (and @policy for 'P'), wake the futex wait, read the reply. */
static int target_cmd(struct target *t, char cmd, unsigned int policy, struct tgt_reply *rep)
{
	char msg[1 + sizeof(policy)];

	msg[0] = cmd;
	memcpy(msg + 1, &policy, sizeof(policy));
	if (write(t->cmd, msg, sizeof(msg)) != (ssize_t)sizeof(msg))
		return -EIO;
	atomic_fetch_add(&t->sh->seq, 1);
	syscall(SYS_futex, &t->sh->seq, FUTEX_WAKE, 1, NULL, NULL, 0);
	return read(t->res, rep, sizeof(*rep)) == sizeof(*rep) ? 0 : -EIO;
}

/* The first number of /proc/PID/task/TID/syscall: the call a thread is blocked in, or -1. */
static long blocked_in(pid_t pid, pid_t tid)
{
	char path[64], buf[256];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -2;
	return buf[0] == 'r' ? -1 : strtol(buf, NULL, 10); /* "running" */
}

/* Until the target's main thread sits in @nr (5 s at most, under TCG). */
static bool wait_blocked_in(pid_t pid, long nr)
{
	uint64_t t0 = mono_ns();

	while (mono_ns() - t0 < 5000000000u) {
		struct timespec ts = { 0, 1000 * 1000L };

		if (blocked_in(pid, pid) == nr)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

/* The target's view of the VMA at @addr in its smaps. */
struct tgt_vma {
	bool found, hg, nh;
	int eligible;
};

static struct tgt_vma tgt_vma_at(pid_t pid, uintptr_t addr)
{
	struct tgt_vma v = { .eligible = -1 };
	char path[64], *line, *save = NULL;
	bool in = false;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	if (read_file(path, smaps_buf, sizeof(smaps_buf)) <= 0)
		return v;
	for (line = strtok_r(smaps_buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long s, e;
		char dash;

		if (sscanf(line, "%lx%c%lx", &s, &dash, &e) == 3 && dash == '-' &&
		    strchr(line, ' ')) {
			if (in)
				break;
			in = s <= addr && addr < e;
			v.found |= in;
			continue;
		}
		if (!in)
			continue;
		if (!strncmp(line, "THPeligible:", 12))
			v.eligible = atoi(line + 12);
		else if (!strncmp(line, "VmFlags:", 8)) {
			v.hg = strstr(line, " hg") != NULL;
			v.nh = strstr(line, " nh") != NULL;
		}
	}
	return v;
}

/* PR_GET_THP_DISABLE a process has under @policy: NEVER 1, NOHUGE 3, else 0. */
static int disable_of(unsigned int policy)
{
	if (policy == THP_POLICY_NEVER)
		return 1;
	if (policy == THP_POLICY_NOHUGE)
		return 1 | PR_THP_DISABLE_EXCEPT_ADVISED;
	return 0;
}

struct inj_step {
	bool advice;      /* thp_apply_ranges() with .advice, else thp_set_default() */
	unsigned int val; /* the advice or the policy */
};

/*
 * One step: wait for the main thread to block in its wait of the turn,
 * inject, then compare the target's smaps, its own PR_GET_THP_DISABLE,
 * its forked and exec'd children and its checksum with what the step
 * should leave (a refusal: what was there before).
 */
static void inj_step_run(struct check *c, struct target *t, const struct inj_step *s,
			 unsigned int *policy, int *adv)
{
	enum main_wait mw = (enum main_wait)atomic_load(&t->sh->main_wait);
	const char *what = s->advice ? (s->val == THP_ADVICE_HUGE ? "advice HUGE" : "advice NOHUGE")
				      : thp_policy_name(s->val);
	bool refuse = false;
	const char *refuse_why = NULL;
	struct tgt_reply rep;
	struct tgt_vma v;
	int ret, want_el;

	if (!wait_blocked_in(t->pid, main_wait_nr[mw]))
		cfail(c, "%s: the target's main thread never blocked in %s (at %ld)", what,
		      main_wait_name[mw], blocked_in(t->pid, t->pid));
	if (s->advice) {
		struct thp_range r = { t->addr, REGION };
		struct thp_report rp;
		THP_OPTS(thp_apply_opts, o, .advice = (int)s->val, .reports = &rp);

		o.pidfd = t->pidfd;
		o.backend = THP_BACKEND_INJECT;
		ret = thp_apply_ranges(&r, 1, &o);
		if (ret != 1 || rp.backend != THP_BACKEND_INJECT || rp.bytes_advised != REGION)
			cfail(c, "advice %s: ret %d backend %s bytes %llu (%s)", what, ret,
			      thp_backend_name(rp.backend), (unsigned long long)rp.bytes_advised,
			      thp_strerror_detail());
		else
			*adv = (int)s->val;
	} else {
		THP_OPTS(thp_default_opts, o, .pidfd = t->pidfd, .policy = s->val,
			 .backend = THP_BACKEND_INJECT);

		if (s->val == THP_POLICY_HUGE)
			refuse = true, refuse_why = "HUGE cannot be made the default";
		else if (s->val == THP_POLICY_NOHUGE && !kx.except_advised)
			refuse = true, refuse_why = "PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18)";
		ret = thp_set_default(&o);
		printf("VMTEST INFO inject_policies: %s in %s: ret %d backend_used %s "
		       "persistent %d detail '%s'\n", what, main_wait_name[mw], ret,
		       thp_backend_name(o.backend_used), o.persistent, thp_strerror_detail());
		if (refuse && (ret != -EOPNOTSUPP || o.backend_used || o.persistent ||
			       !strstr(thp_strerror_detail(), refuse_why)))
			cfail(c, "%s: ret %d backend_used %u detail '%s', expected -EOPNOTSUPP "
			      "saying '%s'", what, ret, o.backend_used, thp_strerror_detail(),
			      refuse_why);
		else if (!refuse && (ret || o.backend_used != THP_BACKEND_INJECT || !o.persistent))
			cfail(c, "%s: ret %d backend_used %s persistent %d (%s)", what, ret,
			      thp_backend_name(o.backend_used), o.persistent,
			      thp_strerror_detail());
		else if (!refuse)
			*policy = s->val;
	}
	/* The global mode is madvise: only advised memory is eligible, and NEVER none. */
	v = tgt_vma_at(t->pid, t->addr);
	want_el = *adv == THP_ADVICE_HUGE && *policy != THP_POLICY_NEVER;
	if (!v.found || v.hg != (*adv == THP_ADVICE_HUGE) || v.nh != (*adv == THP_ADVICE_NOHUGE) ||
	    v.eligible != want_el)
		cfail(c, "after %s under %s: the target's region has hg=%d nh=%d THPeligible=%d, "
		      "expected %d %d %d", what, thp_policy_name(*policy), v.hg, v.nh, v.eligible,
		      *adv == THP_ADVICE_HUGE, *adv == THP_ADVICE_NOHUGE, want_el);
	/* Advice changes no default: fork and exec (slow under TCG) after policy steps only. */
	if (target_cmd(t, 'P', *policy | (s->advice ? CHILDREN_SKIP : 0), &rep)) {
		cfail(c, "after %s: no reply from the target", what);
		return;
	}
	if (rep.self_disable != disable_of(*policy))
		cfail(c, "after %s: the target reads PR_GET_THP_DISABLE %d, expected %d", what,
		      rep.self_disable, disable_of(*policy));
	if (!rep.sum_ok)
		cfail(c, "after %s: the target's region checksum changed", what);
	if (rep.why[0])
		cfail(c, "after %s (%s): %s", what, thp_policy_name(*policy), rep.why);
}

void check_inject_policies(void)
{
	static const struct inj_step steps[] = {
		{ true, THP_ADVICE_HUGE },   { false, THP_POLICY_NEVER },
		{ false, THP_POLICY_NOHUGE }, { false, THP_POLICY_SYSTEM },
		{ false, THP_POLICY_HUGE },  { true, THP_ADVICE_NOHUGE },
		{ true, THP_ADVICE_HUGE },   { false, THP_POLICY_NOHUGE },
		{ false, THP_POLICY_NEVER }, { false, THP_POLICY_SYSTEM },
	};
	struct check c = { .name = "inject_policies" };
	unsigned int mode0 = cur_mode, policy = THP_POLICY_SYSTEM;
	int adv = 0, st = 0, err;
	struct tgt_reply rep;
	struct timespec t0, t1;
	struct target t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (set_sysfs_mode(THP_MODE_MADVISE)) {
		fail(c.name, "cannot set the global THP mode to madvise");
		return;
	}
	err = target_start(&t);
	if (err) {
		fail(c.name, "target: %s", strerror(-err));
		return;
	}
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		inj_step_run(&c, &t, &steps[i], &policy, &adv);
	/* The in-flight read() and FUTEX_WAIT end now, with their normal results. */
	if (write(t.rd, READER_PAYLOAD, sizeof(READER_PAYLOAD) - 1) != sizeof(READER_PAYLOAD) - 1)
		cfail(&c, "write to the reader's pipe");
	atomic_store(&t.sh->futex_go, 1);
	syscall(SYS_futex, &t.sh->futex_go, FUTEX_WAKE, 1, NULL, NULL, 0);
	if (target_cmd(&t, 'Q', 0, &rep))
		cfail(&c, "no final reply from the target");
	else if (rep.errors || !rep.sum_ok)
		cfail(&c, "the target's self-checks: %d failed, checksum %s: %s", rep.errors,
		      rep.sum_ok ? "kept" : "changed", rep.why);
	if (waitpid(t.pid, &st, 0) != t.pid || !WIFEXITED(st) || WEXITSTATUS(st))
		cfail(&c, "the target ended with status %#x", st);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("VMTEST INFO inject_policies: %zu steps, %lu allocator rounds in the target, "
	       "%.1f s\n", sizeof(steps) / sizeof(steps[0]), atomic_load(&t.sh->alloc_rounds),
	       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	close(t.cmd);
	close(t.res);
	close(t.rd);
	close(t.pidfd);
	munmap(t.sh, sizeof(*t.sh));
	if (set_sysfs_mode(mode0))
		cfail(&c, "cannot restore the global THP mode");
	cdone(&c);
}

/* The VmFlags line of the VMA at @addr in @pid's smaps, into @out ("" if none). */
static void vmflags_at(pid_t pid, uintptr_t addr, char *out, size_t cap)
{
	char path[64], *line, *save = NULL;
	bool in = false;

	out[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	if (read_file(path, smaps_buf, sizeof(smaps_buf)) <= 0)
		return;
	for (line = strtok_r(smaps_buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long s, e;
		char dash;

		if (sscanf(line, "%lx%c%lx", &s, &dash, &e) == 3 && dash == '-' &&
		    strchr(line, ' ')) {
			if (in)
				break;
			in = s <= addr && addr < e;
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			snprintf(out, cap, "%s", line);
		}
	}
}

/* A line from @fd, up to its newline; its length, or -1. */
static ssize_t read_line(int fd, char *buf, size_t cap)
{
	size_t n = 0;

	while (n + 1 < cap) {
		ssize_t r = read(fd, buf + n, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (buf[n++] == '\n')
			break;
	}
	buf[n] = 0;
	return (ssize_t)n;
}

/*
 * A 32-bit process (inject_target32.c, an i386 static program) blocked in
 * read(): the inject backend refuses advice and a default for it, saying
 * why, and leaves it as it was: the same VmFlags, PR_GET_THP_DISABLE 0,
 * its memory and its read() undisturbed, no signal.
 */
void check_inject_32bit(const char *target32)
{
	struct check c = { .name = "inject_32bit" };
	char *argv[] = { (char *)target32, NULL }, *envp[] = { NULL };
	char line[256], before[512], after[512];
	int in[2], out[2], st = 0, ret, pidfd, rd = -1, dis = -1, sok = -1;
	bool ran = true;
	unsigned long addr = 0;
	char byte = 0;
	pid_t pid;

	if (!target32) {
		/* meson.build found no gcc -m32 -static: say so, every run. */
		printf("VMTEST INFO inject_32bit: not run, no 32-bit target in /vmtest.conf "
		       "(gcc -m32 -static missing at build time)\n");
		return;
	}
	if (pipe(in) || pipe(out)) {
		fail(c.name, "pipe");
		return;
	}
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execve(target32, argv, envp);
		printf("EXEC %d\n", errno);
		fflush(stdout);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (pid < 0 || read_line(out[0], line, sizeof(line)) < 0) {
		cfail(&c, "the 32-bit target gave no address");
		goto reap;
	}
	if (!strncmp(line, "EXEC ", 5)) {
		/* The 6.12 test kernels are tinyconfig: no IA32 emulation there. */
		ran = flavour == FL_DISTRO;
		if (ran)
			cfail(&c, "cannot run the i386 target: %s", strerror(atoi(line + 5)));
		else
			printf("VMTEST INFO inject_32bit: not run, this kernel runs no i386 "
			       "program: %s\n", strerror(atoi(line + 5)));
		goto reap;
	}
	if (sscanf(line, "ADDR %lx", &addr) != 1) {
		cfail(&c, "the 32-bit target said '%s'", line);
		goto reap;
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	/* In read(): __NR_read of i386 is 3. */
	if (!wait_blocked_in(pid, 3))
		cfail(&c, "the 32-bit target never blocked in read() (at %ld)", blocked_in(pid, pid));
	vmflags_at(pid, addr, before, sizeof(before));
	{
		struct thp_range r = { addr, 4 * MiB };
		struct thp_report rp;
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = &rp);

		o.pidfd = pidfd;
		o.backend = THP_BACKEND_INJECT;
		ret = thp_apply_ranges(&r, 1, &o);
		printf("VMTEST INFO inject_32bit: advice HUGE: ret %d detail '%s'\n", ret,
		       thp_strerror_detail());
		if (ret != -EOPNOTSUPP || !strstr(thp_strerror_detail(), "32-bit") ||
		    rp.bytes_advised)
			cfail(&c, "advice HUGE: ret %d bytes %llu detail '%s', expected -EOPNOTSUPP "
			      "saying 32-bit", ret, (unsigned long long)rp.bytes_advised,
			      thp_strerror_detail());
	}
	{
		THP_OPTS(thp_default_opts, o, .pidfd = pidfd, .policy = THP_POLICY_NEVER,
			 .backend = THP_BACKEND_INJECT);

		ret = thp_set_default(&o);
		printf("VMTEST INFO inject_32bit: default NEVER: ret %d detail '%s'\n", ret,
		       thp_strerror_detail());
		if (ret != -EOPNOTSUPP || !strstr(thp_strerror_detail(), "32-bit") ||
		    o.backend_used || o.persistent)
			cfail(&c, "default NEVER: ret %d detail '%s', expected -EOPNOTSUPP saying "
			      "32-bit", ret, thp_strerror_detail());
	}
	vmflags_at(pid, addr, after, sizeof(after));
	if (!before[0] || strcmp(before, after))
		cfail(&c, "the target's VmFlags changed: '%s' then '%s'", before, after);
	/* Back in its read() (restarted), which returns what the pipe gives it. */
	if (!wait_blocked_in(pid, 3))
		cfail(&c, "the target is not back in its read() (at %ld)", blocked_in(pid, pid));
	if (write(in[1], "x", 1) != 1 || read_line(out[0], line, sizeof(line)) < 0 ||
	    sscanf(line, "DONE read=%d byte=%c disable=%d sum=%d", &rd, &byte, &dis, &sok) != 4 ||
	    rd != 1 || byte != 'x' || dis != 0 || sok != 1)
		cfail(&c, "the target reports '%s' (read 1 byte 'x', PR_GET_THP_DISABLE 0 and its "
		      "checksum expected)", line);
	close(pidfd);
reap:
	close(in[1]);
	close(out[0]);
	if (pid > 0 && (waitpid(pid, &st, 0) != pid || !WIFEXITED(st)))
		cfail(&c, "the target ended with status %#x", st);
	if (ran)
		cdone(&c);
}
