/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A target's /proc files (proc.c): /proc/self/X or /proc/PID/X chosen in
 * one place, and the status files read once, fields by key.
 */
#ifndef THP_PROC_H
#define THP_PROC_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct page_region;
struct thp_target;

/* "/proc/self/@file" or "/proc/PID/@file" for @t, into @buf. */
const char *proc_path(const struct thp_target *t, const char *file, char *buf, size_t len);
/* proc_path() opened read-only: a descriptor or -errno (as open() gives it). */
int proc_open(const struct thp_target *t, const char *file);

/* What a PAGEMAP_SCAN asks for (struct pm_scan_arg's masks). */
struct proc_pagemap_query {
	uint64_t category_mask, category_inverted, category_anyof_mask, return_mask;
};
/*
 * One PAGEMAP_SCAN of [@start, @end) on the pagemap @fd: the regions
 * found (at most @n, into @vec), or -errno (-ENOTTY before 6.7).
 * *@walk_end: where the kernel stopped looking.
 */
long proc_pagemap_scan(int fd, uint64_t start, uint64_t end, const struct proc_pagemap_query *q,
		       struct page_region *vec, size_t n, uint64_t *walk_end);

/*
 * The status file of process @pid (@tid 0) or of its thread @tid, into
 * @buf (NUL-terminated): its length, or -ESRCH (gone) or another -errno.
 * @pid 0: the calling process (/proc/self/status).
 */
long proc_status_read(pid_t pid, pid_t tid, char *buf, size_t len);
/* The value of field @key ("\nUid:") in @buf, blanks skipped; NULL when absent. */
const char *proc_status_find(const char *buf, const char *key);
/*
 * One field of the status file: a number, or State's letter.  0, -ENOENT
 * (no such field), -ESRCH or another -errno.
 */
int proc_status_field(pid_t pid, pid_t tid, const char *key, long *val);

/*
 * 1 when /proc/PID/status says THP is disabled for @t (THP_enabled: 0),
 * 0 when not or not shown, -ESRCH or -errno.
 */
int proc_thp_disabled(const struct thp_target *t);
/*
 * @err, or for -ESRCH from a process whose main thread exited while
 * others run: -EOPNOTSUPP with a detail saying so (@what: "read the
 * memory of", ...).
 */
int proc_explain_gone(const struct thp_target *t, int err, const char *what);

#endif
