// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl apply: THP advice for ranges of a process, or for all its mappings. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <thp/thp.h>

#include "cli.h"
#include "json.h"
#include "parse.h"
#include "thpctl.h"

/* Failed mappings thp_apply_all() reports in detail; the rest are counted. */
#define ALL_FAILURES_CAP 256

struct apply_req {
	pid_t pid;              /* 0: thpctl itself */
	bool self;
	int advice;             /* enum thp_advice, 0 until given */
	const char *advice_name;
	bool all, json;
	uint32_t flags;         /* THP_F_* */
	uint32_t backend;       /* THP_BACKEND_INJECT with --inject, else auto */
	struct thp_range *ranges;
	size_t nranges;
};

struct apply_result {
	int ret;                /* the library's return value */
	char detail[256];       /* thp_strerror_detail() right after the call */
	uint32_t backend_used;
	struct thp_report *reports; /* ranges: one per range; all: the failures */
	size_t nreports;
	struct thp_apply_all_opts all; /* --all: the counters */
	int exit_status;
};

static int parse_advice(const char *s)
{
	if (!strcmp(s, "huge"))
		return THP_ADVICE_HUGE;
	if (!strcmp(s, "nohuge"))
		return THP_ADVICE_NOHUGE;
	if (!strcmp(s, "collapse"))
		return THP_ADVICE_COLLAPSE;
	return 0;
}

static const char *errno_name(int e)
{
	const char *n = e ? strerrorname_np(e) : NULL;

	return n ? n : "unknown";
}

static bool any_attempted(const struct apply_result *res)
{
	for (size_t i = 0; i < res->nreports; i++)
		if (res->reports[i].attempted)
			return true;
	return false;
}

/* Per-failure lines on stderr; the rest are in the report lines on stdout. */
#define MAX_ERROR_LINES 5

/*
 * Message for the errno of one report.  That errno comes from the kernel for
 * one mapping, so EINVAL means the kernel refused the advice there, not the
 * library's "invalid request" of thp_strerror().
 */
static const char *report_error_text(int error)
{
	if (error == EINVAL)
		return "Invalid argument (the kernel refused this advice for the mapping)";
	return thp_strerror(error);
}

static void json_report(struct json *j, const struct thp_report *r)
{
	char line[256];

	thp_report_format(r, line, sizeof(line));
	json_begin_object(j, NULL);
	json_hex(j, "addr", r->addr);
	json_hex(j, "end", r->addr + r->len);
	json_u64(j, "len", r->len);
	json_bool(j, "attempted", r->attempted);
	json_u64(j, "bytes_advised", r->bytes_advised);
	json_u64(j, "bytes_unmapped", r->bytes_unmapped);
	if (r->error) {
		json_hex(j, "fail_addr", r->fail_addr);
		json_i64(j, "error", r->error);
		json_string(j, "error_name", errno_name(r->error));
		json_string(j, "error_message", report_error_text(r->error));
	} else {
		json_null(j, "fail_addr");
		json_i64(j, "error", 0);
		json_null(j, "error_name");
		json_null(j, "error_message");
	}
	json_string(j, "backend", thp_backend_name(r->backend));
	json_string(j, "text", line);
	json_end_object(j);
}

