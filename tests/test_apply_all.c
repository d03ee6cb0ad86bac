// SPDX-License-Identifier: LGPL-2.1-or-later
/* thp_apply_all(): whole-process advice, counters and failure reports. */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <thp/thp.h>

#include "helpers.h"

#define U(p) ((uint64_t)(uintptr_t)(p))
#define CAP 4096

static struct thp_report *find_failure(struct thp_report *f, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (f[i].addr == addr)
			return &f[i];
	return NULL;
}

START_TEST(huge_self)
{
	char *m = map_aligned(4, 0);
	THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_HUGE);
	struct smaps_info si;
	int ret;

	o.mappings_seen = o.mappings_advised = 777777;
	ret = thp_apply_all(&o);
	ck_assert_msg(ret > 0, "apply_all HUGE: %d (%s: %s)", ret, thp_strerror(ret),
		      thp_strerror_detail());
	ck_assert_msg(o.mappings_seen >= o.mappings_advised && o.mappings_advised > 0,
		      "seen %llu advised %llu", (unsigned long long)o.mappings_seen,
		      (unsigned long long)o.mappings_advised);
	ck_assert_msg(o.mappings_seen != 777777, "mappings_seen not written");
	ck_assert_uint_eq((uint64_t)ret, o.mappings_advised);
	ck_assert_uint_eq(o.failures_needed, 0);
	ck_assert_uint_eq(o.mappings_skipped, 0);
	ck_assert_msg(o.bytes_advised >= 4 * MiB, "bytes_advised %llu",
		      (unsigned long long)o.bytes_advised);
	ck_assert_msg(o.backend_used == THP_BACKEND_PMADV ||
		      o.backend_used == THP_BACKEND_PROCESS_MADVISE ||
		      o.backend_used == THP_BACKEND_MADVISE, "backend_used %u", o.backend_used);
	ck_assert_int_eq(smaps_lookup(0, U(m), &si), 0);
	ck_assert_msg(si.hg, "test mapping not hg:%s", si.vmflags);
	ck_assert_msg(si.start <= U(m) && si.end >= U(m) + 4 * MiB, "test mapping split");
	/* The stack (where we are) too. */
	{
		int local;

		ck_assert_msg(vma_hg(0, U(&local)), "stack not hg");
	}
	touch_range(m, 4 * MiB);
	ck_assert_msg(vma_anon_huge(0, U(m)) > 0, "no AnonHugePages after apply_all HUGE%s",
		      mode_note());
	munmap(m, 4 * MiB);
}
END_TEST

/* Every forced backend usable for self gives the same counts. */
START_TEST(huge_self_forced_backends)
{
	static const uint32_t be[] = { THP_BACKEND_PROCESS_MADVISE, THP_BACKEND_MADVISE };

	for (size_t i = 0; i < 2; i++) {
		char *m = map_aligned(4, 0);
		THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_NOHUGE, .backend = be[i]);
		int ret;

		if (be[i] == THP_BACKEND_PROCESS_MADVISE && !expect_process_madvise()) {
			/*
			 * Refused before the walk: no counter says anything was
			 * advised, backend_used is not set, nothing changed.
			 */
			check_all_refused(&o, "apply_all, forced process_madvise");
			assert_vma_unadvised(0, U(m), "refused apply_all, test mapping");
			{
				int local;

				ck_assert_msg(!vma_nh(0, U(&local)),
					      "refused apply_all changed the stack");
			}
			munmap(m, 4 * MiB);
			continue;
		}
		ret = thp_apply_all(&o);
		ck_assert_msg(ret > 0, "backend %u: %d (%s)", be[i], ret, thp_strerror_detail());
		ck_assert_uint_eq(o.backend_used, be[i]);
		ck_assert_uint_eq((uint64_t)ret, o.mappings_advised);
		ck_assert_msg(vma_nh(0, U(m)), "backend %u: test mapping not nh", be[i]);
		munmap(m, 4 * MiB);
	}
}
END_TEST

