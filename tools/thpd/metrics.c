// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: what it exposes: Prometheus text, the status JSON and the rule list. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <thp/thp.h>

#include "json.h" /* tools/common: utf8_char(), json_escape() */
#include "thpd.h"

struct buf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void bprintf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void bprintf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t ncap = (b->cap + (size_t)n + 1) * 2;
			char *ns = realloc(b->s, ncap);

			if (!ns) {
				b->oom = true;
				return;
			}
			b->s = ns;
			b->cap = ncap;
		}
	}
}

static char *bdone(struct buf *b, size_t *len)
{
	if (b->oom || !b->s) {
		free(b->s);
		if (!b->oom) {
			b->s = strdup("");
			*len = 0;
			return b->s;
		}
		return NULL;
	}
	*len = b->len;
	return b->s;
}

/*
 * One character of @s for a label value or a JSON string: the length of the
 * valid UTF-8 sequence at @s, or 0 for a byte that does not start one (it
 * is written as U+FFFD: promtool refuses the whole exposition otherwise).
 */
static size_t utf8_len(const char *s)
{
	uint32_t cp;

	return utf8_char((const unsigned char *)s, &cp);
}

/* A label value: valid UTF-8, with backslash, quote and newline escaped. */
static void prom_str(struct buf *b, const char *s)
{
	while (*s) {
		size_t n;

		if (*s == '\\')
			bprintf(b, "\\\\");
		else if (*s == '"')
			bprintf(b, "\\\"");
		else if (*s == '\n')
			bprintf(b, "\\n");
		else if ((n = utf8_len(s)) == 0)
			bprintf(b, "\xef\xbf\xbd");
		else {
			bprintf(b, "%.*s", (int)n, s);
			s += n;
			continue;
		}
		s++;
	}
}

static void bput(void *b, const char *p, size_t n)
{
	bprintf(b, "%.*s", (int)n, p);
}

/* A JSON string: the JSON writer's escape (tools/common/json.c). */
static void json_str(struct buf *b, const char *s)
{
	json_escape(s, bput, b);
}

void thpd_note_reload(struct thpd_state *st, bool ok)
{
	struct timespec ts;

	st->reload_ok = ok;
	if (ok && clock_gettime(CLOCK_REALTIME, &ts) == 0)
		st->reload_ok_time_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Open descriptors of the daemon (the standard process_open_fds); -1 when unknown. */
static long open_fds(void)
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

/* The daemon's start, seconds since the epoch (process_start_time_seconds); 0 when unknown. */
static double start_time_s(void)
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
	f = fopen("/proc/stat", "re");
	if (!f)
		return 0;
	while (fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "btime %llu", &btime) == 1)
			break;
	fclose(f);
	return btime ? (double)btime + (double)start / (double)tck : 0;
}

static void head(struct buf *b, const char *name, const char *type, const char *help)
{
	bprintf(b, "# HELP thpd_%s %s\n# TYPE thpd_%s %s\n", name, help, name, type);
}

static void rule_series(struct buf *b, const struct thpd_state *st, const char *name,
			const char *type, const char *help, size_t off)
{
	head(b, name, type, help);
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		const struct thpd_rule *r = &st->cfg.rules[i];

		bprintf(b, "thpd_%s{rule=\"", name);
		prom_str(b, r->name);
		bprintf(b, "\"} %llu\n", (unsigned long long)*(const uint64_t *)((const char *)r + off));
	}
}

/* Bytes in base pages (@k = -1) or in folios of st->sizes[@k]. */
static uint64_t rule_folio(const struct thpd_rule *r, int k)
{
	return k < 0 ? r->folio_base : r->folio_bytes[k];
}

static uint64_t proc_folio(const struct thpd_proc *p, int k)
{
	return k < 0 ? p->folio_base : p->folio_bytes[k];
}

static const char *folio_label(const struct thpd_state *st, int k, char *buf, size_t len)
{
	return k < 0 ? "base" : thpd_size_label(st->sizes[k], buf, len);
}

