// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_apply_ranges(): effects checked in /proc/self/smaps, reports checked
 * field by field, nothing advised outside the requested ranges.
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

static void garbage_reports(struct thp_report *r, size_t n)
{
	memset(r, 0xa5, n * sizeof(*r));
}

static void check_report(const struct thp_report *r, uint64_t addr, uint64_t len,
			 uint64_t advised, uint64_t unmapped, uint64_t fail_addr,
			 int error, uint32_t attempted, uint32_t backend, const char *what)
{
	ck_assert_msg(r->addr == addr, "%s: report addr 0x%llx, expected 0x%llx", what,
		      (unsigned long long)r->addr, (unsigned long long)addr);
	ck_assert_msg(r->len == len, "%s: report len 0x%llx, expected 0x%llx", what,
		      (unsigned long long)r->len, (unsigned long long)len);
	ck_assert_msg(r->bytes_advised == advised,
		      "%s: bytes_advised 0x%llx, expected 0x%llx", what,
		      (unsigned long long)r->bytes_advised, (unsigned long long)advised);
	ck_assert_msg(r->bytes_unmapped == unmapped,
		      "%s: bytes_unmapped 0x%llx, expected 0x%llx", what,
		      (unsigned long long)r->bytes_unmapped, (unsigned long long)unmapped);
	ck_assert_msg(r->fail_addr == fail_addr, "%s: fail_addr 0x%llx, expected 0x%llx",
		      what, (unsigned long long)r->fail_addr,
		      (unsigned long long)fail_addr);
	ck_assert_msg(r->error == error, "%s: error %d, expected %d", what, r->error, error);
	ck_assert_msg(r->attempted == attempted, "%s: attempted %u, expected %u", what,
		      r->attempted, attempted);
	if (attempted)
		ck_assert_msg(r->backend == backend, "%s: backend %u, expected %u", what,
			      r->backend, backend);
	ck_assert_msg(r->reserved0 == 0 && r->reserved[0] == 0 && r->reserved[1] == 0,
		      "%s: reserved words not zero", what);
}

/* 10 MiB mapping; the range is [base+2M, base+8M); sentinels on both sides. */
START_TEST(huge_then_nohuge)
{
	char *base = map_aligned(10, 0);
	struct thp_range r = { U(base + 2 * MiB), 6 * MiB };
	struct thp_report rep;
	struct smaps_info si;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = &rep);
	int ret;

	garbage_reports(&rep, 1);
	o.backend_used = 0xdead;
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_msg(ret == 1, "HUGE returned %d (%s: %s)", ret, thp_strerror(ret),
		      thp_strerror_detail());
	ck_assert_msg(o.backend_used == THP_BACKEND_PMADV ||
		      o.backend_used == THP_BACKEND_PROCESS_MADVISE ||
		      o.backend_used == THP_BACKEND_MADVISE,
		      "backend_used %u", o.backend_used);
	check_report(&rep, r.addr, r.len, 6 * MiB, 0, 0, 0, 1, o.backend_used, "HUGE");

	ck_assert_int_eq(smaps_lookup(0, r.addr, &si), 0);
	ck_assert_msg(si.hg && !si.nh, "range not hg:%s", si.vmflags);
	ck_assert_msg(si.start == r.addr && si.end == r.addr + r.len,
		      "hg VMA is [0x%llx,0x%llx), expected exactly the range",
		      (unsigned long long)si.start, (unsigned long long)si.end);
	assert_vma_unadvised(0, U(base), "sentinel below");
	assert_vma_unadvised(0, U(base + 8 * MiB), "sentinel above");
	ck_assert_int_eq(si.thp_eligible, 1);

	touch_range(base, 10 * MiB);
	ck_assert_msg(vma_anon_huge(0, r.addr) > 0, "no AnonHugePages in the hg range%s",
		      mode_note());
	ck_assert_msg(vma_anon_huge(0, U(base)) == 0, "AnonHugePages in a sentinel%s",
		      mode_note());

	o.advice = THP_ADVICE_NOHUGE;
	garbage_reports(&rep, 1);
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_msg(ret == 1, "NOHUGE returned %d", ret);
	check_report(&rep, r.addr, r.len, 6 * MiB, 0, 0, 0, 1, o.backend_used, "NOHUGE");
	ck_assert_int_eq(smaps_lookup(0, r.addr, &si), 0);
	ck_assert_msg(si.nh && !si.hg, "range not nh:%s", si.vmflags);
	ck_assert_int_eq(si.thp_eligible, 0);
	assert_vma_unadvised(0, U(base), "sentinel below");
	assert_vma_unadvised(0, U(base + 8 * MiB), "sentinel above");
	munmap(base, 10 * MiB);
}
END_TEST

