/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thpd: what several of its files need: small /proc files, its own RSS, errno labels. */
#ifndef THPD_UTIL_H
#define THPD_UTIL_H

#include <stdint.h>
#include <sys/types.h>

/* A small /proc file whole, NUL-terminated: its length, or -1. */
ssize_t thpd_read_small(const char *path, char *buf, size_t cap);

/* Resident memory of the daemon, from /proc/self/statm; 0 when unknown. */
uint64_t thpd_rss_bytes(void);

/* The errnos a collapse failure is counted under; the last slot is "other". */
#define THPD_NERRNO 6
const char *thpd_errno_label(int slot);
int thpd_errno_slot(int err);

#endif
