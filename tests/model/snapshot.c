// SPDX-License-Identifier: LGPL-2.1-or-later
/* thp_model's truth: snapshots of /proc/PID/smaps, and pagemap and kpageflags for huge pages. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/ioctl.h>

#include "checker.h"

/* ---- the truth: /proc/PID/smaps, pagemap and kpageflags ---- */

pid_t truth_pid;

/* Read every mapping of truth_pid's process; allocates nothing (the caller sized @s). */
int snap_read(struct snapshot *s)
{
	static char buf[1 << 16];
	char line[4096], path[40] = "/proc/self/smaps";
	size_t len = 0, have = 0, pos = 0;
	struct vma *cur = NULL;
	int fd;

	if (truth_pid)
		snprintf(path, sizeof(path), "/proc/%d/smaps", (int)truth_pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	s->n = 0;
	for (;;) {
		char *nl;

		if (pos == have) {
			ssize_t r = read(fd, buf, sizeof(buf));

			if (r <= 0)
				break;
			have = (size_t)r;
			pos = 0;
		}
		nl = memchr(buf + pos, '\n', have - pos);
		{
			size_t take = (nl ? (size_t)(nl - (buf + pos)) : have - pos);

			if (len + take < sizeof(line)) {
				memcpy(line + len, buf + pos, take);
				len += take;
			}
			pos += take + (nl ? 1 : 0);
		}
		if (!nl)
			continue;
		line[len] = 0;
		len = 0;
		/*
		 * A header starts with a lower-case hex digit, a field with a
		 * capital: sscanf() only for headers.  Under TCG, sscanf() on
		 * every line was 40% of the time a guest took to read smaps.
		 */
		if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
			unsigned long long a, b, off, ino;
			char perms[8];
			unsigned int maj, mn;
			int n = 0;

			if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &a, &b, perms, &off, &maj,
				   &mn, &ino, &n) >= 7 && n) {
				if (s->n == s->cap) {
					close(fd);
					return -ENOSPC;
				}
				cur = &s->v[s->n++];
				memset(cur, 0, sizeof(*cur));
				cur->start = a;
				cur->end = b;
				cur->eligible = -1;
				cur->anon_private_rw = !strncmp(perms, "rw-p", 4) && ino == 0 &&
						       (!line[n] || line[n] == '[');
				cur->vsyscall = strstr(line + n, "[vsyscall]") != NULL;
				continue;
			}
		}
		if (!cur)
			continue;
		if (!strncmp(line, "THPeligible:", 12))
			cur->eligible = atoi(line + 12);
		else if (!strncmp(line, "VmFlags:", 8)) {
			cur->hg = strstr(line, " hg") != NULL;
			cur->nh = strstr(line, " nh") != NULL;
		}
	}
	close(fd);
	return 0;
}

struct snapshot snap, prev;
int pagemap_fd = -1, kpageflags_fd = -1;

bool pfn_of(uint64_t addr, uint64_t *pfn)
{
	uint64_t e;

	if (pread(pagemap_fd, &e, sizeof(e), (off_t)(addr / page * sizeof(e))) != sizeof(e) ||
	    !(e >> 63))
		return false;
	*pfn = e & ((1ULL << 55) - 1);
	return *pfn != 0;
}

/*
 * PAGEMAP_SCAN (6.7), with names of our own: <linux/fs.h> of older UAPI
 * headers lacks it.  PAGE_IS_HUGE marks a PMD-mapped (or hugetlb) range.
 */
struct scan_region {
	uint64_t start, end, categories;
};
struct scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define SCAN_IOCTL _IOWR('f', 16, struct scan_arg)
#define SCAN_PAGE_IS_HUGE (1 << 6)

/*
 * Is the extent at @addr one PMD-mapped huge page now?  Where PAGEMAP_SCAN
 * answers, it decides: a whole huge folio mapped by PTEs (left so by an
 * mremap() that split the PMD) has contiguous, aligned THP frames, yet
 * MADV_COLLAPSE may refuse it (seed 6553: EINVAL, and the frames test
 * called it huge).  Before 6.7: the frames test.
 */
bool extent_huge(uint64_t addr)
{
	struct scan_region reg[2];
	struct scan_arg a = { .size = sizeof(a), .start = addr, .end = addr + pmd,
			      .vec = (uint64_t)(uintptr_t)reg, .vec_len = 2,
			      .category_mask = SCAN_PAGE_IS_HUGE,
			      .return_mask = SCAN_PAGE_IS_HUGE };
	uint64_t first, last, flags;
	int n;

	n = ioctl(pagemap_fd, SCAN_IOCTL, &a);
	if (n >= 0)
		return n == 1 && reg[0].start == addr && reg[0].end == addr + pmd;
	if (!pfn_of(addr, &first) || !pfn_of(addr + pmd - page, &last))
		return false;
	if (first % (pmd / page) || last != first + pmd / page - 1)
		return false;
	if (pread(kpageflags_fd, &flags, sizeof(flags), (off_t)(first * sizeof(flags))) !=
	    sizeof(flags))
		return false;
	return flags & (1ULL << KPF_THP);
}

/* The model's input: the arena's pages as the snapshot shows them. */
void arena_from_snap(struct model_arena *a, const struct snapshot *s)
{
	uint64_t lo = a->base, hi = a->base + a->nr_pages * page;

	memset(a->page, 0, a->nr_pages);
	for (size_t i = 0; i < s->n; i++) {
		const struct vma *v = &s->v[i];
		uint64_t from = v->start > lo ? v->start : lo, to = v->end < hi ? v->end : hi;

		for (uint64_t p = from; p < to; p += page)
			a->page[(p - lo) / page] = (uint8_t)(MP_MAPPED | (v->hg ? MP_HG : 0) |
				(v->nh ? MP_NH : 0) | (p == v->start ? MP_VMA_START : 0));
	}
}

/* Whether @v overlaps a mapping of @s: false for one that appeared since @s was read. */
bool overlaps_snapshot(const struct snapshot *s, const struct vma *v)
{
	for (size_t k = 0; k < s->n; k++)
		if (v->start < s->v[k].end && s->v[k].start < v->end)
			return true;
	return false;
}

const struct vma *snap_at(uint64_t addr)
{
	for (size_t i = 0; i < snap.n; i++)
		if (snap.v[i].start <= addr && addr < snap.v[i].end)
			return &snap.v[i];
	return NULL;
}