static int print_json(const struct apply_req *q, const struct apply_result *res)
{
	struct json j;
	bool print_reports = q->all || any_attempted(res);

	json_begin_document(&j, stdout, "apply");
	json_i64(&j, "pid", q->pid);
	json_bool(&j, "self", q->self);
	json_string(&j, "advice", q->advice_name);
	json_string(&j, "mode", q->all ? "all" : "ranges");
	json_bool(&j, "skip_errors", q->flags & THP_F_SKIP_ERRORS);
	json_bool(&j, "no_error_on_unmapped", q->flags & THP_F_NO_ERROR_ON_UNMAPPED);
	json_i64(&j, "result", res->ret);
	if (res->ret < 0) {
		json_begin_object(&j, "error");
		json_i64(&j, "errno", -res->ret);
		json_string(&j, "name", errno_name(-res->ret));
		json_string(&j, "message", thp_strerror(res->ret));
		json_string(&j, "detail", res->detail);
		json_end_object(&j);
	} else {
		json_null(&j, "error");
	}
	json_string(&j, "backend", res->backend_used ? thp_backend_name(res->backend_used) : NULL);
	if (q->all) {
		json_u64(&j, "mappings_seen", res->all.mappings_seen);
		json_u64(&j, "mappings_advised", res->all.mappings_advised);
		json_u64(&j, "mappings_skipped", res->all.mappings_skipped);
		json_u64(&j, "bytes_advised", res->all.bytes_advised);
		json_u64(&j, "failures_needed", res->all.failures_needed);
		json_begin_array(&j, "failures");
	} else {
		json_u64(&j, "ranges_requested", q->nranges);
		if (res->ret >= 0)
			json_i64(&j, "ranges_ok", res->ret);
		else
			json_null(&j, "ranges_ok");
		json_begin_array(&j, "reports");
	}
	if (print_reports)
		for (size_t i = 0; i < res->nreports; i++)
			json_report(&j, &res->reports[i]);
	json_end_array(&j);
	json_i64(&j, "exit_status", res->exit_status);
	json_end_object(&j);
	return json_finish(&j);
}

static void print_text(const struct apply_req *q, const struct apply_result *res)
{
	char line[256];
	const char *be = thp_backend_name(res->backend_used);

	if (q->all || any_attempted(res)) {
		for (size_t i = 0; i < res->nreports; i++) {
			thp_report_format(&res->reports[i], line, sizeof(line));
			puts(line);
		}
	}
	if (q->all && res->ret >= 0) {
		printf("all mappings: seen %llu, advised %llu, skipped %llu, failed %llu, "
		       "bytes advised %llu (advice %s, backend %s)\n",
		       (unsigned long long)res->all.mappings_seen,
		       (unsigned long long)res->all.mappings_advised,
		       (unsigned long long)res->all.mappings_skipped,
		       (unsigned long long)res->all.failures_needed,
		       (unsigned long long)res->all.bytes_advised, q->advice_name, be);
		if (res->all.failures_needed > res->nreports)
			printf("(%llu more failed mappings not listed)\n",
			       (unsigned long long)(res->all.failures_needed - res->nreports));
	} else if (res->ret >= 0) {
		printf("ranges: %d of %zu advised without error (advice %s, backend %s)\n",
		       res->ret, q->nranges, q->advice_name, be);
	}
}

/* Some failure (of the call or of one report) was error @e. */
static bool failed_with(const struct apply_result *res, int e)
{
	if (res->ret == -e)
		return true;
	for (size_t i = 0; i < res->nreports; i++)
		if (res->reports[i].attempted && res->reports[i].error == e)
			return true;
	return false;
}

/*
 * Whatever failed, failed, and nothing at all was advised: exit status 1,
 * not 3 ("partial" promises that the others were advised).
 */
static bool nothing_advised(const struct apply_req *q, const struct apply_result *res)
{
	/*
	 * Bytes, not mappings: a COLLAPSE counts a mapping without a whole
	 * 2 MiB extent as advised with 0 bytes (there was nothing to collapse).
	 */
	if (q->all)
		return res->all.bytes_advised == 0;
	if (res->ret != 0)
		return false;
	for (size_t i = 0; i < res->nreports; i++)
		if (res->reports[i].bytes_advised)
			return false;
	return true;
}

