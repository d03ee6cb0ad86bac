/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* An architecture the inject session does not support (inject/inject_arch.h). */
#ifndef THP_INJECT_REGS_H
#define THP_INJECT_REGS_H

struct inject_regs {
	unsigned long unused;
};

#define INJECT_ARCH_SYSCALL_LEN 0
#define INJECT_ARCH_AUDIT 0U

#endif
