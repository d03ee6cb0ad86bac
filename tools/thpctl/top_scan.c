// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpctl top: one snapshot.  Per process: /proc/PID/stat (name, parent),
 * statm (no memory: a kernel thread, skipped), status (THP_enabled, uid),
 * smaps_rollup (Rss, Anonymous, AnonHugePages: the figures thpctl status
 * and the kernel agree on) and, with --cgroup, cgroup.  The policy's
 * source: thpd's rule when thpd lists the process, the process's own
 * prctl when THP_enabled is 0, thpctl run's agent when its parent is
 * thpctl, else the system-wide mode.  Bytes by folio size come from
 * thp_query() (pagemap and kpageflags), only with --folios: it walks every
 * page table entry.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <thp/thp.h>

#include "json_parse.h"
#include "thpctl.h"
#include "top.h"

/* The smallest anonymous size that can hold a PMD-sized page here. */
#define HUGE_MIN_BYTES (2u << 20)

/* Read /proc/PID/NAME (at most @cap - 1 bytes) into @buf; length or -1. */
static ssize_t read_proc(int dirfd, const char *name, char *buf, size_t cap)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n, total = 0;

	if (fd < 0)
		return -1;
	while ((size_t)total < cap - 1 &&
	       (n = read(fd, buf + total, cap - 1 - (size_t)total)) > 0)
		total += n;
	close(fd);
	buf[total] = '\0';
	return total;
}

static uint64_t field_kb(const char *text, const char *key)
{
	const char *p = text;
	size_t n = strlen(key);

	while ((p = strstr(p, key))) {
		if ((p == text || p[-1] == '\n') && p[n] == ':')
			return strtoull(p + n + 1, NULL, 10) * 1024;
		p += n;
	}
	return 0;
}

static void printable(char *dst, size_t cap, const char *src, size_t len)
{
	size_t j = 0;

	for (size_t i = 0; i < len && j + 1 < cap; i++)
		dst[j++] = isprint((unsigned char)src[i]) ? src[i] : '?';
	dst[j] = '\0';
}

/* Name, parent, owner, THP_enabled and the counters of /proc/PID/status. */
static bool read_status(const char *buf, struct top_proc *p)
{
	const char *name = strstr(buf, "Name:"), *t = strstr(buf, "\nTHP_enabled:");
	const char *ppid = strstr(buf, "\nPPid:"), *uid = strstr(buf, "\nUid:");

	if (!name || !ppid)
		return false;
	name += 5;
	name += strspn(name, " \t");
	printable(p->comm, sizeof(p->comm), name, strcspn(name, "\n"));
	p->ppid = (pid_t)strtol(ppid + 6, NULL, 10);
	if (uid)
		p->uid = (uid_t)strtoul(uid + 5, NULL, 10);
	if (t)
		p->thp_disabled = atoi(t + 13) == 0;
	p->rss = field_kb(buf, "VmRSS");
	p->anon = field_kb(buf, "RssAnon");
	return true;
}

static bool in_cgroup(int procfd, const char *pid, const char *prefix)
{
	char buf[4096], path[300], *line;
	size_t n = strlen(prefix);

	snprintf(path, sizeof(path), "%s/cgroup", pid);
	if (read_proc(procfd, path, buf, sizeof(buf)) <= 0)
		return false;
	/* cgroup v2's line is "0::/path". */
	for (line = buf; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
		if (!strncmp(line, "0::", 3) && !strncmp(line + 3, prefix, n) &&
		    (line[3 + n] == '\n' || line[3 + n] == '/' || line[3 + n] == '\0' ||
		     (n && prefix[n - 1] == '/')))
			return true;
	return false;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = ((const struct top_proc *)a)->pid, y = ((const struct top_proc *)b)->pid;

	return (x > y) - (x < y);
}

static const struct top_proc *find_pid(const struct top_proc *v, size_t n, pid_t pid)
{
	struct top_proc key = { .pid = pid };

	return n ? bsearch(&key, v, n, sizeof(*v), cmp_pid) : NULL;
}

static void folio_sizes(struct top_proc *p)
{
	struct thp_query_opts q = { .sz = sizeof(q), .flags = THP_QUERY_F_FOLIO_SIZES };
	int pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);

	if (pidfd < 0)
		return;
	q.pidfd = pidfd;
	if (thp_query(&q) >= 0 && q.folio_source != THP_FOLIO_SOURCE_NONE) {
		p->nr_sizes = (int)(q.nr_sizes < TOP_MAX_SIZES ? q.nr_sizes : TOP_MAX_SIZES);
		for (int i = 0; i < p->nr_sizes; i++) {
			p->sizes[i] = q.sizes[i].size;
			p->folio_bytes[i] = q.sizes[i].bytes;
		}
		p->base_bytes = q.anon_base_bytes;
	}
	close(pidfd);
}

