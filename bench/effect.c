// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_bench effect: Random reads over 1 GiB, NOHUGE against HUGE.
 */
#include "bench.h"

#define EFFECT_SIZE (1024 * MIB)
#define EFFECT_ACCESSES 20000000UL
#define EFFECT_REPS 3

static uint64_t effect_run(const uint64_t *buf, size_t words, double *ns)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL, v = 0, sum = 0;
	double t0 = now_ns();

	for (unsigned long i = 0; i < EFFECT_ACCESSES; i++) {
		/* xorshift64; the index also depends on the last load (all zero), so
		 * reads form a dependent chain as in pointer chasing. */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		v = buf[(x ^ v) & (words - 1)];
		sum += v;
	}
	*ns = now_ns() - t0;
	return sum;
}

void bench_effect(void)
{
	static const int advs[2] = { THP_ADVICE_NOHUGE, THP_ADVICE_HUGE };
	double med[2] = { 0, 0 };
	uint64_t sink = 0;

	printf("\n## 4. Effect: %lu M dependent random 8-byte reads over 1 GiB, fixed seed, %d reps per advice\n\n",
	       EFFECT_ACCESSES / 1000000, EFFECT_REPS);
	printf("| advice  | touch (ms) | reads med / min / max (ms)        | ns/read | AnonHugePages (MiB) |\n");
	printf("|---------|-----------:|-----------------------------------|--------:|--------------------:|\n");
	for (int a = 0; a < 2; a++) {
		size_t total = EFFECT_SIZE + PMD;
		char *res = mmap(NULL, total, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		char *base;
		struct thp_range r;
		struct thp_mapping_state st[4];
		double t[EFFECT_REPS], t0, touch;
		uint64_t ahp = 0;
		struct stat3 s;
		int ret;

		if (res == MAP_FAILED)
			die("mmap 1G");
		base = (char *)(((uintptr_t)res + PMD - 1) & ~(uintptr_t)(PMD - 1));
		r.addr = (uint64_t)(uintptr_t)base;
		r.len = EFFECT_SIZE;
		{
			THP_OPTS(thp_apply_opts, o, .pidfd = THP_SELF, .advice = advs[a]);

			ret = thp_apply_ranges(&r, 1, &o);
			if (ret != 1) {
				fprintf(stderr, "thp_apply_ranges: %s\n", thp_strerror(ret));
				exit(1);
			}
		}
		t0 = now_ns();
		memset(base, 0, EFFECT_SIZE);
		touch = now_ns() - t0;
		{
			THP_OPTS(thp_query_opts, q, .pidfd = THP_SELF, .addr = r.addr, .len = r.len,
				 .states = st, .states_cap = 4);

			ret = thp_query(&q);
			if (ret < 0) {
				fprintf(stderr, "thp_query: %s\n", thp_strerror(ret));
				exit(1);
			}
			for (int i = 0; i < ret; i++)
				ahp += st[i].anon_huge_bytes;
		}
		for (int rep = 0; rep < EFFECT_REPS; rep++)
			sink += effect_run((const uint64_t *)base, EFFECT_SIZE / 8, &t[rep]);
		s = stats(t, EFFECT_REPS);
		med[a] = s.med;
		printf("| %-7s | %10.1f | %9.1f / %9.1f / %9.1f | %7.1f | %19.1f |\n",
		       a ? "HUGE" : "NOHUGE", touch / 1e6, s.med / 1e6, s.min / 1e6, s.max / 1e6,
		       s.med / (double)EFFECT_ACCESSES, (double)ahp / (double)MIB);
		munmap(res, total);
	}
	printf("\nSpeedup HUGE vs NOHUGE (median read time): %.2fx%s\n", med[0] / med[1],
	       sink ? " (sink!=0)" : "");
}
