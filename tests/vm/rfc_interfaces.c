// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest check: The RFC kernels' interfaces as README's items 1-5 describe them: PMADV's
 * SKIP_ERRORS return, thp_apply_all() through PMADV, the posted RFC losing a
 * PMADV HUGE default at fork/exec, the RFC prctl advising existing mappings
 * and its HUGE surviving exec.
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

/* ---- README item 1: PMADV SKIP_ERRORS normalisation ------------------ */

static void check_pmadv_skip_errors_return(void)
{
	struct check c = { .name = "rfc1_pmadv_skip_errors_return" };
	struct thp_report rep[3];
	struct thp_range rg[3];
	char *p = mmap(NULL, 8 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uintptr_t base;
	int r;

	if (!rfc) {
		printf("VMTEST INFO rfc1 skipped on stock\n");
		return;
	}
	if (p == MAP_FAILED) {
		fail(c.name, "mmap: %s", strerror(errno));
		return;
	}
	base = ((uintptr_t)p + PMD - 1) & ~(PMD - 1);
	for (int i = 0; i < 3; i++) {
		rg[i].addr = base + (uint64_t)i * PMD;
		rg[i].len = PMD;
	}
	/* Touch everything so that collapse has pages to work on. */
	for (unsigned long off = 0; off < 3 * PMD; off += 4096)
		((volatile char *)base)[off] = 1;
	if (madvise((void *)(uintptr_t)rg[1].addr, PMD, MADV_NOHUGEPAGE))
		cfail(&c, "madvise(NOHUGEPAGE): %s", strerror(errno));
	{
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE,
			 .flags = THP_F_SKIP_ERRORS, .backend = THP_BACKEND_PMADV, .reports = rep);
		r = thp_apply_ranges(rg, 3, &o);
		if (r != 2)
			cfail(&c, "thp_apply_ranges(3 x 2 MiB, COLLAPSE, SKIP_ERRORS, PMADV) with "
			      "the middle range nh-advised returned %d, expected 2", r);
		if (r >= 0 && (rep[1].error == 0 || rep[0].error || rep[2].error))
			cfail(&c, "report errors %d/%d/%d, expected only the middle one",
			      rep[0].error, rep[1].error, rep[2].error);
	}
	munmap(p, 8 * MiB);
	cdone(&c);
}

/* ---- README item 2: apply_all SKIP on rfc kernels -------------------- */

static void apply_all_auto_child(int wfd, void *arg)
{
	int res[2];
	THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_HUGE, .flags = THP_F_SKIP_ERRORS);

	(void)arg;
	res[0] = thp_apply_all(&o);
	res[1] = (int)o.backend_used;
	if (write(wfd, res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(1);
}

static void check_apply_all_auto_uses_pmadv(void)
{
	struct check c = { .name = "rfc2_apply_all_skip" };
	int res[2] = { 0, 0 };

	if (!rfc)
		return;
	if (run_piped_exact(apply_all_auto_child, NULL, res, sizeof(res)))
		cfail(&c, "child failed");
	else if (res[0] <= 0)
		cfail(&c, "thp_apply_all(HUGE, SKIP_ERRORS, auto) = %d (%s), expected > 0",
		      res[0], res[0] < 0 ? strerror(-res[0]) : "");
	else if (res[1] != THP_BACKEND_PMADV)
		cfail(&c, "backend_used %d, expected pmadv", res[1]);
	cdone(&c);
}
/* README item 5 is the HUGE + RFC prctl exec check above; also a named one. */
static void prctl_huge_survives_exec(void *arg)
{
	struct check c = { .name = "rfc5_prctl_huge_survives_exec" };
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_HUGE, .flags = THP_DEFAULT_F_RFC_PRCTL,
		 .prctl_set = 78, .prctl_get = 79);
	struct child_report cr;
	int r;

	(void)arg;
	r = thp_set_default(&o);
	if (r || o.backend_used != THP_BACKEND_PRCTL_POLICY || !o.persistent)
		cfail(&c, "thp_set_default(HUGE, RFC_PRCTL) = %d backend %u persistent %d", r,
		      o.backend_used, o.persistent);
	else if (exec_child(true, &cr))
		cfail(&c, "no report from exec'd child");
	else if (cr.rc || cr.policy != THP_POLICY_HUGE || !cr.hg)
		cfail(&c, "exec'd child: rc %d policy %d hg %d", cr.rc, cr.policy, cr.hg);
	cdone(&c);
}

