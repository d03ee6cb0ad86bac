// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The reference model (see model.h): each rule below cites the document
 * it comes from, so that a divergence is either a library bug or a
 * document that says something else than the code.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"

unsigned int model_auto_backend(const struct model_caps *c)
{
	/* thp_apply_ranges(3): "The range backends, best first". */
	if (c->backends & (1u << THP_BACKEND_PMADV))
		return THP_BACKEND_PMADV;
	if (c->backends & (1u << THP_BACKEND_PROCESS_MADVISE))
		return THP_BACKEND_PROCESS_MADVISE;
	return THP_BACKEND_MADVISE;
}

static size_t page_of(const struct model_arena *a, uint64_t addr)
{
	return (size_t)((addr - a->base) / a->page_size);
}

static uint64_t addr_of(const struct model_arena *a, size_t page)
{
	return a->base + (uint64_t)page * a->page_size;
}

/* MADV_HUGEPAGE sets hg and clears nh; MADV_NOHUGEPAGE the reverse (madvise(2)). */
static void advise_page(uint8_t *p, int advice)
{
	if (advice == THP_ADVICE_HUGE)
		*p = (uint8_t)((*p & ~MP_NH) | MP_HG);
	else if (advice == THP_ADVICE_NOHUGE)
		*p = (uint8_t)((*p & ~MP_HG) | MP_NH);
}

/* A whole extent inside one mapping: every page mapped, no mapping starts inside. */
static bool extent_in_one_mapping(const struct model_arena *a, size_t first, size_t nr)
{
	for (size_t i = 0; i < nr; i++)
		if (!(a->page[first + i] & MP_MAPPED) || (i && (a->page[first + i] & MP_VMA_START)))
			return false;
	return true;
}

struct range_state {
	uint64_t advised, unmapped, fail_addr;
	int error;
	bool stopped; /* a real failure stopped the advising (not with SKIP_ERRORS) */
};

/* The first failure of the range is the one reported (thp.h: fail_addr). */
static void fail_at(struct range_state *st, uint64_t addr, int error)
{
	if (!st->error) {
		st->error = error;
		st->fail_addr = addr;
	}
}

/*
 * COLLAPSE (thp_apply_ranges(3), "THP_ADVICE_COLLAPSE"): only a whole
 * extent inside the range and inside one mapping counts; the rest is never
 * collapsed, not counted and no error.  A counted extent succeeded if it is
 * huge afterwards; it must fail with EINVAL in an nh mapping; otherwise the
 * kernel may refuse it.  An extent that became huge during the call and is
 * asked again by a later range is a maybe-ask here (model.h).
 */
struct collapse_ctx {
	const struct model_arena *a;
	bool skip;
	model_extent_fn extent;
	void *arg;
	const uint32_t *last_ask; /* per extent of the arena: the last range asking it, +1 */
	size_t range;             /* the range being modelled */
};

static size_t extent_index(const struct model_arena *a, uint64_t addr)
{
	return (size_t)((addr - (a->base & ~(a->pmd_size - 1))) / a->pmd_size);
}

/* From page *p on, the next whole extent before @end inside one mapping: its first page. */
static bool next_whole_extent(const struct model_arena *a, size_t *p, size_t end)
{
	while (*p < end) {
		uint64_t addr = addr_of(a, *p);
		size_t next = (size_t)(((addr / a->pmd_size) + 1) * a->pmd_size - a->base) /
			      a->page_size;

		if (addr % a->pmd_size == 0 && next <= end &&
		    extent_in_one_mapping(a, *p, next - *p))
			return true;
		*p = next;
	}
	return false;
}

static void collapse_range(const struct collapse_ctx *cx, size_t first, size_t end,
			   struct range_state *st, struct model_slack *sl)
{
	const struct model_arena *a = cx->a;
	size_t ext = (size_t)(a->pmd_size / a->page_size);

	for (size_t p = first; next_whole_extent(a, &p, end); p += ext) {
		uint64_t addr = addr_of(a, p);
		enum model_extent e;

		if (st->stopped)
			break;
		if (a->page[p] & MP_NH) {
			fail_at(st, addr, EINVAL);
			st->stopped = !cx->skip;
			continue;
		}
		e = cx->extent(cx->arg, addr);
		if (e == MODEL_EXT_BECAME_HUGE && cx->skip && cx->last_ask &&
		    cx->last_ask[extent_index(a, addr)] > cx->range + 1) {
			if (sl) {
				sl->maybe_bytes += a->pmd_size;
				if (!st->error && sl->nr_fail < MODEL_MAYBE_FAILS)
					sl->fail[sl->nr_fail++] = addr;
			}
		} else if (e != MODEL_EXT_NOT_HUGE) {
			st->advised += a->pmd_size;
		} else {
			fail_at(st, addr, MODEL_ERROR_KERNEL);
			st->stopped = !cx->skip;
		}
	}
}

