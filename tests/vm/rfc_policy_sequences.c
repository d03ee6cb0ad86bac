// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest check: Sequences of thp_set_default() calls the model checker found wrong on the
 * RFC kernels, each in its own child from SYSTEM.
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

/*
 * Policy sequences the model checker found wrong on the RFC kernels; each
 * runs in its own child from SYSTEM.  @rfc_flag: the call declares the
 * RFC prctl (78/79).
 */
static int seq_set(unsigned int policy, bool rfc_flag, uint32_t flags, struct thp_default_opts *o)
{
	THP_OPTS(thp_default_opts, d, .policy = policy, .prctl_set = 78, .prctl_get = 79,
		 .flags = flags | (rfc_flag ? THP_DEFAULT_F_RFC_PRCTL : 0));
	int r = thp_set_default(&d);

	if (o)
		*o = d;
	return r;
}

/* NEVER then NOHUGE: the plain disable NEVER left must not outlive it. */
static void seq_never_nohuge(void *arg)
{
	bool rfc_flag = *(bool *)arg;
	char name[64];
	struct check c = { .name = name };
	struct thp_default_opts o;
	bool hg = false, nh = false;
	int r;

	snprintf(name, sizeof(name), "seq_never_then_nohuge%s", rfc_flag ? "_rfcprctl" : "");
	if (seq_set(THP_POLICY_NEVER, rfc_flag, 0, NULL))
		cfail(&c, "NEVER failed");
	r = seq_set(THP_POLICY_NOHUGE, rfc_flag, 0, &o);
	if (r) {
		cfail(&c, "NOHUGE after NEVER = %d (%s)", r, thp_strerror_detail());
	} else {
		long d = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
		THP_OPTS(thp_default_opts, g, .flags = rfc_flag ? THP_DEFAULT_F_RFC_PRCTL : 0,
			 .prctl_set = 78, .prctl_get = 79);

		if (!disable_fits(THP_POLICY_NOHUGE, (int)d))
			cfail(&c, "PR_GET_THP_DISABLE %ld after NOHUGE (backend %s)", d,
			      thp_backend_name(o.backend_used));
		if (fresh_flags(&hg, &nh) || !nh || hg)
			cfail(&c, "fresh mapping hg=%d nh=%d", hg, nh);
		if (thp_get_default(&g) || g.policy != THP_POLICY_NOHUGE)
			cfail(&c, "get reads %s", thp_policy_name(g.policy));
		if (o.persistent)
			check_children(&c, name, THP_POLICY_NOHUGE, rfc_flag,
				       o.backend_used == THP_BACKEND_PRCTL_DISABLE);
	}
	cdone(&c);
}

/*
 * HUGE (RFC prctl), get, SYSTEM (RFC prctl), then HUGE with
 * REQUIRE_PERSISTENT through PMADV: what the get learnt while the prctl's
 * HUGE was in force must not make the PMADV default look persistent.
 */
static void seq_cached_persistence(void *arg)
{
	struct check c = { .name = "seq_cached_answer_outlived_state" };
	THP_OPTS(thp_default_opts, g);
	struct thp_default_opts o;
	int r;

	(void)arg;
	if (seq_set(THP_POLICY_HUGE, true, 0, NULL) || thp_get_default(&g) ||
	    seq_set(THP_POLICY_SYSTEM, true, 0, NULL))
		cfail(&c, "HUGE/get/SYSTEM through the RFC prctl failed");
	r = seq_set(THP_POLICY_HUGE, false, THP_DEFAULT_F_REQUIRE_PERSISTENT, &o);
	printf("VMTEST INFO %s: ret=%d backend=%s persistent=%d\n", c.name, r,
	       thp_backend_name(o.backend_used), o.persistent);
	if (flavour == FL_RFC && r != -EOPNOTSUPP)
		cfail(&c, "posted RFC: PMADV HUGE with REQUIRE_PERSISTENT = %d persistent %d, want "
		      "-EOPNOTSUPP", r, o.persistent);
	if (r == 0 && o.persistent)
		check_children(&c, c.name, THP_POLICY_HUGE, false, false);
	cdone(&c);
}

