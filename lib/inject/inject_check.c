// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What the inject session looks at before it calls: which thread to stop,
 * the target's seccomp mode and syscall user dispatch, ptrace rights
 * (access.c), and whether a SIGSYS came from the injected call.  Each
 * refusal comes with a detail; nothing here writes to the target.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <unistd.h>

#include "access.h"
#include "compat.h"
#include "inject_helper.h"
#include "inject_session.h"
#include "internal.h"
#include "proc.h"
#include "seccomp_filter.h"

#define CAP_SYS_ADMIN_ 21

/*
 * The thread to stop: the main thread, or while that one has exited
 * (pthread_exit() in main()) the first other live thread.  0 or -errno.
 */
int inject_check_thread(pid_t pid, pid_t *tid)
{
	char dir[64];
	struct dirent *d;
	long v = 0;
	DIR *dp;

	*tid = pid;
	if (proc_status_field(pid, pid, "\nState:", &v) == 0 && v != 'Z')
		return 0;
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	dp = opendir(dir);
	if (!dp)
		return -ESRCH;
	while ((d = readdir(dp))) {
		pid_t t = (pid_t)strtol(d->d_name, NULL, 10);

		if (t > 0 && t != pid && proc_status_field(pid, t, "\nState:", &v) == 0 && v != 'Z') {
			*tid = t;
			break;
		}
	}
	closedir(dp);
	if (*tid != pid)
		return 0;
	report_set_detail("process %d has no live thread to stop", (int)pid);
	return -ESRCH;
}

/*
 * A process under seccomp can be called only when its filter can be read
 * and run on each call first (seccomp_filter.c).  0 or -EPERM with detail.
 */
int inject_check_seccomp(pid_t pid, long mode)
{
	if (mode == 1) {
		report_set_detail("process %d runs under seccomp strict mode, which kills it on any "
				  "call but read, write, exit and sigreturn: not injected",
				  (int)pid);
		return -EPERM;
	}
	if (mode && seccomp_filter_caller_has_cap(CAP_SYS_ADMIN_) != 1) {
		report_set_detail("process %d runs under a seccomp filter, and reading it to see "
				  "what it does with the injected call needs CAP_SYS_ADMIN, which the "
				  "caller does not have: not injected",
				  (int)pid);
		return -EPERM;
	}
	return 0;
}

/*
 * Refusals that need no stop: traced, seccomp, ptrace rights.  0 or -errno
 * with detail; -EAGAIN (no detail) when the tracer is this process: a
 * thread an earlier session of ours stopped, which an exec() or exit
 * killed before we could detach it, until the kernel releases it (or
 * another thread's session, until it ends).
 */
int inject_check_access(const struct thp_target *t, pid_t pid, pid_t tid)
{
	long v = 0;
	int err;

	err = proc_status_field(pid, tid, "\nTracerPid:", &v);
	if (err)
		return err == -ENOENT ? 0 : err;
	if (inject_tracer_is_ours(v))
		return -EAGAIN;
	if (v) {
		report_set_detail("process %d is already traced by process %ld: the inject "
				  "backend needs to ptrace it",
				  (int)pid, v);
		return -EBUSY;
	}
	if (proc_status_field(pid, tid, "\nSeccomp:", &v) == 0 && (err = inject_check_seccomp(pid, v)))
		return err;
	return access_may_ptrace(t, pid);
}

/* SIGSYS's state for @tid: bit 0 blocked, bit 1 ignored, bit 2 pending; or -errno. */
static int sigsys_state(pid_t pid, pid_t tid)
{
	char buf[4096];
	const char *keys[] = { "\nSigBlk:", "\nSigIgn:", "\nSigPnd:", "\nShdPnd:" };
	long n = proc_status_read(pid, tid, buf, sizeof(buf));
	int state = 0;

	if (n < 0)
		return (int)n;
	for (size_t i = 0; i < 4; i++) {
		const char *p = proc_status_find(buf, keys[i]);

		if (p && (strtoull(p, NULL, 16) >> (SIGSYS - 1) & 1))
			state |= 1 << (i < 2 ? i : 2);
	}
	return state;
}