/* For each extent of the arena, the last range (+1) that asks it; NULL without memory. */
static uint32_t *collapse_last_asks(const struct model_arena *a, const struct thp_range *ranges,
				    size_t n)
{
	size_t nr = extent_index(a, a->base + a->nr_pages * a->page_size) + 1;
	uint32_t *last = calloc(nr, sizeof(*last));

	for (size_t i = 0; last && i < n; i++) {
		size_t first = page_of(a, ranges[i].addr);
		size_t end = first + (size_t)(((ranges[i].len + a->page_size - 1) &
					       ~((uint64_t)a->page_size - 1)) / a->page_size);

		for (size_t p = first; next_whole_extent(a, &p, end);
		     p += (size_t)(a->pmd_size / a->page_size))
			last[extent_index(a, addr_of(a, p))] = (uint32_t)i + 1;
	}
	return last;
}

int model_apply_ranges(struct model_arena *a, const struct thp_range *ranges, size_t n,
		       int advice, uint32_t flags, unsigned int backend,
		       struct thp_report *reports, struct model_slack *slack,
		       model_extent_fn extent, void *arg)
{
	bool skip = flags & THP_F_SKIP_ERRORS;
	struct collapse_ctx cx = { a, skip, extent, arg, NULL, 0 };
	/* doc/reference.md: SKIP_ERRORS implies NO_ERROR_ON_UNMAPPED. */
	bool gaps_ok = skip || (flags & THP_F_NO_ERROR_ON_UNMAPPED);
	int ok = 0;

	/* thp.h: every report names its range and the backend, also one never reached. */
	if (advice == THP_ADVICE_COLLAPSE && skip)
		cx.last_ask = collapse_last_asks(a, ranges, n);
	for (size_t i = 0; i < n; i++) {
		if (slack)
			memset(&slack[i], 0, sizeof(slack[i]));
		memset(&reports[i], 0, sizeof(reports[i]));
		reports[i].addr = ranges[i].addr;
		reports[i].len = (ranges[i].len + a->page_size - 1) & ~((uint64_t)a->page_size - 1);
		reports[i].backend = backend;
	}
	for (size_t i = 0; i < n; i++) {
		struct thp_report *r = &reports[i];
		size_t first = page_of(a, r->addr), end = first + (size_t)(r->len / a->page_size);
		struct range_state st = { 0 };
		uint64_t gap = 0; /* first unmapped address that is an error */

		r->attempted = 1;
		/*
		 * Gaps: ENOMEM unless NO_ERROR_ON_UNMAPPED, yet "the mapped parts
		 * of that range are still advised and reported" (doc/reference.md), and
		 * bytes_unmapped counts every hole, also after a failure.
		 */
		for (size_t p = first; p < end; p++) {
			if (!(a->page[p] & MP_MAPPED)) {
				st.unmapped += a->page_size;
				if (!gaps_ok && !gap)
					gap = addr_of(a, p);
			} else if (advice != THP_ADVICE_COLLAPSE) {
				/* HUGE and NOHUGE cannot fail on a mapping the generator builds. */
				advise_page(&a->page[p], advice);
				st.advised += a->page_size;
			}
		}
		if (advice == THP_ADVICE_COLLAPSE) {
			cx.range = i;
			collapse_range(&cx, first, end, &st, slack ? &slack[i] : NULL);
		}
		/*
		 * A gap is the lesser failure: another one in the range is
		 * reported instead, wherever it is (thp_apply_ranges(3)).
		 */
		if (gap && !st.error) {
			st.error = ENOMEM;
			st.fail_addr = gap;
		}
		r->bytes_advised = st.advised;
		r->bytes_unmapped = st.unmapped;
		r->error = st.error;
		r->fail_addr = st.error ? st.fail_addr : 0;
		if (!st.error)
			ok++;
		else if (!skip) {
			/* Default mode: stop at the first range that fails, return its errno. */
			free((void *)cx.last_ask);
			return st.error == MODEL_ERROR_KERNEL ? MODEL_ERROR_KERNEL : -st.error;
		}
	}
	free((void *)cx.last_ask);
	return ok;
}

