// SPDX-License-Identifier: LGPL-2.1-or-later
/* Which range backend serves a call; for the own process AUTO is learnt once per advice. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "internal.h"

static const struct thp_backend_ops *const range_backends[] = {
	&backend_pmadv_ops,
	&backend_process_madvise_ops,
	&backend_madvise_ops,
};

/*
 * The AUTO choice for the calling process depends on the kernel and the
 * advice alone: learnt once per advice (HUGE, NOHUGE, COLLAPSE), so a call
 * does not pass over (and note why) the backends this kernel lacks again.
 */
static _Atomic(const struct thp_backend_ops *) self_auto_choice[3];

static _Atomic(const struct thp_backend_ops *) *self_auto_slot(int advice)
{
	switch (advice) {
	case THP_ADVICE_HUGE:
		return &self_auto_choice[0];
	case THP_ADVICE_NOHUGE:
		return &self_auto_choice[1];
	case THP_ADVICE_COLLAPSE:
		return &self_auto_choice[2];
	default:
		return NULL;
	}
}

static const struct thp_backend_ops *backend_search(unsigned int want, const struct thp_target *t,
						    int advice, int *err)
{
	const struct thp_caps *c = caps_get();

	/* Stops the target and needs ptrace rights: never AUTO's choice. */
	if (want == THP_BACKEND_INJECT) {
		*err = backend_inject_ops.can_apply(c, t, advice);
		return *err ? NULL : &backend_inject_ops;
	}
	for (size_t i = 0; i < ARRAY_LEN(range_backends); i++) {
		const struct thp_backend_ops *be = range_backends[i];

		if (want != THP_BACKEND_AUTO && want != (unsigned int)be->id)
			continue;
		*err = be->can_apply(c, t, advice);
		if (*err == 0) {
			report_clear_detail();
			return be;
		}
		if (want != THP_BACKEND_AUTO)
			return NULL;
	}
	if (want == THP_BACKEND_AUTO) {
		/* process_madvise() says best why the kernel cannot (remote, old kernel). */
		*err = backend_process_madvise_check(c, t, advice);
		if (!*err)
			*err = -EOPNOTSUPP;
		return NULL;
	}
	report_set_detail("backend %u (%s) cannot apply ranges", want, thp_backend_name(want));
	*err = want < THP_BACKEND_COUNT ? -EOPNOTSUPP : -EINVAL;
	return NULL;
}

const struct thp_backend_ops *backend_select(unsigned int want, const struct thp_target *t,
					     int advice, int *err)
{
	_Atomic(const struct thp_backend_ops *) *slot =
		want == THP_BACKEND_AUTO && t->self ? self_auto_slot(advice) : NULL;
	const struct thp_backend_ops *be;

	*err = 0;
	if (slot) {
		be = atomic_load_explicit(slot, memory_order_relaxed);
		if (be)
			return be;
	}
	be = backend_search(want, t, advice, err);
	if (slot && be)
		atomic_store_explicit(slot, be, memory_order_relaxed);
	return be;
}

const struct thp_backend_ops *backend_select_auto_learnt(int advice)
{
	_Atomic(const struct thp_backend_ops *) *slot = self_auto_slot(advice);

	return slot ? atomic_load_explicit(slot, memory_order_relaxed) : NULL;
}

/*
 * After validation, thp_apply_ranges() and thp_apply_all() both open the
 * target, pick its backend and give that backend a pidfd when it needs one.
 * On failure nothing is left open.
 */
int backend_select_open(struct apply_ctx *ctx, struct thp_target *t, int pidfd, int advice,
			uint32_t flags, unsigned int backend)
{
	int err;

	const struct thp_caps *c = caps_get();

	/* Before 6.1 the kernel has no such advice: refuse it before any call. */
	if (advice == THP_ADVICE_COLLAPSE && !c->madvise_collapse) {
		report_set_detail("MADV_COLLAPSE needs Linux 6.1; this kernel does not have it");
		return -EOPNOTSUPP;
	}
	err = target_open(pidfd, t);
	if (err)
		return err;
	memset(ctx, 0, sizeof(*ctx));
	ctx->be = backend_select(backend, t, advice, &err);
	if (ctx->be && ctx->be->id != THP_BACKEND_MADVISE)
		err = target_need_pidfd(t);
	if (err) {
		target_close(t);
		return err;
	}
	ctx->t = t;
	ctx->advice = advice;
	ctx->flags = flags;
	ctx->page_size = c->page_size;
	ctx->pmd_size = c->pmd_size ? c->pmd_size : 2u << 20;
	return 0;
}
