/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the inject session needs to know of the target's architecture:
 * registers, the system call instruction, the seccomp audit value.  One
 * implementation per architecture under lib/arch/, picked by meson from
 * the host's CPU family; lib/arch/generic/ says the backend is unavailable.
 */
#ifndef THP_INJECT_ARCH_H
#define THP_INJECT_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "inject_regs.h" /* lib/arch/ARCH/: struct inject_regs, INJECT_ARCH_* */

/* 0, or -EOPNOTSUPP with a detail when this build cannot inject at all. */
int inject_arch_supported(void);
/* The stopped thread's registers, read or written: 0 or -ESRCH. */
int inject_arch_get_regs(pid_t tid, struct inject_regs *r);
int inject_arch_set_regs(pid_t tid, const struct inject_regs *r);
/* 0 when the thread runs the ABI the session calls with; -EOPNOTSUPP with a detail. */
int inject_arch_check_abi(pid_t tid, const struct inject_regs *r);
/* @r made to run call @nr(@a[0..4]) from the syscall instruction at @ip. */
void inject_arch_set_call(struct inject_regs *r, unsigned long ip, long nr,
			  const unsigned long a[5]);
/* At a syscall stop: the call's number (entry), its result (exit). */
long inject_arch_call_nr(const struct inject_regs *r);
long inject_arch_call_result(const struct inject_regs *r);
/* Offset of the first system call instruction in @buf, or -1. */
long inject_arch_find_syscall(const unsigned char *buf, size_t len);
/* The syscall user dispatch selector byte, from the word read at its address. */
unsigned int inject_arch_selector_byte(long word);

#endif
