// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_query()'s bytes by folio size on this host as it is set (nothing
 * switched): against a separate page-at-a-time kpageflags reader and smaps.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thp/thp.h>

#include "folio_ref.h"
#include "helpers.h"

#define U(p) ((uint64_t)(uintptr_t)(p))
#define MIB (1024ull * 1024)

/* Query [p, p+len) of @pidfd by folio size; exactly one mapping expected. */
static void query_one(int pidfd, void *p, size_t len, struct thp_query_opts *q,
		      struct thp_mapping_folios *mf)
{
	struct thp_mapping_state st;
	int r;

	memset(q, 0, sizeof(*q));
	q->sz = sizeof(*q);
	q->pidfd = pidfd;
	q->flags = THP_QUERY_F_FOLIO_SIZES;
	q->addr = U(p);
	q->len = len;
	q->states = &st;
	q->states_cap = 1;
	q->folios = mf;
	r = thp_query(q);
	ck_assert_msg(r == 1, "thp_query: %d (%s)", r, thp_strerror_detail());
	ck_assert_uint_eq(q->states_needed, 1);
}

/*
 * The library's figures for [p, p+len) against the reference reader's:
 * every size the same to the byte (nothing runs in the mapping meanwhile).
 */
static void check_against_ref(pid_t pid, int pidfd, void *p, size_t len, const char *what)
{
	struct thp_query_opts q;
	struct thp_mapping_folios mf;
	uint64_t ref[FOLIO_REF_ORDERS], sum = 0;
	long psz = sysconf(_SC_PAGESIZE);
	int r;

	memset(&mf, 0xee, sizeof(mf));
	query_one(pidfd, p, len, &q, &mf);
	ck_assert_uint_ge(q.nr_sizes, 1);
	if (!page_frames_readable()) {
		ck_assert_uint_eq(q.folio_source, THP_FOLIO_SOURCE_NONE);
		for (uint32_t i = 0; i < q.nr_sizes; i++)
			ck_assert_uint_eq(q.sizes[i].bytes, 0);
		return;
	}
	ck_assert_msg(q.folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS, "%s: source %u", what,
		      q.folio_source);
	r = folio_ref_count(pid, U(p), U(p) + len, ref);
	ck_assert_msg(r == 0, "reference reader: %d", r);
	ck_assert_msg(q.anon_base_bytes == ref[0], "%s: base %llu, reference %llu", what,
		      (unsigned long long)q.anon_base_bytes, (unsigned long long)ref[0]);
	ck_assert_uint_eq(mf.base_bytes, ref[0]);
	sum = q.anon_base_bytes + q.anon_other_bytes;
	for (unsigned int o = 1; o < FOLIO_REF_ORDERS; o++) {
		uint64_t size = (uint64_t)psz << o, got = 0;
		bool listed = false;

		for (uint32_t i = 0; i < q.nr_sizes; i++) {
			if (q.sizes[i].size == size) {
				got = q.sizes[i].bytes;
				listed = true;
				ck_assert_uint_eq(mf.bytes[i], got);
			}
		}
		if (!listed)
			continue;
		ck_assert_msg(got == ref[o], "%s: %llu kB folios: %llu bytes, reference %llu", what,
			      (unsigned long long)(size >> 10), (unsigned long long)got,
			      (unsigned long long)ref[o]);
		sum += got;
	}
	/* Every present anonymous page is in one figure: smaps Anonymous. */
	ck_assert_msg(sum == q.anon_bytes, "%s: by size %llu, Anonymous %llu", what,
		      (unsigned long long)sum, (unsigned long long)q.anon_bytes);
}

/* The PMD size's figure is AnonHugePages for fresh, untouched-since memory. */
static uint64_t pmd_bytes(const struct thp_query_opts *q)
{
	for (uint32_t i = 0; i < q->nr_sizes; i++)
		if (q->sizes[i].size == 2 * MIB)
			return q->sizes[i].bytes;
	return 0;
}

START_TEST(sizes_huge_advised)
{
	void *p = map_aligned(32, 0);
	struct thp_query_opts q;
	struct smaps_info si;

	must_madvise(p, 32 * MIB, MADV_HUGEPAGE);
	touch_range(p, 32 * MIB);
	check_against_ref(0, THP_SELF, p, 32 * MIB, "huge-advised");
	query_one(THP_SELF, p, 32 * MIB, &q, NULL);
	ck_assert_int_eq(smaps_lookup(0, U(p), &si), 0);
	if (page_frames_readable()) {
		ck_assert_msg(pmd_bytes(&q) == si.anon_huge, "2 MiB folios %llu, AnonHugePages %llu",
			      (unsigned long long)pmd_bytes(&q), (unsigned long long)si.anon_huge);
		/* The host's 2 MiB is inherit, its mode madvise: the mapping is huge. */
		ck_assert_msg(si.anon_huge >= 16 * MIB, "AnonHugePages %llu%s",
			      (unsigned long long)si.anon_huge, mode_note());
	}
}
END_TEST

START_TEST(sizes_nohuge_base_only)
{
	void *p = map_aligned(8, 0);
	struct thp_query_opts q;

	must_madvise(p, 8 * MIB, MADV_NOHUGEPAGE);
	touch_range(p, 8 * MIB);
	check_against_ref(0, THP_SELF, p, 8 * MIB, "nohuge");
	query_one(THP_SELF, p, 8 * MIB, &q, NULL);
	if (page_frames_readable()) {
		ck_assert_uint_eq(q.anon_base_bytes, 8 * MIB);
		ck_assert_uint_eq(q.anon_other_bytes, 0);
	}
}
END_TEST

