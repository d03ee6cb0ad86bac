// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpctl collapse -p PID [--watch] [--interval S] ...: thp_collapse() over a
 * running process, once or every interval until it exits.
 */
#define _GNU_SOURCE
#include "collapse.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "json.h"
#include "parse.h"
#include "thpctl.h"

int collapse_once(int pidfd, const struct collapse_settings *s, struct thp_collapse_opts *o,
		  struct thp_report *fail)
{
	memset(o, 0, sizeof(*o));
	o->sz = sizeof(*o);
	o->pidfd = pidfd;
	o->flags = s->flags;
	o->min_present_pages = s->min_present;
	o->max_shared_pages = s->max_shared;
	o->budget_bytes = s->budget_bytes;
	o->budget_ns = s->budget_ns;
	o->failures = fail;
	o->failures_cap = COLLAPSE_FAILURES_CAP;
	return thp_collapse(o);
}

int collapse_parse_seconds(const char *s, uint64_t *ns, const char **why)
{
	uint64_t whole = 0, frac = 0, scale = 1000000000ULL;
	const char *p = s;

	if (!*p || *p == '.') {
		*why = "expected seconds, e.g. 1 or 0.25";
		return -1;
	}
	for (; *p >= '0' && *p <= '9'; p++) {
		whole = whole * 10 + (uint64_t)(*p - '0');
		if (whole > 86400) {
			*why = "more than a day";
			return -1;
		}
	}
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++) {
			scale /= 10;
			frac += (uint64_t)(*p - '0') * scale;
		}
	}
	if (*p) {
		*why = "not a number of seconds";
		return -1;
	}
	*ns = whole * 1000000000ULL + frac;
	if (*ns > 86400ULL * 1000000000ULL) {
		*why = "more than a day";
		return -1;
	}
	return 0;
}

void collapse_sleep(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ULL),
			       .tv_nsec = (long)(ns % 1000000000ULL) };

	nanosleep(&ts, NULL);
}

static unsigned long long kib(uint64_t bytes)
{
	return (unsigned long long)(bytes >> 10);
}

void collapse_print_text(FILE *f, pid_t pid, const struct thp_collapse_opts *o,
			 const struct thp_report *fail)
{
	if (o->thp_disabled) {
		fprintf(f, "pid %d: THP is disabled for this process: nothing collapsed "
			"(AnonHugePages %llu kB of %llu kB anonymous)\n", (int)pid,
			kib(o->anon_huge_after), kib(o->anon_bytes));
		return;
	}
	fprintf(f, "pid %d: collapsed %llu extents (%llu kB) in %.1f ms; AnonHugePages %llu -> "
		"%llu kB of %llu kB anonymous; left: %llu sparse, %llu shared, %llu over budget, "
		"%llu refused; %llu of %llu mappings eligible, %llu nohuge\n", (int)pid,
		(unsigned long long)o->extents_collapsed, kib(o->bytes_collapsed),
		(double)o->elapsed_ns / 1e6, kib(o->anon_huge_before), kib(o->anon_huge_after),
		kib(o->anon_bytes), (unsigned long long)o->extents_sparse,
		(unsigned long long)o->extents_shared, (unsigned long long)o->extents_over_budget, (unsigned long long)o->extents_failed,
		(unsigned long long)o->mappings_eligible, (unsigned long long)o->mappings_seen,
		(unsigned long long)o->mappings_nohuge);
	/* MADV_COLLAPSE makes PMD-size folios only: say what the smaller ones held. */
	if (o->folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS)
		fprintf(f, "  smaller large folios (MADV_COLLAPSE makes PMD-size ones only): %llu -> "
			"%llu kB; %llu extents left in them because the PMD size is set to never\n",
			kib(o->small_folio_bytes_before), kib(o->small_folio_bytes_after),
			(unsigned long long)o->extents_small_folios);
	else
		fprintf(f, "  smaller large folios: not visible (page frame numbers need "
			"CAP_SYS_ADMIN); MADV_COLLAPSE makes PMD-size folios only\n");
	for (size_t i = 0; i < o->failures_needed && i < COLLAPSE_FAILURES_CAP; i++) {
		char line[256];

		thp_report_format(&fail[i], line, sizeof(line));
		fprintf(f, "  refused: %s\n", line);
	}
	if (o->failures_needed > COLLAPSE_FAILURES_CAP)
		fprintf(f, "  refused: ... and %llu more extents\n",
			(unsigned long long)(o->failures_needed - COLLAPSE_FAILURES_CAP));
}

