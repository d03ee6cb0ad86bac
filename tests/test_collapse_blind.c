// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_collapse() where the page tables say nothing about huge pages: no
 * PAGEMAP_SCAN (before 6.7) and no frame numbers in pagemap (a caller
 * without CAP_SYS_ADMIN).  Every extent then looks like base pages, and the
 * kernel accepts MADV_COLLAPSE on one that is huge already: the pass must
 * neither claim those as collapsed nor spend its byte budget on them.
 *
 * Each test case (a process of its own under CK_FORK) makes itself such a
 * caller: CAP_SYS_ADMIN dropped from its effective set, and a seccomp
 * filter answering ioctl(PAGEMAP_SCAN) with ENOTTY.  Layouts are random
 * runs of huge and base-page extents in one mapping, by seed.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thp/thp.h>

#include "helpers.h"
#include "compat.h" /* PAGEMAP_SCAN, MADV_COLLAPSE */

#define EXTENTS 16

/* Drops CAP_SYS_ADMIN from the effective set; pagemap opened after hides frames. */
static void drop_sys_admin(void)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	ck_assert_int_eq(syscall(SYS_capget, &h, d), 0);
	d[CAP_SYS_ADMIN / 32].effective &= ~(1U << (CAP_SYS_ADMIN % 32));
	ck_assert_msg(syscall(SYS_capset, &h, d) == 0, "capset: %s", strerror(errno));
}

static void become_blind(void)
{
	struct pm_scan_arg scan = { .size = sizeof(scan) };
	uint64_t entry = 0;
	int fd;

	drop_sys_admin();
	ck_assert_msg(fail_pagemap_scan() == 0, "seccomp: %s", strerror(errno));
	/* The premise, checked: a present page shows no frame, the ioctl is gone. */
	fd = open("/proc/self/pagemap", O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &entry, sizeof(entry), (off_t)((uintptr_t)&entry / 4096 * 8)),
			 (ssize_t)sizeof(entry));
	ck_assert_msg(entry >> 63, "the stack page is not present?");
	ck_assert_msg((entry & ((1ULL << 55) - 1)) == 0, "pagemap still shows frame numbers");
	ck_assert_int_eq(ioctl(fd, PAGEMAP_SCAN, &scan), -1);
	ck_assert_int_eq(errno, ENOTTY);
	close(fd);
}

static uint64_t rng;

static uint32_t rnd(uint32_t n)
{
	rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)((rng >> 33) % n);
}

/*
 * One mapping of EXTENTS extents, every page touched, the huge ones
 * collapsed by the test itself.  The mapping is never advised huge:
 * khugepaged then leaves it alone in madvise mode (it takes advised
 * extents on its own, seconds into a test, which a pass cannot tell from
 * its own work), and MADV_COLLAPSE does not need the advice.
 * Returns the mapping; @huge gets how many extents are huge.
 */
static char *build(const bool *is_huge, unsigned int *huge)
{
	char *m = map_aligned(EXTENTS * 2, 0);

	*huge = 0;
	touch_range(m, EXTENTS * PMD_SZ);
	for (unsigned int i = 0; i < EXTENTS; i++) {
		if (is_huge[i]) {
			must_collapse(m + i * PMD_SZ, PMD_SZ);
			(*huge)++;
		}
	}
	ck_assert_msg(range_anon_huge(0, (uintptr_t)m, EXTENTS * PMD_SZ) == *huge * PMD_SZ,
		      "layout: %" PRIu64 " kB huge, want %u extents%s",
		      range_anon_huge(0, (uintptr_t)m, EXTENTS * PMD_SZ) >> 10, *huge, mode_note());
	return m;
}

static uint64_t process_anon_huge(void)
{
	struct anon_coverage c;

	anon_coverage(getpid(), &c);
	return c.huge;
}

/*
 * Collapse with @budget extents.  The claim must be the process's smaps
 * gain: the pass covers every private anonymous mapping, and a sanitizer's
 * allocator has some of its own.  Returns the extents the test's mapping
 * gained.
 */
