// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The helper process each inject request runs in: a clone of the calling
 * thread that shares its memory, becomes the target's tracer, runs the
 * whole session and exits, so that a kill of the caller (or of its process
 * group) cannot leave the target stopped, traced or resuming with the
 * injected registers.
 *
 * clone(CLONE_VM | CLONE_VFORK) with no exit signal: the calling thread
 * is suspended (killably) until the helper exits, and the helper runs on
 * that thread's TLS meanwhile, on a small stack of its own.  It blocks
 * every signal and leaves the caller's process group first;
 * if the caller dies, the helper still finishes the session (bounded: the
 * stop waits of inject_session.c are) and the kernel reparents and reaps
 * it.  It ends with exit_group() of its own thread group (no atexit
 * handlers: they live in the caller's memory).  Its result and failure
 * detail come back through a MAP_SHARED page: valgrind runs CLONE_VM |
 * CLONE_VFORK as a plain fork, where nothing else it writes would.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "inject_helper.h"
#include "internal.h"
#include "syscall.h"

#if defined(__SANITIZE_ADDRESS__)
#define HELPER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HELPER_ASAN 1
#endif
#endif
#ifdef HELPER_ASAN
#include <sanitizer/asan_interface.h>
#endif

/* The helper's stack; only the pages it touches are allocated. */
#define HELPER_STACK (1024 * 1024)
#define HELPER_PAGE 4096

/* The page the helper's request and results live in (shared, also under valgrind). */
struct helper_page {
	long (*fn)(void *arg);
	void *arg;
	pid_t caller; /* the process whose request this is */
	int done;     /* fn returned and its results are here */
	long ret;
	int has_detail;
	char detail[256]; /* fn's failure detail */
};

/* In a helper: the pid of the process it works for (it shares that thread's TLS). */
static __thread pid_t helper_caller;

static int helper_main(void *arg)
{
	struct helper_page *p = arg;
	uint64_t all = ~0ULL; /* the kernel's sigset_t, 64 signals on every arch */
	struct {
		void (*handler)(int);
		unsigned long flags;
		void (*restorer)(void);
		uint64_t mask;
	} dfl = { SIG_DFL, 0, NULL, 0 };
	const char *d;

	/* Raw, so that glibc's internal signals are blocked too: nothing may stop it half-way. */
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, sizeof(all));
	/*
	 * Out of the caller's process group, so that a kill of the group
	 * misses it; not a new session, which would be a scheduler
	 * autogroup of its own, far behind a busy target's.
	 */
	setpgid(0, 0);
	/*
	 * Its waits sleep until SIGCHLD (inject_session.c), which a caller's
	 * SA_NOCLDSTOP would suppress for the tracee's stops: the default
	 * here, in the helper's own copy of the handlers.  Raw, past any
	 * sanitizer's interceptor.
	 */
	syscall(SYS_rt_sigaction, SIGCHLD, &dfl, NULL, sizeof(all));
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	helper_caller = p->caller;
	p->ret = p->fn(p->arg);
	d = report_take_pending();
	if (d) {
		snprintf(p->detail, sizeof(p->detail), "%s", d);
		p->has_detail = 1;
	}
	helper_caller = 0;
	__atomic_store_n(&p->done, 1, __ATOMIC_RELEASE);
	/*
	 * Not through a noreturn function: ASan would take this stack for a
	 * stack switch it was not told of and warn.
	 */
	syscall(SYS_exit_group, 0);
	return 0; /* not reached */
}

long inject_helper_run(long (*fn)(void *arg), void *arg)
{
	size_t len = 2 * HELPER_PAGE + HELPER_STACK;
	char before_buf[256] = "";
	const char *before;
	struct helper_page *p;
	sigset_t all, old;
	siginfo_t si;
	long ret;
	pid_t pid;
	int e = 0;

	p = sys_mmap_anon_flags(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (!p) {
		report_set_detail("no memory for the inject helper process's stack");
		return -ENOMEM;
	}
	mprotect((char *)p + HELPER_PAGE, HELPER_PAGE, PROT_NONE); /* stack guard */
	p->fn = fn;
	p->arg = arg;
	p->caller = getpid();
	/* The detail noted before the request stays unless the request notes one. */
	before = report_take_pending();
	if (before)
		snprintf(before_buf, sizeof(before_buf), "%s", before);

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = clone(helper_main, (char *)p + len, CLONE_VM | CLONE_VFORK, p);
	if (pid < 0)
		e = errno;
	/* Until it is a zombie, it may still be the target's tracer: wait for that. */
	while (pid > 0 && waitid(P_PID, (id_t)pid, &si, WEXITED | __WALL) < 0 && errno == EINTR)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	helper_caller = 0; /* a helper killed before it could */

	if (pid < 0) {
		report_set_detail("could not start the inject helper process: %s", strerror(e));
		ret = -e;
	} else if (!__atomic_load_n(&p->done, __ATOMIC_ACQUIRE)) {
		report_set_detail("the inject helper process %d was killed before it finished: the "
				  "target may not have been restored",
				  (int)pid);
		ret = -EIO;
	} else {
		ret = p->ret;
		if (p->has_detail)
			report_set_detail("%s", p->detail);
		else if (before)
			report_set_detail("%s", before_buf);
	}
#ifdef HELPER_ASAN
	/* Its outermost frames never returned: their redzones are still marked. */
	ASAN_UNPOISON_MEMORY_REGION(p, len);
#endif
	sys_munmap(p, len);
	return ret;
}

pid_t inject_caller_pid(void)
{
	return helper_caller ? helper_caller : getpid();
}

bool inject_tracer_is_ours(long tracer)
{
	pid_t caller = inject_caller_pid();
	char path[64], buf[4096];
	const char *p;

	if (tracer == (long)getpid() || tracer == (long)caller)
		return true;
	/* Another thread's helper: a child of the caller. */
	snprintf(path, sizeof(path), "/proc/%ld/status", tracer);
	if (sys_read_file(path, buf, sizeof(buf)) <= 0 || !(p = strstr(buf, "\nPPid:")))
		return false;
	return strtol(p + 6, NULL, 10) == (long)caller;
}
