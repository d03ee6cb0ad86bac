// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_collapse() and memory shared with another process: after fork() the
 * parent's and the child's pages are the same pages until one side writes.
 * Collapsing an extent of such pages copies them into a new huge page, and
 * the memory in use grows by the copy (a Redis BGSAVE child, say).  The
 * pass leaves an extent alone when more than max_shared_pages of its pages
 * are shared, as khugepaged does with max_ptes_shared.
 *
 * Each round, by seed: EXTENTS base-page extents, a fork, then the parent
 * writes the first w pages of each extent (those become its own; the rest
 * stay shared) and collapses itself with a random limit; then the child
 * is collapsed through a pidfd with the same limit.  A small model says
 * which extents each pass collapses and which it leaves as shared; smaps
 * of both processes and the contents must agree.  Both ways of counting
 * pages are run: PAGEMAP_SCAN (6.7+), and pagemap entries (a seccomp
 * filter answers the ioctl with ENOTTY, as before 6.7).
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thp/thp.h>

#include "helpers.h"

#define EXTENTS 12
#define PAGES 512u /* base pages per extent */

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)((rng >> 33) % n);
}

static uint64_t checksum(const char *p, size_t len)
{
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len; i += 4096)
		h = (h ^ (unsigned char)p[i]) * 1099511628211ULL;
	return h;
}

static uint32_t khugepaged_max_ptes_shared(void)
{
	char buf[32];

	if (read_file("/sys/kernel/mm/transparent_hugepage/khugepaged/max_ptes_shared", buf,
		      sizeof(buf)) <= 0)
		return PAGES / 2 - 1;
	return (uint32_t)strtoul(buf, NULL, 10);
}

/*
 * One pass over @pid (0: this process) with @limit (0: khugepaged's).  An
 * extent the kernel refuses (EAGAIN: no free huge page just then, as
 * under a loaded CI machine) is the kernel's answer, not the model's: it
 * must be one the model wanted collapsed, is reported, and the mapping's
 * gain must then be one extent less.
 */
static void collapse(pid_t pid, int pidfd, uint32_t limit, const bool *want, const char *who,
		     const char *layout, char *m)
{
	uint64_t before = range_anon_huge(pid, (uintptr_t)m, EXTENTS * PMD_SZ), after;
	unsigned int collapsed = 0, left = 0, refused = 0;
	struct thp_report fail[64];
	THP_OPTS(thp_collapse_opts, o, .pidfd = pidfd, .max_shared_pages = limit,
		 .failures = fail, .failures_cap = 64);
	int ret;

	for (unsigned int i = 0; i < EXTENTS; i++) {
		collapsed += want[i];
		left += !want[i];
	}
	ret = thp_collapse(&o);
	ck_assert_msg(ret >= 0, "%s, %s: thp_collapse: %d (%s)", who, layout, ret,
		      thp_strerror_detail());
	ck_assert_uint_le(o.failures_needed, 64);
	for (uint64_t k = 0; k < o.failures_needed; k++) {
		uint64_t off = fail[k].addr - (uintptr_t)m;

		if (fail[k].addr < (uintptr_t)m || off >= EXTENTS * PMD_SZ)
			continue;
		unsigned int ext = (unsigned int)(off / PMD_SZ);

		ck_assert_msg(want[ext], "%s, %s: extent %u (left alone by the model) was refused: %s",
			      who, layout, ext, strerror(fail[k].error));
		printf("%s: extent %u refused by the kernel: %s\n", who, ext, strerror(fail[k].error));
		refused++;
	}
	after = range_anon_huge(pid, (uintptr_t)m, EXTENTS * PMD_SZ);
	/* The pass covers the whole process: its other mappings (a
	 * sanitizer's allocator, the heap, all shared since the fork) add to
	 * both counts; this mapping's gain is exactly the model's. */
	ck_assert_msg(after - before == (collapsed - refused) * PMD_SZ && o.extents_shared >= left &&
			      o.extents_collapsed >= collapsed - refused,
		      "%s, %s, limit %u: mapping %" PRIu64 " -> %" PRIu64
		      " kB (want +%u extents, %u refused), collapsed %" PRIu64 ", shared %" PRIu64
		      " (want %u), sparse %" PRIu64 ", failed %" PRIu64 ", over budget %" PRIu64,
		      who, layout, limit, before >> 10, after >> 10, collapsed, refused,
		      o.extents_collapsed, o.extents_shared, left, o.extents_sparse,
		      o.extents_failed, o.extents_over_budget);
}

