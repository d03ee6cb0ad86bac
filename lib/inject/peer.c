// SPDX-License-Identifier: LGPL-2.1-or-later
/*
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
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "internal.h"
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

int target_dumpable(const struct thp_target *t)
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
	const char *p = strstr(buf, key);

	if (!p || sscanf(p + strlen(key), "%u %u %u", &id[0], &id[1], &id[2]) != 3)
		return -EIO;
	return 0;
}

static int creds_from_proc(const struct thp_target *t, struct peer_creds *c)
{
	char path[64], buf[4096];
	long n;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)t->pid);
	n = sys_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
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

int target_is_peer(const struct thp_target *t)
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
