// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpctl status: a process's default THP policy and its per-mapping THP
 * state.  This file reads them (options, the library calls); status.h
 * lists the others.
 */
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
#include "status.h"
#include "thpctl.h"

/* "thpctl: ..." for a library failure; the target's exit gets its own words. */
static void lib_error(const char *what, const struct status_data *d, int err)
{
	if (err == -ESRCH && !d->self)
		thpctl_error("status: process %d exited", (int)d->pid);
	else if (*thp_strerror_detail())
		thpctl_error("status: %s: %s (%s)", what, thp_strerror(err), thp_strerror_detail());
	else
		thpctl_error("status: %s: %s", what, thp_strerror(err));
}

static int gather(int pidfd, struct status_data *d)
{
	size_t cap = 0;
	int r;

	d->def.sz = sizeof(d->def);
	d->def.pidfd = pidfd;
	r = thp_get_default(&d->def);
	if (r == -EOPNOTSUPP && !d->self) {
		/* Not a failure: the kernel does not show this from outside. */
		d->policy_known = false;
		snprintf(d->detail, sizeof(d->detail), "%s", thp_strerror_detail());
	} else if (r < 0) {
		lib_error("cannot read the default policy", d, r);
		return -1;
	} else {
		d->policy_known = true;
	}

	d->pi.sz = sizeof(d->pi);
	d->pi_ok = thp_probe(&d->pi) == 0;
	/* The address space may grow between calls: retry with the new count. */
	for (int tries = 0; tries < 16; tries++) {
		THP_OPTS(thp_query_opts, q, .pidfd = pidfd, .flags = THP_QUERY_F_FOLIO_SIZES,
			 .states = d->maps, .states_cap = cap, .folios = d->folios);
		struct thp_mapping_state *n;
		struct thp_mapping_folios *f;

		r = thp_query(&q);
		if (r < 0) {
			lib_error("cannot read the mappings", d, r);
			return -1;
		}
		if (q.states_needed <= cap) {
			d->nmaps = (size_t)r;
			d->anon = q.anon_bytes;
			d->anon_huge = q.anon_huge_bytes;
			d->alignable = q.anon_alignable_bytes;
			d->q = q;
			d->policy_alignable = q.anon_sized_alignable_bytes;
			for (uint32_t i = 0; i < q.nr_sizes; i++)
				if (status_size_policy(d, q.sizes[i].size))
					d->policy_bytes += q.sizes[i].bytes;
			/* NEVER gets no size: its coverage is the plain AnonHugePages one. */
			d->sized = q.folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS &&
				   q.anon_sized_alignable_bytes &&
				   !(d->policy_known && d->def.policy == THP_POLICY_NEVER);
			return 0;
		}
		cap = q.states_needed + 16;
		n = realloc(d->maps, cap * sizeof(*n));
		if (!n) {
			thpctl_error("status: out of memory");
			return -1;
		}
		d->maps = n;
		f = realloc(d->folios, cap * sizeof(*f));
		if (!f) {
			thpctl_error("status: out of memory");
			return -1;
		}
		d->folios = f;
	}
	thpctl_error("status: the mappings of process %d keep changing", (int)d->pid);
	return -1;
}

int thpctl_cmd_status(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_ANON, OPT_HUGE, OPT_DAEMON, OPT_SOCKET };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "anon", no_argument, NULL, OPT_ANON },
		{ "huge", no_argument, NULL, OPT_HUGE },
		{ "daemon", no_argument, NULL, OPT_DAEMON },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct status_opts o = { 0 };
	struct status_data d;
	int opt, pidfd = THP_SELF, status = THPCTL_EXIT_FAILURE;
	unsigned long long seen = 0;
	const char *why, *socket_path = NULL;
	bool daemon = false;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":p:h", longopts, NULL)) != -1) {
		if (thpctl_option_once("status", longopts, opt, &seen))
			return THPCTL_EXIT_USAGE;
		switch (opt) {
		case 'p':
			if (thpctl_parse_pid(optarg, &o.pid, &why))
				return thpctl_usage_error("status", "invalid PID '%s': %s", optarg, why);
			break;
		case OPT_JSON:
			o.json = true;
			break;
		case OPT_ANON:
			o.anon_only = true;
			break;
		case OPT_HUGE:
			o.huge_only = true;
			break;
		case OPT_DAEMON:
			daemon = true;
			break;
		case OPT_SOCKET:
			socket_path = optarg;
			break;
		case 'h':
			fputs(thpctl_status_command.usage, stdout);
			return thpctl_finish_output(THPCTL_EXIT_OK);
		default:
			return thpctl_bad_option("status", argv, opt);
		}
	}
	if (optind < argc)
		return thpctl_usage_error("status", "unexpected argument '%s'", argv[optind]);
	if (socket_path && !daemon)
		return thpctl_usage_error("status", "--socket goes with --daemon");
	if (daemon && (o.pid || o.anon_only || o.huge_only))
		return thpctl_usage_error("status", "--daemon takes no -p, --anon or --huge");
	if (daemon)
		return thpctl_finish_output(thpctl_status_daemon(socket_path, o.json));

	memset(&d, 0, sizeof(d));
	d.pid = o.pid;
	pidfd = thpctl_open_target(&d.pid, &d.self);
	if (pidfd < 0)
		return THPCTL_EXIT_FAILURE;
	if (gather(pidfd, &d) != 0)
		goto out;
	if (o.json) {
		status = status_print_json(&o, &d) ? THPCTL_EXIT_FAILURE : THPCTL_EXIT_OK;
	} else {
		status_print_text(&o, &d);
		status = THPCTL_EXIT_OK;
	}
	status = thpctl_finish_output(status);
out:
	free(d.maps);
	free(d.folios);
	thpctl_close_target(pidfd);
	return status;
}

/* Its row in thpctl's command list (main.c) and the text --help prints. */
const struct thpctl_command thpctl_status_command = {
	.name = "status",
	.fn = thpctl_cmd_status,
	.summary = "show a process's THP policy and per-mapping THP state",
	.usage =
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
		"  -h, --help     show this help\n",
};
