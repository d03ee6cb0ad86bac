// SPDX-License-Identifier: LGPL-2.1-or-later
/* The inject backend's refusals: seccomp filters run on the exact call, ptrace rights checked first. */
#define _GNU_SOURCE
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thp/thp.h>

#include "helpers.h"
#include "compat.h"

#if defined(__x86_64__)

#define REGION (4 * MiB)
#define NOBODY 65534
#define CAP_SYS_ADMIN_BIT 21

/* A target process: its pipes, and the region it mapped and filled. */
struct target {
	pid_t pid;
	int pidfd;
	int cmd, res;
	uint64_t addr;
};

/* Run in the target before it reports: @region is its REGION bytes. */
typedef int (*setup_fn)(const void *arg, void *region);

/*
 * The target's loop, every command a read() and a write(), which no filter
 * here touches: 'E' echoes, 'P' answers PR_GET_THP_DISABLE read by itself,
 * 'H' answers madvise(MADV_HUGEPAGE) of its region made by itself, 'Q' ends.
 */
static void target_main(int cmd, int res, setup_fn setup, const void *arg)
{
	unsigned char *m = map_aligned(4, 0);
	uint64_t addr = (uintptr_t)m;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	touch_range(m, REGION);
	if (setup && setup(arg, m))
		_exit(3);
	if (write(res, &addr, sizeof(addr)) != sizeof(addr))
		_exit(1);
	for (;;) {
		char c;
		int r = 0;

		if (read(cmd, &c, 1) != 1)
			_exit(1);
		if (c == 'Q')
			_exit(0);
		if (c == 'P')
			r = (int)prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
		else if (c == 'H')
			r = madvise(m, REGION, MADV_HUGEPAGE) ? -errno : 0;
		if (write(res, &r, sizeof(r)) != sizeof(r))
			_exit(1);
	}
}

static void start_target(struct target *t, setup_fn setup, const void *arg)
{
	int cmd[2], res[2];

	ck_assert(pipe(cmd) == 0 && pipe(res) == 0);
	t->pid = fork();
	ck_assert_int_ge(t->pid, 0);
	if (t->pid == 0) {
		close(cmd[1]);
		close(res[0]);
		target_main(cmd[0], res[1], setup, arg);
	}
	close(cmd[0]);
	close(res[1]);
	t->cmd = cmd[1];
	t->res = res[0];
	ck_assert_msg(read(t->res, &t->addr, sizeof(t->addr)) == sizeof(t->addr),
		      "the target did not start (its setup failed)");
	t->pidfd = (int)syscall(__NR_pidfd_open, t->pid, 0);
	ck_assert_msg(t->pidfd >= 0, "pidfd_open: %s", strerror(errno));
}

/* Send one command and return the target's answer; it must be alive to give one. */
static int ask(struct target *t, char c)
{
	int r;

	ck_assert_msg(write(t->cmd, &c, 1) == 1, "the target is gone");
	ck_assert_msg(read(t->res, &r, sizeof(r)) == sizeof(r),
		      "the target did not answer '%c': it is gone", c);
	return r;
}

