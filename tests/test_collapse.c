// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * THP_ADVICE_COLLAPSE reports, extent by extent.  The kernel collapses
 * only whole PMD-size (2 MiB) aligned extents inside one mapping, and a
 * call over several extents stops at the first one it cannot collapse (an
 * empty extent is enough) without saying which.  A report must credit
 * exactly the extents that are huge after the call, name the extent that
 * failed, and be the same through every backend.  Huge pages are credited
 * to a call only from a before/after comparison of AnonHugePages, and the
 * contents of the memory must not change.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <thp/thp.h>

#include "helpers.h"
#include "compat.h" /* MADV_COLLAPSE */

/* The cases over 4 GiB of address space exist on 64-bit builds only. */
#define WIDE_ADDRESS_SPACE (UINTPTR_MAX > 0xffffffffu)

#define U(p) ((uint64_t)(uintptr_t)(p))
/* Checksum of the readable bytes of [p, p+len): contents must survive a collapse. */
static uint64_t checksum(const void *p, size_t len)
{
	const uint64_t *w = p;
	uint64_t h = 1469598103934665603ULL;

	for (size_t i = 0; i < len / sizeof(*w); i++)
		h = (h ^ w[i]) * 1099511628211ULL;
	return h;
}

/* One word per page, so that every page is populated and the checksum sees it. */
static void fill(char *p, size_t len, uint64_t seed)
{
	for (size_t off = 0; off < len; off += 4096)
		*(uint64_t *)(p + off) = seed * 0x9e3779b97f4a7c15ULL + off + 1;
}

static void check_report(const struct thp_report *r, uint64_t addr, uint64_t len,
			 uint64_t advised, uint64_t unmapped, uint64_t fail_addr, int error,
			 const char *what)
{
	ck_assert_msg(r->addr == addr && r->len == len, "%s: report range 0x%" PRIx64 "+0x%"
		      PRIx64 ", expected 0x%" PRIx64 "+0x%" PRIx64, what, r->addr, r->len, addr,
		      len);
	ck_assert_msg(r->bytes_advised == advised, "%s: bytes_advised 0x%" PRIx64
		      ", expected 0x%" PRIx64, what, r->bytes_advised, advised);
	ck_assert_msg(r->bytes_unmapped == unmapped, "%s: bytes_unmapped 0x%" PRIx64
		      ", expected 0x%" PRIx64, what, r->bytes_unmapped, unmapped);
	ck_assert_msg(r->fail_addr == fail_addr, "%s: fail_addr 0x%" PRIx64 ", expected 0x%"
		      PRIx64, what, r->fail_addr, fail_addr);
	ck_assert_msg(r->error == error, "%s: error %d, expected %d", what, r->error, error);
	ck_assert_msg(r->attempted == 1, "%s: not attempted", what);
}

/* The range backends the kernel offers for the own process, then auto. */
static size_t self_backends(uint32_t *list)
{
	struct thp_probe_info pi = { .sz = sizeof(pi) };
	static const uint32_t cand[] = { THP_BACKEND_PMADV, THP_BACKEND_PROCESS_MADVISE,
					 THP_BACKEND_MADVISE };
	size_t n = 0;

	ck_assert_int_eq(thp_probe(&pi), 0);
	for (size_t i = 0; i < 3; i++)
		if (pi.backends & (1u << cand[i]))
			list[n++] = cand[i];
	/* process_madvise() takes COLLAPSE on self even where the probe omits it (< 6.13). */
	if (expect_process_madvise() && !(pi.backends & (1u << THP_BACKEND_PROCESS_MADVISE)))
		list[n++] = THP_BACKEND_PROCESS_MADVISE;
	list[n++] = THP_BACKEND_AUTO;
	return n;
}

/*
 * 8 MiB, the last extent never touched: the kernel collapses the first
 * three and fails the fourth with EINVAL.  The report credits 6 MiB and
 * names the fourth extent; with the first extent empty instead, SKIP_ERRORS
 * goes on past it and collapses the other three.
 */