/* An nh mapping makes COLLAPSE fail there with EINVAL. */
static char *make_nh_mapping(void)
{
	char *m = map_aligned(4, 0);

	touch_range(m, 4 * MiB);
	must_madvise(m, 4 * MiB, MADV_NOHUGEPAGE);
	return m;
}

START_TEST(collapse_skip_errors)
{
	char *nh = make_nh_mapping();
	char *plain = map_aligned(4, 0);
	struct thp_report *fail = calloc(CAP + 1, sizeof(*fail));
	THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_COLLAPSE,
		 .flags = THP_F_SKIP_ERRORS, .failures = fail, .failures_cap = CAP);
	struct thp_report *r;
	int ret;

	ck_assert_ptr_nonnull(fail);
	touch_range(plain, 4 * MiB);
	memset(&fail[CAP], 0x77, sizeof(fail[CAP]));
	ret = thp_apply_all(&o);
	ck_assert_msg(ret >= 0, "COLLAPSE SKIP_ERRORS: %d (%s)", ret, thp_strerror_detail());
	ck_assert_uint_eq((uint64_t)ret, o.mappings_advised);
	ck_assert_msg(o.failures_needed >= 1, "failures_needed %llu",
		      (unsigned long long)o.failures_needed);
	ck_assert_msg(o.failures_needed <= CAP, "more failures than expected: %llu",
		      (unsigned long long)o.failures_needed);
	ck_assert_uint_eq(o.mappings_skipped, o.failures_needed);
	/* Skipping: every mapping was either advised or skipped (nothing raced here). */
	ck_assert_msg(o.mappings_seen == o.mappings_advised + o.mappings_skipped &&
		      o.bytes_advised >= 4 * MiB,
		      "SKIP_ERRORS counts: seen %llu advised %llu skipped %llu bytes_advised %llu "
		      "(the collapsed 4 MiB mapping must count as advised)",
		      (unsigned long long)o.mappings_seen, (unsigned long long)o.mappings_advised,
		      (unsigned long long)o.mappings_skipped,
		      (unsigned long long)o.bytes_advised);
	ck_assert_msg(o.mappings_seen >= o.mappings_advised + o.mappings_skipped,
		      "seen %llu < advised %llu + skipped %llu",
		      (unsigned long long)o.mappings_seen,
		      (unsigned long long)o.mappings_advised,
		      (unsigned long long)o.mappings_skipped);
	r = find_failure(fail, o.failures_needed, U(nh));
	ck_assert_msg(r != NULL, "nh mapping 0x%llx not among %llu failures",
		      (unsigned long long)U(nh), (unsigned long long)o.failures_needed);
	ck_assert_int_eq(r->error, EINVAL);
	ck_assert_uint_eq(r->len, 4 * MiB);
	ck_assert_uint_eq(r->fail_addr, U(nh));
	ck_assert_uint_eq(r->bytes_advised, 0);
	ck_assert_uint_eq(r->backend, o.backend_used);
	ck_assert(r->reserved0 == 0 && r->reserved[0] == 0 && r->reserved[1] == 0);
	for (size_t i = 0; i < o.failures_needed; i++)
		ck_assert_msg(fail[i].error > 0, "failure %zu has error %d", i, fail[i].error);
	/* Nothing written past what was needed, let alone past the cap. */
	{
		unsigned char canary[sizeof(fail[CAP])];

		memset(canary, 0x77, sizeof(canary));
		ck_assert(memcmp(&fail[CAP], canary, sizeof(canary)) == 0);
	}
	/* Skipping went on: the plain mapping was collapsed, the nh one was not. */
	ck_assert_msg(vma_anon_huge(0, U(plain)) == 4 * MiB, "plain mapping not collapsed");
	ck_assert_msg(vma_anon_huge(0, U(nh)) == 0, "nh mapping collapsed");
	ck_assert(vma_nh(0, U(nh)));
	free(fail);
}
END_TEST

