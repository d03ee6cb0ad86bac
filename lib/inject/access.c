// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * May the caller touch another process: the one place that answers it.
 *
 * As a peer (access_is_peer(), for thp_collapse() of another process):
 * Is another process the caller's peer: one that the caller's own user
 * could read without privilege?  The kernel's ptrace read check without
 * its capability overrides: the target's real, effective and saved user
 * and group IDs are the caller's filesystem IDs, and the target is
 * dumpable.  That leaves out another user's process, a set-user-ID,
 * set-group-ID or file-capability program (the AT_SECURE ones, which drop
 * LD_PRELOAD) and a process that made itself non-dumpable.
 *
 * Not done by setting capabilities aside and letting the kernel refuse:
 * CAP_SYS_ADMIN and CAP_PERFMON pass that check as well as CAP_SYS_PTRACE,
 * and without them root fails it for root's own processes too (their
 * permitted set is no longer a subset of the caller's).
 *
 * The answer comes from the pidfd (PIDFD_GET_INFO: credentials from 6.13,
 * dumpability from 6.16), so a reused PID cannot answer for the process;
 * before that from /proc/PID/status, checked against the pidfd afterwards.
 * There, dumpability shows only for a target not running as root: the
 * kernel hands the /proc files of a non-dumpable process to root.  Either
 * way it is asked of a live thread: an exited main thread has no mm, and
 * the kernel then reports it as neither dumpable nor not.
 *
 * Through ptrace (access_may_ptrace(), access_ptrace_refused(), for the
 * inject session):
 * May the inject backend ptrace a process: the refusals it can see before
 * touching the target (a non-dumpable target without CAP_SYS_PTRACE, Yama's
 * ptrace_scope), and the explanation of a PTRACE_SEIZE the kernel refused.
 * Up front where the answer is certain, so that nothing is tried; where it
 * is not (a PR_SET_PTRACER exception, another user namespace), the kernel
 * decides and its refusal is explained.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "access.h"
#include "compat.h"
#include "inject_helper.h"
#include "internal.h"
#include "proc.h"
#include "seccomp_filter.h"
#include "syscall.h"

struct peer_creds {
	uint32_t uid[3], gid[3]; /* real, effective, saved */
	int dumpable;            /* 1, 0, or -1: cannot be seen here */
};

static int creds_from_pidfd(const struct thp_target *t, struct peer_creds *c)
{
	struct thp_pidfd_info info;
	long r;

	memset(&info, 0, sizeof(info));
	info.mask = THP_PIDFD_INFO_CREDS | THP_PIDFD_INFO_COREDUMP;
	r = sys_ioctl(t->pidfd, THP_PIDFD_GET_INFO, &info);
	if (r < 0)
		return (int)r;
	c->uid[0] = info.ruid;
	c->uid[1] = info.euid;
	c->uid[2] = info.suid;
	c->gid[0] = info.rgid;
	c->gid[1] = info.egid;
	c->gid[2] = info.sgid;
	c->dumpable = -1;
	if ((info.mask & THP_PIDFD_INFO_COREDUMP) && (info.coredump_mask & THP_PIDFD_COREDUMP_KNOWN))
		c->dumpable = (info.coredump_mask & THP_PIDFD_COREDUMP_USER) != 0;
	return 0;
}

/*
 * The status of a live thread of @pid in @path (its main thread's while
 * that one lives): 0, or -ESRCH when none is left.
 */
static int live_thread_status(pid_t pid, char *path, size_t len, char *buf, size_t buflen)
{
	char dir[64];
	struct dirent *d;
	DIR *dp;
	int err = -ESRCH;

	snprintf(path, len, "/proc/%d/task/%d/status", (int)pid, (int)pid);
	if (sys_read_file(path, buf, buflen) > 0 && !strstr(buf, "\nState:\tZ") &&
	    !strstr(buf, "\nState:\tX"))
		return 0;
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	dp = opendir(dir);
	if (!dp)
		return -ESRCH;
	while (err && (d = readdir(dp))) {
		long tid = strtol(d->d_name, NULL, 10);

		if (tid <= 0 || tid == pid)
			continue;
		snprintf(path, len, "/proc/%d/task/%ld/status", (int)pid, tid);
		if (sys_read_file(path, buf, buflen) > 0 && !strstr(buf, "\nState:\tZ") &&
		    !strstr(buf, "\nState:\tX"))
			err = 0;
	}
	closedir(dp);
	return err;
}

/*
 * Dumpability from /proc: the kernel hands the files of a non-dumpable
 * process to root, so a live thread's status file owned by its effective
 * user means dumpable; a target running as root cannot tell.  1, 0 or -1.
 */
static int dumpable_from_proc(const struct thp_target *t)
{
	char path[80], buf[4096];
	const char *p;
	unsigned int euid, owner;

	/* No Vm lines: the thread is exiting, its mm gone, and its files are root's. */
	if (live_thread_status(t->pid, path, sizeof(path), buf, sizeof(buf)) ||
	    !strstr(buf, "\nVmSize:") || !(p = strstr(buf, "\nUid:")) ||
	    sscanf(p + 5, "%*u %u", &euid) != 1 || euid == 0 || sys_file_owner(path, &owner))
		return -1;
	return target_alive(t) ? -1 : owner == euid;
}