static int print_json(pid_t pid, int ret, const struct thp_collapse_opts *o,
		      const struct thp_report *fail)
{
	struct json j;

	json_begin_document(&j, stdout, "collapse");
	json_i64(&j, "pid", pid);
	json_i64(&j, "result", ret);
	json_string(&j, "error", ret < 0 ? thp_strerror(ret) : NULL);
	json_string(&j, "detail", ret < 0 ? thp_strerror_detail() : NULL);
	if (ret >= 0) {
		json_bool(&j, "thp_disabled", o->thp_disabled);
		json_u64(&j, "mappings_seen", o->mappings_seen);
		json_u64(&j, "mappings_eligible", o->mappings_eligible);
		json_u64(&j, "mappings_nohuge", o->mappings_nohuge);
		json_u64(&j, "extents_collapsed", o->extents_collapsed);
		json_u64(&j, "extents_sparse", o->extents_sparse);
		json_u64(&j, "extents_shared", o->extents_shared);
		json_u64(&j, "extents_over_budget", o->extents_over_budget);
		json_u64(&j, "extents_refused", o->extents_failed);
		json_u64(&j, "bytes_collapsed", o->bytes_collapsed);
		json_u64(&j, "anon_bytes", o->anon_bytes);
		json_u64(&j, "anon_huge_before", o->anon_huge_before);
		json_u64(&j, "anon_huge_after", o->anon_huge_after);
		json_u64(&j, "elapsed_ns", o->elapsed_ns);
		json_string(&j, "folio_source", o->folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS ?
			    "pagemap+kpageflags" : "none");
		if (o->folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS) {
			json_u64(&j, "small_folio_bytes_before", o->small_folio_bytes_before);
			json_u64(&j, "small_folio_bytes_after", o->small_folio_bytes_after);
			json_u64(&j, "extents_small_folios", o->extents_small_folios);
		} else {
			json_null(&j, "small_folio_bytes_before");
			json_null(&j, "small_folio_bytes_after");
			json_null(&j, "extents_small_folios");
		}
		json_begin_array(&j, "refused");
		for (size_t i = 0; i < o->failures_needed && i < COLLAPSE_FAILURES_CAP; i++) {
			json_begin_object(&j, NULL);
			json_hex(&j, "addr", fail[i].addr);
			json_u64(&j, "len", fail[i].len);
			json_i64(&j, "errno", fail[i].error);
			json_string(&j, "error", strerror(fail[i].error));
			json_end_object(&j);
		}
		json_end_array(&j);
	}
	json_end_object(&j);
	return json_finish(&j);
}

static void print_error(pid_t pid, int ret)
{
	const char *detail = thp_strerror_detail();

	if (ret == -ESRCH)
		thpctl_error("collapse: process %d exited", (int)pid);
	else
		thpctl_error("collapse: process %d: %s%s%s", (int)pid, thp_strerror(ret),
			     *detail ? ": " : "", detail);
}

/*
 * A one-off "thpctl collapse" without a budget: passes of the default time
 * budget one after the other until none leaves an extent over the budget,
 * so that the whole process is done and a terminal sees progress between
 * passes.  One report over all passes.
 */