/* Each forced backend available on mainline works the same for HUGE/NOHUGE on self. */
START_TEST(forced_backends)
{
	static const uint32_t be[] = { THP_BACKEND_PROCESS_MADVISE, THP_BACKEND_MADVISE };

	for (size_t i = 0; i < 2; i++) {
		char *base = map_aligned(6, 0);
		struct thp_range r = { U(base + 2 * MiB), 2 * MiB };
		struct thp_report rep;
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = &rep,
			 .backend = be[i]);
		int ret;

		if (be[i] == THP_BACKEND_PROCESS_MADVISE && !expect_process_madvise()) {
			/* Refused, for HUGE and NOHUGE alike, and nothing changed. */
			check_ranges_refused(&r, 1, &o, "forced process_madvise, HUGE");
			o.advice = THP_ADVICE_NOHUGE;
			check_ranges_refused(&r, 1, &o, "forced process_madvise, NOHUGE");
			assert_vma_unadvised(0, r.addr, "forced process_madvise: the range");
			assert_vma_unadvised(0, U(base), "forced process_madvise: below");
			assert_vma_unadvised(0, U(base + 4 * MiB), "forced process_madvise: above");
			munmap(base, 6 * MiB);
			continue;
		}
		garbage_reports(&rep, 1);
		ret = thp_apply_ranges(&r, 1, &o);
		ck_assert_msg(ret == 1, "backend %u: %d (%s)", be[i], ret, thp_strerror_detail());
		ck_assert_uint_eq(o.backend_used, be[i]);
		check_report(&rep, r.addr, r.len, 2 * MiB, 0, 0, 0, 1, be[i], "forced");
		ck_assert(vma_hg(0, r.addr));
		assert_vma_unadvised(0, U(base), "forced: below");
		assert_vma_unadvised(0, U(base + 4 * MiB), "forced: above");
		munmap(base, 6 * MiB);
	}
}
END_TEST

/* The PMADV backend does not exist on mainline: forced, it is -EOPNOTSUPP. */
START_TEST(forced_pmadv_unavailable)
{
	char *base = map_aligned(4, 0);
	struct thp_range r = { U(base), 4 * MiB };
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .backend = THP_BACKEND_PMADV);
	struct thp_probe_info pi = { .sz = sizeof(pi) };
	int ret;

	ck_assert_int_eq(thp_probe(&pi), 0);
	if (pi.backends & (1u << THP_BACKEND_PMADV))
		return; /* an RFC kernel: nothing to check here */
	errno = 0;
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_int_eq(ret, -EOPNOTSUPP);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	assert_vma_unadvised(0, U(base), "forced pmadv");
	munmap(base, 4 * MiB);
}
END_TEST

/*
 * Layout: [base, +10M) mapped, hole at [+4M, +6M); R0 = [+2M, +8M) (hole inside),
 * R1 = [+12M, +14M) in a second mapping.
 */
struct hole_layout {
	char *base, *second;
	struct thp_range r[2];
};

static void make_hole_layout(struct hole_layout *l)
{
	l->base = map_aligned(10, 0);
	l->second = map_aligned(6, 0);
	touch_range(l->base, 10 * MiB);
	ck_assert(munmap(l->base + 4 * MiB, 2 * MiB) == 0);
	l->r[0].addr = U(l->base + 2 * MiB);
	l->r[0].len = 6 * MiB;
	l->r[1].addr = U(l->second + 2 * MiB);
	l->r[1].len = 2 * MiB;
}

static void check_hole_sentinels(const struct hole_layout *l)
{
	assert_vma_unadvised(0, U(l->base), "below R0");
	assert_vma_unadvised(0, U(l->base + 8 * MiB), "above R0");
	assert_vma_unadvised(0, U(l->second), "below R1");
	assert_vma_unadvised(0, U(l->second + 4 * MiB), "above R1");
	ck_assert_msg(!vma_mapped(0, U(l->base + 4 * MiB)), "the hole got mapped");
}

/*
 * The hole layout under each mode, one row each: where the default mode
 * stops at the hole (-ENOMEM, R1 not reached), NO_ERROR_ON_UNMAPPED and
 * SKIP_ERRORS (which implies it) go on, and count both ranges.  Either
 * way the mapped parts of R0 on both sides of the hole take the advice,
 * as madvise() does, and the report says the hole is unmapped.
 */
struct hole_case {
	const char *name;
	int advice;
	uint32_t flags;
	int ret;
};

static const struct hole_case hole_cases[] = {
	{ "default", THP_ADVICE_HUGE, 0, -ENOMEM },
	{ "NO_ERROR_ON_UNMAPPED", THP_ADVICE_HUGE, THP_F_NO_ERROR_ON_UNMAPPED, 2 },
	{ "SKIP_ERRORS", THP_ADVICE_NOHUGE, THP_F_SKIP_ERRORS, 2 },
};

static bool vma_advised(uint64_t addr, int advice)
{
	return advice == THP_ADVICE_HUGE ? vma_hg(0, addr) : vma_nh(0, addr);
}