static void finish_target(struct target *t)
{
	int st;

	ck_assert(write(t->cmd, "Q", 1) == 1);
	ck_assert(waitpid(t->pid, &st, 0) == t->pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target status %#x", st);
	close(t->cmd);
	close(t->res);
	close(t->pidfd);
}

/* "THP_enabled:" of the target's status: 1, 0, or -1 when the kernel shows none. */
static int thp_enabled(pid_t pid)
{
	char path[64], buf[4096];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	ck_assert(read_file(path, buf, sizeof(buf)) > 0);
	p = strstr(buf, "THP_enabled:");
	return p ? (int)strtol(p + 12, NULL, 10) : -1;
}

/* What a refusal must leave: the same smaps entry, the same THP_enabled. */
struct snapshot {
	struct smaps_info si;
	int thp_enabled;
};

static void snap(const struct target *t, struct snapshot *s)
{
	ck_assert(smaps_lookup(t->pid, t->addr, &s->si) == 0 && s->si.found);
	s->thp_enabled = thp_enabled(t->pid);
}

static void assert_unchanged(const struct target *t, const struct snapshot *before)
{
	struct snapshot now;

	snap(t, &now);
	ck_assert_msg(now.si.start == before->si.start && now.si.end == before->si.end &&
			      now.si.hg == before->si.hg && now.si.nh == before->si.nh &&
			      !strcmp(now.si.vmflags, before->si.vmflags),
		      "smaps changed: VmFlags \"%s\" then \"%s\"", before->si.vmflags,
		      now.si.vmflags);
	ck_assert_int_eq(now.thp_enabled, before->thp_enabled);
}

static void assert_detail(const char *a, const char *b)
{
	const char *d = thp_strerror_detail();

	ck_assert_msg(d && strstr(d, a) && (!b || strstr(d, b)), "detail \"%s\" lacks \"%s\"%s%s",
		      d ? d : "(null)", a, b ? " or " : "", b ? b : "");
}

static int install_rules(const void *arg, void *region)
{
	(void)region;
	const struct seccomp_rule *r = arg;

	return seccomp_install(r, 1);
}

static int set_default(const struct target *t, unsigned int policy)
{
	THP_OPTS(thp_default_opts, o, .pidfd = t->pidfd, .policy = policy,
		 .backend = THP_BACKEND_INJECT);

	return thp_set_default(&o);
}

static int apply(const struct target *t, int advice, struct thp_report *rep)
{
	struct thp_range r = { t->addr, REGION };
	THP_OPTS(thp_apply_opts, o, .pidfd = t->pidfd, .advice = advice,
		 .backend = THP_BACKEND_INJECT, .reports = rep);

	return thp_apply_ranges(&r, 1, &o);
}

static const struct seccomp_rule kill_prctl = { SYS_prctl, -1, 0, SECCOMP_RET_KILL_PROCESS };

/* (a) A filter that kills on prctl(): NEVER refused, the target alive and as it was. */
START_TEST(kill_on_prctl_refused)
{
	struct target t;
	struct snapshot before;

	start_target(&t, install_rules, &kill_prctl);
	snap(&t, &before);
	ck_assert_int_eq(set_default(&t, THP_POLICY_NEVER), -EPERM);
	ck_assert_int_eq(errno, EPERM);
	assert_detail("seccomp filter would kill it on prctl(", "not injected");
	ck_assert_int_eq(ask(&t, 'E'), 0); /* alive, and answers */
	assert_unchanged(&t, &before);
	ck_assert_int_eq(thp_enabled(t.pid), 1);
	finish_target(&t);
}
END_TEST

/* (a) Killing only on PR_SET_THP_DISABLE: the target's own PR_GET_THP_DISABLE says 0 after. */
START_TEST(kill_on_set_thp_disable_refused)
{
	const struct seccomp_rule rule = { SYS_prctl, 0, PR_SET_THP_DISABLE,
					   SECCOMP_RET_KILL_PROCESS };
	struct target t;
	struct snapshot before;

	start_target(&t, install_rules, &rule);
	snap(&t, &before);
	ck_assert_int_eq(ask(&t, 'P'), 0);
	ck_assert_int_eq(set_default(&t, THP_POLICY_NEVER), -EPERM);
	assert_detail("would kill it on prctl(PR_SET_THP_DISABLE): not injected", NULL);
	ck_assert_int_eq(ask(&t, 'P'), 0);
	assert_unchanged(&t, &before);
	/* SYSTEM clears the disable: a PR_SET_THP_DISABLE call too, refused as well. */
	ck_assert_int_eq(set_default(&t, THP_POLICY_SYSTEM), -EPERM);
	ck_assert_int_eq(ask(&t, 'P'), 0);
	finish_target(&t);
}
END_TEST

/* (b) The same filter lets madvise() through: HUGE is injected and shows as hg. */
START_TEST(kill_on_prctl_madvise_allowed)
{
	struct thp_report rep;
	struct target t;

	start_target(&t, install_rules, &kill_prctl);
	assert_vma_unadvised(t.pid, t.addr, "before");
	ck_assert_msg(apply(&t, THP_ADVICE_HUGE, &rep) == 1, "HUGE: %s", thp_strerror_detail());
	ck_assert_int_eq(rep.backend, THP_BACKEND_INJECT);
	ck_assert_uint_eq(rep.bytes_advised, REGION);
	ck_assert(vma_hg(t.pid, t.addr));
	ck_assert_int_eq(ask(&t, 'E'), 0);
	ck_assert_int_eq(thp_enabled(t.pid), 1);
	finish_target(&t);
}
END_TEST

/* (c) ERRNO for madvise(MADV_HUGEPAGE) only: HUGE refused with its reason, NOHUGE injected. */
START_TEST(errno_on_hugepage_argument)
{
	const struct seccomp_rule rule = { SYS_madvise, 2, MADV_HUGEPAGE,
					   SECCOMP_RET_ERRNO | EACCES };
	struct thp_report rep;
	struct snapshot before;
	struct target t;

	start_target(&t, install_rules, &rule);
	snap(&t, &before);
	ck_assert_int_eq(apply(&t, THP_ADVICE_HUGE, &rep), -EPERM);
	assert_detail("would fail the call with errno 13 on madvise(MADV_HUGEPAGE)", "not injected");
	ck_assert_uint_eq(rep.bytes_advised, 0);
	assert_unchanged(&t, &before);
	/* The filter is real: the target's own call fails so. */
	ck_assert_int_eq(ask(&t, 'H'), -EACCES);
	ck_assert_msg(apply(&t, THP_ADVICE_NOHUGE, &rep) == 1, "NOHUGE: %s", thp_strerror_detail());
	ck_assert(vma_nh(t.pid, t.addr) && !vma_hg(t.pid, t.addr));
	ck_assert_int_eq(ask(&t, 'E'), 0);
	finish_target(&t);
}
END_TEST

/* ERRNO for madvise() of the region's second half only (its address in the low 32 bits). */
static int errno_on_second_half(const void *arg, void *region)
{
	const struct seccomp_rule rule = { SYS_madvise, 0, (uint32_t)((uintptr_t)region + 2 * MiB),
					   SECCOMP_RET_ERRNO | EACCES };

	(void)arg;
	return seccomp_install(&rule, 1);
}

/*
 * Two ranges, the filter refuses the second: as with any backend the
 * first is done and the reports say exactly that; the second is untouched.
 */
START_TEST(second_range_refused)
{
	struct thp_range r[2];
	struct thp_report rep[2];
	struct target t;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .backend = THP_BACKEND_INJECT,
		 .reports = rep);

	start_target(&t, errno_on_second_half, NULL);
	r[0] = (struct thp_range){ t.addr, 2 * MiB };
	r[1] = (struct thp_range){ t.addr + 2 * MiB, 2 * MiB };
	o.pidfd = t.pidfd;
	ck_assert_int_eq(thp_apply_ranges(r, 2, &o), -EPERM);
	assert_detail("fail the call with errno 13 on madvise(MADV_HUGEPAGE)", NULL);
	ck_assert_uint_eq(rep[0].bytes_advised, 2 * MiB);
	ck_assert_int_eq(rep[0].error, 0);
	ck_assert_uint_eq(rep[1].bytes_advised, 0);
	ck_assert_int_eq(rep[1].error, EPERM);
	ck_assert_uint_eq(rep[1].fail_addr, t.addr + 2 * MiB);
	ck_assert(vma_hg(t.pid, t.addr));
	assert_vma_unadvised(t.pid, t.addr + 2 * MiB, "second half");
	ck_assert_int_eq(ask(&t, 'E'), 0);
	finish_target(&t);
}
END_TEST

