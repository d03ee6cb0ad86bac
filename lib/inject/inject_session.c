// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The inject session: stop every thread of another process with ptrace,
 * run system calls as one of them from a syscall instruction of its vDSO,
 * restore it exactly, detach them all.  The inject backend (backend_inject.c) and
 * the inject default mechanism (inject_default.c) are built on it.
 * x86_64 targets only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>

#include "compat.h"
#include "clock_ns.h"
#include "default.h"
#include "inject_helper.h"
#include "inject_vdso.h"
#include "inject_access.h"
#include "inject_session.h"
#include "internal.h"
#include "seccomp_filter.h"
#include "syscall.h"

#if defined(__x86_64__)

/* The 64-bit user code segment: any other means a 32-bit (compat) process. */
#define USER64_CS 0x33
/* Retries when a signal comes between our resume and the injected syscall. */
#define INJECT_RETRIES 64
#define CAP_SYS_ADMIN_ 21
/*
 * How long a thread may take to stop (PTRACE_INTERRUPT) before it is left
 * alone: a thread that runs, sleeps or waits stops at once; one that does
 * not in this time is in vfork() (or not scheduled at all).
 */
#define INJECT_STOP_MS 250
/* The longest sleep between two looks at a tracee that sends no event. */
#define WAIT_SLICE_NS (5 * 1000 * 1000L)


/* A field of /proc/PID/task/TID/status: a number, or State's letter. */
int inject_status_field(pid_t pid, pid_t tid, const char *key, long *val)
{
	char path[80], buf[4096], *p;
	long n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	n = sys_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	p = strstr(buf, key);
	if (!p)
		return -ENOENT;
	p += strlen(key);
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p >= 'A' && *p <= 'Z') {
		*val = *p; /* State: one letter */
		return 0;
	}
	*val = strtol(p, NULL, 10);
	return 0;
}

/*
 * The thread to stop: the main thread, or while that one has exited
 * (pthread_exit() in main()) the first other live thread.  0 or -errno.
 */
