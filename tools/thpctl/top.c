// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpctl top [options]: every process's anonymous memory and huge pages,
 * refreshed each second.  On a terminal a full-screen view with keys
 * (h a s p n: sort by huge, anon, share, pid, name; / filter by name;
 * q quit); elsewhere one table per refresh, as lines; --once and --json
 * one snapshot for scripts.  Plain ANSI escapes, no curses: thpctl
 * depends on libc and libthp only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "parse.h"
#include "thpctl.h"
#include "top.h"

/* How long the live view keeps an unchanged process's figures. */
#define TOP_REUSE_S 5.0

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

struct top_args {
	struct top_filter filter;
	enum top_sort sort;
	bool once, json;
	uint64_t iterations; /* 0: until quit */
	double delay_s;
};

static int parse_sort(const char *s, enum top_sort *out)
{
	for (int k = SORT_HUGE; k <= SORT_NAME; k++)
		if (!strcmp(s, top_sort_name(k))) {
			*out = k;
			return 0;
		}
	return -1;
}

static int parse_args(int argc, char **argv, struct top_args *a)
{
	enum { OPT_ONCE = 256,
	       OPT_JSON,
	       OPT_CGROUP,
	       OPT_RULE,
	       OPT_FOLIOS,
	       OPT_SORT,
	       OPT_SOCKET };
	static const struct option longopts[] = {
		{ "once", no_argument, NULL, OPT_ONCE },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "iterations", required_argument, NULL, 'n' },
		{ "delay", required_argument, NULL, 'd' },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "rule", required_argument, NULL, OPT_RULE },
		{ "folios", no_argument, NULL, OPT_FOLIOS },
		{ "sort", required_argument, NULL, OPT_SORT },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long seen = 0;
	const char *why;
	char *end;
	int opt, rc;

	*a = (struct top_args){ .sort = SORT_HUGE, .delay_s = 1, .filter = { .socket = THPD_SOCKET_DEFAULT } };
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+hn:d:", longopts, NULL)) != -1) {
		if (opt != '?' && (rc = thpctl_option_once("top", longopts, opt, &seen)))
			return rc;
		switch (opt) {
		case OPT_ONCE:
			a->once = true;
			break;
		case OPT_JSON:
			a->json = a->once = true;
			break;
		case 'n':
			if (thpctl_parse_u64(optarg, &a->iterations, &why) || !a->iterations)
				return thpctl_usage_error("top", "--iterations: expected a count of 1 or more");
			break;
		case 'd':
			errno = 0;
			a->delay_s = strtod(optarg, &end);
			if (errno || end == optarg || *end || !(a->delay_s >= 0.1 && a->delay_s <= 3600))
				return thpctl_usage_error("top", "--delay: expected seconds from 0.1 to 3600");
			break;
		case OPT_CGROUP:
			if (optarg[0] != '/')
				return thpctl_usage_error("top", "--cgroup: expected a cgroup v2 path "
								 "starting with / (as in /proc/PID/cgroup)");
			a->filter.cgroup = optarg;
			break;
		case OPT_RULE:
			a->filter.rule = optarg;
			break;
		case OPT_FOLIOS:
			a->filter.folios = true;
			break;
		case OPT_SORT:
			if (parse_sort(optarg, &a->sort))
				return thpctl_usage_error("top", "--sort: expected huge, anon, share, "
								 "pid or name");
			break;
		case OPT_SOCKET:
			a->filter.socket = optarg;
			break;
		case 'h':
			fputs(thpctl_top_command.usage, stdout);
			return -1;
		default:
			return thpctl_bad_option("top", argv, opt);
		}
	}
	if (optind < argc)
		return thpctl_usage_error("top", "unexpected argument '%s'", argv[optind]);
	return 0;
}

/* Terminal state: raw keys, the alternate screen; put back on every exit. */
static struct termios saved_tty;
static bool tty_raw;

static void tty_restore(void)
{
	if (tty_raw) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tty);
		fputs("\033[?25h\033[?1049l", stdout);
		fflush(stdout);
		tty_raw = false;
	}
}

static int tty_enter(void)
{
	struct termios t;

	if (tcgetattr(STDIN_FILENO, &saved_tty) < 0)
		return -1;
	t = saved_tty;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) < 0)
		return -1;
	tty_raw = true;
	fputs("\033[?1049h\033[?25l", stdout);
	return 0;
}

static void tty_size(int *rows, int *cols)
{
	struct winsize w;

	*rows = 24;
	*cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_row && w.ws_col) {
		*rows = w.ws_row;
		*cols = w.ws_col;
	}
}

struct live {
	bool editing; /* '/' typed: the keys go to the filter */
	char edit[64];
	size_t edit_len;
	bool quit;
};