/* HUGE (RFC prctl) then NOHUGE (PMADV): never both hg and nh on fresh mappings. */
static void seq_prctl_huge_pmadv_nohuge(void *arg)
{
	struct check c = { .name = "seq_prctl_huge_then_pmadv_nohuge" };
	struct thp_default_opts o;
	bool hg = false, nh = false;
	int r;

	(void)arg;
	if (seq_set(THP_POLICY_HUGE, true, 0, NULL))
		cfail(&c, "HUGE through the RFC prctl failed");
	r = seq_set(THP_POLICY_NOHUGE, false, 0, &o);
	printf("VMTEST INFO %s: ret=%d backend=%s detail='%s'\n", c.name, r,
	       thp_backend_name(o.backend_used), thp_strerror_detail());
	if (fresh_flags(&hg, &nh))
		cfail(&c, "no fresh mapping");
	else if (r == 0 && (!nh || hg))
		cfail(&c, "NOHUGE returned 0 but fresh mappings have hg=%d nh=%d", hg, nh);
	else if (r != 0 && (!hg || nh))
		cfail(&c, "NOHUGE failed (%d) but changed the HUGE default: hg=%d nh=%d", r, hg, nh);
	cdone(&c);
}

/* A policy set through the RFC prctl is named so by a get that cannot issue it. */
static void seq_get_names_prctl(void *arg)
{
	struct check c = { .name = "seq_get_names_prctl_backend" };
	THP_OPTS(thp_default_opts, g);

	(void)arg;
	if (seq_set(THP_POLICY_HUGE, true, 0, NULL))
		cfail(&c, "HUGE through the RFC prctl failed");
	else if (thp_get_default(&g) || g.policy != THP_POLICY_HUGE ||
		 g.backend_used != THP_BACKEND_PRCTL_POLICY)
		cfail(&c, "get: policy %s backend %s, want huge prctl_thp_policy",
		      thp_policy_name(g.policy), thp_backend_name(g.backend_used));
	cdone(&c);
}

/*
 * The posted RFC gives the prctl's policy to new VMAs only: a new private
 * mapping merged into a plain neighbour stays without it.  With such a
 * neighbour ending where thp_get_default() puts its probe page (1 GiB, and
 * 256 and 16 MiB after it), a private probe read "no advice" and get said
 * SYSTEM (and a probe child, whose copied neighbour cannot merge, said
 * otherwise: the persistence flakes the model checker met).  The probe is a
 * shared mapping, which never merges.
 */
static void seq_probe_beside_plain_mapping(void *arg)
{
	struct check c = { .name = "seq_probe_beside_plain_mapping" };
	static const uintptr_t probe_at[] = { 0x40000000, 0x10000000, 0x1000000 };
	THP_OPTS(thp_default_opts, g);
	int r;

	(void)arg;
	for (size_t i = 0; i < sizeof(probe_at) / sizeof(probe_at[0]); i++)
		if (mmap((void *)(probe_at[i] - 4 * 4096), 4 * 4096, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) == MAP_FAILED)
			cfail(&c, "cannot map below %#lx: %s", (unsigned long)probe_at[i],
			      strerror(errno));
	/* Set by hand: thp_set_default() would add a PMADV default the merge cannot hide. */
	if (prctl(78, 1 /* PR_THP_POLICY_DEFAULT_NOHUGE */, 0, 0, 0))
		cfail(&c, "PR_SET_THP_POLICY NOHUGE: %s", strerror(errno));
	r = thp_get_default(&g);
	printf("VMTEST INFO seq_probe_beside_plain_mapping: get %d policy %u backend %u "
	       "persistent %d\n", r, g.policy, g.backend_used, g.persistent);
	/* Undeclared, the policy shows in the probe alone: named PMADV, as documented. */
	if (r || g.policy != THP_POLICY_NOHUGE || g.backend_used != THP_BACKEND_PMADV ||
	    !g.persistent)
		cfail(&c, "thp_get_default = %d policy %u backend %u persistent %d (expected 0, "
		      "nohuge, pmadv, 1)", r, g.policy, g.backend_used, g.persistent);
	cdone(&c);
}

void check_policy_sequences(void)
{
	static const bool no = false, yes = true;

	in_child(seq_never_nohuge, (void *)&no);
	in_child(seq_never_nohuge, (void *)&yes);
	in_child(seq_cached_persistence, NULL);
	in_child(seq_prctl_huge_pmadv_nohuge, NULL);
	in_child(seq_get_names_prctl, NULL);
	in_child(seq_probe_beside_plain_mapping, NULL);
}