static void round_once(uint64_t seed, bool by_scan)
{
	char *m = map_aligned(EXTENTS * 2, 0);
	uint32_t written[EXTENTS], limit, effective;
	bool parent_wants[EXTENTS], child_wants[EXTENTS];
	char layout[EXTENTS * 6 + 1], *at = layout;
	uint64_t child_sum;
	int go[2], pidfd;
	pid_t child;
	char c;

	rng = seed;
	/* Base pages, and never advised: in madvise mode khugepaged leaves
	 * the mapping alone (it would collapse the child's extents as soon as
	 * the fork registers it), while MADV_COLLAPSE takes it all the same. */
	for (size_t i = 0; i < EXTENTS * PMD_SZ; i += 4096)
		m[i] = (char)(i >> 12);
	child_sum = checksum(m, EXTENTS * PMD_SZ);
	switch (rnd(5)) {
	case 0:
		limit = 0; /* khugepaged's */
		break;
	case 1:
		limit = PAGES; /* no limit: every extent is copied */
		break;
	default:
		limit = 1 + rnd(PAGES - 1);
	}
	effective = limit ? limit : khugepaged_max_ptes_shared();
	for (unsigned int i = 0; i < EXTENTS; i++) {
		/* Shared pages PAGES - w, near the limit half of the time. */
		uint32_t shared = rnd(2) ? rnd(PAGES + 1)
					 : (effective + rnd(5) >= 2 ? effective + rnd(5) - 2 : 0);

		if (shared > PAGES)
			shared = PAGES;
		written[i] = PAGES - shared;
		parent_wants[i] = shared <= effective;
		/* The child shares what the parent shares: where the parent
		 * copied an extent, the child's pages became its own, and it
		 * was under the limit anyway. */
		child_wants[i] = parent_wants[i];
		at += snprintf(at, (size_t)(layout + sizeof(layout) - at), "%u ", shared);
	}
	ck_assert_int_eq(pipe(go), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(go[1]);
		/* Waits, never writes: its pages stay as the fork left them. */
		if (read(go[0], &c, 1) < 0)
			_exit(3);
		_exit(checksum(m, EXTENTS * PMD_SZ) == child_sum ? 0 : 2);
	}
	close(go[0]);
	if (!by_scan)
		ck_assert_msg(fail_pagemap_scan() == 0, "seccomp: %s", strerror(errno));
	for (unsigned int i = 0; i < EXTENTS; i++)
		for (uint32_t k = 0; k < written[i]; k++)
			m[i * PMD_SZ + k * 4096] ^= 0x5a;
	{
		uint64_t sum = checksum(m, EXTENTS * PMD_SZ);
		char who[64];

		snprintf(who, sizeof(who), "seed %" PRIu64 "%s: parent", seed,
			 by_scan ? "" : " (no PAGEMAP_SCAN)");
		collapse(0, THP_SELF, limit, parent_wants, who, layout, m);
		ck_assert_uint_eq(checksum(m, EXTENTS * PMD_SZ), sum);
		ck_assert_msg(range_anon_huge(child, (uintptr_t)m, EXTENTS * PMD_SZ) == 0,
			      "%s: the child's memory changed: %" PRIu64 " kB huge", who,
			      range_anon_huge(child, (uintptr_t)m, EXTENTS * PMD_SZ) >> 10);
		/* Another process: CAP_SYS_NICE (root, as in CI). */
		if (geteuid() == 0) {
			pidfd = (int)syscall(SYS_pidfd_open, child, 0);
			ck_assert_int_ge(pidfd, 0);
			snprintf(who, sizeof(who), "seed %" PRIu64 "%s: child", seed,
				 by_scan ? "" : " (no PAGEMAP_SCAN)");
			collapse(child, pidfd, limit, child_wants, who, layout, m);
			close(pidfd);
		}
	}
	ck_assert_int_eq(write(go[1], "x", 1), 1);
	close(go[1]);
	ck_assert_msg(wait_status(child) == 0, "seed %" PRIu64 ": the child's contents changed",
		      seed);
	munmap(m, EXTENTS * PMD_SZ);
}

