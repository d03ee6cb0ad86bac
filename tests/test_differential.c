// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Differential test: the same request on the same layout must give the same
 * return value, the same reports (relative to the layout base, backend field
 * excluded) and the same smaps effects whichever backend runs it.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <thp/thp.h>

#include "helpers.h"

#define U(p) ((uint64_t)(uintptr_t)(p))
#define LAYOUT_MIB 34
#define NR_RANGES 6
#define NR_CHUNKS (LAYOUT_MIB / 2)

/*
 * Layout, MiB offsets from base (every VMA 2 MiB aligned):
 *   [0,2)   R   sentinel
 *   [2,6)   RW  R0 = [2,6)
 *   [6,8)   R   sentinel
 *   [8,14)  RW  R1 = [8,14), hole at [10,12)
 *   [14,16) R   sentinel
 *   [16,18) RW  R2 = [16,22), [18,20) nh (COLLAPSE fails there)
 *   [20,22) RW
 *   [22,24) R   sentinel
 *   [24,26) RW  R3 = [24,30) over RW / R / RW
 *   [26,28) R
 *   [28,30) RW
 *   [30,32) RW  R4 = [30,32) (merged with [28,30) as one VMA [28,32))
 *   [32,34) R   sentinel
 * plus R5 = [12,14): the tail of R1, after the failure points.
 */
static const struct { unsigned off, len; } range_mib[NR_RANGES] = {
	{ 2, 4 }, { 8, 6 }, { 16, 6 }, { 24, 6 }, { 30, 2 }, { 12, 2 },
};

struct layout {
	char *base;
	struct thp_range r[NR_RANGES];
};

static void build(struct layout *l)
{
	char *b = map_aligned(LAYOUT_MIB, 0);

	l->base = b;
	touch_range(b, LAYOUT_MIB * MiB);
	ck_assert(munmap(b + 10 * MiB, 2 * MiB) == 0);
	must_madvise(b + 18 * MiB, 2 * MiB, MADV_NOHUGEPAGE);
	ck_assert(mprotect(b, 2 * MiB, PROT_READ) == 0);
	ck_assert(mprotect(b + 6 * MiB, 2 * MiB, PROT_READ) == 0);
	ck_assert(mprotect(b + 14 * MiB, 2 * MiB, PROT_READ) == 0);
	ck_assert(mprotect(b + 22 * MiB, 2 * MiB, PROT_READ) == 0);
	ck_assert(mprotect(b + 26 * MiB, 2 * MiB, PROT_READ) == 0);
	ck_assert(mprotect(b + 32 * MiB, 2 * MiB, PROT_READ) == 0);
	for (int i = 0; i < NR_RANGES; i++) {
		l->r[i].addr = U(b) + range_mib[i].off * MiB;
		l->r[i].len = range_mib[i].len * MiB;
	}
}

static void destroy(struct layout *l)
{
	munmap(l->base, LAYOUT_MIB * MiB);
}

/* What one run produced, base-relative. */
struct outcome {
	int ret;
	int err;
	struct thp_report rep[NR_RANGES];
	/* Per 2 MiB chunk: mapped, hg, nh, AnonHugePages > 0 (COLLAPSE only). */
	unsigned char chunk[NR_CHUNKS][4];
};

static void run(uint32_t backend, int advice, uint32_t flags, struct outcome *out)
{
	struct layout l;
	THP_OPTS(thp_apply_opts, o, .advice = advice, .flags = flags, .backend = backend,
		 .reports = out->rep);

	memset(out, 0, sizeof(*out));
	memset(out->rep, 0x5a, sizeof(out->rep));
	build(&l);
	errno = 0;
	out->ret = thp_apply_ranges(l.r, NR_RANGES, &o);
	out->err = errno;
	if (out->ret < 0)
		ck_assert_int_eq(out->err, -out->ret);
	if (backend != THP_BACKEND_AUTO)
		ck_assert_msg(o.backend_used == backend, "backend_used %u, forced %u",
			      o.backend_used, backend);
	for (int i = 0; i < NR_RANGES; i++) {
		struct thp_report *r = &out->rep[i];

		ck_assert_msg(r->reserved0 == 0 && r->reserved[0] == 0 && r->reserved[1] == 0,
			      "backend %u: report %d reserved words not zero", backend, i);
		if (r->attempted)
			ck_assert_msg(r->backend == o.backend_used,
				      "report %d backend %u, backend_used %u", i, r->backend,
				      o.backend_used);
		r->backend = 0;
		if (r->addr)
			r->addr -= U(l.base);
		if (r->fail_addr)
			r->fail_addr -= U(l.base);
	}
	for (int c = 0; c < NR_CHUNKS; c++) {
		struct smaps_info si;

		ck_assert_int_eq(smaps_lookup(0, U(l.base) + (uint64_t)c * 2 * MiB, &si), 0);
		out->chunk[c][0] = si.found;
		out->chunk[c][1] = si.hg;
		out->chunk[c][2] = si.nh;
		if (advice == THP_ADVICE_COLLAPSE && si.found)
			out->chunk[c][3] = si.anon_huge > 0;
	}
	/* Sentinels never change. */
	for (unsigned m = 0; m < LAYOUT_MIB; m += 2) {
		bool in_range = false;

		for (int i = 0; i < NR_RANGES; i++)
			if (m >= range_mib[i].off && m < range_mib[i].off + range_mib[i].len)
				in_range = true;
		if (in_range)
			continue;
		ck_assert_msg(!out->chunk[m / 2][1] && !out->chunk[m / 2][2] &&
			      !out->chunk[m / 2][3],
			      "backend %u advice %d flags %u: sentinel at +%uM changed",
			      backend, advice, flags, m);
	}
	destroy(&l);
}

