// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest check: thp_apply_all() through every range backend this kernel has: the same
 * counts from each, an existing mapping hg afterwards, and the counts of the
 * layout the call was made on (not of the one the advice merged).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "vm_check.h"

struct all_result {
	int ret;
	uint64_t seen, advised, skipped;
	uint32_t backend_used;
	bool before_hg;
};

static uintptr_t all_before;

static void all_child(int wfd, void *arg)
{
	unsigned int be = *(unsigned int *)arg;
	struct all_result res;
	THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_HUGE, .flags = THP_F_SKIP_ERRORS,
		 .backend = be);

	memset(&res, 0, sizeof(res));
	res.ret = thp_apply_all(&o);
	res.seen = o.mappings_seen;
	res.advised = o.mappings_advised;
	res.skipped = o.mappings_skipped;
	res.backend_used = o.backend_used;
	res.before_hg = smap_at(all_before).hg;
	if (write(wfd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(1);
}

void check_apply_all(void)
{
	struct check c = { .name = "apply_all" };
	struct all_result first = { 0 }, cur;
	unsigned int first_be = 0;
	void *m = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED) {
		fail(c.name, "mmap: %s", strerror(errno));
		return;
	}
	all_before = (uintptr_t)m + MiB;
	for (size_t b = 0; b < sizeof(range_backends) / sizeof(range_backends[0]); b++) {
		unsigned int be = range_backends[b];

		if (!(pinfo.backends & (1u << be)))
			continue;
		memset(&cur, 0, sizeof(cur));
		if (run_piped_exact(all_child, &be, &cur, sizeof(cur))) {
			cfail(&c, "%s: child failed", thp_backend_name(be));
			continue;
		}
		printf("VMTEST INFO apply_all %s: ret=%d seen=%llu advised=%llu skipped=%llu "
		       "used=%u hg=%d\n", thp_backend_name(be), cur.ret,
		       (unsigned long long)cur.seen, (unsigned long long)cur.advised,
		       (unsigned long long)cur.skipped, cur.backend_used, cur.before_hg);
		if (cur.ret <= 0)
			cfail(&c, "%s: thp_apply_all(HUGE, SKIP_ERRORS) = %d (%s)",
			      thp_backend_name(be), cur.ret, cur.ret < 0 ? strerror(-cur.ret) : "");
		else if (cur.backend_used != be)
			cfail(&c, "%s: backend_used %u", thp_backend_name(be), cur.backend_used);
		if (!cur.before_hg)
			cfail(&c, "%s: existing mapping not hg afterwards", thp_backend_name(be));
		if (!first_be) {
			first = cur;
			first_be = be;
		} else if (cur.seen != first.seen || cur.advised != first.advised) {
			cfail(&c, "%s: seen/advised %llu/%llu but %s: %llu/%llu",
			      thp_backend_name(first_be), (unsigned long long)first.seen,
			      (unsigned long long)first.advised, thp_backend_name(be),
			      (unsigned long long)cur.seen, (unsigned long long)cur.advised);
		}
	}
	munmap(m, 4 * MiB);
	cdone(&c);
}

/*
 * Issue 11 defect 2: with PMADV_ENTIRE_ADDRESS_SPACE the advice merges
 * neighbours that end with the same flags; counting after the call gave 12
 * mappings instead of 411 for 400 alternating hg/plain/nh ones.  Every
 * backend, strict or SKIP_ERRORS, must count the layout the call was made on.
 */
#define MERGE_PAGES 400

struct merge_result {
	int ret;
	long maps_before; /* lines of /proc/self/maps, [vsyscall] aside */
	uint64_t seen, advised, skipped;
	uint32_t backend_used;
};

struct merge_case {
	unsigned int backend;
	int advice;
	uint32_t flags;
};

static long count_maps_lines(void)
{
	long n = 0;

	if (read_file("/proc/self/maps", smaps_buf, sizeof(smaps_buf)) <= 0)
		return -1;
	for (char *l = smaps_buf; *l; l++)
		if (*l == '\n')
			n++;
	if (strstr(smaps_buf, "[vsyscall]"))
		n--;
	return n;
}

static void merge_child(int wfd, void *arg)
{
	const struct merge_case *k = arg;
	struct merge_result res;
	THP_OPTS(thp_apply_all_opts, o, .advice = k->advice, .flags = k->flags,
		 .backend = k->backend);

	memset(&res, 0, sizeof(res));
	res.maps_before = count_maps_lines();
	res.ret = thp_apply_all(&o);
	res.seen = o.mappings_seen;
	res.advised = o.mappings_advised;
	res.skipped = o.mappings_skipped;
	res.backend_used = o.backend_used;
	if (write(wfd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(1);
}

void check_apply_all_merged_counts(void)
{
	struct check c = { .name = "apply_all_counts_before_merge" };
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	unsigned char *m = mmap(NULL, MERGE_PAGES * page, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED) {
		fail(c.name, "mmap: %s", strerror(errno));
		return;
	}
	/* hg, plain, nh, hg, ...: no two neighbours share their flags. */
	for (size_t i = 0; i < MERGE_PAGES; i++)
		if (i % 3 != 1 && madvise(m + i * page, page,
					  i % 3 == 0 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE)) {
			cfail(&c, "madvise page %zu: %s", i, strerror(errno));
			break;
		}
	for (int a = 0; a < 2 && !c.failed; a++) {
		int advice = a ? THP_ADVICE_NOHUGE : THP_ADVICE_HUGE;

		for (size_t b = 0; b < sizeof(range_backends) / sizeof(range_backends[0]); b++) {
			for (uint32_t fl = 0; fl <= THP_F_SKIP_ERRORS; fl += THP_F_SKIP_ERRORS) {
				struct merge_case k = { range_backends[b], advice, fl };
				struct merge_result r;
				const char *bn = thp_backend_name(k.backend);

				if (!(pinfo.backends & (1u << k.backend)))
					continue;
				memset(&r, 0, sizeof(r));
				if (run_piped_exact(merge_child, &k, &r, sizeof(r))) {
					cfail(&c, "%s: child failed", bn);
					continue;
				}
				/* Strict mode may stop at a mapping the kernel refuses. */
				if (!fl && r.ret < 0)
					continue;
				if (r.ret < 0 || (uint64_t)r.ret != r.advised ||
				    r.seen != (uint64_t)r.maps_before ||
				    r.advised + r.skipped != r.seen)
					cfail(&c, "%s %s flags %u: ret %d seen %llu advised %llu "
					      "skipped %llu, %ld mappings before the call",
					      bn, a ? "NOHUGE" : "HUGE", fl, r.ret,
					      (unsigned long long)r.seen,
					      (unsigned long long)r.advised,
					      (unsigned long long)r.skipped, r.maps_before);
			}
		}
	}
	munmap(m, MERGE_PAGES * page);
	cdone(&c);
}
