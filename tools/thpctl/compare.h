/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * thpctl compare: one command run under two or more policies in
 * interleaved, order-rotated pairs, and what the pairs say.
 *
 * compare.c       options, the pairs, the order of runs
 * compare_run.c   one run: start, sample, rusage, perf counters
 * compare_stats.c medians, ranges and the per-pair verdicts (no I/O)
 * compare_out.c   the text table, --json and --svg
 */
#ifndef THPCTL_COMPARE_H
#define THPCTL_COMPARE_H

#include <stdbool.h>
#include <stddef.h>

/* The figures measured per run; NAN in a run means "not measured". */
enum compare_figure {
	CMP_WALL,     /* seconds: the command's (or, with a server, the load's) */
	CMP_CPU,      /* seconds, user + system, of the measured process tree */
	CMP_PEAK_RSS, /* bytes: ru_maxrss of the largest process of the tree */
	CMP_HUGE,     /* bytes: most AnonHugePages seen in the tree at once */
	CMP_MINFLT,   /* minor page faults */
	CMP_MAJFLT,   /* major page faults */
	CMP_DTLB,     /* dTLB load misses (perf, user space) */
	CMP_ITLB,     /* iTLB load misses (perf, user space) */
	CMP_WALK,     /* page-walk cycles: no generic perf event exists */
	CMP_METRIC,   /* the --metric pattern's number from the output */
	CMP_NFIG
};

enum compare_better { BETTER_LOWER = -1,
		      BETTER_NONE = 0,
		      BETTER_HIGHER = 1 };

struct compare_figure_info {
	const char *label;     /* text table */
	const char *json_name; /* --json */
	const char *unit;      /* "s", "bytes", "" */
	enum compare_better better;
};

const struct compare_figure_info *compare_figure_info(enum compare_figure f);

/* Median and range over the values of @v that are not NAN. */
struct compare_stats {
	size_t n; /* values that are not NAN; 0: the rest is NAN */
	double median, min, max;
};

void compare_stats(const double *v, size_t n, struct compare_stats *out);

enum compare_verdict_kind {
	VERDICT_TOO_FEW,       /* fewer than 2 pairs with both values */
	VERDICT_LOWER_EVERY,   /* other < base in every pair */
	VERDICT_HIGHER_EVERY,  /* other > base in every pair */
	VERDICT_SAME,	       /* equal in every pair */
	VERDICT_NO_DIFFERENCE, /* the pairs disagree (or some tie) */
};

/*
 * The verdict on @other against @base from pairs (base[i], other[i]);
 * a pair with a NAN is left out.  The ratios other/base of pairs whose
 * base is not 0 give ratio_median/min/max (NAN when there is none).
 */
struct compare_verdict {
	enum compare_verdict_kind kind;
	size_t pairs; /* pairs used */
	double ratio_median, ratio_min, ratio_max;
};

void compare_verdict(const double *base, const double *other, size_t n,
		     struct compare_verdict *out);
const char *compare_verdict_name(enum compare_verdict_kind k); /* JSON word */

/* Bounds of the command line. */
#define COMPARE_MAX_POLICIES 4
#define COMPARE_MAX_PAIRS 100

struct compare_spec {
	char **cmd;		 /* the command (with --load: the server) */
	const char *load;	 /* --load: /bin/sh -c string run per pair */
	const char *ready;	 /* --ready: /bin/sh -c string, exit 0 = up */
	double ready_timeout_s;	 /* --ready-timeout */
	const char *metric;	 /* --metric: POSIX extended regex */
	const char *metric_name; /* --metric-name */
	enum compare_better metric_better;
	double sample_s;	 /* huge-bytes sampling interval */
	const char *thpctl_path; /* this thpctl, for "thpctl run" */
	bool verbose;		 /* echo the captured output */
	int npolicies;
	int policies[COMPARE_MAX_POLICIES];
	int pairs;
};

/* One run's results. */
struct compare_run {
	int pair, order, policy_index;
	int exit_status;
	double fig[CMP_NFIG];
};

/* Why a figure was not measured (the same for every run), or NULL. */
struct compare_unavailable {
	char *why[CMP_NFIG];
};

/*
 * Run the command once under @policy; fills @run->fig and
 * @run->exit_status.  Returns 0, or -1 with a message printed (the run
 * could not be made or measured).  @na collects why counters are missing.
 */
int compare_run_once(const struct compare_spec *spec, int policy, struct compare_run *run,
		     struct compare_unavailable *na);

/* Outputs: the table on stdout, the JSON document, the SVG chart. */
void compare_print_text(const struct compare_spec *spec, const struct compare_run *runs,
			size_t nruns, const struct compare_unavailable *na);
int compare_print_json(const struct compare_spec *spec, const struct compare_run *runs,
		       size_t nruns, const struct compare_unavailable *na);
int compare_write_svg(const char *path, const struct compare_spec *spec,
		      const struct compare_run *runs, size_t nruns);

/* The values of figure @f for policy index @p, by pair (NAN where none). */
void compare_pair_values(const struct compare_run *runs, size_t nruns, int pairs, int p,
			 enum compare_figure f, double *out);

#endif
