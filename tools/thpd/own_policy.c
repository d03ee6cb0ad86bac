// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpd: what a matched process asks for itself, and what a rule sets in
 * it: setuid programs and processes with their own never/nohuge default
 * are left alone (as far as the kernel shows it from outside, unless the
 * rule says own_policy = ask); never/nohuge/system rules with
 * enforce = inject are set through the inject backend.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <thp/thp.h>

#include "thpd.h"

/* 1: a setuid/setgid (or file-capability) program, by AT_SECURE or the exe's
 * mode; 0: not; -1: the process is gone. */
int thpd_is_secure_exec(pid_t pid)
{
	char path[64];
	uint64_t aux[512];
	struct stat sb;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &sb) == 0 && (sb.st_mode & (S_ISUID | S_ISGID)))
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/auxv", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? -1 : 1; /* cannot tell: touch nothing */
	n = read(fd, aux, sizeof(aux));
	close(fd);
	if (n <= 0)
		return n == 0 || errno == ESRCH ? -1 : 1; /* a zombie's auxv is empty */
	for (ssize_t i = 0; i + 1 < n / (ssize_t)sizeof(uint64_t); i += 2) {
		if (aux[i] == AT_SECURE)
			return aux[i + 1] != 0;
		if (aux[i] == AT_NULL)
			break;
	}
	return 0;
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

		if (r->policy == THPD_HUGE && r->own == THPD_OWN_VISIBLE) {
			fprintf(out, "note: rule %s: " HIDDEN_NOTE "\n", r->name);
			n++;
		}
	}
	return n;
}

void thpd_check_skip(struct thpd_state *st, struct thpd_proc *p, struct thpd_rule *r)
{
	if (!r->setuid) {
		int secure = thpd_is_secure_exec(p->pid);

		if (secure)
			p->skipped = true;
		if (secure > 0)
			thpd_log(LOG_INFO, "process %d (%s): a setuid/setgid program, left alone (rule %s)",
				 (int)p->pid, p->comm, r->name);
		if (secure)
			return;
	}
	if (p->policy == THPD_HUGE && r->own != THPD_OWN_IGNORE) {
		/* From outside: /proc/PID/status and the maps, nobody is stopped. */
		THP_OPTS(thp_default_opts, o, .pidfd = p->pidfd);
		int ret = thp_get_default(&o);

		/*
		 * NEVER shows from outside; a nohuge default (6.18's
		 * EXCEPT_ADVISED) does not, and MADV_COLLAPSE from outside
		 * ignores it.  Only a rule that says own_policy = ask stops
		 * the process to ask it, once, through the inject backend.
		 */
		if (ret == -EOPNOTSUPP && st->nohuge_hidden && r->own == THPD_OWN_VISIBLE &&
		    !r->own_hidden_logged) {
			r->own_hidden_logged = true;
			thpd_log(LOG_NOTICE, "rule %s: " HIDDEN_NOTE, r->name);
		}
		if (ret == -EOPNOTSUPP && st->nohuge_hidden && r->own == THPD_OWN_ASK) {
			o.backend = THP_BACKEND_INJECT;
			ret = thp_get_default(&o);
			if (ret < 0 && ret != -ESRCH) {
				p->skipped = true;
				thpd_log(LOG_INFO,
					 "process %d (%s): cannot tell whether its own policy is "
					 "nohuge (%s: %s), left alone (rule %s; own_policy = ignore "
					 "acts anyway)",
					 (int)p->pid, p->comm, thp_strerror(ret), thp_strerror_detail(),
					 r->name);
				return;
			}
		}
		if (ret == 0 && (o.policy == THP_POLICY_NEVER || o.policy == THP_POLICY_NOHUGE)) {
			p->skipped = true;
			thpd_log(LOG_INFO, "process %d (%s): its own policy is %s, left alone (rule %s)",
				 (int)p->pid, p->comm,
				 o.policy == THP_POLICY_NEVER ? "never" : "nohuge", r->name);
		}
	}
}

/* A never/nohuge/system rule with enforce = inject: set it in the process, once. */
void thpd_inject(struct thpd_proc *p, const struct thpd_rule *r)
{
	static const uint32_t pol[] = { [THPD_NEVER] = THP_POLICY_NEVER,
					[THPD_NOHUGE] = THP_POLICY_NOHUGE,
					[THPD_SYSTEM] = THP_POLICY_SYSTEM };
	/* p->policy: the rule's, or the container's libthp.io/thp-policy. */
	THP_OPTS(thp_default_opts, o, .pidfd = p->pidfd, .policy = pol[p->policy],
		 .backend = THP_BACKEND_INJECT);
	int ret = thp_set_default(&o);

	p->inject_done = true;
	if (ret < 0)
		thpd_log(LOG_WARNING, "process %d (%s): rule %s: policy %s not set: %s: %s",
			 (int)p->pid, p->comm, r->name, thpd_policy_name(p->policy), thp_strerror(ret),
			 thp_strerror_detail());
	else
		thpd_log(LOG_INFO, "process %d (%s): rule %s: policy %s set (%llu mappings advised)",
			 (int)p->pid, p->comm, r->name, thpd_policy_name(p->policy),
			 (unsigned long long)o.mappings_changed);
}