static void hole_check(const struct hole_case *t)
{
	struct hole_layout l;
	struct thp_report rep[2];
	THP_OPTS(thp_apply_opts, o, .advice = t->advice, .reports = rep, .flags = t->flags);
	bool stops = t->ret < 0;
	int ret;

	make_hole_layout(&l);
	garbage_reports(rep, 2);
	errno = 0;
	ret = thp_apply_ranges(l.r, 2, &o);
	ck_assert_msg(ret == t->ret, "hole, %s: returned %d, expected %d (%s)", t->name, ret,
		      t->ret, thp_strerror_detail());
	if (stops)
		ck_assert_int_eq(errno, -t->ret);
	ck_assert_msg(vma_advised(l.r[0].addr, t->advice), "%s: mapped part before the hole "
		      "not advised", t->name);
	ck_assert_msg(vma_advised(U(l.base + 6 * MiB), t->advice), "%s: mapped part after the "
		      "hole not advised", t->name);
	check_report(&rep[0], l.r[0].addr, 6 * MiB, 4 * MiB, 2 * MiB,
		     stops ? U(l.base + 4 * MiB) : 0, stops ? ENOMEM : 0, 1, o.backend_used,
		     t->name);
	if (stops) {
		/* The default mode stops: R1 is not reached. */
		ck_assert_msg(!vma_hg(0, l.r[1].addr), "R1 advised after a failure in default mode");
		ck_assert_msg(rep[1].attempted == 0 && rep[1].bytes_advised == 0,
			      "R1: attempted %u bytes_advised %llu", rep[1].attempted,
			      (unsigned long long)rep[1].bytes_advised);
	} else {
		check_report(&rep[1], l.r[1].addr, 2 * MiB, 2 * MiB, 0, 0, 0, 1, o.backend_used,
			     t->name);
		ck_assert_msg(vma_advised(l.r[1].addr, t->advice), "%s: R1 not advised", t->name);
	}
	check_hole_sentinels(&l);
}

START_TEST(hole)
{
	hole_check(&hole_cases[_i]);
}
END_TEST

/*
 * Once a process has made one successful call, its next calls with the
 * auto backend may take the one-system-call path (6.13+: process_madvise()
 * on self).  Its reports must be the general path's, and a failure on it
 * must be explained exactly as a first call's is.
 */
START_TEST(after_a_success)
{
	char *base = map_aligned(4, 0);
	struct thp_range r = { U(base), 4 * MiB };
	struct thp_report rep;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = &rep);
	uint32_t first_backend;

	ck_assert_msg(thp_apply_ranges(&r, 1, &o) == 1, "first call: %s", thp_strerror_detail());
	first_backend = o.backend_used;
	check_report(&rep, U(base), 4 * MiB, 4 * MiB, 0, 0, 0, 1, first_backend, "first call");
	for (int i = 0; i < 4; i++) {
		o.advice = i & 1 ? THP_ADVICE_HUGE : THP_ADVICE_NOHUGE;
		o.backend_used = 0;
		garbage_reports(&rep, 1);
		ck_assert_msg(thp_apply_ranges(&r, 1, &o) == 1, "call %d: %s", i,
			      thp_strerror_detail());
		ck_assert_uint_eq(o.backend_used, first_backend);
		check_report(&rep, U(base), 4 * MiB, 4 * MiB, 0, 0, 0, 1, first_backend, "again");
		ck_assert_msg(i & 1 ? vma_hg(0, U(base)) : vma_nh(0, U(base)),
			      "call %d: the advice is not in smaps", i);
	}
	hole_check(&hole_cases[0]);
}
END_TEST

/* A range entirely unmapped reports all of it as unmapped. */
START_TEST(fully_unmapped_range)
{
	char *base = map_aligned(6, 0);
	struct thp_range r = { U(base + 2 * MiB), 2 * MiB };
	struct thp_report rep;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = &rep);
	int ret;

	ck_assert(munmap(base + 2 * MiB, 2 * MiB) == 0);
	garbage_reports(&rep, 1);
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_int_eq(ret, -ENOMEM);
	check_report(&rep, r.addr, r.len, 0, 2 * MiB, r.addr, ENOMEM, 1, o.backend_used,
		     "unmapped");
	assert_vma_unadvised(0, U(base), "below");
	assert_vma_unadvised(0, U(base + 4 * MiB), "above");
}
END_TEST

