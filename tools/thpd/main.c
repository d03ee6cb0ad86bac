// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: options, the signal and poll loop, readiness and reload, logging. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <syslog.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include <thp/thp.h>

#include "clock_ns.h" /* lib/: clock_ns(), now_ns() */
#include "log.h"
#include "thpd.h"
#include "watchdog.h"

#define DEFAULT_CONFIG "/etc/thpd.conf"
#define DEFAULT_CONFIG_DIR "/etc/thpd.d"
#define EARLY_PASS_NS (200ULL * 1000000ULL)
#define EVENTS_GAP_NS (100ULL * 1000000ULL)

static void usage(FILE *f)
{
	fputs("Usage: thpd [--config FILE] [--config-dir DIR] [--socket PATH] [--metrics-file PATH]\n"
	      "            [--listen HOST:PORT] [--interval MS] [--once] [--check-config] [--verbose]\n"
	      "Per-workload transparent huge page policy by rule (see thpd(8), thpd.conf(5)).\n",
	      f);
}

/* Errors as "FILE:LINE: message", one log line each, at err priority. */
static void log_errors(const char *err)
{
	while (err && *err) {
		size_t n = strcspn(err, "\n");

		thpd_log(LOG_ERR, "%.*s", (int)n, err);
		err += n + (err[n] == '\n');
	}
}

struct opts {
	const char *config, *config_dir, *socket, *metrics_file, *listen;
	bool config_given;
	uint64_t interval_ms;
	bool once, check, verbose;
};

static int load(const struct opts *o, struct thpd_config *c)
{
	char *err = NULL;
	int n = thpd_config_load(c, o->config, !o->config_given, o->config_dir, &err);

	if (n) {
		log_errors(err);
		thpd_config_free(c);
	}
	free(err);
	if (!n && o->interval_ms)
		c->interval_ms = o->interval_ms;
	return n;
}

static void on_exec(void *arg, pid_t pid)
{
	thpd_consider(arg, pid);
}

static void on_exit_ev(void *arg, pid_t pid)
{
	thpd_forget(arg, pid);
}

static void status_line(const struct thpd_state *st, bool ready)
{
	uint64_t huge = 0, alignable = 0;

	for (size_t i = 0; i < st->cfg.nrules; i++) {
		if (st->cfg.rules[i].conf.policy == THPD_RULE_HUGE) {
			huge += st->cfg.rules[i].last.huge;
			alignable += st->cfg.rules[i].last.alignable;
		}
	}
	sd_notifyf(0, "%sSTATUS=%zu rules, %zu processes matched, %llu of %llu MiB huge under huge rules",
		   ready ? "READY=1\n" : "", st->cfg.nrules, st->nmatched,
		   (unsigned long long)(huge >> 20), (unsigned long long)(alignable >> 20));
}