static void describe(const struct outcome *o, char *buf, size_t len)
{
	size_t n = 0;

	n += (size_t)snprintf(buf + n, len - n, "ret %d;", o->ret);
	for (int i = 0; i < NR_RANGES && n < len; i++) {
		const struct thp_report *r = &o->rep[i];

		n += (size_t)snprintf(buf + n, len - n,
				      " R%d{+%llx len %llx adv %llx unm %llx fail +%llx err %d att %u}",
				      i, (unsigned long long)r->addr, (unsigned long long)r->len,
				      (unsigned long long)r->bytes_advised,
				      (unsigned long long)r->bytes_unmapped,
				      (unsigned long long)r->fail_addr, r->error, r->attempted);
	}
	for (int c = 0; c < NR_CHUNKS && n < len; c++)
		n += (size_t)snprintf(buf + n, len - n, " %c%c%c%c", o->chunk[c][0] ? 'm' : '-',
				      o->chunk[c][1] ? 'h' : '-', o->chunk[c][2] ? 'n' : '-',
				      o->chunk[c][3] ? 'H' : '-');
}

static uint32_t available_backends(uint32_t *list, size_t *n)
{
	struct thp_probe_info pi = { .sz = sizeof(pi) };
	static const uint32_t cand[] = { THP_BACKEND_PMADV, THP_BACKEND_PROCESS_MADVISE,
					 THP_BACKEND_MADVISE };

	ck_assert_int_eq(thp_probe(&pi), 0);
	*n = 0;
	for (size_t i = 0; i < 3; i++)
		if (pi.backends & (1u << cand[i]))
			list[(*n)++] = cand[i];
	return pi.backends;
}

/* Without process_madvise() the probe must offer exactly the madvise() loop. */
static void only_madvise(const uint32_t *list, size_t n)
{
	ck_assert_msg(n == 1 && list[0] == THP_BACKEND_MADVISE,
		      "%zu range backends (first %u), expected only madvise without "
		      "process_madvise()", n, n ? list[0] : 0);
}

static void differential(int advice)
{
	static const uint32_t flag_sets[] = { 0, THP_F_SKIP_ERRORS, THP_F_NO_ERROR_ON_UNMAPPED };
	uint32_t list[4];
	size_t n;
	char a[2048], b[2048];

	available_backends(list, &n);
	if (!expect_process_madvise()) {
		/*
		 * The madvise() loop is the only range backend here: compare
		 * AUTO with it.  enough_backends runs the cross-backend
		 * comparison natively.
		 */
		only_madvise(list, n);
	} else if (n < 2) {
		ck_assert_msg(!in_ci(), "only %zu range backend(s) available: cannot compare", n);
		fprintf(stderr, "differential: only %zu backend(s); comparing AUTO only\n", n);
	}
	list[n++] = THP_BACKEND_AUTO;
	for (size_t f = 0; f < 3; f++) {
		struct outcome ref, cur;

		run(list[0], advice, flag_sets[f], &ref);
		for (size_t i = 1; i < n; i++) {
			run(list[i], advice, flag_sets[f], &cur);
			if (memcmp(&ref, &cur, sizeof(ref)) != 0) {
				describe(&ref, a, sizeof(a));
				describe(&cur, b, sizeof(b));
				ck_abort_msg("advice %d flags %u: backend %s and %s differ:\n"
					     "  %s: %s\n  %s: %s", advice, flag_sets[f],
					     thp_backend_name(list[0]), thp_backend_name(list[i]),
					     thp_backend_name(list[0]), a,
					     thp_backend_name(list[i]), b);
			}
		}
	}
}