/* One range over adjacent mappings with different protections. */
START_TEST(spanning_protections)
{
	char *base = map_aligned(12, 0);
	struct thp_range r = { U(base + 2 * MiB), 8 * MiB };
	struct thp_report rep;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = &rep);
	static const uint64_t pieces[] = { 2, 4, 5, 6, 8 }; /* MiB offsets inside */
	int ret;

	touch_range(base, 12 * MiB);
	ck_assert(mprotect(base + 4 * MiB, 1 * MiB, PROT_READ) == 0);
	ck_assert(mprotect(base + 5 * MiB, 1 * MiB, PROT_NONE) == 0);
	ck_assert(mprotect(base + 6 * MiB, 2 * MiB, PROT_READ | PROT_EXEC) == 0);
	garbage_reports(&rep, 1);
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_msg(ret == 1, "spanning: %d (%s)", ret, thp_strerror_detail());
	check_report(&rep, r.addr, r.len, 8 * MiB, 0, 0, 0, 1, o.backend_used, "spanning");
	for (size_t i = 0; i < sizeof(pieces) / sizeof(pieces[0]); i++) {
		struct smaps_info si;

		ck_assert_int_eq(smaps_lookup(0, U(base + pieces[i] * MiB), &si), 0);
		ck_assert_msg(si.found && si.hg, "piece at +%lluM (%s) not hg:%s",
			      (unsigned long long)pieces[i], si.perms, si.vmflags);
	}
	assert_vma_unadvised(0, U(base), "below");
	assert_vma_unadvised(0, U(base + 10 * MiB), "above");
	munmap(base, 12 * MiB);
}
END_TEST

/*
 * COLLAPSE failing in the middle of a range: [+2M,+4M) plain, [+4M,+6M) nh,
 * [+6M,+8M) plain, all touched, separated by read-only sentinels.  R0 = [+2M,+8M), R1 = [+10M,+12M) in the
 * same mapping (plain, touched).  The kernel refuses to collapse an nh VMA
 * with EINVAL.
 */
struct collapse_layout {
	char *base;
	struct thp_range r[2];
};

static void make_collapse_layout(struct collapse_layout *l)
{
	l->base = map_aligned(14, 0);
	touch_range(l->base, 14 * MiB);
	must_madvise(l->base + 4 * MiB, 2 * MiB, MADV_NOHUGEPAGE);
	/* Read-only sentinels split the mapping so smaps counts each part apart. */
	ck_assert(mprotect(l->base, 2 * MiB, PROT_READ) == 0);
	ck_assert(mprotect(l->base + 8 * MiB, 2 * MiB, PROT_READ) == 0);
	ck_assert(mprotect(l->base + 12 * MiB, 2 * MiB, PROT_READ) == 0);
	l->r[0].addr = U(l->base + 2 * MiB);
	l->r[0].len = 6 * MiB;
	l->r[1].addr = U(l->base + 10 * MiB);
	l->r[1].len = 2 * MiB;
	ck_assert_msg(range_anon_huge(0, U(l->base), 14 * MiB) == 0,
		      "huge pages before any COLLAPSE%s", mode_note());
}

static void check_collapse_sentinels(const struct collapse_layout *l)
{
	ck_assert_msg(vma_anon_huge(0, U(l->base)) == 0, "collapse below R0");
	ck_assert_msg(range_anon_huge(0, U(l->base + 8 * MiB), 2 * MiB) == 0,
		      "collapse between R0 and R1");
	ck_assert_msg(range_anon_huge(0, U(l->base + 12 * MiB), 2 * MiB) == 0,
		      "collapse above R1");
	ck_assert_msg(vma_anon_huge(0, U(l->base + 4 * MiB)) == 0, "nh mapping collapsed");
	ck_assert_msg(vma_nh(0, U(l->base + 4 * MiB)), "nh mapping lost nh");
	assert_vma_unadvised(0, U(l->base), "collapse: below");
}

START_TEST(collapse_fail_default)
{
	struct collapse_layout l;
	struct thp_report rep[2];
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .reports = rep);
	uint64_t huge;
	int ret;

	make_collapse_layout(&l);
	garbage_reports(rep, 2);
	errno = 0;
	ret = thp_apply_ranges(l.r, 2, &o);
	ck_assert_msg(ret == -EINVAL, "collapse over nh: returned %d, expected -EINVAL", ret);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_msg(rep[0].attempted == 1, "R0 not attempted");
	ck_assert_msg(rep[0].fail_addr == U(l.base + 4 * MiB),
		      "fail_addr 0x%llx, expected the nh mapping 0x%llx",
		      (unsigned long long)rep[0].fail_addr,
		      (unsigned long long)U(l.base + 4 * MiB));
	ck_assert_int_eq(rep[0].error, EINVAL);
	ck_assert_uint_eq(rep[0].bytes_unmapped, 0);
	ck_assert_uint_eq(rep[0].addr, l.r[0].addr);
	ck_assert_uint_eq(rep[0].len, l.r[0].len);
	/* The part before the failure was collapsed, and the report says so. */
	ck_assert_msg(vma_anon_huge(0, l.r[0].addr) == 2 * MiB,
		      "first 2 MiB not collapsed (AnonHugePages %llu)",
		      (unsigned long long)vma_anon_huge(0, l.r[0].addr));
	huge = range_anon_huge(0, l.r[0].addr, l.r[0].len);
	ck_assert_msg(rep[0].bytes_advised >= 2 * MiB && rep[0].bytes_advised == huge,
		      "bytes_advised %llu but %llu bytes are huge in R0",
		      (unsigned long long)rep[0].bytes_advised, (unsigned long long)huge);
	/* Stopped: R1 untouched. */
	ck_assert_msg(rep[1].attempted == 0 && rep[1].bytes_advised == 0,
		      "R1 attempted %u advised %llu", rep[1].attempted,
		      (unsigned long long)rep[1].bytes_advised);
	ck_assert_msg(vma_anon_huge(0, l.r[1].addr) == 0 &&
		      range_anon_huge(0, l.r[1].addr, l.r[1].len) == 0,
		      "R1 collapsed after a default-mode stop");
	check_collapse_sentinels(&l);
}
END_TEST