START_TEST(empty_extent_last_and_first)
{
	uint32_t be[4];
	size_t nb = self_backends(be);

	for (size_t b = 0; b < nb; b++) {
		char *m = map_aligned(8, 0);
		struct thp_range r = { U(m), 8 * MiB };
		struct thp_report rep;
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .reports = &rep,
			 .backend = be[b]);
		uint64_t before, sum;
		int ret;

		fill(m, 6 * MiB, 1);
		sum = checksum(m, 6 * MiB);
		before = range_anon_huge(0, U(m), 8 * MiB);
		ret = thp_apply_ranges(&r, 1, &o);
		ck_assert_msg(ret == -EINVAL, "%s, last extent empty: %d, expected -EINVAL",
			      thp_backend_name(be[b]), ret);
		check_report(&rep, U(m), 8 * MiB, 6 * MiB, 0, U(m) + 6 * MiB, EINVAL,
			     "last extent empty");
		ck_assert_msg(range_anon_huge(0, U(m), 8 * MiB) == 6 * MiB,
			      "%s: AnonHugePages %" PRIu64 " (before %" PRIu64 "), expected 6 MiB",
			      thp_backend_name(be[b]), range_anon_huge(0, U(m), 8 * MiB), before);
		ck_assert_msg(checksum(m, 6 * MiB) == sum, "contents changed");
		munmap(m, 8 * MiB);

		m = map_aligned(8, 0);
		r.addr = U(m);
		fill(m + 2 * MiB, 6 * MiB, 2);
		sum = checksum(m + 2 * MiB, 6 * MiB);
		before = range_anon_huge(0, U(m), 8 * MiB);
		ret = thp_apply_ranges(&r, 1, &o);
		ck_assert_msg(ret == -EINVAL, "first extent empty: %d", ret);
		check_report(&rep, U(m), 8 * MiB, 0, 0, U(m), EINVAL, "first extent empty");
		ck_assert_uint_eq(range_anon_huge(0, U(m), 8 * MiB), before);

		o.flags = THP_F_SKIP_ERRORS;
		ret = thp_apply_ranges(&r, 1, &o);
		ck_assert_msg(ret == 0, "first extent empty, SKIP_ERRORS: %d", ret);
		check_report(&rep, U(m), 8 * MiB, 6 * MiB, 0, U(m), EINVAL,
			     "first extent empty, SKIP_ERRORS");
		ck_assert_msg(range_anon_huge(0, U(m), 8 * MiB) == 6 * MiB,
			      "SKIP_ERRORS: AnonHugePages %" PRIu64 ", expected 6 MiB",
			      range_anon_huge(0, U(m), 8 * MiB));
		ck_assert_msg(checksum(m + 2 * MiB, 6 * MiB) == sum, "contents changed");
		munmap(m, 8 * MiB);
	}
}
END_TEST

/*
 * Unaligned head and tail: the kernel collapses only the whole extents
 * inside the range.  3 MiB from +1 MiB: [+2M,+4M) only; 1 MiB from +1M
 * touches the extent boundary at +2M and succeeds with nothing to do.
 */
START_TEST(unaligned_head_tail)
{
	char *m = map_aligned(8, 0);
	struct thp_range r = { U(m) + 1 * MiB, 3 * MiB };
	struct thp_report rep;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .reports = &rep);
	uint64_t before, after, sum;
	int ret;

	fill(m, 8 * MiB, 3);
	sum = checksum(m, 8 * MiB);
	before = range_anon_huge(0, U(m), 8 * MiB);
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_msg(ret == 1, "3 MiB from +1M: %d (%s)", ret, thp_strerror_detail());
	check_report(&rep, r.addr, 3 * MiB, 2 * MiB, 0, 0, 0, "3 MiB from +1M");
	after = range_anon_huge(0, U(m), 8 * MiB);
	ck_assert_msg(after >= 2 * MiB && after - before <= 2 * MiB,
		      "AnonHugePages %" PRIu64 " (before %" PRIu64 "), expected the extent at +2M",
		      after, before);

	/* Touching no whole extent: nothing to credit, and no error. */
	r.addr = U(m) + 5 * MiB;
	r.len = 1 * MiB;
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_msg(ret == 1, "1 MiB to +6M: %d", ret);
	check_report(&rep, r.addr, 1 * MiB, 0, 0, 0, 0, "1 MiB to +6M");

	/* Inside one extent, at no boundary: the kernel alone would say EINVAL (thp_model seed 9). */
	r.addr = U(m) + 5 * MiB;
	r.len = 512 * KiB;
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_msg(ret == 1, "512 KiB at +5M: %d (%s)", ret, thp_strerror_detail());
	check_report(&rep, r.addr, 512 * KiB, 0, 0, 0, 0, "512 KiB at +5M");
	ck_assert_msg(checksum(m, 8 * MiB) == sum, "contents changed");
	munmap(m, 8 * MiB);
}
END_TEST

