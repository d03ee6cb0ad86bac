/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The folio-size reader thp_query() uses (folio_sizes.c). */
#ifndef THP_FOLIO_SIZES_H
#define THP_FOLIO_SIZES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct thp_probe_info;
struct thp_target;

/* Orders counted one by one; a larger folio counts as other. */
#define FOLIO_MAX_ORDER 20

/* Pages by the order of their folio: pages[0] are base pages. */
struct folio_counts {
	uint64_t pages[FOLIO_MAX_ORDER + 1];
	uint64_t other_pages; /* a folio whose size could not be read */
};

struct folio_scan {
	int pagemap_fd, kpf_fd;
	size_t page_size;
	uint64_t pmd_pages;
	uint64_t *pm;    /* pagemap entries, a chunk */
	uint64_t *flags; /* kpageflags of a run and its neighbourhood */
	uint64_t pagemap_reads, kpf_reads;
};

/*
 * 0: ready; 1: this caller cannot read kpageflags or the target's pagemap
 * (the source is none); -errno.  Closed on every return but 0.
 */
int folio_scan_open(struct folio_scan *fs, const struct thp_target *t, size_t page_size,
		    uint64_t pmd_size);
/*
 * Count the anonymous pages present in [start, end) (page aligned) into
 * @c.  0; 1 when the frame numbers are hidden from the caller (no
 * CAP_SYS_ADMIN); -errno (-ESRCH: the address space is gone).
 */
int folio_scan_range(struct folio_scan *fs, uint64_t start, uint64_t end, struct folio_counts *c);
void folio_scan_close(struct folio_scan *fs);
/*
 * 1 when the kernel says no anonymous folio larger than a page and smaller
 * than @pmd_size exists anywhere now: it has no such sizes (before 6.8),
 * or every such size's counter (hugepages-SIZEkB/stats/nr_anon) reads 0.
 * 0 when one exists, or a counter is missing (6.12 has them) or unreadable.
 * @pi: the folio sizes as probe_folio_sizes() read them.
 */
int folio_scan_small_anon_none(const struct thp_probe_info *pi, uint64_t pmd_size);
/*
 * 1 when pagemap shows this caller frame numbers (CAP_SYS_ADMIN of the
 * opener; the same for every process's pagemap), else 0.
 */
int folio_scan_frames_visible(void);

#endif
