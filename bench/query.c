// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_bench query: thp_query() of every mapping against the bare read of /proc/self/smaps,
 * and (query-sizes) thp_query() by folio size against both.
 */
#include "bench.h"

/* The kernel's part of thp_query(): /proc/self/smaps read to its end, unparsed. */
static void read_smaps_bare(void)
{
	static char buf[1 << 16];
	int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		die("open smaps");
	while ((r = read(fd, buf, sizeof(buf))) > 0)
		;
	if (r < 0)
		die("read smaps");
	close(fd);
}

void bench_query(void)
{
	static const size_t counts[] = { 100, 10000, 60000 };

	printf("\n## 7. thp_query() of every mapping vs the bare read of /proc/self/smaps, %d reps\n\n",
	       REPS);
	printf("Thread CPU time in milliseconds per call (the kernel formats smaps in this thread).\n\n");
	printf("| created | VMAs   | libthp med / min / max (ms)       | raw med / min / max (ms)          | ratio                 |\n");
	printf("|--------:|-------:|-----------------------------------|-----------------------------------|-----------------------|\n");
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t n = counts[c], cap = n + 4096, vmas;
		struct thp_mapping_state *st = calloc(cap, sizeof(*st));
		double lib[REPS], raw[REPS];

		if (!st)
			die("calloc");
		ensure_map_count((long)n + 5000);
		make_small_maps(n);
		vmas = count_maps();
		for (int rep = -2; rep < REPS; rep++) {
			for (int k = 0; k < 2; k++) {
				bool do_lib = (rep & 1) ? k == 1 : k == 0;
				double t0 = cpu_ns();

				if (do_lib) {
					THP_OPTS(thp_query_opts, q, .pidfd = THP_SELF, .states = st,
						 .states_cap = cap);
					int ret = thp_query(&q);

					if (ret < 0 || (size_t)ret != q.states_needed) {
						fprintf(stderr, "thp_query: %d %s\n", ret, thp_strerror(ret));
						exit(1);
					}
				} else {
					read_smaps_bare();
				}
				if (rep >= 0)
					(do_lib ? lib : raw)[rep] = cpu_ns() - t0;
			}
		}
		printf("| %7zu | %6zu |", n, vmas);
		ratio_row(lib, raw, 1e6, "query", "thp_query all vs smaps read", vmas, "ms",
			  n == 60000 ? "thp_query(), all of 60k mappings, vs the bare smaps read" : NULL,
			  1.15);
		free_small_maps();
		free(st);
	}
}

/* ------------------------------------------------------ 7b: query-sizes */

/* One thp_query() of [addr, addr+len) (len 0: everything); dies on failure. */
static void query_once(struct thp_mapping_state *st, size_t cap, uint32_t flags, uint64_t addr,
		       uint64_t len)
{
	THP_OPTS(thp_query_opts, q, .pidfd = THP_SELF, .flags = flags, .addr = addr, .len = len,
		 .states = st, .states_cap = cap);
	int ret = thp_query(&q);

	if (ret < 0 || (size_t)ret != q.states_needed ||
	    ((flags & THP_QUERY_F_FOLIO_SIZES) && q.folio_source != THP_FOLIO_SOURCE_KPAGEFLAGS)) {
		fprintf(stderr, "thp_query: %d %s (source %u: root needed)\n", ret,
			thp_strerror(ret), q.folio_source);
		exit(1);
	}
}

/*
 * Three sides alternating in each repetition: thp_query() by folio size,
 * thp_query() plain, the bare smaps read; @ns_* get thread CPU ns.
 */
static void time_three(struct thp_mapping_state *st, size_t cap, uint64_t addr, uint64_t len,
		       double *ns_sizes, double *ns_plain, double *ns_raw)
{
	for (int rep = -2; rep < REPS; rep++) {
		for (int k = 0; k < 3; k++) {
			int side = (k + (rep < 0 ? 0 : rep)) % 3;
			double t0 = cpu_ns();

			if (side == 0)
				query_once(st, cap, THP_QUERY_F_FOLIO_SIZES, addr, len);
			else if (side == 1)
				query_once(st, cap, 0, addr, len);
			else
				read_smaps_bare();
			if (rep >= 0)
				(side == 0 ? ns_sizes : side == 1 ? ns_plain : ns_raw)[rep] = cpu_ns() - t0;
		}
	}
}

void bench_query_sizes(void)
{
	static const size_t counts[] = { 100, 10000, 60000 };
	const size_t gib = 1024 * MIB;

	printf("\n## 7b. thp_query() by folio size (THP_QUERY_F_FOLIO_SIZES) vs plain thp_query() "
	       "and the bare smaps read, %d reps\n\n", REPS);
	printf("Thread CPU time in milliseconds per call; every other 4 KiB mapping written "
	       "(anonymous memory to read by size).\n\n");
	printf("| created | VMAs   | sizes med / min / max (ms)        | smaps read med / min / max (ms)   | ratio                 |\n");
	printf("|--------:|-------:|-----------------------------------|-----------------------------------|-----------------------|\n");
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t n = counts[c], cap = n + 4096, vmas;
		struct thp_mapping_state *st = calloc(cap, sizeof(*st));
		double sz[REPS], plain[REPS], raw[REPS];
		struct compare pc;

		if (!st)
			die("calloc");
		ensure_map_count((long)n + 5000);
		make_small_maps(n);
		for (size_t i = 1; i < n; i += 2)
			*(volatile char *)small_maps[i] = 1;
		vmas = count_maps();
		time_three(st, cap, 0, 0, sz, plain, raw);
		printf("| %7zu | %6zu |", n, vmas);
		ratio_row(sz, raw, 1e6, "query-sizes", "thp_query by size vs smaps read", vmas, "ms",
			  NULL, 0);
		pc = compare(sz, plain, REPS);
		printf("|         |        | (by size / plain thp_query(): %.2f, plain %.2f ms) "
		       "| | |\n", pc.ratio.med, pc.b.med / 1e6);
		free_small_maps();
		free(st);
	}

	printf("\nPer GiB: one 1 GiB mapping written whole, queried alone (addr, len); "
	       "thread CPU ms.\n\n");
	printf("| memory | by size med (ms) | plain med (ms) | smaps read med (ms) | by size - plain, per GiB (ms) |\n");
	printf("|--------|-----------------:|---------------:|--------------------:|------------------------------:|\n");
	for (int huge = 1; huge >= 0; huge--) {
		char *raw_map = mmap(NULL, gib + PMD, PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		char *p;
		struct thp_mapping_state st[4];
		double sz[REPS], plain[REPS], rawt[REPS];
		struct stat3 a, b, r;

		if (raw_map == MAP_FAILED)
			die("mmap 1 GiB");
		p = (char *)(((uintptr_t)raw_map + PMD - 1) & ~(uintptr_t)(PMD - 1));
		madvise(p, gib, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
		memset(p, 1, gib);
		time_three(st, 4, (uintptr_t)p, gib, sz, plain, rawt);
		a = stats(sz, REPS);
		b = stats(plain, REPS);
		r = stats(rawt, REPS);
		printf("| %s | %16.2f | %14.2f | %19.2f | %29.2f |\n",
		       huge ? "huge-advised (2 MiB folios here)" : "nohuge (base pages)",
		       a.med / 1e6, b.med / 1e6, r.med / 1e6, (a.med - b.med) / 1e6);
		munmap(raw_map, gib + PMD);
	}
}