/*
 * A mapping boundary inside an extent: [0,3M) plain, [3M,6M) hg.  The
 * kernel collapses [0,2M) and [4M,6M) and succeeds; the extent [2M,4M) is
 * in two mappings and is never collapsed, so it is not credited.
 */
START_TEST(mapping_boundary_inside_extent)
{
	char *m = map_aligned(6, 0);
	struct thp_range r = { U(m), 6 * MiB };
	struct thp_report rep;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .reports = &rep);
	uint64_t sum;
	int ret;

	must_madvise(m + 3 * MiB, 3 * MiB, MADV_HUGEPAGE);
	fill(m, 6 * MiB, 4);
	sum = checksum(m, 6 * MiB);
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_msg(ret == 1, "straddled extent: %d (%s)", ret, thp_strerror_detail());
	check_report(&rep, U(m), 6 * MiB, 4 * MiB, 0, 0, 0, "straddled extent");
	ck_assert_msg(range_anon_huge(0, U(m), 6 * MiB) == 4 * MiB,
		      "AnonHugePages %" PRIu64 ", expected 4 MiB", range_anon_huge(0, U(m), 6 * MiB));
	ck_assert_msg(checksum(m, 6 * MiB) == sum, "contents changed");
	munmap(m, 6 * MiB);
}
END_TEST

/*
 * mapping, failing (nh) mapping, hole, mapping: a stop at the nh mapping
 * still counts the hole after it in bytes_unmapped.
 */
START_TEST(unmapped_after_stop)
{
	static const uint32_t flag_sets[] = { 0, THP_F_NO_ERROR_ON_UNMAPPED, THP_F_SKIP_ERRORS };

	for (size_t f = 0; f < 3; f++) {
		char *m = map_aligned(8, 0);
		struct thp_range r = { U(m), 8 * MiB };
		struct thp_report rep;
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .reports = &rep,
			 .flags = flag_sets[f]);
		bool skip = flag_sets[f] & THP_F_SKIP_ERRORS;
		uint64_t last_before;
		int ret;

		must_madvise(m + 2 * MiB, 2 * MiB, MADV_NOHUGEPAGE);
		fill(m, 8 * MiB, 5);
		ck_assert(munmap(m + 4 * MiB, 2 * MiB) == 0);
		last_before = vma_anon_huge(0, U(m) + 6 * MiB);
		ret = thp_apply_ranges(&r, 1, &o);
		ck_assert_msg(ret == (skip ? 0 : -EINVAL), "flags %u: %d", flag_sets[f], ret);
		check_report(&rep, U(m), 8 * MiB, skip ? 4 * MiB : 2 * MiB, 2 * MiB,
			     U(m) + 2 * MiB, EINVAL, "nh mapping, then a hole");
		ck_assert_uint_eq(vma_anon_huge(0, U(m)), 2 * MiB);
		ck_assert_uint_eq(vma_anon_huge(0, U(m) + 6 * MiB), skip ? 2 * MiB : last_before);
		munmap(m, 8 * MiB);
	}
}
END_TEST

/*
 * SKIP_ERRORS in one mapping with empty extents between populated ones:
 * every populated extent after the first failure is still collapsed and
 * credited, in a small mapping and in a sparse 64 GiB one (where libthp
 * passes over the empty extents instead of asking the kernel about each).
 */
