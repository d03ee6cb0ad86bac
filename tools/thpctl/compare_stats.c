// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpctl compare: medians, ranges and verdicts.  No I/O, so that the
 * verdict logic is tested on recorded figures (tests/thpctl/test_compare.c).
 * A verdict comes from pairs only, never from one run: a policy is "lower"
 * only if it was lower in every pair.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "compare.h"

static const struct compare_figure_info figures[CMP_NFIG] = {
	[CMP_WALL] = { "wall time", "wall_seconds", "s", BETTER_LOWER },
	[CMP_CPU] = { "CPU time", "cpu_seconds", "s", BETTER_LOWER },
	[CMP_PEAK_RSS] = { "peak RSS", "peak_rss_bytes", "bytes", BETTER_LOWER },
	[CMP_HUGE] = { "huge (sampled)", "anon_huge_bytes_max", "bytes", BETTER_NONE },
	[CMP_MINFLT] = { "minor faults", "minor_faults", "", BETTER_LOWER },
	[CMP_MAJFLT] = { "major faults", "major_faults", "", BETTER_LOWER },
	[CMP_DTLB] = { "dTLB misses", "dtlb_load_misses", "", BETTER_LOWER },
	[CMP_ITLB] = { "iTLB misses", "itlb_load_misses", "", BETTER_LOWER },
	[CMP_WALK] = { "page-walk cycles", "page_walk_cycles", "", BETTER_LOWER },
	[CMP_METRIC] = { "metric", "metric", "", BETTER_HIGHER },
};

const struct compare_figure_info *compare_figure_info(enum compare_figure f)
{
	return &figures[f];
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_of_sorted(const double *v, size_t n)
{
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void compare_stats(const double *v, size_t n, struct compare_stats *out)
{
	double sorted[COMPARE_MAX_PAIRS * COMPARE_MAX_POLICIES];
	size_t k = 0;

	for (size_t i = 0; i < n && k < sizeof(sorted) / sizeof(sorted[0]); i++)
		if (!isnan(v[i]))
			sorted[k++] = v[i];
	out->n = k;
	if (!k) {
		out->median = out->min = out->max = NAN;
		return;
	}
	qsort(sorted, k, sizeof(sorted[0]), cmp_double);
	out->median = median_of_sorted(sorted, k);
	out->min = sorted[0];
	out->max = sorted[k - 1];
}

void compare_verdict(const double *base, const double *other, size_t n,
		     struct compare_verdict *out)
{
	double ratios[COMPARE_MAX_PAIRS] = { 0 };
	size_t used = 0, nratios = 0, lower = 0, higher = 0;
	struct compare_stats rs;

	for (size_t i = 0; i < n && i < COMPARE_MAX_PAIRS; i++) {
		if (isnan(base[i]) || isnan(other[i]))
			continue;
		used++;
		if (other[i] < base[i])
			lower++;
		else if (other[i] > base[i])
			higher++;
		if (base[i] != 0)
			ratios[nratios++] = other[i] / base[i];
	}
	compare_stats(ratios, nratios, &rs);
	*out = (struct compare_verdict){ .pairs = used, .ratio_median = rs.median, .ratio_min = rs.min, .ratio_max = rs.max };
	if (used < 2)
		out->kind = VERDICT_TOO_FEW;
	else if (lower == used)
		out->kind = VERDICT_LOWER_EVERY;
	else if (higher == used)
		out->kind = VERDICT_HIGHER_EVERY;
	else if (!lower && !higher)
		out->kind = VERDICT_SAME;
	else
		out->kind = VERDICT_NO_DIFFERENCE;
}

const char *compare_verdict_name(enum compare_verdict_kind k)
{
	switch (k) {
	case VERDICT_TOO_FEW:
		return "too_few_pairs";
	case VERDICT_LOWER_EVERY:
		return "lower_in_every_pair";
	case VERDICT_HIGHER_EVERY:
		return "higher_in_every_pair";
	case VERDICT_SAME:
		return "same_in_every_pair";
	case VERDICT_NO_DIFFERENCE:
		return "no_measurable_difference";
	}
	return "unknown";
}

void compare_pair_values(const struct compare_run *runs, size_t nruns, int pairs, int p,
			 enum compare_figure f, double *out)
{
	for (int i = 0; i < pairs; i++)
		out[i] = NAN;
	for (size_t i = 0; i < nruns; i++)
		if (runs[i].policy_index == p && runs[i].pair >= 0 && runs[i].pair < pairs)
			out[runs[i].pair] = runs[i].fig[f];
}