/* stderr: why it failed, in the library's words plus what to do about it. */
static void print_errors(const struct apply_req *q, const struct apply_result *res)
{
	size_t failed = 0;
	bool reported = false; /* the call's error is the one of a report */
	/*
	 * With THP disabled for the process the kernel refuses every advice
	 * with EINVAL: one line that says why instead of a list of EINVALs.
	 */
	bool thp_disabled = failed_with(res, EINVAL) && thpctl_thp_disabled(q->pid) == 1;

	for (size_t i = 0; i < res->nreports; i++) {
		const struct thp_report *r = &res->reports[i];

		if (!r->attempted || !r->error)
			continue;
		if (res->ret == -r->error)
			reported = true;
		if (failed++ < MAX_ERROR_LINES && !thp_disabled)
			thpctl_error("apply: 0x%llx-0x%llx: failed at 0x%llx: %s",
				     (unsigned long long)r->addr,
				     (unsigned long long)(r->addr + r->len),
				     (unsigned long long)r->fail_addr, report_error_text(r->error));
	}
	if (failed > MAX_ERROR_LINES && !thp_disabled)
		thpctl_error("apply: ... and %zu more failures (see the report lines)",
			     failed - MAX_ERROR_LINES);
	if (res->ret == -ESRCH && !q->self) {
		thpctl_error("apply: process %d exited", (int)q->pid);
		return;
	}
	if (thp_disabled)
		thpctl_error("apply: THP is disabled for %s %d (PR_SET_THP_DISABLE, as set by "
			     "\"thpctl run --policy never\"): the kernel refuses THP advice for all "
			     "its memory", q->self ? "thpctl's own process" : "process", (int)q->pid);
	if (!q->self && failed_with(res, EPERM))
		thpctl_error("apply: advising another process needs CAP_SYS_NICE (process_madvise() "
			     "asks for it) and ptrace read access to it (the same user, or "
			     "CAP_SYS_PTRACE): thpctl lacks one of them for process %d", (int)q->pid);
	if (res->ret < 0 && reported) {
		thpctl_error("apply: stopped at the first failure (--skip-errors goes on past it)");
		return;
	}
	if (res->ret < 0) {
		if (res->detail[0])
			thpctl_error("apply: %s: %s", thp_strerror(res->ret), res->detail);
		else
			thpctl_error("apply: %s", thp_strerror(res->ret));
		if (res->ret == -EOPNOTSUPP && !q->self && q->advice != THP_ADVICE_COLLAPSE &&
		    q->backend != THP_BACKEND_INJECT)
			thpctl_error("apply: the kernel accepts only \"--advice collapse\" for "
				     "another process; huge and nohuge can be applied by a process "
				     "to itself only (to start a program with a default policy, "
				     "use \"thpctl run --policy\"; --inject makes the process issue "
				     "the call itself)");
		return;
	}
	if (q->all && res->all.failures_needed)
		thpctl_error("apply: %llu of %llu mappings failed%s",
			     (unsigned long long)res->all.failures_needed,
			     (unsigned long long)res->all.mappings_seen,
			     nothing_advised(q, res) ? ", nothing was advised" : "");
	else if (!q->all && failed)
		thpctl_error("apply: %zu of %zu ranges failed%s", failed, q->nranges,
			     nothing_advised(q, res) ? ", nothing was advised" : "");
}

static int do_apply(const struct apply_req *q, int pidfd, struct apply_result *res)
{
	if (q->all) {
		res->nreports = ALL_FAILURES_CAP;
		res->reports = calloc(res->nreports, sizeof(*res->reports));
		if (!res->reports)
			return -ENOMEM;
		memset(&res->all, 0, sizeof(res->all));
		res->all.sz = sizeof(res->all);
		res->all.pidfd = pidfd;
		res->all.advice = q->advice;
		res->all.flags = q->flags;
		res->all.backend = q->backend;
		res->all.failures = res->reports;
		res->all.failures_cap = res->nreports;
		res->ret = thp_apply_all(&res->all);
		snprintf(res->detail, sizeof(res->detail), "%s", thp_strerror_detail());
		res->backend_used = res->all.backend_used;
		if (res->all.failures_needed < res->nreports)
			res->nreports = res->all.failures_needed;
		if (res->ret < 0 || (res->all.failures_needed && nothing_advised(q, res)))
			res->exit_status = THPCTL_EXIT_FAILURE;
		else
			res->exit_status = res->all.failures_needed ? THPCTL_EXIT_PARTIAL
								    : THPCTL_EXIT_OK;
	} else {
		THP_OPTS(thp_apply_opts, o, .pidfd = pidfd, .advice = q->advice,
			 .flags = q->flags, .backend = q->backend);

		res->nreports = q->nranges;
		res->reports = calloc(res->nreports, sizeof(*res->reports));
		if (!res->reports)
			return -ENOMEM;
		o.reports = res->reports;
		res->ret = thp_apply_ranges(q->ranges, q->nranges, &o);
		snprintf(res->detail, sizeof(res->detail), "%s", thp_strerror_detail());
		res->backend_used = o.backend_used;
		if (res->ret < 0 || nothing_advised(q, res))
			res->exit_status = THPCTL_EXIT_FAILURE;
		else
			res->exit_status = (size_t)res->ret == q->nranges ? THPCTL_EXIT_OK
									 : THPCTL_EXIT_PARTIAL;
	}
	return 0;
}