START_TEST(collapse_fail_skip_errors)
{
	struct collapse_layout l;
	struct thp_report rep[2];
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .reports = rep,
		 .flags = THP_F_SKIP_ERRORS);
	int ret;

	make_collapse_layout(&l);
	garbage_reports(rep, 2);
	ret = thp_apply_ranges(l.r, 2, &o);
	ck_assert_msg(ret == 1, "SKIP_ERRORS: returned %d, expected 1 (R1 only)", ret);
	ck_assert_uint_eq(rep[0].fail_addr, U(l.base + 4 * MiB));
	ck_assert_int_eq(rep[0].error, EINVAL);
	ck_assert_uint_eq(rep[0].attempted, 1);
	/* Best effort: the mapped parts on both sides of the nh mapping collapse. */
	ck_assert_msg(vma_anon_huge(0, l.r[0].addr) == 2 * MiB, "[+2M,+4M) not collapsed");
	ck_assert_msg(range_anon_huge(0, U(l.base + 6 * MiB), 2 * MiB) == 2 * MiB,
		      "[+6M,+8M) not collapsed under SKIP_ERRORS");
	ck_assert_msg(rep[0].bytes_advised == 4 * MiB, "R0 bytes_advised %llu, expected 4 MiB",
		      (unsigned long long)rep[0].bytes_advised);
	check_report(&rep[1], l.r[1].addr, 2 * MiB, 2 * MiB, 0, 0, 0, 1, o.backend_used,
		     "R1");
	ck_assert(range_anon_huge(0, l.r[1].addr, l.r[1].len) == 2 * MiB);
	check_collapse_sentinels(&l);
}
END_TEST

/* NO_ERROR_ON_UNMAPPED does not hide real errors. */
START_TEST(collapse_fail_no_error_on_unmapped)
{
	struct collapse_layout l;
	struct thp_report rep[2];
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .reports = rep,
		 .flags = THP_F_NO_ERROR_ON_UNMAPPED);
	int ret;

	make_collapse_layout(&l);
	garbage_reports(rep, 2);
	ret = thp_apply_ranges(l.r, 2, &o);
	ck_assert_msg(ret == -EINVAL, "NO_ERROR_ON_UNMAPPED: %d, expected -EINVAL", ret);
	ck_assert_uint_eq(rep[0].fail_addr, U(l.base + 4 * MiB));
	ck_assert_int_eq(rep[0].error, EINVAL);
	ck_assert_uint_eq(rep[1].attempted, 0);
	ck_assert(range_anon_huge(0, l.r[1].addr, l.r[1].len) == 0);
	check_collapse_sentinels(&l);
}
END_TEST

/* The 5 GiB cases need a 64-bit address space. */
#define WIDE_ADDRESS_SPACE (UINTPTR_MAX > 0xffffffffu)

