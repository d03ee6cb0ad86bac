// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest check: thp_set_default() for every policy under every global THP mode: the
 * backend and persistence this kernel should give, what fresh mappings get,
 * forked and exec'd children, the way back to SYSTEM; on kernels without
 * the RFC, the refusals and existing-only HUGE.
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

struct sd_case {
	unsigned int policy;
	bool rfc_flag;
};

/* Expected outcome of thp_set_default on this kernel. */
static void sd_expect(const struct sd_case *k, int *ret, unsigned int *be, bool *persistent)
{
	*ret = 0;
	*persistent = true;
	switch (k->policy) {
	case THP_POLICY_SYSTEM:
		*be = k->rfc_flag ? THP_BACKEND_PRCTL_POLICY : THP_BACKEND_PRCTL_DISABLE;
		break;
	case THP_POLICY_HUGE:
		if (!rfc) {
			*be = THP_BACKEND_EXISTING_ONLY;
			*persistent = false;
		} else if (k->rfc_flag) {
			*be = THP_BACKEND_PRCTL_POLICY;
		} else {
			*be = THP_BACKEND_PMADV;
			/* README item 3: the posted RFC drops VM_HUGEPAGE at fork/exec. */
			*persistent = flavour == FL_RFC_FIXED;
		}
		break;
	case THP_POLICY_NOHUGE:
		if (!rfc && kx.except_advised) {
			*be = THP_BACKEND_PRCTL_DISABLE;
		} else if (!rfc) {
			*ret = -EOPNOTSUPP;
			*be = 0;
			*persistent = false;
		} else {
			*be = k->rfc_flag ? THP_BACKEND_PRCTL_POLICY : THP_BACKEND_PMADV;
		}
		break;
	default:
		*be = THP_BACKEND_PRCTL_DISABLE;
		break;
	}
}
static void sd_case_run(void *arg)
{
	const struct sd_case *k = arg;
	char name[96];
	struct check c = { .name = name };
	int exp_ret;
	unsigned int exp_be;
	bool exp_pers;
	uint32_t fl = k->rfc_flag ? THP_DEFAULT_F_RFC_PRCTL : 0;
	THP_OPTS(thp_default_opts, o, .policy = k->policy, .flags = fl, .prctl_set = 78,
		 .prctl_get = 79);
	void *existing;
	int r;

	snprintf(name, sizeof(name), "set_default_%s%s@%s", thp_policy_name(k->policy),
		 k->rfc_flag ? "_rfcprctl" : "", mode_names[cur_mode]);
	existing = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (existing == MAP_FAILED) {
		fail(name, "mmap");
		return;
	}
	sd_expect(k, &exp_ret, &exp_be, &exp_pers);
	r = thp_set_default(&o);
	printf("VMTEST INFO %s: ret=%d backend_used=%u(%s) persistent=%d changed=%llu detail='%s'\n",
	       name, r, o.backend_used, thp_backend_name(o.backend_used), o.persistent,
	       (unsigned long long)o.mappings_changed, thp_strerror_detail());
	if (r != exp_ret) {
		cfail(&c, "ret %d, expected %d", r, exp_ret);
	} else if (r == 0) {
		if (o.backend_used != exp_be)
			cfail(&c, "backend_used %s, expected %s", thp_backend_name(o.backend_used),
			      thp_backend_name(exp_be));
		if (o.persistent != exp_pers)
			cfail(&c, "persistent %d, expected %d", o.persistent, exp_pers);
	}
	if (r == 0 && k->policy == THP_POLICY_HUGE) {
		/* README item 4 (and existing-only): existing mappings advised. */
		if (o.mappings_changed == 0 && !smap_at((uintptr_t)existing).hg)
			cfail(&c, "HUGE: mappings_changed 0 and an existing mapping is not hg");
	}
	if (r == 0) {
		/*
		 * What the policy does to memory under this global mode: a fresh
		 * mapping, and a fresh MADV_HUGEPAGE one, touched.
		 */
		bool fhg = false, fnh = false;
		bool plain_huge, advised_huge = cur_mode != THP_MODE_NEVER;
		long plain, advised;

		fresh_flags(&fhg, &fnh);
		switch (k->policy) {
		case THP_POLICY_HUGE:
			plain_huge = cur_mode == THP_MODE_ALWAYS || (fhg && cur_mode != THP_MODE_NEVER);
			break;
		case THP_POLICY_SYSTEM:
			plain_huge = cur_mode == THP_MODE_ALWAYS;
			break;
		case THP_POLICY_NEVER:
			plain_huge = advised_huge = false;
			break;
		default: /* NOHUGE */
			plain_huge = false;
			break;
		}
		plain = fresh_huge_kb(false);
		advised = fresh_huge_kb(true);
		printf("VMTEST INFO %s: fresh AnonHugePages plain=%ld kB advised=%ld kB\n", name,
		       plain, advised);
		if (plain < 0 || advised < 0)
			cfail(&c, "fresh mapping: %ld/%ld", plain, advised);
		else if ((plain > 0) != plain_huge || (advised > 0) != advised_huge)
			cfail(&c, "under mode %s, %s: fresh mapping AnonHugePages %ld kB, advised %ld kB "
			      "(expected %s, %s)", mode_names[cur_mode], thp_policy_name(k->policy), plain,
			      advised, plain_huge ? "huge" : "none", advised_huge ? "huge" : "none");
	}
	if (r == 0 && o.persistent)
		check_children(&c, name, k->policy, k->rfc_flag,
			       k->policy == THP_POLICY_NOHUGE &&
				       o.backend_used == THP_BACKEND_PRCTL_DISABLE);
	cdone(&c);

	/* Reset to SYSTEM. */
	{
		char rname[112];
		struct check rc = { .name = rname };
		THP_OPTS(thp_default_opts, s, .policy = THP_POLICY_SYSTEM, .flags = fl,
			 .prctl_set = 78, .prctl_get = 79);
		bool hg = true, nh = true;

		snprintf(rname, sizeof(rname), "%s_reset", name);
		r = thp_set_default(&s);
		if (o.backend_used == THP_BACKEND_PMADV) {
			/*
			 * The RFC flag has no way back: libthp must say so
			 * (-EOPNOTSUPP) instead of claiming SYSTEM.
			 */
			if (r != -EOPNOTSUPP)
				cfail(&rc, "SYSTEM after a PMADV default returned %d, want -EOPNOTSUPP", r);
			if (fresh_flags(&hg, &nh) || !(hg || nh))
				cfail(&rc, "PMADV default vanished (hg=%d nh=%d): then SYSTEM should succeed",
				      hg, nh);
			cdone(&rc);
			return;
		}
		if (r)
			cfail(&rc, "thp_set_default(SYSTEM) = %d (%s)", r, thp_strerror_detail());
		if (fresh_flags(&hg, &nh) || hg || nh)
			cfail(&rc, "after SYSTEM a fresh mapping shows hg=%d nh=%d (policy %s set "
			      "through %s)", hg, nh, thp_policy_name(k->policy),
			      thp_backend_name(o.backend_used));
		if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) != 0)
			cfail(&rc, "PR_GET_THP_DISABLE still set after SYSTEM");
		cdone(&rc);
	}
}