static unsigned int pass(char *m, uint64_t budget, const char *layout)
{
	uint64_t before = process_anon_huge(), after;
	uint64_t range_before = range_anon_huge(0, (uintptr_t)m, EXTENTS * PMD_SZ);
	unsigned int gained;
	THP_OPTS(thp_collapse_opts, o, .pidfd = THP_SELF, .budget_bytes = budget * PMD_SZ);
	int ret = thp_collapse(&o);

	ck_assert_msg(ret >= 0, "layout %s: thp_collapse: %d (%s)", layout, ret,
		      thp_strerror_detail());
	after = process_anon_huge();
	ck_assert_msg(o.bytes_collapsed == after - before && (uint64_t)ret == o.extents_collapsed,
		      "layout %s, budget %" PRIu64 " extents: claims %" PRIu64
		      " extents (%" PRIu64 " kB, ret %d), smaps %" PRIu64 " -> %" PRIu64 " kB",
		      layout, budget, o.extents_collapsed, o.bytes_collapsed >> 10, ret,
		      before >> 10, after >> 10);
	ck_assert_uint_le(o.bytes_collapsed, budget * PMD_SZ);
	/*
	 * A budget not spent: nothing was left to collapse, here least of
	 * all, or the kernel refused an extent (EAGAIN: a busy page or no free
	 * huge page at that moment), which the pass reports.
	 */
	if (o.extents_collapsed < budget && o.extents_failed == 0)
		ck_assert_msg(range_anon_huge(0, (uintptr_t)m, EXTENTS * PMD_SZ) == EXTENTS * PMD_SZ,
			      "layout %s: %" PRIu64 " collapsed with a budget of %" PRIu64
			      " while the mapping has small extents left",
			      layout, o.extents_collapsed, budget);
	gained = (unsigned int)((range_anon_huge(0, (uintptr_t)m, EXTENTS * PMD_SZ) - range_before) /
				PMD_SZ);
	/*
	 * An extent collapsed was looked at by folio size first: without
	 * frames that says nothing, so no figures, even where the kernel
	 * counts no small folio.  (A pass that looks at no extent keeps the
	 * source: its figures, 0, hold without a look.)
	 */
	if (gained)
		ck_assert_msg(o.folio_source == THP_FOLIO_SOURCE_NONE,
			      "layout %s: folio source %u without frame numbers", layout,
			      o.folio_source);
	return gained;
}

/*
 * Random layouts and budgets: each pass collapses exactly what it says,
 * spends its whole budget while small extents are left, and the mapping
 * ends all huge.
 */
START_TEST(budget_goes_to_real_collapses)
{
	const char *env = getenv("THP_TEST_SEED");
	uint64_t seed0 = env ? strtoull(env, NULL, 0) : 1;

	require_madvise_mode();
	become_blind();
	if (!expect_process_madvise()) {
		THP_OPTS(thp_collapse_opts, o, .pidfd = THP_SELF);

		assert_refused_no_process_madvise(thp_collapse(&o), "thp_collapse");
		return;
	}
	for (uint64_t seed = seed0; seed < seed0 + 12; seed++) {
		bool is_huge[EXTENTS];
		char layout[EXTENTS + 1];
		unsigned int huge;
		char *m;

		rng = seed;
		/* Huge extents first half the time: the case that used to starve. */
		for (unsigned int i = 0; i < EXTENTS; i++) {
			is_huge[i] = seed % 2 ? i < EXTENTS / 2 : rnd(2);
			layout[i] = is_huge[i] ? 'H' : 's';
		}
		layout[EXTENTS] = '\0';
		m = build(is_huge, &huge);
		/* Other mappings of the process may take some budget first. */
		for (unsigned int k = 0; k < 2 * EXTENTS && huge < EXTENTS; k++)
			huge += pass(m, 1 + rnd(4), layout);
		ck_assert_msg(range_anon_huge(0, (uintptr_t)m, EXTENTS * PMD_SZ) == EXTENTS * PMD_SZ,
			      "seed %" PRIu64 " layout %s: not all huge", seed, layout);
		/* All huge: a pass claims no extent of it, whatever else it finds. */
		ck_assert_uint_eq(pass(m, EXTENTS, layout), 0);
		ck_assert_int_eq(munmap(m, EXTENTS * PMD_SZ), 0);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("collapse_blind");
	TCase *tc = tcase_create("blind");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, budget_goes_to_real_collapses);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
