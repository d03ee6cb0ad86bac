// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The inject session's other threads: every thread of the target but the
 * one that runs the calls is seized and held stopped for the session, so
 * that none can install a seccomp filter or change a dispatch selector
 * between the checks and the call; an exec() by one of them ends the
 * session.
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

/* How long the target's other threads get to stop (a loaded machine's scheduling delay). */
#define HOLD_WAIT_NS (2 * 1000 * 1000 * 1000L)

/* @tid's current system call from /proc (its first number), or -1 (none, running, unknown). */
static long thread_syscall(pid_t pid, pid_t tid)
{
	char path[80], buf[256];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	if (sys_read_file(path, buf, sizeof(buf)) <= 0 || buf[0] < '0' || buf[0] > '9')
		return -1;
	return strtol(buf, NULL, 10);
}

/*
 * A held thread's exec() replaced the process: it now has the process's
 * id and is traced by us.  Stop it (a stop comes before it runs code of
 * the new program) and detach it, registers untouched; the thread
 * s->tid named is dead, so inject_end() leaves it alone.
 */
static void release_exec_winner(struct inject_session *s)
{
	pid_t pid = s->t->pid;
	uint64_t t0 = now_ns();

	s->replaced = true;
	if (ptrace(PTRACE_INTERRUPT, pid, 0, 0) < 0)
		return;
	while (now_ns() - t0 < HOLD_WAIT_NS) {
		siginfo_t si;

		si.si_pid = 0;
		/* Stops only, WEXITED left out: nothing is reaped here. */
		if (waitid(P_PID, (id_t)pid, &si, WSTOPPED | WNOHANG | __WALL) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		if (si.si_pid != pid) {
			sched_yield();
			continue;
		}
		if ((si.si_status >> 8) == PTRACE_EVENT_STOP || (si.si_status & 0x7f) == 0) {
			ptrace(PTRACE_DETACH, pid, 0, 0);
			return;
		}
		/* A signal before the stop: passed on as it came. */
		if (ptrace(PTRACE_CONT, pid, 0, (void *)(long)(si.si_status & 0x7f)) < 0)
			return;
	}
}

/* Seize and interrupt one more thread; 1 held, 0 gone or exiting, -errno. */
static int hold_one(struct inject_session *s, pid_t tid)
{
	long nr, v = 0;

	if (s->nheld == s->held_cap) {
		unsigned int cap = s->held_cap ? 2 * s->held_cap : 16;
		struct inject_held *h = realloc(s->held, cap * sizeof(*h));

		if (!h)
			return -ENOMEM;
		s->held = h;
		s->held_cap = cap;
	}
	/*
	 * A thread in execve() is about to replace the process (and kill the
	 * thread we stopped), and installs no filter before: left alone, the
	 * session then ends with -ESRCH as for an exec() elsewhere.
	 */
	nr = thread_syscall(s->t->pid, tid);
	if (nr == SYS_execve || nr == SYS_execveat)
		return 0;
	if (ptrace(PTRACE_SEIZE, tid, 0, 0) < 0) {
		int e = errno;

		/* Exiting (or a zombie main thread): it runs no more code. */
		if (e == ESRCH || proc_status_field(s->t->pid, tid, "\nState:", &v) || v == 'Z' ||
		    v == 'X')
			return 0;
		if (e == EPERM && proc_status_field(s->t->pid, tid, "\nTracerPid:", &v) == 0 && v) {
			report_set_detail("thread %d of process %d is traced by process %ld: the "
					  "inject backend needs to stop every thread", (int)tid,
					  (int)s->t->pid, v);
			return -EBUSY;
		}
		if (e == EPERM)
			return 0; /* exiting too: seizing the process's first thread worked */
		report_set_detail("ptrace of thread %d of process %d failed: %s", (int)tid,
				  (int)s->t->pid, strerror(e));
		return -e;
	}
	/*
	 * Its exec() held the seize up and then ended: it is now the process's
	 * main thread, under the process's id, and the thread we stopped is
	 * gone.  Let it go and end the session.
	 */
	if (proc_status_field(s->t->pid, tid, "\nState:", &v) == -ESRCH &&
	    s->tid == s->t->pid && !inject_still_stopped(s) &&
	    proc_status_field(s->t->pid, s->t->pid, "\nTracerPid:", &v) == 0 && v == getpid()) {
		release_exec_winner(s);
		report_set_detail("process %d exec()ed", (int)s->t->pid);
		return -ESRCH;
	}
	s->held[s->nheld].tid = tid;
	s->held[s->nheld].stopped = false;
	s->nheld++;
	/* Failing, it is gone meanwhile: its wait says so. */
	ptrace(PTRACE_INTERRUPT, tid, 0, 0);
	return 1;
}

/* Look at one held thread's state changes: 1 stopped or gone, 0 still running. */
static int held_settled(struct inject_held *h)
{
	for (;;) {
		int st;
		pid_t r = waitpid(h->tid, &st, __WALL | WNOHANG);

		if (r == 0)
			return 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || !WIFSTOPPED(st)) {
			h->tid = 0; /* exited: reaped as its tracer, or not ours */
			return 1;
		}
		if ((st >> 16) == PTRACE_EVENT_STOP) {
			h->stopped = true;
			return 1;
		}
		/*
		 * A signal-delivery-stop before the interrupt's stop: the signal
		 * goes on as it came; the pending stop then comes before the
		 * thread runs any code of its own.
		 */
		if (ptrace(PTRACE_CONT, h->tid, 0, (void *)(long)WSTOPSIG(st)) < 0) {
			h->tid = 0;
			return 1;
		}
	}
}