/*
 * A mapping that starts in the middle of a 2 MiB folio (the first half
 * unmapped after the fault): the folio is PTE-mapped and still counted at
 * its size, found through a head frame outside the mapping.
 */
START_TEST(sizes_partial_folio)
{
	char *p = map_aligned(8, 0);

	must_madvise(p, 8 * MIB, MADV_HUGEPAGE);
	touch_range(p, 8 * MIB);
	ck_assert_int_eq(munmap(p, MIB), 0);
	check_against_ref(0, THP_SELF, p + MIB, 7 * MIB, "partial folio");
	if (page_frames_readable()) {
		struct thp_query_opts q;

		query_one(THP_SELF, p + MIB, 7 * MIB, &q, NULL);
		/* Until memory pressure splits it, the cut folio is still 2 MiB. */
		ck_assert_msg(pmd_bytes(&q) == 7 * MIB, "2 MiB folios: %llu bytes of 7 MiB",
			      (unsigned long long)pmd_bytes(&q));
	}
}
END_TEST

/* Another process through a pidfd: its pagemap, the same figures. */
START_TEST(sizes_remote)
{
	int ready[2], pidfd;
	char *p = map_aligned(16, 0), c;
	pid_t pid;

	must_madvise(p, 16 * MIB, MADV_HUGEPAGE);
	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		touch_range(p, 16 * MIB);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	ck_assert_int_ge(pidfd, 0);
	check_against_ref(pid, pidfd, p, 16 * MIB, "remote");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(pidfd);
}
END_TEST

/* Without the flag the VER2 fields say nothing was read. */
START_TEST(sizes_not_asked)
{
	void *p = map_aligned(4, 0);
	struct thp_query_opts q;
	int r;

	touch_range(p, 4 * MIB);
	memset(&q, 0xee, sizeof(q));
	q.sz = sizeof(q);
	q.pidfd = THP_SELF;
	q.flags = 0;
	q.addr = U(p);
	q.len = 4 * MIB;
	q.states = NULL;
	q.states_cap = 0;
	q.folios = NULL;
	r = thp_query(&q);
	ck_assert_int_eq(r, 0);
	ck_assert_uint_eq(q.folio_source, THP_FOLIO_SOURCE_NONE);
	ck_assert_uint_eq(q.nr_sizes, 0);
	ck_assert_uint_eq(q.anon_base_bytes, 0);
	ck_assert_uint_eq(q.sizes[0].bytes, 0);
	ck_assert_uint_eq(q.anon_bytes, 4 * MIB);
}
END_TEST

/*
 * thp_collapse() counts smaller large folios as such: on this host (only
 * 2 MiB enabled) an extent of base pages is collapsed, none is kept for
 * small folios, and a caller with VER0's size gets nothing past it.
 */
START_TEST(collapse_small_folio_fields)
{
	char *p = map_aligned(8, 0);
	struct {
		struct thp_collapse_opts o;
		unsigned char canary[8];
	} v0;
	struct thp_collapse_opts o;
	int r;

	must_madvise(p, 8 * MIB, MADV_NOHUGEPAGE);
	touch_range(p, 8 * MIB);
	/* Base pages now, then allowed to be collapsed. */
	must_madvise(p, 8 * MIB, MADV_HUGEPAGE);
	memset(&o, 0, sizeof(o));
	o.sz = sizeof(o);
	o.pidfd = THP_SELF;
	r = thp_collapse(&o);
	if (under_valgrind()) {
		/* No valgrind knows process_madvise(): the library sees a kernel without it. */
		ck_assert_int_eq(r, -EOPNOTSUPP);
		return;
	}
	ck_assert_msg(r >= 4, "thp_collapse: %d (%s)", r, thp_strerror_detail());
	ck_assert_uint_eq(o.extents_small_folios, 0);
	if (page_frames_readable()) {
		ck_assert_uint_eq(o.folio_source, THP_FOLIO_SOURCE_KPAGEFLAGS);
		/* Sizes other than 2 MiB are never here: no smaller large folio. */
		ck_assert_uint_eq(o.small_folio_bytes_before, 0);
		ck_assert_uint_eq(o.small_folio_bytes_after, 0);
	} else {
		ck_assert_uint_eq(o.folio_source, THP_FOLIO_SOURCE_NONE);
	}
	ck_assert_uint_ge(vma_anon_huge(0, U(p)), 8 * MIB);

	memset(&v0, 0xa5, sizeof(v0));
	memset(&v0.o, 0, THP_COLLAPSE_OPTS_SIZE_VER0);
	v0.o.sz = THP_COLLAPSE_OPTS_SIZE_VER0;
	v0.o.pidfd = THP_SELF;
	r = thp_collapse(&v0.o);
	ck_assert_int_ge(r, 0);
	for (size_t i = THP_COLLAPSE_OPTS_SIZE_VER0; i < sizeof(v0); i++)
		ck_assert_msg(((unsigned char *)&v0)[i] == 0xa5, "byte %zu past VER0 written", i);
}
END_TEST

static Suite *folio_sizes_suite(void)
{
	Suite *s = suite_create("folio_sizes");
	TCase *tc = tcase_create("host");

	tcase_add_checked_fixture(tc, require_madvise_mode, NULL);
	tcase_add_test(tc, sizes_huge_advised);
	tcase_add_test(tc, sizes_nohuge_base_only);
	tcase_add_test(tc, sizes_partial_folio);
	tcase_add_test(tc, sizes_remote);
	tcase_add_test(tc, sizes_not_asked);
	tcase_add_test(tc, collapse_small_folio_fields);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(folio_sizes_suite());
}