void model_apply_all(struct model_arena *a, size_t nr_vmas, uint64_t bytes, int advice,
		     struct model_all *out)
{
	/*
	 * thp_apply_all(3): every mapping is advised, gaps are never errors;
	 * HUGE/NOHUGE do not fail on any mapping a process has here, so the
	 * counts are those of the layout the call was made on.
	 */
	memset(out, 0, sizeof(*out));
	out->seen = out->advised = nr_vmas;
	out->bytes = bytes;
	out->ret = (int)nr_vmas;
	for (size_t p = 0; p < a->nr_pages; p++)
		if (a->page[p] & MP_MAPPED)
			advise_page(&a->page[p], advice);
}

/* ---- default policies ---- */

static unsigned int advice_of(uint32_t policy)
{
	return policy == THP_POLICY_HUGE ? MODEL_HG : policy == THP_POLICY_NOHUGE ? MODEL_NH : 0;
}

unsigned int model_fresh(const struct model_policy_state *s)
{
	/* The RFC kernels: a new VMA gets mm->def_flags, and the prctl's policy on top. */
	return s->def | advice_of(s->rfc);
}

void model_new_mm(const struct model_kernel *k, const struct model_policy_state *s,
		  struct model_policy_state *child)
{
	/*
	 * fork() and execve() keep PR_SET_THP_DISABLE and the RFC prctl's
	 * policy; of mm->def_flags only what VM_INIT_DEF_MASK holds: nh on
	 * the posted RFC, hg too with its fix (shared/kernels/README.md).
	 */
	*child = *s;
	if (s->def == MODEL_HG && !k->new_mm_keeps_hg)
		child->def = 0;
}

static void model_get(const struct model_kernel *k, const struct model_policy_state *s,
		      uint32_t flags, struct model_policy_answer *out)
{
	struct model_policy_state child;
	unsigned int fresh = model_fresh(s);

	/*
	 * thp_get_default(3): PR_GET_THP_DISABLE first; then the RFC prctl
	 * when declared; then the advice of a fresh mapping, persistent when a
	 * forked child's fresh mapping gets it too, named PRCTL_POLICY when the
	 * process set that policy through the RFC prctl, else PMADV.
	 */
	out->persistent = true;
	if (s->disable) {
		out->policy = s->disable == MODEL_THP_EXCEPT_ADVISED ? THP_POLICY_NOHUGE
								     : THP_POLICY_NEVER;
		out->backend_used = THP_BACKEND_PRCTL_DISABLE;
		return;
	}
	if ((flags & THP_DEFAULT_F_RFC_PRCTL) && k->rfc_prctl && s->rfc != THP_POLICY_SYSTEM) {
		out->policy = s->rfc;
		out->backend_used = THP_BACKEND_PRCTL_POLICY;
		return;
	}
	if (!fresh) {
		out->policy = THP_POLICY_SYSTEM;
		out->backend_used = THP_BACKEND_AUTO;
		return;
	}
	out->policy = fresh & MODEL_HG ? THP_POLICY_HUGE : THP_POLICY_NOHUGE;
	out->backend_used = s->last_prctl == (int)out->policy ? THP_BACKEND_PRCTL_POLICY
							     : THP_BACKEND_PMADV;
	model_new_mm(k, s, &child);
	out->persistent = (model_fresh(&child) & advice_of(out->policy)) != 0;
}

/*
 * thp_set_default(3), "Mechanisms": the RFC prctl when declared (not for
 * NEVER), PMADV_SET_FORK_EXEC_DEFAULT for HUGE and NOHUGE, PR_SET_THP_DISABLE
 * for the rest, and for HUGE the existing mappings only.  Returns true
 * when one of them took the call.
 */
static bool model_mechanism(const struct model_kernel *k, struct model_policy_state *s,
			    uint32_t policy, uint32_t flags, struct model_policy_answer *out)
{
	unsigned int adv = advice_of(policy);
	bool declared = (flags & THP_DEFAULT_F_RFC_PRCTL) && k->rfc_prctl;
	bool require = flags & THP_DEFAULT_F_REQUIRE_PERSISTENT;

	if (policy != THP_POLICY_NEVER && declared) {
		/*
		 * The kernel with the RFC's fix advises the existing mappings
		 * when the policy changes; a PMADV default of the other advice
		 * is replaced, or fresh mappings would get both.
		 */
		if (adv && k->prctl_advises && s->rfc != policy)
			out->advises_existing = adv;
		s->rfc = policy;
		if (adv && s->def && s->def != adv)
			s->def = adv;
		out->backend_used = THP_BACKEND_PRCTL_POLICY;
		out->persistent = true;
		return true;
	}
	if (adv && k->pmadv_default && !(advice_of(s->rfc) & ~adv)) {
		/* Persistent: a new mm's fresh mappings get the advice too. */
		struct model_policy_state t = *s, child;
		bool persists;

		t.def = adv;
		model_new_mm(k, &t, &child);
		persists = (model_fresh(&child) & adv) != 0;
		if (!require || persists) {
			s->def = adv;
			out->backend_used = THP_BACKEND_PMADV;
			out->persistent = persists;
			return true;
		}
	}
	if (policy != THP_POLICY_HUGE) {
		/* "before 6.18, THP_POLICY_NOHUGE fails with -EOPNOTSUPP". */
		if (policy == THP_POLICY_NOHUGE && !k->except_advised)
			return false;
		s->disable = policy == THP_POLICY_NEVER    ? MODEL_THP_DISABLED :
			     policy == THP_POLICY_NOHUGE   ? MODEL_THP_EXCEPT_ADVISED :
							     MODEL_THP_ENABLED;
		out->backend_used = THP_BACKEND_PRCTL_DISABLE;
		out->persistent = true;
		return true;
	}
	/* HUGE "on mainline only advises the existing mappings", persistent = false. */
	if (require)
		return false;
	out->backend_used = THP_BACKEND_EXISTING_ONLY;
	out->persistent = false;
	return true;
}