/*
 * (d) A filter that traps madvise() made from the vDSO's first syscall
 * instruction, the one the backend uses, and from nowhere else: only the
 * exact instruction_pointer tells the injected call from the target's own.
 */
static int trap_vdso_madvise(const void *arg, void *region)
{
	const unsigned char *v = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
	const Elf64_Ehdr *eh = (const Elf64_Ehdr *)v;
	uint64_t ip = 0;
	struct sock_fprog prog;

	(void)arg;
	(void)region;
	if (!v)
		return -1;
	/* The first 0f 05 of the first executable segment, where the backend looks. */
	for (unsigned int i = 0; i < eh->e_phnum && !ip; i++) {
		const Elf64_Phdr *ph = (const Elf64_Phdr *)(v + eh->e_phoff) + i;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		for (size_t j = 0; j + 1 < ph->p_filesz && !ip; j++)
			if (v[ph->p_offset + j] == 0x0f && v[ph->p_offset + j + 1] == 0x05)
				ip = (uintptr_t)(v + ph->p_offset + j + 2);
	}
	if (!ip)
		return -1;
	{
		struct sock_filter f[] = {
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_madvise, 0, 5),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
				 offsetof(struct seccomp_data, instruction_pointer)),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)ip, 0, 3),
			BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
				 offsetof(struct seccomp_data, instruction_pointer) + 4),
			BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)(ip >> 32), 0, 1),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
			BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		};

		prog.len = sizeof(f) / sizeof(f[0]);
		prog.filter = f;
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			return -1;
		return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
	}
}

