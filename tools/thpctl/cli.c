// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl: what the commands share: errors, usage errors, options given once, output. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <thp/thp.h>

#include "cli.h"
#include "thpctl.h"

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
		THP_POLICY_SYSTEM,
		THP_POLICY_HUGE,
		THP_POLICY_NOHUGE,
		THP_POLICY_NEVER,
	};

	if (!name)
		return -1;
	for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
		if (!strcmp(name, thp_policy_name((unsigned int)policies[i])))
			return policies[i];
	return -1;
}