START_TEST(enough_backends)
{
	uint32_t list[4];
	size_t n;

	available_backends(list, &n);
	if (!expect_process_madvise()) {
		/*
		 * Under valgrind one backend cannot be compared with another:
		 * the comparison (this case included) runs natively, where
		 * there are two.
		 */
		only_madvise(list, n);
		run_tcase_natively("core");
		return;
	}
	if (in_ci())
		ck_assert_msg(n >= 2, "CI: need at least 2 backends to compare, have %zu", n);
}
END_TEST

START_TEST(diff_huge)
{
	differential(THP_ADVICE_HUGE);
}
END_TEST

START_TEST(diff_nohuge)
{
	differential(THP_ADVICE_NOHUGE);
}
END_TEST

START_TEST(diff_collapse)
{
	differential(THP_ADVICE_COLLAPSE);
}
END_TEST

/*
 * The expected outcome for one case, spelled out, so that backends that
 * agree on a wrong answer still fail.
 */
START_TEST(expected_values)
{
	uint32_t list[4];
	size_t n;
	struct outcome o;

	available_backends(list, &n);
	list[n++] = THP_BACKEND_AUTO;
	for (size_t i = 0; i < n; i++) {
		/* HUGE, default: R1's hole stops the call with ENOMEM. */
		run(list[i], THP_ADVICE_HUGE, 0, &o);
		ck_assert_int_eq(o.ret, -ENOMEM);
		ck_assert_uint_eq(o.rep[0].bytes_advised, 4 * MiB);
		ck_assert_uint_eq(o.rep[1].bytes_advised, 4 * MiB);
		ck_assert_uint_eq(o.rep[1].bytes_unmapped, 2 * MiB);
		ck_assert_uint_eq(o.rep[1].fail_addr, 10 * MiB);
		ck_assert_int_eq(o.rep[1].error, ENOMEM);
		for (int k = 2; k < NR_RANGES; k++)
			ck_assert_uint_eq(o.rep[k].attempted, 0);
		ck_assert(o.chunk[4][1] && o.chunk[6][1] && !o.chunk[5][0]);
		ck_assert(!o.chunk[8][1]); /* R2 not reached */

		/* HUGE, NO_ERROR_ON_UNMAPPED: everything advised, all 6 ranges count. */
		run(list[i], THP_ADVICE_HUGE, THP_F_NO_ERROR_ON_UNMAPPED, &o);
		ck_assert_int_eq(o.ret, NR_RANGES);
		ck_assert_uint_eq(o.rep[1].bytes_unmapped, 2 * MiB);
		ck_assert_int_eq(o.rep[1].error, 0);
		ck_assert_uint_eq(o.rep[3].bytes_advised, 6 * MiB);
		ck_assert(o.chunk[9][1] && !o.chunk[9][2]); /* nh became hg */

		/* COLLAPSE, SKIP_ERRORS: R1 (hole) is fine, R2 fails at the nh mapping. */
		run(list[i], THP_ADVICE_COLLAPSE, THP_F_SKIP_ERRORS, &o);
		ck_assert_int_eq(o.ret, NR_RANGES - 1);
		ck_assert_uint_eq(o.rep[2].fail_addr, 18 * MiB);
		ck_assert_int_eq(o.rep[2].error, EINVAL);
		ck_assert(o.chunk[1][3] && o.chunk[4][3] && o.chunk[8][3] && !o.chunk[9][3]);

		/* COLLAPSE, NO_ERROR_ON_UNMAPPED: stops at R2 with EINVAL. */
		run(list[i], THP_ADVICE_COLLAPSE, THP_F_NO_ERROR_ON_UNMAPPED, &o);
		ck_assert_int_eq(o.ret, -EINVAL);
		ck_assert_uint_eq(o.rep[2].fail_addr, 18 * MiB);
		ck_assert_uint_eq(o.rep[3].attempted, 0);
		ck_assert(!o.chunk[12][3]);
	}
}
END_TEST

static Suite *diff_suite(void)
{
	Suite *s = suite_create("differential");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, require_madvise_mode, NULL);
	tcase_add_test(tc, enough_backends);
	tcase_add_test(tc, diff_huge);
	tcase_add_test(tc, diff_nohuge);
	tcase_add_test(tc, diff_collapse);
	tcase_add_test(tc, expected_values);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(diff_suite());
}