START_TEST(skip_errors_sparse_mapping)
{
	static const char pattern[] = "FeFeeFpe";
	char *m = map_aligned(16, 0);
	struct thp_range r = { U(m), 16 * MiB };
	struct thp_report rep;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .reports = &rep,
		 .flags = THP_F_SKIP_ERRORS);
	uint64_t before;
	int ret;

	for (int i = 0; i < 8; i++) {
		if (pattern[i] == 'F')
			fill(m + i * PMD_SZ, PMD_SZ, 7);
		else if (pattern[i] == 'p')
			fill(m + i * PMD_SZ + 8 * 4096, 4 * 4096, 7);
	}
	before = range_anon_huge(0, U(m), 16 * MiB);
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_msg(ret == 0, "FeFeeFpe, SKIP_ERRORS: %d", ret);
	check_report(&rep, U(m), 16 * MiB, 8 * MiB, 0, U(m) + 2 * MiB, EINVAL, "FeFeeFpe");
	ck_assert_msg(range_anon_huge(0, U(m), 16 * MiB) == 8 * MiB,
		      "AnonHugePages %" PRIu64 " (before %" PRIu64 "), expected 8 MiB",
		      range_anon_huge(0, U(m), 16 * MiB), before);
	munmap(m, 16 * MiB);

#if WIDE_ADDRESS_SPACE
	{
		static const uint64_t sparse_off[] = { 2 * MiB, 1 * GiB, 40 * GiB + 6 * MiB,
						       64 * GiB - 2 * MiB };

		m = map_aligned(64 * 1024, MAP_NORESERVE);
		r.addr = U(m);
		r.len = 64 * GiB;
		for (size_t i = 0; i < 4; i++)
			fill(m + sparse_off[i], PMD_SZ, 8);
		ret = thp_apply_ranges(&r, 1, &o);
		ck_assert_msg(ret == 0, "sparse 64 GiB, SKIP_ERRORS: %d", ret);
		check_report(&rep, U(m), 64 * GiB, 8 * MiB, 0, U(m), EINVAL, "sparse 64 GiB");
		ck_assert_msg(vma_anon_huge(0, U(m)) == 8 * MiB,
			      "sparse: AnonHugePages %" PRIu64, vma_anon_huge(0, U(m)));
		munmap(m, 64 * GiB);
	}
#endif
}
END_TEST

/* thp_apply_all(): a mapping that fails at a later extent still counts what collapsed. */
START_TEST(apply_all_counts_collapsed)
{
	char *m = map_aligned(8, 0);
	struct thp_report fail[256];
	THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_COLLAPSE,
		 .flags = THP_F_SKIP_ERRORS, .failures = fail, .failures_cap = 256);
	const struct thp_report *ours = NULL;
	int ret;

	fill(m, 6 * MiB, 6);
	ret = thp_apply_all(&o);
	ck_assert_msg(ret >= 0, "thp_apply_all: %d (%s)", ret, thp_strerror_detail());
	ck_assert(o.failures_needed <= 256);
	for (size_t i = 0; i < o.failures_needed; i++)
		if (fail[i].addr <= U(m) && fail[i].addr + fail[i].len > U(m))
			ours = &fail[i];
	ck_assert_msg(ours != NULL, "the mapping with an empty extent is not reported");
	ck_assert_msg(ours->addr == U(m) && ours->len == 8 * MiB,
		      "entry 0x%" PRIx64 "+0x%" PRIx64 ", expected the mapping", ours->addr,
		      ours->len);
	ck_assert_msg(ours->fail_addr == U(m) + 6 * MiB && ours->error == EINVAL,
		      "entry fails at 0x%" PRIx64 " (%d), expected the empty extent +6M",
		      ours->fail_addr, ours->error);
	ck_assert_uint_eq(vma_anon_huge(0, U(m)), 6 * MiB);
	ck_assert_msg(o.bytes_advised >= 6 * MiB, "bytes_advised %" PRIu64
		      " leaves out the 6 MiB collapsed in a failed mapping", o.bytes_advised);
	munmap(m, 8 * MiB);
}
END_TEST

#if WIDE_ADDRESS_SPACE
/*
 * One range over 2 GiB, populated, its last extent empty: process_madvise()
 * takes 2 GiB - 4 KiB a call, but every extent up to the empty one must be
 * collapsed, the report must say 2 GiB + 2 MiB advised and name the empty
 * extent, and thp_apply_all() must name the mapping and the same extent.
 */
