/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The extent-by-extent MADV_COLLAPSE loop (collapse_extents.c) that
 * thp_apply_ranges(COLLAPSE) and thp_collapse() share: the kernel
 * collapses whole aligned extents only and stops a call over several at
 * the first it cannot collapse without saying which, so both ask one
 * extent at a time and decide the rest through these callbacks.
 */
#ifndef THP_COLLAPSE_EXTENTS_H
#define THP_COLLAPSE_EXTENTS_H

#include <stdint.h>

/* What a callback says about the walk. */
enum collapse_step {
	COLLAPSE_NEXT = 0, /* go on with the next extent (before: leave this one alone) */
	COLLAPSE_TRY = 1,  /* before only: collapse this extent */
	COLLAPSE_STOP = 2, /* end the walk here, no error */
};

struct collapse_extents_ops {
	/* Before the extent at @addr: a collapse_step or -errno (ends the walk). */
	int (*before)(void *arg, uint64_t addr);
	/* Collapse [@addr, @addr + @len): >= 0 done, or -errno. */
	long (*collapse)(void *arg, uint64_t addr, uint64_t len);
	/* The collapse's result @n: COLLAPSE_NEXT, COLLAPSE_STOP or -errno (ends the walk). */
	int (*after)(void *arg, uint64_t addr, long n);
	/* How many times more an -EAGAIN (a page busy) is asked again. */
	unsigned int busy_retries;
};

/*
 * Each whole @pmd-aligned extent of [@start, @end) in address order; a
 * part of an extent is left alone (the kernel refuses one that does not
 * reach a boundary).  0 when walked or stopped, else a callback's -errno.
 */
int collapse_extents(uint64_t start, uint64_t end, uint64_t pmd,
		     const struct collapse_extents_ops *ops, void *arg);

#endif