/* Parse the command line into @q; THPCTL_EXIT_OK or the status to exit with. */
static int parse_args(int argc, char **argv, struct apply_req *q, bool *help)
{
	enum { OPT_JSON = 256, OPT_ALL, OPT_SKIP, OPT_NOUNMAPPED, OPT_INJECT };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "advice", required_argument, NULL, 'a' },
		{ "all", no_argument, NULL, OPT_ALL },
		{ "skip-errors", no_argument, NULL, OPT_SKIP },
		{ "no-error-on-unmapped", no_argument, NULL, OPT_NOUNMAPPED },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "inject", no_argument, NULL, OPT_INJECT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long page = sysconf(_SC_PAGESIZE);
	unsigned long long seen = 0;
	const char *why;
	int opt;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":p:a:h", longopts, NULL)) != -1) {
		if (thpctl_option_once("apply", longopts, opt, &seen))
			return THPCTL_EXIT_USAGE;
		switch (opt) {
		case 'p':
			if (thpctl_parse_pid(optarg, &q->pid, &why))
				return thpctl_usage_error("apply", "invalid PID '%s': %s", optarg, why);
			break;
		case 'a':
			q->advice = parse_advice(optarg);
			q->advice_name = optarg;
			if (!q->advice)
				return thpctl_usage_error("apply", "unknown advice '%s' (expected huge, "
							  "nohuge or collapse)", optarg);
			break;
		case OPT_ALL:
			q->all = true;
			break;
		case OPT_SKIP:
			q->flags |= THP_F_SKIP_ERRORS;
			break;
		case OPT_NOUNMAPPED:
			q->flags |= THP_F_NO_ERROR_ON_UNMAPPED;
			break;
		case OPT_JSON:
			q->json = true;
			break;
		case OPT_INJECT:
			q->backend = THP_BACKEND_INJECT;
			break;
		case 'h':
			*help = true;
			return THPCTL_EXIT_OK;
		default:
			return thpctl_bad_option("apply", argv, opt);
		}
	}
	if (!q->advice)
		return thpctl_usage_error("apply", "--advice huge|nohuge|collapse is required");
	if (q->backend == THP_BACKEND_INJECT && !q->pid)
		return thpctl_usage_error("apply", "--inject acts on another process: give -p PID");
	if (q->all && optind < argc)
		return thpctl_usage_error("apply", "give either --all or ranges, not both");
	if (!q->all && optind == argc)
		return thpctl_usage_error("apply", "no ranges given (START-END, START+LEN, or --all)");
	if ((size_t)(argc - optind) > THP_MAX_RANGES)
		return thpctl_usage_error("apply", "too many ranges (at most %u)", THP_MAX_RANGES);
	if (q->all)
		return THPCTL_EXIT_OK;
	/* Every range is checked before any is applied. */
	q->nranges = (size_t)(argc - optind);
	q->ranges = calloc(q->nranges, sizeof(*q->ranges));
	if (!q->ranges) {
		thpctl_error("apply: out of memory");
		return THPCTL_EXIT_FAILURE;
	}
	for (size_t i = 0; i < q->nranges; i++) {
		const char *arg = argv[optind + (int)i];

		if (thpctl_parse_range(arg, page > 0 ? (uint64_t)page : 4096, &q->ranges[i], &why))
			return thpctl_usage_error("apply", "invalid range '%s': %s", arg, why);
	}
	return THPCTL_EXIT_OK;
}

