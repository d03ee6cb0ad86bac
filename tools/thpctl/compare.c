// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpctl compare [options] -- COMMAND...
 *
 * Runs COMMAND under each policy in interleaved pairs whose order rotates
 * (never, huge / huge, never / ...), so that a drift of the machine (page
 * cache, other load, thermal) falls on every policy alike, and reports per
 * figure the medians, ranges and a verdict from the pairs.  The global THP
 * mode is never written.  See compare.h for the files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <thp/thp.h>

#include "cli.h"
#include "compare.h"
#include "parse.h"
#include "thpctl.h"

static int parse_seconds(const char *s, double lo, double hi, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	return errno || end == s || *end || !(*out >= lo && *out <= hi) ? -1 : 0;
}

static int parse_policies(const char *list, struct compare_spec *s)
{
	char buf[128], *save = NULL;

	if (strlen(list) >= sizeof(buf))
		return thpctl_usage_error("compare", "--policies: too long");
	strcpy(buf, list);
	s->npolicies = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int p = thpctl_parse_policy(t);

		if (p < 0)
			return thpctl_usage_error("compare", "--policies: unknown policy '%s' "
							     "(expected never, nohuge, system or huge)",
						  t);
		for (int i = 0; i < s->npolicies; i++)
			if (s->policies[i] == p)
				return thpctl_usage_error("compare", "--policies: '%s' twice", t);
		if (s->npolicies == COMPARE_MAX_POLICIES)
			return thpctl_usage_error("compare", "--policies: at most %d",
						  COMPARE_MAX_POLICIES);
		s->policies[s->npolicies++] = p;
	}
	if (s->npolicies < 2)
		return thpctl_usage_error("compare", "--policies: name at least two, e.g. never,huge");
	return 0;
}

static int parse_args(int argc, char **argv, struct compare_spec *s, bool *json, const char **svg)
{
	enum { OPT_POLICIES = 256,
	       OPT_PAIRS,
	       OPT_LOAD,
	       OPT_READY,
	       OPT_READY_TIMEOUT,
	       OPT_METRIC,
	       OPT_METRIC_NAME,
	       OPT_LOWER,
	       OPT_SAMPLE,
	       OPT_JSON,
	       OPT_SVG,
	       OPT_VERBOSE };
	static const struct option longopts[] = {
		{ "policies", required_argument, NULL, OPT_POLICIES },
		{ "pairs", required_argument, NULL, OPT_PAIRS },
		{ "load", required_argument, NULL, OPT_LOAD },
		{ "ready", required_argument, NULL, OPT_READY },
		{ "ready-timeout", required_argument, NULL, OPT_READY_TIMEOUT },
		{ "metric", required_argument, NULL, OPT_METRIC },
		{ "metric-name", required_argument, NULL, OPT_METRIC_NAME },
		{ "lower-is-better", no_argument, NULL, OPT_LOWER },
		{ "sample-interval", required_argument, NULL, OPT_SAMPLE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "svg", required_argument, NULL, OPT_SVG },
		{ "verbose", no_argument, NULL, OPT_VERBOSE },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long seen = 0;
	int opt, rc;
	uint64_t n;
	const char *why;
	regex_t re;

	*s = (struct compare_spec){ .npolicies = 2, .policies = { THP_POLICY_NEVER, THP_POLICY_HUGE }, .pairs = 5, .ready_timeout_s = 30, .sample_s = 0.1, .metric_better = BETTER_HIGHER };
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		if (opt != '?' && (rc = thpctl_option_once("compare", longopts, opt, &seen)))
			return rc;
		switch (opt) {
		case OPT_POLICIES:
			if ((rc = parse_policies(optarg, s)))
				return rc;
			break;
		case OPT_PAIRS:
			if (thpctl_parse_u64(optarg, &n, &why) || n < 1 || n > COMPARE_MAX_PAIRS)
				return thpctl_usage_error("compare", "--pairs: expected 1 to %d",
							  COMPARE_MAX_PAIRS);
			s->pairs = (int)n;
			break;
		case OPT_LOAD:
			s->load = optarg;
			break;
		case OPT_READY:
			s->ready = optarg;
			break;
		case OPT_READY_TIMEOUT:
			if (parse_seconds(optarg, 0.1, 3600, &s->ready_timeout_s))
				return thpctl_usage_error("compare", "--ready-timeout: expected "
								     "seconds from 0.1 to 3600");
			break;
		case OPT_METRIC:
			if (regcomp(&re, optarg, REG_EXTENDED) != 0)
				return thpctl_usage_error("compare", "--metric: not a POSIX "
								     "extended regular expression");
			regfree(&re);
			s->metric = optarg;
			break;
		case OPT_METRIC_NAME:
			s->metric_name = optarg;
			break;
		case OPT_LOWER:
			s->metric_better = BETTER_LOWER;
			break;
		case OPT_SAMPLE:
			if (parse_seconds(optarg, 0.01, 60, &s->sample_s))
				return thpctl_usage_error("compare", "--sample-interval: expected "
								     "seconds from 0.01 to 60");
			break;
		case OPT_JSON:
			*json = true;
			break;
		case OPT_SVG:
			*svg = optarg;
			break;
		case OPT_VERBOSE:
			s->verbose = true;
			break;
		case 'h':
			fputs(thpctl_compare_command.usage, stdout);
			return -1;
		default:
			return thpctl_bad_option("compare", argv, opt);
		}
	}
	if (optind >= argc)
		return thpctl_usage_error("compare", "no command (thpctl compare [options] -- CMD...)");
	if (s->ready && !s->load)
		return thpctl_usage_error("compare", "--ready needs --load (a server to wait for)");
	if (s->metric_name && !s->metric)
		return thpctl_usage_error("compare", "--metric-name needs --metric");
	if (s->metric_better == BETTER_LOWER && !s->metric)
		return thpctl_usage_error("compare", "--lower-is-better needs --metric");
	s->cmd = argv + optind;
	return 0;
}

