// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The pass over the caller's existing mappings for thp_set_default(): one
 * read of smaps (the VmFlags tell the advice), and one madvise() for each
 * run of mappings between two advised the other way.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>

#include "default.h"
#include "internal.h"
#include "syscall.h"

/*
 * A run of mappings none of which is advised the other way, to be advised
 * in one call: [start, end) with the holes between them (madvise() says
 * ENOMEM for a hole and advises every mapping all the same); @fresh of
 * them are not advised this way yet.
 */
struct advise_span {
	uint64_t start, end;
	uint64_t fresh;
};

/*
 * One madvise() for the span; if some mapping in it refuses the advice
 * (madvise() stops there), each mapping of the span on its own, as found
 * by the VMA walk.  Returns the mappings changed.
 */
static uint64_t advise_span(const struct thp_target *self, struct advise_span *sp, int advice)
{
	struct thp_vma_walk w;
	struct thp_vma v;
	uint64_t ok = 0, fresh = sp->fresh;
	long r;

	sp->fresh = 0;
	if (!fresh)
		return 0;
	r = sys_madvise(sp->start, sp->end - sp->start, advice);
	if (r == 0 || r == -ENOMEM)
		return fresh;
	/* Special mappings (vdso, vvar) may refuse: not our business, the rest goes on. */
	if (vma_walk_open(&w, self, false))
		return 0;
	for (uint64_t at = sp->start; at < sp->end && vma_walk_next(&w, at, &v) == 1 &&
				      v.start < sp->end;
	     at = v.end)
		ok += sys_madvise(v.start, v.end - v.start, advice) == 0;
	vma_walk_close(&w);
	return ok < fresh ? ok : fresh;
}

/*
 * The smaps passes below read through this buffer (they run under
 * default_lock): one allocated now may be a mapping the allocator makes for
 * it (ASan's does), which a pass would advise and count among the caller's
 * mappings.
 */
static char smaps_buf[SMAPS_READ_SIZE];

/* Where the vsyscall page lies (x86-64's kernel half): no mapping to advise. */
#define KERNEL_HALF 0x800000000000ULL

/*
 * Hand each of the calling process's mappings (their range and advice, in
 * address order) to @fn, then, when smaps was read to its end, NULL once.
 * 0 or -errno.  The one open, loop and close of smaps for both passes.
 */
static int each_own_mapping(void (*fn)(void *arg, const struct thp_target *self,
				       const struct smaps_advice *st),
			    void *arg)
{
	struct smaps_advice st;
	struct smaps_reader sr;
	struct thp_target self;
	int r = target_open(THP_SELF, &self);

	if (!r)
		r = smaps_open(&sr, &self, smaps_buf, sizeof(smaps_buf));
	if (r) {
		target_close(&self);
		return r;
	}
	while ((r = smaps_next_advice(&sr, &st)) == 1)
		fn(arg, &self, &st);
	line_reader_close(&sr.lr);
	if (r == 0)
		fn(arg, &self, NULL);
	target_close(&self);
	return r;
}

static void count_one(void *arg, const struct thp_target *self, const struct smaps_advice *st)
{
	uint64_t *n = arg;

	(void)self;
	if (st)
		*n += !st->huge && !st->nohuge && st->start < KERNEL_HALF;
}

int advise_existing_count_unadvised(uint64_t *n)
{
	*n = 0;
	return each_own_mapping(count_one, n);
}

struct advise_pass {
	int advice;
	struct advise_span sp;
	uint64_t changed;
};

static void advise_one(void *arg, const struct thp_target *self, const struct smaps_advice *st)
{
	struct advise_pass *p = arg;
	bool opposite, already;

	/* The end of smaps, or the vsyscall page (kernel half): either ends a run. */
	if (!st || st->start >= KERNEL_HALF) {
		p->changed += advise_span(self, &p->sp, p->advice);
		return;
	}
	opposite = p->advice == MADV_HUGEPAGE ? st->nohuge : st->huge;
	already = p->advice == MADV_HUGEPAGE ? st->huge : st->nohuge;
	if (opposite) {
		p->changed += advise_span(self, &p->sp, p->advice);
		return;
	}
	if (!p->sp.fresh)
		p->sp.start = st->start;
	if (!already || p->sp.fresh) {
		p->sp.end = st->end;
		p->sp.fresh += !already;
	}
}

/*
 * Advise existing mappings not explicitly advised the other way, as both
 * RFCs do: one pass over smaps (the VmFlags tell), and one madvise() for
 * each run of mappings between two advised the other way (with many
 * mappings, one call per mapping cost more than the smaps read).  A mapping
 * another thread advises the other way while the pass goes on, inside a
 * run already read, gets this advice: as when it comes just after the
 * call.
 */
int advise_existing(int advice, uint64_t *changed)
{
	struct advise_pass p = { .advice = advice, .sp = { 0, 0, 0 }, .changed = 0 };
	int r = each_own_mapping(advise_one, &p);

	*changed = p.changed;
	return r;
}
