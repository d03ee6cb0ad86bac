/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thpd: what several files need: small /proc files and their fields, auxv, RSS, errno labels. */
#ifndef THPD_UTIL_H
#define THPD_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A small /proc file whole, NUL-terminated: its length, or -1. */
ssize_t thpd_read_small(const char *path, char *buf, size_t cap);

/* The first number after "KEY:" at the start of a line of @buf (a /proc
 * file such as status or smaps_rollup); false when there is none. */
bool thpd_field(const char *buf, const char *key, unsigned long long *val);

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
