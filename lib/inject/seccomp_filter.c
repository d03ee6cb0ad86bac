// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The inject backend's seccomp check: a call injected into a process runs
 * through its seccomp filters like any of its own, so a filter that kills,
 * traps or refuses the call must be known before the call is made.  The
 * filters are read with PTRACE_SECCOMP_GET_FILTER (the classic BPF the
 * process installed) and run here, by a small interpreter of the
 * instructions the kernel accepts in a seccomp filter; anything else
 * refuses the injection rather than guessing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>

#include "internal.h"
#include "seccomp_filter.h"
#include "syscall.h"

#ifndef PTRACE_SECCOMP_GET_FILTER
#define PTRACE_SECCOMP_GET_FILTER 0x420c
#endif

/* Classic BPF encoding (<linux/bpf_common.h>, <linux/filter.h>). */
#define C_LD 0x00
#define C_LDX 0x01
#define C_ST 0x02
#define C_STX 0x03
#define C_ALU 0x04
#define C_JMP 0x05
#define C_RET 0x06
#define C_MISC 0x07
#define M_IMM 0x00
#define M_ABS 0x20
#define M_MEM 0x60
#define M_LEN 0x80
#define SRC_X 0x08
#define MEMWORDS 16
/* A filter has at most this many instructions (BPF_MAXINSNS). */
#define MAX_INSNS 4096

int seccomp_filter_run(const struct seccomp_filter_insn *f, size_t len, const struct seccomp_filter_data *d, uint32_t *ret)
{
	uint32_t a = 0, x = 0, mem[MEMWORDS] = { 0 };
	unsigned char data[sizeof(struct seccomp_filter_data)];

	memcpy(data, d, sizeof(data));
	/* Jumps only go forward, so the program ends within len steps. */
	for (size_t pc = 0; pc < len; pc++) {
		const struct seccomp_filter_insn *i = &f[pc];
		uint32_t src = (i->code & SRC_X) ? x : i->k;
		size_t jump = 0;

		switch (i->code) {
		case C_LD | M_ABS: /* BPF_W: the only size seccomp takes */
			if (i->k >= sizeof(data) || (i->k & 3))
				return -EINVAL;
			memcpy(&a, data + i->k, sizeof(a));
			break;
		case C_LD | M_LEN:
			a = sizeof(data);
			break;
		case C_LDX | M_LEN:
			x = sizeof(data);
			break;
		case C_LD | M_IMM:
			a = i->k;
			break;
		case C_LDX | M_IMM:
			x = i->k;
			break;
		case C_LD | M_MEM:
		case C_LDX | M_MEM:
		case C_ST:
		case C_STX:
			if (i->k >= MEMWORDS)
				return -EINVAL;
			if (i->code == (C_LD | M_MEM))
				a = mem[i->k];
			else if (i->code == (C_LDX | M_MEM))
				x = mem[i->k];
			else
				mem[i->k] = i->code == C_ST ? a : x;
			break;
		case C_MISC | 0x00: /* TAX */
			x = a;
			break;
		case C_MISC | 0x80: /* TXA */
			a = x;
			break;
		case C_ALU | 0x80: /* NEG */
			a = -a;
			break;
		case C_ALU | 0x00: case C_ALU | 0x08: a += src; break;
		case C_ALU | 0x10: case C_ALU | 0x18: a -= src; break;
		case C_ALU | 0x20: case C_ALU | 0x28: a *= src; break;
		case C_ALU | 0x40: case C_ALU | 0x48: a |= src; break;
		case C_ALU | 0x50: case C_ALU | 0x58: a &= src; break;
		case C_ALU | 0xa0: case C_ALU | 0xa8: a ^= src; break;
		case C_ALU | 0x30: case C_ALU | 0x38: /* DIV (seccomp takes no MOD) */
			if (src == 0) {
				if (!(i->code & SRC_X))
					return -EINVAL; /* the kernel refuses the filter */
				*ret = 0;       /* and ends it with 0 at run time */
				return 0;
			}
			a /= src;
			break;
		case C_ALU | 0x60: case C_ALU | 0x68: /* LSH */
		case C_ALU | 0x70: case C_ALU | 0x78: /* RSH */
			if (!(i->code & SRC_X) && src >= 32)
				return -EINVAL;
			/* A register count is taken modulo 32, as the kernel's eBPF does. */
			a = (i->code & 0xf0) == 0x60 ? a << (src & 31) : a >> (src & 31);
			break;
		case C_JMP | 0x00: /* JA */
			jump = i->k;
			break;
		case C_JMP | 0x10: case C_JMP | 0x18:
			jump = a == src ? i->jt : i->jf;
			break;
		case C_JMP | 0x20: case C_JMP | 0x28:
			jump = a > src ? i->jt : i->jf;
			break;
		case C_JMP | 0x30: case C_JMP | 0x38:
			jump = a >= src ? i->jt : i->jf;
			break;
		case C_JMP | 0x40: case C_JMP | 0x48:
			jump = (a & src) ? i->jt : i->jf;
			break;
		case C_RET | 0x00: /* K */
			*ret = i->k;
			return 0;
		case C_RET | 0x10: /* A */
			*ret = a;
			return 0;
		default:
			return -EINVAL;
		}
		if (jump >= len - pc - 1 && jump)
			return -EINVAL;
		pc += jump;
	}
	return -EINVAL; /* fell off the end: the kernel needs a last RET */
}

void seccomp_filter_free(struct seccomp_filter_set *sf)
{
	free(sf->insns);
	free(sf->start);
	free(sf->len);
	memset(sf, 0, sizeof(*sf));
}

