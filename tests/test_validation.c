// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every bad input returns its documented error, sets errno to match, and
 * changes nothing: the target mapping and a sentinel mapping never gain
 * hg/nh, and destructive advice never touches memory content.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <thp/thp.h>

#include "helpers.h"

static char *target;   /* 4 MiB, touched, pattern-filled */
static char *sentinel; /* 4 MiB elsewhere */

static void setup(void)
{
	require_madvise_mode();
	target = map_aligned(4, 0);
	sentinel = map_aligned(4, 0);
	for (size_t i = 0; i < 4 * MiB; i++)
		target[i] = (char)(i * 7 + 3);
	touch_range(sentinel, 4 * MiB);
}

static void teardown(void)
{
	munmap(target, 4 * MiB);
	munmap(sentinel, 4 * MiB);
}

static void assert_unchanged(const char *what)
{
	struct smaps_info si;

	ck_assert_int_eq(smaps_lookup(0, (uintptr_t)target, &si), 0);
	ck_assert_msg(si.found, "%s: target unmapped", what);
	ck_assert_msg(!si.hg && !si.nh, "%s: target VmFlags changed:%s", what, si.vmflags);
	ck_assert_int_eq(smaps_lookup(0, (uintptr_t)sentinel, &si), 0);
	ck_assert_msg(si.found, "%s: sentinel unmapped", what);
	ck_assert_msg(!si.hg && !si.nh, "%s: sentinel VmFlags changed:%s", what, si.vmflags);
	for (size_t i = 0; i < 4 * MiB; i += 997)
		ck_assert_msg(target[i] == (char)(i * 7 + 3),
			      "%s: target content lost at offset %zu", what, i);
}

#define EXPECT_ERR(call, err, what)                                               \
	do {                                                                      \
		int ret_;                                                         \
		errno = 0;                                                        \
		ret_ = (call);                                                    \
		ck_assert_msg(ret_ == -(err), "%s: returned %d, expected %d (%s)", \
			      what, ret_, -(err), strerror(err));                 \
		ck_assert_msg(errno == (err), "%s: errno %d, expected %d", what,  \
			      errno, (err));                                      \
		assert_unchanged(what);                                           \
	} while (0)

static struct thp_range target_range(void)
{
	struct thp_range r = { .addr = (uintptr_t)target, .len = 4 * MiB };

	return r;
}

/* ---------------- thp_apply_ranges ---------------- */

/*
 * Bad options, one row each: thp_apply_ranges() over the target (or
 * thp_apply_all(), below) fails with the row's error and changes nothing.
 */
#define PIDFD_FILE INT32_MIN      /* pidfd: a regular file's descriptor */
#define PIDFD_UNOPENED 12345      /* pidfd: a descriptor that is not open */

struct bad_opts {
	const char *name;
	bool null_opts;
	int advice;
	uint32_t flags, backend;
	bool set_sz;   /* sz, not THP_OPTS' own size */
	uint32_t sz;
	int32_t pidfd;
	int err;
};

#define HUGE_WITH(...) .advice = THP_ADVICE_HUGE, __VA_ARGS__
#define SZ(x) .set_sz = true, .sz = (x)