static int collapse_to_the_end(pid_t pid, int pidfd, const struct collapse_settings *s, bool json)
{
	struct thp_report fail[COLLAPSE_FAILURES_CAP];
	struct thp_collapse_opts o, total;
	bool progress = !json && isatty(STDERR_FILENO);
	int ret, retries = 0;

	for (unsigned long pass = 0;; pass++) {
		ret = collapse_once(pidfd, s, &o, fail);
		if (ret < 0)
			break;
		if (!pass) {
			total = o;
		} else {
			uint64_t before = total.anon_huge_before;

			total.extents_collapsed += o.extents_collapsed;
			total.bytes_collapsed += o.bytes_collapsed;
			total.elapsed_ns += o.elapsed_ns;
			o.extents_collapsed = total.extents_collapsed;
			o.bytes_collapsed = total.bytes_collapsed;
			o.elapsed_ns = total.elapsed_ns;
			o.anon_huge_before = before;
			o.small_folio_bytes_before = total.small_folio_bytes_before;
			if (total.folio_source != o.folio_source)
				o.folio_source = THP_FOLIO_SOURCE_NONE;
			total = o;
		}
		/* Done; or no progress; or only refusals (EAGAIN: no free huge page), retried twice. */
		if ((!o.extents_over_budget && !o.extents_failed) || (pass && !o.extents_collapsed) ||
		    (!o.extents_over_budget && retries++ == 2))
			break;
		if (progress && o.anon_bytes)
			fprintf(stderr, "\rthpctl: collapse: process %d: %llu of %llu MiB huge (%.0f%%)",
				(int)pid, (unsigned long long)(o.anon_huge_after >> 20),
				(unsigned long long)(o.anon_bytes >> 20),
				100.0 * (double)o.anon_huge_after / (double)o.anon_bytes);
	}
	if (progress)
		fputs("\r\033[K", stderr);
	if (json)
		return print_json(pid, ret, ret < 0 ? &o : &total, fail) ? THPCTL_EXIT_FAILURE
									: ret < 0 ? THPCTL_EXIT_FAILURE
									: total.extents_failed ? THPCTL_EXIT_PARTIAL
									: THPCTL_EXIT_OK;
	if (ret < 0) {
		print_error(pid, ret);
		return THPCTL_EXIT_FAILURE;
	}
	collapse_print_text(stdout, pid, &total, fail);
	return total.extents_failed || total.extents_over_budget ? THPCTL_EXIT_PARTIAL
								   : THPCTL_EXIT_OK;
}

int thpctl_cmd_collapse(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_WATCH, OPT_INTERVAL, OPT_BUDGET, OPT_TIME_BUDGET, OPT_MIN,
	       OPT_MAX_SHARED };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "watch", no_argument, NULL, OPT_WATCH },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "budget", required_argument, NULL, OPT_BUDGET },
		{ "time-budget", required_argument, NULL, OPT_TIME_BUDGET },
		{ "min-present", required_argument, NULL, OPT_MIN },
		{ "max-shared", required_argument, NULL, OPT_MAX_SHARED },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct collapse_settings s = { .interval_ns = COLLAPSE_DEFAULT_INTERVAL_NS,
				       .budget_ns = COLLAPSE_DEFAULT_BUDGET_NS };
	struct thp_report fail[COLLAPSE_FAILURES_CAP];
	struct thp_collapse_opts o;
	bool json = false, watch = false, budget_given = false, self;
	pid_t pid = 0;
	const char *why;
	uint64_t v;
	int opt, pidfd, ret, status;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":p:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'p':
			if (thpctl_parse_pid(optarg, &pid, &why))
				return thpctl_usage_error("collapse", "invalid PID '%s': %s", optarg,
							  why);
			break;
		case OPT_WATCH:
			watch = true;
			break;
		case OPT_INTERVAL:
			if (collapse_parse_seconds(optarg, &s.interval_ns, &why) ||
			    s.interval_ns < 10000000ULL)
				return thpctl_usage_error("collapse", "invalid interval '%s': %s",
							  optarg, s.interval_ns < 10000000ULL
								  ? "below 0.01 s" : why);
			break;
		case OPT_BUDGET:
			budget_given = true;
			if (thpctl_parse_size(optarg, &s.budget_bytes, &why))
				return thpctl_usage_error("collapse", "invalid budget '%s': %s",
							  optarg, why);
			break;
		case OPT_TIME_BUDGET:
			budget_given = true;
			if (collapse_parse_seconds(optarg, &s.budget_ns, &why))
				return thpctl_usage_error("collapse", "invalid time budget '%s': %s",
							  optarg, why);
			break;
		case OPT_MIN:
			if (thpctl_parse_u64(optarg, &v, &why) || v < 1 || v > 512)
				return thpctl_usage_error("collapse", "invalid --min-present '%s': %s",
							  optarg, "expected 1..512 pages");
			s.min_present = (uint32_t)v;
			break;
		case OPT_MAX_SHARED:
			if (thpctl_parse_u64(optarg, &v, &why) || v < 1 || v > 512)
				return thpctl_usage_error("collapse", "invalid --max-shared '%s': %s",
							  optarg, "expected 1..512 pages");
			s.max_shared = (uint32_t)v;
			break;
		case OPT_JSON:
			json = true;
			break;
		case 'h':
			fputs(thpctl_collapse_command.usage, stdout);
			return thpctl_finish_output(THPCTL_EXIT_OK);
		default:
			return thpctl_bad_option("collapse", argv, opt);
		}
	}
	if (optind < argc)
		return thpctl_usage_error("collapse", "unexpected argument '%s'", argv[optind]);
	if (!pid)
		return thpctl_usage_error("collapse", "-p PID is required");
	pidfd = thpctl_open_target(&pid, &self);
	if (pidfd < 0)
		return THPCTL_EXIT_FAILURE;
	if (!watch && !budget_given) {
		status = collapse_to_the_end(pid, pidfd, &s, json);
		thpctl_close_target(pidfd);
		return thpctl_finish_output(status);
	}
	for (unsigned long pass = 0;; pass++) {
		ret = collapse_once(pidfd, &s, &o, fail);
		/* --watch ends when the process does. */
		if (watch && pass && ret == -ESRCH) {
			status = THPCTL_EXIT_OK;
			break;
		}
		if (json)
			status = print_json(pid, ret, &o, fail) ? THPCTL_EXIT_FAILURE
								 : THPCTL_EXIT_OK;
		else if (ret >= 0 && (!watch || !pass || o.extents_collapsed || o.extents_failed))
			collapse_print_text(stdout, pid, &o, fail);
		if (ret < 0) {
			print_error(pid, ret);
			status = THPCTL_EXIT_FAILURE;
			break;
		}
		status = o.extents_failed || (!watch && o.extents_over_budget) ? THPCTL_EXIT_PARTIAL
										 : THPCTL_EXIT_OK;
		if (!watch) {
			if (o.extents_over_budget)
				thpctl_error("collapse: process %d: %llu extents left over the budget",
					     (int)pid, (unsigned long long)o.extents_over_budget);
			break;
		}
		fflush(stdout);
		collapse_sleep(s.interval_ns);
	}
	thpctl_close_target(pidfd);
	return thpctl_finish_output(status);
}