/* Instructions of filter @i of @tid (data NULL: only count them), or -errno. */
static long get_filter(pid_t tid, unsigned long i, struct seccomp_filter_insn *data)
{
	long r = ptrace(PTRACE_SECCOMP_GET_FILTER, tid, (void *)i, data);

	return r < 0 ? -errno : r;
}

int seccomp_filter_load(struct seccomp_filter_set *sf, pid_t pid, pid_t tid)
{
	size_t total = 0;
	long r;

	memset(sf, 0, sizeof(*sf));
	for (;;) {
		size_t *s, *l;
		struct seccomp_filter_insn *ins;

		r = get_filter(tid, sf->n, NULL);
		if (r == -ENOENT && sf->n)
			return 0;
		if (r < 0 || r > MAX_INSNS)
			break;
		s = realloc(sf->start, (sf->n + 1) * sizeof(*s));
		if (s)
			sf->start = s;
		l = realloc(sf->len, (sf->n + 1) * sizeof(*l));
		if (l)
			sf->len = l;
		ins = realloc(sf->insns, (total + (size_t)r) * sizeof(*ins) + 1);
		if (ins)
			sf->insns = ins;
		if (!s || !l || !ins) {
			seccomp_filter_free(sf);
			return -ENOMEM;
		}
		/* The same length again: a filter never changes once installed. */
		if (get_filter(tid, sf->n, sf->insns + total) != r) {
			r = -EIO;
			break;
		}
		sf->start[sf->n] = total;
		sf->len[sf->n] = (size_t)r;
		total += (size_t)r;
		sf->n++;
	}
	seccomp_filter_free(sf);
	if (r == -ESRCH)
		return -ESRCH;
	report_set_detail("process %d runs under a seccomp filter that libthp cannot read (%s%s): "
			  "the inject backend does not call it without knowing what the filter "
			  "does", (int)pid,
			  r == -EACCES ? "PTRACE_SECCOMP_GET_FILTER needs CAP_SYS_ADMIN and a "
					 "caller outside seccomp" : strerror((int)-r),
			  r == -EMEDIUMTYPE ? ": not a classic BPF filter" : "");
	return -EPERM;
}

int seccomp_filter_grew(const struct seccomp_filter_set *sf, pid_t tid)
{
	long r = get_filter(tid, sf->n, NULL);

	if (r == -ENOENT)
		return 0;
	return r < 0 ? (int)r : 1;
}

int seccomp_filter_eval(const struct seccomp_filter_set *sf, const struct seccomp_filter_data *d, uint32_t *ret)
{
	uint32_t best = SECCOMP_FILTER_RET_ALLOW;

	/* The kernel runs the newest filter first and keeps the first most restrictive. */
	for (unsigned int i = sf->n; i-- > 0;) {
		uint32_t r;
		int err = seccomp_filter_run(sf->insns + sf->start[i], sf->len[i], d, &r);

		if (err)
			return err;
		if ((int32_t)(r & SECCOMP_FILTER_RET_ACTION_FULL) < (int32_t)(best & SECCOMP_FILTER_RET_ACTION_FULL))
			best = r;
	}
	*ret = best;
	return 0;
}

/* What the action would do to the process, for the detail. */
static const char *action_text(uint32_t r, char *buf, size_t len)
{
	switch (r & SECCOMP_FILTER_RET_ACTION_FULL) {
	case SECCOMP_FILTER_RET_KILL_PROCESS:
		return "kill it";
	case SECCOMP_FILTER_RET_KILL_THREAD:
		return "kill its thread";
	case SECCOMP_FILTER_RET_TRAP:
		return "send it SIGSYS";
	case SECCOMP_FILTER_RET_ERRNO:
		snprintf(buf, len, "fail the call with errno %u", (unsigned)(r & SECCOMP_FILTER_RET_DATA));
		return buf;
	case SECCOMP_FILTER_RET_USER_NOTIF:
		return "hand the call to its seccomp supervisor";
	case SECCOMP_FILTER_RET_TRACE:
		return "hand the call to a tracer";
	default:
		snprintf(buf, len, "take action 0x%08x, which the kernel treats as a kill", r);
		return buf;
	}
}

int seccomp_filter_check_calls(const struct seccomp_filter_set *sf, pid_t pid, uint32_t arch, uint64_t ip,
		   const struct seccomp_filter_call *calls, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct seccomp_filter_data d = { .nr = (int32_t)calls[i].nr, .arch = arch,
				     .instruction_pointer = ip };
		uint32_t r, act;
		char buf[80];

		memcpy(d.args, calls[i].args, sizeof(d.args));
		if (seccomp_filter_eval(sf, &d, &r)) {
			report_set_detail("process %d's seccomp filter has an instruction libthp does "
					  "not know: %s not injected", (int)pid, calls[i].what);
			return -EPERM;
		}
		act = r & SECCOMP_FILTER_RET_ACTION_FULL;
		if (act == SECCOMP_FILTER_RET_ALLOW || act == SECCOMP_FILTER_RET_LOG)
			continue;
		report_set_detail("process %d's seccomp filter would %s on %s: not injected", (int)pid,
				  action_text(r, buf, sizeof(buf)), calls[i].what);
		return -EPERM;
	}
	return 0;
}

int seccomp_filter_caller_has_cap(unsigned int cap)
{
	char buf[4096];
	const char *p;
	unsigned long long eff;

	if (sys_read_file("/proc/thread-self/status", buf, sizeof(buf)) <= 0 ||
	    !(p = strstr(buf, "\nCapEff:")) || sscanf(p + 8, "%llx", &eff) != 1)
		return 0;
	return cap < 64 && ((eff >> cap) & 1);
}
