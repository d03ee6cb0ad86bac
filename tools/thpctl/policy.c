// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl policy: set a running process's default policy through the inject backend. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <thp/thp.h>

#include "cli.h"
#include "parse.h"
#include "thpctl.h"

int thpctl_cmd_policy(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	unsigned long long seen = 0;
	const char *why;
	pid_t pid = 0;
	bool self = false;
	int opt, policy, pidfd, ret;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":p:h", longopts, NULL)) != -1) {
		if (thpctl_option_once("policy", longopts, opt, &seen))
			return THPCTL_EXIT_USAGE;
		switch (opt) {
		case 'p':
			if (thpctl_parse_pid(optarg, &pid, &why))
				return thpctl_usage_error("policy", "invalid PID '%s': %s", optarg, why);
			break;
		case 'h':
			fputs(thpctl_policy_command.usage, stdout);
			return thpctl_finish_output(THPCTL_EXIT_OK);
		default:
			return thpctl_bad_option("policy", argv, opt);
		}
	}
	if (!pid)
		return thpctl_usage_error("policy", "-p PID is required (to start a program with "
					  "a policy, use \"thpctl run --policy\")");
	if (optind + 1 != argc)
		return thpctl_usage_error("policy", "give one policy: never, nohuge or system");
	policy = thpctl_parse_policy(argv[optind]);
	if (policy < 0 || policy == THP_POLICY_HUGE)
		return thpctl_usage_error("policy", "unknown policy '%s' (expected never, nohuge "
					  "or system; huge cannot be kept by a running process: "
					  "start it with \"thpctl run --policy huge\")", argv[optind]);
	pidfd = thpctl_open_target(&pid, &self);
	if (pidfd < 0)
		return THPCTL_EXIT_FAILURE;
	if (self) {
		thpctl_close_target(pidfd);
		return thpctl_usage_error("policy", "-p names thpctl itself");
	}
	{
		THP_OPTS(thp_default_opts, o, .pidfd = pidfd, .policy = (uint32_t)policy,
			 .backend = THP_BACKEND_INJECT);

		ret = thp_set_default(&o);
		thpctl_close_target(pidfd);
		if (ret < 0) {
			thpctl_error("policy: %s: %s", thp_strerror(ret), thp_strerror_detail());
			return THPCTL_EXIT_FAILURE;
		}
		printf("process %d: policy %s (backend %s, %s)\n", (int)pid,
		       thp_policy_name(o.policy), thp_backend_name(o.backend_used),
		       o.persistent ? "kept across fork and exec" : "not persistent");
	}
	return thpctl_finish_output(THPCTL_EXIT_OK);
}

/* Its row in thpctl's command list (main.c) and the text --help prints. */
const struct thpctl_command thpctl_policy_command = {
	.name = "policy",
	.fn = thpctl_cmd_policy,
	.summary = "set a running process's default THP policy (inject)",
	.usage =
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
		"  -h, --help     show this help\n",
};