static const struct bad_opts ranges_bad[] = {
	{ "NULL opts", .null_opts = true, .err = EINVAL },
	{ "sz VER0-1", HUGE_WITH(SZ(THP_APPLY_OPTS_SIZE_VER0 - 1)), .err = EINVAL },
	{ "sz 0", HUGE_WITH(SZ(0)), .err = EINVAL },
	{ "sz 8", HUGE_WITH(SZ(8)), .err = EINVAL },
	{ "flags 0x4", HUGE_WITH(.flags = 1u << 2), .err = EINVAL },
	{ "flags 0x8", HUGE_WITH(.flags = 1u << 3), .err = EINVAL },
	{ "flags 0x10000", HUGE_WITH(.flags = 1u << 16), .err = EINVAL },
	{ "flags 0x80000000", HUGE_WITH(.flags = 1u << 31), .err = EINVAL },
	{ "flags 0x21", HUGE_WITH(.flags = THP_F_SKIP_ERRORS | (1u << 5)), .err = EINVAL },
	{ "backend 99", HUGE_WITH(.backend = 99), .err = EINVAL },
	{ "backend THP_BACKEND_COUNT", HUGE_WITH(.backend = THP_BACKEND_COUNT), .err = EINVAL },
	{ "backend 0x80000000", HUGE_WITH(.backend = 0x80000000u), .err = EINVAL },
	{ "unopened fd 12345", HUGE_WITH(.pidfd = PIDFD_UNOPENED), .err = EBADF },
	{ "unopened fd 12345, COLLAPSE", .advice = THP_ADVICE_COLLAPSE,
	  .pidfd = PIDFD_UNOPENED, .err = EBADF },
	{ "pidfd -1", HUGE_WITH(.pidfd = -1), .err = EBADF },
	{ "regular file fd", HUGE_WITH(.pidfd = PIDFD_FILE), .err = EBADF },
	{ "regular file fd, COLLAPSE", .advice = THP_ADVICE_COLLAPSE,
	  .pidfd = PIDFD_FILE, .err = EBADF },
};

/* The row's pidfd; a regular file's is opened into *fd (the caller closes it). */
static int32_t row_pidfd(int32_t pidfd, int *fd)
{
	char tmpl[] = "/tmp/thp-test-XXXXXX";

	*fd = -1;
	if (pidfd == PIDFD_UNOPENED) {
		close(PIDFD_UNOPENED);
		ck_assert(fcntl(PIDFD_UNOPENED, F_GETFD) == -1);
	} else if (pidfd == PIDFD_FILE) {
		*fd = mkstemp(tmpl);
		ck_assert_int_ge(*fd, 0);
		unlink(tmpl);
		ck_assert(write(*fd, "x", 1) == 1);
		pidfd = *fd;
	}
	return pidfd;
}

START_TEST(ranges_bad_opts)
{
	const struct bad_opts *t = &ranges_bad[_i];
	struct thp_range r = target_range();
	THP_OPTS(thp_apply_opts, o, .advice = t->advice, .flags = t->flags,
		 .backend = t->backend);
	int fd;

	if (t->set_sz)
		o.sz = t->sz;
	o.pidfd = row_pidfd(t->pidfd, &fd);
	EXPECT_ERR(thp_apply_ranges(&r, 1, t->null_opts ? NULL : &o), t->err, t->name);
	if (fd >= 0)
		close(fd);
}
END_TEST

struct big_apply_opts {
	struct thp_apply_opts o;
	unsigned char tail[24];
};

START_TEST(ranges_big_sz_nonzero_tail)
{
	struct thp_range r = target_range();
	struct big_apply_opts b;

	for (size_t i = 0; i < sizeof(b.tail); i++) {
		memset(&b, 0, sizeof(b));
		b.o.sz = sizeof(b);
		b.o.advice = THP_ADVICE_HUGE;
		b.tail[i] = 0x01;
		EXPECT_ERR(thp_apply_ranges(&r, 1, &b.o), E2BIG, "non-zero tail byte");
	}
}
END_TEST