START_TEST(trap_on_instruction_pointer)
{
	struct thp_report rep;
	struct snapshot before;
	struct target t;

	start_target(&t, trap_vdso_madvise, NULL);
	snap(&t, &before);
	ck_assert_int_eq(apply(&t, THP_ADVICE_HUGE, &rep), -EPERM);
	assert_detail("would send it SIGSYS on madvise(MADV_HUGEPAGE)", "not injected");
	assert_unchanged(&t, &before);
	/* The same call from libc's own syscall instruction passes. */
	ck_assert_int_eq(ask(&t, 'H'), 0);
	ck_assert(vma_hg(t.pid, t.addr));
	finish_target(&t);
}
END_TEST

static int enter_strict(const void *arg, void *region)
{
	(void)arg;
	(void)region;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0);
}

/* Strict mode kills on anything but read, write, exit and sigreturn: refused, alive. */
START_TEST(strict_mode_refused)
{
	struct thp_report rep;
	struct snapshot before;
	struct target t;
	int st;

	start_target(&t, enter_strict, NULL);
	snap(&t, &before);
	ck_assert_int_eq(set_default(&t, THP_POLICY_NEVER), -EPERM);
	assert_detail("seccomp strict mode", "not injected");
	ck_assert_int_eq(apply(&t, THP_ADVICE_HUGE, &rep), -EPERM);
	assert_detail("seccomp strict mode", NULL);
	ck_assert_int_eq(ask(&t, 'E'), 0);
	assert_unchanged(&t, &before);
	/* Its _exit() is exit_group(), which strict mode kills: end it from here. */
	kill(t.pid, SIGKILL);
	ck_assert(waitpid(t.pid, &st, 0) == t.pid);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	close(t.cmd);
	close(t.res);
	close(t.pidfd);
}
END_TEST

/*
 * Run @fn in a child and return its exit status; the detail it got comes
 * back in @detail.  For callers with fewer rights than the test.
 */
static int in_child(int (*fn)(const struct target *), const struct target *t, char *detail,
		    size_t len)
{
	int p[2], st;
	pid_t c;
	ssize_t n;

	ck_assert(pipe(p) == 0);
	c = fork();
	ck_assert_int_ge(c, 0);
	if (c == 0) {
		int r = fn(t);
		const char *d = thp_strerror_detail();

		if (d && write(p[1], d, strlen(d)) < 0)
			_exit(99);
		_exit(r);
	}
	close(p[1]);
	n = read(p[0], detail, len - 1);
	detail[n > 0 ? n : 0] = 0;
	close(p[0]);
	ck_assert(waitpid(c, &st, 0) == c);
	ck_assert_msg(WIFEXITED(st), "caller child status %#x", st);
	return WEXITSTATUS(st);
}

