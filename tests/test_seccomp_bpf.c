// SPDX-License-Identifier: LGPL-2.1-or-later
/* White-box: libthp's seccomp BPF interpreter against the kernel, on generated random filters. */
#include <check.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "seccomp_filter.h"

#define MAX_BODY 40
#define MAX_FILTERS 3
#define PROLOGUE 7

/* The interpreter's types must be the kernel's. */
_Static_assert(sizeof(struct seccomp_filter_insn) == sizeof(struct sock_filter), "seccomp_filter_insn");
_Static_assert(sizeof(struct seccomp_filter_data) == sizeof(struct seccomp_data), "seccomp_filter_data");
_Static_assert(offsetof(struct seccomp_filter_data, args) == offsetof(struct seccomp_data, args), "args");

/* The classic BPF seccomp accepts, each encoded as the kernel spells it. */
START_TEST(refuses_what_the_kernel_refuses)
{
	const struct seccomp_filter_data d = { 0 };
	const struct seccomp_filter_insn bad[][2] = {
		{ { BPF_LD | BPF_B | BPF_ABS, 0, 0, 0 }, { BPF_RET | BPF_K, 0, 0, 0 } },
		{ { BPF_LD | BPF_W | BPF_ABS, 0, 0, 2 }, { BPF_RET | BPF_K, 0, 0, 0 } },
		{ { BPF_LD | BPF_W | BPF_ABS, 0, 0, 64 }, { BPF_RET | BPF_K, 0, 0, 0 } },
		{ { BPF_ALU | BPF_MOD | BPF_K, 0, 0, 3 }, { BPF_RET | BPF_K, 0, 0, 0 } },
		{ { BPF_ALU | BPF_DIV | BPF_K, 0, 0, 0 }, { BPF_RET | BPF_K, 0, 0, 0 } },
		{ { BPF_ALU | BPF_LSH | BPF_K, 0, 0, 32 }, { BPF_RET | BPF_K, 0, 0, 0 } },
		{ { BPF_JMP | BPF_JA, 0, 0, 1 }, { BPF_RET | BPF_K, 0, 0, 0 } },
		{ { BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 0 }, { BPF_RET | BPF_K, 0, 0, 0 } },
		{ { BPF_LD | BPF_MEM, 0, 0, 16 }, { BPF_RET | BPF_K, 0, 0, 0 } },
		{ { BPF_RET | BPF_X, 0, 0, 0 }, { BPF_RET | BPF_K, 0, 0, 0 } },
		{ { BPF_LD | BPF_IMM, 0, 0, 0 }, { BPF_LD | BPF_IMM, 0, 0, 0 } }, /* no RET */
	};
	uint32_t r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(seccomp_filter_run(bad[i], 2, &d, &r) == -EINVAL, "program %zu ran", i);
}
END_TEST

/* nr = rdi, args in rsi, rdx, rcx, r8, r9, 8(%rsp); the address after the syscall is exported. */
long thp_test_sc6(long nr, long a1, long a2, long a3, long a4, long a5, long a6);
extern const char thp_test_sc6_after[];
#if defined(__x86_64__)
__asm__(".text\n"
	".globl thp_test_sc6\n"
	".type thp_test_sc6, @function\n"
	"thp_test_sc6:\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	mov %rdx, %rsi\n"
	"	mov %rcx, %rdx\n"
	"	mov %r8, %r10\n"
	"	mov %r9, %r8\n"
	"	mov 8(%rsp), %r9\n"
	"	syscall\n"
	".globl thp_test_sc6_after\n"
	"thp_test_sc6_after:\n"
	"	ret\n"
	".size thp_test_sc6, . - thp_test_sc6\n");

static uint64_t rng_state;

static uint32_t rnd(void)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(rng_state >> 33);
}

/* A value a filter might compare with: often one of the call's own words. */
static uint32_t interesting(const struct seccomp_filter_data *d)
{
	uint32_t w[16];

	memcpy(w, d, sizeof(w));
	switch (rnd() % 4) {
	case 0:
		return w[rnd() % 16];
	case 1:
		return rnd() % 8;
	case 2:
		return rnd();
	default:
		return w[rnd() % 16] + rnd() % 3 - 1;
	}
}

static uint32_t random_action(void)
{
	static const uint32_t act[] = { SECCOMP_FILTER_RET_KILL_PROCESS, SECCOMP_FILTER_RET_KILL_THREAD, SECCOMP_FILTER_RET_TRAP,
					SECCOMP_FILTER_RET_ERRNO, SECCOMP_FILTER_RET_USER_NOTIF, SECCOMP_FILTER_RET_TRACE, SECCOMP_FILTER_RET_LOG,
					SECCOMP_FILTER_RET_ALLOW, SECCOMP_FILTER_RET_ALLOW, SECCOMP_FILTER_RET_ERRNO };

	return act[rnd() % (sizeof(act) / sizeof(act[0]))] | (rnd() % 4 ? rnd() % 40 : rnd() % 65536);
}

/*
 * A filter that is the identity for every call but getppid(); for that one
 * a random program the kernel accepts: forward jumps in range, loads from
 * scratch words stored first, shifts below 32, no division by constant 0.
 */