START_TEST(ranges_big_sz_zero_tail)
{
	struct thp_range r = target_range();
	struct big_apply_opts b;
	int ret;

	memset(&b, 0, sizeof(b));
	b.o.sz = sizeof(b);
	b.o.advice = THP_ADVICE_HUGE;
	ret = thp_apply_ranges(&r, 1, &b.o);
	ck_assert_msg(ret == 1, "zero tail: returned %d (%s)", ret, thp_strerror(ret));
	ck_assert_msg(vma_hg(0, (uintptr_t)target), "zero tail accepted but no hg");
	ck_assert_msg(!vma_hg(0, (uintptr_t)sentinel), "sentinel gained hg");
	/* Exactly VER0 (the first published size) is accepted too. */
	memset(&b, 0, sizeof(b));
	b.o.sz = THP_APPLY_OPTS_SIZE_VER0;
	b.o.advice = THP_ADVICE_NOHUGE;
	ret = thp_apply_ranges(&r, 1, &b.o);
	ck_assert_msg(ret == 1, "sz VER0: returned %d", ret);
	ck_assert_msg(vma_nh(0, (uintptr_t)target), "sz VER0 accepted but no nh");
}
END_TEST

static const int bad_advice[] = { 4 /* DONTNEED */, 8 /* FREE */, 9 /* REMOVE */,
				  0, 99, -1, 3, 13, 16, 24, 26 };
static const uint32_t all_backends[] = { THP_BACKEND_AUTO, THP_BACKEND_PROCESS_MADVISE,
					 THP_BACKEND_MADVISE };

START_TEST(ranges_bad_advice)
{
	struct thp_range r = target_range();

	for (size_t b = 0; b < sizeof(all_backends) / sizeof(all_backends[0]); b++) {
		for (size_t i = 0; i < sizeof(bad_advice) / sizeof(bad_advice[0]); i++) {
			for (uint32_t fl = 0; fl <= THP_F_NO_ERROR_ON_UNMAPPED; fl++) {
				THP_OPTS(thp_apply_opts, o, .advice = bad_advice[i],
					 .backend = all_backends[b], .flags = fl);
				char what[96];

				snprintf(what, sizeof(what), "advice %d backend %u flags %u",
					 bad_advice[i], all_backends[b], fl);
				EXPECT_ERR(thp_apply_ranges(&r, 1, &o), EINVAL, what);
			}
		}
	}
	/* The touched pages still hold their content (MADV_DONTNEED would zero them). */
	ck_assert(target[0] == (char)3);
	ck_assert(target[4096 * 5 + 1] == (char)((4096 * 5 + 1) * 7 + 3));
}
END_TEST

START_TEST(ranges_too_many)
{
	size_t n = (size_t)THP_MAX_RANGES + 1;
	struct thp_range *v = malloc(n * sizeof(*v));
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE);

	ck_assert_ptr_nonnull(v);
	/* Every entry is valid: only the count is wrong. */
	for (size_t i = 0; i < n; i++)
		v[i] = target_range();
	EXPECT_ERR(thp_apply_ranges(v, n, &o), EINVAL, "nr_ranges > THP_MAX_RANGES");
	EXPECT_ERR(thp_apply_ranges(v, SIZE_MAX, &o), EINVAL, "nr_ranges SIZE_MAX");
	free(v);
}
END_TEST

START_TEST(ranges_null_ranges)
{
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE);

	EXPECT_ERR(thp_apply_ranges(NULL, 1, &o), EINVAL, "ranges NULL, n 1");
	EXPECT_ERR(thp_apply_ranges(NULL, 3, &o), EINVAL, "ranges NULL, n 3");
	/* NULL with 0 ranges is fine and does nothing. */
	errno = 0;
	ck_assert_int_eq(thp_apply_ranges(NULL, 0, &o), 0);
	assert_unchanged("ranges NULL, n 0");
}
END_TEST

/*
 * Bad ranges, one row each: a range that wraps past 2^64 or starts off a
 * page boundary, alone or after a valid one (all are checked before any
 * system call, so even the valid one stays unadvised).
 */
struct bad_range {
	const char *name;
	bool after_valid; /* a valid range (the target) first */
	bool in_target;   /* addr is an offset into the target */
	uint64_t addr, len;
	bool len_to_top;  /* len: up to 2^64 exactly */
};

