// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: what several of its files need: small /proc files, its own RSS, errno labels. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "util.h"

static const int counted_errnos[THPD_NERRNO - 1] = { EAGAIN, EBUSY, ENOMEM, EINVAL, EPERM };

const char *thpd_errno_label(int slot)
{
	static const char *const names[THPD_NERRNO] = { "EAGAIN", "EBUSY", "ENOMEM", "EINVAL",
							"EPERM", "other" };

	return slot >= 0 && slot < THPD_NERRNO ? names[slot] : "other";
}

int thpd_errno_slot(int err)
{
	for (int i = 0; i < THPD_NERRNO - 1; i++)
		if (counted_errnos[i] == err)
			return i;
	return THPD_NERRNO - 1;
}

ssize_t thpd_read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

uint64_t thpd_rss_bytes(void)
{
	char buf[256];
	unsigned long size, rss;

	if (thpd_read_small("/proc/self/statm", buf, sizeof(buf)) <= 0)
		return 0;
	if (sscanf(buf, "%lu %lu", &size, &rss) != 2)
		return 0;
	return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}
