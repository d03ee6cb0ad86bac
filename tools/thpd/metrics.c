// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: its metrics in the Prometheus text format, with and without the per-process series. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <thp/thp.h>

#include "clock_ns.h" /* lib/: clock_ns() */
#include "container.h"
#include "json.h" /* tools/common: utf8_char() */
#include "text_buf.h"
#include "thpd.h"

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
static void prom_str(struct thpd_buf *b, const char *s)
{
	while (*s) {
		size_t n;

		if (*s == '\\')
			thpd_bprintf(b, "\\\\");
		else if (*s == '"')
			thpd_bprintf(b, "\\\"");
		else if (*s == '\n')
			thpd_bprintf(b, "\\n");
		else if ((n = utf8_len(s)) == 0)
			thpd_bprintf(b, "\xef\xbf\xbd");
		else {
			thpd_bprintf(b, "%.*s", (int)n, s);
			s += n;
			continue;
		}
		s++;
	}
}

static void head(struct thpd_buf *b, const char *name, const char *type, const char *help)
{
	thpd_bprintf(b, "# HELP thpd_%s %s\n# TYPE thpd_%s %s\n", name, help, name, type);
}

static void rule_series(struct thpd_buf *b, const struct thpd_state *st, const char *name,
			const char *type, const char *help, size_t off)
{
	head(b, name, type, help);
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		const struct thpd_rule *r = &st->cfg.rules[i];

		thpd_bprintf(b, "thpd_%s{rule=\"", name);
		prom_str(b, r->conf.name);
		thpd_bprintf(b, "\"} %llu\n", (unsigned long long)*(const uint64_t *)((const char *)r + off));
	}
}

/* Bytes in base pages (@k = -1) or in folios of st->sizes[@k]. */
static uint64_t rule_folio(const struct thpd_rule *r, int k)
{
	return k < 0 ? r->last.folio_base : r->last.folio_bytes[k];
}

static uint64_t proc_folio(const struct thpd_proc *p, int k)
{
	return k < 0 ? p->folio_base : p->folio_bytes[k];
}

static const char *folio_label(const struct thpd_state *st, int k, char *buf, size_t len)
{
	return k < 0 ? "base" : thpd_size_label(st->sizes[k], buf, len);
}

/*
 * The containers that get their own pod and container labels in one
 * exposition: those of the top processes, the first THPD_METRIC_CONTAINERS
 * of them; the processes of any other are labelled "other".
 */
#define THPD_METRIC_CONTAINERS 100
struct ctr_set {
	const struct thpd_ctr *v[THPD_METRIC_CONTAINERS];
	size_t n;
};

static void ctr_set_fill(struct ctr_set *cs, const struct thpd_state *st,
			 const struct thpd_proc **v, size_t n)
{
	size_t top = n < st->cfg.top ? n : st->cfg.top;

	cs->n = 0;
	for (size_t i = 0; i < top && cs->n < THPD_METRIC_CONTAINERS; i++) {
		const struct thpd_ctr *c = v[i]->id.ctr;
		size_t k = 0;

		while (c && k < cs->n && cs->v[k] != c)
			k++;
		if (c && k == cs->n)
			cs->v[cs->n++] = c;
	}
}

/* ,pod="NAMESPACE/NAME",container="NAME" of a process (both "" outside a container). */
static void ctr_labels(struct thpd_buf *b, const struct ctr_set *cs, const struct thpd_proc *p)
{
	const struct thpd_ctr *c = p ? p->id.ctr : NULL;
	size_t k = 0;

	while (c && k < cs->n && cs->v[k] != c)
		k++;
	if (!c) {
		thpd_bprintf(b, ",pod=\"\",container=\"\"");
		return;
	}
	if (k == cs->n) {
		thpd_bprintf(b, ",pod=\"other\",container=\"other\"");
		return;
	}
	thpd_bprintf(b, ",pod=\"");
	if (c->pod_namespace || c->pod_name) {
		prom_str(b, c->pod_namespace ? c->pod_namespace : "");
		thpd_bprintf(b, "/");
		prom_str(b, c->pod_name ? c->pod_name : "");
	}
	thpd_bprintf(b, "\",container=\"");
	if (c->name)
		prom_str(b, c->name);
	else
		thpd_bprintf(b, "%.12s", c->id);
	thpd_bprintf(b, "\"");
}