static void live_key(struct live *l, struct top_args *a, char c)
{
	if (l->editing) {
		if (c == '\n' || c == '\r') {
			memcpy(a->filter.name, l->edit, l->edit_len);
			a->filter.name[l->edit_len] = '\0';
			l->editing = false;
		} else if (c == 27) {
			l->editing = false;
		} else if ((c == 127 || c == 8) && l->edit_len) {
			l->edit_len--;
		} else if (c >= 32 && c < 127 && l->edit_len + 1 < sizeof(l->edit)) {
			l->edit[l->edit_len++] = c;
		}
		return;
	}
	switch (c) {
	case 'q':
		l->quit = true;
		break;
	case 'h':
		a->sort = SORT_HUGE;
		break;
	case 'a':
		a->sort = SORT_ANON;
		break;
	case 's':
		a->sort = SORT_SHARE;
		break;
	case 'p':
		a->sort = SORT_PID;
		break;
	case 'n':
		a->sort = SORT_NAME;
		break;
	case '/':
		l->editing = true;
		l->edit_len = 0;
		break;
	default:
		break;
	}
}

static int run_live(struct top_args *a, bool interactive)
{
	struct top_snapshot s = { 0 };
	struct live l = { 0 };
	uint64_t done = 0;
	int rc = THPCTL_EXIT_OK;

	if (interactive && tty_enter() < 0)
		interactive = false;
	/* Each refresh reads smaps_rollup only of processes that changed (top.h). */
	a->filter.reuse_s = TOP_REUSE_S;
	while (!stop_requested && !l.quit) {
		int rows, cols, err;

		if ((err = top_scan(&a->filter, &s)) < 0) {
			tty_restore();
			thpctl_error("top: reading /proc: %s", strerror(-err));
			rc = THPCTL_EXIT_FAILURE;
			break;
		}
		top_sort(&s, a->sort);
		if (interactive) {
			tty_size(&rows, &cols);
			fputs("\033[H\033[2J", stdout);
			top_print_table(&s, a->sort, &a->filter, rows > 4 ? (size_t)rows - 4 : 1, cols);
			if (l.editing)
				printf("filter by name: %.*s", (int)l.edit_len, l.edit);
			else
				printf("keys: h a s p n sort by huge, anon, share, pid, name; / filter; q quit");
		} else {
			top_print_table(&s, a->sort, &a->filter, 0, 0);
			putchar('\n');
		}
		if (fflush(stdout) != 0)
			break;
		if (a->iterations && ++done >= a->iterations)
			break;
		/* Wait out the delay, taking keys as they come. */
		struct timespec start, now;

		clock_gettime(CLOCK_MONOTONIC, &start);
		for (;;) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			double left = a->delay_s - (double)(now.tv_sec - start.tv_sec) -
				      (double)(now.tv_nsec - start.tv_nsec) / 1e9;
			struct pollfd p = { .fd = interactive ? STDIN_FILENO : -1, .events = POLLIN };
			char c;

			if (left <= 0 || stop_requested)
				break;
			if (poll(&p, 1, (int)(left * 1000) + 1) > 0 && read(STDIN_FILENO, &c, 1) == 1) {
				live_key(&l, a, c);
				break; /* redraw at once: a key shows its effect */
			}
		}
	}
	tty_restore();
	top_snapshot_free(&s);
	return rc;
}

int thpctl_cmd_top(int argc, char **argv)
{
	struct top_args a;
	struct top_snapshot s = { 0 };
	struct sigaction sa = { .sa_handler = on_signal };
	struct stat st;
	int rc = parse_args(argc, argv, &a), err;

	if (rc)
		return rc < 0 ? THPCTL_EXIT_OK : rc;
	/* thpd is asked only when its socket is there: no error when it does not run. */
	if (a.filter.socket && (stat(a.filter.socket, &st) != 0 || !S_ISSOCK(st.st_mode)))
		a.filter.socket = NULL;
	if (a.once) {
		if ((err = top_scan(&a.filter, &s)) < 0) {
			thpctl_error("top: reading /proc: %s", strerror(-err));
			return THPCTL_EXIT_FAILURE;
		}
		top_sort(&s, a.sort);
		if (a.json)
			rc = top_print_json(&s) ? THPCTL_EXIT_FAILURE : THPCTL_EXIT_OK;
		else
			top_print_table(&s, a.sort, &a.filter, 0, 0);
		top_snapshot_free(&s);
		return thpctl_finish_output(rc);
	}
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	rc = run_live(&a, isatty(STDOUT_FILENO) && isatty(STDIN_FILENO));
	return thpctl_finish_output(rc);
}

/* Its row in thpctl's command list (main.c) and the text --help prints. */
const struct thpctl_command thpctl_top_command = {
	.name = "top",
	.fn = thpctl_cmd_top,
	.summary = "show every process's huge pages, live",
	.usage =
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
		"  -h, --help         show this help\n",
};