/* Exit codes of the caller children: 0 refused as expected, else what went wrong. */
static int without_sys_admin(const struct target *t)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return 10;
	d[0].effective &= ~(1U << CAP_SYS_ADMIN_BIT);
	d[0].permitted &= ~(1U << CAP_SYS_ADMIN_BIT);
	if (syscall(SYS_capset, &h, d))
		return 11;
	if (set_default(t, THP_POLICY_NEVER) != -EPERM)
		return 12;
	return 0;
}

/* (e) Without CAP_SYS_ADMIN (CAP_SYS_PTRACE kept) the filter cannot be read: refused. */
START_TEST(filter_unreadable_without_sys_admin)
{
	const struct seccomp_rule rule = { SYS_mlock, -1, 0, SECCOMP_RET_KILL_PROCESS };
	char detail[512];
	struct snapshot before;
	struct target t;

	start_target(&t, install_rules, &rule);
	snap(&t, &before);
	ck_assert_int_eq(in_child(without_sys_admin, &t, detail, sizeof(detail)), 0);
	ck_assert_msg(strstr(detail, "CAP_SYS_ADMIN") && strstr(detail, "seccomp filter"),
		      "detail: %s", detail);
	assert_unchanged(&t, &before);
	ck_assert_int_eq(ask(&t, 'P'), 0);
	/* With it, the same filter (mlock only) lets NEVER through. */
	ck_assert_msg(set_default(&t, THP_POLICY_NEVER) == 0, "%s", thp_strerror_detail());
	ck_assert_int_eq(ask(&t, 'P'), 1);
	ck_assert_int_eq(thp_enabled(t.pid), 0);
	finish_target(&t);
}
END_TEST

static int become_nobody(const void *arg, void *region)
{
	(void)arg;
	(void)region;
	if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
		return -1;
	return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

static int as_nobody(const struct target *t)
{
	if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
		return 10;
	if (set_default(t, THP_POLICY_NEVER) != -EPERM)
		return 12;
	return 0;
}

/* (f) A non-dumpable target of the caller's own user, a caller without CAP_SYS_PTRACE. */
START_TEST(not_dumpable_refused)
{
	char detail[512];
	struct snapshot before;
	struct target t;

	start_target(&t, become_nobody, NULL);
	snap(&t, &before);
	ck_assert_int_eq(in_child(as_nobody, &t, detail, sizeof(detail)), 0);
	/* Refused up front, before any ptrace call. */
	ck_assert_msg(strstr(detail, "not dumpable") && strstr(detail, "CAP_SYS_PTRACE") &&
			      strstr(detail, "nothing was changed"),
		      "detail: %s", detail);
	assert_unchanged(&t, &before);
	ck_assert_int_eq(ask(&t, 'P'), 0);
	finish_target(&t);
}
END_TEST

static int become_other_user(const void *arg, void *region)
{
	(void)arg;
	(void)region;
	if (setresgid(NOBODY - 1, NOBODY - 1, NOBODY - 1) ||
	    setresuid(NOBODY - 1, NOBODY - 1, NOBODY - 1))
		return -1;
	/* A change of user made it non-dumpable: this case is about the user alone. */
	return prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

/* Another user's dumpable process: the kernel refuses the seize and the detail says why. */
START_TEST(other_user_refused)
{
	char detail[512];
	struct snapshot before;
	struct target t;

	start_target(&t, become_other_user, NULL);
	snap(&t, &before);
	ck_assert_int_eq(in_child(as_nobody, &t, detail, sizeof(detail)), 0);
	ck_assert_msg(strstr(detail, "ptrace of process") && strstr(detail, "denied") &&
			      strstr(detail, "CAP_SYS_PTRACE"),
		      "detail: %s", detail);
	assert_unchanged(&t, &before);
	ck_assert_int_eq(ask(&t, 'P'), 0);
	finish_target(&t);
}
END_TEST

/* TSYNC trials: THP_TEST_TSYNC_TRIALS sets another count. */
static int tsync_trials(void)
{
	const char *e = getenv("THP_TEST_TSYNC_TRIALS");

	return e && atoi(e) > 0 ? atoi(e) : 200;
}

/* The racing thread: a while after its cue, a filter killing on prctl() for every thread. */
static void *install_tsync_filter(void *arg)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };
	const int *cue = arg;
	unsigned int delay_us;
	char c;

	if (read(cue[0], &delay_us, sizeof(delay_us)) != sizeof(delay_us) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		_exit(5);
	usleep(delay_us);
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &prog))
		_exit(6);
	(void)c;
	return NULL;
}

