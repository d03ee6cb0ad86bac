// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl and thpd: reading small /proc files and the fields of status, smaps_rollup and stat. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc_read.h"

ssize_t proc_read_at(int dirfd, const char *name, char *buf, size_t cap)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n = 0, total = 0;

	if (fd < 0)
		return -1;
	/*
	 * The files read here (stat, statm, status, smaps_rollup, cgroup,
	 * sysctls) fill a read() as far as they reach: a short one is the end,
	 * and top saves a call per process.  environ and cmdline, which give a
	 * page per read(), go through proc_read_alloc().
	 */
	while ((size_t)total < cap - 1 &&
	       (n = read(fd, buf + total, cap - 1 - (size_t)total)) > 0) {
		total += n;
		if ((size_t)n < cap - 1 - (size_t)(total - n))
			break;
	}
	close(fd);
	buf[total] = '\0';
	return n < 0 && !total ? -1 : total;
}

ssize_t proc_read_pid(pid_t pid, const char *name, char *buf, size_t cap)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	return proc_read_at(AT_FDCWD, path, buf, cap);
}

ssize_t proc_read_entry(int procfd, const char *pid, const char *name, char *buf, size_t cap)
{
	char path[300];

	snprintf(path, sizeof(path), "%s/%s", pid, name);
	return proc_read_at(procfd, path, buf, cap);
}

char *proc_read_alloc(const char *path, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (!buf || fd < 0) {
		free(buf);
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	while ((r = read(fd, buf + n, cap - n - 1)) > 0) {
		n += (size_t)r;
		if (n + 1 == cap) {
			char *b = cap < (1u << 20) ? realloc(buf, cap * 2) : NULL;

			if (!b)
				break;
			buf = b;
			cap *= 2;
		}
	}
	close(fd);
	buf[n] = 0;
	*len = n;
	return buf;
}

/* The value after "KEY:" at the start of a line, or NULL. */
static const char *field_value(const char *buf, const char *key)
{
	size_t n = strlen(key);

	for (const char *p = buf; (p = strstr(p, key)); p += n)
		if ((p == buf || p[-1] == '\n') && p[n] == ':')
			return p + n + 1;
	return NULL;
}

bool proc_field(const char *buf, const char *key, unsigned long long *val)
{
	const char *v = field_value(buf, key);
	char *end;

	if (!v)
		return false;
	*val = strtoull(v, &end, 10);
	return end != v;
}

uint64_t proc_field_kb(const char *buf, const char *key)
{
	const char *v = field_value(buf, key);

	return v ? strtoull(v, NULL, 10) * 1024 : 0;
}

bool proc_stat_field(const char *stat, int field, long long *val)
{
	/* The command name may hold spaces and ")": field 3 follows its last ")". */
	const char *p = strrchr(stat, ')');
	char *end;

	for (int i = 2; p && i < field; i++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p || field < 3)
		return false;
	*val = strtoll(p, &end, 10);
	return end != p;
}

bool proc_stat_comm(const char *stat, char *comm, size_t cap)
{
	const char *lp = strchr(stat, '('), *rp = strrchr(stat, ')');
	size_t len;

	if (!lp || !rp || rp < lp)
		return false;
	len = (size_t)(rp - lp - 1);
	if (len >= cap)
		len = cap - 1;
	memcpy(comm, lp + 1, len);
	comm[len] = '\0';
	return true;
}
