// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The inject backend's syscall instruction, found in the target's vDSO
 * through auxv and the vDSO's own ELF headers, not the maps text, so the
 * cost does not grow with the target's mappings.  64-bit vDSOs; the
 * instruction is the architecture's (lib/arch/ARCH/).
 */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include "inject_arch.h"
#include "inject_vdso.h"
#include "internal.h"
#include "syscall.h"

/* Where the thread's vDSO starts, from its auxiliary vector: 0 when it has none. */
static int vdso_base(pid_t pid, pid_t tid, uint64_t *base)
{
	char path[80];
	/* auxv is a few dozen pairs; the kernel's limit is far below this. */
	uint64_t av[128];
	long n;

	*base = 0;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/auxv", (int)pid, (int)tid);
	n = sys_read_file(path, (char *)av, sizeof(av));
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	for (long i = 0; i + 1 < n / 8; i += 2) {
		if (av[i] == AT_NULL)
			break;
		if (av[i] == AT_SYSINFO_EHDR)
			*base = av[i + 1];
	}
	return 0;
}

/*
 * The stopped thread's memory read through ptrace, a word at a time: for a
 * kernel without process_vm_readv() (CONFIG_CROSS_MEMORY_ATTACH unset).
 */
static int peek_words(pid_t tid, uint64_t addr, unsigned char *buf, size_t len)
{
	for (size_t off = 0; off < len; off += sizeof(long)) {
		size_t n = len - off < sizeof(long) ? len - off : sizeof(long);
		long w;

		errno = 0;
		w = ptrace(PTRACE_PEEKDATA, tid, (void *)(uintptr_t)(addr + off), NULL);
		if (errno)
			return -errno;
		memcpy(buf + off, &w, n);
	}
	return 0;
}

/* Read @len bytes of the stopped thread at @addr: 0 or -errno (-EFAULT: unmapped). */
static int peek(pid_t tid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };
	ssize_t got = process_vm_readv(tid, &local, 1, &remote, 1, 0);

	if (got == (ssize_t)len)
		return 0;
	if (got < 0 && errno == ENOSYS)
		return peek_words(tid, addr, buf, len);
	return got < 0 ? -errno : -EFAULT;
}

int inject_vdso_syscall_ip(pid_t pid, pid_t tid, uint64_t *ip)
{
	Elf64_Ehdr eh;
	Elf64_Phdr ph;
	uint64_t base, found = 0;
	int err = vdso_base(pid, tid, &base);

	if (err)
		return err;
	err = base ? peek(tid, base, &eh, sizeof(eh)) : 0;
	if (err == -ESRCH)
		return err;
	if (err && err != -EFAULT) {
		report_set_detail("cannot read the vDSO of process %d: %s", (int)tid, strerror(-err));
		return -EPERM;
	}
	if (!base || err || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(ph))
		return -ENOENT;
	for (unsigned int i = 0; i < eh.e_phnum && !found; i++) {
		unsigned char *buf;

		err = peek(tid, base + eh.e_phoff + (uint64_t)i * sizeof(ph), &ph, sizeof(ph));
		if (err == -ESRCH)
			return err;
		/* The vDSO is linked at 0 and mapped as one piece from its base. */
		if (err || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
		    ph.p_filesz < 2 || ph.p_filesz > (1u << 20))
			continue;
		buf = malloc(ph.p_filesz);
		if (!buf)
			return -ENOMEM;
		err = peek(tid, base + ph.p_offset, buf, ph.p_filesz);
		if (!err) {
			long j = inject_arch_find_syscall(buf, ph.p_filesz);

			if (j >= 0)
				found = base + ph.p_offset + (uint64_t)j;
		}
		free(buf);
		if (err == -ESRCH)
			return err;
	}
	if (!found)
		return -ENOEXEC;
	*ip = found;
	return 0;
}