static const struct bad_range ranges_bad_range[] = {
	{ "wrapping addr+len", false, false, 0xfffffffffffff000ULL, 0x2000, false },
	{ "valid, then wrapping", true, false, 0xfffffffffffff000ULL, 0x2000, false },
	{ "len UINT64_MAX", true, true, 0, UINT64_MAX, false },
	{ "len UINT64_MAX-4095", true, true, 0, UINT64_MAX - 4095, false },
	{ "addr+len == 2^64", true, true, 0, 0, true },
	{ "unaligned start", false, true, 1, 4 * MiB, false },
	{ "valid, then unaligned", true, true, 1, 4 * MiB, false },
	{ "start + 2048", true, true, 2048, 4 * MiB, false },
};

START_TEST(ranges_bad_ranges)
{
	const struct bad_range *t = &ranges_bad_range[_i];
	struct thp_range v[2] = { target_range() };
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE);

	v[1].addr = t->addr + (t->in_target ? (uintptr_t)target : 0);
	v[1].len = t->len_to_top ? UINT64_MAX - v[1].addr + 1 : t->len;
	EXPECT_ERR(thp_apply_ranges(t->after_valid ? v : &v[1], t->after_valid ? 2 : 1, &o),
		   EINVAL, t->name);
}
END_TEST

/* ---------------- thp_apply_all ---------------- */

#define ALL_ADVICE(a) { "apply_all advice " #a, .advice = a, .flags = THP_F_SKIP_ERRORS, \
			.err = EINVAL }

static const struct bad_opts all_bad[] = {
	{ "apply_all NULL", .null_opts = true, .err = EINVAL },
	{ "apply_all sz VER0-1", HUGE_WITH(SZ(THP_APPLY_ALL_OPTS_SIZE_VER0 - 1)), .err = EINVAL },
	{ "apply_all sz 0", HUGE_WITH(SZ(0)), .err = EINVAL },
	ALL_ADVICE(4), ALL_ADVICE(8), ALL_ADVICE(9), ALL_ADVICE(0), ALL_ADVICE(99), ALL_ADVICE(-1),
	ALL_ADVICE(3), ALL_ADVICE(13), ALL_ADVICE(16), ALL_ADVICE(24), ALL_ADVICE(26),
	{ "apply_all flags 1<<2", HUGE_WITH(.flags = 1u << 2), .err = EINVAL },
	{ "apply_all flags 1<<31", HUGE_WITH(.flags = 1u << 31), .err = EINVAL },
	{ "apply_all backend 99", HUGE_WITH(.backend = 99), .err = EINVAL },
	{ "apply_all pidfd 12345", HUGE_WITH(.pidfd = PIDFD_UNOPENED), .err = EBADF },
};

START_TEST(all_bad_opts)
{
	const struct bad_opts *t = &all_bad[_i];
	THP_OPTS(thp_apply_all_opts, o, .advice = t->advice, .flags = t->flags,
		 .backend = t->backend);
	int fd;

	if (t->set_sz)
		o.sz = t->sz;
	o.pidfd = row_pidfd(t->pidfd, &fd);
	EXPECT_ERR(thp_apply_all(t->null_opts ? NULL : &o), t->err, t->name);
	if (fd >= 0)
		close(fd);
}
END_TEST

struct big_all_opts {
	struct thp_apply_all_opts o;
	unsigned char tail[16];
};

START_TEST(all_nonzero_tail)
{
	struct big_all_opts b;

	for (size_t i = 0; i < sizeof(b.tail); i++) {
		memset(&b, 0, sizeof(b));
		b.o.sz = sizeof(b);
		b.o.advice = THP_ADVICE_HUGE;
		b.tail[i] = 0x80;
		EXPECT_ERR(thp_apply_all(&b.o), E2BIG, "apply_all non-zero tail");
	}
}
END_TEST

