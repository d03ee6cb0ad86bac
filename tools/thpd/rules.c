// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: which rule a process falls under: cgroup v2 path, executable, user; first match wins. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "thpd.h"

/* The "0::/path" line of /proc/PID/cgroup, leading '/' stripped. */
static int read_cgroup(pid_t pid, char *out, size_t cap)
{
	char path[64], buf[4096];
	const char *p;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (thpd_read_small(path, buf, sizeof(buf)) < 0)
		return -1;
	if (!strncmp(buf, "0::", 3))
		p = buf + 3;
	else if ((p = strstr(buf, "\n0::")))
		p += 4;
	else
		return 1; /* no v2 hierarchy: no cgroup path to match */
	if (*p == '/')
		p++;
	n = strcspn(p, "\n");
	if (n >= cap)
		n = cap - 1;
	memcpy(out, p, n);
	out[n] = '\0';
	return 0;
}

static int read_uid(pid_t pid, uid_t *uid)
{
	char path[64], buf[2048];
	unsigned long long u;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (thpd_read_small(path, buf, sizeof(buf)) < 0)
		return -1;
	if (!thpd_field(buf, "Uid", &u))
		return 1;
	*uid = (uid_t)u;
	return 0;
}

int thpd_ident_read(pid_t pid, const struct thpd_config *c, struct thpd_ident *id)
{
	char path[64];
	ssize_t n;
	int r;

	memset(id, 0, sizeof(*id));
	r = read_cgroup(pid, id->cgroup, sizeof(id->cgroup));
	if (r < 0)
		return -1;
	id->have_cgroup = r == 0;
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, id->exe, sizeof(id->exe) - 1);
	if (n > 0) {
		id->exe[n] = '\0';
		id->have_exe = true;
	} else if (errno == ESRCH) {
		return -1;
	}
	/* Kernel threads have no executable and are never matched. */
	if (!id->have_exe)
		return 1;
	if (c->uses_user) {
		r = read_uid(pid, &id->uid);
		if (r < 0)
			return -1;
		id->have_uid = r == 0;
	}
	return 0;
}

int thpd_ident_cgroup(pid_t pid, struct thpd_ident *id)
{
	int r = read_cgroup(pid, id->cgroup, sizeof(id->cgroup));

	if (r < 0)
		return -1;
	id->have_cgroup = r == 0;
	return 0;
}

int thpd_rules_match(const struct thpd_config *c, const struct thpd_ident *id)
{
	for (size_t i = 0; i < c->nrules; i++) {
		const struct thpd_rule *r = &c->rules[i];

		if (r->conf.cgroup && (!id->have_cgroup || fnmatch(r->conf.cgroup, id->cgroup, 0) != 0))
			continue;
		if (r->conf.exe && (!id->have_exe || fnmatch(r->conf.exe, id->exe, 0) != 0))
			continue;
		if (r->conf.user && (!id->have_uid || id->uid != r->conf.uid))
			continue;
		return (int)i;
	}
	return -1;
}