/*
 * A thread of the target installs, with TSYNC, a filter that kills the
 * process on prctl() at a random moment while the test injects prctl()
 * calls one session after another: each call is made before the filter
 * (and succeeds) or refused after it, and the target never dies.
 */
START_TEST(tsync_filter_during_sessions)
{
	int trials = tsync_trials(), deaths = 0, refused = 0, made = 0;

	signal(SIGPIPE, SIG_IGN); /* a dead target's pipe */
	srand(38);
	for (int trial = 0; trial < trials; trial++) {
		int cmd[2], cue[2], st;
		unsigned int delay_us = (unsigned int)(rand() % 3000);
		struct target t;
		bool seen = false;
		char detail[512] = "";
		int other = 0;
		pid_t pid;

		ck_assert(pipe(cmd) == 0 && pipe(cue) == 0);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			pthread_t th;
			char c;

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			if (pthread_create(&th, NULL, install_tsync_filter, cue))
				_exit(4);
			if (read(cmd[0], &c, 1) != 1)
				_exit(1);
			_exit(0);
		}
		t.pid = pid;
		t.pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
		ck_assert_int_ge(t.pidfd, 0);
		ck_assert(write(cue[1], &delay_us, sizeof(delay_us)) == sizeof(delay_us));
		for (int i = 0; i < 400 && !seen; i++) {
			int r = set_default(&t, i & 1 ? THP_POLICY_SYSTEM : THP_POLICY_NEVER);

			if (r == 0) {
				made++;
				continue;
			}
			if (r != -EPERM) {
				other = r; /* the target killed mid-session, or a failure */
				snprintf(detail, sizeof(detail), "%s", thp_strerror_detail());
				break;
			}
			seen = true;
			refused++;
		}
		ck_assert(write(cmd[1], "Q", 1) == 1 || errno == EPIPE);
		ck_assert(waitpid(pid, &st, 0) == pid);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			deaths++;
		else
			ck_assert_msg(!other, "trial %d: %d (%s)", trial, other, detail);
		close(cmd[0]);
		close(cmd[1]);
		close(cue[0]);
		close(cue[1]);
		close(t.pidfd);
	}
	printf("tsync_filter_during_sessions: %d trials, %d calls made, %d refused after the "
	       "filter, %d targets dead\n", trials, made, refused, deaths);
	ck_assert_int_eq(deaths, 0);
}
END_TEST

/* The syscall user dispatch target's state, shared with the test (MAP_SHARED before fork). */
struct sud_shared {
	volatile char selector;      /* SYSCALL_DISPATCH_FILTER_ALLOW or _BLOCK */
	_Atomic int stop;            /* the target ends */
	_Atomic unsigned long spins; /* it runs */
	_Atomic unsigned long sigsys; /* SIGSYS its handler saw: it never made a call under BLOCK */
	_Atomic int flipped;          /* the test, not the target, sets the selector */
	uint64_t addr;
};

static struct sud_shared *sud_sh;

/* As Wine's: allow system calls again (its own sigreturn is one). */
static void on_sigsys(int sig)
{
	(void)sig;
	sud_sh->selector = THP_SYSCALL_DISPATCH_FILTER_ALLOW;
	atomic_fetch_add(&sud_sh->sigsys, 1);
}

/*
 * A target under syscall user dispatch with no exempt range, as Wine runs
 * Windows code: @blocked, it spins with its selector at BLOCK, making no
 * system call at all; else it sleeps in read() with the selector at ALLOW.
 */
