// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: which rule a process falls under: cgroup v2 path, executable, user, container; first match wins. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "container.h"
#include "log.h"
#include "thpd.h"

/* The container of the process whose /proc/PID/cgroup is @text: the new
 * reference taken before the old one is dropped (the same container is not
 * forgotten and read again). */
static void set_container(struct thpd_ident *id, const char *text)
{
	struct thpd_ctr *old = id->ctr;

	id->ctr = thpd_ctr_get(text);
	thpd_ctr_put(old);
}

void thpd_ident_release(struct thpd_ident *id)
{
	thpd_ctr_put(id->ctr);
	id->ctr = NULL;
}

/* The "0::/path" line of /proc/PID/cgroup, leading '/' stripped; its container into @id. */
static int read_cgroup(pid_t pid, char *out, size_t cap, struct thpd_ident *id)
{
	char path[64], buf[4096];
	const char *p;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if (thpd_read_small(path, buf, sizeof(buf)) < 0)
		return -1;
	set_container(id, buf);
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

	struct thpd_ctr *ctr = id->ctr;

	memset(id, 0, sizeof(*id));
	id->ctr = ctr;
	r = read_cgroup(pid, id->cgroup, sizeof(id->cgroup), id);
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
	int r = read_cgroup(pid, id->cgroup, sizeof(id->cgroup), id);

	if (r < 0)
		return -1;
	id->have_cgroup = r == 0;
	return 0;
}

/* A glob over a field of the container: no container or no value matches nothing. */
static bool glob_ok(const char *glob, const char *value)
{
	return !glob || (value && fnmatch(glob, value, 0) == 0);
}

static bool kv_ok(const struct thpd_kv_match *m, size_t n, const struct thpd_ctr *ctr,
		  const char *(*get)(const struct thpd_ctr *, const char *))
{
	for (size_t i = 0; i < n; i++)
		if (!glob_ok(m[i].glob, get(ctr, m[i].key)))
			return false;
	return true;
}

int thpd_proc_policy(const struct thpd_rule *r, const struct thpd_ident *id)
{
	struct thpd_ctr *ctr = id->ctr;

	if (!r->conf.policy_from_annotation || !ctr || ctr->policy == -1)
		return r->conf.policy;
	if (ctr->policy >= 0)
		return ctr->policy;
	/* Invalid: said once per container, and the rule's own policy holds. */
	if (!ctr->policy_logged) {
		const char *v = thpd_ctr_annotation(ctr, THPD_POLICY_ANNOTATION);
		char shown[65];
		size_t n = 0;

		/* Whoever wrote the pod spec wrote it: printable ASCII only into the log. */
		for (; v && v[n] && n < sizeof(shown) - 1; n++)
			shown[n] = v[n] >= 0x20 && v[n] < 0x7f ? v[n] : '?';
		shown[n] = '\0';
		ctr->policy_logged = true;
		thpd_log(LOG_WARNING,
			 "container %.12s: " THPD_POLICY_ANNOTATION " \"%s\" is not never, nohuge, "
			 "system or huge: ignored (rule %s)",
			 ctr->id, shown, r->conf.name);
	}
	return r->conf.policy;
}

int thpd_rules_match(const struct thpd_config *c, const struct thpd_ident *id)
{
	for (size_t i = 0; i < c->nrules; i++) {
		const struct thpd_rule *r = &c->rules[i];
		const struct thpd_ctr *ctr = id->ctr;

		if (r->conf.cgroup && (!id->have_cgroup || fnmatch(r->conf.cgroup, id->cgroup, 0) != 0))
			continue;
		if (r->conf.exe && (!id->have_exe || fnmatch(r->conf.exe, id->exe, 0) != 0))
			continue;
		if (r->conf.user && (!id->have_uid || id->uid != r->conf.uid))
			continue;
		if (!glob_ok(r->conf.container_name, ctr ? ctr->name : NULL) ||
		    !glob_ok(r->conf.pod_namespace, ctr ? ctr->pod_namespace : NULL) ||
		    !glob_ok(r->conf.pod_name, ctr ? ctr->pod_name : NULL) ||
		    !kv_ok(r->conf.labels, r->conf.nlabels, ctr, thpd_ctr_label) ||
		    !kv_ok(r->conf.annotations, r->conf.nannotations, ctr, thpd_ctr_annotation))
			continue;
		/* policy_from_annotation without a policy of its own: the annotated only. */
		if (thpd_proc_policy(r, id) < 0)
			continue;
		return (int)i;
	}
	return -1;
}
