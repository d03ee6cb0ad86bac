/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Resident pages per PMD-size extent of a process, from /proc/PID/pagemap
 * (extent_count.c): what thp_collapse() decides each extent by.
 */
#ifndef THP_EXTENT_COUNT_H
#define THP_EXTENT_COUNT_H

#include <stdbool.h>
#include <stdint.h>

struct thp_target;

struct extent_count {
	int fd; /* the target's pagemap; -1 until opened */
	uint64_t pmd, page;
	bool no_scan_ioctl; /* PAGEMAP_SCAN refused (before 6.7, a filter): read entries */
	/*
	 * Entries read showed no frame numbers (no CAP_SYS_ADMIN): without
	 * PAGEMAP_SCAN a PMD-mapped extent then looks like one of base pages.
	 */
	bool pfns_hidden;
	/*
	 * The shared zero page's frame (0: not known).  Before 6.7 an entry
	 * mapping it looks like a page shared with another process; it is
	 * neither resident memory of the process nor shared.
	 */
	uint64_t zero_pfn;
	bool zero_pfn_tried;
};

void extent_count_init(struct extent_count *ec, uint64_t pmd, uint64_t page);
/* 0, or -errno: -EACCES/-EPERM not allowed, -ESRCH the process is gone. */
int extent_count_open(struct extent_count *ec, const struct thp_target *t);
/*
 * For each extent of [start, end) (PMD aligned; the arrays hold one entry
 * per extent): @present its resident pages, 0 where it is empty or
 * PMD-mapped already; the zero page is not counted where PAGEMAP_SCAN or
 * the page frames (CAP_SYS_ADMIN and kpageflags) tell it.  @shared: its
 * present pages that this process does not map alone, filled only where
 * entries were read (no_scan_ioctl); extent_count_shared() completes it.
 */
int extent_count_window(struct extent_count *ec, uint64_t start, uint64_t end,
			uint32_t *present, uint32_t *shared);
/*
 * Of @present pages of the extent at @start, those not mapped by this
 * process alone, into @shared: one read of the extent's entries, none if
 * extent_count_window() read them already.
 */
int extent_count_shared(struct extent_count *ec, uint64_t start, uint32_t present,
			uint32_t *shared);
void extent_count_close(struct extent_count *ec);

#endif