static size_t collect(const struct thpd_state *st, const struct thpd_proc ***out)
{
	const struct thpd_proc **v = malloc((st->nprocs + 1) * sizeof(*v));
	size_t n = 0;

	*out = v;
	if (!v)
		return 0;
	for (size_t i = 0; i < st->nhash; i++)
		for (const struct thpd_proc *p = st->hash[i]; p; p = p->next)
			if (n < st->nprocs && p->rule >= 0)
				v[n++] = p;
	return n;
}

static int by_anon(const void *a, const void *b)
{
	const struct thpd_proc *x = *(const struct thpd_proc *const *)a;
	const struct thpd_proc *y = *(const struct thpd_proc *const *)b;

	if (x->anon != y->anon)
		return x->anon < y->anon ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void proc_series(struct buf *b, const struct thpd_state *st, const struct thpd_proc **v,
			size_t n, const char *name, const char *help, size_t off)
{
	size_t top = n < st->cfg.top ? n : st->cfg.top;

	head(b, name, "gauge", help);
	for (size_t i = 0; i < top; i++) {
		bprintf(b, "thpd_%s{rule=\"", name);
		prom_str(b, st->cfg.rules[v[i]->rule].name);
		bprintf(b, "\",pid=\"%d\",comm=\"", (int)v[i]->pid);
		prom_str(b, v[i]->comm);
		bprintf(b, "\"} %llu\n",
			(unsigned long long)*(const uint64_t *)((const char *)v[i] + off));
	}
	/* Past the top N, one "rest" series per rule keeps the cardinality bounded. */
	for (size_t r = 0; r < st->cfg.nrules; r++) {
		uint64_t sum = 0;
		bool any = false;

		for (size_t i = top; i < n; i++) {
			if ((size_t)v[i]->rule == r) {
				sum += *(const uint64_t *)((const char *)v[i] + off);
				any = true;
			}
		}
		if (!any)
			continue;
		bprintf(b, "thpd_%s{rule=\"", name);
		prom_str(b, st->cfg.rules[r].name);
		bprintf(b, "\",pid=\"rest\",comm=\"\"} %llu\n", (unsigned long long)sum);
	}
}

/*
 * Anonymous bytes by folio size, per rule and per process (the top N and a
 * rest per rule): only where the sizes were read; a process or rule
 * without them has no series rather than zeros.
 */
static void folio_series(struct buf *b, const struct thpd_state *st, const struct thpd_proc **v,
			 size_t n, bool per_process)
{
	size_t top = n < st->cfg.top ? n : st->cfg.top;
	bool any = false;
	char lab[24];

	for (size_t i = 0; i < st->cfg.nrules; i++)
		any |= st->cfg.rules[i].folio_procs != 0;
	if (!any)
		return;
	head(b, "rule_folio_bytes", "gauge",
	     "Anonymous memory of the rule's processes by folio size (size=\"base\": base pages), "
	     "from pagemap and kpageflags.");
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		const struct thpd_rule *r = &st->cfg.rules[i];

		if (!r->folio_procs)
			continue;
		for (int k = -1; k < (int)st->nsizes; k++) {
			bprintf(b, "thpd_rule_folio_bytes{rule=\"");
			prom_str(b, r->name);
			bprintf(b, "\",size=\"%s\"} %llu\n", folio_label(st, k, lab, sizeof(lab)),
				(unsigned long long)rule_folio(r, k));
		}
	}
	if (!per_process)
		return;
	head(b, "process_folio_bytes", "gauge",
	     "Anonymous memory by folio size (size=\"base\": base pages), per process.");
	for (size_t i = 0; i < top; i++) {
		if (!v[i]->sizes_known)
			continue;
		for (int k = -1; k < (int)st->nsizes; k++) {
			bprintf(b, "thpd_process_folio_bytes{rule=\"");
			prom_str(b, st->cfg.rules[v[i]->rule].name);
			bprintf(b, "\",pid=\"%d\",comm=\"", (int)v[i]->pid);
			prom_str(b, v[i]->comm);
			bprintf(b, "\",size=\"%s\"} %llu\n", folio_label(st, k, lab, sizeof(lab)),
				(unsigned long long)proc_folio(v[i], k));
		}
	}
	for (size_t r = 0; r < st->cfg.nrules; r++) {
		uint64_t sum[THP_PROBE_MAX_SIZES + 1] = { 0 };
		bool have = false;

		for (size_t i = top; i < n; i++) {
			if ((size_t)v[i]->rule != r || !v[i]->sizes_known)
				continue;
			have = true;
			for (int k = -1; k < (int)st->nsizes; k++)
				sum[k + 1] += proc_folio(v[i], k);
		}
		if (!have)
			continue;
		for (int k = -1; k < (int)st->nsizes; k++) {
			bprintf(b, "thpd_process_folio_bytes{rule=\"");
			prom_str(b, st->cfg.rules[r].name);
			bprintf(b, "\",pid=\"rest\",comm=\"\",size=\"%s\"} %llu\n",
				folio_label(st, k, lab, sizeof(lab)), (unsigned long long)sum[k + 1]);
		}
	}
}