/*
 * Syscall user dispatch (Wine, Proton): a call from outside the allowed
 * range while the selector says BLOCK raises SIGSYS in the target instead
 * of running, and a SIGSYS forced on a thread that blocks or ignores it
 * resets its handler and kills it.  Injected only when the call from the
 * vDSO would not be dispatched: the range exempts it, or the selector byte
 * is ALLOW now (no other thread can change it: they are all stopped).
 * Where the kernel cannot report the setting (before 6.4, or a kernel that
 * refuses PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG), a thread that ignores
 * SIGSYS, or has one pending, is refused: a dispatched call would reset
 * its handler, an unblocked one deliver the pending signal.  A thread that
 * only blocks it (a container runtime's init process blocks every signal
 * until it execs the workload) is injected with SIGSYS unblocked for the
 * call (1: the session does it), so that a dispatched call raises a
 * SIGSYS the session drops, and nothing of the thread changes.  0, 1, or
 * -EPERM with detail.
 */
int inject_check_dispatch(struct inject_session *s)
{
	struct thp_ptrace_sud_config c;
	unsigned long ip = s->syscall_ip + INJECT_ARCH_SYSCALL_LEN; /* the kernel sees the address after it */
	bool in_range;
	long word;
	int r;

	memset(&c, 0, sizeof(c));
	if (ptrace(THP_PTRACE_GET_SUD_CONFIG, s->tid, (void *)sizeof(c), &c) < 0) {
		if (errno == ESRCH)
			return -ESRCH;
		r = sigsys_state(s->t->pid, s->tid);
		if (r < 0)
			return r;
		if (!(r & 6))
			return r & 1;
		report_set_detail("process %d %s SIGSYS right now, and this kernel does not say "
				  "whether it uses syscall user dispatch, which would then reset its "
				  "handler for the injected call: not injected",
				  (int)s->t->pid, r & 2 ? "ignores" : "has a pending");
		return -EPERM;
	}
	if (c.mode == THP_PR_SYS_DISPATCH_OFF)
		return 0;
	in_range = ip - c.offset < c.len;
	if ((c.mode == THP_PR_SYS_DISPATCH_EXCLUSIVE_ON && in_range) ||
	    (c.mode == THP_PR_SYS_DISPATCH_INCLUSIVE_ON && !in_range))
		return 0;
	if (c.selector &&
	    (c.mode == THP_PR_SYS_DISPATCH_EXCLUSIVE_ON || c.mode == THP_PR_SYS_DISPATCH_INCLUSIVE_ON)) {
		errno = 0;
		word = ptrace(PTRACE_PEEKDATA, s->tid, (void *)(uintptr_t)c.selector, 0);
		if (!errno && inject_arch_selector_byte(word) == THP_SYSCALL_DISPATCH_FILTER_ALLOW)
			return 0;
	}
	report_set_detail("process %d uses syscall user dispatch (PR_SET_SYSCALL_USER_DISPATCH, "
			  "as Wine does) and would get SIGSYS for a system call from its vDSO "
			  "right now: not injected",
			  (int)s->t->pid);
	return -EPERM;
}

/*
 * A SIGSYS that the injected call itself raised (seccomp's TRAP, or
 * syscall user dispatch): its si_call_addr is the address after our
 * syscall instruction.  Such a signal is never delivered to the target.
 */
bool inject_check_sigsys_ours(const struct inject_session *s, int sig)
{
	siginfo_t si;

	if (sig != SIGSYS)
		return false;
	memset(&si, 0, sizeof(si));
	if (ptrace(PTRACE_GETSIGINFO, s->tid, 0, &si) < 0)
		return false;
	return (si.si_code == THP_SYS_SECCOMP || si.si_code == THP_SYS_USER_DISPATCH) &&
	       (unsigned long)si.si_call_addr == s->syscall_ip + INJECT_ARCH_SYSCALL_LEN;
}