int thpctl_cmd_apply(int argc, char **argv)
{
	struct apply_req q;
	struct apply_result res;
	bool help = false;
	int pidfd = THP_SELF, status;

	memset(&q, 0, sizeof(q));
	memset(&res, 0, sizeof(res));
	status = parse_args(argc, argv, &q, &help);
	if (help) {
		fputs(thpctl_apply_command.usage, stdout);
		status = thpctl_finish_output(THPCTL_EXIT_OK);
		goto out;
	}
	if (status != THPCTL_EXIT_OK)
		goto out;
	pidfd = thpctl_open_target(&q.pid, &q.self);
	if (pidfd < 0) {
		status = THPCTL_EXIT_FAILURE;
		goto out;
	}
	if (do_apply(&q, pidfd, &res)) {
		thpctl_error("apply: out of memory");
		status = THPCTL_EXIT_FAILURE;
		goto out;
	}
	status = res.exit_status;
	if (q.json) {
		if (print_json(&q, &res))
			status = THPCTL_EXIT_FAILURE;
	} else {
		print_text(&q, &res);
	}
	status = thpctl_finish_output(status);
	print_errors(&q, &res);
out:
	free(res.reports);
	free(q.ranges);
	thpctl_close_target(pidfd);
	return status;
}

/* Its row in thpctl's command list (main.c) and the text --help prints. */
const struct thpctl_command thpctl_apply_command = {
	.name = "apply",
	.fn = thpctl_cmd_apply,
	.summary = "apply THP advice to address ranges or a whole process",
	.usage =
		"Usage: thpctl apply [-p PID] --advice huge|nohuge|collapse\n"
		"                    (--all | RANGE...) [--skip-errors]\n"
		"                    [--no-error-on-unmapped] [--inject] [--json]\n"
		"\n"
		"Apply one THP advice to RANGEs of a process, or to all its mappings.\n"
		"A RANGE is START-END (END exclusive) or START+LEN; numbers are decimal or\n"
		"0x hex, LEN may end in K, M, G or T.  START must be page aligned.  All\n"
		"ranges are checked before any is applied.\n"
		"The kernel accepts only \"collapse\" for another process: huge and nohuge\n"
		"work on thpctl's own process only, which is of use for testing; to give a\n"
		"program a default policy, start it with \"thpctl run\".  With --inject\n"
		"the process issues madvise() itself: one of its threads is stopped with\n"
		"ptrace for a moment (needs ptrace rights; x86_64; see thpctl(1)).\n"
		"\n"
		"Options:\n"
		"  -p, --pid PID            target process (default: thpctl itself)\n"
		"  -a, --advice ADVICE      huge (MADV_HUGEPAGE), nohuge (MADV_NOHUGEPAGE)\n"
		"                           or collapse (MADV_COLLAPSE)\n"
		"  --all                    every mapping of the process\n"
		"  --skip-errors            go on past failures (exit status 3 if any,\n"
		"                           1 if all failed)\n"
		"  --no-error-on-unmapped   unmapped gaps inside a RANGE are not errors\n"
		"  --inject                 with -p: the inject backend (the process makes\n"
		"                           the call itself; pauses one of its threads)\n"
		"  --json                   machine-readable output (thpctl-json.md in libthp-doc)\n"
		"  -h, --help               show this help\n"
		"\n"
		"Exit status: 0 all done, 1 failed (or nothing advised), 2 bad command line\n"
		"(nothing applied), 3 some ranges or mappings failed under --skip-errors.\n"
		"Options may be given once each.\n",
};
