// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The extent-by-extent MADV_COLLAPSE loop of thp_apply_ranges(COLLAPSE)
 * (apply/engine.c) and thp_collapse() (proc/collapse_pass.c): which
 * extents, in which order, the busy retries, when to stop.  What an extent
 * is worth trying and what a result counts as stay with the callers.
 */
#include <errno.h>
#include <sched.h>

#include "collapse_extents.h"

int collapse_extents(uint64_t start, uint64_t end, uint64_t pmd,
		     const struct collapse_extents_ops *ops, void *arg)
{
	for (uint64_t s = (start + pmd - 1) & ~(pmd - 1); s < end && end - s >= pmd; s += pmd) {
		int step = ops->before(arg, s);
		long n;

		if (step < 0 || step == COLLAPSE_STOP)
			return step < 0 ? step : 0;
		if (step == COLLAPSE_NEXT)
			continue;
		n = ops->collapse(arg, s, pmd);
		/*
		 * EAGAIN is the kernel's "a page was busy, try again" (e.g.
		 * isolated by compaction for the very huge page being
		 * allocated); a call over several extents would have gone on
		 * past it.  A loaded machine's compaction keeps pages busy
		 * longer, so the caller may ask again a few times.
		 */
		for (unsigned int again = 0; n == -EAGAIN && again < ops->busy_retries; again++) {
			sched_yield();
			n = ops->collapse(arg, s, pmd);
		}
		step = ops->after(arg, s, n);
		if (step < 0 || step == COLLAPSE_STOP)
			return step < 0 ? step : 0;
	}
	return 0;
}
