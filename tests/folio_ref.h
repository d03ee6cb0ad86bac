/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A reference count of anonymous memory by folio size, for the tests only. */
#ifndef THP_TESTS_FOLIO_REF_H
#define THP_TESTS_FOLIO_REF_H

#include <stdint.h>
#include <sys/types.h>

#define FOLIO_REF_ORDERS 21

/*
 * Bytes of [start, end) of process @pid (0: self) present, anonymous and
 * not the zero page, by the order of their folio (bytes[0]: base pages).
 * One page at a time: a pagemap entry, then kpageflags of its frame,
 * walking frames down to the folio's head and up past its tails.
 * 0, -EPERM when the frame numbers are hidden, or -errno.
 */
int folio_ref_count(pid_t pid, uint64_t start, uint64_t end, uint64_t bytes[FOLIO_REF_ORDERS]);

#endif
