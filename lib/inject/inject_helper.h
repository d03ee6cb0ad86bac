/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The helper process that runs each inject request (inject_helper.c). */
#ifndef THP_INJECT_HELPER_H
#define THP_INJECT_HELPER_H

#include <stdbool.h>
#include <sys/types.h>

/*
 * Run @fn(@arg), a whole inject session (begin, calls, finish), in a helper
 * process that shares the caller's memory and is the target's tracer, so
 * that the target is restored whatever happens to the caller.  Returns
 * @fn's result, and @fn's failure detail becomes the caller's; or -errno
 * with a detail when no helper could be started.  @fn's only results are
 * its return value and the detail: under valgrind the helper is a copy
 * of the caller (a fork), and nothing else it writes comes back.
 */
long inject_helper_run(long (*fn)(void *arg), void *arg);

/* The process whose request this is (in a helper: the one it works for). */
pid_t inject_caller_pid(void);

/* Is process @tracer this caller's, or one of its inject helpers? */
bool inject_tracer_is_ours(long tracer);

#endif
