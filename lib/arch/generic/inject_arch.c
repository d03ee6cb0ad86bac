// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The inject session on an architecture it does not support: every entry
 * says so (inject_arch_supported() first, before any ptrace call), so the
 * inject backend and mechanism report themselves unavailable.
 */
#include <errno.h>

#include "inject_arch.h"
#include "internal.h"

int inject_arch_supported(void)
{
	report_set_detail("the inject backend supports x86_64 only");
	return -EOPNOTSUPP;
}

int inject_arch_get_regs(pid_t tid, struct inject_regs *r)
{
	(void)tid;
	(void)r;
	return inject_arch_supported();
}

int inject_arch_set_regs(pid_t tid, const struct inject_regs *r)
{
	(void)tid;
	(void)r;
	return inject_arch_supported();
}

int inject_arch_check_abi(pid_t tid, const struct inject_regs *r)
{
	(void)tid;
	(void)r;
	return inject_arch_supported();
}

void inject_arch_set_call(struct inject_regs *r, unsigned long ip, long nr,
			  const unsigned long a[5])
{
	(void)r;
	(void)ip;
	(void)nr;
	(void)a;
}

long inject_arch_call_nr(const struct inject_regs *r)
{
	(void)r;
	return -1;
}

long inject_arch_call_result(const struct inject_regs *r)
{
	(void)r;
	return -EOPNOTSUPP;
}

long inject_arch_find_syscall(const unsigned char *buf, size_t len)
{
	(void)buf;
	(void)len;
	return -1;
}

unsigned int inject_arch_selector_byte(long word)
{
	(void)word;
	return 0;
}
