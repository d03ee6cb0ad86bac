// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_bench run: CPU time of `thpctl run --policy P -- /bin/true` against `env /bin/true`.
 */
#include "bench.h"

#ifndef THP_BENCH_THPCTL
#define THP_BENCH_THPCTL "thpctl"
#endif
#define RUN_REPS 61
_Static_assert(RUN_REPS <= MAX_REPS, "room for every sample");

/* CPU time (user + system) of one child running @argv to its end, silenced. */
static double child_cpu_ns(char *const argv[])
{
	posix_spawn_file_actions_t fa;
	struct rusage ru;
	pid_t pid;
	int st;

	if (posix_spawn_file_actions_init(&fa) ||
	    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0) ||
	    posix_spawn_file_actions_adddup2(&fa, 1, 2))
		die("posix_spawn_file_actions");
	/* posix_spawn() shares the memory until the exec: no page tables copied. */
	errno = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (errno)
		die(argv[0]);
	if (wait4(pid, &st, 0, &ru) != pid)
		die("wait4");
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "%s %s %s ... failed (status 0x%x)\n", argv[0], argv[1], argv[2], st);
		exit(1);
	}
	return ((double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec) * 1e9 +
	       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) * 1e3;
}

void bench_run(void)
{
	/* huge starts thpctl's collapse agent (root); "huge, no agent" is the preload alone. */
	static const struct {
		const char *label, *policy, *extra; /* extra: an option set to 0 */
		double limit;
	} rows[] = {
		{ "never", "never", NULL, 0.5 },
		{ "nohuge", "nohuge", NULL, 0.5 },
		{ "system", "system", NULL, 0.5 },
		{ "huge", "huge", NULL, 1.0 },
		{ "huge, no agent", "huge", "--collapse-interval", 1.0 },
	};
	const char *thpctl = getenv("THP_BENCH_THPCTL") ? getenv("THP_BENCH_THPCTL")
						       : THP_BENCH_THPCTL;

	printf("\n## 8. thpctl run --policy P -- /bin/true vs env /bin/true, %d interleaved pairs\n\n",
	       RUN_REPS);
	printf("CPU time (user + system) of the child and its reaped children from wait4(), exec of\n"
	       "/bin/true and, for huge, the preload's load (and the collapse agent, run as root)\n"
	       "included; overhead = thpctl - env of the same pair.  thpctl: %s\n\n", thpctl);
	printf("| policy         | thpctl med / min / max (ms)       | env med / min / max (ms)          | ratio                 | overhead med / min / max (ms) |\n");
	printf("|----------------|-----------------------------------|-----------------------------------|-----------------------|-------------------------------|\n");
	for (size_t p = 0; p < sizeof(rows) / sizeof(rows[0]); p++) {
		char *lib_argv[] = { (char *)thpctl, (char *)"run", (char *)"--policy",
				     (char *)rows[p].policy, (char *)"--", (char *)"/bin/true", NULL,
				     NULL, NULL };
		char *env_argv[] = { (char *)"/usr/bin/env", (char *)"/bin/true", NULL };
		double lib[RUN_REPS], raw[RUN_REPS], diff[RUN_REPS];
		char series[64], what[96];
		struct compare cmp;
		struct stat3 d;

		if (rows[p].extra) {
			/* "@extra 0" goes before "--": the command moves two places. */
			lib_argv[7] = lib_argv[5];
			lib_argv[6] = lib_argv[4];
			lib_argv[4] = (char *)rows[p].extra;
			lib_argv[5] = (char *)"0";
		}
		for (int rep = -2; rep < RUN_REPS; rep++) {
			double tl, te;

			if (rep & 1) {
				te = child_cpu_ns(env_argv);
				tl = child_cpu_ns(lib_argv);
			} else {
				tl = child_cpu_ns(lib_argv);
				te = child_cpu_ns(env_argv);
			}
			if (rep >= 0) {
				lib[rep] = tl;
				raw[rep] = te;
				diff[rep] = tl - te;
			}
		}
		cmp = compare(lib, raw, RUN_REPS);
		d = stats(diff, RUN_REPS);
		snprintf(series, sizeof(series), "thpctl run --policy %s vs env", rows[p].label);
		printf("| %-14s |", rows[p].label);
		print_compare(&cmp, 1e6, "run", series, 1, "ms");
		printf(" %8.3f / %8.3f / %8.3f  |\n", d.med / 1e6, d.min / 1e6, d.max / 1e6);
		snprintf(what, sizeof(what), "thpctl run --policy %s, CPU over env", rows[p].label);
		note_target(what, d.med / 1e6, rows[p].limit, " ms");
	}
}