static size_t random_filter(struct seccomp_filter_insn *f, const struct seccomp_filter_data *d)
{
	size_t body = 1 + rnd() % MAX_BODY, len = PROLOGUE + body + 1, k = 0;

	f[k++] = (struct seccomp_filter_insn){ BPF_LD | BPF_W | BPF_ABS, 0, 0, offsetof(struct seccomp_data, nr) };
	f[k++] = (struct seccomp_filter_insn){ BPF_JMP | BPF_JEQ | BPF_K, 1, 0, SYS_getppid };
	f[k++] = (struct seccomp_filter_insn){ BPF_RET | BPF_K, 0, 0, SECCOMP_FILTER_RET_ALLOW };
	for (uint32_t m = 0; m < 4; m++)
		f[k++] = (struct seccomp_filter_insn){ BPF_ST, 0, 0, m };
	while (k < len - 1) {
		size_t room = len - k - 2; /* instructions a jump may skip */
		uint32_t op = rnd() % 20;
		struct seccomp_filter_insn i = { 0, 0, 0, 0 };
		static const uint16_t alu[] = { BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_OR,
						BPF_AND, BPF_LSH, BPF_RSH, BPF_XOR };
		static const uint16_t jmp[] = { BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET };

		if (op < 5) {
			i = (struct seccomp_filter_insn){ BPF_LD | BPF_W | BPF_ABS, 0, 0, (rnd() % 16) * 4 };
		} else if (op < 9) {
			uint16_t a = alu[rnd() % 9];
			bool x = rnd() % 2;

			i = (struct seccomp_filter_insn){ (uint16_t)(BPF_ALU | a | (x ? BPF_X : BPF_K)), 0, 0,
					      rnd() % 3 ? rnd() % 40 : rnd() };
			if (!x && (a == BPF_LSH || a == BPF_RSH))
				i.k %= 32;
			if (!x && a == BPF_DIV && i.k == 0)
				i.k = 1;
		} else if (op < 13) {
			bool x = rnd() % 2;

			i = (struct seccomp_filter_insn){ (uint16_t)(BPF_JMP | jmp[rnd() % 4] | (x ? BPF_X : BPF_K)),
					      (uint8_t)(rnd() % (room + 1)),
					      (uint8_t)(rnd() % (room + 1)), interesting(d) };
		} else {
			switch (op) {
			case 13: i = (struct seccomp_filter_insn){ BPF_LD | BPF_IMM, 0, 0, interesting(d) }; break;
			case 14: i = (struct seccomp_filter_insn){ BPF_LDX | BPF_IMM, 0, 0, interesting(d) }; break;
			case 15: i = (struct seccomp_filter_insn){ (uint16_t)(rnd() % 2 ? BPF_LD | BPF_MEM :
								 BPF_LDX | BPF_MEM), 0, 0, rnd() % 4 }; break;
			case 16: i = (struct seccomp_filter_insn){ (uint16_t)(rnd() % 2 ? BPF_ST : BPF_STX), 0, 0,
						       rnd() % 4 }; break;
			case 17: i = (struct seccomp_filter_insn){ (uint16_t)(BPF_MISC | (rnd() % 2 ? BPF_TAX :
									     BPF_TXA)), 0, 0, 0 }; break;
			case 18: i = (struct seccomp_filter_insn){ (uint16_t)(rnd() % 3 ? BPF_ALU | BPF_NEG :
								 rnd() % 2 ? BPF_LD | BPF_W | BPF_LEN :
								 BPF_LDX | BPF_W | BPF_LEN), 0, 0, 0 }; break;
			default:
				i = rnd() % 3 ? (struct seccomp_filter_insn){ BPF_RET | BPF_K, 0, 0, random_action() }
					      : (struct seccomp_filter_insn){ BPF_RET | BPF_A, 0, 0, 0 };
				if (rnd() % 2 && room)
					i = (struct seccomp_filter_insn){ BPF_JMP | BPF_JA, 0, 0, rnd() % (room + 1) };
				break;
			}
		}
		f[k++] = i;
	}
	f[k++] = (struct seccomp_filter_insn){ BPF_RET | BPF_K, 0, 0, random_action() };
	return k;
}

/* What the kernel did to the call, and what the interpreter says it will do, in one code. */
#define OUT_TRAPPED 1000000
#define OUT_KILLED 1000001

static long predicted(uint32_t r, long ppid)
{
	uint32_t data = r & SECCOMP_FILTER_RET_DATA;

	switch (r & SECCOMP_FILTER_RET_ACTION_FULL) {
	case SECCOMP_FILTER_RET_ALLOW:
	case SECCOMP_FILTER_RET_LOG:
		return ppid;
	case SECCOMP_FILTER_RET_ERRNO:
		return -(long)(data > 4095 ? 4095 : data);
	case SECCOMP_FILTER_RET_TRACE:
	case SECCOMP_FILTER_RET_USER_NOTIF:
		return -ENOSYS; /* no tracer, no listener */
	case SECCOMP_FILTER_RET_TRAP:
		return OUT_TRAPPED;
	default:
		return OUT_KILLED;
	}
}

