// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpd: the processes a rule leaves alone: setuid programs and processes
 * with their own never/nohuge default (as far as the kernel shows it from
 * outside, unless the rule says own_policy = ask).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <thp/thp.h>

#include "log.h"
#include "thpd.h"

/* 1: a setuid/setgid (or file-capability) program, by AT_SECURE or the exe's
 * mode; 0: not; -1: the process is gone. */
int thpd_is_secure_exec(pid_t pid)
{
	char path[64];
	uint64_t aux[512], secure;
	struct stat sb;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &sb) == 0 && (sb.st_mode & (S_ISUID | S_ISGID)))
		return 1;
	n = thpd_read_auxv(pid, aux, sizeof(aux) / sizeof(aux[0]));
	if (n < 0)
		return errno == ENOENT || errno == ESRCH ? -1 : 1; /* cannot tell: touch nothing */
	if (n == 0)
		return -1; /* a zombie's auxv is empty */
	return thpd_auxv_value(aux, n, AT_SECURE, &secure) && secure != 0;
}

#define HIDDEN_NOTE                                                                          \
	"a process's own nohuge default (PR_THP_DISABLE_EXCEPT_ADVISED) does not show from " \
	"outside on this kernel: processes with it are collapsed as if they had none "       \
	"(own_policy = ask reads it by ptrace-stopping each process once)"

int thpd_own_policy_notes(const struct thpd_config *c, bool nohuge_hidden, FILE *out)
{
	int n = 0;

	for (size_t i = 0; nohuge_hidden && i < c->nrules; i++) {
		const struct thpd_rule *r = &c->rules[i];

		if (r->conf.policy == THPD_RULE_HUGE && r->conf.own == THPD_OWN_VISIBLE) {
			fprintf(out, "note: rule %s: " HIDDEN_NOTE "\n", r->conf.name);
			n++;
		}
	}
	return n;
}

void thpd_check_skip(struct thpd_state *st, struct thpd_proc *p, struct thpd_rule *r)
{
	if (!r->conf.setuid) {
		int secure = thpd_is_secure_exec(p->pid);

		if (secure)
			p->skipped = true;
		if (secure > 0)
			thpd_log(LOG_INFO, "process %d (%s): a setuid/setgid program, left alone (rule %s)",
				 (int)p->pid, p->comm, r->conf.name);
		if (secure)
			return;
	}
	if (p->policy == THPD_RULE_HUGE && r->conf.own != THPD_OWN_IGNORE) {
		/* From outside: /proc/PID/status and the maps, nobody is stopped. */
		THP_OPTS(thp_default_opts, o, .pidfd = p->pidfd);
		int ret = thp_get_default(&o);

		/*
		 * NEVER shows from outside; a nohuge default (6.18's
		 * EXCEPT_ADVISED) does not, and MADV_COLLAPSE from outside
		 * ignores it.  Only a rule that says own_policy = ask stops
		 * the process to ask it, once, through the inject backend.
		 */
		if (ret == -EOPNOTSUPP && st->nohuge_hidden && r->conf.own == THPD_OWN_VISIBLE &&
		    !r->own_hidden_logged) {
			r->own_hidden_logged = true;
			thpd_log(LOG_NOTICE, "rule %s: " HIDDEN_NOTE, r->conf.name);
		}
		if (ret == -EOPNOTSUPP && st->nohuge_hidden && r->conf.own == THPD_OWN_ASK) {
			o.backend = THP_BACKEND_INJECT;
			ret = thp_get_default(&o);
			if (ret < 0 && ret != -ESRCH) {
				p->skipped = true;
				thpd_log(LOG_INFO,
					 "process %d (%s): cannot tell whether its own policy is "
					 "nohuge (%s: %s), left alone (rule %s; own_policy = ignore "
					 "acts anyway)",
					 (int)p->pid, p->comm, thp_strerror(ret), thp_strerror_detail(),
					 r->conf.name);
				return;
			}
		}
		if (ret == 0 && (o.policy == THP_POLICY_NEVER || o.policy == THP_POLICY_NOHUGE)) {
			p->skipped = true;
			thpd_log(LOG_INFO, "process %d (%s): its own policy is %s, left alone (rule %s)",
				 (int)p->pid, p->comm,
				 o.policy == THP_POLICY_NEVER ? "never" : "nohuge", r->conf.name);
		}
	}
}
