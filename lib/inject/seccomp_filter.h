/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A target's seccomp filters read through ptrace and run on a call before it is injected. */
#ifndef THP_SECCOMP_FILTER_H
#define THP_SECCOMP_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The classic BPF instruction and the filter's input, as <linux/filter.h> / seccomp.h lay them out. */
struct seccomp_filter_insn {
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};

struct seccomp_filter_data {
	int32_t nr;
	uint32_t arch;
	uint64_t instruction_pointer;
	uint64_t args[6];
};

/* Actions (SECCOMP_RET_*): the high 16 bits of a filter's return value. */
#define SECCOMP_FILTER_RET_KILL_PROCESS 0x80000000U
#define SECCOMP_FILTER_RET_KILL_THREAD 0x00000000U
#define SECCOMP_FILTER_RET_TRAP 0x00030000U
#define SECCOMP_FILTER_RET_ERRNO 0x00050000U
#define SECCOMP_FILTER_RET_USER_NOTIF 0x7fc00000U
#define SECCOMP_FILTER_RET_TRACE 0x7ff00000U
#define SECCOMP_FILTER_RET_LOG 0x7ffc0000U
#define SECCOMP_FILTER_RET_ALLOW 0x7fff0000U
#define SECCOMP_FILTER_RET_ACTION_FULL 0xffff0000U
#define SECCOMP_FILTER_RET_DATA 0x0000ffffU

#define SECCOMP_FILTER_AUDIT_ARCH_X86_64 0xc000003eU

/*
 * Run one classic BPF program over @d as the kernel runs a seccomp filter.
 * 0 and its return value in *ret, or -EINVAL for an instruction, an offset
 * or a jump the kernel would not have accepted (nothing is guessed).
 */
int seccomp_filter_run(const struct seccomp_filter_insn *f, size_t len, const struct seccomp_filter_data *d, uint32_t *ret);

/* Every filter of one thread, oldest first. */
struct seccomp_filter_set {
	struct seccomp_filter_insn *insns; /* all programs, back to back */
	size_t *start, *len;   /* program i is insns[start[i]..start[i]+len[i]) */
	unsigned int n;
};

/*
 * Read the filters of @tid, which the caller has ptrace-stopped, with
 * PTRACE_SECCOMP_GET_FILTER.  0, or -EPERM (the detail says why it cannot
 * read them), -ESRCH, -ENOMEM.
 */
int seccomp_filter_load(struct seccomp_filter_set *sf, pid_t pid, pid_t tid);
void seccomp_filter_free(struct seccomp_filter_set *sf);
/* 1 when @tid has more filters than seccomp_filter_load() read (one added since), 0 if not, -errno. */
int seccomp_filter_grew(const struct seccomp_filter_set *sf, pid_t tid);

/*
 * The action all filters together take on @d, as the kernel combines them
 * (the most restrictive wins, the newest filter first among equals): 0 and
 * the full return value in *ret, or -EINVAL when a program cannot be run.
 */
int seccomp_filter_eval(const struct seccomp_filter_set *sf, const struct seccomp_filter_data *d, uint32_t *ret);

/* One call to be injected: what it does, for the detail. */
struct seccomp_filter_call {
	const char *what; /* "prctl(PR_SET_THP_DISABLE)" */
	long nr;
	uint64_t args[6];
};

/*
 * Would the filters let every call of @calls through from @ip (the address
 * after the syscall instruction)?  0 when each one is allowed or only
 * logged; -EPERM with a detail naming the call and the action otherwise.
 */
int seccomp_filter_check_calls(const struct seccomp_filter_set *sf, pid_t pid, uint32_t arch, uint64_t ip,
		   const struct seccomp_filter_call *calls, size_t n);

/* 1 when the calling thread's effective set has capability @cap, 0 if not or unknown. */
int seccomp_filter_caller_has_cap(unsigned int cap);

#endif
