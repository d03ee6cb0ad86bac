/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The inject session (inject_session.c), for the calls built on it. */
#ifndef THP_INJECT_SESSION_H
#define THP_INJECT_SESSION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "inject_arch.h"

#include "internal.h"
#include "seccomp_filter.h"

struct inject_session {
	const struct thp_target *t;
	pid_t tid;
	unsigned long syscall_ip;  /* a syscall instruction in the target's vDSO */
	struct inject_regs saved; /* what the thread resumes with */
	bool seized;
	bool stopped;
	bool own_child;	    /* the caller is its parent: never reap it */
	unsigned int calls; /* injected calls started: could any have run? */
	bool filtered;	    /* seccomp filter mode: each call is vetted by sf */
	bool unstoppable;   /* a stop did not come in time: no more waits for one */
	struct seccomp_filter_set sf;
	/*
	 * The thread stops inside the kernel's signal path (an event stop, or
	 * a signal-delivery-stop whose signal is dropped): detached there with
	 * @saved, the kernel itself restarts its interrupted call or fails it
	 * with EINTR.  After a call it stops at syscall exit instead.
	 */
	bool in_signal_path;
	/* A held thread's exec() killed the stopped thread and was let go. */
	bool replaced;
	/*
	 * The target's other threads, seized and stopped for the session so
	 * that none installs a filter or flips a dispatch selector meanwhile.
	 * A helper process that exits abandons them safely: the kernel
	 * detaches every tracee of an exiting tracer.
	 */
	struct inject_held {
		pid_t tid;
		bool stopped;
	} *held;
	unsigned int nheld, held_cap;
	/* SIGSYS unblocked in the stopped thread for the calls; its own mask. */
	bool sigsys_unblocked;
	uint64_t sigmask;
};

/* Seize and stop a thread of @t; 0 or -errno with a detail. */
int inject_begin(struct inject_session *s, const struct thp_target *t);
/* 0 when @t's seccomp filters let the call through (@probe: look for new ones first). */
int inject_vet(struct inject_session *s, bool probe, long nr, unsigned long a1, unsigned long a2,
	       unsigned long a3, unsigned long a4, unsigned long a5);
/* Run one call as the stopped thread: its result, or *err (-ESRCH: gone). */
long inject_syscall(struct inject_session *s, long nr, unsigned long a1, unsigned long a2,
		    unsigned long a3, unsigned long a4, unsigned long a5, int *err);
/* End the session whatever happened; a target gone folds into -ESRCH. */
int inject_finish(struct inject_session *s, const struct thp_target *t, int err);

/* Shared by inject_session.c, inject_check.c and inject_hold.c. */
/* The thread to stop: the main thread, or the first other live one; 0 or -errno. */
int inject_check_thread(pid_t pid, pid_t *tid);
/* A seccomp mode (Seccomp: @mode) the session can handle: 0, or -EPERM with detail. */
int inject_check_seccomp(pid_t pid, long mode);
/* Refusals before any stop (traced, seccomp, ptrace rights): 0, -EAGAIN or -errno. */
int inject_check_access(const struct thp_target *t, pid_t pid, pid_t tid);
/*
 * Syscall user dispatch would not turn the call into a SIGSYS: 0, 1 (safe
 * with SIGSYS unblocked for the call, which inject_session.c then does),
 * or -EPERM / -ESRCH.
 */
int inject_check_dispatch(struct inject_session *s);
/* @sig is a SIGSYS that the injected call itself raised. */
bool inject_check_sigsys_ours(const struct inject_session *s, int sig);
/* The stopped thread is still in our stop (not killed by an exit or exec(); inject_hold.c). */
bool inject_still_stopped(const struct inject_session *s);
/* Seize and stop every other thread of the target (inject_hold.c); 0 or -errno. */
int inject_hold_others(struct inject_session *s);
/* Let the held threads go. */
void inject_release_held(struct inject_session *s);

#endif /* THP_INJECT_SESSION_H */
