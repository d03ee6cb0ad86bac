// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The inject session: stop every thread of another process with ptrace,
 * run system calls as one of them from a syscall instruction of its vDSO,
 * restore it exactly, detach them all.  The inject backend (backend_inject.c) and
 * the inject default mechanism (inject_default.c) are built on it.
 * The architecture's part (registers, the instruction) is lib/arch/ARCH/.
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
#include <sys/wait.h>
#include <time.h>

#include "compat.h"
#include "clock_ns.h"
#include "default.h"
#include "inject_helper.h"
#include "inject_vdso.h"
#include "access.h"
#include "inject_session.h"
#include "internal.h"
#include "proc.h"
#include "seccomp_filter.h"
#include "syscall.h"

/* Retries when a signal comes between our resume and the injected syscall. */
#define INJECT_RETRIES 64
/*
 * How long a thread may take to stop (PTRACE_INTERRUPT) before it is left
 * alone: a thread that runs, sleeps or waits stops at once; one that does
 * not in this time is in vfork() (or not scheduled at all).
 */
#define INJECT_STOP_MS 250
/* The longest sleep between two looks at a tracee that sends no event. */
#define WAIT_SLICE_NS (5 * 1000 * 1000L)


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
		if (slept && (proc_status_field(s->t->pid, s->tid, "\nTracerPid:", &v) ||
			      v != (long)getpid() ||
			      proc_status_field(s->t->pid, s->tid, "\nState:", &v) || v == 'Z' ||
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
	if (inject_arch_get_regs(s->tid, &s->saved))
		return -ESRCH;
	return inject_arch_check_abi(s->tid, &s->saved);
}

/* A syscall instruction in the target's vDSO (inject_vdso.c), read without writing anything. */
static int find_syscall_ip(struct inject_session *s)
{
	uint64_t ip = 0;
	int err = inject_vdso_syscall_ip(s->t->pid, s->tid, &ip);

	if (!err)
		s->syscall_ip = (unsigned long)ip;
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

/*
 * inject_check_dispatch()'s answer acted on: 1 is SIGSYS unblocked in the
 * stopped thread (PTRACE_SETSIGMASK), so that a call the kernel dispatches
 * raises a SIGSYS the session drops instead of one forced through the
 * block, which would reset the thread's handler.  0 or -errno.
 */
static int dispatch_checked(struct inject_session *s)
{
	int r = inject_check_dispatch(s);
	uint64_t m;

	if (r <= 0 || s->sigsys_unblocked)
		return r;
	if (ptrace(PTRACE_GETSIGMASK, s->tid, (void *)sizeof(m), &m) < 0)
		return -ESRCH;
	s->sigmask = m;
	m &= ~(1ULL << (SIGSYS - 1));
	if (ptrace(PTRACE_SETSIGMASK, s->tid, (void *)sizeof(m), &m) < 0)
		return -ESRCH;
	s->sigsys_unblocked = true;
	return 0;
}

/* The stopped thread's own signal mask back, before it runs code of its own. */
static int sigsys_restore(struct inject_session *s)
{
	if (!s->sigsys_unblocked)
		return 0;
	s->sigsys_unblocked = false;
	return ptrace(PTRACE_SETSIGMASK, s->tid, (void *)sizeof(s->sigmask), &s->sigmask) < 0 ? -ESRCH : 0;
}

int inject_begin(struct inject_session *s, const struct thp_target *t)
{
	long v = 0;
	int err;

	memset(s, 0, sizeof(*s));
	s->t = t;
	err = inject_arch_supported();
	if (err)
		return err;
	if (target_alive(t)) {
		report_set_detail("process %d has exited", (int)t->pid);
		return -ESRCH;
	}
	for (int attempt = 0;; attempt++) {
		struct timespec ts = { 0, 1000 * 1000 };

		err = inject_check_thread(t->pid, &s->tid);
		if (!err)
			err = inject_check_access(t, t->pid, s->tid);
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
			return access_ptrace_refused(t, s->tid, errno);
		nanosleep(&ts, NULL);
		if (target_alive(t))
			return -ESRCH;
		err = inject_check_thread(t->pid, &s->tid);
		if (err)
			return err;
	}
	s->seized = true;
	/*
	 * A thread that exec()ed while we seized it (its exec held us up) now
	 * has the process's id: follow it, or we could not stop nor detach it.
	 */
	if (s->tid != t->pid && proc_status_field(t->pid, s->tid, "\nState:", &v) &&
	    proc_status_field(t->pid, t->pid, "\nTracerPid:", &v) == 0 && v == getpid())
		s->tid = t->pid;
	s->own_child = proc_status_field(t->pid, s->tid, "\nPPid:", &v) == 0 && v == getpid();
	/* The pid may have been reused between pidfd and seize: the pidfd says. */
	if (target_alive(t))
		return -ESRCH;
	err = inject_stop(s);
	if (!err)
		err = inject_hold_others(s);
	if (!err)
		err = find_syscall_ip(s);
	if (!err)
		err = dispatch_checked(s);
	if (err)
		return err;
	/*
	 * Looked at again with every thread stopped: a filter may have come
	 * since (TSYNC from another thread), none can come now.
	 */
	err = proc_status_field(s->t->pid, s->tid, "\nSeccomp:", &v);
	if (err == -ENOENT || (!err && !v))
		return 0; /* no seccomp in this kernel, or none for this thread */
	if (!err)
		err = inject_check_seccomp(s->t->pid, v);
	if (!err)
		err = seccomp_filter_load(&s->sf, s->t->pid, s->tid);
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
	struct seccomp_filter_call c = { call_name(nr, a1, a3, what, sizeof(what)), nr,
			     { a1, a2, a3, a4, a5, 0 } };
	int err;

	if (!s->filtered)
		return 0;
	err = probe ? seccomp_filter_grew(&s->sf, s->tid) : 0;
	if (err == 1) {
		seccomp_filter_free(&s->sf);
		s->filtered = false;
		err = seccomp_filter_load(&s->sf, s->t->pid, s->tid);
		s->filtered = !err;
	}
	if (err)
		return err;
	/* The kernel sees the address after the syscall instruction. */
	return seccomp_filter_check_calls(&s->sf, s->t->pid, INJECT_ARCH_AUDIT,
			      s->syscall_ip + INJECT_ARCH_SYSCALL_LEN, &c, 1);
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
		seccomp_filter_free(&s->sf);
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
		sigsys_restore(s);
		ptrace(PTRACE_DETACH, s->tid, 0, 0);
		return session_release(s, -ESRCH); /* not the state we meant to leave it in */
	}
	if (s->stopped && sigsys_restore(s))
		err = -ESRCH;
	if (s->stopped && !s->in_signal_path && return_to_signal_path(s))
		err = -ESRCH;
	if (s->stopped && inject_arch_set_regs(s->tid, &s->saved))
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
		const unsigned long a[5] = { a1, a2, a3, a4, a5 };
		struct inject_regs r = s->saved;
		bool entered = false;
		int st;

		inject_arch_set_call(&r, s->syscall_ip, nr, a);
		s->calls++;
		if (inject_arch_set_regs(s->tid, &r) ||
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
				if (inject_arch_get_regs(s->tid, &r))
					goto gone;
				if (!entered) {
					entered = true;
					if (inject_arch_call_nr(&r) != nr)
						break; /* not ours: should not happen */
				} else {
					return inject_arch_call_result(&r);
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
			if (inject_check_sigsys_ours(s, WSTOPSIG(st))) {
				/*
				 * Raised by our call (dispatch or a filter's TRAP), in
				 * place of it: dropped at detach, never delivered.
				 */
				if (inject_arch_set_regs(s->tid, &s->saved))
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
			/*
			 * With its own mask back: a SIGSYS it blocks is queued
			 * again by the kernel, not delivered.
			 */
			if (inject_arch_set_regs(s->tid, &s->saved) || sigsys_restore(s) ||
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
				*err = dispatch_checked(s);
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

