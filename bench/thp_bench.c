// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_bench: libthp against the raw kernel interfaces it wraps.
 *
 *   thp_bench [--json FILE] [apply] [all] [vma] [effect] [default] [query] [run]
 *             [inject] [query-sizes]          (default: all but query-sizes)
 *
 * --json FILE also writes every compared row as JSON, from which
 * bench/charts.py draws the SVG charts in doc/charts/.
 *
 * apply  - thp_apply_ranges() vs raw process_madvise() / madvise() loop
 * all    - thp_apply_all() vs one raw madvise(0, TASK_SIZE); COLLAPSE with
 *          1% failing mappings
 * vma    - PROCMAP_QUERY ioctl walk vs /proc/self/maps text parsing
 * effect - random reads over 1 GiB, NOHUGE vs HUGE
 * default - thp_get_default() vs prctl(PR_GET_THP_DISABLE); thp_set_default(HUGE)
 *          vs one raw madvise(0, TASK_SIZE)
 * query  - thp_query() of every mapping vs the bare read of /proc/self/smaps
 * run    - CPU time of `thpctl run --policy P -- /bin/true` vs `env /bin/true`
 * inject - the inject backend on a spinning child: the caller's cost and the
 *          child's pause, at a few ranges and at 60,000 mappings
 * query-sizes - thp_query() by folio size (pagemap, kpageflags: root) vs plain
 *          thp_query() and the bare smaps read, at 60,000 mappings and per
 *          GiB (only when named)
 *
 * The two sides of a comparison alternate within each repetition (the
 * order rotating), and ratios are libthp / raw of the same repetition;
 * tables give median/min/max over REPS (apply: APPLY_REPS).  apply,
 * default, query: thread CPU time (CLOCK_THREAD_CPUTIME_ID: a shared
 * machine's preemption does not count); run: the child's CPU time from
 * wait4(); the rest CLOCK_MONOTONIC.  The run ends with every issue-15
 * target beside its measured median.  Needs root only to raise
 * vm.max_map_count (restored at exit, also on SIGINT/SIGTERM).
 *
 * Each benchmark is one file (apply.c, all.c, ...) behind the table below;
 * what they share is in common.c and bench.h.
 */
#include "bench.h"

/* The benchmarks in the order they run; the command line names them. */
static const struct bench {
	const char *name;
	void (*run)(void);
	bool by_name_only; /* not in the default run */
} benches[] = {
	{ "apply", bench_apply, false },
	{ "all", bench_all, false },
	{ "vma", bench_vma, false },
	{ "effect", bench_effect, false },
	{ "default", bench_default, false },
	{ "query", bench_query, false },
	{ "run", bench_run, false },
	{ "inject", bench_inject, false },
	/* needs root (frame numbers) */
	{ "query-sizes", bench_query_sizes, true },
};

int main(int argc, char **argv)
{
	enum { NR_SECTIONS = sizeof(benches) / sizeof(benches[0]) };
	bool want[NR_SECTIONS] = { false };
	struct thp_probe_info info = { .sz = sizeof(info) };

	bool any = false;

	for (int i = 1; i < argc; i++) {
		bool found = false;

		if (!strcmp(argv[i], "--json") && i + 1 < argc) {
			json_out = fopen(argv[++i], "we");
			if (!json_out)
				die(argv[i]);
			continue;
		}
		for (int k = 0; k < NR_SECTIONS; k++)
			if (!strcmp(argv[i], benches[k].name))
				want[k] = found = any = true;
		if (!found) {
			fprintf(stderr, "usage: %s [--json FILE] [apply] [all] [vma] [effect] [default] "
				"[query] [run] [inject] [query-sizes]\n", argv[0]);
			return 2;
		}
	}
	for (int k = 0; k < NR_SECTIONS && !any; k++)
		want[k] = !benches[k].by_name_only;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (thp_probe(&info) == 0)
		printf("# thp_bench: libthp %s, pidfd_self %d, procmap_query %d, process_madvise_self_huge %d, pmd %llu KiB, raw pidfd %d\n",
		       thp_version(), info.pidfd_self, info.procmap_query,
		       info.process_madvise_self_huge, (unsigned long long)(info.pmd_size / 1024),
		       get_raw_pidfd());
	if (json_out) {
		struct utsname u;

		uname(&u);
		fprintf(json_out, "{\"libthp\": \"%s\", \"kernel\": \"%s\", \"reps\": %d, \"rows\": [",
			thp_version(), u.release, REPS);
	}
	for (int k = 0; k < NR_SECTIONS; k++)
		if (want[k])
			benches[k].run();
	restore_map_count();
	print_targets();
	if (json_out) {
		fprintf(json_out, "\n]}\n");
		if (fclose(json_out))
			die("--json");
	}
	return 0;
}