START_TEST(all_zero_tail_accepted)
{
	struct big_all_opts b;
	int ret;

	memset(&b, 0, sizeof(b));
	b.o.sz = sizeof(b);
	b.o.advice = THP_ADVICE_HUGE;
	ret = thp_apply_all(&b.o);
	ck_assert_msg(ret > 0, "apply_all zero tail: %d (%s)", ret, thp_strerror(ret));
	ck_assert_msg(vma_hg(0, (uintptr_t)target), "apply_all accepted but target no hg");
}
END_TEST

/* ---------------- thp_query ---------------- */

struct big_query_opts {
	struct thp_query_opts o;
	unsigned char tail[16];
};

START_TEST(query_rules)
{
	struct big_query_opts b;
	struct thp_mapping_state st[4];
	int ret;

	EXPECT_ERR(thp_query(NULL), EINVAL, "query NULL");
	memset(&b, 0, sizeof(b));
	b.o.sz = THP_QUERY_OPTS_SIZE_VER0 - 1;
	EXPECT_ERR(thp_query(&b.o), EINVAL, "query sz VER0-1");
	b.o.sz = 0;
	EXPECT_ERR(thp_query(&b.o), EINVAL, "query sz 0");
	for (size_t i = 0; i < sizeof(b.tail); i++) {
		memset(&b, 0, sizeof(b));
		b.o.sz = sizeof(b);
		b.tail[i] = 1;
		EXPECT_ERR(thp_query(&b.o), E2BIG, "query non-zero tail");
	}
	memset(&b, 0, sizeof(b));
	b.o.sz = sizeof(b.o);
	b.o.flags = 1u << 1;
	EXPECT_ERR(thp_query(&b.o), EINVAL, "query flags 1<<1");
	/* The folio sizes flag needs the VER2 fields to write them to. */
	b.o.flags = THP_QUERY_F_FOLIO_SIZES;
	b.o.sz = THP_QUERY_OPTS_SIZE_VER1;
	EXPECT_ERR(thp_query(&b.o), EINVAL, "query F_FOLIO_SIZES at VER1");
	b.o.sz = sizeof(b.o);
	b.o.flags = 1u << 31;
	EXPECT_ERR(thp_query(&b.o), EINVAL, "query flags 1<<31");
	close(12345);
	b.o.flags = 0;
	b.o.pidfd = 12345;
	EXPECT_ERR(thp_query(&b.o), EBADF, "query pidfd 12345");

	/* Larger struct, zero tail: accepted. */
	memset(&b, 0, sizeof(b));
	b.o.sz = sizeof(b);
	b.o.addr = (uintptr_t)target;
	b.o.len = 4 * MiB;
	b.o.states = st;
	b.o.states_cap = 4;
	ret = thp_query(&b.o);
	ck_assert_msg(ret == 1, "query zero tail: %d", ret);
	ck_assert_uint_eq(b.o.states_needed, 1);
	ck_assert_uint_eq(st[0].start, (uintptr_t)target);
}
END_TEST

/* ---------------- thp_probe ---------------- */

struct big_probe_info {
	struct thp_probe_info i;
	unsigned char tail[16];
};

START_TEST(probe_rules)
{
	struct big_probe_info b;

	EXPECT_ERR(thp_probe(NULL), EINVAL, "probe NULL");
	memset(&b, 0, sizeof(b));
	b.i.sz = THP_PROBE_INFO_SIZE_VER0 - 1;
	EXPECT_ERR(thp_probe(&b.i), EINVAL, "probe sz VER0-1");
	b.i.sz = 0;
	EXPECT_ERR(thp_probe(&b.i), EINVAL, "probe sz 0");
	for (size_t i = 0; i < sizeof(b.tail); i++) {
		memset(&b, 0, sizeof(b));
		b.i.sz = sizeof(b);
		b.tail[i] = 0xff;
		EXPECT_ERR(thp_probe(&b.i), E2BIG, "probe non-zero tail");
		ck_assert_msg(b.tail[i] == 0xff, "probe wrote past what it knows");
	}
	memset(&b, 0, sizeof(b));
	b.i.sz = sizeof(b);
	errno = 0;
	ck_assert_int_eq(thp_probe(&b.i), 0);
	ck_assert_msg(b.i.pmd_size == 2 * MiB, "pmd_size %llu",
		      (unsigned long long)b.i.pmd_size);
	for (size_t i = 0; i < sizeof(b.tail); i++)
		ck_assert_msg(b.tail[i] == 0, "probe wrote into the caller's tail");
}
END_TEST

