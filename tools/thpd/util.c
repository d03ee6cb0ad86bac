// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: what several files need: small /proc files and their fields, auxv, RSS, fds, start time, errno labels. */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
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

bool thpd_field(const char *buf, const char *key, unsigned long long *val)
{
	size_t k = strlen(key);

	for (const char *p = buf; p;) {
		if (!strncmp(p, key, k) && p[k] == ':')
			return sscanf(p + k + 1, "%llu", val) == 1;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

ssize_t thpd_read_auxv(pid_t pid, uint64_t *aux, size_t cap)
{
	char path[64];
	ssize_t n;
	int fd, e;

	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, aux, cap * sizeof(*aux));
	e = errno;
	close(fd);
	errno = e;
	return n < 0 ? -1 : n / (ssize_t)sizeof(*aux);
}

bool thpd_auxv_value(const uint64_t *aux, ssize_t n, uint64_t type, uint64_t *val)
{
	for (ssize_t i = 0; i + 1 < n; i += 2) {
		if (aux[i] == type) {
			*val = aux[i + 1];
			return true;
		}
		if (aux[i] == AT_NULL)
			break;
	}
	return false;
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

long thpd_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the listing's own descriptor */
}

double thpd_start_time_s(void)
{
	char buf[1024], *p;
	unsigned long long start = 0, btime = 0;
	long tck = sysconf(_SC_CLK_TCK);
	FILE *f;
	int i;

	f = fopen("/proc/self/stat", "re");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	p = p ? strrchr(buf, ')') : NULL;
	/* Field 22 is starttime: 20 spaces after the ")" that ends field 2. */
	for (i = 0; p && i < 20; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", &start) != 1 || tck <= 0)
		return 0;
	/* /proc/stat grows with the CPUs: read line by line, not whole. */
	f = fopen("/proc/stat", "re");
	if (!f)
		return 0;
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "btime %llu", &btime) == 1)
			break;
	fclose(f);
	return btime ? (double)btime + (double)start / (double)tck : 0;
}
