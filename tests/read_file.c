// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * read_file(): the one reader of small /proc and sysfs files for the
 * tests, the guests' checks and the bench, without Check so that all
 * three link it.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "read_file.h"

ssize_t read_file(const char *path, char *buf, size_t len)
{
	size_t have = 0;
	ssize_t n = 1;
	int fd, err = 0;

	if (len == 0) {
		errno = ENOSPC;
		return -1;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	while (have < len - 1) {
		n = read(fd, buf + have, len - 1 - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		have += (size_t)n;
	}
	if (n < 0) {
		err = errno;
	} else if (n > 0) { /* @buf is full: the file must end here */
		char more;

		n = read(fd, &more, 1);
		err = n < 0 ? errno : n > 0 ? ENOSPC : 0;
	}
	close(fd);
	if (err) {
		errno = err;
		return -1;
	}
	buf[have] = 0;
	return (ssize_t)have;
}
