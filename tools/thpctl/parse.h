/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thpctl: strict parsers for the command line (numbers, sizes, ranges, PIDs). */
#ifndef THPCTL_PARSE_H
#define THPCTL_PARSE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <thp/thp.h>

/*
 * Each parser returns 0 on success or -1 with a short explanation (static
 * or in @why, never NULL) of what is wrong with the text; nothing is
 * written to the outputs on failure.
 */

/* Unsigned number, "0x" hex or decimal; no sign, no spaces, no overflow. */
int thpctl_parse_u64(const char *s, uint64_t *out, const char **why);

/* As thpctl_parse_u64() plus an optional K, M, G or T suffix (powers of 1024). */
int thpctl_parse_size(const char *s, uint64_t *out, const char **why);

/*
 * "START-END" (END exclusive) or "START+LEN" (LEN may have a size suffix).
 * START must be a multiple of @page_size; the range must not be empty and
 * must not wrap.
 */
int thpctl_parse_range(const char *s, uint64_t page_size, struct thp_range *out,
		       const char **why);

/* A process id: decimal, 1..INT_MAX. */
int thpctl_parse_pid(const char *s, pid_t *out, const char **why);

/*
 * pidfd_open(2) for @pid, never returning descriptor 0 (THP_SELF).  On
 * failure prints "thpctl: ..." and returns -1 (ESRCH: "no such process").
 */
int thpctl_open_pidfd(pid_t pid);

/*
 * The target of "-p PID": for 0 or thpctl's own pid, *@self is set, *@pid
 * becomes getpid() and THP_SELF is returned; else a pidfd as from
 * thpctl_open_pidfd(), or -1 (message printed).
 */
int thpctl_open_target(pid_t *pid, bool *self);
/* Close what thpctl_open_target() opened (nothing for THP_SELF or -1). */
void thpctl_close_target(int pidfd);

/*
 * Whether the kernel has THP disabled for @pid (PR_SET_THP_DISABLE, shown
 * as "THP_enabled: 0" in /proc/PID/status): 1 yes, 0 no, -1 cannot tell.
 */
int thpctl_thp_disabled(pid_t pid);

#endif
