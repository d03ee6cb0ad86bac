// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl: the operator's tool for libthp.  Dispatch, help, version, errors. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <thp/thp.h>

#include "cli.h"
#include "thp_config.h"
#include "thpctl.h"

struct subcommand {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	const char *usage; /* synopsis and options */
};

static const struct subcommand commands[] = {
	{ "probe", thpctl_cmd_probe, "show what this kernel offers for THP control",
	  "Usage: thpctl probe [--json]\n"
	  "\n"
	  "Show each libthp backend (available or not, and why), the system-wide THP\n"
	  "mode and defrag setting, the PMD huge page size, and the kernel features\n"
	  "libthp looks for (PIDFD_SELF, PROCMAP_QUERY, MADV_COLLAPSE,\n"
	  "PR_THP_DISABLE_EXCEPT_ADVISED, the RFC PMADV_* flags).\n"
	  "\n"
	  "Options:\n"
	  "  --json        machine-readable output (thpctl-json.md in libthp-doc)\n"
	  "  -h, --help    show this help\n" },
	{ "status", thpctl_cmd_status, "show a process's THP policy and per-mapping THP state",
	  "Usage: thpctl status [-p PID] [--anon] [--huge] [--json]\n"
	  "       thpctl status --daemon [--socket PATH] [--json]\n"
	  "\n"
	  "Show the default THP policy of a process (which mechanism sets it and\n"
	  "whether it survives fork() and exec()), then one line per mapping:\n"
	  "its range, size, THP advice (huge/nohuge), THPeligible, AnonHugePages,\n"
	  "Rss and name, followed by totals.  Sizes are in KiB, as in smaps.\n"
	  "Without -p, thpctl shows itself (useful under \"thpctl run\").\n"
	  "\n"
	  "Options:\n"
	  "  -p, --pid PID  the process to show (default: thpctl itself)\n"
	  "  --anon         list anonymous mappings only (no backing file)\n"
	  "  --huge         list only mappings advised huge or holding huge pages\n"
	  "  --json         machine-readable output (thpctl-json.md in libthp-doc)\n"
	  "  --daemon       thpd's rules and largest processes instead, from its\n"
	  "                 socket (with --json: thpd's status document as it is)\n"
	  "  --socket PATH  thpd's socket (default " THPD_SOCKET_DEFAULT ")\n"
	  "  -h, --help     show this help\n" },
	{ "apply", thpctl_cmd_apply, "apply THP advice to address ranges or a whole process",
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
	  "Options may be given once each.\n" },
	{ "collapse", thpctl_cmd_collapse, "collapse a running process's memory into huge pages",
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
	  "3 the kernel refused some extents.\n" },
	{ "policy", thpctl_cmd_policy, "set a running process's default THP policy (inject)",
	  "Usage: thpctl policy -p PID never|nohuge|system\n"
	  "\n"
	  "Set the default THP policy of a running process, kept by its forked and\n"
	  "exec()ed children: the process is made to call prctl(PR_SET_THP_DISABLE)\n"
	  "itself through libthp's inject backend.  Its threads are stopped with\n"
	  "ptrace for a moment and resumed where they were; this needs ptrace\n"
	  "rights over it (CAP_SYS_PTRACE, or its user), x86_64, and refuses a\n"
	  "process already traced or under seccomp.  nohuge needs Linux 6.18.\n"
	  "\n"
	  "Options:\n"
	  "  -p, --pid PID  the process (required)\n"
	  "  -h, --help     show this help\n" },
	{ "compare", thpctl_cmd_compare, "run a command under two or more policies, in pairs",
	  "Usage: thpctl compare [--policies LIST] [--pairs N] [--metric REGEX]\n"
	  "                      [--load CMD [--ready CMD]] [--json] [--svg FILE]\n"
	  "                      -- COMMAND...\n"
	  "\n"
	  "Run COMMAND under each policy (\"thpctl run --policy P\") in N interleaved\n"
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
	  "  --load CMD             with a server: the load, run by /bin/sh -c\n"
	  "  --ready CMD            with --load: retried until it exits 0 (default:\n"
	  "                         wait 1 s)\n"
	  "  --ready-timeout S      give up on --ready after S seconds (default 30)\n"
	  "  --sample-interval S    huge bytes sampled every S seconds (default 0.1)\n"
	  "  --json                 machine-readable output (thpctl-json.md in libthp-doc)\n"
	  "  --svg FILE             draw the pairs of the main figure into FILE\n"
	  "  --verbose              show each run's output on stderr (a server's\n"
	  "                         own output goes to /dev/null without it)\n"
	  "  -h, --help             show this help\n" },
	{ "top", thpctl_cmd_top, "show every process's huge pages, live",
	  "Usage: thpctl top [--once | --json] [-n N] [-d S] [--sort KEY] [--cgroup PATH]\n"
	  "                  [--rule NAME] [--folios] [--socket PATH]\n"
	  "\n"
	  "Show every process with memory: anonymous bytes, how much of it is in\n"
	  "huge pages (AnonHugePages of /proc/PID/smaps_rollup) and its share, the\n"
	  "THP policy and where it comes from (prctl: the process's own\n"
	  "PR_SET_THP_DISABLE; agent: under thpctl run; thpd: a thpd rule, when\n"
	  "thpd runs and lists the process; system: the system-wide mode).\n"
	  "On a terminal the view refreshes every second; keys: h a s p n sort by\n"
	  "huge, anon, share, pid, name; / filter by name (Enter, Esc); q quit.\n"
	  "Elsewhere one table per refresh.\n"
	  "\n"
	  "Options:\n"
	  "  --once             one table, then exit\n"
	  "  --json             one snapshot as JSON (thpctl-json.md in libthp-doc)\n"
	  "  -n, --iterations N refresh N times, then exit\n"
	  "  -d, --delay S      seconds between refreshes (default 1)\n"
	  "  --sort KEY         huge (default), anon, share, pid or name\n"
	  "  --cgroup PATH      only processes in this cgroup v2 path or below it\n"
	  "  --rule NAME        only processes of this thpd rule\n"
	  "  --folios           also bytes by folio size (pagemap; needs root; slower)\n"
	  "  --socket PATH      thpd's socket (default " THPD_SOCKET_DEFAULT ")\n"
	  "  -h, --help         show this help\n" },
	{ "run", thpctl_cmd_run, "run a command with a default THP policy",
	  "Usage: thpctl run --policy huge|nohuge|never|system [--require-persistent]\n"
	  "                  -- CMD [ARGS...]\n"
	  "\n"
	  "Set the default THP policy of thpctl's process, then execute CMD, which\n"
	  "inherits it.  Where the kernel cannot keep \"huge\" across exec(), CMD is\n"
	  "started with libthp-preload.so in LD_PRELOAD and\n"
	  "GLIBC_TUNABLES=glibc.malloc.hugetlb=1 so that it and the programs it runs\n"
	  "get huge-advised anonymous memory (static programs: malloc only, through\n"
	  "the tunable; setuid programs: neither).\n"
	  "See thpctl(1).\n"
	  "\n"
	  "Exit status: CMD's, or 125 (thpctl failed), 126 (CMD not executable),\n"
	  "127 (CMD not found).\n" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct subcommand *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

void thpctl_usage(const char *cmd, FILE *f)
{
	const struct subcommand *c = cmd ? find_command(cmd) : NULL;

	if (c) {
		fputs(c->usage, f);
		return;
	}
	fputs("Usage: thpctl COMMAND [OPTIONS]\n"
	      "       thpctl help [COMMAND]\n"
	      "       thpctl --version\n"
	      "\n"
	      "Per-process transparent huge page (THP) control with libthp.\n"
	      "\n"
	      "Commands:\n", f);
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fputs("\n"
	      "\"thpctl help COMMAND\" or \"thpctl COMMAND --help\" describes one command.\n"
	      "Exit status: 0 success, 1 failure, 2 bad command line, 3 partial (apply);\n"
	      "run: CMD's status, or 125/126/127.  See thpctl(1).\n", f);
}

void thpctl_error(const char *fmt, ...)
{
	va_list ap;

	fputs("thpctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void thpctl_vusage_error(const char *cmd, const char *fmt, va_list ap)
{
	fprintf(stderr, "thpctl: %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nTry \"thpctl %s --help\".\n", cmd);
}

int thpctl_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	thpctl_vusage_error(cmd, fmt, ap);
	va_end(ap);
	return THPCTL_EXIT_USAGE;
}

int thpctl_bad_option(const char *cmd, char **argv, int opt)
{
	/* getopt_long() was told to be quiet (opterr = 0): say it our way. */
	if (opt == ':')
		return thpctl_usage_error(cmd, "option '%s' needs an argument", argv[optind - 1]);
	if (strncmp(argv[optind - 1], "--", 2) && optopt > ' ' && optopt < 127)
		return thpctl_usage_error(cmd, "unknown option '-%c'", optopt);
	return thpctl_usage_error(cmd, "unknown option or bad use of '%s'", argv[optind - 1]);
}

int thpctl_option_once(const char *cmd, const struct option *longopts, int opt,
		       unsigned long long *seen)
{
	for (unsigned int i = 0; i < 64 && longopts[i].name; i++) {
		if (longopts[i].val != opt)
			continue;
		if (*seen & (1ULL << i))
			return thpctl_usage_error(cmd, "option '--%s' given more than once",
						  longopts[i].name);
		*seen |= 1ULL << i;
		return 0;
	}
	return 0;
}

int thpctl_finish_output(int status)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		thpctl_error("cannot write output: %s", strerror(errno));
		return status == THPCTL_EXIT_OK ? THPCTL_EXIT_FAILURE : status;
	}
	return status;
}

int thpctl_parse_policy(const char *name)
{
	static const int policies[] = {
		THP_POLICY_SYSTEM, THP_POLICY_HUGE, THP_POLICY_NOHUGE, THP_POLICY_NEVER,
	};

	if (!name)
		return -1;
	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		if (!strcmp(name, thp_policy_name((unsigned int)policies[i])))
			return policies[i];
	return -1;
}

static int cmd_help(int argc, char **argv)
{
	if (argc > 2)
		return thpctl_usage_error("help", "too many arguments");
	if (argc == 2 && !find_command(argv[1]))
		return thpctl_usage_error("help", "unknown command '%s'", argv[1]);
	thpctl_usage(argc == 2 ? argv[1] : NULL, stdout);
	return thpctl_finish_output(THPCTL_EXIT_OK);
}

int main(int argc, char **argv)
{
	const struct subcommand *c;

	if (argc < 2) {
		thpctl_usage(NULL, stderr);
		return THPCTL_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help"))
		return cmd_help(argc - 1, argv + 1);
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		if (argc > 2) {
			thpctl_error("--version takes no arguments");
			return THPCTL_EXIT_USAGE;
		}
		printf("thpctl %s (libthp %s)\n", THP_VERSION_STRING, thp_version());
		return thpctl_finish_output(THPCTL_EXIT_OK);
	}
	c = find_command(argv[1]);
	if (!c) {
		if (argv[1][0] == '-')
			thpctl_error("unknown option '%s' (options go after the command)", argv[1]);
		else
			thpctl_error("unknown command '%s'", argv[1]);
		fputs("Try \"thpctl --help\".\n", stderr);
		return THPCTL_EXIT_USAGE;
	}
	return c->fn(argc - 1, argv + 1);
}
