// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_bench inject: The inject backend on a spinning child: the caller's cost and the
 * child's pause, for a few ranges and for 60,000 mappings.
 */
#include "bench.h"

/*
 * The inject backend on a child that spins on the clock: the call's cost
 * to the caller, and the pause the child itself sees (the longest gap
 * between two of its clock reads during the call).  The raw side is the
 * same madvise() calls made by a process on itself.
 */
struct spin_page {
	volatile int stop;
	volatile uint64_t max_gap; /* ns, reset by the parent before each call */
};

/* A shared page for spin_target() and its parent. */
static struct spin_page *spin_page_new(void)
{
	struct spin_page *sp = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				    -1, 0);

	if (sp == MAP_FAILED)
		die("mmap");
	return sp;
}

/* The child's loop: read the clock, keep the longest gap, until told to stop. */
static _Noreturn void spin_target(struct spin_page *sp)
{
	uint64_t last = now_ns();

	while (!sp->stop) {
		uint64_t t = now_ns();

		if (t - last > sp->max_gap)
			sp->max_gap = t - last;
		last = t;
	}
	_exit(0);
}

#define INJECT_RANGES 4

static void bench_inject_ranges(void)
{
	struct spin_page *sp = spin_page_new();
	struct thp_range r[INJECT_RANGES];
	struct iovec iov[INJECT_RANGES];
	double lib[REPS], raw[REPS], pause_r[REPS], lib_d[REPS], pause_d[REPS], idle[REPS];
	char *own;
	pid_t pid;
	int pidfd, st;

	own = map_ranges(INJECT_RANGES, r, iov);
	pid = fork();
	if (pid < 0)
		die("fork");
	/* The child has the same ranges mapped (fork), so the same calls apply. */
	if (pid == 0)
		spin_target(sp);
	pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
	if (pidfd < 0)
		die("pidfd_open");
	for (int rep = -2; rep < REPS; rep++) {
		THP_OPTS(thp_apply_opts, o, .pidfd = pidfd, .backend = THP_BACKEND_INJECT,
			 .advice = rep & 1 ? THP_ADVICE_HUGE : THP_ADVICE_NOHUGE);
		THP_OPTS(thp_default_opts, d, .pidfd = pidfd, .backend = THP_BACKEND_INJECT,
			 .policy = rep & 1 ? THP_POLICY_NEVER : THP_POLICY_SYSTEM);
		double t0, t1, t2;
		uint64_t gap_r, gap_d, gap_i;

		/* The same window with no call: what the machine's own noise gives. */
		sp->max_gap = 0;
		usleep(2000);
		gap_i = sp->max_gap;
		sp->max_gap = 0;
		t0 = mono_ns();
		if (thp_apply_ranges(r, INJECT_RANGES, &o) != INJECT_RANGES)
			die("thp_apply_ranges (inject)");
		t1 = mono_ns();
		usleep(2000);
		gap_r = sp->max_gap;
		sp->max_gap = 0;
		t2 = mono_ns();
		if (thp_set_default(&d))
			die("thp_set_default (inject)");
		t2 = mono_ns() - t2;
		usleep(2000);
		gap_d = sp->max_gap;
		t0 = t1 - t0;
		t1 = mono_ns();
		raw_madvise_loop(iov, INJECT_RANGES, rep & 1 ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
		t1 = mono_ns() - t1;
		if (rep >= 0) {
			lib[rep] = t0;
			raw[rep] = t1;
			pause_r[rep] = (double)gap_r;
			lib_d[rep] = t2;
			pause_d[rep] = (double)gap_d;
			idle[rep] = (double)gap_i;
		}
	}
	sp->stop = 1;
	waitpid(pid, &st, 0);
	close(pidfd);
	unmap_ranges(INJECT_RANGES, iov);
	(void)own;
	{
		struct compare c = compare(lib, raw, REPS);
		struct stat3 pr = stats(pause_r, REPS), ld = stats(lib_d, REPS),
			     pd = stats(pause_d, REPS), id = stats(idle, REPS);

		printf("\n## inject: another process made to call madvise()/prctl() itself\n\n"
		       "Wall time of the call (us), against the same %d madvise() calls made by a\n"
		       "process on itself; pause = the longest gap the spinning target saw.\n\n",
		       INJECT_RANGES);
		printf("| call                               | libthp med / min / max (us)       | raw med / min / max (us)          | ratio                 |\n");
		printf("|------------------------------------|-----------------------------------|-----------------------------------|-----------------------|\n");
		printf("| apply_ranges %d ranges, inject      |", INJECT_RANGES);
		print_compare(&c, 1e3, "inject", "apply_ranges inject vs own madvise", INJECT_RANGES,
			      "us");
		printf("\n\n| measure                            | med (us) | min (us) | max (us) |\n");
		printf("|------------------------------------|----------|----------|----------|\n");
		printf("| target pause, apply_ranges         | %8.1f | %8.1f | %8.1f |\n",
		       pr.med / 1e3, pr.min / 1e3, pr.max / 1e3);
		printf("| set_default NEVER/SYSTEM, call     | %8.1f | %8.1f | %8.1f |\n",
		       ld.med / 1e3, ld.min / 1e3, ld.max / 1e3);
		printf("| target pause, set_default          | %8.1f | %8.1f | %8.1f |\n",
		       pd.med / 1e3, pd.min / 1e3, pd.max / 1e3);
		printf("| target gap, no call (noise)        | %8.1f | %8.1f | %8.1f |\n",
		       id.med / 1e3, id.min / 1e3, id.max / 1e3);
		note_target("inject: target pause for 4 ranges", pr.med / 1e6, 1, " ms");
	}
}

/*
 * A whole-process NEVER (and back to SYSTEM) through the inject backend on
 * a target with INJECT_MAPPINGS mappings that spins on the clock: the
 * call's cost and the target's pause must not grow with its mappings.  The
 * raw side is the same prctl() a process makes on itself.
 */
#define INJECT_MAPPINGS 60000

static void bench_inject_many(void)
{
	struct spin_page *sp = spin_page_new();
	double lib[REPS], raw[REPS], pause[REPS];
	int ready[2], pidfd, st;
	char c;
	pid_t pid;

	if (pipe(ready))
		die("inject many: setup");
	ensure_map_count(INJECT_MAPPINGS + 1000);
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		make_small_maps(INJECT_MAPPINGS);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		spin_target(sp);
	}
	if (read(ready[0], &c, 1) != 1)
		die("inject many: child");
	pidfd = (int)syscall(__NR_pidfd_open, pid, 0);
	if (pidfd < 0)
		die("pidfd_open");
	for (int rep = -2; rep < REPS; rep++) {
		THP_OPTS(thp_default_opts, d, .pidfd = pidfd, .backend = THP_BACKEND_INJECT,
			 .policy = rep & 1 ? THP_POLICY_SYSTEM : THP_POLICY_NEVER);
		double t0, t1;

		sp->max_gap = 0;
		t0 = mono_ns();
		if (thp_set_default(&d))
			die("thp_set_default (inject, many mappings)");
		t0 = mono_ns() - t0;
		usleep(2000);
		t1 = mono_ns();
		if (prctl(PR_SET_THP_DISABLE, rep & 1 ? 0 : 1, 0, 0, 0))
			die("prctl");
		t1 = mono_ns() - t1;
		if (rep >= 0) {
			lib[rep] = t0;
			raw[rep] = t1;
			pause[rep] = (double)sp->max_gap;
		}
	}
	prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);
	sp->stop = 1;
	waitpid(pid, &st, 0);
	close(pidfd);
	close(ready[0]);
	close(ready[1]);
	munmap(sp, 4096);
	{
		struct compare cmp = compare(lib, raw, REPS);
		struct stat3 p = stats(pause, REPS);

		printf("\n### inject: whole-process NEVER/SYSTEM on a target with %d mappings\n\n",
		       INJECT_MAPPINGS);
		printf("| call                               | libthp med / min / max (us)       | raw prctl med / min / max (us)    | ratio                 |\n");
		printf("|------------------------------------|-----------------------------------|-----------------------------------|-----------------------|\n");
		printf("| set_default NEVER/SYSTEM, inject   |");
		print_compare(&cmp, 1e3, "inject", "set_default inject vs own prctl, mappings",
			      INJECT_MAPPINGS, "us");
		printf("\n\n| measure                            | med (us) | min (us) | max (us) |\n");
		printf("|------------------------------------|----------|----------|----------|\n");
		printf("| target pause, set_default          | %8.1f | %8.1f | %8.1f |\n",
		       p.med / 1e3, p.min / 1e3, p.max / 1e3);
		note_target("inject: NEVER at 60,000 mappings, call", cmp.a.med / 1e6, 5, " ms");
	}
}

void bench_inject(void)
{
	bench_inject_ranges();
	bench_inject_many();
}