int thpctl_cmd_compare(int argc, char **argv)
{
	struct compare_spec s;
	struct compare_unavailable na = { { NULL } };
	struct compare_run *runs;
	const char *svg = NULL;
	bool json = false;
	char self[PATH_MAX];
	size_t nruns = 0;
	int rc = parse_args(argc, argv, &s, &json, &svg);
	ssize_t len;

	if (rc)
		return rc < 0 ? THPCTL_EXIT_OK : rc;
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0) {
		thpctl_error("compare: cannot find thpctl itself (/proc/self/exe): %s",
			     strerror(errno));
		return THPCTL_EXIT_FAILURE;
	}
	self[len] = '\0';
	s.thpctl_path = self;
	runs = calloc((size_t)(s.pairs * s.npolicies), sizeof(*runs));
	if (!runs) {
		thpctl_error("compare: out of memory");
		return THPCTL_EXIT_FAILURE;
	}
	rc = THPCTL_EXIT_OK;
	for (int pair = 0; pair < s.pairs && rc == THPCTL_EXIT_OK; pair++) {
		fprintf(stderr, "thpctl: compare: pair %d of %d:", pair + 1, s.pairs);
		for (int k = 0; k < s.npolicies; k++) {
			int p = (k + pair) % s.npolicies;
			struct compare_run *r = &runs[nruns];

			r->pair = pair;
			r->order = k;
			r->policy_index = p;
			if (compare_run_once(&s, s.policies[p], r, &na) < 0) {
				rc = THPCTL_EXIT_FAILURE;
				break;
			}
			nruns++;
			fprintf(stderr, " %s %.3f s", thp_policy_name((unsigned int)s.policies[p]),
				r->fig[CMP_WALL]);
		}
		fprintf(stderr, "\n");
	}
	if (rc == THPCTL_EXIT_OK) {
		if (json)
			rc = compare_print_json(&s, runs, nruns, &na) ? THPCTL_EXIT_FAILURE : rc;
		else
			compare_print_text(&s, runs, nruns, &na);
		if (svg && compare_write_svg(svg, &s, runs, nruns) < 0) {
			thpctl_error("compare: cannot write %s: %s", svg, strerror(errno));
			rc = THPCTL_EXIT_FAILURE;
		}
	}
	for (int f = 0; f < CMP_NFIG; f++)
		free(na.why[f]);
	free(runs);
	return thpctl_finish_output(rc);
}

/* Its row in thpctl's command list (main.c) and the text --help prints. */
const struct thpctl_command thpctl_compare_command = {
	.name = "compare",
	.fn = thpctl_cmd_compare,
	.summary = "run a command under two or more policies, in pairs",
	.usage =
		"Usage: thpctl compare [--policies LIST] [--pairs N] [--metric REGEX]\n"
		"                      [--load CMD [--ready CMD]] [--json] [--svg FILE]\n"
		"                      -- COMMAND...\n"
		"\n"
		"Run COMMAND under each policy (as \"thpctl run\" starts it) in N interleaved\n"
		"pairs whose order rotates, and report per policy the median and range of\n"
		"wall time, CPU time, peak RSS, huge bytes (sampled), page faults and,\n"
		"where perf_event_open() allows, dTLB/iTLB misses; then per figure a\n"
		"verdict from the pairs: lower or higher in every pair, or no measurable\n"
		"difference.  The system-wide THP mode is left as it is.  With --load,\n"
		"COMMAND is a server: per run it is started, --ready is retried until it\n"
		"exits 0, the --load command is run and timed, then the server is stopped.\n"
		"\n"
		"Options:\n"
		"  --policies LIST        two to four of never,nohuge,system,huge; the first\n"
		"                         is the baseline of the ratios (default never,huge)\n"
		"  --pairs N              pairs of runs, 1 to 100 (default 5)\n"
		"  --metric REGEX         a figure from the output (COMMAND's, or with --load\n"
		"                         the load's): the first number REGEX matches, or its\n"
		"                         first group (POSIX extended)\n"
		"  --metric-name NAME     the metric's name in the output\n"
		"  --lower-is-better      the metric is a cost, not a rate\n"
		"  --load CMD             with a server: the load, a shell command line\n"
		"  --ready CMD            with --load: retried until it exits 0 (default:\n"
		"                         wait 1 s)\n"
		"  --ready-timeout S      give up on --ready after S seconds (default 30)\n"
		"  --sample-interval S    huge bytes sampled every S seconds (default 0.1)\n"
		"  --json                 machine-readable output (thpctl-json.md in libthp-doc)\n"
		"  --svg FILE             draw the pairs of the main figure into FILE\n"
		"  --verbose              show each run's output on stderr (a server's\n"
		"                         own output goes to /dev/null without it)\n"
		"  -h, --help             show this help\n",
};