/* The error paths also leave a useful detail; success clears it. */
START_TEST(detail_on_error)
{
	struct thp_range r = target_range();
	THP_OPTS(thp_apply_opts, o, .advice = 4);

	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), -EINVAL);
	ck_assert_ptr_nonnull(thp_strerror_detail());
	ck_assert_msg(thp_strerror_detail()[0] != '\0', "no detail for advice 4");
	o.advice = THP_ADVICE_HUGE;
	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), 1);
	ck_assert_str_eq(thp_strerror_detail(), "");
}
END_TEST

static void *fail_with_null_opts(void *arg)
{
	(void)arg;
	if (thp_apply_ranges(NULL, 0, NULL) != -EINVAL)
		return "thread: NULL opts not -EINVAL";
	if (strcmp(thp_strerror_detail(), "options struct pointer is NULL") != 0)
		return "thread: wrong detail";
	return NULL;
}

/*
 * Details with values are formatted, constant ones kept by reference: each
 * kind replaces the other, and a detail belongs to its thread, like errno.
 */
START_TEST(detail_kinds_and_threads)
{
	struct thp_range r = target_range();
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE);
	char want[96];
	pthread_t th;
	void *res;

	r.addr += 1;
	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), -EINVAL);
	snprintf(want, sizeof(want), "range 0: address 0x%llx is not page aligned",
		 (unsigned long long)r.addr);
	ck_assert_str_eq(thp_strerror_detail(), want);

	ck_assert_int_eq(thp_apply_ranges(&r, 1, NULL), -EINVAL);
	ck_assert_str_eq(thp_strerror_detail(), "options struct pointer is NULL");

	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), -EINVAL);
	ck_assert_str_eq(thp_strerror_detail(), want);

	/* Another thread's failure leaves this thread's detail alone. */
	ck_assert_int_eq(pthread_create(&th, NULL, fail_with_null_opts, NULL), 0);
	ck_assert_int_eq(pthread_join(th, &res), 0);
	ck_assert_msg(res == NULL, "%s", (const char *)res);
	ck_assert_str_eq(thp_strerror_detail(), want);

	r.addr -= 1;
	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), 1);
	ck_assert_str_eq(thp_strerror_detail(), "");
}
END_TEST

static Suite *validation_suite(void)
{
	Suite *s = suite_create("validation");
	TCase *tc = tcase_create("core");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_loop_test(tc, ranges_bad_opts, 0, sizeof(ranges_bad) / sizeof(ranges_bad[0]));
	tcase_add_test(tc, ranges_big_sz_nonzero_tail);
	tcase_add_test(tc, ranges_big_sz_zero_tail);
	tcase_add_test(tc, ranges_bad_advice);
	tcase_add_test(tc, ranges_too_many);
	tcase_add_test(tc, ranges_null_ranges);
	tcase_add_loop_test(tc, ranges_bad_ranges, 0,
			    sizeof(ranges_bad_range) / sizeof(ranges_bad_range[0]));
	tcase_add_loop_test(tc, all_bad_opts, 0, sizeof(all_bad) / sizeof(all_bad[0]));
	tcase_add_test(tc, all_nonzero_tail);
	tcase_add_test(tc, all_zero_tail_accepted);
	tcase_add_test(tc, query_rules);
	tcase_add_test(tc, probe_rules);
	tcase_add_test(tc, detail_on_error);
	tcase_add_test(tc, detail_kinds_and_threads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(validation_suite());
}
