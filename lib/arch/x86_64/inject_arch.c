// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * x86_64 part of the inject session (inject/inject_arch.h): the registers
 * of a call, the syscall instruction, the 64-bit ABI check.
 */
#include <errno.h>
#include <sys/ptrace.h>

#include "inject_arch.h"
#include "internal.h"

/* The 64-bit user code segment: any other means a 32-bit (compat) process. */
#define USER64_CS 0x33

int inject_arch_supported(void)
{
	return 0;
}

int inject_arch_get_regs(pid_t tid, struct inject_regs *r)
{
	return ptrace(PTRACE_GETREGS, tid, 0, &r->r) < 0 ? -ESRCH : 0;
}

int inject_arch_set_regs(pid_t tid, const struct inject_regs *r)
{
	return ptrace(PTRACE_SETREGS, tid, 0, &r->r) < 0 ? -ESRCH : 0;
}

int inject_arch_check_abi(pid_t tid, const struct inject_regs *r)
{
	if (r->r.cs == USER64_CS)
		return 0;
	report_set_detail("process %d is a 32-bit process: the inject backend supports "
			  "x86_64 processes only",
			  (int)tid);
	return -EOPNOTSUPP;
}

void inject_arch_set_call(struct inject_regs *r, unsigned long ip, long nr,
			  const unsigned long a[5])
{
	r->r.rax = (unsigned long)nr;
	r->r.orig_rax = (unsigned long)-1; /* no restart logic on these registers */
	r->r.rdi = a[0];
	r->r.rsi = a[1];
	r->r.rdx = a[2];
	r->r.r10 = a[3];
	r->r.r8 = a[4];
	r->r.r9 = 0;
	r->r.rip = ip;
}

long inject_arch_call_nr(const struct inject_regs *r)
{
	return (long)r->r.orig_rax;
}

long inject_arch_call_result(const struct inject_regs *r)
{
	return (long)r->r.rax;
}

long inject_arch_find_syscall(const unsigned char *buf, size_t len)
{
	for (size_t j = 0; j + 1 < len; j++)
		if (buf[j] == 0x0f && buf[j + 1] == 0x05)
			return (long)j;
	return -1;
}

unsigned int inject_arch_selector_byte(long word)
{
	return (unsigned int)(word & 0xff); /* little-endian: the word's low byte */
}