/* Its row in thpctl's command list (main.c) and the text --help prints. */
const struct thpctl_command thpctl_collapse_command = {
	.name = "collapse",
	.fn = thpctl_cmd_collapse,
	.summary = "collapse a running process's memory into huge pages",
	.usage =
		"Usage: thpctl collapse -p PID [--watch] [--interval S] [--budget SIZE]\n"
		"                       [--time-budget S] [--min-present N] [--max-shared N]\n"
		"                       [--json]\n"
		"\n"
		"Collapse the private anonymous memory of a running process into huge pages\n"
		"with process_madvise(MADV_COLLAPSE), one 2 MiB extent at a time: extents\n"
		"that hold at least N resident pages and are not huge yet.  Mappings advised\n"
		"nohuge, file and shared memory, and processes with THP disabled are left\n"
		"alone.  Needs CAP_SYS_NICE and ptrace access to the process.\n"
		"\n"
		"Options:\n"
		"  -p, --pid PID       the process (required)\n"
		"  --watch             repeat every interval until the process exits\n"
		"  --interval S        seconds between passes with --watch (default 1)\n"
		"  --budget SIZE       collapse at most SIZE bytes per pass (default: no limit)\n"
		"  --time-budget S     start no collapse after S seconds of a pass (default 0.25)\n"
		"  --min-present N     resident 4 KiB pages an extent needs (default: 512 minus\n"
		"                      khugepaged/max_ptes_none)\n"
		"  --max-shared N      leave an extent alone when more than N of its pages are\n"
		"                      shared with another process, as after a fork: collapsing\n"
		"                      would copy them (default: khugepaged/max_ptes_shared)\n"
		"  --json              machine-readable output, one document per pass\n"
		"  -h, --help          show this help\n"
		"\n"
		"Exit status: 0 done, 1 failed (e.g. not permitted), 2 bad command line,\n"
		"3 the kernel refused some extents.\n",
};