static pid_t start_sud_target(struct sud_shared *sh, bool blocked, int *cmd)
{
	int p[2];
	pid_t pid;

	ck_assert(pipe(p) == 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct sigaction sa = { .sa_handler = on_sigsys };
		unsigned char *m = map_aligned(4, 0);
		char c;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[1]);
		sud_sh = sh;
		touch_range(m, REGION);
		sh->addr = (uintptr_t)m;
		sh->selector = THP_SYSCALL_DISPATCH_FILTER_ALLOW;
		if (sigaction(SIGSYS, &sa, NULL) ||
		    prctl(PR_SET_SYSCALL_USER_DISPATCH, (unsigned long)THP_PR_SYS_DISPATCH_EXCLUSIVE_ON,
			  0UL, 0UL, &sh->selector))
			_exit(3);
		if (blocked) {
			sh->selector = THP_SYSCALL_DISPATCH_FILTER_BLOCK;
			while (!atomic_load(&sh->stop)) {
				atomic_fetch_add(&sh->spins, 1);
				if (!atomic_load(&sh->flipped))
					sh->selector = THP_SYSCALL_DISPATCH_FILTER_BLOCK;
			}
			sh->selector = THP_SYSCALL_DISPATCH_FILTER_ALLOW;
		} else {
			atomic_fetch_add(&sh->spins, 1);
			if (read(p[0], &c, 1) != 1)
				_exit(4);
		}
		_exit(0);
	}
	close(p[0]);
	*cmd = p[1];
	while (!atomic_load(&sh->spins)) {
		ck_assert_msg(waitpid(pid, &(int){ 0 }, WNOHANG) == 0, "the target did not start");
		sched_yield();
	}
	return pid;
}

