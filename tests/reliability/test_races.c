// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Races: two threads churn the address space (mmap / munmap / mprotect /
 * mremap) while two threads run thp_apply_all() and thp_apply_ranges().
 * Every return is >= 0 or a documented errno, every report is
 * self-consistent, and long-lived pattern-filled mappings (and the churning
 * threads' own data, across mremap) keep their contents.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock_ns.h"
#include "../helpers.h"
#include "thp/thp.h"

#define NR_LONG 4
#define LONG_MIB 4
#define APPLY_ITERS 3000
#define CHURN_ITERS 200000
#define TIME_BUDGET_NS (8ULL * 1000000000ULL)

static char *long_maps[NR_LONG];
static uint64_t long_sums[NR_LONG];
static _Atomic uintptr_t churn_addr[2];
static _Atomic size_t churn_len[2];
static atomic_bool stop;
static uint64_t t0;

/* Failures found in threads, reported by the main thread. */
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static char err_msg[512];

static void bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void bad(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pthread_mutex_lock(&err_lock);
	if (!err_msg[0])
		vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
	pthread_mutex_unlock(&err_lock);
	va_end(ap);
	atomic_store(&stop, true);
}

static bool out_of_time(void)
{
	return atomic_load(&stop) || now_ns() - t0 > TIME_BUDGET_NS;
}

static uint64_t sum(const char *p, size_t len)
{
	const uint64_t *w = (const uint64_t *)p;
	uint64_t s = 1469598103934665603ULL;

	for (size_t i = 0; i < len / 8; i++)
		s = ((s << 5) | (s >> 59)) + (w[i] ^ i);
	return s;
}

/* Documented errors for a request on self racing with munmap etc. */
static bool errno_ok(int r)
{
	return r == -ENOMEM || r == -EAGAIN || r == -EINVAL || r == -EBUSY;
}

static void check_report(const struct thp_report *r, const char *who)
{
	if (r->bytes_advised > r->len || r->bytes_unmapped > r->len - r->bytes_advised)
		bad("%s: report with bytes_advised + bytes_unmapped > len", who);
	if (r->error == 0 && r->fail_addr != 0)
		bad("%s: report with fail_addr 0x%llx but no error", who,
		    (unsigned long long)r->fail_addr);
}

static uint64_t xs(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *churn(void *arg)
{
	int id = (int)(intptr_t)arg;
	uint64_t rng = 0x1234567ULL + (uint64_t)id * 7919;
	long ps = sysconf(_SC_PAGESIZE);

	for (long i = 0; i < CHURN_ITERS && !out_of_time(); i++) {
		size_t pages = 1 + xs(&rng) % 1024, len = pages * (size_t)ps;
		char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		uint8_t tag = (uint8_t)(i + 1), tag2 = (uint8_t)(tag ^ 0xffu);

		if (p == MAP_FAILED) {
			bad("churn mmap failed: errno %d", errno);
			break;
		}
		p[0] = (char)tag;
		p[len - 1] = (char)tag2;
		atomic_store(&churn_len[id], len);
		atomic_store(&churn_addr[id], (uintptr_t)p);
		switch (xs(&rng) % 3) {
		case 0:
			if (pages > 2 && mprotect(p + ps, (size_t)ps, PROT_READ))
				bad("mprotect failed: errno %d", errno);
			break;
		case 1: {
			size_t nlen = len * 2;
			char *q = mremap(p, len, nlen, MREMAP_MAYMOVE);

			if (q == MAP_FAILED) {
				/*
				 * EFAULT: the applier advised part of it (stale
				 * length), so it is several mappings now.
				 */
				if (errno != EFAULT)
					bad("mremap failed: errno %d", errno);
				break;
			}
			if ((uint8_t)q[0] != tag || (uint8_t)q[len - 1] != tag2)
				bad("data lost across mremap at iteration %ld", i);
			p = q;
			len = nlen;
			atomic_store(&churn_len[id], len);
			atomic_store(&churn_addr[id], (uintptr_t)p);
			break;
		}
		default:
			break;
		}
		if ((uint8_t)p[0] != tag)
			bad("churn data lost at iteration %ld", i);
		if (munmap(p, len))
			bad("munmap failed: errno %d", errno);
	}
	return NULL;
}

static const int advices[] = { THP_ADVICE_HUGE, THP_ADVICE_NOHUGE, THP_ADVICE_COLLAPSE };

static void *apply_all_thread(void *arg)
{
	struct thp_report failures[16];

	(void)arg;
	for (long i = 0; i < APPLY_ITERS && !out_of_time(); i++) {
		/* COLLAPSE of the whole process is slow: one in eight. */
		int advice = i % 8 == 7 ? THP_ADVICE_COLLAPSE : advices[i % 2];
		THP_OPTS(thp_apply_all_opts, o, .advice = advice,
			 .flags = (uint32_t)(i / 2 % 3) & 3u, .failures = failures,
			 .failures_cap = 16);
		int r;

		memset(failures, 0, sizeof(failures));
		r = thp_apply_all(&o);
		if (r < 0 && !errno_ok(r))
			bad("thp_apply_all returned %d (advice %d)", r, advice);
		if (r >= 0 && (uint64_t)r != o.mappings_advised)
			bad("thp_apply_all returned %d but mappings_advised %llu", r,
			    (unsigned long long)o.mappings_advised);
		for (size_t k = 0; k < o.failures_needed && k < 16; k++) {
			check_report(&failures[k], "apply_all");
			if (failures[k].error == 0)
				bad("apply_all failure %zu without error", k);
		}
	}
	return NULL;
}

static void *apply_ranges_thread(void *arg)
{
	struct thp_range ranges[NR_LONG + 2];
	struct thp_report reports[NR_LONG + 2];
	long ps = sysconf(_SC_PAGESIZE);

	(void)arg;
	for (long i = 0; i < APPLY_ITERS && !out_of_time(); i++) {
		static const uint32_t flags[] = { 0, THP_F_SKIP_ERRORS, THP_F_NO_ERROR_ON_UNMAPPED };
		THP_OPTS(thp_apply_opts, o, .advice = advices[i % 3], .flags = flags[i / 3 % 3],
			 .reports = reports);
		size_t n = 0;
		int r;

		for (int k = 0; k < NR_LONG; k++) {
			ranges[n].addr = (uintptr_t)long_maps[k] + (uint64_t)(i % 4) * (uint64_t)ps;
			ranges[n].len = LONG_MIB * MiB / 2;
			n++;
		}
		/* Whatever the churn threads mapped last: maybe gone already. */
		for (int k = 0; k < 2; k++) {
			ranges[n].addr = atomic_load(&churn_addr[k]);
			ranges[n].len = atomic_load(&churn_len[k]);
			n++;
		}
		memset(reports, 0, sizeof(reports));
		r = thp_apply_ranges(ranges, n, &o);
		if (r < 0 && !errno_ok(r))
			bad("thp_apply_ranges returned %d (advice %d)", r, o.advice);
		if (r > (int)n || (r >= 0 && !o.flags && r != (int)n))
			bad("thp_apply_ranges returned %d of %zu ranges", r, n);
		for (size_t k = 0; k < n; k++)
			check_report(&reports[k], "apply_ranges");
		if (i % 64 == 0)
			for (int k = 0; k < NR_LONG; k++)
				if (sum(long_maps[k], LONG_MIB * MiB) != long_sums[k])
					bad("long-lived mapping %d lost data at iteration %ld", k, i);
	}
	return NULL;
}

START_TEST(churn_while_applying)
{
	pthread_t th[4];

	for (int k = 0; k < NR_LONG; k++) {
		long_maps[k] = map_aligned(LONG_MIB, 0);
		for (size_t i = 0; i < LONG_MIB * MiB; i++)
			long_maps[k][i] = (char)(i * 7 + (size_t)k + (i >> 13));
		long_sums[k] = sum(long_maps[k], LONG_MIB * MiB);
	}
	t0 = now_ns();
	ck_assert_int_eq(pthread_create(&th[0], NULL, churn, (void *)0), 0);
	ck_assert_int_eq(pthread_create(&th[1], NULL, churn, (void *)1), 0);
	ck_assert_int_eq(pthread_create(&th[2], NULL, apply_all_thread, NULL), 0);
	ck_assert_int_eq(pthread_create(&th[3], NULL, apply_ranges_thread, NULL), 0);
	pthread_join(th[2], NULL);
	pthread_join(th[3], NULL);
	atomic_store(&stop, true);
	pthread_join(th[0], NULL);
	pthread_join(th[1], NULL);
	ck_assert_msg(!err_msg[0], "%s", err_msg);
	for (int k = 0; k < NR_LONG; k++)
		ck_assert_msg(sum(long_maps[k], LONG_MIB * MiB) == long_sums[k],
			      "long-lived mapping %d lost data", k);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("races");
	TCase *tc = tcase_create("races");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, churn_while_applying);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