/* Where the kernel (or valgrind) has no process_madvise(): refused, checked. */
static bool refused_here(void)
{
	if (expect_process_madvise())
		return false;
	THP_OPTS(thp_collapse_opts, o, .pidfd = THP_SELF);
	assert_refused_no_process_madvise(thp_collapse(&o), "thp_collapse");
	return true;
}

static unsigned int rounds(void)
{
	const char *s = getenv("THP_TEST_ROUNDS");

	return s ? (unsigned int)strtoul(s, NULL, 10) : scaled(12, 2);
}

static uint64_t first_seed(void)
{
	const char *s = getenv("THP_TEST_SEED");

	return s ? strtoull(s, NULL, 10) : 1;
}

START_TEST(shared_by_scan)
{
	if (refused_here())
		return;
	for (unsigned int i = 0; i < rounds(); i++)
		round_once(first_seed() + i, true);
}
END_TEST

/* Each case is a process of its own (CK_FORK): the seccomp filter stays there. */
START_TEST(shared_by_pagemap_entries)
{
	if (refused_here())
		return;
	for (unsigned int i = 0; i < rounds(); i++)
		round_once(first_seed() + i, false);
}
END_TEST

START_TEST(bad_limit_changes_nothing)
{
	THP_OPTS(thp_collapse_opts, o, .pidfd = THP_SELF, .max_shared_pages = PAGES + 1);

	ck_assert_int_eq(thp_collapse(&o), -EINVAL);
	ck_assert_msg(strstr(thp_strerror_detail(), "max_shared_pages"), "detail: %s",
		      thp_strerror_detail());
	ck_assert_uint_eq(o.extents_collapsed, 0);
	o.max_shared_pages = 0;
	o.reserved3 = 1;
	ck_assert_int_eq(thp_collapse(&o), -EINVAL);
}
END_TEST

/*
 * Pages read but never written map the shared zero page: not memory of
 * another process, and khugepaged counts them as empty.  An extent of 400
 * such pages and 112 written ones is not "shared".  Before 6.7 (pagemap
 * entries) that shows only where the page frames can be read (the frame
 * numbers and kpageflags), else the zero pages count as shared and the
 * extent is left alone, as documented, when they are more than the limit.
 * Whether a read maps the zero page is the kernel's choice (some kernels
 * here give every read fault a page of its own): smaps, whose Rss leaves
 * the zero page out, says how many the reads mapped.
 */