/* The pid → rule and rule → policy of thpd's document. */
static void apply_thpd(const struct jval *doc, struct top_snapshot *s)
{
	const struct jval *procs = json_member(doc, "processes"), *rules = json_member(doc, "rules");

	for (const struct jval *e = procs ? procs->child : NULL; e; e = e->next) {
		pid_t pid = (pid_t)json_member_u64(e, "pid");
		const struct jval *rule = json_member(e, "rule");

		if (!rule || rule->type != J_STR)
			continue;
		for (size_t i = 0; i < s->n; i++) {
			struct top_proc *p = &s->procs[i];

			if (p->pid != pid)
				continue;
			printable(p->rule, sizeof(p->rule), rule->str, strlen(rule->str));
			p->source = "thpd";
			for (const struct jval *r = rules ? rules->child : NULL; r; r = r->next) {
				const struct jval *name = json_member(r, "name");
				const struct jval *pol = json_member(r, "policy");

				if (name && name->type == J_STR && !strcmp(name->str, rule->str) &&
				    pol && pol->type == J_STR)
					p->policy = thp_policy_name((unsigned int)thpctl_parse_policy(
							    pol->str))
							    ?: "?";
			}
		}
	}
}

int top_scan(const struct top_filter *f, struct top_snapshot *s)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	struct timespec ts;
	uint64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	s->n = 0;
	s->anon = s->anon_huge = 0;
	s->thpd = false;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char buf[8192], status_path[300], rollup_path[300];
		struct top_proc p = { .thp_disabled = -1, .policy = "system", .source = "system" };
		int pfd;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		p.pid = (pid_t)strtol(e->d_name, NULL, 10);
		/* PID/status from /proc's fd: no directory fd per process, fewer calls. */
		snprintf(status_path, sizeof(status_path), "%s/status", e->d_name);
		snprintf(rollup_path, sizeof(rollup_path), "%s/smaps_rollup", e->d_name);
		pfd = dirfd(d);
		/* A kernel thread has no VmRSS line: no memory of its own. */
		if (read_proc(pfd, status_path, buf, sizeof(buf)) <= 0 || !strstr(buf, "\nVmRSS:") ||
		    !read_status(buf, &p) || (f->cgroup && !in_cgroup(pfd, e->d_name, f->cgroup)))
			continue;
		/*
		 * Under 2 MiB anonymous there is no 2 MiB page to count: status's
		 * RssAnon (a counter) is the figure, and the page-table walk of
		 * smaps_rollup, most of top's cost, is left out.  The live view
		 * also keeps a process's last figures while its RssAnon stays the
		 * same, for at most reuse_s.
		 */
		p.rss_anon_status = p.anon;
		if (p.anon >= HUGE_MIN_BYTES) {
			const struct top_proc *old = f->reuse_s > 0 ? find_pid(s->prev, s->nprev, p.pid)
								    : NULL;

			if (old && old->rss_anon_status == p.rss_anon_status &&
			    !strcmp(old->comm, p.comm) &&
			    (double)(now - old->read_ns) < f->reuse_s * 1e9) {
				p.rss = old->rss;
				p.anon = old->anon;
				p.anon_huge = old->anon_huge;
				p.read_ns = old->read_ns;
			} else if (read_proc(pfd, rollup_path, buf, sizeof(buf)) > 0) {
				p.rss = field_kb(buf, "Rss");
				p.anon = field_kb(buf, "Anonymous");
				p.anon_huge = field_kb(buf, "AnonHugePages");
				p.read_ns = now;
			} else {
				continue;
			}
		}
		if (p.thp_disabled == 1) {
			p.policy = "never";
			p.source = "prctl";
		}
		if (s->n == s->cap) {
			size_t cap = s->cap ? s->cap * 2 : 256;
			struct top_proc *np = realloc(s->procs, cap * sizeof(*np));

			if (!np) {
				closedir(d);
				return -ENOMEM;
			}
			s->procs = np;
			s->cap = cap;
		}
		s->procs[s->n++] = p;
	}
	closedir(d);
	/* Children of thpctl run's collapse agent: their parent is in this scan. */
	if (s->n) /* (procs is NULL before the first process) */
		qsort(s->procs, s->n, sizeof(s->procs[0]), cmp_pid);
	for (size_t i = 0; i < s->n; i++) {
		struct top_proc *p = &s->procs[i];
		const struct top_proc *parent = find_pid(s->procs, s->n, p->ppid);

		if (p->thp_disabled != 1 && parent && !strcmp(parent->comm, "thpctl")) {
			p->policy = "huge";
			p->source = "agent";
		}
	}
	/* Every process of this scan, for the next one to reuse. */
	if (f->reuse_s > 0) {
		struct top_proc *copy = malloc((s->n ? s->n : 1) * sizeof(*copy));

		if (copy) {
			if (s->n)
				memcpy(copy, s->procs, s->n * sizeof(*copy));
			free(s->prev);
			s->prev = copy;
			s->nprev = s->n;
		}
	}
	if (f->socket) {
		char *answer = NULL;
		size_t len = 0;
		struct jval *doc = thpctl_daemon_document(f->socket, &answer, &len);

		if (doc) {
			apply_thpd(doc, s);
			s->thpd = true;
		}
		json_free(doc);
		free(answer);
	}
	size_t kept = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct top_proc *p = &s->procs[i];

		if ((f->rule && strcmp(p->rule, f->rule)) ||
		    (f->name[0] && !strstr(p->comm, f->name)))
			continue;
		if (f->folios)
			folio_sizes(p);
		s->anon += p->anon;
		s->anon_huge += p->anon_huge;
		s->procs[kept++] = *p;
	}
	s->n = kept;
	return 0;
}

void top_snapshot_free(struct top_snapshot *s)
{
	free(s->procs);
	free(s->prev);
	*s = (struct top_snapshot){ 0 };
}