START_TEST(collapse_cap_zero)
{
	char *nh = make_nh_mapping();
	char *nh2 = make_nh_mapping();
	struct thp_report one[2];
	THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_COLLAPSE,
		 .flags = THP_F_SKIP_ERRORS);
	size_t needed;
	int ret;

	(void)nh;
	(void)nh2;
	ret = thp_apply_all(&o);
	ck_assert_msg(ret >= 0, "cap 0: %d", ret);
	ck_assert_msg(o.failures_needed >= 2, "cap 0: failures_needed %llu (two nh mappings)",
		      (unsigned long long)o.failures_needed);
	needed = o.failures_needed;

	/* failures non-NULL but cap 0: nothing written. */
	{
		THP_OPTS(thp_apply_all_opts, o2, .advice = THP_ADVICE_COLLAPSE,
			 .flags = THP_F_SKIP_ERRORS, .failures = one, .failures_cap = 0);

		memset(one, 0x33, sizeof(one));
		ret = thp_apply_all(&o2);
		ck_assert_msg(ret >= 0, "cap 0 (non-NULL): %d", ret);
		ck_assert_uint_eq(o2.failures_needed, needed);
		ck_assert_msg(one[0].addr == 0x3333333333333333ULL, "wrote with cap 0");
	}
	/* cap 1 < needed: exactly one entry. */
	{
		THP_OPTS(thp_apply_all_opts, o3, .advice = THP_ADVICE_COLLAPSE,
			 .flags = THP_F_SKIP_ERRORS, .failures = one, .failures_cap = 1);

		memset(one, 0x33, sizeof(one));
		ret = thp_apply_all(&o3);
		ck_assert_msg(ret >= 0, "cap 1: %d", ret);
		ck_assert_uint_eq(o3.failures_needed, needed);
		ck_assert(one[0].error > 0);
		ck_assert_msg(one[1].addr == 0x3333333333333333ULL, "wrote past cap 1");
	}
}
END_TEST

/* Default mode stops at the first failing mapping. */
START_TEST(collapse_default_stops)
{
	char *nh = make_nh_mapping();
	struct thp_report fail[8];
	THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_COLLAPSE, .failures = fail,
		 .failures_cap = 8);
	int ret;

	(void)nh;
	errno = 0;
	ret = thp_apply_all(&o);
	ck_assert_msg(ret < 0, "COLLAPSE default with an nh mapping: %d", ret);
	ck_assert_int_eq(errno, -ret);
	ck_assert_uint_eq(o.failures_needed, 1);
	ck_assert_int_eq(fail[0].error, -ret);
	ck_assert_uint_eq(o.mappings_skipped, 0);
}
END_TEST

/* NOHUGE then HUGE over everything keeps the process alive and consistent. */
START_TEST(nohuge_then_huge)
{
	char *m = map_aligned(4, 0);
	THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_NOHUGE);

	ck_assert_int_gt(thp_apply_all(&o), 0);
	ck_assert(vma_nh(0, U(m)));
	o.advice = THP_ADVICE_HUGE;
	ck_assert_int_gt(thp_apply_all(&o), 0);
	ck_assert(vma_hg(0, U(m)) && !vma_nh(0, U(m)));
	munmap(m, 4 * MiB);
}
END_TEST

/*
 * The failing mapping sits between two others with no gaps ([+0,+2) RW,
 * [+2,+4) nh, [+4,+8) RW): the failure entry is exactly the nh mapping and
 * its neighbours are still collapsed.
 */
