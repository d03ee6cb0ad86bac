/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The benchmarks' statistics: median, min and max of repeated samples,
 * and of the ratio of two sides measured in the same repetitions.
 */
#ifndef THP_BENCH_STATS_H
#define THP_BENCH_STATS_H

#include <stdlib.h>
#include <string.h>

static inline int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

struct stat3 {
	double med, min, max;
};

/* The most samples a statistic takes (a benchmark's largest *_REPS). */
#define MAX_REPS 128

static inline struct stat3 stats(const double *v, size_t n)
{
	double s[MAX_REPS];
	struct stat3 r;

	if (n > MAX_REPS)
		n = MAX_REPS;
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	r.min = s[0];
	r.max = s[n - 1];
	r.med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	return r;
}

/* Two sides measured in the same repetitions, and their ratio a / b per repetition. */
struct compare {
	struct stat3 a, b, ratio;
};

static inline struct compare compare(const double *a, const double *b, size_t reps)
{
	double ratio[MAX_REPS];
	struct compare c;

	if (reps > MAX_REPS)
		reps = MAX_REPS;
	for (size_t i = 0; i < reps; i++)
		ratio[i] = a[i] / b[i];
	c.a = stats(a, reps);
	c.b = stats(b, reps);
	c.ratio = stats(ratio, reps);
	return c;
}

#endif