/* {"base":N,"64K":N,...} */
static void folio_json(struct buf *b, const struct thpd_state *st, uint64_t base,
		       const uint64_t *bytes)
{
	char lab[24];

	bprintf(b, ",\"folio_bytes\":{\"base\":%llu", (unsigned long long)base);
	for (uint32_t k = 0; k < st->nsizes; k++)
		bprintf(b, ",\"%s\":%llu", thpd_size_label(st->sizes[k], lab, sizeof(lab)),
			(unsigned long long)bytes[k]);
	bprintf(b, "}");
}

static char *metrics_text(const struct thpd_state *st, bool per_process, size_t *len)
{
	struct buf b = { 0 };
	const struct thpd_proc **v;
	size_t n = collect(st, &v);

	qsort(v, n, sizeof(*v), by_anon);
	rule_series(&b, st, "rule_processes", "gauge", "Processes matched by the rule.",
		    offsetof(struct thpd_rule, processes));
	rule_series(&b, st, "rule_anon_bytes", "gauge",
		    "Resident anonymous memory of the rule's processes (smaps Anonymous).",
		    offsetof(struct thpd_rule, anon));
	rule_series(&b, st, "rule_huge_bytes", "gauge",
		    "Of it, in huge pages (smaps AnonHugePages).", offsetof(struct thpd_rule, huge));
	rule_series(&b, st, "rule_alignable_bytes", "gauge",
		    "Anonymous memory in whole 2 MiB-aligned extents that could be huge.",
		    offsetof(struct thpd_rule, alignable));
	head(&b, "rule_policy_enforced", "gauge",
	     "1 when the rule's policy is acted on (huge, or enforce = inject), 0 when only reported.");
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		const struct thpd_rule *r = &st->cfg.rules[i];

		bprintf(&b, "thpd_rule_policy_enforced{rule=\"");
		prom_str(&b, r->name);
		bprintf(&b, "\",policy=\"%s\"} %d\n", thpd_policy_name(r->policy),
			r->policy == THPD_HUGE || r->inject);
	}
	head(&b, "rule_noncompliant_huge_bytes", "gauge",
	     "Huge memory found in processes whose rule says never or nohuge.");
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		const struct thpd_rule *r = &st->cfg.rules[i];
		bool no = r->policy == THPD_NEVER || r->policy == THPD_NOHUGE;

		bprintf(&b, "thpd_rule_noncompliant_huge_bytes{rule=\"");
		prom_str(&b, r->name);
		bprintf(&b, "\"} %llu\n", (unsigned long long)(no ? r->huge : 0));
	}
	head(&b, "collapses_total", "counter", "2 MiB extents collapsed by the daemon.");
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		bprintf(&b, "thpd_collapses_total{rule=\"");
		prom_str(&b, st->cfg.rules[i].name);
		bprintf(&b, "\"} %llu\n", (unsigned long long)st->cfg.rules[i].stats.collapses);
	}
	head(&b, "shared_extents_skipped_total", "counter",
	     "Extents left alone because another process shares their pages (a fork's).");
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		bprintf(&b, "thpd_shared_extents_skipped_total{rule=\"");
		prom_str(&b, st->cfg.rules[i].name);
		bprintf(&b, "\"} %llu\n", (unsigned long long)st->cfg.rules[i].stats.shared_skips);
	}
	head(&b, "collapse_failures_total", "counter", "Extents or passes the kernel refused, by errno.");
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		for (int e = 0; e < THPD_NERRNO; e++) {
			bprintf(&b, "thpd_collapse_failures_total{rule=\"");
			prom_str(&b, st->cfg.rules[i].name);
			bprintf(&b, "\",errno=\"%s\"} %llu\n", thpd_errno_label(e),
				(unsigned long long)st->cfg.rules[i].stats.failures[e]);
		}
	}
	rule_series(&b, st, "bytes_over_budget", "gauge",
		    "Collapsible memory left by the last pass because a budget was spent.",
		    offsetof(struct thpd_rule, over_budget));
	if (per_process) {
		proc_series(&b, st, v, n, "process_anon_bytes",
			    "Resident anonymous memory per process.", offsetof(struct thpd_proc, anon));
		proc_series(&b, st, v, n, "process_huge_bytes", "Of it, in huge pages, per process.",
			    offsetof(struct thpd_proc, huge));
		proc_series(&b, st, v, n, "process_alignable_bytes",
			    "Anonymous memory that could be huge, per process.",
			    offsetof(struct thpd_proc, alignable));
	}
	folio_series(&b, st, v, n, per_process);
	if (st->folio_source >= 0) {
		head(&b, "folio_sizes_readable", "gauge",
		     "1 when the last query read folio sizes (pagemap and kpageflags; needs "
		     "CAP_SYS_ADMIN), 0 when it could not.");
		bprintf(&b, "thpd_folio_sizes_readable %d\n",
			st->folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS);
	}
	head(&b, "pass_duration_seconds", "gauge", "Wall time of the last pass.");
	bprintf(&b, "thpd_pass_duration_seconds %.6f\n", st->last_pass_s);
	head(&b, "passes_total", "counter", "Passes done.");
	bprintf(&b, "thpd_passes_total %llu\n", (unsigned long long)st->passes);
	head(&b, "build_info", "gauge", "Always 1; the version of thpd and of the libthp it runs with.");
	bprintf(&b, "thpd_build_info{version=\"%d.%d.%d\",libthp=\"", THP_VERSION_MAJOR,
		THP_VERSION_MINOR, THP_VERSION_PATCH);
	prom_str(&b, thp_version());
	bprintf(&b, "\"} 1\n");
	head(&b, "config_last_reload_successful", "gauge",
	     "1 when the last configuration load (start or reload) succeeded.");
	bprintf(&b, "thpd_config_last_reload_successful %d\n", st->reload_ok);
	head(&b, "config_last_reload_success_timestamp_seconds", "gauge",
	     "When the configuration was last loaded successfully, seconds since the epoch.");
	bprintf(&b, "thpd_config_last_reload_success_timestamp_seconds %.3f\n", st->reload_ok_time_s);
	/* The standard process metrics of Prometheus client libraries, by their names. */
	bprintf(&b, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
		    "# TYPE process_cpu_seconds_total counter\n"
		    "process_cpu_seconds_total %.6f\n",
		(double)thpd_cpu_ns() / 1e9);
	bprintf(&b, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
		    "# TYPE process_resident_memory_bytes gauge\n"
		    "process_resident_memory_bytes %llu\n",
		(unsigned long long)thpd_rss_bytes());
	bprintf(&b, "# HELP process_open_fds Number of open file descriptors.\n"
		    "# TYPE process_open_fds gauge\n"
		    "process_open_fds %ld\n",
		open_fds());
	bprintf(&b, "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
		    "# TYPE process_start_time_seconds gauge\n"
		    "process_start_time_seconds %.2f\n",
		start_time_s());
	free(v);
	return bdone(&b, len);
}

