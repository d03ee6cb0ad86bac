// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: metrics_file =: the Prometheus text written beside and renamed, never through a link. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "thpd.h"

/* Only root (or thpd's user) can change the entries of this directory. */
static bool dir_trusted(const struct stat *sb)
{
	return (sb->st_uid == 0 || sb->st_uid == geteuid()) && !(sb->st_mode & (S_IWGRP | S_IWOTH));
}

/*
 * The directory of the metrics file, opened one component at a time, or
 * -errno with *@why saying what was wrong.  A symbolic link on the way is
 * followed only where it sits in a directory that only root can change
 * (root made it, as /var/run); the directory itself is never a link.  A
 * directory that its group or others can write is refused (-EPERM) unless
 * it is sticky and root's, as /tmp: there others cannot replace or remove
 * root's files.  Its owner may be another user (node_exporter's): the file
 * is created and renamed without following a link, so an owner can only
 * stop the write, not redirect it.
 */
static int open_dir(const char *dir, const char **why)
{
	char buf[4096], *save = NULL, *c;
	int fd = open(dir[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), e;
	struct stat sb;

	*why = NULL;
	snprintf(buf, sizeof(buf), "%s", dir);
	c = strtok_r(buf, "/", &save);
	while (fd >= 0 && c) {
		char *next = strtok_r(NULL, "/", &save);
		int nfd = openat(fd, c, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		e = errno;
		if (nfd < 0 && e == ENOTDIR && fstatat(fd, c, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISLNK(sb.st_mode)) {
			if (next && fstat(fd, &sb) == 0 && dir_trusted(&sb)) {
				nfd = openat(fd, c, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				e = errno;
			} else {
				*why = next ? "a symbolic link on its path sits in a directory others can change"
					    : "its directory is a symbolic link";
				e = ELOOP;
			}
		}
		close(fd);
		fd = nfd;
		errno = e;
		c = next;
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) != 0) {
		e = errno;
		close(fd);
		return -e;
	}
	if ((sb.st_mode & (S_IWGRP | S_IWOTH)) && !((sb.st_mode & S_ISVTX) && sb.st_uid == 0)) {
		close(fd);
		*why = "its directory is writable by other users and not a sticky directory of root's";
		return -EPERM;
	}
	return fd;
}

static int write_all(int fd, const char *text, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		off += (size_t)w;
	}
	return 0;
}

static int write_file(const struct thpd_state *st, const char *path, const char **why)
{
	char dir[4096], tmp[4096];
	const char *base = strrchr(path, '/');
	size_t len;
	char *text;
	int dfd, fd, ret;

	*why = NULL;
	if (!*path || (base && !base[1]) || strlen(path) >= sizeof(dir) - 8) {
		*why = "not the path of a file";
		return -EINVAL;
	}
	if (!base) /* --metrics-file NAME: in the working directory */
		snprintf(dir, sizeof(dir), ".");
	else
		snprintf(dir, sizeof(dir), "%.*s", base == path ? 1 : (int)(base - path), path);
	base = base ? base + 1 : path;
	snprintf(tmp, sizeof(tmp), "%s.tmp", base);
	dfd = open_dir(dir, why);
	if (dfd < 0)
		return dfd;
	text = thpd_metrics_text(st, &len);
	if (!text) {
		close(dfd);
		return -ENOMEM;
	}
	/*
	 * Written beside it and renamed: node_exporter never reads half a file.
	 * Created afresh, never through a link: whatever is at the temporary
	 * name (a crash's leftover or a planted link) is removed, not followed.
	 */
	for (int tries = 0;; tries++) {
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST || tries > 0 || unlinkat(dfd, tmp, 0) != 0)
			break;
	}
	if (fd < 0) {
		ret = -errno;
		goto out;
	}
	ret = write_all(fd, text, len);
	if (close(fd) != 0 && !ret)
		ret = -errno;
	/* renameat() replaces a link at the final name; it never follows it. */
	if (!ret && renameat(dfd, tmp, dfd, base) != 0)
		ret = -errno;
	if (ret)
		unlinkat(dfd, tmp, 0);
out:
	free(text);
	close(dfd);
	return ret;
}

int thpd_metrics_write_file(const struct thpd_state *st, const char *path)
{
	/* One log line per new failure, not one per pass. */
	static int last_err;
	static char *last_path;
	const char *why;
	int r = write_file(st, path, &why);

	if (r != last_err || !last_path || strcmp(last_path, path) != 0) {
		if (r < 0 && why)
			thpd_log(LOG_ERR, "metrics file %s: not written: %s", path, why);
		else if (r < 0)
			thpd_log(LOG_WARNING, "metrics file %s: %s", path, strerror(-r));
		else if (last_err)
			thpd_log(LOG_INFO, "metrics file %s: written again", path);
		last_err = r;
		free(last_path);
		last_path = strdup(path);
	}
	return r;
}
