// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpctl top: one snapshot.  Per process: /proc/PID/stat (name, parent),
 * statm (no memory: a kernel thread, skipped), status (THP_enabled, uid),
 * smaps_rollup (Rss, Anonymous, AnonHugePages: the figures thpctl status
 * and the kernel agree on) and, with --cgroup, cgroup.  The policy's
 * source: thpd's rule when thpd lists the process, the process's own
 * prctl when THP_enabled is 0, thpctl run's agent when its parent is
 * thpctl; for a process with huge pages, smaps: the preload when
 * libthp-preload.so is mapped, its own advice when a range has VmFlags
 * hg; else the system-wide mode.  Bytes by folio size come from
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

#include "clock_ns.h" /* lib/: now_ns() */
#include "json_parse.h"
#include "proc_read.h"
#include "thpctl.h"
#include "top.h"

/* The smallest anonymous size that can hold a PMD-sized page here. */
#define HUGE_MIN_BYTES (2u << 20)

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
	const char *name = strstr(buf, "Name:");
	unsigned long long v;

	if (!name || !proc_field(buf, "PPid", &v))
		return false;
	p->ppid = (pid_t)v;
	name += 5;
	name += strspn(name, " \t");
	printable(p->comm, sizeof(p->comm), name, strcspn(name, "\n"));
	if (proc_field(buf, "Uid", &v))
		p->uid = (uid_t)v;
	if (proc_field(buf, "THP_enabled", &v))
		p->thp_disabled = v == 0;
	p->rss = proc_field_kb(buf, "VmRSS");
	p->anon = proc_field_kb(buf, "RssAnon");
	return true;
}

/*
 * Where a process's huge pages come from, read only for processes that
 * hold some, when their rollup is read.  The preload: thp_get_default()'s
 * answer, the library's own check (libthp-preload.so mapped and not
 * switched off), as thpctl status gives it.  Its own advice: a range with
 * VmFlags hg in its smaps (a page-table walk like the rollup's).
 */
static void read_origin(int procfd, const char *pid, struct top_proc *p)
{
	struct thp_default_opts d = { .sz = sizeof(d) };
	char path[300], *line = NULL;
	size_t cap = 0;
	FILE *f;
	int fd;

	d.pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
	if (d.pidfd >= 0) {
		p->preload = thp_get_default(&d) == 0 && d.backend_used == THP_BACKEND_PRELOAD;
		close(d.pidfd);
	}
	snprintf(path, sizeof(path), "%s/smaps", pid);
	fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || !(f = fdopen(fd, "re"))) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while (!p->advised && getline(&line, &cap, f) > 0)
		p->advised = !strncmp(line, "VmFlags:", 8) && strstr(line, " hg");
	free(line);
	fclose(f);
}

static bool in_cgroup(int procfd, const char *pid, const char *prefix)
{
	char buf[4096], *line;
	size_t n = strlen(prefix);

	if (proc_read_entry(procfd, pid, "cgroup", buf, sizeof(buf)) <= 0)
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
	uint64_t now = now_ns();

	s->n = 0;
	s->anon = s->anon_huge = 0;
	s->thpd = false;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		char buf[8192];
		struct top_proc p = { .thp_disabled = -1, .policy = "system", .source = "system" };
		int pfd;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		p.pid = (pid_t)strtol(e->d_name, NULL, 10);
		pfd = dirfd(d);
		/* A kernel thread has no VmRSS line: no memory of its own. */
		if (proc_read_entry(pfd, e->d_name, "status", buf, sizeof(buf)) <= 0 ||
		    !strstr(buf, "\nVmRSS:") ||
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
				p.preload = old->preload;
				p.advised = old->advised;
				p.read_ns = old->read_ns;
			} else if (proc_read_entry(pfd, e->d_name, "smaps_rollup", buf, sizeof(buf)) > 0) {
				p.rss = proc_field_kb(buf, "Rss");
				p.anon = proc_field_kb(buf, "Anonymous");
				p.anon_huge = proc_field_kb(buf, "AnonHugePages");
				p.read_ns = now;
				if (p.anon_huge && p.thp_disabled != 1)
					read_origin(pfd, e->d_name, &p);
			} else {
				continue;
			}
		}
		if (p.thp_disabled == 1) {
			p.policy = "never";
			p.source = "prctl";
		} else if (p.preload) {
			p.policy = "huge";
			p.source = "preload";
		} else {
			if (f->nohuge_hidden)
				p.policy = TOP_SYSTEM_OR_NOHUGE;
			if (p.advised)
				p.source = "advice";
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