char *thpd_metrics_text(const struct thpd_state *st, size_t *len)
{
	return metrics_text(st, true, len);
}

char *thpd_metrics_text_public(const struct thpd_state *st, size_t *len)
{
	return metrics_text(st, st->cfg.http_process_metrics, len);
}

static char *json_text(const struct thpd_state *st, bool per_process, size_t *len)
{
	struct buf b = { 0 };
	const struct thpd_proc **v;
	size_t n = collect(st, &v);

	qsort(v, n, sizeof(*v), by_anon);
	bprintf(&b, "{\"schema\":%d,\"rules\":[", THPD_JSON_SCHEMA);
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		const struct thpd_rule *r = &st->cfg.rules[i];

		bprintf(&b, "%s{\"name\":", i ? "," : "");
		json_str(&b, r->name);
		bprintf(&b, ",\"policy\":\"%s\",\"enforced\":%s,\"processes\":%llu,\"anon_bytes\":%llu,"
			    "\"huge_bytes\":%llu,\"alignable_bytes\":%llu,\"collapses\":%llu",
			thpd_policy_name(r->policy),
			r->policy == THPD_HUGE || r->inject ? "true" : "false",
			(unsigned long long)r->processes, (unsigned long long)r->anon,
			(unsigned long long)r->huge, (unsigned long long)r->alignable,
			(unsigned long long)r->stats.collapses);
		if (r->folio_procs)
			folio_json(&b, st, r->folio_base, r->folio_bytes);
		bprintf(&b, ",\"failures\":{");
		for (int e = 0, first = 1; e < THPD_NERRNO; e++) {
			if (!r->stats.failures[e])
				continue;
			bprintf(&b, "%s\"%s\":%llu", first ? "" : ",", thpd_errno_label(e),
				(unsigned long long)r->stats.failures[e]);
			first = 0;
		}
		bprintf(&b, "}}");
	}
	bprintf(&b, "]");
	if (per_process)
		bprintf(&b, ",\"processes\":[");
	for (size_t i = 0; per_process && i < n; i++) {
		bprintf(&b, "%s{\"pid\":%d,\"comm\":", i ? "," : "", (int)v[i]->pid);
		json_str(&b, v[i]->comm);
		bprintf(&b, ",\"rule\":");
		json_str(&b, st->cfg.rules[v[i]->rule].name);
		bprintf(&b, ",\"anon_bytes\":%llu,\"huge_bytes\":%llu,\"alignable_bytes\":%llu",
			(unsigned long long)v[i]->anon, (unsigned long long)v[i]->huge,
			(unsigned long long)v[i]->alignable);
		if (v[i]->sizes_known)
			folio_json(&b, st, v[i]->folio_base, v[i]->folio_bytes);
		bprintf(&b, "}");
	}
	{
		const struct thpd_scan_stats *ev = thpd_scan_stats(st->scan);

		/* The proc connector's events and what their budget made of them. */
		bprintf(&b, "%s\"events\":{\"execs\":%llu,\"uid_changes\":%llu,\"deferred_drains\":%llu,"
			    "\"dropped_drains\":%llu,\"cpu_seconds\":%.6f,\"mode\":\"%s\","
			    "\"exec_during_collapse\":%llu}",
			per_process ? "]," : ",",
			(unsigned long long)ev->execs, (unsigned long long)ev->uids,
			(unsigned long long)ev->deferred_drains, (unsigned long long)ev->drops,
			(double)ev->cpu_ns / 1e9,
			!thpd_scan_has_connector(st->scan)		 ? "none"
			: thpd_scan_mode(st->scan) == THPD_EVENTS_HANDLE ? "handle"
			: thpd_scan_mode(st->scan) == THPD_EVENTS_DEFER	 ? "defer"
									 : "drop",
			(unsigned long long)st->exec_races);
	}
	bprintf(&b, ",\"daemon\":{\"folio_source\":\"%s\",\"pid\":%d,\"cpu_seconds\":%.6f,\"passes\":%llu,"
		    "\"last_pass_seconds\":%.6f,\"rss_bytes\":%llu}}\n",
		st->folio_source < 0 ? "unknown" : st->folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS ? "kpageflags"
												   : "none",
		(int)getpid(), (double)thpd_cpu_ns() / 1e9, (unsigned long long)st->passes,
		st->last_pass_s, (unsigned long long)thpd_rss_bytes());
	free(v);
	return bdone(&b, len);
}

char *thpd_json_text(const struct thpd_state *st, size_t *len)
{
	return json_text(st, true, len);
}

char *thpd_json_text_public(const struct thpd_state *st, size_t *len)
{
	return json_text(st, st->cfg.http_process_metrics, len);
}

char *thpd_rules_text(const struct thpd_state *st, size_t *len)
{
	char *s = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&s, &sz);

	if (!f)
		return NULL;
	thpd_config_print(&st->cfg, f);
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	*len = sz;
	return s;
}

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
