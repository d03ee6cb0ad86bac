/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thpctl: what the commands share (cli.c): usage errors, options given once, output. */
#ifndef THPCTL_CLI_H
#define THPCTL_CLI_H

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>

/*
 * "thpctl: CMD: <message>" and a pointer to --help on stderr; returns
 * THPCTL_EXIT_USAGE for the caller to return.
 */
int thpctl_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The same message, for callers with their own exit status (run: 125). */
void thpctl_vusage_error(const char *cmd, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* The getopt_long() error for the option at argv[optind - 1]. */
int thpctl_bad_option(const char *cmd, char **argv, int opt);

/*
 * An option may be given once: a second --advice (or -p, ...) is a usage
 * error rather than "the last one wins".  @opt is what getopt_long()
 * returned, @longopts the table it was given (at most 64 entries); @seen
 * collects one bit per entry.  Returns 0 the first time, else prints the
 * error and returns THPCTL_EXIT_USAGE.
 */
int thpctl_option_once(const char *cmd, const struct option *longopts, int opt,
		       unsigned long long *seen);

/* Flush stdout and report a write error (e.g. a closed pipe) as failure. */
int thpctl_finish_output(int status);

#endif
