// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Resident pages per PMD-size extent, from /proc/PID/pagemap: PAGEMAP_SCAN
 * (6.7+: one ioctl per window, present-and-not-huge pages only, so huge
 * extents drop out), else 4 KiB of entries per extent.  Sharing (a fork's
 * copy-on-write pages) is in the entries only, so with the ioctl it costs
 * one read, and only for an extent the caller asks about.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "compat.h"
#include "extent_count.h"
#include "internal.h"
#include "proc.h"
#include "syscall.h"

/* Entries of one 2 MiB extent of 4 KiB pages; other geometries are refused. */
#define EXTENT_ENTRIES 512

void extent_count_init(struct extent_count *ec, uint64_t pmd, uint64_t page)
{
	memset(ec, 0, sizeof(*ec));
	ec->fd = -1;
	ec->pmd = pmd;
	ec->page = page;
}

int extent_count_open(struct extent_count *ec, const struct thp_target *t)
{
	int fd;

	if (ec->fd >= 0)
		return 0;
	fd = proc_open(t, "pagemap");
	if (fd == -ENOENT)
		return -ESRCH;
	if (fd < 0)
		return fd;
	ec->fd = fd;
	return 0;
}

void extent_count_close(struct extent_count *ec)
{
	if (ec->fd >= 0)
		sys_close(ec->fd);
	ec->fd = -1;
}

/* Resident, not huge, not the zero page: pages per extent of [start, end), by ioctl. */
static int count_by_scan(struct extent_count *ec, uint64_t start, uint64_t end,
			 uint32_t *present)
{
	static const struct proc_pagemap_query q = {
		.category_mask = PAGE_IS_PRESENT | PAGE_IS_HUGE | PAGE_IS_PFNZERO,
		.category_inverted = PAGE_IS_HUGE | PAGE_IS_PFNZERO,
		.return_mask = PAGE_IS_PRESENT,
	};
	struct page_region regions[64];
	uint64_t at = start;

	while (at < end) {
		uint64_t walk_end = 0;
		long n = proc_pagemap_scan(ec->fd, at, end, &q, regions, ARRAY_LEN(regions), &walk_end);

		if (n < 0)
			return (int)n;
		for (long i = 0; i < n; i++) {
			for (uint64_t s = regions[i].start; s < regions[i].end;) {
				uint64_t ext_end = (s & ~(ec->pmd - 1)) + ec->pmd;
				uint64_t e = regions[i].end < ext_end ? regions[i].end : ext_end;

				present[(s - start) / ec->pmd] += (uint32_t)((e - s) / ec->page);
				s = e;
			}
		}
		if (walk_end <= at)
			break;
		at = walk_end;
	}
	return 0;
}

/* The entries of the extent at @start: how many were read, or -errno. */
static long read_entries(struct extent_count *ec, uint64_t start, uint64_t *entries)
{
	size_t per = (size_t)(ec->pmd / ec->page);
	long n;

	if (per > EXTENT_ENTRIES)
		return -EOPNOTSUPP;
	n = sys_pread(ec->fd, entries, per * sizeof(entries[0]),
		      (off_t)(start / ec->page * sizeof(entries[0])));
	return n < 0 ? n : n / (long)sizeof(entries[0]);
}

/*
 * The zero page's frame: a page of the caller's, read and never written,
 * maps it.  Taken only when kpageflags confirms it (root), so that a page
 * the caller's mlockall() made real is never taken for it.
 */
