// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_bench all: thp_apply_all() against one raw madvise(0, TASK_SIZE); COLLAPSE with
 * 1% failing mappings.
 */
#include "bench.h"

static void collapse_table(bool eligible);

void bench_all(void)
{
	static const size_t counts[] = { 100, 10000, 60000 };

	printf("\n## 2. thp_apply_all() (auto backend) vs one raw madvise(0, 0x%lx), %d reps\n\n",
	       TASK_END, REPS);
	printf("Times in milliseconds per call; advice alternates HUGE/NOHUGE so every call changes every VMA.\n\n");
	printf("| created | VMAs   | libthp med / min / max (ms)       | raw med / min / max (ms)          | ratio                 | lib ns/VMA |\n");
	printf("|--------:|-------:|-----------------------------------|-----------------------------------|-----------------------|-----------:|\n");
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t n = counts[c];
		double lib[REPS], raw[REPS];
		int state = THP_ADVICE_NOHUGE;
		size_t vmas;
		const char *backend = "?";
		struct compare cmp;

		ensure_map_count((long)n + 5000);
		make_small_maps(n);
		vmas = count_maps();
		madvise(NULL, TASK_END, MADV_NOHUGEPAGE);
		for (int rep = -2; rep < REPS; rep++) {
			for (int k = 0; k < 2; k++) {
				bool do_lib = (rep & 1) ? k == 1 : k == 0;
				int advice = state == THP_ADVICE_HUGE ? THP_ADVICE_NOHUGE : THP_ADVICE_HUGE;
				double t0, t1;

				if (do_lib) {
					THP_OPTS(thp_apply_all_opts, o, .pidfd = THP_SELF, .advice = advice);
					int ret;

					t0 = now_ns();
					ret = thp_apply_all(&o);
					t1 = now_ns();
					if (ret < 0) {
						fprintf(stderr, "thp_apply_all: %s\n", thp_strerror(ret));
						exit(1);
					}
					backend = thp_backend_name(o.backend_used);
					if (rep >= 0)
						lib[rep] = t1 - t0;
				} else {
					double t = time_madvise_all(advice, mono_ns);

					if (rep >= 0)
						raw[rep] = t;
				}
				state = advice;
			}
		}
		cmp = compare(lib, raw, REPS);
		printf("| %7zu | %6zu |", n, vmas);
		print_compare(&cmp, 1e6, "all", "thp_apply_all vs madvise(0, TASK_SIZE)", vmas, "ms");
		printf(" %10.0f |\n", cmp.a.med / (double)vmas);
		if (c + 1 == sizeof(counts) / sizeof(counts[0]))
			printf("\n(thp_apply_all backend used: %s)\n", backend);
		free_small_maps();
	}

	printf("\n### 2b. thp_apply_all(COLLAPSE, THP_F_SKIP_ERRORS): 1-page mappings + 1%% NOHUGE 2 MiB mappings, %d reps\n\n", REPS);
	printf("Note: this kernel fails MADV_COLLAPSE with EINVAL on every mapping that cannot hold an aligned 2 MiB\n"
	       "extent (all 1-page mappings) and on unpopulated ones, so here nearly every mapping fails.\n\n");
	collapse_table(false);
	printf("\n### 2c. Same, but 99%% of created mappings are populated 2 MiB-aligned 2 MiB mappings (collapsed in the\n"
	       "warm-up rep, so later reps succeed) and 1%% NOHUGE 2 MiB mappings; raw = madvise(COLLAPSE) loop over the\n"
	       "created mappings only, continuing past errors (it does not touch libc/stack etc., so it is a lower bound)\n\n");
	collapse_table(true);
}

static void collapse_table(bool eligible)
{
	static const size_t counts_small[] = { 100, 10000, 60000 };
	static const size_t counts_elig[] = { 100, 1000 };
	const size_t *counts = eligible ? counts_elig : counts_small;
	size_t nc = eligible ? 2 : 3;

	printf("| created | failing | VMAs   | libthp med / min / max (ms)       | ns/VMA med | failures_needed | skipped | raw loop med (ms) | ratio |\n");
	printf("|--------:|--------:|-------:|-----------------------------------|-----------:|----------------:|--------:|------------------:|------:|\n");
	for (size_t c = 0; c < nc; c++) {
		size_t n = counts[c], nf = n / 100;
		size_t nslots = eligible ? n : nf;
		static struct thp_report fails[1024];
		double t[REPS], traw[REPS];
		char *res, *base;
		size_t vmas, needed = 0, skipped = 0;
		struct stat3 s, sr;

		ensure_map_count((long)n + 5000);
		if (!eligible)
			make_small_maps(n - nf);
		res = mmap(NULL, nslots * 2 * PMD + PMD, PROT_NONE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (res == MAP_FAILED)
			die("mmap reserve");
		base = (char *)(((uintptr_t)res + PMD - 1) & ~(uintptr_t)(PMD - 1));
		munmap(res, nslots * 2 * PMD + PMD);
		for (size_t i = 0; i < nslots; i++) {
			char *a = base + i * 2 * PMD;
			bool bad = !eligible || i % 100 == 99;

			if (mmap(a, PMD, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0) != a)
				die("mmap 2M");
			if (bad && madvise(a, PMD, MADV_NOHUGEPAGE))
				die("madvise NOHUGE");
			a[0] = 1;
		}
		vmas = count_maps();
		for (int rep = -1; rep < REPS; rep++) {
			THP_OPTS(thp_apply_all_opts, o, .pidfd = THP_SELF, .advice = THP_ADVICE_COLLAPSE,
				 .flags = THP_F_SKIP_ERRORS, .failures = fails,
				 .failures_cap = sizeof(fails) / sizeof(fails[0]));
			double t0, t1;
			int ret;

			t0 = now_ns();
			ret = thp_apply_all(&o);
			t1 = now_ns();
			if (ret < 0) {
				fprintf(stderr, "thp_apply_all(COLLAPSE): %s\n", thp_strerror(ret));
				exit(1);
			}
			needed = o.failures_needed;
			skipped = o.mappings_skipped;
			if (rep >= 0)
				t[rep] = t1 - t0;
			t0 = now_ns();
			for (size_t i = 0; i < nslots; i++)
				(void)madvise(base + i * 2 * PMD, PMD, THP_ADVICE_COLLAPSE);
			if (!eligible)
				for (size_t i = 0; i < nr_small; i++)
					(void)madvise(small_maps[i], 4096, THP_ADVICE_COLLAPSE);
			t1 = now_ns();
			if (rep >= 0)
				traw[rep] = t1 - t0;
		}
		s = stats(t, REPS);
		sr = stats(traw, REPS);
		printf("| %7zu | %7zu | %6zu | %9.3f / %9.3f / %9.3f | %10.0f | %15zu | %7zu | %17.3f | %5.2f |\n",
		       n, nf, vmas, s.med / 1e6, s.min / 1e6, s.max / 1e6, s.med / (double)vmas,
		       needed, skipped, sr.med / 1e6, s.med / sr.med);
		for (size_t i = 0; i < nslots; i++)
			munmap(base + i * 2 * PMD, PMD);
		if (!eligible)
			free_small_maps();
	}
}