int access_dumpable(const struct thp_target *t)
{
	struct thp_pidfd_info info;

	memset(&info, 0, sizeof(info));
	info.mask = THP_PIDFD_INFO_COREDUMP;
	if (t->pidfd >= 0 && sys_ioctl(t->pidfd, THP_PIDFD_GET_INFO, &info) == 0 &&
	    (info.mask & THP_PIDFD_INFO_COREDUMP) && (info.coredump_mask & THP_PIDFD_COREDUMP_KNOWN))
		return (info.coredump_mask & THP_PIDFD_COREDUMP_USER) != 0;
	return dumpable_from_proc(t);
}

static int ids_from_status(const char *buf, const char *key, uint32_t id[3])
{
	const char *p = proc_status_find(buf, key);

	if (!p || sscanf(p, "%u %u %u", &id[0], &id[1], &id[2]) != 3)
		return -EIO;
	return 0;
}

static int creds_from_proc(const struct thp_target *t, struct peer_creds *c)
{
	char buf[4096];
	long n = proc_status_read(t->pid, 0, buf, sizeof(buf));
	int r;

	if (n < 0)
		return (int)n;
	r = ids_from_status(buf, "\nUid:", c->uid);
	if (!r)
		r = ids_from_status(buf, "\nGid:", c->gid);
	if (r)
		return r;
	c->dumpable = -1; /* asked below, of a live thread */
	/* Read by PID: still the process behind the pidfd? */
	return target_alive(t);
}

/*
 * The calling thread's filesystem IDs, which the kernel's ptrace check
 * compares: the fourth of /proc/thread-self/status's "Uid:" and "Gid:".
 * setfsuid(-1) answers too, but it is a system call that hardened units'
 * seccomp filters (systemd's @privileged) kill the caller for; it is
 * asked only where /proc cannot tell.
 */
static void caller_fs_ids(uint32_t *uid, uint32_t *gid)
{
	char buf[4096];
	const char *u, *g;

	if (sys_read_file("/proc/thread-self/status", buf, sizeof(buf)) > 0 &&
	    (u = strstr(buf, "\nUid:")) && (g = strstr(buf, "\nGid:")) &&
	    sscanf(u + 5, "%*u %*u %*u %u", uid) == 1 && sscanf(g + 5, "%*u %*u %*u %u", gid) == 1)
		return;
	*uid = sys_fsuid();
	*gid = sys_fsgid();
}

int access_is_peer(const struct thp_target *t)
{
	struct peer_creds c;
	uint32_t uid, gid;
	int r;

	if (t->self)
		return 1;
	caller_fs_ids(&uid, &gid);
	r = creds_from_pidfd(t, &c);
	if (r == -ESRCH)
		return r;
	if (r)
		r = creds_from_proc(t, &c);
	if (r)
		return r;
	if (c.dumpable < 0)
		c.dumpable = dumpable_from_proc(t);
	for (int i = 0; i < 3; i++)
		if (c.uid[i] != uid || c.gid[i] != gid) {
			report_set_detail("process %d is not the caller's peer: its real, effective and "
					  "saved user IDs are %u/%u/%u and group IDs %u/%u/%u, the "
					  "caller's %u and %u", (int)t->pid, c.uid[0], c.uid[1],
					  c.uid[2], c.gid[0], c.gid[1], c.gid[2], uid, gid);
			return 0;
		}
	if (c.dumpable == 0) {
		report_set_detail("process %d is not the caller's peer: it is not dumpable (a "
				  "set-user-ID, set-group-ID or file-capability program, or made so)",
				  (int)t->pid);
		return 0;
	}
	return 1;
}

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
static bool thread_exiting(pid_t pid)
{
	long v = 0;
	int r = proc_status_field(pid, 0, "\nState:", &v);

	if (r == -ENOENT)
		return false;
	return r || v == 'Z' || v == 'X';
}
/* Is the caller's process (not its inject helper) an ancestor of @pid (Yama's relation)? */
static bool caller_is_ancestor(pid_t pid)
{
	pid_t me = inject_caller_pid();

	for (int depth = 0; pid > 1 && depth < 4096; depth++) {
		long v = 0;

		if (proc_status_field(pid, 0, "\nPPid:", &v))
			return false;
		pid = (pid_t)v;
		if (pid == me)
			return true;
	}
	return false;
}

int access_may_ptrace(const struct thp_target *t, pid_t pid)
{
	bool cap = seccomp_filter_caller_has_cap(CAP_SYS_PTRACE_) == 1;
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
	if (!cap && access_dumpable(t) == 0 && caps_apply_to(pid)) {
		report_set_detail("process %d is not dumpable (PR_SET_DUMPABLE 0, or a set-user-ID "
				  "or file-capability program): only a caller with CAP_SYS_PTRACE "
				  "may ptrace it, and this one has none; nothing was changed",
				  (int)pid);
		return -EPERM;
	}
	return 0;
}

int access_ptrace_refused(const struct thp_target *t, pid_t pid, int e)
{
	bool cap = seccomp_filter_caller_has_cap(CAP_SYS_PTRACE_) == 1;
	long tracer = 0;
	int scope = yama_scope();

	if (e == ESRCH)
		return -ESRCH;
	/* A thread that is exiting (its process exits or exec()s) cannot be seized. */
	if (e == EPERM && thread_exiting(pid)) {
		report_set_detail("process %d is exiting or exec()ing", (int)pid);
		return -ESRCH;
	}
	if (proc_status_field(pid, 0, "\nTracerPid:", &tracer))
		tracer = 0;
	if (tracer) {
		report_set_detail("process %d is already traced by process %ld", (int)pid, tracer);
		return -EBUSY;
	}
	if (e != EPERM && e != EACCES) {
		report_set_detail("ptrace of process %d failed: %s", (int)pid, strerror(e));
		return -e;
	}
	if (!cap && access_dumpable(t) == 0)
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
