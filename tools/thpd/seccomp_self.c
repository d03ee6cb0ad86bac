// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: a warning when thpd runs under seccomp while a rule must read targets' filters. */
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "log.h"
#include "thpd.h"

/* The Seccomp: field of /proc/self/status: 0, 1 strict, 2 filter; -1 not shown. */
static int own_seccomp_mode(void)
{
	char buf[8192];
	unsigned long long mode;

	if (thpd_read_small("/proc/self/status", buf, sizeof(buf)) < 0 ||
	    !thpd_field(buf, "Seccomp", &mode))
		return -1;
	return (int)mode;
}

/*
 * Whether @r calls its processes through the inject backend, which reads
 * the seccomp filter of a process under one before it calls it: enforce =
 * inject, and a huge rule asking a process for its own hidden nohuge
 * default (thpd_check_skip()).
 */
static bool reads_filters(const struct thpd_state *st, const struct thpd_rule *r)
{
	if (r->conf.inject)
		return true;
	return r->conf.policy == THPD_RULE_HUGE && r->conf.own == THPD_OWN_ASK && st->nohuge_hidden;
}

void thpd_seccomp_self_check(const struct thpd_state *st)
{
	char names[384] = "";
	size_t len = 0, n = 0;
	int mode;

	for (size_t i = 0; i < st->cfg.nrules; i++) {
		const struct thpd_rule *r = &st->cfg.rules[i];
		int w;

		if (!reads_filters(st, r))
			continue;
		n++;
		if (len >= sizeof(names))
			continue;
		w = snprintf(names + len, sizeof(names) - len, "%s%s (%s)", n > 1 ? ", " : "",
			     r->conf.name, r->conf.inject ? "enforce = inject" : "own_policy = ask");
		len = w < 0 ? sizeof(names) : len + (size_t)w;
	}
	if (!n)
		return;
	mode = own_seccomp_mode();
	if (mode <= 0)
		return;
	/* The kernel lets no process under seccomp read another's filter:
	 * PTRACE_SECCOMP_GET_FILTER answers EACCES (kernel/seccomp.c). */
	thpd_log(LOG_WARNING,
		 "thpd runs under seccomp (Seccomp: %d in /proc/self/status), so it cannot read "
		 "the seccomp filter of any process, and the inject backend leaves every process "
		 "under a filter (containers, hardened units) alone: rule%s %s%s; run thpd without "
		 "SystemCallFilter= and the other settings that install a filter (thpd(8), SYSTEMD)",
		 mode, n > 1 ? "s" : "", names, len >= sizeof(names) ? "..." : "");
}