#if WIDE_ADDRESS_SPACE
/* A range over 5 GiB: the kernel's per-call limit must not truncate it. */
static void big_range(uint32_t backend)
{
	size_t mib = 5 * 1024 + 4;
	char *base = map_aligned(mib, MAP_NORESERVE);
	struct thp_range r[2] = {
		{ U(base + 2 * MiB), 5 * GiB },
	};
	struct thp_report rep[2];
	struct smaps_info si;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = rep,
		 .backend = backend);
	char *second = map_aligned(4, 0);
	int ret;

	r[1].addr = U(second + 2 * MiB);
	r[1].len = 2 * MiB;
	if (backend == THP_BACKEND_PROCESS_MADVISE && !expect_process_madvise()) {
		check_ranges_refused(r, 1, &o, "5 GiB HUGE, forced process_madvise");
		o.advice = THP_ADVICE_NOHUGE;
		check_ranges_refused(r, 2, &o, "5 GiB + 2 MiB NOHUGE, forced process_madvise");
		/* Nothing advised: the big mapping is still one VMA without hg/nh. */
		ck_assert_int_eq(smaps_lookup(0, r[0].addr, &si), 0);
		ck_assert_msg(si.found && !si.hg && !si.nh && si.start == U(base) &&
			      si.end == U(base) + mib * MiB,
			      "refused 5 GiB request changed the mapping: [0x%llx,0x%llx)%s",
			      (unsigned long long)si.start, (unsigned long long)si.end,
			      si.vmflags);
		assert_vma_unadvised(0, r[1].addr, "refused: second range");
		munmap(base, mib * MiB);
		munmap(second, 4 * MiB);
		return;
	}
	garbage_reports(rep, 2);
	ret = thp_apply_ranges(r, 1, &o);
	ck_assert_msg(ret == 1, "backend %u, 5 GiB: %d (%s)", backend, ret,
		      thp_strerror_detail());
	check_report(&rep[0], r[0].addr, 5 * GiB, 5 * GiB, 0, 0, 0, 1,
		     backend ? backend : o.backend_used, "5 GiB");
	ck_assert_int_eq(smaps_lookup(0, r[0].addr, &si), 0);
	ck_assert_msg(si.hg, "5 GiB range start not hg");
	ck_assert_msg(si.start == r[0].addr && si.end == r[0].addr + 5 * GiB,
		      "hg VMA [0x%llx,0x%llx) does not cover exactly the 5 GiB range "
		      "[0x%llx,0x%llx)", (unsigned long long)si.start,
		      (unsigned long long)si.end, (unsigned long long)r[0].addr,
		      (unsigned long long)(r[0].addr + 5 * GiB));
	assert_vma_unadvised(0, U(base), "below 5 GiB");
	assert_vma_unadvised(0, U(base + 2 * MiB + 5 * GiB), "above 5 GiB");

	/* Two ranges, the first one > 2 GiB: both done, NOHUGE everywhere. */
	o.advice = THP_ADVICE_NOHUGE;
	garbage_reports(rep, 2);
	ret = thp_apply_ranges(r, 2, &o);
	ck_assert_msg(ret == 2, "backend %u, 5 GiB + 2 MiB: %d", backend, ret);
	check_report(&rep[0], r[0].addr, 5 * GiB, 5 * GiB, 0, 0, 0, 1,
		     backend ? backend : o.backend_used, "5 GiB (2)");
	check_report(&rep[1], r[1].addr, 2 * MiB, 2 * MiB, 0, 0, 0, 1,
		     backend ? backend : o.backend_used, "2 MiB after 5 GiB");
	ck_assert_int_eq(smaps_lookup(0, r[0].addr, &si), 0);
	ck_assert_msg(si.nh && !si.hg && si.start == r[0].addr &&
		      si.end == r[0].addr + 5 * GiB, "5 GiB range not nh as one VMA");
	ck_assert(vma_nh(0, r[1].addr));
	assert_vma_unadvised(0, U(second), "below second");

	/*
	 * A hole 3 GiB in, past the first kernel call's 2 GiB: the report
	 * counts what was really advised on both sides of it.
	 */
	ck_assert(munmap((void *)(uintptr_t)(r[0].addr + 3 * GiB), 2 * MiB) == 0);
	o.advice = THP_ADVICE_HUGE;
	garbage_reports(rep, 2);
	ret = thp_apply_ranges(r, 2, &o);
	ck_assert_msg(ret == -ENOMEM, "backend %u, 5 GiB with a hole at 3 GiB: %d", backend,
		      ret);
	check_report(&rep[0], r[0].addr, 5 * GiB, 5 * GiB - 2 * MiB, 2 * MiB,
		     r[0].addr + 3 * GiB, ENOMEM, 1, backend ? backend : o.backend_used,
		     "5 GiB with a hole");
	ck_assert_uint_eq(rep[1].attempted, 0);
	ck_assert_int_eq(smaps_lookup(0, r[0].addr, &si), 0);
	ck_assert_msg(si.hg && si.end == r[0].addr + 3 * GiB, "below the hole not hg");
	ck_assert_int_eq(smaps_lookup(0, r[0].addr + 3 * GiB + 2 * MiB, &si), 0);
	ck_assert_msg(si.hg && si.end == r[0].addr + 5 * GiB, "above the hole not hg");
	ck_assert(vma_nh(0, r[1].addr));
	munmap(base, mib * MiB);
	munmap(second, 4 * MiB);
}

static const uint32_t big_range_backends[] = { THP_BACKEND_PROCESS_MADVISE,
						THP_BACKEND_MADVISE, THP_BACKEND_AUTO };

START_TEST(range_over_2g)
{
	big_range(big_range_backends[_i]);
}
END_TEST
#endif

/* len is rounded up to whole pages as madvise() does. */
START_TEST(len_rounding)
{
	char *base = map_aligned(6, 0);
	struct thp_range r = { U(base + 2 * MiB), 2 * MiB - 100 };
	struct thp_report rep;
	struct smaps_info si;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = &rep);

	garbage_reports(&rep, 1);
	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), 1);
	check_report(&rep, r.addr, 2 * MiB, 2 * MiB, 0, 0, 0, 1, o.backend_used, "rounded");
	ck_assert_int_eq(smaps_lookup(0, r.addr, &si), 0);
	ck_assert(si.hg && si.end == r.addr + 2 * MiB);
	assert_vma_unadvised(0, U(base + 4 * MiB), "above rounded");
	/* len 0 is a no-op success. */
	r.len = 0;
	r.addr = U(base);
	garbage_reports(&rep, 1);
	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), 1);
	ck_assert_uint_eq(rep.bytes_advised, 0);
	ck_assert_int_eq(rep.error, 0);
	assert_vma_unadvised(0, U(base), "len 0");
	munmap(base, 6 * MiB);
}
END_TEST

