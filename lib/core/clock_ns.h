/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The clocks in nanoseconds, header-only: lib/, thpctl (which links a
 * libthp.a whose own symbols are local) and the bench share this one.
 */
#ifndef THP_CLOCK_NS_H
#define THP_CLOCK_NS_H

#include <stdint.h>
#include <time.h>

/* @id's time in nanoseconds (CLOCK_THREAD_CPUTIME_ID: this thread's CPU time). */
static inline uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC: for budgets and intervals, never set back. */
static inline uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

#endif /* THP_CLOCK_NS_H */
