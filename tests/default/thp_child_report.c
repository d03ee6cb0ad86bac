// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_child_report [--madvise]: print this process's default THP policy as
 * libthp sees it and what a fresh, touched, 2 MiB-aligned 4 MiB anonymous
 * mapping really got, as one line of key=value words:
 *
 *   policy=nohuge backend=prctl_thp_disable persistent=1 thp_disable=3 hg=0 nh=0 anonhuge_kb=0
 *
 * Run by test_default after fork()+execv() to see what survives exec().
 * Exit status 0 when every measurement worked, 2 otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#include <thp/thp.h>

#include "thp_default_util.c" /* and lib/core/compat.h */

int main(int argc, char **argv)
{
	THP_OPTS(thp_default_opts, o);
	bool advise = argc > 1 && !strcmp(argv[1], "--madvise");
	struct tu_smaps s;
	int r, rs;

	r = thp_get_default(&o);
	rs = tu_probe_fresh(advise, &s);
	printf("policy=%s backend=%s persistent=%d thp_disable=%d hg=%d nh=%d anonhuge_kb=%ld "
	       "get_ret=%d\n",
	       r == 0 ? thp_policy_name(o.policy) : "error", thp_backend_name(o.backend_used),
	       (int)o.persistent, (int)prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), (int)s.hg, (int)s.nh,
	       rs == 0 ? s.anonhuge_kb : -1L, r);
	fflush(stdout);
	return r == 0 && rs == 0 ? 0 : 2;
}
