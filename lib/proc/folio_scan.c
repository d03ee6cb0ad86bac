// SPDX-License-Identifier: LGPL-2.1-or-later
/* Anonymous memory by folio size, from /proc/PID/pagemap and /proc/kpageflags. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "folio_scan.h"
#include "internal.h"
#include "proc.h"
#include "syscall.h"

/* /proc/kpageflags bits (include/uapi/linux/kernel-page-flags.h). */
#define KPF_COMPOUND_HEAD (1ULL << 15)
#define KPF_COMPOUND_TAIL (1ULL << 16)
#define KPF_THP (1ULL << 22)

/*
 * Pagemap entries read a time: 64 KiB of entries cover 32 MiB of address
 * space (4 KiB pages) in one read.
 */
#define FS_CHUNK 8192

int folio_scan_open(struct folio_scan *fs, const struct thp_target *t, size_t page_size,
		    uint64_t pmd_size)
{
	char path[64];

	memset(fs, 0, sizeof(*fs));
	fs->pagemap_fd = fs->kpf_fd = -1;
	fs->page_size = page_size;
	/* Large anonymous folios are at most PMD-size; 2 MiB if not known. */
	fs->pmd_pages = (pmd_size ? pmd_size : 2u << 20) / page_size;
	fs->kpf_fd = sys_open("/proc/kpageflags", O_RDONLY);
	if (fs->kpf_fd < 0) {
		/* Not root, or no CONFIG_PROC_PAGE_MONITOR: the source is none. */
		fs->kpf_fd = -1;
		return 1;
	}
	fs->pagemap_fd = proc_open(t, "pagemap");
	if (fs->pagemap_fd < 0) {
		int err = fs->pagemap_fd;

		fs->pagemap_fd = -1;
		folio_scan_close(fs);
		if (err == -ENOENT && !t->self)
			return -ESRCH;
		/* Not allowed to read it (ptrace access): say none, not an error. */
		if (err == -EACCES || err == -EPERM)
			return 1;
		report_set_detail("cannot open %s: %s", proc_path(t, "pagemap", path, sizeof(path)),
				  strerror(-err));
		return err;
	}
	fs->pm = malloc(FS_CHUNK * sizeof(*fs->pm));
	/* A run's flags plus up to a folio before and after it. */
	fs->flags = malloc((FS_CHUNK + 2 * fs->pmd_pages) * sizeof(*fs->flags));
	if (!fs->pm || !fs->flags) {
		folio_scan_close(fs);
		return -ENOMEM;
	}
	return 0;
}

void folio_scan_close(struct folio_scan *fs)
{
	if (fs->pagemap_fd >= 0)
		sys_close(fs->pagemap_fd);
	if (fs->kpf_fd >= 0)
		sys_close(fs->kpf_fd);
	free(fs->pm);
	free(fs->flags);
	fs->pm = NULL;
	fs->flags = NULL;
	fs->pagemap_fd = fs->kpf_fd = -1;
}

/* Flags of @n frames from @pfn into @out; 0 or -errno (a short read is zeros). */
static int read_kpf(struct folio_scan *fs, uint64_t pfn, size_t n, uint64_t *out)
{
	long r = sys_pread(fs->kpf_fd, out, n * sizeof(*out), (off_t)(pfn * sizeof(*out)));

	if (r < 0)
		return (int)r;
	/* Past the last frame the kernel reads short: those frames are no folio. */
	memset((char *)out + r, 0, n * sizeof(*out) - (size_t)r);
	fs->kpf_reads++;
	return 0;
}

static void count_pages(struct folio_counts *c, uint64_t folio_pages, uint64_t pages)
{
	unsigned int order = 0;

	/* Folios are a power of two of pages; anything else is not guessed at. */
	if (folio_pages & (folio_pages - 1)) {
		c->other_pages += pages;
		return;
	}
	while ((1ULL << order) < folio_pages)
		order++;
	if (order > FOLIO_MAX_ORDER)
		c->other_pages += pages;
	else
		c->pages[order] += pages;
}

/*
 * One run of @n pages mapped from consecutive frames @pfn...: each page is
 * counted at the size of its folio.  A folio is a head frame and the tail
 * frames after it, and large anonymous folios are naturally aligned and at
 * most PMD-size, so the head of a run's first page is within pmd_pages
 * frames before it and the end of its last folio within pmd_pages after:
 * those frames are read only when the run starts on a tail or ends inside
 * a folio, one pread() each.  The first read takes one frame past the run,
 * which tells whether its last folio goes on.
 */