static void check_set_default_modes(void)
{
	for (int f = 0; f < (rfc ? 2 : 1); f++)
		for (unsigned int p = 0; p < THP_POLICY_COUNT; p++) {
			struct sd_case k = { .policy = p, .rfc_flag = f };
			int st = in_child(sd_case_run, &k);

			if (st)
				fail("set_default_child", "case %s rfc=%d mode %s exited with %d",
				     thp_policy_name(p), f, mode_names[cur_mode], st);
		}
}

/* Every policy under every global mode, the boot mode first and last. */
void check_set_default(void)
{
	static const unsigned int order[] = { THP_MODE_ALWAYS, THP_MODE_MADVISE, THP_MODE_NEVER };

	check_set_default_modes();
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		if (order[i] == boot_mode)
			continue;
		if (set_sysfs_mode(order[i])) {
			fail("set_mode", "cannot switch the global THP mode to %s",
			     mode_names[order[i]]);
			continue;
		}
		check_set_default_modes();
	}
	if (set_sysfs_mode(boot_mode))
		fail("set_mode", "cannot restore the global THP mode %s", mode_names[boot_mode]);
}
static void stock_run(void *arg)
{
	struct check c = { .name = "stock_set_default" };
	int r;

	(void)arg;
	{
		THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NOHUGE);

		r = thp_set_default(&o);
		if (kx.except_advised ? r != 0 : r != -EOPNOTSUPP)
			cfail(&c, "NOHUGE: %d, expected %s", r, kx.except_advised ? "0" : "-EOPNOTSUPP");
		else if (r && !strstr(thp_strerror_detail(), "NEVER"))
			cfail(&c, "NOHUGE refused without naming what to use instead: '%s'",
			      thp_strerror_detail());
		if (!kx.except_advised)
			printf("VMTEST INFO stock_set_default NOHUGE: %d '%s'\n", r,
			       thp_strerror_detail());
	}
	{
		THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_HUGE);

		r = thp_set_default(&o);
		if (r || o.backend_used != THP_BACKEND_EXISTING_ONLY || o.persistent)
			cfail(&c, "HUGE: %d backend %u persistent %d", r, o.backend_used,
			      o.persistent);
	}
	{
		THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_NEVER);
		struct child_report cr;

		r = thp_set_default(&o);
		if (r || o.backend_used != THP_BACKEND_PRCTL_DISABLE || !o.persistent)
			cfail(&c, "NEVER: %d backend %u persistent %d", r, o.backend_used,
			      o.persistent);
		else if (exec_child(false, &cr) || cr.policy != THP_POLICY_NEVER)
			cfail(&c, "NEVER not seen in exec'd child");
	}
	cdone(&c);
}

/* Stock and distro kernels: what set_default gives without the RFC interfaces. */
void check_set_default_stock(void)
{
	in_child(stock_run, NULL);
}
