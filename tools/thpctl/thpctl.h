/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thpctl: shared declarations of the subcommands. */
#ifndef THPCTL_H
#define THPCTL_H

#include <stdbool.h>

#include "thpd_interface.h" /* tools/common: thpd's socket and JSON schema */

/*
 * Exit codes (documented in thpctl(1)).  "run" follows env(1)/nice(1):
 * 125 when thpctl itself failed before exec, 126 when CMD could not be
 * executed, 127 when CMD was not found; otherwise CMD's own status.
 */
enum thpctl_exit {
	THPCTL_EXIT_OK = 0,          /* everything asked for was done */
	THPCTL_EXIT_FAILURE = 1,     /* the operation failed (library error) */
	THPCTL_EXIT_USAGE = 2,       /* bad command line */
	THPCTL_EXIT_PARTIAL = 3,     /* apply: some ranges/mappings failed */
	THPCTL_EXIT_RUN_FAILED = 125,
	THPCTL_EXIT_CANNOT_EXEC = 126,
	THPCTL_EXIT_NOT_FOUND = 127,
};

/* A command: its name, its function (argv[0] = the command's name), a
 * one-line summary and the usage --help prints; defined in NAME.c. */
struct thpctl_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	const char *usage; /* synopsis and options */
};
extern const struct thpctl_command thpctl_probe_command, thpctl_status_command,
	thpctl_apply_command, thpctl_collapse_command, thpctl_policy_command, thpctl_run_command,
	thpctl_compare_command, thpctl_top_command;

/* Each subcommand gets argv with argv[0] = the subcommand name. */
int thpctl_cmd_probe(int argc, char **argv);
int thpctl_cmd_status(int argc, char **argv);
int thpctl_cmd_apply(int argc, char **argv);
int thpctl_cmd_run(int argc, char **argv);
int thpctl_cmd_collapse(int argc, char **argv);
int thpctl_cmd_policy(int argc, char **argv);
int thpctl_cmd_compare(int argc, char **argv);

/*
 * status --daemon: thpd's status document from its socket (@socket_path,
 * NULL: THPD_SOCKET_DEFAULT), as a table or, with @json, as thpd wrote it.
 */
int thpctl_status_daemon(const char *socket_path, bool json);
/* daemon_table.c: thpd's status document (json_parse.h's tree) as a table. */
struct jval;
void thpctl_daemon_table(const struct jval *doc);
/*
 * thpd's status document (schema THPD_JSON_SCHEMA) from its socket, quietly:
 * NULL when thpd does not answer in time or answers something else.  Free
 * with json_free() and free(*answer).
 */
struct jval *thpctl_daemon_document(const char *socket_path, char **answer, size_t *len);
int thpctl_cmd_top(int argc, char **argv);
/*
 * status_json.c: a process's "policy" and "policy_candidates" in --json
 * (doc/thpctl-json.md): @policy's name, or NULL for system or nohuge,
 * which another process's /proc does not tell apart.
 */
struct json;
void thpctl_json_policy(struct json *j, const char *policy);

/* "thpctl: <message>\n" on stderr (cli.c). */
void thpctl_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The libthp-preload.so that "thpctl run --policy huge" uses (run.c):
 * $THPCTL_PRELOAD, else the build tree's when this thpctl binary lies in
 * that build tree, else the installed one.  Not checked to exist.  NULL
 * with *@why set when it cannot tell where this binary is.
 */
const char *thpctl_preload_path(const char **why);

/* "huge" / "nohuge" / "never" / "system" -> enum thp_policy; -1 if unknown (cli.c). */
int thpctl_parse_policy(const char *name);

#endif
