/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The per-thread failure detail and the return path of every public call (report.c). */
#ifndef THP_REPORT_H
#define THP_REPORT_H

#include <errno.h>
#include <stdint.h>

#include "thp/thp.h"

void report_set_detail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void report_clear_detail(void);
/* The pending detail (NULL: none), which is cleared: for the inject helper to carry it over. */
const char *report_take_pending(void);
/* End of a public call: a failure shows the detail noted, a success "". */
void report_return(int ret);
/*
 * Set errno from a libthp return value and pass it through; every public
 * call that can fail returns through here (it publishes the detail).
 */
static inline int ret_errno(int ret)
{
	if (ret < 0)
		errno = -ret;
	report_return(ret);
	return ret;
}

/*
 * The report of a range advised whole, stored in place: a helper that
 * returned the report by value showed in the happy path's ratio to the raw
 * call (doc/performance.md); this one compiles to the same stores as
 * writing it out.
 */
static inline __attribute__((always_inline)) void report_whole(struct thp_report *rep,
							       uint64_t addr, uint64_t len,
							       unsigned int backend)
{
	*rep = (struct thp_report){
		.addr = addr,
		.len = len,
		.bytes_advised = len,
		.backend = backend,
		.attempted = 1,
	};
}

#endif /* THP_REPORT_H */