START_TEST(over_2g)
{
	const size_t len = 2 * GiB + 4 * MiB;
	char *m;
	struct thp_range r;
	struct thp_report rep, fail[256];
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .reports = &rep,
		 .backend = expect_process_madvise() ? THP_BACKEND_PROCESS_MADVISE
						     : THP_BACKEND_MADVISE);
	THP_OPTS(thp_apply_all_opts, ao, .advice = THP_ADVICE_COLLAPSE,
		 .flags = THP_F_SKIP_ERRORS, .failures = fail, .failures_cap = 256,
		 .backend = o.backend);
	const struct thp_report *ours = NULL;
	uint64_t before;
	int ret;

	if (under_valgrind()) {
		run_tcase_natively("over_2g");
		return;
	}
	m = map_aligned(len / MiB, MAP_NORESERVE);
	r.addr = U(m);
	r.len = len;
	memset(m, 0x5a, len - 2 * MiB);
	before = vma_anon_huge(0, U(m));
	ret = thp_apply_ranges(&r, 1, &o);
	ck_assert_msg(ret == -EINVAL, "%s: %d (%s), advised 0x%" PRIx64 " fail at +0x%" PRIx64
		      " error %d", thp_backend_name(o.backend), ret, thp_strerror_detail(),
		      rep.bytes_advised, rep.fail_addr - U(m), rep.error);
	check_report(&rep, U(m), len, len - 2 * MiB, 0, U(m) + len - 2 * MiB, EINVAL,
		     "over 2 GiB");
	ck_assert_msg(vma_anon_huge(0, U(m)) == len - 2 * MiB,
		      "AnonHugePages %" PRIu64 " (before %" PRIu64 "), expected %" PRIu64,
		      vma_anon_huge(0, U(m)), before, (uint64_t)(len - 2 * MiB));
	for (size_t off = 0; off < len - 2 * MiB; off += 4096)
		if (m[off] != 0x5a)
			ck_abort_msg("contents changed at +0x%zx", off);

	ret = thp_apply_all(&ao);
	ck_assert_msg(ret >= 0, "thp_apply_all: %d", ret);
	for (size_t i = 0; i < ao.failures_needed && i < 256; i++)
		if (fail[i].addr <= U(m) + len - 1 && fail[i].addr + fail[i].len > U(m))
			ours = &fail[i];
	ck_assert_msg(ours != NULL, "the 2 GiB mapping is not reported");
	ck_assert_msg(ours->addr == U(m) && ours->len == len &&
		      ours->fail_addr == U(m) + len - 2 * MiB && ours->error == EINVAL,
		      "entry 0x%" PRIx64 "+0x%" PRIx64 " fails at 0x%" PRIx64 " (%d), expected "
		      "the mapping 0x%" PRIx64 " failing at its last extent", ours->addr,
		      ours->len, ours->fail_addr, ours->error, U(m));
	munmap(m, len);
}
END_TEST
#endif

/* ---- randomized: layouts of 2 MiB extents, every backend, a model ---- */

enum ext_kind { EXT_HOLE, EXT_EMPTY, EXT_PARTIAL, EXT_FULL, EXT_HUGE, EXT_NH, EXT_KINDS };
static const char ext_char[EXT_KINDS] = { '_', 'e', 'p', 'F', 'H', 'n' };

#define NR_EXT 10
#define MAX_RANGES 3

struct scenario {
	enum ext_kind kind[NR_EXT];
	unsigned nr_ranges;
	uint64_t off[MAX_RANGES], len[MAX_RANGES]; /* from the layout base */
	uint32_t flags;
};

struct result {
	int ret;
	struct thp_report rep[MAX_RANGES]; /* addresses base-relative, backend cleared */
	uint64_t huge[NR_EXT];             /* AnonHugePages of each extent after */
};

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state % n);
}

static char scenario_text[512];

static void describe(const struct scenario *s, uint64_t seed)
{
	size_t n = (size_t)snprintf(scenario_text, sizeof(scenario_text), "seed %" PRIu64
				    " (THP_TEST_SEED=%" PRIu64 " replays it), flags %u, extents ",
				    seed, seed, s->flags);

	for (int i = 0; i < NR_EXT; i++)
		scenario_text[n++] = ext_char[s->kind[i]];
	for (unsigned i = 0; i < s->nr_ranges; i++)
		n += (size_t)snprintf(scenario_text + n, sizeof(scenario_text) - n,
				      ", range +0x%" PRIx64 "+0x%" PRIx64, s->off[i], s->len[i]);
}