static int pick_thread(pid_t pid, pid_t *tid)
{
	char dir[64];
	struct dirent *d;
	long v = 0;
	DIR *dp;

	*tid = pid;
	if (inject_status_field(pid, pid, "\nState:", &v) == 0 && v != 'Z')
		return 0;
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	dp = opendir(dir);
	if (!dp)
		return -ESRCH;
	while ((d = readdir(dp))) {
		pid_t t = (pid_t)strtol(d->d_name, NULL, 10);

		if (t > 0 && t != pid && inject_status_field(pid, t, "\nState:", &v) == 0 && v != 'Z') {
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
static int seccomp_refusal(pid_t pid, long mode)
{
	if (mode == 1) {
		report_set_detail("process %d runs under seccomp strict mode, which kills it on any "
				  "call but read, write, exit and sigreturn: not injected", (int)pid);
		return -EPERM;
	}
	if (mode && sf_caller_has_cap(CAP_SYS_ADMIN_) != 1) {
		report_set_detail("process %d runs under a seccomp filter, and reading it to see "
				  "what it does with the injected call needs CAP_SYS_ADMIN, which the "
				  "caller does not have: not injected", (int)pid);
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
static int inject_precheck(const struct thp_target *t, pid_t pid, pid_t tid)
{
	long v = 0;
	int err;

	err = inject_status_field(pid, tid, "\nTracerPid:", &v);
	if (err)
		return err == -ENOENT ? 0 : err;
	if (inject_tracer_is_ours(v))
		return -EAGAIN;
	if (v) {
		report_set_detail("process %d is already traced by process %ld: the inject "
				  "backend needs to ptrace it", (int)pid, v);
		return -EBUSY;
	}
	if (inject_status_field(pid, tid, "\nSeccomp:", &v) == 0 && (err = seccomp_refusal(pid, v)))
		return err;
	return inject_may_ptrace(t, pid);
}

/*
 * waitpid(tid, __WALL) for the tracee's next stop, as a status.  The
 * caller's own child is waited for with __WCLONE instead: a tracee is
 * seen whatever the flag, a plain child is not, so that its exit stays
 * its parent's to collect (looked at with WNOWAIT, never reaped here) and
 * a child we no longer trace (another thread exec()ed and took over the
 * process) is ECHILD, not a wait for its new program to end.  (In the
 * inject helper, inject_helper.c, the target is never the tracer's child.)
 * Polled, up to @deadline (CLOCK_MONOTONIC ns, 0: none); between polls
 * it sleeps until a SIGCHLD or WAIT_SLICE_NS, and /proc says whether an
 * event can still come.
 * The tracee's pid, 0 at the deadline, or -1 (gone or no longer ours).
 */
static pid_t trace_wait(struct inject_session *s, int *st, uint64_t deadline)
{
	bool slept = false;

	for (;;) {
		int nohang = WNOHANG;
		siginfo_t si;
		pid_t r;

		if (!s->own_child) {
			r = waitpid(s->tid, st, __WALL | nohang);
			if (r < 0 && errno == EINTR)
				continue;
			if (r != 0)
				return r;
			goto wait_more;
		}
		si.si_pid = 0;
		if (waitid(P_PID, (id_t)s->tid, &si,
			   WSTOPPED | WEXITED | WNOWAIT | __WCLONE | nohang) < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (si.si_pid == 0)
			goto wait_more;
		if (si.si_code == CLD_TRAPPED || si.si_code == CLD_STOPPED) {
			/* Take the stop; WEXITED left out, nothing is reaped here. */
			si.si_pid = 0;
			if (waitid(P_PID, (id_t)s->tid, &si, WSTOPPED | WNOHANG | __WCLONE) < 0) {
				if (errno == EINTR)
					continue;
				return -1;
			}
			if (si.si_pid != s->tid)
				continue;
			*st = (si.si_status << 8) | 0x7f; /* as waitpid() gives it */
			return s->tid;
		}
		/* It died: a thread that is not the process is ours to reap as its tracer. */
		if (s->tid != s->t->pid)
			waitpid(s->tid, &(int){ 0 }, __WALL | WNOHANG);
		errno = ESRCH;
		return -1;
wait_more: {
		uint64_t now = deadline ? now_ns() : 0;
		uint64_t left = deadline ? (now < deadline ? deadline - now : 0) : WAIT_SLICE_NS;
		struct timespec ts = { 0, 0 };
		sigset_t chld;
		long v = 0;

		if (deadline && !left)
			return 0;
		/*
		 * Slept once and still nothing: is an event still to come?  Not
		 * from a zombie leader whose threads live on (it never reports
		 * to a tracer that is not its parent), nor from a thread an
		 * exec() in another one replaced.
		 */
		if (slept && (inject_status_field(s->t->pid, s->tid, "\nTracerPid:", &v) ||
			      v != (long)getpid() ||
			      inject_status_field(s->t->pid, s->tid, "\nState:", &v) || v == 'Z' ||
			      v == 'X')) {
			errno = ESRCH;
			return -1;
		}
		/*
		 * The tracee's stops and exit send SIGCHLD to its tracer, blocked
		 * in the inject helper (inject_helper.c): it wakes the wait.
		 */
		ts.tv_nsec = (long)(left < WAIT_SLICE_NS ? left : WAIT_SLICE_NS);
		sigemptyset(&chld);
		sigaddset(&chld, SIGCHLD);
		sigtimedwait(&chld, NULL, &ts);
		slept = true;
	}
	}
}

/*
 * Wait for a stop of the tracee that is not a signal for it (an interrupt or
 * group-stop); signals that arrive first are delivered as they came.
 * Bounded by INJECT_STOP_MS: the thread runs its own code meanwhile (a
 * main thread in vfork() cannot be stopped until its child exits or
 * exec()s), so it can be abandoned, left running: -ETIMEDOUT with a
 * detail, and no later wait of the session waits for a stop again.  The
 * tracer's exit (the helper's, inject_helper.c) then detaches it, since
 * a running tracee cannot be detached.
 */
static int wait_event_stop(struct inject_session *s)
{
	uint64_t deadline;

	if (s->unstoppable)
		return -ETIMEDOUT;
	deadline = now_ns() + INJECT_STOP_MS * 1000 * 1000ULL;
	for (;;) {
		int st;
		pid_t r = trace_wait(s, &st, deadline);

		if (r == 0) {
			s->unstoppable = true;
			report_set_detail("process %d did not stop within %d ms (in vfork()?): "
					  "not injected, left running as it was",
					  (int)s->tid, INJECT_STOP_MS);
			return -ETIMEDOUT;
		}
		if (r < 0)
			return -ESRCH;
		if (!WIFSTOPPED(st))
			return -ESRCH; /* exited or killed */
		if ((st >> 16) == PTRACE_EVENT_STOP)
			return 0;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			/* A syscall stop we did not ask for: go on to the interrupt. */
			if (ptrace(PTRACE_CONT, s->tid, 0, 0) < 0)
				return -ESRCH;
			continue;
		}
		/* Signal-delivery-stop: pass the signal on unchanged. */
		if (ptrace(PTRACE_CONT, s->tid, 0, (void *)(long)WSTOPSIG(st)) < 0)
			return -ESRCH;
	}
}

/* Stop the thread and save its registers; 0 or -errno. */
static int inject_stop(struct inject_session *s)
{
	int err;

	if (ptrace(PTRACE_INTERRUPT, s->tid, 0, 0) < 0)
		return -ESRCH;
	err = wait_event_stop(s);
	if (err)
		return err;
	s->stopped = true;
	s->in_signal_path = true;
	/*
	 * Saved as they are, an interrupted call's -ERESTART* code included:
	 * set back at a stop in the signal path, they let the kernel decide
	 * between restart and EINTR when the thread goes on (inject_end()).
	 */
	if (ptrace(PTRACE_GETREGS, s->tid, 0, &s->saved) < 0)
		return -ESRCH;
	if (s->saved.cs != USER64_CS) {
		report_set_detail("process %d is a 32-bit process: the inject backend supports "
				  "x86_64 processes only", (int)s->tid);
		return -EOPNOTSUPP;
	}
	return 0;
}

/*
 * The thread is still in the stop we put it in: not killed meanwhile (its
 * process exiting, or another thread's exec() replacing its memory).
 */
bool inject_still_stopped(const struct inject_session *s)
{
	long v = 0;

	return inject_status_field(s->t->pid, s->tid, "\nState:", &v) == 0 && (v == 't' || v == 'T');
}

/* A syscall instruction in the target's vDSO (inject_vdso.c), read without writing anything. */
static int find_syscall_ip(struct inject_session *s)
{
	int err = vdso_syscall_ip(s->t->pid, s->tid, &s->syscall_ip);

	/* A thread killed meanwhile (its process exits or exec()s) has no vDSO left. */
	if ((err == -ENOENT || err == -ENOEXEC) && !inject_still_stopped(s))
		return -ESRCH;
	if (err == -ENOENT) {
		report_set_detail("process %d has no vDSO: the inject backend finds its syscall "
				  "instruction there and never writes the target's code",
				  (int)s->tid);
		return -EOPNOTSUPP;
	}
	if (err == -ENOEXEC) {
		report_set_detail("no syscall instruction in the vDSO of process %d", (int)s->tid);
		return -EOPNOTSUPP;
	}
	return err;
}

/* 1 when @tid blocks or ignores SIGSYS (SigBlk, SigIgn), 0 if not, -errno. */
static int sigsys_held_back(pid_t pid, pid_t tid)
{
	char path[80], buf[4096];
	const char *keys[] = { "\nSigBlk:", "\nSigIgn:" };
	long n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	n = sys_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	for (size_t i = 0; i < 2; i++) {
		const char *p = strstr(buf, keys[i]);

		if (p && (strtoull(p + strlen(keys[i]), NULL, 16) >> (SIGSYS - 1) & 1))
			return 1;
	}
	return 0;
}

/*
 * Syscall user dispatch (Wine, Proton): a call from outside the allowed
 * range while the selector says BLOCK raises SIGSYS in the target instead
 * of running, and a SIGSYS forced on a thread that blocks or ignores it
 * resets its handler and kills it.  Injected only when the call from the
 * vDSO would not be dispatched: the range exempts it, or the selector byte
 * is ALLOW now (no other thread can change it: they are all stopped).
 * Where the kernel cannot report the setting (before 6.4, or a kernel that
 * refuses PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG), a thread that blocks
 * or ignores SIGSYS is refused: the one case where a dispatched call would
 * do harm before inject_syscall() could drop its SIGSYS.  0 or -EPERM with
 * detail.
 */
static int sud_check(struct inject_session *s)
{
	struct thp_ptrace_sud_config c;
	unsigned long ip = s->syscall_ip + 2; /* the kernel sees the address after it */
	bool in_range;
	long word;
	int r;

	memset(&c, 0, sizeof(c));
	if (ptrace(THP_PTRACE_GET_SUD_CONFIG, s->tid, (void *)sizeof(c), &c) < 0) {
		if (errno == ESRCH)
			return -ESRCH;
		r = sigsys_held_back(s->t->pid, s->tid);
		if (r <= 0)
			return r;
		report_set_detail("process %d blocks or ignores SIGSYS right now (as a SIGSYS "
				  "handler does), and this kernel does not say whether it uses "
				  "syscall user dispatch, which would then kill it for the injected "
				  "call: not injected", (int)s->t->pid);
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
		/* x86 is little-endian: the selector is the word's low byte. */
		if (!errno && (word & 0xff) == THP_SYSCALL_DISPATCH_FILTER_ALLOW)
			return 0;
	}
	report_set_detail("process %d uses syscall user dispatch (PR_SET_SYSCALL_USER_DISPATCH, "
			  "as Wine does) and would get SIGSYS for a system call from its vDSO "
			  "right now: not injected", (int)s->t->pid);
	return -EPERM;
}

/*
 * A SIGSYS that the injected call itself raised (seccomp's TRAP, or
 * syscall user dispatch): its si_call_addr is the address after our
 * syscall instruction.  Such a signal is never delivered to the target.
 */
static bool sigsys_is_ours(const struct inject_session *s, int sig)
{
	siginfo_t si;

	if (sig != SIGSYS)
		return false;
	memset(&si, 0, sizeof(si));
	if (ptrace(PTRACE_GETSIGINFO, s->tid, 0, &si) < 0)
		return false;
	return (si.si_code == THP_SYS_SECCOMP || si.si_code == THP_SYS_USER_DISPATCH) &&
	       (unsigned long)si.si_call_addr == s->syscall_ip + 2;
}

int inject_begin(struct inject_session *s, const struct thp_target *t)
{
	long v = 0;
	int err;

	memset(s, 0, sizeof(*s));
	s->t = t;
	if (target_alive(t)) {
		report_set_detail("process %d has exited", (int)t->pid);
		return -ESRCH;
	}
	for (int attempt = 0;; attempt++) {
		struct timespec ts = { 0, 1000 * 1000 };

		err = pick_thread(t->pid, &s->tid);
		if (!err)
			err = inject_precheck(t, t->pid, s->tid);
		if (err != -EAGAIN)
			break;
		if (attempt == 100) {
			report_set_detail("process %d is still traced by this process after 100 ms "
					  "(another thread's ptrace, or a thread an exec() or exit "
					  "killed while an earlier inject call had it stopped)",
					  (int)t->pid);
			return -EBUSY;
		}
		nanosleep(&ts, NULL);
		if (target_alive(t))
			return -ESRCH;
	}
	if (err)
		return err;
	for (int attempt = 0;; attempt++) {
		struct timespec ts = { 0, 1000 * 1000 };

		if (ptrace(PTRACE_SEIZE, s->tid, 0, (void *)(long)PTRACE_O_TRACESYSGOOD) == 0)
			break;
		/*
		 * EPERM also comes from a thread that is exiting, and for a moment
		 * from the old leader an exec() in another thread replaces: look
		 * again before calling it a refusal.
		 */
		if (errno != EPERM || attempt == 3)
			return inject_ptrace_refused(t, s->tid, errno);
		nanosleep(&ts, NULL);
		if (target_alive(t))
			return -ESRCH;
		err = pick_thread(t->pid, &s->tid);
		if (err)
			return err;
	}
	s->seized = true;
	/*
	 * A thread that exec()ed while we seized it (its exec held us up) now
	 * has the process's id: follow it, or we could not stop nor detach it.
	 */
	if (s->tid != t->pid && inject_status_field(t->pid, s->tid, "\nState:", &v) &&
	    inject_status_field(t->pid, t->pid, "\nTracerPid:", &v) == 0 && v == getpid())
		s->tid = t->pid;
	s->own_child = inject_status_field(t->pid, s->tid, "\nPPid:", &v) == 0 && v == getpid();
	/* The pid may have been reused between pidfd and seize: the pidfd says. */
	if (target_alive(t))
		return -ESRCH;
	err = inject_stop(s);
	if (!err)
		err = inject_hold_others(s);
	if (!err)
		err = find_syscall_ip(s);
	if (!err)
		err = sud_check(s);
	if (err)
		return err;
	/*
	 * Looked at again with every thread stopped: a filter may have come
	 * since (TSYNC from another thread), none can come now.
	 */
	err = inject_status_field(s->t->pid, s->tid, "\nSeccomp:", &v);
	if (err == -ENOENT || (!err && !v))
		return 0; /* no seccomp in this kernel, or none for this thread */
	if (!err)
		err = seccomp_refusal(s->t->pid, v);
	if (!err)
		err = sf_load(&s->sf, s->t->pid, s->tid);
	s->filtered = !err;
	return err;
}

/* What an injected call is, for a detail. */
static const char *call_name(long nr, unsigned long a1, unsigned long a3, char *buf, size_t len)
{
	if (nr == SYS_madvise)
		snprintf(buf, len, "madvise(%s)",
			 a3 == MADV_HUGEPAGE ? "MADV_HUGEPAGE" :
			 a3 == MADV_NOHUGEPAGE ? "MADV_NOHUGEPAGE" :
			 a3 == MADV_COLLAPSE ? "MADV_COLLAPSE" : "advice");
	else if (nr == SYS_prctl)
		snprintf(buf, len, "prctl(%s)",
			 a1 == PR_SET_THP_DISABLE ? "PR_SET_THP_DISABLE" :
			 a1 == PR_GET_THP_DISABLE ? "PR_GET_THP_DISABLE" : "option");
	else
		snprintf(buf, len, "system call %ld", nr);
	return buf;
}

/*
 * May the call be injected: 0, or -EPERM when the target's seccomp
 * filters would not simply let it through (the detail says what they
 * would do).  Asked for every call of a request before the first runs,
 * and again by inject_syscall() for the one it is about to run, which
 * first looks for a filter added since (@probe): the stopped thread
 * itself may have added one in a signal handler it ran meanwhile; every
 * other thread is held stopped for the session.
 */
int inject_vet(struct inject_session *s, bool probe, long nr, unsigned long a1,
		      unsigned long a2, unsigned long a3, unsigned long a4, unsigned long a5)
{
	char what[48];
	struct sf_call c = { call_name(nr, a1, a3, what, sizeof(what)), nr,
			     { a1, a2, a3, a4, a5, 0 } };
	int err;

	if (!s->filtered)
		return 0;
	err = probe ? sf_grew(&s->sf, s->tid) : 0;
	if (err == 1) {
		sf_free(&s->sf);
		s->filtered = false;
		err = sf_load(&s->sf, s->t->pid, s->tid);
		s->filtered = !err;
	}
	if (err)
		return err;
	/* The kernel sees the address after the syscall instruction. */
	return sf_check_calls(&s->sf, s->t->pid, SF_AUDIT_ARCH_X86_64, s->syscall_ip + 2, &c, 1);
}

/*
 * Back from a syscall-exit-stop into the kernel's signal path: an
 * interrupt, and the event stop it brings before any code of the thread
 * runs (get_signal() takes a pending trap before any signal).
 */
static int return_to_signal_path(struct inject_session *s)
{
	if (ptrace(PTRACE_INTERRUPT, s->tid, 0, 0) < 0 || ptrace(PTRACE_CONT, s->tid, 0, 0) < 0)
		return -ESRCH;
	s->stopped = false;
	if (wait_event_stop(s))
		return -ESRCH;
	s->stopped = s->in_signal_path = true;
	return 0;
}

/* Forget the session: the held threads let go, the filters freed; returns @err. */
static int session_release(struct inject_session *s, int err)
{
	s->seized = s->stopped = false;
	inject_release_held(s);
	if (s->filtered)
		sf_free(&s->sf);
	s->filtered = false;
	return err;
}

/*
 * Leave the thread as it was and detach.  Detached inside the signal path
 * with its own registers, it goes on as the kernel would have had it go
 * on without us: a signal that arrived meanwhile is delivered, and the
 * call it was interrupted in is restarted or fails with EINTR as that
 * signal's SA_RESTART says (or restarted when none came); a group-stop in
 * force stops it again at detach.
 */
static int inject_end(struct inject_session *s)
{
	int err = 0;

	/* Replaced: the thread we stopped died in another's exec(), which we let go. */
	if (!s->seized || s->replaced)
		return session_release(s, s->seized ? -ESRCH : 0);
	/* Only a stopped tracee can be detached: stop it first if need be. */
	if (!s->stopped && ptrace(PTRACE_INTERRUPT, s->tid, 0, 0) == 0 && wait_event_stop(s) == 0) {
		ptrace(PTRACE_DETACH, s->tid, 0, 0);
		return session_release(s, -ESRCH); /* not the state we meant to leave it in */
	}
	if (s->stopped && !s->in_signal_path && return_to_signal_path(s))
		err = -ESRCH;
	if (s->stopped && ptrace(PTRACE_SETREGS, s->tid, 0, &s->saved) < 0)
		err = -ESRCH;
	/* Data 0: a signal-delivery-stop's signal (one our call raised) is dropped. */
	if (ptrace(PTRACE_DETACH, s->tid, 0, 0) < 0 && !err)
		err = -ESRCH;
	return session_release(s, err);
}

/*
 * Run one system call as the stopped thread.  Returns its result (-errno
 * as the kernel's), or sets *err (-ESRCH: the target went away).
 */
long inject_syscall(struct inject_session *s, long nr, unsigned long a1, unsigned long a2,
			   unsigned long a3, unsigned long a4, unsigned long a5, int *err)
{
	*err = inject_vet(s, true, nr, a1, a2, a3, a4, a5);
	if (*err)
		return *err;
	for (int attempt = 0; attempt < INJECT_RETRIES; attempt++) {
		struct user_regs_struct r = s->saved;
		bool entered = false;
		int st;

		r.rax = (unsigned long)nr;
		r.orig_rax = (unsigned long)-1; /* no restart logic on these registers */
		r.rdi = a1;
		r.rsi = a2;
		r.rdx = a3;
		r.r10 = a4;
		r.r8 = a5;
		r.r9 = 0;
		r.rip = s->syscall_ip;
		s->calls++;
		if (ptrace(PTRACE_SETREGS, s->tid, 0, &r) < 0 ||
		    ptrace(PTRACE_SYSCALL, s->tid, 0, 0) < 0)
			goto gone;
		s->in_signal_path = false;
		for (;;) {
			/*
			 * Not bounded: the thread holds the injected registers
			 * until the call ends, and left now it would resume
			 * with them.  The call itself (madvise, prctl) ends.
			 */
			if (trace_wait(s, &st, 0) < 0)
				goto gone;
			if (!WIFSTOPPED(st))
				goto gone;
			if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
				if (ptrace(PTRACE_GETREGS, s->tid, 0, &r) < 0)
					goto gone;
				if (!entered) {
					entered = true;
					if ((long)r.orig_rax != nr)
						break; /* not ours: should not happen */
				} else {
					return (long)r.rax;
				}
				if (ptrace(PTRACE_SYSCALL, s->tid, 0, 0) < 0)
					goto gone;
				continue;
			}
			if ((st >> 16) == PTRACE_EVENT_STOP) {
				/* A late interrupt or a group-stop: the call has not run yet. */
				if (ptrace(PTRACE_SYSCALL, s->tid, 0, 0) < 0)
					goto gone;
				continue;
			}
			if (sigsys_is_ours(s, WSTOPSIG(st))) {
				/*
				 * Raised by our call (dispatch or a filter's TRAP), in
				 * place of it: dropped at detach, never delivered.
				 */
				if (ptrace(PTRACE_SETREGS, s->tid, 0, &s->saved) < 0)
					goto gone;
				s->in_signal_path = true;
				report_set_detail("the injected %s raised SIGSYS in process %d "
						  "(syscall user dispatch or a seccomp filter): not "
						  "run, and the signal not delivered",
						  call_name(nr, a1, a3, (char[48]){ 0 }, 48),
						  (int)s->t->pid);
				*err = -EPERM;
				return -EPERM;
			}
			/*
			 * A signal before the call: give the thread back its own
			 * registers, as the kernel left them, let it take the
			 * signal as it would have (its handler's SA_RESTART decides
			 * between restart and EINTR), stop it again and retry.
			 */
			if (ptrace(PTRACE_SETREGS, s->tid, 0, &s->saved) < 0 ||
			    ptrace(PTRACE_CONT, s->tid, 0, (void *)(long)WSTOPSIG(st)) < 0)
				goto gone;
			s->stopped = false;
			*err = inject_stop(s);
			/* Its handler may have started a thread: held too. */
			if (!*err)
				*err = inject_hold_others(s);
			/* It ran: it may have exec()ed, with a vDSO elsewhere. */
			if (!*err) {
				s->syscall_ip = 0;
				*err = find_syscall_ip(s);
			}
			/* Its handler may have flipped its dispatch selector. */
			if (!*err)
				*err = sud_check(s);
			if (*err)
				return *err;
			break;
		}
	}
	report_set_detail("process %d kept taking signals: the injected call did not run",
			  (int)s->tid);
	*err = -EAGAIN;
	return -EAGAIN;
gone:
	s->stopped = false;
	*err = -ESRCH;
	return -ESRCH;
}

/* Said only once a call was started; before that, the detail says why it stopped. */
static void report_gone(pid_t pid, bool maybe_done)
{
	report_set_detail("process %d exited or exec()ed during the injected call%s", (int)pid,
			  maybe_done ? ": the call may have run, whatever the reports say was not "
				       "done may still have been done" : "");
}

/*
 * End the session whatever happened in it, and fold a target that went away
 * (during a call or at the end) into -ESRCH: the error the call returns.
 */
int inject_finish(struct inject_session *s, const struct thp_target *t, int err)
{
	if (inject_end(s) && !err)
		err = -ESRCH;
	if (err == -ESRCH && s->calls)
		report_gone(t->pid, true);
	return err;
}

#endif /* __x86_64__ */