static void learn_zero_pfn(struct extent_count *ec)
{
	uint64_t e = 0, flags = 0;
	volatile const char *p;
	int fd;

	ec->zero_pfn_tried = true;
	p = sys_mmap_anon(NULL, (size_t)ec->page, PROT_READ);
	if (!p)
		return;
	(void)*p;
	fd = sys_open("/proc/self/pagemap", O_RDONLY);
	if (fd >= 0) {
		if (sys_pread(fd, &e, sizeof(e), (off_t)((uintptr_t)p / ec->page * sizeof(e))) !=
		    (long)sizeof(e))
			e = 0;
		sys_close(fd);
	}
	sys_munmap((void *)(uintptr_t)p, (size_t)ec->page);
	if (!(e & PM_PRESENT) || !(e & PM_PFN_MASK))
		return;
	fd = sys_open("/proc/kpageflags", O_RDONLY);
	if (fd < 0)
		return;
	if (sys_pread(fd, &flags, sizeof(flags), (off_t)((e & PM_PFN_MASK) * sizeof(flags))) ==
		    (long)sizeof(flags) &&
	    (flags & KPF_ZERO_PAGE))
		ec->zero_pfn = e & PM_PFN_MASK;
	sys_close(fd);
}

/* Without the ioctl: a PMD-mapped extent shows as aligned, contiguous frames. */
static int count_by_read(struct extent_count *ec, uint64_t start, uint64_t end,
			 uint32_t *present, uint32_t *shared)
{
	uint64_t entries[EXTENT_ENTRIES];
	uint64_t per = ec->pmd / ec->page;

	if (!ec->zero_pfn_tried)
		learn_zero_pfn(ec);
	for (uint64_t s = start; s < end; s += ec->pmd) {
		long n = read_entries(ec, s, entries);
		uint32_t have = 0, not_exclusive = 0;
		uint64_t pfn0;
		bool contiguous;

		if (n < 0)
			return (int)n;
		pfn0 = n ? entries[0] & PM_PFN_MASK : 0;
		contiguous = pfn0 && pfn0 % per == 0;
		for (long i = 0; i < n; i++) {
			/* Neither the process's memory nor shared with another: empty. */
			if (ec->zero_pfn && (entries[i] & PM_PRESENT) &&
			    (entries[i] & PM_PFN_MASK) == ec->zero_pfn) {
				contiguous = false;
				continue;
			}
			have += !!(entries[i] & PM_PRESENT);
			not_exclusive += (entries[i] & (PM_PRESENT | PM_MMAP_EXCLUSIVE)) == PM_PRESENT;
			/* No page of memory has frame 0: the kernel hid them. */
			if ((entries[i] & PM_PRESENT) && !(entries[i] & PM_PFN_MASK))
				ec->pfns_hidden = true;
			contiguous = contiguous && (entries[i] & PM_PRESENT) &&
				     (entries[i] & PM_PFN_MASK) == pfn0 + (uint64_t)i;
		}
		present[(s - start) / ec->pmd] = contiguous ? 0 : have;
		shared[(s - start) / ec->pmd] = not_exclusive;
	}
	return 0;
}

int extent_count_window(struct extent_count *ec, uint64_t start, uint64_t end,
			uint32_t *present, uint32_t *shared)
{
	size_t n = (size_t)((end - start) / ec->pmd);

	memset(present, 0, n * sizeof(*present));
	memset(shared, 0, n * sizeof(*shared));
	if (!ec->no_scan_ioctl) {
		int r = count_by_scan(ec, start, end, present);

		/* Older kernels: no such ioctl. */
		if (r != -ENOTTY && r != -EINVAL)
			return r;
		ec->no_scan_ioctl = true;
		memset(present, 0, n * sizeof(*present));
	}
	return count_by_read(ec, start, end, present, shared);
}

int extent_count_shared(struct extent_count *ec, uint64_t start, uint32_t present,
			uint32_t *shared)
{
	uint64_t entries[EXTENT_ENTRIES];
	uint32_t exclusive = 0;
	long n;

	if (ec->no_scan_ioctl)
		return 0; /* the window's read counted it */
	n = read_entries(ec, start, entries);
	if (n < 0)
		return (int)n;
	for (long i = 0; i < n; i++)
		exclusive += (entries[i] & (PM_PRESENT | PM_MMAP_EXCLUSIVE)) ==
			     (PM_PRESENT | PM_MMAP_EXCLUSIVE);
	*shared = present > exclusive ? present - exclusive : 0;
	return 0;
}