static void on_sigsys(int sig)
{
	(void)sig;
	_exit(42);
}

/* Install the filters in a child, make the call there, and say what happened. */
static long kernel_outcome(const struct seccomp_filter_set *sf, const struct seccomp_filter_data *d)
{
	int p[2], st;
	long ret = 0;
	pid_t c;

	ck_assert(pipe(p) == 0);
	c = fork();
	ck_assert_int_ge(c, 0);
	if (c == 0) {
		prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* no core dump of a killed child */
		signal(SIGSYS, on_sigsys);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
			_exit(3);
		for (unsigned int i = 0; i < sf->n; i++) {
			struct sock_fprog prog = { (unsigned short)sf->len[i],
						   (struct sock_filter *)(sf->insns + sf->start[i]) };

			if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
				_exit(4);
		}
		ret = thp_test_sc6(SYS_getppid, (long)d->args[0], (long)d->args[1], (long)d->args[2],
				   (long)d->args[3], (long)d->args[4], (long)d->args[5]);
		_exit(write(p[1], &ret, sizeof(ret)) == sizeof(ret) ? 0 : 5);
	}
	close(p[1]);
	if (read(p[0], &ret, sizeof(ret)) != sizeof(ret))
		ret = 0;
	close(p[0]);
	ck_assert(waitpid(c, &st, 0) == c);
	if (WIFSIGNALED(st) && WTERMSIG(st) == SIGSYS)
		return OUT_KILLED;
	ck_assert_msg(WIFEXITED(st), "child status %#x", st);
	if (WEXITSTATUS(st) == 42)
		return OUT_TRAPPED;
	ck_assert_msg(WEXITSTATUS(st) == 0, "child could not install its filters: exit %d",
		      WEXITSTATUS(st));
	return ret;
}

START_TEST(random_filters_match_the_kernel)
{
	unsigned int cases = scaled(1000, 100), counts[8] = { 0 };
	struct seccomp_filter_insn insns[MAX_FILTERS * (PROLOGUE + MAX_BODY + 1)];
	size_t start[MAX_FILTERS], len[MAX_FILTERS];
	struct timespec t0, t1;
	uint64_t eval_ns = 0;

	rng_state = getenv("THP_TEST_SEED") ? strtoull(getenv("THP_TEST_SEED"), NULL, 0)
					    : (uint64_t)time(NULL);
	printf("seccomp_bpf: seed %llu (THP_TEST_SEED)\n", (unsigned long long)rng_state);
	for (unsigned int n = 0; n < cases; n++) {
		struct seccomp_filter_data d = { .nr = SYS_getppid, .arch = AUDIT_ARCH_X86_64,
				     .instruction_pointer = (uintptr_t)thp_test_sc6_after };
		struct seccomp_filter_set sf = { insns, start, len, 1 + rnd() % MAX_FILTERS };
		size_t total = 0;
		uint32_t r;
		long want, got;

		for (int i = 0; i < 6; i++)
			d.args[i] = rnd() % 2 ? rnd() % 4 : ((uint64_t)rnd() << 32) | rnd();
		for (unsigned int i = 0; i < sf.n; i++) {
			start[i] = total;
			len[i] = random_filter(insns + total, &d);
			total += len[i];
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		ck_assert_int_eq(seccomp_filter_eval(&sf, &d, &r), 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		eval_ns += (uint64_t)(t1.tv_sec - t0.tv_sec) * 1000000000u +
			   (uint64_t)(t1.tv_nsec - t0.tv_nsec);
		want = predicted(r, getpid());
		got = kernel_outcome(&sf, &d);
		ck_assert_msg(got == want, "case %u: %u filters, interpreter 0x%08x predicts %ld, "
			      "the kernel gave %ld", n, sf.n, r, want, got);
		counts[(uint32_t)(r & SECCOMP_FILTER_RET_ACTION_FULL) == SECCOMP_FILTER_RET_ALLOW ? 0 :
		       want == OUT_KILLED ? 1 : want == OUT_TRAPPED ? 2 : want == -ENOSYS ? 3 :
		       want < 0 ? 4 : 5]++;
	}
	printf("seccomp_bpf: %u cases: %u allowed, %u killed, %u trapped, %u ENOSYS, %u errno, "
	       "%u other; %.2f us per evaluation\n", cases, counts[0], counts[1], counts[2],
	       counts[3], counts[4], counts[5], (double)eval_ns / cases / 1000.0);
	/* A generator that never reaches an outcome tests nothing of it. */
	for (int i = 0; i < 5; i++)
		ck_assert_msg(counts[i] > 0 || cases < 1000, "outcome %d never seen", i);
}
END_TEST
#endif

static Suite *seccomp_bpf_suite(void)
{
	Suite *s = suite_create("seccomp_bpf");
	TCase *tc = tcase_create("seccomp_bpf");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, refuses_what_the_kernel_refuses);
#if defined(__x86_64__)
	tcase_add_test(tc, random_filters_match_the_kernel);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(seccomp_bpf_suite());
}