static void proc_series(struct thpd_buf *b, const struct thpd_state *st, const struct thpd_proc **v,
			size_t n, const struct ctr_set *cs, const char *name, const char *help,
			size_t off)
{
	size_t top = n < st->cfg.top ? n : st->cfg.top;

	head(b, name, "gauge", help);
	for (size_t i = 0; i < top; i++) {
		thpd_bprintf(b, "thpd_%s{rule=\"", name);
		prom_str(b, st->cfg.rules[v[i]->rule].conf.name);
		thpd_bprintf(b, "\",pid=\"%d\",comm=\"", (int)v[i]->pid);
		prom_str(b, v[i]->comm);
		thpd_bprintf(b, "\"");
		ctr_labels(b, cs, v[i]);
		thpd_bprintf(b, "} %llu\n",
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
		thpd_bprintf(b, "thpd_%s{rule=\"", name);
		prom_str(b, st->cfg.rules[r].conf.name);
		thpd_bprintf(b, "\",pid=\"rest\",comm=\"\",pod=\"\",container=\"\"} %llu\n",
			     (unsigned long long)sum);
	}
}

/*
 * Anonymous bytes by folio size, per rule and per process (the top N and a
 * rest per rule): only where the sizes were read; a process or rule
 * without them has no series rather than zeros.
 */
static void folio_series(struct thpd_buf *b, const struct thpd_state *st, const struct thpd_proc **v,
			 size_t n, const struct ctr_set *cs, bool per_process)
{
	size_t top = n < st->cfg.top ? n : st->cfg.top;
	bool any = false;
	char lab[24];

	for (size_t i = 0; i < st->cfg.nrules; i++)
		any |= st->cfg.rules[i].last.folio_procs != 0;
	if (!any)
		return;
	head(b, "rule_folio_bytes", "gauge",
	     "Anonymous memory of the rule's processes by folio size (size=\"base\": base pages), "
	     "from pagemap and kpageflags.");
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		const struct thpd_rule *r = &st->cfg.rules[i];

		if (!r->last.folio_procs)
			continue;
		for (int k = -1; k < (int)st->nsizes; k++) {
			thpd_bprintf(b, "thpd_rule_folio_bytes{rule=\"");
			prom_str(b, r->conf.name);
			thpd_bprintf(b, "\",size=\"%s\"} %llu\n", folio_label(st, k, lab, sizeof(lab)),
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
			thpd_bprintf(b, "thpd_process_folio_bytes{rule=\"");
			prom_str(b, st->cfg.rules[v[i]->rule].conf.name);
			thpd_bprintf(b, "\",pid=\"%d\",comm=\"", (int)v[i]->pid);
			prom_str(b, v[i]->comm);
			thpd_bprintf(b, "\"");
			ctr_labels(b, cs, v[i]);
			thpd_bprintf(b, ",size=\"%s\"} %llu\n", folio_label(st, k, lab, sizeof(lab)),
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
			thpd_bprintf(b, "thpd_process_folio_bytes{rule=\"");
			prom_str(b, st->cfg.rules[r].conf.name);
			thpd_bprintf(b, "\",pid=\"rest\",comm=\"\",pod=\"\",container=\"\",size=\"%s\"} %llu\n",
				     folio_label(st, k, lab, sizeof(lab)), (unsigned long long)sum[k + 1]);
		}
	}
}

static char *metrics_text(const struct thpd_state *st, bool per_process, size_t *len)
{
	struct thpd_buf b = { 0 };
	const struct thpd_proc **v;
	size_t n = thpd_matched_by_anon(st, &v);
	struct ctr_set cs;

	ctr_set_fill(&cs, st, v, n);

	rule_series(&b, st, "rule_processes", "gauge", "Processes matched by the rule.",
		    offsetof(struct thpd_rule, last.processes));
	rule_series(&b, st, "rule_anon_bytes", "gauge",
		    "Resident anonymous memory of the rule's processes (smaps Anonymous).",
		    offsetof(struct thpd_rule, last.anon));
	rule_series(&b, st, "rule_huge_bytes", "gauge",
		    "Of it, in huge pages (smaps AnonHugePages).", offsetof(struct thpd_rule, last.huge));
	rule_series(&b, st, "rule_alignable_bytes", "gauge",
		    "Anonymous memory in whole 2 MiB-aligned extents that could be huge.",
		    offsetof(struct thpd_rule, last.alignable));
	head(&b, "rule_policy_enforced", "gauge",
	     "1 when the rule's policy is acted on (huge, or enforce = inject), 0 when only reported.");
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		const struct thpd_rule *r = &st->cfg.rules[i];

		thpd_bprintf(&b, "thpd_rule_policy_enforced{rule=\"");
		prom_str(&b, r->conf.name);
		thpd_bprintf(&b, "\",policy=\"%s\"} %d\n", thpd_rule_shown_policy(&r->conf),
			     r->conf.policy == THPD_RULE_HUGE || r->conf.inject);
	}
	head(&b, "rule_noncompliant_huge_bytes", "gauge",
	     "Huge memory found in processes whose rule (or container annotation) says never or nohuge.");
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		const struct thpd_rule *r = &st->cfg.rules[i];

		thpd_bprintf(&b, "thpd_rule_noncompliant_huge_bytes{rule=\"");
		prom_str(&b, r->conf.name);
		thpd_bprintf(&b, "\"} %llu\n", (unsigned long long)r->last.noncompliant);
	}
	head(&b, "collapses_total", "counter", "2 MiB extents collapsed by the daemon.");
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		thpd_bprintf(&b, "thpd_collapses_total{rule=\"");
		prom_str(&b, st->cfg.rules[i].conf.name);
		thpd_bprintf(&b, "\"} %llu\n", (unsigned long long)st->cfg.rules[i].totals.collapses);
	}
	head(&b, "shared_extents_skipped_total", "counter",
	     "Extents left alone because another process shares their pages (a fork's).");
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		thpd_bprintf(&b, "thpd_shared_extents_skipped_total{rule=\"");
		prom_str(&b, st->cfg.rules[i].conf.name);
		thpd_bprintf(&b, "\"} %llu\n", (unsigned long long)st->cfg.rules[i].totals.shared_skips);
	}
	head(&b, "collapse_failures_total", "counter", "Extents or passes the kernel refused, by errno.");
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		for (int e = 0; e < THPD_NERRNO; e++) {
			thpd_bprintf(&b, "thpd_collapse_failures_total{rule=\"");
			prom_str(&b, st->cfg.rules[i].conf.name);
			thpd_bprintf(&b, "\",errno=\"%s\"} %llu\n", thpd_errno_label(e),
				     (unsigned long long)st->cfg.rules[i].totals.failures[e]);
		}
	}
	rule_series(&b, st, "bytes_over_budget", "gauge",
		    "Collapsible memory left by the last pass because a budget was spent.",
		    offsetof(struct thpd_rule, last.over_budget));
	if (per_process) {
		proc_series(&b, st, v, n, &cs, "process_anon_bytes",
			    "Resident anonymous memory per process.", offsetof(struct thpd_proc, anon));
		proc_series(&b, st, v, n, &cs, "process_huge_bytes", "Of it, in huge pages, per process.",
			    offsetof(struct thpd_proc, huge));
		proc_series(&b, st, v, n, &cs, "process_alignable_bytes",
			    "Anonymous memory that could be huge, per process.",
			    offsetof(struct thpd_proc, alignable));
	}
	folio_series(&b, st, v, n, &cs, per_process);
	if (st->folio_source >= 0) {
		head(&b, "folio_sizes_readable", "gauge",
		     "1 when the last query read folio sizes (pagemap and kpageflags; needs "
		     "CAP_SYS_ADMIN), 0 when it could not.");
		thpd_bprintf(&b, "thpd_folio_sizes_readable %d\n",
			     st->folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS);
	}
	head(&b, "pass_duration_seconds", "gauge", "Wall time of the last pass.");
	thpd_bprintf(&b, "thpd_pass_duration_seconds %.6f\n", st->last_pass_s);
	head(&b, "passes_total", "counter", "Passes done.");
	thpd_bprintf(&b, "thpd_passes_total %llu\n", (unsigned long long)st->passes);
	head(&b, "container_cache_entries", "gauge",
	     "Containers whose identity is cached: one per container with a process thpd tracks.");
	thpd_bprintf(&b, "thpd_container_cache_entries %llu\n",
		     (unsigned long long)thpd_ctr_stats()->entries);
	head(&b, "build_info", "gauge", "Always 1; the version of thpd and of the libthp it runs with.");
	thpd_bprintf(&b, "thpd_build_info{version=\"%d.%d.%d\",libthp=\"", THP_VERSION_MAJOR,
		     THP_VERSION_MINOR, THP_VERSION_PATCH);
	prom_str(&b, thp_version());
	thpd_bprintf(&b, "\"} 1\n");
	head(&b, "config_last_reload_successful", "gauge",
	     "1 when the last configuration load (start or reload) succeeded.");
	thpd_bprintf(&b, "thpd_config_last_reload_successful %d\n", st->reload_ok);
	head(&b, "config_last_reload_success_timestamp_seconds", "gauge",
	     "When the configuration was last loaded successfully, seconds since the epoch.");
	thpd_bprintf(&b, "thpd_config_last_reload_success_timestamp_seconds %.3f\n", st->reload_ok_time_s);
	/* The standard process metrics of Prometheus client libraries, by their names. */
	thpd_bprintf(&b, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
			 "# TYPE process_cpu_seconds_total counter\n"
			 "process_cpu_seconds_total %.6f\n",
		     (double)clock_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e9);
	thpd_bprintf(&b, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
			 "# TYPE process_resident_memory_bytes gauge\n"
			 "process_resident_memory_bytes %llu\n",
		     (unsigned long long)thpd_rss_bytes());
	thpd_bprintf(&b, "# HELP process_open_fds Number of open file descriptors.\n"
			 "# TYPE process_open_fds gauge\n"
			 "process_open_fds %ld\n",
		     thpd_open_fds());
	thpd_bprintf(&b, "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
			 "# TYPE process_start_time_seconds gauge\n"
			 "process_start_time_seconds %.2f\n",
		     thpd_start_time_s());
	free(v);
	return thpd_bdone(&b, len);
}

char *thpd_metrics_text(const struct thpd_state *st, size_t *len)
{
	return metrics_text(st, true, len);
}

char *thpd_metrics_text_public(const struct thpd_state *st, size_t *len)
{
	return metrics_text(st, st->cfg.http_process_metrics, len);
}
