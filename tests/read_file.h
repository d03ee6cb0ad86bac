/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* read_file(): a small file read whole (tests/read_file.c). */
#ifndef THP_TESTS_READ_FILE_H
#define THP_TESTS_READ_FILE_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Read all of @path into @buf (@len bytes with the NUL), NUL-terminated.
 * Returns the length, or -1 with errno set; ENOSPC when the file does not
 * fit (never a silently cut file).
 */
ssize_t read_file(const char *path, char *buf, size_t len);

#endif
