/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* x86_64: the inject session's registers and constants (inject/inject_arch.h). */
#ifndef THP_INJECT_REGS_H
#define THP_INJECT_REGS_H

#include <sys/user.h>

struct inject_regs {
	struct user_regs_struct r;
};

/* "syscall" (0f 05): the kernel reports the address after it. */
#define INJECT_ARCH_SYSCALL_LEN 2
/* AUDIT_ARCH_X86_64: what a seccomp filter sees in seccomp_data.arch. */
#define INJECT_ARCH_AUDIT 0xc000003eU

#endif
