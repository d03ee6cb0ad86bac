// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest check: thpctl and the preload, dynamically linked as users run them: probe,
 * run --policy under two global modes, status and apply on another process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "vm_check.h"

/* thpctl run --policy P -- child_report: the policy as the exec'd program sees it. */
/* From /vmtest.conf (run_vm.sh): where the programs are in the guest. */
static char conf_thpctl[256], conf_preload[256], conf_child_report[256];

static void thpctl_run_case(struct check *c, const char *policy)
{
	char env_preload[300], out[2048];
	char *argv[] = { conf_thpctl, (char *)"run", (char *)"--policy", (char *)policy,
			 (char *)"--", conf_child_report, NULL };
	char *envp[] = { env_preload, NULL };
	bool huge = !strcmp(policy, "huge"), nohuge = !strcmp(policy, "nohuge");
	bool never = !strcmp(policy, "never");
	long kb, dis;
	int st;

	snprintf(env_preload, sizeof(env_preload), "THPCTL_PRELOAD=%s", conf_preload);
	st = run_capture(argv, envp, out, sizeof(out));
	out[strcspn(out, "\n")] = 0;
	printf("VMTEST INFO thpctl run --policy %s @%s: exit %d: %s\n", policy,
	       mode_names[cur_mode], st, out);
	if (nohuge && !kx.except_advised && !rfc) {
		if (st != 125 || !strstr(out, "NEVER"))
			cfail(c, "run --policy nohuge before 6.18: exit %d '%s', expected 125 naming "
			      "NEVER", st, out);
		return;
	}
	kb = kv_long(out, "anonhuge_kb=");
	dis = kv_long(out, "thp_disable=");
	if (st != 0 || !strstr(out, "policy="))
		cfail(c, "run --policy %s: exit %d '%s'", policy, st, out);
	else if (huge && (!strstr(out, "policy=huge") || !strstr(out, " hg=1") || kb <= 0))
		cfail(c, "run --policy huge under %s: '%s', expected policy=huge, hg=1, huge pages",
		      mode_names[cur_mode], out);
	else if ((never || nohuge) && kb != 0)
		cfail(c, "run --policy %s under %s: '%s', expected no huge page", policy,
		      mode_names[cur_mode], out);
	else if (never && dis != 1)
		cfail(c, "run --policy never: '%s', expected thp_disable=1", out);
	/* NOHUGE: PR_THP_DISABLE_EXCEPT_ADVISED (3), or the RFC's nh default. */
	else if (nohuge && !(kx.except_advised ? dis == 3 : strstr(out, " nh=1") != NULL))
		cfail(c, "run --policy nohuge: '%s', expected %s", out,
		      kx.except_advised ? "thp_disable=3" : "nh=1");
	else if ((never || nohuge) && !strstr(out, never ? "policy=never" : "policy=nohuge"))
		cfail(c, "run --policy %s: the program reads '%s'", policy, out);
}

void check_thpctl(const char *thpctl, const char *preload, const char *child_report)
{
	struct check c = { .name = "thpctl_preload" };
	static const char *const policies[] = { "never", "nohuge", "huge", "system" };
	char out[8192];
	char *envp[] = { NULL };

	snprintf(conf_thpctl, sizeof(conf_thpctl), "%s", thpctl ? thpctl : "");
	snprintf(conf_preload, sizeof(conf_preload), "%s", preload ? preload : "");
	snprintf(conf_child_report, sizeof(conf_child_report), "%s", child_report ? child_report : "");
	if (!conf_thpctl[0] || !conf_preload[0] || !conf_child_report[0]) {
		fail(c.name, "thpctl, the preload or thp_child_report missing from /vmtest.conf");
		return;
	}
	{
		char *argv[] = { conf_thpctl, (char *)"probe", (char *)"--json", NULL };
		int st = run_capture(argv, envp, out, sizeof(out));
		char want[64];

		snprintf(want, sizeof(want), "\"procmap_query\": %s", kx.procmap_query ? "true" : "false");
		if (st != 0 || !strstr(out, want))
			cfail(&c, "thpctl probe --json: exit %d, no '%s'", st, want);
	}
	for (unsigned int m = 0; m < 2; m++) {
		unsigned int mode = m == 0 ? THP_MODE_ALWAYS : THP_MODE_MADVISE;

		if (set_sysfs_mode(mode)) {
			cfail(&c, "cannot set mode %s", mode_names[mode]);
			continue;
		}
		for (size_t i = 0; i < sizeof(policies) / sizeof(policies[0]); i++)
			thpctl_run_case(&c, policies[i]);
	}
	/* status and apply on another process. */
	if (!set_sysfs_mode(THP_MODE_MADVISE)) {
		uintptr_t rbase;
		pid_t pid = start_populated_child(&rbase);

		if (pid > 0) {
			char pids[16], range[64];
			char *st_argv[] = { conf_thpctl, (char *)"status", (char *)"-p", pids, NULL };
			char *ap_argv[] = { conf_thpctl, (char *)"apply", (char *)"-p", pids,
					    (char *)"--advice", (char *)"collapse", range, NULL };
			int st;
			unsigned long after;

			snprintf(pids, sizeof(pids), "%d", (int)pid);
			snprintf(range, sizeof(range), "0x%lx+8M", (unsigned long)rbase);
			st = run_capture(st_argv, envp, out, sizeof(out));
			if (st != 0 || !strstr(out, "system"))
				cfail(&c, "thpctl status -p: exit %d, no policy 'system' in its output", st);
			st = run_capture(ap_argv, envp, out, sizeof(out));
			after = huge_kb_of(pid, rbase);
			printf("VMTEST INFO thpctl apply -p PID --advice collapse: exit %d, "
			       "AnonHugePages %lu kB\n", st, after);
			if (kx.collapse ? st != 0 || after != 8192 : st == 0)
				cfail(&c, "thpctl apply collapse: exit %d, AnonHugePages %lu kB (kernel %s "
				      "MADV_COLLAPSE)", st, after, kx.collapse ? "has" : "lacks");
			stop_child(pid);
		} else {
			cfail(&c, "status/apply target did not start");
		}
	}
	if (set_sysfs_mode(boot_mode))
		cfail(&c, "cannot restore the boot mode");
	cdone(&c);
}

