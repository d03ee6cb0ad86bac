// SPDX-License-Identifier: LGPL-2.1-or-later
/* Which process a request targets: self, or the process behind a pidfd. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "internal.h"
#include "syscall.h"

/*
 * The pid behind a pidfd, from /proc/self/fdinfo ("Pid:" line; -1 if
 * exited).  Sets the detail on failure.
 */
static int pidfd_to_pid(int pidfd, pid_t *pid)
{
	char path[64], buf[1024];
	char *line;
	long n;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", pidfd);
	n = sys_read_file(path, buf, sizeof(buf));
	if (n == -ENOENT && fcntl(pidfd, F_GETFD) >= 0) {
		/* An open descriptor has an fdinfo file wherever procfs is. */
		report_set_detail("%s does not exist: /proc is not mounted (libthp needs procfs "
				  "for another process)", path);
		return -ENOENT;
	}
	if (n == -ENOENT || n == 0) {
		report_set_detail("descriptor %d is not open", pidfd);
		return -EBADF;
	}
	if (n < 0) {
		report_set_detail("cannot read %s: %s", path, strerror((int)-n));
		return (int)n;
	}
	line = strstr(buf, "\nPid:");
	if (!line) {
		report_set_detail("descriptor %d is not a pidfd", pidfd);
		return -EBADF;
	}
	*pid = (pid_t)strtol(line + 5, NULL, 10);
	if (*pid <= 0) {
		report_set_detail("the process behind pidfd %d has exited", pidfd);
		return -ESRCH;
	}
	return 0;
}

int target_open(int pidfd, struct thp_target *t)
{
	const struct thp_caps *c = caps_get();
	int err;

	memset(t, 0, sizeof(*t));
	t->pidfd = -1;
	if (pidfd == THP_SELF) {
		/* No getpid() here: it is a system call, and self needs no pid. */
		t->self = true;
		t->pid = 0;
		if (c->pidfd_self) {
			t->pidfd = c->pidfd_self;
		}
		return 0;
	}
	if (pidfd < 0) {
		report_set_detail("pidfd %d is not a descriptor (use THP_SELF for the calling process)",
				  pidfd);
		return -EBADF;
	}
	err = pidfd_to_pid(pidfd, &t->pid);
	if (err)
		return err;
	t->pidfd = pidfd;
	t->self = t->pid == getpid();
	return 0;
}

/* Backends that need a real pidfd for the own process open one lazily. */
int target_need_pidfd(struct thp_target *t)
{
	int fd;

	if (t->pidfd != -1)
		return 0;
	fd = sys_pidfd_open(t->self ? getpid() : t->pid, 0);
	if (fd < 0)
		return fd;
	t->pidfd = fd;
	t->owns_pidfd = true;
	return 0;
}

void target_close(struct thp_target *t)
{
	if (t->owns_pidfd)
		sys_close(t->pidfd);
	t->owns_pidfd = false;
	t->pidfd = -1;
}

int target_alive(const struct thp_target *t)
{
	if (t->self || t->pidfd < 0)
		return 0;
	/*
	 * A pidfd polls readable once its process has exited, reaped or still
	 * a zombie.  (A zombie still takes signal 0, but its address space is
	 * gone: an empty walk of it must not look like success.)
	 */
	return sys_pidfd_poll_exited(t->pidfd) == 1 ? -ESRCH : 0;
}