void model_policy_step(const struct model_kernel *k, struct model_policy_state *s, bool set,
		       uint32_t policy, uint32_t flags, struct model_policy_answer *out)
{
	struct model_policy_state before = *s;

	memset(out, 0, sizeof(*out));
	if (!set) {
		model_get(k, s, flags, out);
		return;
	}
	/* A disable left by NEVER/NOHUGE would hide any other policy: it is cleared. */
	if (policy != THP_POLICY_NEVER)
		s->disable = MODEL_THP_ENABLED;
	/*
	 * "After a default set with PMADV_SET_FORK_EXEC_DEFAULT, setting
	 * THP_POLICY_SYSTEM fails with -EOPNOTSUPP": so does any SYSTEM that
	 * leaves fresh mappings advised.  A call that fails changes nothing.
	 */
	if (!model_mechanism(k, s, policy, flags, out) ||
	    (policy == THP_POLICY_SYSTEM && k->pmadv_default && model_fresh(s))) {
		*s = before;
		memset(out, 0, sizeof(*out));
		out->ret = -EOPNOTSUPP;
		return;
	}
	s->last_prctl = out->backend_used == THP_BACKEND_PRCTL_POLICY ? (int)policy : -1;
	/* "HUGE and NOHUGE also advise the existing mappings unless NO_EXISTING". */
	if (advice_of(policy) && !(flags & THP_DEFAULT_F_NO_EXISTING) &&
	    out->backend_used != THP_BACKEND_PRCTL_DISABLE)
		out->advises_existing = advice_of(policy);
}

void model_remote_policy_step(const struct model_kernel *k, struct model_policy_state *s,
			      bool set, uint32_t policy, uint32_t flags,
			      struct model_policy_answer *out)
{
	memset(out, 0, sizeof(*out));
	if (!set) {
		/*
		 * thp_get_default(3): another process's policy "is read from the
		 * THP_enabled: line of /proc/PID/status, which shows only whether
		 * THP is disabled completely"; SYSTEM and NOHUGE look the same
		 * there, and "that case fails with -EOPNOTSUPP rather than guess".
		 */
		if (k->status_thp_enabled && s->disable == MODEL_THP_DISABLED) {
			out->policy = THP_POLICY_NEVER;
			out->backend_used = THP_BACKEND_PRCTL_DISABLE;
			out->persistent = true;
		} else {
			out->ret = -EOPNOTSUPP;
		}
		return;
	}
	/*
	 * thp_set_default(3), "Another process: the inject backend": the
	 * target issues PR_SET_THP_DISABLE itself, so NEVER, NOHUGE (6.18)
	 * and SYSTEM, persistent, backend_used INJECT, no mapping advised;
	 * HUGE fails with -EOPNOTSUPP.  The RFC prctl is not PR_SET_THP_DISABLE:
	 * declared, it is a mechanism this backend does not have (-EOPNOTSUPP).
	 */
	if (policy == THP_POLICY_HUGE || (flags & THP_DEFAULT_F_RFC_PRCTL) ||
	    (policy == THP_POLICY_NOHUGE && !k->except_advised)) {
		out->ret = -EOPNOTSUPP;
		return;
	}
	s->disable = policy == THP_POLICY_NEVER  ? MODEL_THP_DISABLED :
		     policy == THP_POLICY_NOHUGE ? MODEL_THP_EXCEPT_ADVISED :
						   MODEL_THP_ENABLED;
	out->backend_used = THP_BACKEND_INJECT;
	out->persistent = true;
}
