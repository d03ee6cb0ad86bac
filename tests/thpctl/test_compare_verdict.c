// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpctl compare's statistics and verdicts (tools/thpctl/compare_stats.c)
 * on recorded figures: wins in every pair, mixed pairs, ties, missing
 * counters, too few pairs.  A verdict may come only from pairs that all
 * agree.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>

#include "compare.h"
#include "../helpers.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct verdict_case {
	const char *name;
	double base[6], other[6];
	size_t n;
	enum compare_verdict_kind kind;
	size_t pairs;
	double ratio_median, ratio_min, ratio_max; /* NAN: no ratio */
} verdict_cases[] = {
	/* The demo's tlb_workload populate times: huge faster in every pair. */
	{ "lower_every", { 1.20, 1.31, 1.25, 1.22, 1.28 }, { 0.30, 0.33, 0.29, 0.31, 0.35 }, 5, VERDICT_LOWER_EVERY, 5, 0.25190839694656486, 0.232, 0.2734375 },
	{ "higher_every", { 10, 10, 10 }, { 11, 12, 30 }, 3, VERDICT_HIGHER_EVERY, 3, 1.2, 1.1, 3.0 },
	/* Reads on a VM: faster in three pairs, slower in two. */
	{ "mixed", { 2.0, 2.0, 2.0, 2.0, 2.0 }, { 1.9, 2.1, 1.8, 2.2, 1.95 }, 5, VERDICT_NO_DIFFERENCE, 5, 0.975, 0.9, 1.1 },
	/* One tie among wins is not "every pair". */
	{ "tie_among_wins", { 5, 5, 5, 5 }, { 4, 5, 4, 4 }, 4, VERDICT_NO_DIFFERENCE, 4, 0.8, 0.8, 1.0 },
	{ "same_every", { 0, 0, 0 }, { 0, 0, 0 }, 3, VERDICT_SAME, 3, NAN, NAN, NAN },
	{ "same_nonzero", { 7, 8 }, { 7, 8 }, 2, VERDICT_SAME, 2, 1.0, 1.0, 1.0 },
	/* Counters missing in every run (a VM): no verdict, no ratio. */
	{ "missing_counters", { NAN, NAN, NAN }, { NAN, NAN, NAN }, 3, VERDICT_TOO_FEW, 0, NAN, NAN, NAN },
	/* A counter missing in one run: that pair is left out, the rest agree. */
	{ "one_pair_missing", { 100, NAN, 100, 100 }, { 50, 40, 60, 70 }, 4, VERDICT_LOWER_EVERY, 3, 0.6, 0.5, 0.7 },
	/* One pair is one run per policy: never a verdict. */
	{ "single_pair", { 2.0 }, { 1.0 }, 1, VERDICT_TOO_FEW, 1, 0.5, 0.5, 0.5 },
	/* Base zero (no huge bytes under never): higher, but no ratio. */
	{ "base_zero", { 0, 0, 0 }, { 2097152, 4194304, 2097152 }, 3, VERDICT_HIGHER_EVERY, 3, NAN, NAN, NAN },
};

static void check_close(const char *name, const char *what, double got, double want)
{
	if (isnan(want))
		ck_assert_msg(isnan(got), "%s: %s is %g, expected none", name, what, got);
	else
		ck_assert_msg(fabs(got - want) < 1e-9 * (fabs(want) + 1),
			      "%s: %s is %.12g, expected %.12g", name, what, got, want);
}

START_TEST(verdicts)
{
	const struct verdict_case *c = &verdict_cases[_i];
	struct compare_verdict v;

	compare_verdict(c->base, c->other, c->n, &v);
	ck_assert_msg(v.kind == c->kind, "%s: verdict %s, expected %s", c->name,
		      compare_verdict_name(v.kind), compare_verdict_name(c->kind));
	ck_assert_msg(v.pairs == c->pairs, "%s: %zu pairs used, expected %zu", c->name, v.pairs,
		      c->pairs);
	check_close(c->name, "ratio median", v.ratio_median, c->ratio_median);
	check_close(c->name, "ratio min", v.ratio_min, c->ratio_min);
	check_close(c->name, "ratio max", v.ratio_max, c->ratio_max);
}
END_TEST

/* Swapping base and other swaps lower and higher: the verdict has no side. */
START_TEST(verdicts_mirror)
{
	const struct verdict_case *c = &verdict_cases[_i];
	struct compare_verdict v;
	enum compare_verdict_kind want = c->kind == VERDICT_LOWER_EVERY ? VERDICT_HIGHER_EVERY : c->kind == VERDICT_HIGHER_EVERY ? VERDICT_LOWER_EVERY
																 : c->kind;

	compare_verdict(c->other, c->base, c->n, &v);
	ck_assert_msg(v.kind == want, "%s mirrored: verdict %s, expected %s", c->name,
		      compare_verdict_name(v.kind), compare_verdict_name(want));
}
END_TEST

START_TEST(stats)
{
	static const struct {
		const char *name;
		double v[6];
		size_t n, count;
		double median, min, max;
	} cases[] = {
		{ "odd", { 3, 1, 2 }, 3, 3, 2, 1, 3 },
		{ "even", { 4, 1, 3, 2 }, 4, 4, 2.5, 1, 4 },
		{ "nan_skipped", { NAN, 5, NAN, 1, 3 }, 5, 3, 3, 1, 5 },
		{ "all_nan", { NAN, NAN }, 2, 0, NAN, NAN, NAN },
		{ "empty", { 0 }, 0, 0, NAN, NAN, NAN },
		{ "one", { 42 }, 1, 1, 42, 42, 42 },
	};

	for (size_t i = 0; i < N(cases); i++) {
		struct compare_stats st;

		compare_stats(cases[i].v, cases[i].n, &st);
		ck_assert_msg(st.n == cases[i].count, "%s: %zu values, expected %zu", cases[i].name,
			      st.n, cases[i].count);
		check_close(cases[i].name, "median", st.median, cases[i].median);
		check_close(cases[i].name, "min", st.min, cases[i].min);
		check_close(cases[i].name, "max", st.max, cases[i].max);
	}
}
END_TEST

/* Runs in rotated order land in their pair's slot, whatever the order. */
START_TEST(pair_values)
{
	struct compare_run runs[6] = { 0 };
	double v[3];

	for (int i = 0; i < 6; i++) {
		runs[i].pair = i / 2;
		runs[i].order = i % 2;
		runs[i].policy_index = (i % 2 + i / 2) % 2;
		for (int f = 0; f < CMP_NFIG; f++)
			runs[i].fig[f] = NAN;
		runs[i].fig[CMP_WALL] = 10 * runs[i].pair + runs[i].policy_index;
	}
	compare_pair_values(runs, 6, 3, 1, CMP_WALL, v);
	for (int p = 0; p < 3; p++)
		ck_assert_msg(v[p] == 10 * p + 1, "pair %d: %g", p, v[p]);
	compare_pair_values(runs, 6, 3, 0, CMP_DTLB, v);
	for (int p = 0; p < 3; p++)
		ck_assert(isnan(v[p]));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("compare-verdict");
	TCase *tc = tcase_create("verdict");

	tcase_add_loop_test(tc, verdicts, 0, (int)N(verdict_cases));
	tcase_add_loop_test(tc, verdicts_mirror, 0, (int)N(verdict_cases));
	tcase_add_test(tc, stats);
	tcase_add_test(tc, pair_values);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