START_TEST(collapse_adjacent_failure)
{
	char *m = map_aligned(8, 0);
	struct thp_report *fail = calloc(CAP, sizeof(*fail));
	THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_COLLAPSE,
		 .flags = THP_F_SKIP_ERRORS, .failures = fail, .failures_cap = CAP);
	struct thp_report *r;
	int ret;

	ck_assert_ptr_nonnull(fail);
	touch_range(m, 8 * MiB);
	must_madvise(m + 2 * MiB, 2 * MiB, MADV_NOHUGEPAGE);
	ret = thp_apply_all(&o);
	ck_assert_msg(ret >= 0, "%d", ret);
	r = find_failure(fail, o.failures_needed < CAP ? o.failures_needed : CAP,
			 U(m + 2 * MiB));
	ck_assert_msg(r != NULL, "nh mapping in the middle not reported");
	ck_assert_uint_eq(r->len, 2 * MiB);
	ck_assert_uint_eq(r->fail_addr, U(m + 2 * MiB));
	ck_assert_int_eq(r->error, EINVAL);
	ck_assert_msg(find_failure(fail, o.failures_needed, U(m)) == NULL,
		      "the mapping before the nh one reported as failed");
	ck_assert_msg(find_failure(fail, o.failures_needed, U(m + 4 * MiB)) == NULL,
		      "the mapping after the nh one reported as failed");
	ck_assert_uint_eq(vma_anon_huge(0, U(m)), 2 * MiB);
	ck_assert_uint_eq(vma_anon_huge(0, U(m + 4 * MiB)), 4 * MiB);
	ck_assert_uint_eq(vma_anon_huge(0, U(m + 2 * MiB)), 0);
	free(fail);
	munmap(m, 8 * MiB);
}
END_TEST

/* Mappings come and go under the walk: vanished ones are gaps, never errors. */
static volatile int stop_churn;
static volatile unsigned long churn_loops;

static void *churn(void *arg)
{
	/*
	 * valgrind runs one thread at a time and hands its lock over
	 * unfairly: without a pause the churn starves the walk for good.
	 */
	const useconds_t pause_us = under_valgrind() ? 1000 : 0;

	(void)arg;
	while (!stop_churn) {
		void *p[16];

		churn_loops++; /* racy count: only "did it run" matters */

		for (int i = 0; i < 16; i++) {
			p[i] = mmap(NULL, (size_t)(i + 1) * 64 * 1024, PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			if (p[i] != MAP_FAILED && (i & 1))
				mprotect(p[i], 4096, PROT_READ);
		}
		for (int i = 0; i < 16; i++)
			if (p[i] != MAP_FAILED)
				munmap(p[i], (size_t)(i + 1) * 64 * 1024);
		if (pause_us)
			usleep(pause_us);
	}
	return NULL;
}

START_TEST(races_with_munmap)
{
	pthread_t th[2];
	char *m = map_aligned(4, 0);
	struct timespec t0, t1;
	int rounds = 0;
	unsigned long loops_before;

	stop_churn = 0;
	churn_loops = 0;
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, churn, NULL), 0);
	/* Start racing only once the churn runs. */
	while (churn_loops == 0)
		sched_yield();
	loops_before = churn_loops;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		THP_OPTS(thp_apply_all_opts, o, .advice = (rounds & 1) ? THP_ADVICE_NOHUGE
								       : THP_ADVICE_HUGE);
		int ret = thp_apply_all(&o);

		ck_assert_msg(ret > 0, "round %d: apply_all under churn: %d (%s)", rounds, ret,
			      thp_strerror_detail());
		ck_assert_uint_eq(o.failures_needed, 0);
		ck_assert_msg((rounds & 1) ? vma_nh(0, U(m)) : vma_hg(0, U(m)),
			      "round %d: stable mapping not advised", rounds);
		rounds++;
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (t1.tv_sec - t0.tv_sec < 2);
	stop_churn = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ck_assert_int_gt(rounds, 3);
	ck_assert_msg(churn_loops > loops_before, "the churn threads did not run during the walk");
	munmap(m, 4 * MiB);
}
END_TEST

static Suite *all_suite(void)
{
	Suite *s = suite_create("apply_all");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, require_madvise_mode, NULL);
	tcase_add_test(tc, huge_self);
	tcase_add_test(tc, huge_self_forced_backends);
	tcase_add_test(tc, collapse_skip_errors);
	tcase_add_test(tc, collapse_cap_zero);
	tcase_add_test(tc, collapse_default_stops);
	tcase_add_test(tc, nohuge_then_huge);
	tcase_add_test(tc, collapse_adjacent_failure);
	tcase_add_test(tc, races_with_munmap);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(all_suite());
}