static void make_scenario(struct scenario *s)
{
	static const uint32_t flag_sets[] = { 0, THP_F_SKIP_ERRORS, THP_F_NO_ERROR_ON_UNMAPPED };
	uint64_t pos = 0, end = NR_EXT * PMD_SZ;

	for (int i = 0; i < NR_EXT; i++)
		s->kind[i] = (enum ext_kind)rnd(EXT_KINDS);
	s->flags = flag_sets[rnd(3)];
	s->nr_ranges = 1 + rnd(MAX_RANGES);
	for (unsigned i = 0; i < s->nr_ranges; i++) {
		/* Disjoint, in order, page aligned, often not extent aligned. */
		uint64_t room = (end - pos) / 4096;
		uint64_t a = pos / 4096 + (room > 1 ? rnd((uint32_t)(room / 2)) : 0);
		uint64_t b;

		if (rnd(2))
			a = (a * 4096 + PMD_SZ - 1) / PMD_SZ * PMD_SZ / 4096;
		if (a * 4096 >= end) {
			s->nr_ranges = i;
			break;
		}
		b = a + 1 + rnd((uint32_t)((end / 4096 - a) / (s->nr_ranges - i)));
		if (rnd(2) && b * 4096 % PMD_SZ)
			b = (b * 4096 + PMD_SZ - 1) / PMD_SZ * PMD_SZ / 4096;
		if (b * 4096 > end)
			b = end / 4096;
		s->off[i] = a * 4096;
		s->len[i] = (b - a) * 4096;
		pos = b * 4096;
	}
}

/*
 * Build the layout: each extent its own mapping (even ones read/write, odd
 * ones read-only, so neighbours never merge), contents from the seed.
 */
static char *build(const struct scenario *s, uint64_t seed, uint64_t *sum)
{
	char *m = map_aligned(NR_EXT * 2, 0);

	/*
	 * A mapping never written has no anon_vma, and the kernel refuses
	 * COLLAPSE anywhere in it; one write before the splits gives every
	 * piece one.  Only extent 0 gets a page table from it.
	 */
	m[0] = 1;
	if (s->kind[0] == EXT_EMPTY)
		must_madvise(m, 4096, MADV_DONTNEED);
	*sum = 0;
	for (int i = 0; i < NR_EXT; i++) {
		char *e = m + i * PMD_SZ;

		switch (s->kind[i]) {
		case EXT_HOLE:
			ck_assert(munmap(e, PMD_SZ) == 0);
			continue;
		case EXT_EMPTY:
			break;
		case EXT_PARTIAL:
			fill(e + 64 * 4096, 16 * 4096, seed + (uint64_t)i);
			break;
		case EXT_FULL:
			fill(e, PMD_SZ, seed + (uint64_t)i);
			break;
		case EXT_HUGE:
			fill(e, PMD_SZ, seed + (uint64_t)i);
			must_collapse(e, PMD_SZ);
			break;
		case EXT_NH:
			fill(e, PMD_SZ, seed + (uint64_t)i);
			must_madvise(e, PMD_SZ, MADV_NOHUGEPAGE);
			break;
		default:
			break;
		}
		if (i % 2)
			ck_assert(mprotect(e, PMD_SZ, PROT_READ) == 0);
		/* Reading an empty extent would map the zero page: then it collapses. */
		if (s->kind[i] != EXT_EMPTY)
			*sum = *sum * 31 + checksum(e, PMD_SZ);
	}
	return m;
}

/*
 * What the report must say, from the kernel's rules: each extent is its
 * own mapping; a whole extent collapses unless it is empty or nh; a part
 * of an extent is refused (EINVAL) when nh, or when it touches neither of
 * the extent's boundaries, and is otherwise left alone without error.
 */