/*
 * The thread is still in the stop we put it in: not killed meanwhile (its
 * process exiting, or another thread's exec() replacing its memory).
 */
bool inject_still_stopped(const struct inject_session *s)
{
	long v = 0;

	return proc_status_field(s->t->pid, s->tid, "\nState:", &v) == 0 && (v == 't' || v == 'T');
}

/*
 * The thread we stopped is still there, as we left it: a thread that was
 * entering execve() as we held it may have replaced the process meanwhile
 * (its exec() kills every other thread), and now answers under the
 * process's id, traced by us.  Then it is let go and the session ends.
 * 0 or -ESRCH.
 */
static int still_ours(struct inject_session *s)
{
	struct inject_regs now;
	long v = 0;

	if (inject_arch_get_regs(s->tid, &now) == 0 && !memcmp(&now, &s->saved, sizeof(now)))
		return 0;
	if (s->tid == s->t->pid && proc_status_field(s->t->pid, s->t->pid, "\nTracerPid:", &v) == 0 &&
	    v == getpid())
		release_exec_winner(s);
	report_set_detail("process %d exec()ed or exited", (int)s->t->pid);
	return -ESRCH;
}

/*
 * Stop every other thread of the target for the session: then no thread
 * can install a seccomp filter (TSYNC) or flip a dispatch selector between
 * the checks and the injected call.  Threads created meanwhile (a clone()
 * that ended as we stopped its caller) are taken in the next pass.  A
 * thread that does not stop in time sleeps uninterruptibly (vfork(), disk
 * I/O): its pending stop still comes before it runs any code of its own,
 * so it is left to stop later, unless its system call is one that installs
 * a filter.  0 or -errno with detail.
 */
int inject_hold_others(struct inject_session *s)
{
	for (;;) {
		unsigned int first = s->nheld;
		char dir[64];
		struct dirent *d;
		uint64_t t0;
		DIR *dp;
		int err = 0;

		snprintf(dir, sizeof(dir), "/proc/%d/task", (int)s->t->pid);
		dp = opendir(dir);
		if (!dp)
			return -ESRCH;
		while (!err && (d = readdir(dp))) {
			pid_t tid = (pid_t)strtol(d->d_name, NULL, 10);
			bool known = tid == s->tid;

			for (unsigned int i = 0; !known && i < s->nheld; i++)
				known = s->held[i].tid == tid;
			if (tid > 0 && !known)
				err = hold_one(s, tid);
			if (err > 0)
				err = 0;
		}
		closedir(dp);
		if (err)
			return err;
		if (first == s->nheld)
			return still_ours(s);
		t0 = now_ns();
		for (unsigned int i = first; i < s->nheld; i++) {
			struct timespec ts = { 0, 50 * 1000 };
			unsigned int polls = 0;

			/* Yield first: the thread needs a CPU to reach its stop. */
			while (s->held[i].tid && !s->held[i].stopped && !held_settled(&s->held[i]) &&
			       now_ns() - t0 < HOLD_WAIT_NS) {
				if (polls++ < 100)
					sched_yield();
				else
					nanosleep(&ts, NULL);
			}
			if (s->held[i].tid && !s->held[i].stopped) {
				long nr = thread_syscall(s->t->pid, s->held[i].tid);

				if (nr == SYS_seccomp || nr == SYS_prctl || nr < 0) {
					report_set_detail("thread %d of process %d did not stop within "
							  "2 s: not injected", (int)s->held[i].tid,
							  (int)s->t->pid);
					return -EAGAIN;
				}
			}
		}
	}
}

/* Let the held threads go on: each detached where it stopped. */
void inject_release_held(struct inject_session *s)
{
	for (unsigned int i = 0; i < s->nheld; i++) {
		struct inject_held *h = &s->held[i];

		if (h->tid && !h->stopped)
			held_settled(h);
		/*
		 * One still running sleeps uninterruptibly and cannot be detached;
		 * it stays traced until it stops (its pending stop) or this
		 * process (a helper running the session) exits.
		 */
		if (h->tid && h->stopped)
			ptrace(PTRACE_DETACH, h->tid, 0, 0);
	}
	free(s->held);
	s->held = NULL;
	s->nheld = s->held_cap = 0;
}

