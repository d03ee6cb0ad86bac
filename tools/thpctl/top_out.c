// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl top: sorting, the table and --json (doc/thpctl-json.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "thpctl.h"
#include "thpd_interface.h"
#include "top.h"

static double share(const struct top_proc *p)
{
	return p->anon ? (double)p->anon_huge / (double)p->anon : 0;
}

static int by_huge(const void *a, const void *b)
{
	const struct top_proc *x = a, *y = b;

	if (x->anon_huge != y->anon_huge)
		return x->anon_huge < y->anon_huge ? 1 : -1;
	return x->anon < y->anon ? 1 : x->anon > y->anon ? -1
							 : x->pid - y->pid;
}

static int by_anon(const void *a, const void *b)
{
	const struct top_proc *x = a, *y = b;

	if (x->anon != y->anon)
		return x->anon < y->anon ? 1 : -1;
	return x->pid - y->pid;
}

static int by_share(const void *a, const void *b)
{
	const struct top_proc *x = a, *y = b;
	double sx = share(x), sy = share(y);

	if (sx != sy)
		return sx < sy ? 1 : -1;
	return by_anon(a, b);
}

static int by_pid(const void *a, const void *b)
{
	return ((const struct top_proc *)a)->pid - ((const struct top_proc *)b)->pid;
}

static int by_name(const void *a, const void *b)
{
	int c = strcmp(((const struct top_proc *)a)->comm, ((const struct top_proc *)b)->comm);

	return c ? c : by_pid(a, b);
}

void top_sort(struct top_snapshot *s, enum top_sort by)
{
	static int (*const cmp[])(const void *, const void *) = {
		[SORT_HUGE] = by_huge,
		[SORT_ANON] = by_anon,
		[SORT_SHARE] = by_share,
		[SORT_PID] = by_pid,
		[SORT_NAME] = by_name,
	};

	if (s->n)
		qsort(s->procs, s->n, sizeof(s->procs[0]), cmp[by]);
}

const char *top_sort_name(enum top_sort by)
{
	static const char *const names[] = { [SORT_HUGE] = "huge", [SORT_ANON] = "anon", [SORT_SHARE] = "share", [SORT_PID] = "pid", [SORT_NAME] = "name" };

	return names[by];
}

/* A table line at most @width columns wide (0: whole), no trailing blanks. */
static void put_line(char *line, int width)
{
	size_t n = strlen(line);

	if (width > 0 && n > (size_t)width)
		n = (size_t)width;
	while (n && line[n - 1] == ' ')
		n--;
	printf("%.*s\n", (int)n, line);
}

static const char *mib(uint64_t bytes, char *buf, size_t len)
{
	snprintf(buf, len, "%.1f", (double)bytes / (1024.0 * 1024));
	return buf;
}

/* "2M 95% 64K 3%": the folio sizes that hold any of the anonymous memory. */
static void folio_column(const struct top_proc *p, char *out, size_t len)
{
	size_t used = 0;

	out[0] = '\0';
	if (!p->nr_sizes) {
		snprintf(out, len, "-");
		return;
	}
	for (int i = p->nr_sizes - 1; i >= 0 && used + 16 < len; i--) {
		char label[24];

		if (!p->folio_bytes[i] || !p->anon)
			continue;
		used += (size_t)snprintf(out + used, len - used, "%s%s %.0f%%", used ? " " : "",
					 thpd_size_label(p->sizes[i], label, sizeof(label)),
					 100.0 * (double)p->folio_bytes[i] / (double)p->anon);
	}
	if (!used)
		snprintf(out, len, "base");
}

void top_print_table(const struct top_snapshot *s, enum top_sort by, const struct top_filter *f,
		     size_t max_rows, int width)
{
	char a[32], h[32], folios[96], line[512];

	printf("thpctl top: %zu processes, anon %s MiB, huge %s MiB (%.1f%%); sorted by %s%s%s%s%s\n",
	       s->n, mib(s->anon, a, sizeof(a)), mib(s->anon_huge, h, sizeof(h)),
	       s->anon ? 100.0 * (double)s->anon_huge / (double)s->anon : 0.0, top_sort_name(by),
	       f->name[0] ? "; name contains \"" : "", f->name, f->name[0] ? "\"" : "",
	       s->thpd ? "; thpd: rules shown" : "");
	snprintf(line, sizeof(line), "%8s %-16s %10s %10s %6s %-7s %-8s %-16s%s", "PID", "COMM",
		 "ANON MiB", "HUGE MiB", "HUGE%", "POLICY", "SOURCE", "RULE",
		 f->folios ? " FOLIOS" : "");
	put_line(line, width);
	for (size_t i = 0; i < s->n && (!max_rows || i < max_rows); i++) {
		const struct top_proc *p = &s->procs[i];

		if (f->folios)
			folio_column(p, folios, sizeof(folios));
		snprintf(line, sizeof(line), "%8d %-16.16s %10s %10s %5.1f%% %-7s %-8s %-16.16s%s%s",
			 (int)p->pid, p->comm, mib(p->anon, a, sizeof(a)),
			 mib(p->anon_huge, h, sizeof(h)), 100.0 * share(p), p->policy, p->source,
			 p->rule[0] ? p->rule : "-", f->folios ? " " : "", f->folios ? folios : "");
		put_line(line, width);
	}
}

int top_print_json(const struct top_snapshot *s)
{
	struct json j;
	char label[24];

	json_begin_document(&j, stdout, "top");
	json_u64(&j, "anon_bytes", s->anon);
	json_u64(&j, "anon_huge_bytes", s->anon_huge);
	json_bool(&j, "thpd", s->thpd);
	json_begin_array(&j, "processes");
	for (size_t i = 0; i < s->n; i++) {
		const struct top_proc *p = &s->procs[i];

		json_begin_object(&j, NULL);
		json_i64(&j, "pid", p->pid);
		json_i64(&j, "ppid", p->ppid);
		json_u64(&j, "uid", p->uid);
		json_string(&j, "comm", p->comm);
		json_u64(&j, "rss_bytes", p->rss);
		json_u64(&j, "anon_bytes", p->anon);
		json_u64(&j, "anon_huge_bytes", p->anon_huge);
		if (p->thp_disabled < 0)
			json_null(&j, "thp_disabled");
		else
			json_bool(&j, "thp_disabled", p->thp_disabled);
		thpctl_json_policy(&j, strcmp(p->policy, TOP_SYSTEM_OR_NOHUGE) ? p->policy : NULL);
		json_string(&j, "source", p->source);
		json_string(&j, "rule", p->rule[0] ? p->rule : NULL);
		if (!p->nr_sizes) {
			json_null(&j, "folio_bytes");
		} else {
			json_begin_object(&j, "folio_bytes");
			json_u64(&j, "base", p->base_bytes);
			for (int k = 0; k < p->nr_sizes; k++)
				json_u64(&j, thpd_size_label(p->sizes[k], label, sizeof(label)),
					 p->folio_bytes[k]);
			json_end_object(&j);
		}
		json_end_object(&j);
	}
	json_end_array(&j);
	json_end_object(&j);
	return json_finish(&j);
}
