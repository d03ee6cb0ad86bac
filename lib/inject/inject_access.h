/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* May the inject backend ptrace a process: up-front refusals and the reason for a refused seize. */
#ifndef THP_INJECT_ACCESS_H
#define THP_INJECT_ACCESS_H

#include <sys/types.h>

struct thp_target;

/*
 * Refusals certain before any ptrace call: Yama ptrace_scope 3, or 2
 * without CAP_SYS_PTRACE; a non-dumpable target without CAP_SYS_PTRACE.
 * 0, or -EPERM with the detail set.
 */
int inject_may_ptrace(const struct thp_target *t, pid_t pid);

/*
 * PTRACE_SEIZE of @pid failed with errno @e: -ESRCH, -EBUSY (traced by
 * another), -EPERM or -e, with a detail saying what refused it.
 */
int inject_ptrace_refused(const struct thp_target *t, pid_t pid, int e);

#endif
