/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The inject backend's syscall instruction: found in the target's vDSO, never written. */
#ifndef THP_INJECT_VDSO_H
#define THP_INJECT_VDSO_H

#include <stdint.h>
#include <sys/types.h>

/*
 * The address of a syscall instruction in the vDSO of thread @tid of
 * process @pid, which the caller has ptrace-stopped.  0; -ENOENT: no
 * vDSO; -ENOEXEC: no syscall instruction in it; -EPERM with detail: it
 * cannot be read; -ESRCH; -ENOMEM.  Nothing of the target is written.
 */
int inject_vdso_syscall_ip(pid_t pid, pid_t tid, uint64_t *ip);

#endif
