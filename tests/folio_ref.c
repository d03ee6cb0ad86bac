// SPDX-License-Identifier: LGPL-2.1-or-later
/* A page-at-a-time reader of folio sizes, written apart from lib/proc/folio_scan.c. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "folio_ref.h"

static int flags_of(int fd, uint64_t pfn, uint64_t *f)
{
	ssize_t r = pread(fd, f, sizeof(*f), (off_t)(pfn * 8));

	if (r < 0)
		return -errno;
	if (r != sizeof(*f))
		*f = 0;
	return 0;
}

int folio_ref_count(pid_t pid, uint64_t start, uint64_t end, uint64_t bytes[FOLIO_REF_ORDERS])
{
	const uint64_t head_bit = 1ULL << 15, tail_bit = 1ULL << 16, thp_bit = 1ULL << 22,
		       zero_bit = 1ULL << 24;
	long psz = sysconf(_SC_PAGESIZE);
	uint64_t cached_head = 0, cached_pages = 0; /* the last folio found */
	char path[64];
	int pm, kpf, err = 0;

	memset(bytes, 0, FOLIO_REF_ORDERS * sizeof(*bytes));
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/pagemap");
	pm = open(path, O_RDONLY);
	if (pm < 0)
		return -errno;
	kpf = open("/proc/kpageflags", O_RDONLY);
	if (kpf < 0) {
		err = -errno;
		close(pm);
		return err;
	}
	for (uint64_t va = start; va < end && !err; va += (uint64_t)psz) {
		uint64_t e, pfn, f, head, pages;
		unsigned int order;

		if (pread(pm, &e, sizeof(e), (off_t)(va / (uint64_t)psz * 8)) != sizeof(e)) {
			err = -EIO;
			break;
		}
		/* present, and not a file page or shared anonymous memory */
		if (!(e >> 63 & 1) || (e >> 61 & 1))
			continue;
		pfn = e & ((1ULL << 55) - 1);
		if (!pfn) {
			err = -EPERM;
			break;
		}
		if (cached_pages && pfn >= cached_head && pfn < cached_head + cached_pages) {
			pages = cached_pages;
		} else {
			if ((err = flags_of(kpf, pfn, &f)))
				break;
			if (f & zero_bit)
				continue;
			if (!(f & thp_bit) || !(f & (head_bit | tail_bit))) {
				bytes[0] += (uint64_t)psz;
				continue;
			}
			head = pfn;
			while (f & tail_bit) {
				if (!head || (err = flags_of(kpf, --head, &f)))
					break;
			}
			if (err)
				break;
			pages = 1;
			for (;;) {
				if ((err = flags_of(kpf, head + pages, &f)))
					break;
				if (!(f & tail_bit))
					break;
				pages++;
			}
			if (err)
				break;
			cached_head = head;
			cached_pages = pages;
		}
		for (order = 0; (1ULL << order) < pages && order + 1 < FOLIO_REF_ORDERS; order++)
			;
		bytes[order] += (uint64_t)psz;
	}
	close(kpf);
	close(pm);
	return err;
}
