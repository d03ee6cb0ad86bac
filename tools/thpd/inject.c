// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: enforce = inject: a rule's never/nohuge/system policy set in a process (inject backend). */
#include <thp/thp.h>

#include "log.h"
#include "thpd.h"

/* A never/nohuge/system rule with enforce = inject: set it in the process, once. */
void thpd_inject(struct thpd_proc *p, const struct thpd_rule *r)
{
	static const uint32_t pol[] = { [THPD_RULE_NEVER] = THP_POLICY_NEVER,
					[THPD_RULE_NOHUGE] = THP_POLICY_NOHUGE,
					[THPD_RULE_SYSTEM] = THP_POLICY_SYSTEM };
	/* p->policy: the rule's, or the container's libthp.io/thp-policy. */
	THP_OPTS(thp_default_opts, o, .pidfd = p->pidfd, .policy = pol[p->policy],
		 .backend = THP_BACKEND_INJECT);
	int ret = thp_set_default(&o);

	p->inject_done = true;
	if (ret < 0)
		thpd_log(LOG_WARNING, "process %d (%s): rule %s: policy %s not set: %s: %s",
			 (int)p->pid, p->comm, r->conf.name, thpd_rule_policy_name(p->policy), thp_strerror(ret),
			 thp_strerror_detail());
	else
		thpd_log(LOG_INFO, "process %d (%s): rule %s: policy %s set (%llu mappings advised)",
			 (int)p->pid, p->comm, r->conf.name, thpd_rule_policy_name(p->policy),
			 (unsigned long long)o.mappings_changed);
}