static void model(const struct scenario *s, struct result *want)
{
	bool skip = s->flags & THP_F_SKIP_ERRORS;
	bool gaps_ok = s->flags & (THP_F_SKIP_ERRORS | THP_F_NO_ERROR_ON_UNMAPPED);
	bool stop = false;
	int ok = 0;

	memset(want, 0, sizeof(*want));
	for (unsigned i = 0; i < s->nr_ranges; i++) {
		struct thp_report *r = &want->rep[i];
		uint64_t a = s->off[i], b = a + s->len[i];
		bool stopped = false;

		r->addr = a;
		r->len = s->len[i];
		if (stop)
			continue;
		r->attempted = 1;
		for (uint64_t e = a / PMD_SZ * PMD_SZ; e < b; e += PMD_SZ) {
			uint64_t ps = e > a ? e : a, pe = e + PMD_SZ < b ? e + PMD_SZ : b;
			bool whole = ps == e && pe == e + PMD_SZ;
			enum ext_kind k = s->kind[e / PMD_SZ];
			bool fails;

			if (k == EXT_HOLE) {
				r->bytes_unmapped += pe - ps;
				if (!gaps_ok && !r->error) {
					r->error = ENOMEM;
					r->fail_addr = ps;
				}
				continue;
			}
			if (stopped)
				continue;
			/* A part of an extent is never collapsed and no error (thp.h). */
			if (!whole)
				continue;
			fails = k == EXT_EMPTY || k == EXT_NH;
			if (!fails) {
				r->bytes_advised += whole ? PMD_SZ : 0;
				continue;
			}
			/* The first real failure wins, also over an earlier gap. */
			if (!r->error || r->error == ENOMEM) {
				r->error = EINVAL;
				r->fail_addr = ps;
			}
			if (!skip)
				stopped = true;
		}
		if (!r->error)
			ok++;
		else if (!skip) {
			want->ret = -r->error;
			stop = true;
		}
	}
	if (!stop)
		want->ret = ok;
}

static void run_one(const struct scenario *s, uint64_t seed, uint32_t backend,
		    struct result *out)
{
	struct thp_range ranges[MAX_RANGES];
	uint64_t before[NR_EXT], sum, sum_after = 0;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .flags = s->flags,
		 .backend = backend, .reports = out->rep);
	char *m = build(s, seed, &sum);

	for (int i = 0; i < NR_EXT; i++)
		before[i] = s->kind[i] == EXT_HOLE ? 0 : vma_anon_huge(0, U(m) + i * PMD_SZ);
	for (unsigned i = 0; i < s->nr_ranges; i++) {
		ranges[i].addr = U(m) + s->off[i];
		ranges[i].len = s->len[i];
	}
	memset(out, 0, sizeof(*out));
	out->ret = thp_apply_ranges(ranges, s->nr_ranges, &o);
	for (unsigned i = 0; i < s->nr_ranges; i++) {
		struct thp_report *r = &out->rep[i];

		ck_assert_msg(!r->attempted || r->backend == o.backend_used, "%s: backend %u",
			      scenario_text, r->backend);
		r->backend = 0;
		r->addr -= U(m);
		if (r->fail_addr)
			r->fail_addr -= U(m);
	}
	for (int i = 0; i < NR_EXT; i++) {
		char *e = m + i * PMD_SZ;

		if (s->kind[i] == EXT_HOLE)
			continue;
		out->huge[i] = vma_anon_huge(0, U(e));
		if (s->kind[i] != EXT_EMPTY)
			sum_after = sum_after * 31 + checksum(e, PMD_SZ);
		/* Nothing un-collapses; an extent that was not touched stays as it was. */
		ck_assert_msg(out->huge[i] >= before[i], "%s: extent %d lost huge pages",
			      scenario_text, i);
	}
	ck_assert_msg(sum_after == sum, "%s, backend %s: contents changed", scenario_text,
		      thp_backend_name(backend));
	/* Credited bytes are huge now: per range, AnonHugePages of its whole extents. */
	for (unsigned i = 0; i < s->nr_ranges; i++) {
		uint64_t huge = 0;

		for (uint64_t e = (s->off[i] + PMD_SZ - 1) / PMD_SZ * PMD_SZ;
		     e + PMD_SZ <= s->off[i] + s->len[i]; e += PMD_SZ)
			huge += out->huge[e / PMD_SZ];
		ck_assert_msg(out->rep[i].bytes_advised <= huge,
			      "%s, backend %s: range %u credits %" PRIu64 " bytes, %" PRIu64
			      " are huge", scenario_text, thp_backend_name(backend), i,
			      out->rep[i].bytes_advised, huge);
	}
	/* Extents outside every range, and past a stop, are untouched. */
	for (int i = 0; i < NR_EXT; i++) {
		bool credited = false;

		for (unsigned k = 0; k < s->nr_ranges; k++)
			if (out->rep[k].attempted && (uint64_t)i * PMD_SZ >= s->off[k] &&
			    (uint64_t)(i + 1) * PMD_SZ <= s->off[k] + s->len[k])
				credited = true;
		if (!credited)
			ck_assert_msg(out->huge[i] == before[i], "%s, backend %s: extent %d "
				      "changed outside the ranges advised", scenario_text,
				      thp_backend_name(backend), i);
	}
	munmap(m, NR_EXT * PMD_SZ);
}

