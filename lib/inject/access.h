/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* May the caller touch another process (access.c): as its peer, through ptrace. */
#ifndef THP_ACCESS_H
#define THP_ACCESS_H

#include <sys/types.h>

struct thp_target;

/*
 * 1 when @t is the caller's peer (same real, effective and saved user and
 * group IDs as this thread's filesystem IDs, and dumpable), 0 when not
 * (the detail says why), -ESRCH or another -errno.
 */
int access_is_peer(const struct thp_target *t);
/*
 * 1 when @t is dumpable (PR_GET_DUMPABLE 1), 0 when not, -1 when it
 * cannot be seen (a target running as root before 6.16, whose /proc
 * files are root's either way).  Asked of a live thread: an exited main
 * thread has no mm, and its answers would say "not dumpable" or "its
 * user's", whatever the process is.
 */
int access_dumpable(const struct thp_target *t);
/*
 * Refusals certain before any ptrace call: Yama ptrace_scope 3, or 2
 * without CAP_SYS_PTRACE; a non-dumpable target without CAP_SYS_PTRACE.
 * 0, or -EPERM with the detail set.
 */
int access_may_ptrace(const struct thp_target *t, pid_t pid);
/*
 * PTRACE_SEIZE of @pid failed with errno @e: -ESRCH, -EBUSY (traced by
 * another), -EPERM or -e, with a detail saying what refused it.
 */
int access_ptrace_refused(const struct thp_target *t, pid_t pid, int e);

#endif