/*
 * More ranges than one kernel call takes: 1500 single pages, every other
 * page of a 12 MiB mapping.  All advised, nothing in between.
 */
#define MANY 1500
START_TEST(many_ranges)
{
	char *base = map_aligned(12, 0);
	struct thp_range *r = calloc(MANY, sizeof(*r));
	struct thp_report *rep = calloc(MANY, sizeof(*rep));
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = rep);
	int ret;

	ck_assert(r && rep);
	for (size_t i = 0; i < MANY; i++) {
		r[i].addr = U(base) + 2 * 4096 * i;
		r[i].len = 4096;
	}
	ret = thp_apply_ranges(r, MANY, &o);
	ck_assert_msg(ret == MANY, "%d of %d ranges", ret, MANY);
	for (size_t i = 0; i < MANY; i++) {
		ck_assert_msg(rep[i].attempted == 1 && rep[i].bytes_advised == 4096 &&
			      rep[i].error == 0 && rep[i].addr == r[i].addr,
			      "report %zu wrong", i);
	}
	for (size_t i = 0; i < MANY; i += 97) {
		ck_assert_msg(vma_hg(0, r[i].addr), "page %zu not hg", i);
		ck_assert_msg(!vma_hg(0, r[i].addr + 4096), "gap page after %zu hg", i);
	}
	ck_assert(vma_hg(0, r[MANY - 1].addr));
	ck_assert(!vma_hg(0, r[MANY - 1].addr + 4096));
	free(r);
	free(rep);
	munmap(base, 12 * MiB);
}
END_TEST

/* A gap in range 1000 of 1500 (past the first kernel batch). */
START_TEST(many_ranges_late_failure)
{
	char *base = map_aligned(12, 0);
	struct thp_range *r = calloc(MANY, sizeof(*r));
	struct thp_report *rep = calloc(MANY, sizeof(*rep));
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = rep);
	int ret;

	ck_assert(r && rep);
	for (size_t i = 0; i < MANY; i++) {
		r[i].addr = U(base) + 2 * 4096 * i;
		r[i].len = 4096;
	}
	ck_assert(munmap((void *)(uintptr_t)r[1000].addr, 4096) == 0);
	ret = thp_apply_ranges(r, MANY, &o);
	ck_assert_int_eq(ret, -ENOMEM);
	for (size_t i = 0; i < 1000; i++)
		ck_assert_msg(rep[i].attempted == 1 && rep[i].bytes_advised == 4096 &&
			      rep[i].error == 0, "report %zu (before the gap) wrong", i);
	check_report(&rep[1000], r[1000].addr, 4096, 0, 4096, r[1000].addr, ENOMEM, 1,
		     o.backend_used, "range 1000");
	for (size_t i = 1001; i < MANY; i++)
		ck_assert_msg(rep[i].attempted == 0 && rep[i].bytes_advised == 0,
			      "report %zu (after the stop) attempted", i);
	ck_assert(vma_hg(0, r[999].addr));
	ck_assert(!vma_hg(0, r[1001].addr));
	ck_assert(!vma_hg(0, r[MANY - 1].addr));

	/* SKIP_ERRORS: all but the unmapped one... which has no failure but a gap. */
	o.flags = THP_F_SKIP_ERRORS;
	ret = thp_apply_ranges(r, MANY, &o);
	ck_assert_int_eq(ret, MANY);
	ck_assert_uint_eq(rep[1000].bytes_unmapped, 4096);
	ck_assert_int_eq(rep[1000].error, 0);
	ck_assert(vma_hg(0, r[MANY - 1].addr));
	free(r);
	free(rep);
	munmap(base, 12 * MiB);
}
END_TEST

/*
 * A kernel failure on a fully mapped range (here: the VMA split madvise()
 * needs fails because the process is at vm.max_map_count; 6.18 says EAGAIN,
 * older kernels ENOMEM) is a real failure, not an unmapped gap: the report
 * must not claim unmapped bytes, and NO_ERROR_ON_UNMAPPED must not turn it
 * into a success when nothing was advised.
 */
