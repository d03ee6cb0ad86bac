/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * thpctl top: every process's anonymous memory, how much of it is huge and
 * which policy it runs under, live or once.
 *
 * top.c       options, the live view (terminal, keys) and the line mode
 * top_scan.c  one snapshot from /proc (and thpd's socket when it runs)
 * top_out.c   sorting, filtering, the table and --json
 */
#ifndef THPCTL_TOP_H
#define THPCTL_TOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define TOP_MAX_SIZES 16

struct top_proc {
	pid_t pid, ppid;
	uid_t uid;
	char comm[64];		       /* /proc/PID/stat's, made printable */
	uint64_t rss, anon, anon_huge; /* bytes, from smaps_rollup */
	int thp_disabled;	       /* THP_enabled: 0 -> 1, 1 -> 0, not shown -> -1 */
	const char *policy;	       /* "never", "huge", "system", a rule's policy, "?" */
	const char *source;	       /* "prctl", "agent", "thpd", "system" */
	char rule[64];		       /* thpd's rule name, or "" */
	int nr_sizes;		       /* --folios: entries of folio_bytes, else 0 */
	uint64_t sizes[TOP_MAX_SIZES], folio_bytes[TOP_MAX_SIZES];
	uint64_t base_bytes;
	uint64_t rss_anon_status; /* status's RssAnon when the figures were read */
	uint64_t read_ns;	  /* when smaps_rollup was read (CLOCK_MONOTONIC) */
};

struct top_snapshot {
	struct top_proc *procs;
	size_t n, cap;
	uint64_t anon, anon_huge; /* sums over procs */
	bool thpd;		  /* thpd answered: its rules are in */
	/* The previous scan, every process, by pid: figures reused (reuse_s). */
	struct top_proc *prev;
	size_t nprev;
};

struct top_filter {
	const char *cgroup; /* cgroup v2 path prefix, or NULL */
	const char *rule;   /* only processes of this thpd rule, or NULL */
	char name[64];	    /* comm substring (live '/' key), or "" */
	bool folios;	    /* bytes by folio size (thp_query, slower) */
	const char *socket; /* thpd's socket */
	/*
	 * Live view: a process whose RssAnon did not change keeps the figures
	 * read at most this many seconds ago (0: read every process now).
	 */
	double reuse_s;
};

enum top_sort { SORT_HUGE,
		SORT_ANON,
		SORT_SHARE,
		SORT_PID,
		SORT_NAME };

int top_scan(const struct top_filter *f, struct top_snapshot *s);
void top_snapshot_free(struct top_snapshot *s);
void top_sort(struct top_snapshot *s, enum top_sort by);
const char *top_sort_name(enum top_sort by);
/* The table: header, then at most @max_rows rows (0: all). */
void top_print_table(const struct top_snapshot *s, enum top_sort by, const struct top_filter *f,
		     size_t max_rows, int width);
int top_print_json(const struct top_snapshot *s);

#endif