/* In in_child(): exit 1 if a fresh mapping is hg, 0 if not, 2 if it cannot tell. */
static void exit_fresh_hg(void *arg)
{
	bool hg = false, nh = false;

	(void)arg;
	_exit(fresh_flags(&hg, &nh) ? 2 : hg);
}

/*
 * README item 3: a HUGE default set with PMADV_SET_FORK_EXEC_DEFAULT is lost
 * at fork/exec on the posted RFC and kept on the fixed one.  libthp must
 * say which; --require-persistent must follow, and its refusal must leave
 * the caller's default alone.
 */
static void pmadv_huge_persistence(void *arg)
{
	struct check c = { .name = "rfc3_pmadv_set_default_huge_persistence" };
	bool kept = flavour == FL_RFC_FIXED;
	THP_OPTS(thp_default_opts, req, .policy = THP_POLICY_HUGE,
		 .flags = THP_DEFAULT_F_REQUIRE_PERSISTENT);
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_HUGE, .backend = THP_BACKEND_PMADV);
	bool hg = false, nh = false;
	int r;

	(void)arg;
	r = thp_set_default(&req);
	if (kept ? (r || req.backend_used != THP_BACKEND_PMADV || !req.persistent)
		 : r != -EOPNOTSUPP)
		cfail(&c, "thp_set_default(HUGE, REQUIRE_PERSISTENT) = %d backend %u "
		      "persistent %d (expected %s)", r, req.backend_used, req.persistent,
		      kept ? "0, pmadv, 1" : "-EOPNOTSUPP");
	if (fresh_flags(&hg, &nh) || hg != kept)
		cfail(&c, "after REQUIRE_PERSISTENT: a fresh mapping has hg=%d, expected %d", hg,
		      kept);
	r = thp_set_default(&o);
	if (r || o.backend_used != THP_BACKEND_PMADV || o.persistent != kept)
		cfail(&c, "thp_set_default(HUGE, PMADV) = %d backend %u persistent %d "
		      "(expected 0, pmadv, %d)", r, o.backend_used, o.persistent, kept);
	/* Reading it back says the same. */
	memset(&o, 0, sizeof(o));
	o.sz = sizeof(o);
	r = thp_get_default(&o);
	if (r || o.policy != THP_POLICY_HUGE || o.backend_used != THP_BACKEND_PMADV ||
	    o.persistent != kept) {
		/* Seen once in CI (a probe page merged into a neighbour): say what a child sees. */
		struct thp_default_opts again = { .sz = sizeof(again) };
		int r2 = thp_get_default(&again), child = in_child(exit_fresh_hg, NULL);

		cfail(&c, "thp_get_default = %d policy %u backend %u persistent %d "
		      "(expected 0, huge, pmadv, %d); asked again: %d persistent %d; a fork()ed "
		      "child's fresh mapping: hg=%d (2: unknown)", r, o.policy, o.backend_used, o.persistent,
		      kept, r2, again.persistent, child);
	}
	cdone(&c);
}

static void prctl_huge_advises_existing(void *arg)
{
	struct check c = { .name = "rfc4_prctl_huge_advises_existing" };
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_HUGE, .flags = THP_DEFAULT_F_RFC_PRCTL,
		 .prctl_set = 78, .prctl_get = 79);
	void *m = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int r;

	(void)arg;
	r = thp_set_default(&o);
	if (r || o.backend_used != THP_BACKEND_PRCTL_POLICY)
		cfail(&c, "thp_set_default(HUGE, RFC_PRCTL) = %d backend %u", r, o.backend_used);
	else if (o.mappings_changed == 0 && !smap_at((uintptr_t)m).hg)
		cfail(&c, "mappings_changed 0 and the existing mapping is not hg");
	cdone(&c);
}


/* README's items 1-5, on the rfc and rfc-fixed kernels only. */
void check_rfc_interfaces(void)
{
	check_pmadv_skip_errors_return();
	check_apply_all_auto_uses_pmadv();
	in_child(pmadv_huge_persistence, NULL);
	in_child(prctl_huge_advises_existing, NULL);
	in_child(prctl_huge_survives_exec, NULL);
}
