/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thpctl and thpd: reading small /proc files and the fields of status, smaps_rollup and stat. */
#ifndef TOOLS_PROC_READ_H
#define TOOLS_PROC_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * File @name under directory @dirfd (AT_FDCWD: @name is a path), at most
 * @cap - 1 bytes of it, NUL-terminated in @buf: its length, or -1 with
 * errno set.
 */
ssize_t proc_read_at(int dirfd, const char *name, char *buf, size_t cap);
/* The same for /proc/@pid/@name. */
ssize_t proc_read_pid(pid_t pid, const char *name, char *buf, size_t cap);
/* The same for file @name of entry @pid (a name readdir() gave) of the
 * directory @procfd of /proc: no descriptor per process. */
ssize_t proc_read_entry(int procfd, const char *pid, const char *name, char *buf, size_t cap);
/* A whole file of any size up to 1 MiB (environ, children) into a malloc()ed
 * buffer, NUL-terminated, its length in *@len; NULL when it cannot be opened. */
char *proc_read_alloc(const char *path, size_t *len);

/* The number after "KEY:" at the start of a line of @buf (status,
 * smaps_rollup); false when there is none. */
bool proc_field(const char *buf, const char *key, unsigned long long *val);
/* A "KEY:  N kB" field of @buf in bytes; 0 when there is none. */
uint64_t proc_field_kb(const char *buf, const char *key);

/* Numeric field @field (man 5 proc: 4 is the parent, 5 the process group,
 * 22 the start time) of the text of /proc/PID/stat; false when it has none. */
bool proc_stat_field(const char *stat, int field, long long *val);
/* The command name of the text of /proc/PID/stat (between its first "("
 * and its last ")", which it may hold) into @comm; false when malformed. */
bool proc_stat_comm(const char *stat, char *comm, size_t cap);

#endif