static void sud_case(bool blocked)
{
	struct sud_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct smaps_info si;
	struct target t;
	int cmd, st, ret;

	ck_assert(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	t.pid = start_sud_target(sh, blocked, &cmd);
	t.addr = sh->addr;
	t.pidfd = (int)syscall(__NR_pidfd_open, t.pid, 0);
	ck_assert_int_ge(t.pidfd, 0);
	/* A few times: each a chance for a SIGSYS to reach it. */
	for (int i = 0; i < 20; i++) {
		ret = apply(&t, THP_ADVICE_HUGE, NULL);
		if (blocked) {
			ck_assert_msg(ret == -EPERM, "ret %d (%s)", ret, thp_strerror_detail());
			assert_detail("syscall user dispatch", NULL);
		} else {
			ck_assert_msg(ret == 1, "ret %d (%s)", ret, thp_strerror_detail());
		}
	}
	ck_assert(smaps_lookup(t.pid, t.addr, &si) == 0 && si.found);
	ck_assert_int_eq(si.hg, !blocked);
	atomic_store(&sh->stop, 1);
	ck_assert(write(cmd, "Q", 1) == 1);
	ck_assert(waitpid(t.pid, &st, 0) == t.pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target status %#x%s", st,
		      WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS ? " (killed by SIGSYS)" : "");
	ck_assert_msg(atomic_load(&sh->sigsys) == 0, "the target's handler saw %lu SIGSYS",
		      atomic_load(&sh->sigsys));
	close(cmd);
	close(t.pidfd);
	munmap(sh, sizeof(*sh));
}

/* Flips the target's selector (shared memory) between ALLOW and BLOCK until told to stop. */
static void *flip_selector(void *arg)
{
	struct sud_shared *sh = arg;

	while (atomic_load(&sh->flipped) == 1) {
		sh->selector = THP_SYSCALL_DISPATCH_FILTER_ALLOW;
		usleep(30);
		sh->selector = THP_SYSCALL_DISPATCH_FILTER_BLOCK;
		usleep(30);
	}
	sh->selector = THP_SYSCALL_DISPATCH_FILTER_ALLOW;
	return NULL;
}

/*
 * The selector, in memory the test shares with the target, flips under the
 * session (no thread of the target can, but another process can): a call
 * checked at ALLOW may meet BLOCK and raise SIGSYS.  That SIGSYS is never
 * delivered: each call is made or fails with EPERM, the target's handler
 * never runs and it lives on.
 */
START_TEST(sud_selector_flips)
{
	struct sud_shared *sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
				     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int cmd, st, made = 0, refused = 0, raised = 0;
	struct target t;
	pthread_t th;

	ck_assert(sh != MAP_FAILED);
	memset(sh, 0, sizeof(*sh));
	t.pid = start_sud_target(sh, true, &cmd);
	t.addr = sh->addr;
	t.pidfd = (int)syscall(__NR_pidfd_open, t.pid, 0);
	ck_assert_int_ge(t.pidfd, 0);
	atomic_store(&sh->flipped, 1);
	ck_assert(pthread_create(&th, NULL, flip_selector, sh) == 0);
	for (int i = 0; i < 300; i++) {
		int ret = apply(&t, i & 1 ? THP_ADVICE_NOHUGE : THP_ADVICE_HUGE, NULL);

		if (ret == 1) {
			made++;
			continue;
		}
		ck_assert_msg(ret == -EPERM, "ret %d (%s)", ret, thp_strerror_detail());
		assert_detail("syscall user dispatch", NULL);
		refused++;
		raised += strstr(thp_strerror_detail(), "raised SIGSYS") != NULL;
	}
	atomic_store(&sh->flipped, 2);
	pthread_join(th, NULL);
	atomic_store(&sh->stop, 1);
	ck_assert(write(cmd, "Q", 1) == 1);
	ck_assert(waitpid(t.pid, &st, 0) == t.pid);
	printf("sud_selector_flips: 300 calls: %d made, %d refused (%d after raising SIGSYS)\n",
	       made, refused, raised);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target status %#x", st);
	ck_assert_msg(atomic_load(&sh->sigsys) == 0, "the target's handler saw %lu SIGSYS",
		      atomic_load(&sh->sigsys));
	close(cmd);
	close(t.pidfd);
	munmap(sh, sizeof(*sh));
}
END_TEST

/* Selector at BLOCK: the injected call would raise SIGSYS; refused, the target untouched. */
START_TEST(sud_blocked_refused)
{
	sud_case(true);
}
END_TEST

/* Selector at ALLOW: the call from the vDSO goes through as any other. */
START_TEST(sud_allowed_injected)
{
	sud_case(false);
}
END_TEST

static Suite *inject_safety_suite(void)
{
	Suite *s = suite_create("inject_safety");
	TCase *tc = tcase_create("inject_safety");

	tcase_set_timeout(tc, 60);
	/* Reading a filter needs CAP_SYS_ADMIN; the refusals are seen by a caller made nobody. */
	tcase_set_tags(tc, PRIVILEGED_TAG);
	tcase_add_test(tc, kill_on_prctl_refused);
	tcase_add_test(tc, kill_on_set_thp_disable_refused);
	tcase_add_test(tc, kill_on_prctl_madvise_allowed);
	tcase_add_test(tc, errno_on_hugepage_argument);
	tcase_add_test(tc, second_range_refused);
	tcase_add_test(tc, trap_on_instruction_pointer);
	tcase_add_test(tc, strict_mode_refused);
	tcase_add_test(tc, filter_unreadable_without_sys_admin);
	tcase_add_test(tc, not_dumpable_refused);
	tcase_add_test(tc, other_user_refused);
	tcase_add_test(tc, tsync_filter_during_sessions);
	suite_add_tcase(s, tc);
	/* No privilege needed: also run as nobody (inject-unprivileged). */
	tc = tcase_create("inject_safety_unprivileged");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sud_blocked_refused);
	tcase_add_test(tc, sud_selector_flips);
	tcase_add_test(tc, sud_allowed_injected);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(inject_safety_suite());
}

#else /* !__x86_64__ */

int main(void)
{
	printf("SKIP: the inject backend is x86_64-only\n");
	return 77;
}

#endif
