// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl: the operator's tool for libthp.  Dispatch, help, version. */
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

/* Each command's name, function, summary and usage, in the order help lists them. */
static const struct thpctl_command *const commands[] = {
	&thpctl_probe_command, &thpctl_status_command, &thpctl_apply_command,
	&thpctl_collapse_command, &thpctl_policy_command, &thpctl_run_command,
	&thpctl_compare_command, &thpctl_top_command,
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct thpctl_command *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i]->name, name))
			return commands[i];
	return NULL;
}

/* The usage of command @cmd (NULL: the overview) to @f. */
static void usage(const char *cmd, FILE *f)
{
	const struct thpctl_command *c = cmd ? find_command(cmd) : NULL;

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
		fprintf(f, "  %-8s %s\n", commands[i]->name, commands[i]->summary);
	fputs("\n"
	      "\"thpctl help COMMAND\" or \"thpctl COMMAND --help\" describes one command.\n"
	      "Exit status: 0 success, 1 failure, 2 bad command line, 3 partial (apply);\n"
	      "run: CMD's status, or 125/126/127.  See thpctl(1).\n", f);
}

static int cmd_help(int argc, char **argv)
{
	if (argc > 2)
		return thpctl_usage_error("help", "too many arguments");
	if (argc == 2 && !find_command(argv[1]))
		return thpctl_usage_error("help", "unknown command '%s'", argv[1]);
	usage(argc == 2 ? argv[1] : NULL, stdout);
	return thpctl_finish_output(THPCTL_EXIT_OK);
}

int main(int argc, char **argv)
{
	const struct thpctl_command *c;

	if (argc < 2) {
		usage(NULL, stderr);
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
