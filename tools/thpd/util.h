/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thpd: what several files need: auxv, RSS, fds, start time, errno labels (small /proc files: tools/common/proc_read.h). */
#ifndef THPD_UTIL_H
#define THPD_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* /proc/PID/auxv into @aux (room for @cap words): the words read, or -1
 * with errno set (ENOENT or ESRCH: the process is gone). */
ssize_t thpd_read_auxv(pid_t pid, uint64_t *aux, size_t cap);
/* The value of @type in the @n words of auxv @aux; false when it has none. */
bool thpd_auxv_value(const uint64_t *aux, ssize_t n, uint64_t type, uint64_t *val);

/* Resident memory of the daemon, from /proc/self/statm; 0 when unknown. */
uint64_t thpd_rss_bytes(void);
/* Open descriptors of the daemon (the standard process_open_fds); -1 when unknown. */
long thpd_open_fds(void);
/* The daemon's start, seconds since the epoch (process_start_time_seconds); 0 when unknown. */
double thpd_start_time_s(void);

/* The errnos a collapse failure is counted under; the last slot is "other". */
#define THPD_NERRNO 6
const char *thpd_errno_label(int slot);
int thpd_errno_slot(int err);

#endif