static void raise_nofile(void)
{
	struct rlimit rl;

	/* One pidfd per matched process. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int run(const struct opts *o)
{
	struct thpd_state st;
	struct thpd_config c;
	struct thpd_server *sv;
	sigset_t mask;
	char *err = NULL;
	int sfd, ret = 0;
	bool ready = false;
	uint64_t watchdog_ns;
	uint64_t next_pass, last_pass = 0, events_after = 0;

	thpd_state_init(&st);
	st.verbose = o->verbose;
	if (!st.hash || load(o, &c) != 0)
		return 1;
	thpd_state_set_config(&st, &c);
	thpd_note_reload(&st, true);
	sigemptyset(&mask);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		thpd_log(LOG_ERR, "signalfd: %s", strerror(errno));
		return 1;
	}
	raise_nofile();
	watchdog_ns = thpd_watchdog_start();
	sv = thpd_server_open(o->socket, o->listen ? o->listen : st.cfg.listen, &err);
	if (!sv) {
		thpd_log(LOG_ERR, "%s", err ? err : "out of memory");
		free(err);
		close(sfd);
		thpd_state_free(&st);
		return 1;
	}
	st.scan = thpd_scan_open(true);
	thpd_log(LOG_INFO, "thpd (libthp %s): %zu rules, processes found by %s", thp_version(),
		 st.cfg.nrules,
		 thpd_scan_has_connector(st.scan) ? "the proc connector and a /proc walk"
						  : "a /proc walk each interval");
	if (watchdog_ns)
		thpd_log(LOG_INFO, "watchdog: alive every %llu ms",
			 (unsigned long long)(watchdog_ns / 1000000));
	next_pass = now_ns();
	for (;;) {
		struct pollfd fds[40];
		size_t n = 0;
		uint64_t now = now_ns();
		int timeout;

		thpd_watchdog_ping();
		if (st.early) {
			uint64_t soon = last_pass + EARLY_PASS_NS;

			if (soon < next_pass)
				next_pass = soon;
			st.early = false;
		}
		if (now >= next_pass) {
			const char *mf = o->metrics_file ? o->metrics_file : st.cfg.metrics_file;

			last_pass = now;
			thpd_pass(&st);
			/* A catch-up pass is timed from this one's end: its
			 * wait is what the CPU budget needs to earn. */
			next_pass = (st.work_left ? now_ns() : now) + thpd_next_pass_ns(&st);
			if (mf)
				thpd_metrics_write_file(&st, mf); /* logs its failures */
			status_line(&st, !ready);
			ready = true;
			continue;
		}
		fds[n++] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		/* Connector events are taken in batches, at most every
		 * EVENTS_GAP_NS: a busy machine forks and execs all the time. */
		bool events = thpd_scan_fd(st.scan) >= 0 && now >= events_after;
		uint64_t wake = next_pass;

		if (events)
			fds[n++] = (struct pollfd){ .fd = thpd_scan_fd(st.scan), .events = POLLIN };
		else if (thpd_scan_fd(st.scan) >= 0 && events_after < wake)
			wake = events_after;
		n += thpd_server_pollfds(sv, fds + n, sizeof(fds) / sizeof(fds[0]) - n);
		if (thpd_watchdog_deadline() < wake)
			wake = thpd_watchdog_deadline();
		/* A client's deadline wakes the loop: it is dropped in time. */
		if (thpd_server_deadline(sv) < wake)
			wake = thpd_server_deadline(sv);
		timeout = wake > now ? (int)((wake - now + 999999) / 1000000) : 0;
		if (poll(fds, n, timeout) < 0 && errno != EINTR) {
			thpd_log(LOG_ERR, "poll: %s", strerror(errno));
			ret = 1;
			break;
		}
		if (fds[0].revents & POLLIN) {
			struct signalfd_siginfo si;
			bool quit = false;

			while (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGHUP) {
					sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
						   (unsigned long long)(now_ns() / 1000));
					if (load(o, &c) == 0) {
						thpd_state_set_config(&st, &c);
						thpd_note_reload(&st, true);
						if (!o->listen)
							thpd_server_relisten(sv, st.cfg.listen);
						thpd_log(LOG_INFO, "reloaded: %zu rules", st.cfg.nrules);
						/* New rules act now, not an interval later. */
						next_pass = now_ns();
					} else {
						thpd_note_reload(&st, false);
						thpd_log(LOG_ERR, "reload failed: the %zu rules loaded before stay",
							 st.cfg.nrules);
					}
					sd_notify(0, "READY=1");
				} else {
					quit = true;
				}
			}
			if (quit) {
				thpd_log(LOG_INFO, "stopping");
				sd_notify(0, "STOPPING=1");
				break;
			}
		}
		if (events && (fds[1].revents & POLLIN)) {
			if (thpd_scan_drain(st.scan, on_exec, on_exit_ev, &st))
				st.events_lost = true;
			events_after = now_ns() + EVENTS_GAP_NS;
		}
		thpd_server_handle(sv, &st);
	}
	thpd_server_close(sv);
	thpd_scan_close(st.scan);
	close(sfd);
	thpd_state_free(&st);
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "config-dir", required_argument, NULL, 'd' },
		{ "socket", required_argument, NULL, 's' },
		{ "metrics-file", required_argument, NULL, 'm' },
		{ "listen", required_argument, NULL, 'l' },
		{ "interval", required_argument, NULL, 'i' },
		{ "once", no_argument, NULL, '1' },
		{ "check-config", no_argument, NULL, 'C' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .config = DEFAULT_CONFIG, .config_dir = DEFAULT_CONFIG_DIR, .socket = THPD_SOCKET_DEFAULT };
	int opt;

	while ((opt = getopt_long(argc, argv, "c:d:s:m:l:i:1Cvh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			o.config = optarg;
			o.config_given = true;
			break;
		case 'd':
			o.config_dir = optarg;
			break;
		case 's':
			o.socket = optarg;
			break;
		case 'm':
			o.metrics_file = optarg;
			break;
		case 'l':
			o.listen = optarg;
			break;
		case 'i': {
			char *end;
			unsigned long long v;

			errno = 0;
			v = strtoull(optarg, &end, 10);
			if (errno || *end || v < 10 || v > 3600000) {
				fprintf(stderr, "thpd: --interval: expected 10 to 3600000 ms, got '%s'\n",
					optarg);
				return 2;
			}
			o.interval_ms = v;
			break;
		}
		case '1':
			o.once = true;
			break;
		case 'C':
			o.check = true;
			break;
		case 'v':
			o.verbose = true;
			thpd_log_verbose(true);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "thpd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (o.check) {
		struct thpd_config c;
		char *err = NULL;
		int n = thpd_config_load(&c, o.config, !o.config_given, o.config_dir, &err);

		if (n) {
			fputs(err ? err : "out of memory\n", stderr);
		} else {
			struct thp_probe_info pi = { .sz = sizeof(pi) };

			thpd_config_print(&c, stdout);
			/* On stderr: the rules stay one line each on stdout. */
			thpd_own_policy_notes(&c, thp_probe(&pi) == 0 && pi.thp_disable_except_advised,
					      stderr);
		}
		free(err);
		thpd_config_free(&c);
		return n ? 1 : 0;
	}
	if (o.once) {
		struct thpd_state st;
		struct thpd_config c;
		size_t len;
		char *text;

		thpd_state_init(&st);
		if (!st.hash || load(&o, &c) != 0)
			return 1;
		thpd_state_set_config(&st, &c);
		thpd_note_reload(&st, true);
		thpd_pass(&st);
		text = thpd_metrics_text(&st, &len);
		if (!text || fwrite(text, 1, len, stdout) != len || fflush(stdout) != 0) {
			free(text);
			thpd_state_free(&st);
			return 1;
		}
		free(text);
		if (o.metrics_file)
			thpd_metrics_write_file(&st, o.metrics_file);
		thpd_state_free(&st);
		return 0;
	}
	return run(&o);
}
