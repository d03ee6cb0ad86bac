// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_bench default: thp_get_default() against prctl(PR_GET_THP_DISABLE); thp_set_default(HUGE)
 * against one raw madvise(0, TASK_SIZE).
 */
#include "bench.h"

#define GET_DEFAULT_INNER 200

/* One timed thp_set_default(HUGE) on @n fresh, unadvised mappings. */
static double time_set_huge(size_t n, uint64_t *changed)
{
	THP_OPTS(thp_default_opts, o, .policy = THP_POLICY_HUGE);
	THP_OPTS(thp_default_opts, reset, .policy = THP_POLICY_SYSTEM);
	double t0, t1;
	int ret;

	make_small_maps(n);
	t0 = cpu_ns();
	ret = thp_set_default(&o);
	t1 = cpu_ns();
	if (ret < 0) {
		fprintf(stderr, "thp_set_default(HUGE): %s (%s)\n", thp_strerror(ret),
			thp_strerror_detail());
		exit(1);
	}
	*changed = o.mappings_changed;
	if (thp_set_default(&reset) < 0)
		die("thp_set_default(SYSTEM)");
	free_small_maps();
	return t1 - t0;
}

/* The kernel's lower bound on @n fresh, unadvised mappings. */
static double time_raw_huge(size_t n)
{
	double t;

	make_small_maps(n);
	t = time_madvise_all(MADV_HUGEPAGE, cpu_ns);
	free_small_maps();
	return t;
}

void bench_default(void)
{
	static const size_t counts[] = { 100, 10000, 60000 };

	printf("\n## 6. Default policy of a process with many mappings, %d reps\n\n", REPS);
	printf("6a: thp_get_default(THP_SELF) vs raw prctl(PR_GET_THP_DISABLE), thread CPU time in\n"
	       "microseconds per call (each sample the mean of %d calls).  Where the kernel has a\n"
	       "def_flags default (the RFCs' PMADV or declared prctl), libthp also looks at a fresh\n"
	       "mapping's VmFlags, which the prctl does not show.\n\n", GET_DEFAULT_INNER);
	printf("| created | libthp med / min / max (us)       | raw med / min / max (us)          | ratio                 |\n");
	printf("|--------:|-----------------------------------|-----------------------------------|-----------------------|\n");
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t n = counts[c];
		double lib[REPS], raw[REPS];

		ensure_map_count((long)n + 5000);
		make_small_maps(n);
		for (int rep = -2; rep < REPS; rep++) {
			for (int k = 0; k < 2; k++) {
				bool do_lib = (rep & 1) ? k == 1 : k == 0;
				double t0 = cpu_ns();

				for (int j = 0; j < GET_DEFAULT_INNER; j++) {
					if (do_lib) {
						THP_OPTS(thp_default_opts, o);
						int ret = thp_get_default(&o);

						if (ret < 0) {
							fprintf(stderr, "thp_get_default: %s\n",
								thp_strerror(ret));
							exit(1);
						}
					} else if (prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) < 0) {
						die("prctl(PR_GET_THP_DISABLE)");
					}
				}
				if (rep >= 0)
					(do_lib ? lib : raw)[rep] = (cpu_ns() - t0) / GET_DEFAULT_INNER;
			}
		}
		printf("| %7zu |", n);
		ratio_row(lib, raw, 1e3, "default", "thp_get_default vs prctl", n, "us",
			  c == 0 ? "thp_get_default(THP_SELF) vs prctl(PR_GET_THP_DISABLE)" : NULL,
			  1.5);
		free_small_maps();
	}

	printf("\n6b: thp_set_default(HUGE) on fresh unadvised mappings (mainline: advises the existing\n"
	       "mappings not advised NOHUGE, from one pass over smaps) vs one raw madvise(0, 0x%lx,\n"
	       "MADV_HUGEPAGE), which also overrides NOHUGE advice; thread CPU time, milliseconds per call.\n\n", TASK_END);
	printf("| created | libthp med / min / max (ms)       | raw med / min / max (ms)          | ratio                 | advised |\n");
	printf("|--------:|-----------------------------------|-----------------------------------|-----------------------|--------:|\n");
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t n = counts[c];
		double lib[REPS], raw[REPS];
		uint64_t changed = 0;
		struct compare cmp;

		ensure_map_count((long)n + 5000);
		for (int rep = -1; rep < REPS; rep++) {
			double tl, tr;

			if (rep & 1) {
				tr = time_raw_huge(n);
				tl = time_set_huge(n, &changed);
			} else {
				tl = time_set_huge(n, &changed);
				tr = time_raw_huge(n);
			}
			if (rep >= 0) {
				lib[rep] = tl;
				raw[rep] = tr;
			}
		}
		cmp = compare(lib, raw, REPS);
		printf("| %7zu |", n);
		print_compare(&cmp, 1e6, "default", "thp_set_default(HUGE) vs madvise(0, TASK_SIZE)", n,
			      "ms");
		printf(" %7llu |\n", (unsigned long long)changed);
		if (n == 60000)
			note_target("thp_set_default(HUGE), 60k mappings, vs madvise(0, TASK_SIZE)",
				    cmp.ratio.med, 8, "x");
	}
}