static int scan_run(struct folio_scan *fs, uint64_t pfn, size_t n, struct folio_counts *c)
{
	const uint64_t P = fs->pmd_pages;
	uint64_t *f = fs->flags + P; /* f[0] is @pfn's flags; f[-P..-1], f[n..n+P) extra */
	int64_t lo = 0, hi = (int64_t)n + 1; /* the frames read: f[lo..hi) */
	bool read_before = false, read_after = false;
	size_t i = 0;
	int err;

	err = read_kpf(fs, pfn, n + 1, f);
	if (err)
		return err;
	while (i < n) {
		uint64_t fl = f[i];
		int64_t head, end;

		if (fl & KPF_ZERO_PAGE) {
			i++;
			continue;
		}
		if (!(fl & KPF_THP) || !(fl & (KPF_COMPOUND_HEAD | KPF_COMPOUND_TAIL))) {
			c->pages[0]++;
			i++;
			continue;
		}
		head = (int64_t)i;
		while (f[head] & KPF_COMPOUND_TAIL) {
			if (head == lo && !read_before) {
				uint64_t back = pfn % P; /* frames down to the PMD-aligned one */

				read_before = true;
				if (back) {
					err = read_kpf(fs, pfn - back, (size_t)back, f - back);
					if (err)
						return err;
					lo = -(int64_t)back;
				}
			}
			if (head == lo)
				break;
			head--;
		}
		if (!(f[head] & KPF_COMPOUND_HEAD)) {
			/* No head where one must be (split under us?): not guessed. */
			c->other_pages++;
			i++;
			continue;
		}
		end = head + 1;
		for (;;) {
			while (end < hi && (f[end] & KPF_COMPOUND_TAIL))
				end++;
			if (end < hi || read_after)
				break;
			read_after = true;
			{
				/* f[n] is a tail too: the rest, up to the PMD boundary. */
				uint64_t last = pfn + n + 1, fwd = (P - last % P) % P;

				if (!fwd)
					break;
				err = read_kpf(fs, last, (size_t)fwd, f + n + 1);
				if (err)
					return err;
				hi = (int64_t)(n + 1 + fwd);
			}
		}
		{
			size_t stop = end < (int64_t)n ? (size_t)end : n;

			count_pages(c, (uint64_t)(end - head), stop - i);
			i = stop;
		}
	}
	return 0;
}

int folio_scan_range(struct folio_scan *fs, uint64_t start, uint64_t end, struct folio_counts *c)
{
	uint64_t vpn = start / fs->page_size, vend = end / fs->page_size;

	while (vpn < vend) {
		size_t n = vend - vpn < FS_CHUNK ? (size_t)(vend - vpn) : FS_CHUNK;
		long r = proc_pagemap_entries(fs->pagemap_fd, vpn * fs->page_size, fs->page_size,
					      fs->pm, n);
		size_t got, i = 0;

		if (r < 0)
			return (int)r;
		/* An address space that is gone reads empty. */
		if (r == 0)
			return -ESRCH;
		got = (size_t)r;
		fs->pagemap_reads++;
		while (i < got) {
			uint64_t e = fs->pm[i], pfn;
			size_t run = 1;
			int err;

			if (!(e & PM_PRESENT) || (e & PM_FILE)) {
				i++;
				continue;
			}
			pfn = e & PM_PFN_MASK;
			/* Frame numbers hidden from this caller: nothing can be said. */
			if (!pfn)
				return 1;
			while (i + run < got && run < FS_CHUNK) {
				uint64_t e2 = fs->pm[i + run];

				if ((e2 & (PM_PRESENT | PM_FILE)) != PM_PRESENT ||
				    (e2 & PM_PFN_MASK) != pfn + run)
					break;
				run++;
			}
			err = scan_run(fs, pfn, run, c);
			if (err)
				return err;
			i += run;
		}
		vpn += got;
	}
	return 0;
}

int folio_scan_small_anon_none(const struct thp_probe_info *pi, uint64_t pmd_size)
{
	bool counted = false;

	/* Before 6.8 anonymous memory is in base pages or PMD-size folios only. */
	if (pi->sizes_source == THP_SIZES_PMD_ONLY)
		return 1;
	if (pi->sizes_source != THP_SIZES_PER_SIZE)
		return 0;
	for (uint32_t i = 0; i < pi->nr_sizes && i < THP_PROBE_MAX_SIZES; i++) {
		char path[112], buf[32];
		long n;

		/* No "enabled": a size for shmem only, never anonymous. */
		if (pi->sizes[i].size >= pmd_size || pi->sizes[i].enabled == THP_MODE_UNKNOWN)
			continue;
		snprintf(path, sizeof(path),
			 "/sys/kernel/mm/transparent_hugepage/hugepages-%llukB/stats/nr_anon",
			 (unsigned long long)(pi->sizes[i].size >> 10));
		n = sys_read_file(path, buf, sizeof(buf));
		/* No counter (a kernel older than the counters) or not readable: not known. */
		if (n <= 0 || buf[0] < '0' || buf[0] > '9' || strtoull(buf, NULL, 10) != 0)
			return 0;
		counted = true;
	}
	return counted;
}

int folio_scan_frames_visible(void)
{
	uint64_t here = 0;
	/* @here is on this thread's stack: a present page. */
	uint64_t e = proc_pagemap_self_entry((uintptr_t)&here, caps_get()->page_size);

	return (e & PM_PRESENT) && (e & PM_PFN_MASK);
}
