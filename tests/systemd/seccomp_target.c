// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The thpd_seccomp phase's target: a process under a seccomp filter built
 * as Docker's default profile is (libseccomp's shape: the architecture
 * checked first, then an allow list in which prctl and madvise are, EPERM
 * for every other call), holding MIB MiB of touched anonymous memory
 * advised MADV_HUGEPAGE, so that its THP_enabled and THPeligible show
 * whether a policy of never was set in it.
 * usage: seccomp_target [MIB]   (default 8); "ready" on stdout, then it waits.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A part of Docker's allow list: what this program and glibc call after
 * the filter is in, and the calls a policy is set with. */
static const int allowed[] = {
	SYS_read,
	SYS_write,
	SYS_close,
	SYS_fstat,
	SYS_lseek,
	SYS_mmap,
	SYS_mprotect,
	SYS_munmap,
	SYS_brk,
	SYS_rt_sigaction,
	SYS_rt_sigprocmask,
	SYS_rt_sigreturn,
	SYS_madvise,
	SYS_pause,
	SYS_nanosleep,
	SYS_clock_nanosleep,
	SYS_getpid,
	SYS_gettid,
	SYS_exit,
	SYS_exit_group,
	SYS_restart_syscall,
	SYS_futex,
	SYS_clock_gettime,
	SYS_prctl,
	SYS_arch_prctl,
	SYS_sched_yield,
	SYS_getrandom,
	SYS_newfstatat,
};

#define N_ALLOWED (sizeof(allowed) / sizeof(allowed[0]))
#define ERRNO_EPERM (SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA))

static int install_filter(void)
{
	struct sock_filter f[N_ALLOWED + 8];
	size_t n = 0;

	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ERRNO_EPERM);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, nr));
	/* x32 calls (bit 30): the default action, as libseccomp writes it. */
	f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ERRNO_EPERM);
	for (size_t i = 0; i < N_ALLOWED; i++)
		f[n++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)allowed[i],
						      (unsigned char)(N_ALLOWED - i), 0);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, ERRNO_EPERM);
	f[n++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);

	struct sock_fprog prog = { .len = (unsigned short)n, .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

int main(int argc, char **argv)
{
	size_t len = (size_t)(argc > 1 ? atoi(argv[1]) : 8) << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED || madvise(p, len, MADV_HUGEPAGE)) {
		perror("seccomp_target: mmap/madvise");
		return 1;
	}
	memset(p, 1, len);
	if (install_filter()) {
		perror("seccomp_target: seccomp");
		return 1;
	}
	/* Under the filter: a call outside the list fails with EPERM. */
	if (syscall(SYS_getuid) != -1 || errno != EPERM) {
		fprintf(stderr, "seccomp_target: getuid() was not refused\n");
		return 1;
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	for (;;)
		pause();
}