static void zero_pages_round(bool by_scan)
{
	char *m = map_aligned(2, 0);
	volatile char sink = 0;
	struct smaps_info si;
	uint32_t zero;
	bool expect_collapse;

	if (!by_scan)
		ck_assert_msg(fail_pagemap_scan() == 0, "seccomp: %s", strerror(errno));
	for (size_t i = 0; i < PAGES; i++) {
		if (i % 5 < 4 && i < 500)
			sink += m[i * 4096]; /* 400 pages: the zero page */
		else
			m[i * 4096] = (char)(i | 1); /* 112 pages of its own */
	}
	(void)sink;
	ck_assert_uint_eq(range_anon_huge(0, (uintptr_t)m, PMD_SZ), 0);
	ck_assert_int_eq(smaps_lookup(0, (uintptr_t)m, &si), 0);
	ck_assert_msg(si.found && si.start == (uintptr_t)m && si.end == (uintptr_t)m + PMD_SZ,
		      "the extent is not a mapping of its own: %#" PRIx64 "-%#" PRIx64, si.start,
		      si.end);
	ck_assert_uint_le(si.rss, PAGES * 4096ULL);
	zero = PAGES - (uint32_t)(si.rss / 4096);
	ck_assert_msg(zero == 0 || zero == 400, "%u pages of the zero page, not 0 or 400", zero);
	expect_collapse = by_scan || page_frames_readable() || zero <= khugepaged_max_ptes_shared();
	THP_OPTS(thp_collapse_opts, o, .pidfd = THP_SELF);
	ck_assert_int_ge(thp_collapse(&o), 0);
	/* The pass is over the whole process: under ASan its allocator's extents too. */
	if (expect_collapse) {
		ck_assert_msg(range_anon_huge(0, (uintptr_t)m, PMD_SZ) == PMD_SZ,
			      "%s: the extent of %u zero pages is not huge: collapsed %" PRIu64
			      ", shared %" PRIu64 " (zero pages taken for shared ones)",
			      by_scan ? "scan" : "entries", zero, o.extents_collapsed,
			      o.extents_shared);
	} else {
		ck_assert_msg(o.extents_shared >= 1 &&
				      range_anon_huge(0, (uintptr_t)m, PMD_SZ) == 0,
			      "entries, page frames hidden: the extent of %u zero pages is "
			      "%" PRIu64 " kB huge, shared %" PRIu64 " (documented: left alone)",
			      zero, range_anon_huge(0, (uintptr_t)m, PMD_SZ) / 1024, o.extents_shared);
	}
	for (size_t i = 0; i < PAGES; i++)
		ck_assert_int_eq(m[i * 4096], i % 5 < 4 && i < 500 ? 0 : (char)(i | 1));
	munmap(m, 2 * PMD_SZ);
}

START_TEST(zero_pages_not_shared)
{
	if (refused_here())
		return;
	zero_pages_round(true);
}
END_TEST

/* A process of its own (CK_FORK): the seccomp filter stays there. */
START_TEST(zero_pages_not_shared_by_entries)
{
	if (refused_here())
		return;
	zero_pages_round(false);
}
END_TEST

/* A caller built against the 0.2 struct without the limit: khugepaged's
 * limit applies, and nothing is written past its struct. */
START_TEST(older_struct_gets_default)
{
	char *m = map_aligned(2, 0);
	struct thp_collapse_opts o;
	int go[2];
	pid_t child;
	char c;

	if (refused_here())
		return;
	touch_range(m, PMD_SZ); /* base pages, unadvised: see round_once() */
	ck_assert_int_eq(pipe(go), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		close(go[1]);
		_exit(read(go[0], &c, 1) < 0);
	}
	close(go[0]);
	memset(&o, 0xa5, sizeof(o));
	memset(&o, 0, THP_COLLAPSE_OPTS_SIZE_VER1);
	o.sz = THP_COLLAPSE_OPTS_SIZE_VER1;
	o.pidfd = THP_SELF;
	ck_assert_int_ge(thp_collapse(&o), 0);
	ck_assert_msg(range_anon_huge(0, (uintptr_t)m, PMD_SZ) == 0,
		      "an extent of 512 shared pages was collapsed for a VER1 caller");
	ck_assert_uint_eq(o.max_shared_pages, 0xa5a5a5a5u);
	ck_assert_uint_eq(o.extents_shared, 0xa5a5a5a5a5a5a5a5ULL);
	ck_assert_int_eq(write(go[1], "x", 1), 1);
	close(go[1]);
	ck_assert_int_eq(wait_status(child), 0);
	munmap(m, PMD_SZ);
}
END_TEST

static Suite *collapse_shared_suite(void)
{
	Suite *s = suite_create("collapse_shared");
	TCase *tc = tcase_create("shared");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, shared_by_scan);
	tcase_add_test(tc, shared_by_pagemap_entries);
	tcase_add_test(tc, bad_limit_changes_nothing);
	tcase_add_test(tc, older_struct_gets_default);
	tcase_add_test(tc, zero_pages_not_shared);
	tcase_add_test(tc, zero_pages_not_shared_by_entries);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(collapse_shared_suite());
}