static size_t fill_map_count(char **filler, size_t *filler_len)
{
	/*
	 * Each mprotect() of a page inside the filler adds two VMAs: enough
	 * splits for whatever vm.max_map_count this machine has.
	 */
	unsigned long max_map_count = 0;
	FILE *mc = fopen("/proc/sys/vm/max_map_count", "r");
	size_t pages, splits = 0;
	char *f;

	ck_assert_msg(mc && fscanf(mc, "%lu", &max_map_count) == 1,
		      "cannot read /proc/sys/vm/max_map_count");
	fclose(mc);
	pages = max_map_count / 2 + 1024;
	f = mmap(NULL, pages * 2 * 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	ck_assert(f != MAP_FAILED);
	for (size_t i = 0; i < pages; i++) {
		if (mprotect(f + 2 * 4096 * i + 4096, 4096, PROT_READ) != 0) {
			ck_assert_int_eq(errno, ENOMEM);
			break;
		}
		splits++;
	}
	*filler = f;
	*filler_len = pages * 2 * 4096;
	return splits;
}

START_TEST(kernel_enomem_not_a_gap)
{
	static const uint32_t flag_sets[] = { 0, THP_F_NO_ERROR_ON_UNMAPPED, THP_F_SKIP_ERRORS };
	char *base = map_aligned(6, 0);
	struct thp_range r = { U(base + 2 * MiB), 2 * MiB };
	char *filler;
	size_t filler_len;
	struct smaps_info si;
	int kerr;

	if (under_valgrind()) {
		/*
		 * valgrind tracks every mapping in a fixed table
		 * (VG_N_SEGMENTS) and exits when vm.max_map_count mappings
		 * overflow it: run this case natively instead.
		 */
		munmap(base, 6 * MiB);
		run_tcase_natively("max_map_count");
		return;
	}
	fill_map_count(&filler, &filler_len);
	/* Precondition: the kernel itself refuses (split needs a new VMA). */
	ck_assert_msg(madvise(base + 2 * MiB, 2 * MiB, MADV_HUGEPAGE) == -1 &&
		      (errno == ENOMEM || errno == EAGAIN), "could not reach vm.max_map_count");
	kerr = errno;
	for (size_t f = 0; f < 3; f++) {
		struct thp_report rep;
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = &rep,
			 .flags = flag_sets[f]);
		int ret;

		garbage_reports(&rep, 1);
		ret = thp_apply_ranges(&r, 1, &o);
		ck_assert_int_eq(smaps_lookup(0, r.addr, &si), 0);
		ck_assert(si.found && !si.hg);
		ck_assert_msg(rep.bytes_unmapped == 0,
			      "flags %u: fully mapped range reported %llu bytes unmapped "
			      "(kernel ENOMEM taken for a gap); ret %d", flag_sets[f],
			      (unsigned long long)rep.bytes_unmapped, ret);
		ck_assert_msg(rep.bytes_advised == 0, "flags %u: bytes_advised %llu", flag_sets[f],
			      (unsigned long long)rep.bytes_advised);
		ck_assert_msg(rep.error == kerr && rep.fail_addr == r.addr,
			      "flags %u: error %d (kernel said %d) fail_addr 0x%llx", flag_sets[f],
			      rep.error, kerr, (unsigned long long)rep.fail_addr);
		if (flag_sets[f] & THP_F_SKIP_ERRORS)
			ck_assert_msg(ret == 0, "SKIP_ERRORS: %d ranges claimed done", ret);
		else
			ck_assert_msg(ret == -kerr, "flags %u: returned %d though nothing was "
				      "advised (kernel said %d)", flag_sets[f], ret, kerr);
	}
	munmap(filler, filler_len);
	munmap(base, 6 * MiB);
}
END_TEST

static Suite *ranges_suite(void)
{
	Suite *s = suite_create("apply_ranges");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, require_madvise_mode, NULL);
	tcase_add_test(tc, huge_then_nohuge);
	tcase_add_test(tc, forced_backends);
	tcase_add_test(tc, forced_pmadv_unavailable);
	tcase_add_loop_test(tc, hole, 0, sizeof(hole_cases) / sizeof(hole_cases[0]));
	tcase_add_test(tc, after_a_success);
	tcase_add_test(tc, fully_unmapped_range);
	tcase_add_test(tc, spanning_protections);
	tcase_add_test(tc, collapse_fail_default);
	tcase_add_test(tc, collapse_fail_skip_errors);
	tcase_add_test(tc, collapse_fail_no_error_on_unmapped);
#if WIDE_ADDRESS_SPACE
	tcase_add_loop_test(tc, range_over_2g, 0,
			    sizeof(big_range_backends) / sizeof(big_range_backends[0]));
#endif
	tcase_add_test(tc, len_rounding);
	tcase_add_test(tc, many_ranges);
	tcase_add_test(tc, many_ranges_late_failure);
	suite_add_tcase(s, tc);
#ifndef __SANITIZE_ADDRESS__
	/*
	 * Exhausts vm.max_map_count, which the ASan runtime cannot survive.
	 * A case of its own so that run_tcase_natively() can name it.
	 */
	tc = tcase_create("max_map_count");
	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, require_madvise_mode, NULL);
	tcase_add_test(tc, kernel_enomem_not_a_gap);
	suite_add_tcase(s, tc);
#else
	(void)kernel_enomem_not_a_gap;
#endif
	return s;
}

int main(void)
{
	return run_suite(ranges_suite());
}
