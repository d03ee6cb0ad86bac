// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * May the inject backend ptrace a process: the refusals it can see before
 * touching the target (a non-dumpable target without CAP_SYS_PTRACE, Yama's
 * ptrace_scope), and the explanation of a PTRACE_SEIZE the kernel refused.
 * Up front where the answer is certain, so that nothing is tried; where it
 * is not (a PR_SET_PTRACER exception, another user namespace), the kernel
 * decides and its refusal is explained.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "inject_helper.h"
#include "inject_access.h"
#include "internal.h"
#include "seccomp_filter.h"
#include "syscall.h"

#define CAP_SYS_PTRACE_ 19
#define YAMA_SCOPE "/proc/sys/kernel/yama/ptrace_scope"

/* Yama's ptrace_scope, or -1 without Yama. */
static int yama_scope(void)
{
	char buf[16];

	if (sys_read_file(YAMA_SCOPE, buf, sizeof(buf)) <= 0)
		return -1;
	return (int)strtol(buf, NULL, 10);
}

/*
 * 1 when the caller's capabilities are those it has in @pid's user
 * namespace (the same one), or when it cannot even read which namespace
 * that is (then the kernel's ptrace read check failed: an attach would
 * too); 0 when another namespace may give it more.
 */
static int caps_apply_to(pid_t pid)
{
	char path[64], mine[64], theirs[64];
	ssize_t a, b;

	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	b = readlink(path, theirs, sizeof(theirs) - 1);
	if (b < 0)
		return errno == EACCES || errno == EPERM;
	a = readlink("/proc/self/ns/user", mine, sizeof(mine) - 1);
	return a == b && memcmp(mine, theirs, (size_t)a) == 0;
}

/* Its status gone, or State Z (zombie) or X (dead): @buf holds the text read. */
static bool thread_exiting(const char *path, char *buf, size_t len)
{
	const char *p;

	if (sys_read_file(path, buf, len) <= 0)
		return true;
	p = strstr(buf, "\nState:");
	if (!p)
		return false;
	p += 7;
	p += strspn(p, " \t");
	return *p == 'Z' || *p == 'X';
}
/* Is the caller's process (not its inject helper) an ancestor of @pid (Yama's relation)? */
static bool caller_is_ancestor(pid_t pid)
{
	pid_t me = inject_caller_pid();

	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		char path[64], buf[4096];
		const char *p;

		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
		if (sys_read_file(path, buf, sizeof(buf)) <= 0 || !(p = strstr(buf, "\nPPid:")))
			return false;
		pid = (pid_t)strtol(p + 6, NULL, 10);
		if (pid == me)
			return true;
	}
	return false;
}

int inject_may_ptrace(const struct thp_target *t, pid_t pid)
{
	bool cap = sf_caller_has_cap(CAP_SYS_PTRACE_) == 1;
	int scope = yama_scope();

	if (scope >= 3) {
		report_set_detail("Yama's ptrace_scope is %d (%s): no process may ptrace another, "
				  "so the inject backend cannot reach process %d", scope, YAMA_SCOPE,
				  (int)pid);
		return -EPERM;
	}
	if (scope == 2 && !cap && caps_apply_to(pid)) {
		report_set_detail("Yama's ptrace_scope is 2 (%s): only a caller with CAP_SYS_PTRACE "
				  "may ptrace process %d, and this one has none", YAMA_SCOPE,
				  (int)pid);
		return -EPERM;
	}
	if (!cap && target_dumpable(t) == 0 && caps_apply_to(pid)) {
		report_set_detail("process %d is not dumpable (PR_SET_DUMPABLE 0, or a set-user-ID "
				  "or file-capability program): only a caller with CAP_SYS_PTRACE "
				  "may ptrace it, and this one has none; nothing was changed",
				  (int)pid);
		return -EPERM;
	}
	return 0;
}

int inject_ptrace_refused(const struct thp_target *t, pid_t pid, int e)
{
	bool cap = sf_caller_has_cap(CAP_SYS_PTRACE_) == 1;
	char path[64], buf[4096];
	const char *p;
	long tracer = 0;
	int scope = yama_scope();

	if (e == ESRCH)
		return -ESRCH;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	/* A thread that is exiting (its process exits or exec()s) cannot be seized. */
	if (e == EPERM && thread_exiting(path, buf, sizeof(buf))) {
		report_set_detail("process %d is exiting or exec()ing", (int)pid);
		return -ESRCH;
	}
	if (sys_read_file(path, buf, sizeof(buf)) > 0 && (p = strstr(buf, "\nTracerPid:")))
		tracer = strtol(p + 11, NULL, 10);
	if (tracer) {
		report_set_detail("process %d is already traced by process %ld", (int)pid, tracer);
		return -EBUSY;
	}
	if (e != EPERM && e != EACCES) {
		report_set_detail("ptrace of process %d failed: %s", (int)pid, strerror(e));
		return -e;
	}
	if (!cap && target_dumpable(t) == 0)
		report_set_detail("ptrace of process %d denied: it is not dumpable, and the caller "
				  "has no CAP_SYS_PTRACE over it", (int)pid);
	else if (scope == 1 && !cap && caller_is_ancestor(pid))
		report_set_detail("ptrace of process %d denied by Yama (ptrace_scope 1): the "
				  "tracer is the caller's inject helper process (which restores the "
				  "target even if the caller is killed), and Yama lets only an "
				  "ancestor trace; run with CAP_SYS_PTRACE, or have the target name "
				  "the caller with PR_SET_PTRACER", (int)pid);
	else if (scope == 1 && !cap)
		report_set_detail("ptrace of process %d denied by Yama (ptrace_scope 1): the caller "
				  "is not its ancestor, has no CAP_SYS_PTRACE and was not named with "
				  "PR_SET_PTRACER", (int)pid);
	else if (scope == 2 && !cap)
		report_set_detail("ptrace of process %d denied by Yama (ptrace_scope 2): the caller "
				  "has no CAP_SYS_PTRACE over it", (int)pid);
	else if (!cap)
		report_set_detail("ptrace of process %d denied: the caller has no CAP_SYS_PTRACE, "
				  "so the process must run as the caller's user, without gaining "
				  "privileges, in its user namespace; or a security module refused",
				  (int)pid);
	else
		report_set_detail("ptrace of process %d denied although the caller has "
				  "CAP_SYS_PTRACE: a security module (AppArmor, SELinux, ...) or "
				  "the target's user namespace refused it", (int)pid);
	return -EPERM;
}
