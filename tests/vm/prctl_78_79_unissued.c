// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest check: No prctl 78 or 79 from libthp unless the RFC prctl was declared, under a
 * seccomp filter that kills on them (the 32-bit guest's copy of the host's
 * test_prctl_hazard, which needs Check).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "vm_check.h"

/*
 * No prctl 78 or 79 unless the RFC prctl was declared: mainline gave them
 * to PR_FUTEX_HASH (6.16) and PR_RSEQ_SLICE_EXTENSION (7.2).  The filter
 * kills the process on either; every libthp call must get through.
 */
static int install_prctl_kill_filter(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_prctl, 0, 4),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 78, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 79, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(f) / sizeof(f[0]), .filter = f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) ? -errno : 0;
}

static void hazard_control(void *arg)
{
	(void)arg;
	if (install_prctl_kill_filter())
		_exit(3);
	prctl(78, 0, 0, 0, 0); /* must not return */
	_exit(4);
}

static void hazard_run(void *arg)
{
	struct thp_probe_info pi = { .sz = sizeof(pi) };
	void *m = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	if (m == MAP_FAILED || install_prctl_kill_filter())
		_exit(3);
	thp_probe(&pi);
	for (unsigned int p = 0; p < THP_POLICY_COUNT; p++) {
		THP_OPTS(thp_default_opts, o, .policy = p);
		THP_OPTS(thp_default_opts, g);

		thp_set_default(&o);
		thp_get_default(&g);
	}
	{
		struct thp_range rg = { .addr = (uintptr_t)m, .len = 4 * MiB };
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .flags = THP_F_SKIP_ERRORS);
		THP_OPTS(thp_apply_all_opts, a, .advice = THP_ADVICE_NOHUGE,
			 .flags = THP_F_SKIP_ERRORS);

		thp_apply_ranges(&rg, 1, &o);
		thp_apply_all(&a);
	}
	_exit(0);
}

void check_prctl_hazard(void)
{
	struct check c = { .name = "prctl_hazard_78_79" };
	int st = in_child(hazard_control, NULL);

	if (st != 128 + SIGSYS)
		cfail(&c, "control: prctl(78) under the filter ended with %d, expected SIGSYS", st);
	st = in_child(hazard_run, NULL);
	if (st != 0)
		cfail(&c, "libthp calls without a declared RFC prctl under a filter that kills on "
		      "prctl 78/79: exit %d%s", st, st == 128 + SIGSYS ? " (SIGSYS: 78 or 79 issued)" : "");
	cdone(&c);
}