static void report_text(const struct result *r, unsigned n, char *buf, size_t len)
{
	size_t k = (size_t)snprintf(buf, len, "ret %d", r->ret);

	for (unsigned i = 0; i < n && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, " {+%" PRIx64 " len %" PRIx64 " adv %"
				      PRIx64 " unm %" PRIx64 " fail +%" PRIx64 " err %d att %u}",
				      r->rep[i].addr, r->rep[i].len, r->rep[i].bytes_advised,
				      r->rep[i].bytes_unmapped, r->rep[i].fail_addr,
				      r->rep[i].error, r->rep[i].attempted);
}

START_TEST(randomized)
{
	const char *env = getenv("THP_TEST_SEED");
	uint64_t seed0 = env ? strtoull(env, NULL, 0) : (uint64_t)time(NULL);
	unsigned iters = env ? 1 : scaled(20, 3);
	uint32_t be[4];
	size_t nb = self_backends(be);

	for (unsigned it = 0; it < iters; it++) {
		uint64_t seed = seed0 + it;
		struct scenario s;
		struct result want, got;
		char a[1024], b[1024];

		rng_state = seed * 2654435761ULL + 1;
		memset(&s, 0, sizeof(s));
		make_scenario(&s);
		describe(&s, seed);
		model(&s, &want);
		for (size_t k = 0; k < nb; k++) {
			run_one(&s, seed, be[k], &got);
			report_text(&want, s.nr_ranges, a, sizeof(a));
			report_text(&got, s.nr_ranges, b, sizeof(b));
			ck_assert_msg(got.ret == want.ret &&
				      !memcmp(got.rep, want.rep, sizeof(want.rep)),
				      "%s\n  backend %s: %s\n  expected: %s", scenario_text,
				      thp_backend_name(be[k]), b, a);
		}
	}
}
END_TEST

/* 64 GiB of MAP_NORESERVE address space is more than valgrind gives a process. */
NATIVE_TCASE_TEST(sparse_natively, "sparse")

static Suite *collapse_suite(void)
{
	Suite *s = suite_create("collapse");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, empty_extent_last_and_first);
	tcase_add_test(tc, unaligned_head_tail);
	tcase_add_test(tc, mapping_boundary_inside_extent);
	tcase_add_test(tc, unmapped_after_stop);
	tcase_add_test(tc, apply_all_counts_collapsed);
	tcase_add_test(tc, randomized);
	suite_add_tcase(s, tc);
	tc = tcase_create("sparse");
	tcase_set_timeout(tc, 120);
	if (under_valgrind())
		tcase_add_test(tc, sparse_natively);
	else
		tcase_add_test(tc, skip_errors_sparse_mapping);
	suite_add_tcase(s, tc);
	/* 2.2 GiB populated: a case of its own, run natively under valgrind. */
#if WIDE_ADDRESS_SPACE
	tc = tcase_create("over_2g");
	tcase_set_timeout(tc, 240);
	tcase_add_test(tc, over_2g);
	suite_add_tcase(s, tc);
#endif
	return s;
}

int main(void)
{
	return run_suite(collapse_suite());
}
