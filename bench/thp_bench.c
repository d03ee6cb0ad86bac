// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_bench: libthp against the raw kernel interfaces it wraps.
 *
 *   thp_bench [--json FILE] [apply] [all] [vma] [effect] [default] [query] [run]
 *                                              (default: all seven)
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
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <linux/types.h>

#include <thp/thp.h>

/* Kernel constants the 6.1 headers lack, shared with the library. */
#include "compat.h"
/* now_ns(), clock_ns(): the library's clocks. */
#include "bench_stats.h"
#include "clock_ns.h"
#include "../tests/read_file.h"

#define REPS 15
#define MIB (1024UL * 1024UL)
#define PMD (2 * MIB)


/* ---------------------------------------------------------------- utils */

/* now_ns() (CLOCK_MONOTONIC) where a clock is passed as a function. */
static double mono_ns(void)
{
	return (double)now_ns();
}

/* CPU time of this thread, kernel time (the system calls) included. */
static double cpu_ns(void)
{
	return (double)clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* --json FILE: every compared row also as one JSON object (bench/charts.py). */
static FILE *json_out;
static bool json_first = true;

static void json_stat(const char *name, const struct stat3 *s, double scale, bool last)
{
	fprintf(json_out, "\"%s\": {\"med\": %.6g, \"min\": %.6g, \"max\": %.6g}%s", name,
		s->med / scale, s->min / scale, s->max / scale, last ? "" : ", ");
}

/*
 * A row's cells "a med / min / max | b med / min / max | ratio (min..max) |",
 * and the same as JSON: @section and @series name the curve, @x its point
 * (ranges, VMAs or mappings), @unit the time unit after dividing by @scale.
 */
static void print_compare(const struct compare *c, double scale, const char *section,
			  const char *series, size_t x, const char *unit)
{
	printf(" %9.3f / %9.3f / %9.3f | %9.3f / %9.3f / %9.3f | %5.3f (%5.3f..%5.3f) |",
	       c->a.med / scale, c->a.min / scale, c->a.max / scale, c->b.med / scale,
	       c->b.min / scale, c->b.max / scale, c->ratio.med, c->ratio.min, c->ratio.max);
	if (!json_out)
		return;
	fprintf(json_out, "%s\n    {\"section\": \"%s\", \"series\": \"%s\", \"x\": %zu, "
		"\"unit\": \"%s\", ", json_first ? "" : ",", section, series, x, unit);
	json_stat("libthp", &c->a, scale, false);
	json_stat("raw", &c->b, scale, false);
	json_stat("ratio", &c->ratio, 1, true);
	fprintf(json_out, "}");
	json_first = false;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* ---------------------------------------------- targets (issue 15) */

/* One measured median beside its target, printed together at the end. */
struct target {
	char what[96];
	double measured, limit;
	const char *unit; /* "x": a ratio to the raw call; else an absolute overhead */
};

static struct target targets[32];
static size_t nr_targets;

static void note_target(const char *what, double measured, double limit, const char *unit)
{
	struct target *t;

	if (nr_targets == sizeof(targets) / sizeof(targets[0]))
		return;
	t = &targets[nr_targets++];
	snprintf(t->what, sizeof(t->what), "%s", what);
	t->measured = measured;
	t->limit = limit;
	t->unit = unit;
}

/*
 * The rest of a table row from REPS samples a side (print_compare()), and
 * its median ratio as a target when @target names one.
 */
static void ratio_row(const double *lib, const double *raw, double scale, const char *section,
		      const char *series, size_t x, const char *unit, const char *target,
		      double limit)
{
	struct compare cmp = compare(lib, raw, REPS);

	print_compare(&cmp, scale, section, series, x, unit);
	printf("\n");
	if (target)
		note_target(target, cmp.ratio.med, limit, "x");
}

static void print_targets(void)
{
	if (!nr_targets)
		return;
	printf("\n## Targets: every measured median beside its target\n\n");
	printf("| operation                                                    | measured   | target      | met |\n");
	printf("|--------------------------------------------------------------|-----------:|------------:|-----|\n");
	for (size_t i = 0; i < nr_targets; i++) {
		const struct target *t = &targets[i];
		bool ratio = !strcmp(t->unit, "x");

		printf("| %-60s | %8.3f%s | <= %6.3f%s | %s |\n", t->what, t->measured,
		       ratio ? "x " : t->unit, t->limit, ratio ? "x " : t->unit,
		       t->measured <= t->limit ? "yes" : "NO ");
		if (json_out) {
			fprintf(json_out, "%s\n    {\"section\": \"targets\", \"series\": \"%s\", "
				"\"measured\": %.6g, \"limit\": %.6g, \"unit\": \"%s\"}",
				json_first ? "" : ",", t->what, t->measured, t->limit, t->unit);
			json_first = false;
		}
	}
}

/* ------------------------------------------------ vm.max_map_count guard */

static const char map_count_path[] = "/proc/sys/vm/max_map_count";
static char orig_map_count[32];
static size_t orig_map_count_len;
static volatile sig_atomic_t map_count_raised;

static void restore_map_count(void)
{
	int fd;

	if (!map_count_raised)
		return;
	fd = open(map_count_path, O_WRONLY);
	if (fd >= 0) {
		if (write(fd, orig_map_count, orig_map_count_len) > 0)
			map_count_raised = 0;
		close(fd);
	}
}

static void on_signal(int sig)
{
	restore_map_count();
	signal(sig, SIG_DFL);
	raise(sig);
}

static long read_map_count(void)
{
	char buf[32];

	return read_file(map_count_path, buf, sizeof(buf)) > 0 ? strtol(buf, NULL, 10) : -1;
}

static void ensure_map_count(long need)
{
	char buf[32];
	long cur = read_map_count();
	int fd, len;

	if (cur < 0 || cur >= need)
		return;
	if (!orig_map_count_len) {
		fd = open(map_count_path, O_RDONLY);
		if (fd >= 0) {
			ssize_t n = read(fd, orig_map_count, sizeof(orig_map_count) - 1);

			close(fd);
			if (n > 0)
				orig_map_count_len = (size_t)n;
		}
		if (!orig_map_count_len)
			return;
		atexit(restore_map_count);
		signal(SIGINT, on_signal);
		signal(SIGTERM, on_signal);
	}
	fd = open(map_count_path, O_WRONLY);
	if (fd < 0) {
		fprintf(stderr, "warning: cannot raise vm.max_map_count: %s\n", strerror(errno));
		return;
	}
	len = snprintf(buf, sizeof(buf), "200000\n");
	map_count_raised = 1;
	if (write(fd, buf, (size_t)len) != len) {
		map_count_raised = 0;
		fprintf(stderr, "warning: cannot raise vm.max_map_count: %s\n", strerror(errno));
	}
	close(fd);
}

/* ------------------------------------------------------- raw interfaces */

static int raw_pidfd = -1;

static int get_raw_pidfd(void)
{
	struct iovec iov;
	void *p;

	if (raw_pidfd != -1)
		return raw_pidfd;
	/* PIDFD_SELF (process) if the kernel takes it, else a real pidfd. */
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		die("mmap");
	iov.iov_base = p;
	iov.iov_len = 4096;
	if (syscall(__NR_process_madvise, THP_PIDFD_SELF_PROCESS_NEW, &iov, 1, MADV_HUGEPAGE, 0) == 4096) {
		raw_pidfd = THP_PIDFD_SELF_PROCESS_NEW;
	} else {
		raw_pidfd = (int)syscall(__NR_pidfd_open, getpid(), 0);
		if (raw_pidfd < 0)
			die("pidfd_open");
	}
	munmap(p, 4096);
	return raw_pidfd;
}

static void raw_process_madvise(const struct iovec *iov, size_t n, int advice)
{
	long r = syscall(__NR_process_madvise, get_raw_pidfd(), iov, n, advice, 0);

	if (r < 0)
		die("process_madvise");
}

static void raw_madvise_loop(const struct iovec *iov, size_t n, int advice)
{
	for (size_t i = 0; i < n; i++)
		if (madvise(iov[i].iov_base, iov[i].iov_len, advice))
			die("madvise");
}

/* ------------------------------------------------- 1: thp_apply_ranges */

#define RANGE_LEN MIB       /* per mapping, at a 2 MiB-aligned start */
/*
 * The section is short and its ratios are a few percent apart: more
 * samples.  With 41, the 16-range median moved by +-1.5% from run to run
 * (1.005-1.034x over six runs) around a target of 1.03x.
 */
#define APPLY_REPS 101
_Static_assert(APPLY_REPS <= MAX_REPS, "room for every sample");
#define RANGE_STRIDE (4 * MIB) /* leaves an unmapped guard gap */

static char *map_ranges(size_t n, struct thp_range *r, struct iovec *iov)
{
	size_t total = n * RANGE_STRIDE + PMD;
	char *res = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *base;

	if (res == MAP_FAILED)
		die("mmap reserve");
	base = (char *)(((uintptr_t)res + PMD - 1) & ~(uintptr_t)(PMD - 1));
	munmap(res, total);
	for (size_t i = 0; i < n; i++) {
		char *a = base + i * RANGE_STRIDE;
		void *p = mmap(a, RANGE_LEN, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

		if (p != a)
			die("mmap range");
		r[i].addr = (uint64_t)(uintptr_t)a;
		r[i].len = RANGE_LEN;
		iov[i].iov_base = a;
		iov[i].iov_len = RANGE_LEN;
	}
	return base;
}

static void unmap_ranges(size_t n, const struct iovec *iov)
{
	for (size_t i = 0; i < n; i++)
		munmap(iov[i].iov_base, iov[i].iov_len);
}

/* Returns the median ratio. */
static double print_row(const char *label, size_t n, const char *unit_label,
			const double *lib, const double *raw, size_t reps, double scale)
{
	struct compare c = compare(lib, raw, reps);

	printf("| %-16s | %6zu |", label, n);
	print_compare(&c, scale, "apply", label, n, "us");
	printf("%s\n", unit_label);
	return c.ratio.med;
}

static void bench_apply(void)
{
	static const size_t counts[] = { 1, 16, 256, 1024 };
	static struct thp_range ranges[1024];
	static struct iovec iov[1024];
	static struct thp_report reports[1024];

	printf("\n## 1. thp_apply_ranges() vs raw, %d reps, %lu KiB mappings at 2 MiB-aligned starts, 4 MiB stride\n\n",
	       APPLY_REPS, RANGE_LEN / 1024);
	printf("Thread CPU time in microseconds per call (each sample = mean of 16..2000 back-to-back calls, every call flipping HUGE/NOHUGE, reports on), median / min / max; ratio = libthp / raw of the same rep (median (min..max)).\n\n");
	printf("| backend          | ranges | libthp med / min / max (us)       | raw med / min / max (us)          | ratio                 |\n");
	printf("|------------------|-------:|-----------------------------------|-----------------------------------|-----------------------|\n");
	for (unsigned int be = THP_BACKEND_PROCESS_MADVISE; be <= THP_BACKEND_MADVISE; be++) {
		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
			size_t n = counts[c];
			double lib[APPLY_REPS], raw[APPLY_REPS];
			int state = THP_ADVICE_NOHUGE;
			/*
			 * Each sample times `inner` calls (>= ~2 ms here) to beat
			 * timer noise: at 0.5 ms a sample the 256-range median
			 * moved by 4% from run to run.
			 */
			int inner = n == 1 ? 2000 : n == 16 ? 800 : n == 256 ? 64 : 16;

			map_ranges(n, ranges, iov);
			/* The mappings start with no advice: bring them to NOHUGE. */
			raw_madvise_loop(iov, n, MADV_NOHUGEPAGE);
			for (int rep = -2; rep < APPLY_REPS; rep++) {
				for (int k = 0; k < 2; k++) {
					bool do_lib = (rep & 1) ? k == 1 : k == 0;
					double t0 = cpu_ns(), t1;

					/* An even number of calls, each flipping the advice. */
					for (int j = 0; j < inner; j++) {
						int advice = state == THP_ADVICE_HUGE ? THP_ADVICE_NOHUGE
										      : THP_ADVICE_HUGE;

						if (do_lib) {
							/*
							 * process_madvise is what the auto
							 * choice gives on this kernel: time
							 * that path, selection included.
							 */
							THP_OPTS(thp_apply_opts, o, .pidfd = THP_SELF,
								 .advice = advice,
								 .backend = be == THP_BACKEND_PROCESS_MADVISE
									? THP_BACKEND_AUTO : be,
								 .reports = reports);
							int ret = thp_apply_ranges(ranges, n, &o);

							if (ret != (int)n) {
								fprintf(stderr, "thp_apply_ranges: %d %s\n",
									ret, thp_strerror(ret));
								exit(1);
							}
							/* The row is labelled with the backend it measures. */
							if (o.backend_used != be) {
								fprintf(stderr, "thp_apply_ranges used backend %s, "
									"the row measures %s\n",
									thp_backend_name(o.backend_used),
									thp_backend_name(be));
								exit(1);
							}
						} else if (be == THP_BACKEND_PROCESS_MADVISE) {
							raw_process_madvise(iov, n, advice);
						} else {
							raw_madvise_loop(iov, n, advice);
						}
						state = advice;
					}
					t1 = cpu_ns();
					if (rep >= 0) {
						if (do_lib)
							lib[rep] = (t1 - t0) / inner;
						else
							raw[rep] = (t1 - t0) / inner;
					}
				}
			}
			double ratio = print_row(be == THP_BACKEND_PROCESS_MADVISE ? "auto: proc_madvise"
										   : "madvise loop",
						 n, "", lib, raw, APPLY_REPS, 1e3);

			if (be == THP_BACKEND_PROCESS_MADVISE) {
				char what[96];

				snprintf(what, sizeof(what),
					 "thp_apply_ranges(), %zu range%s, vs process_madvise()", n,
					 n == 1 ? "" : "s");
				note_target(what, ratio, n == 1 ? 1.05 : 1.03, "x");
			}
			unmap_ranges(n, iov);
		}
	}
}

/* ------------------------------------------------ many small mappings */

static void **small_maps;
static size_t nr_small;

static void make_small_maps(size_t n)
{
	small_maps = calloc(n, sizeof(*small_maps));
	if (!small_maps)
		die("calloc");
	for (size_t i = 0; i < n; i++) {
		int prot = (i & 1) ? PROT_READ | PROT_WRITE : PROT_READ;

		small_maps[i] = mmap(NULL, 4096, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (small_maps[i] == MAP_FAILED)
			die("mmap small (vm.max_map_count?)");
	}
	nr_small = n;
}

static void free_small_maps(void)
{
	for (size_t i = 0; i < nr_small; i++)
		munmap(small_maps[i], 4096);
	free(small_maps);
	small_maps = NULL;
	nr_small = 0;
}

static size_t count_maps(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	size_t n = 0;
	int ch;

	if (!f)
		die("/proc/self/maps");
	while ((ch = getc(f)) != EOF)
		n += ch == '\n';
	fclose(f);
	return n;
}

#if UINTPTR_MAX > 0xffffffffu
#define TASK_END 0x7ffffffff000UL
#else
/* A 32-bit program on a 64-bit kernel: 4 GiB less one page. */
#define TASK_END 0xfffff000UL
#endif

/*
 * The kernel's lower bound for advising every mapping: one madvise() over
 * the whole user address space (ENOMEM only says there were gaps).  ns.
 */
static double time_madvise_all(int advice, double (*clk)(void))
{
	double t0, t1;
	int ret, e;

	t0 = clk();
	ret = madvise(NULL, TASK_END, advice);
	e = errno;
	t1 = clk();
	if (ret && e != ENOMEM)
		die("madvise(0, TASK_END)");
	return t1 - t0;
}

/* ------------------------------------------------------ 2: thp_apply_all */

static void collapse_table(bool eligible);

static void bench_all(void)
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

/* ------------------------------------------------- 3: VMA enumeration */

static size_t walk_procmap_query(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	uint64_t addr = 0;
	size_t n = 0;

	if (fd < 0)
		die("open maps");
	for (;;) {
		struct procmap_query q;

		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.query_addr = addr;
		q.query_flags = PROCMAP_QUERY_COVERING_OR_NEXT_VMA;
		if (ioctl(fd, PROCMAP_QUERY, &q)) {
			if (errno == ENOENT)
				break;
			die("PROCMAP_QUERY");
		}
		addr = q.vma_end;
		n++;
	}
	close(fd);
	return n;
}

static uint64_t parse_hex(const char **p, const char *end)
{
	uint64_t v = 0;

	while (*p < end) {
		char ch = **p;

		if (ch >= '0' && ch <= '9')
			v = v << 4 | (uint64_t)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			v = v << 4 | (uint64_t)(ch - 'a' + 10);
		else
			break;
		(*p)++;
	}
	return v;
}

static size_t walk_maps_text(void)
{
	static char buf[1 << 16];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t len = 0, n = 0;
	uint64_t sum = 0;

	if (fd < 0)
		die("open maps");
	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - len);
		const char *p = buf, *e;

		if (r < 0)
			die("read maps");
		len += (size_t)r;
		e = buf + len;
		for (;;) {
			const char *nl = memchr(p, '\n', (size_t)(e - p));
			uint64_t s, t;

			if (!nl)
				break;
			s = parse_hex(&p, nl);
			if (p < nl && *p == '-')
				p++;
			t = parse_hex(&p, nl);
			sum += t - s;
			n++;
			p = nl + 1;
		}
		len = (size_t)(e - p);
		memmove(buf, p, len);
		if (r == 0)
			break;
	}
	close(fd);
	return sum ? n : 0;
}

static void bench_vma(void)
{
	static const size_t counts[] = { 100, 10000, 60000 };

	printf("\n## 3. VMA enumeration: PROCMAP_QUERY ioctl loop vs /proc/self/maps text, %d reps\n\n", REPS);
	printf("Times in milliseconds per full walk; ratio = ioctl / text of the same rep.\n\n");
	printf("| created | VMAs   | ioctl med / min / max (ms)        | text med / min / max (ms)         | ratio                 | faster |\n");
	printf("|--------:|-------:|-----------------------------------|-----------------------------------|-----------------------|--------|\n");
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t n = counts[c], vq = 0, vt = 0;
		double tq[REPS], tt[REPS];
		struct compare cmp;

		ensure_map_count((long)n + 5000);
		make_small_maps(n);
		for (int rep = -2; rep < REPS; rep++) {
			double t0, t1, t2;

			t0 = now_ns();
			vq = walk_procmap_query();
			t1 = now_ns();
			vt = walk_maps_text();
			t2 = now_ns();
			if (rep >= 0) {
				tq[rep] = t1 - t0;
				tt[rep] = t2 - t1;
			}
		}
		cmp = compare(tq, tt, REPS);
		printf("| %7zu | %6zu |", n, vq);
		print_compare(&cmp, 1e6, "vma", "PROCMAP_QUERY vs maps text", vq, "ms");
		printf(" %s |\n", cmp.ratio.med < 1 ? "ioctl" : "text");
		if (vq + 1 < vt || vt + 1 < vq) /* text also lists [vsyscall] */
			printf("(warning: ioctl saw %zu VMAs, text %zu)\n", vq, vt);
		free_small_maps();
	}
}

/* ---------------------------------------------------------- 4: effect */

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

static void bench_effect(void)
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

/* ---------------------------------------------------- 6: default policy */

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

static void bench_default(void)
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

/* ------------------------------------------------------------ 7: query */

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

static void bench_query(void)
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

static void bench_query_sizes(void)
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

/* -------------------------------------------------------------- 8: run */

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

static void bench_run(void)
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

/* ---------------------------------------------------------------- inject */

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

static void bench_inject(void)
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

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	static const char *const names[] = { "apply", "all", "vma", "effect", "default", "query",
					     "run", "inject", "query-sizes" };
	enum { NR_SECTIONS = sizeof(names) / sizeof(names[0]) };
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
			if (!strcmp(argv[i], names[k]))
				want[k] = found = any = true;
		if (!found) {
			fprintf(stderr, "usage: %s [--json FILE] [apply] [all] [vma] [effect] [default] "
				"[query] [run] [inject] [query-sizes]\n", argv[0]);
			return 2;
		}
	}
	/* query-sizes needs root (frame numbers): asked for by name only. */
	for (int k = 0; k < NR_SECTIONS - 1 && !any; k++)
		want[k] = true;
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
	if (want[0])
		bench_apply();
	if (want[1])
		bench_all();
	if (want[2])
		bench_vma();
	if (want[3])
		bench_effect();
	if (want[4])
		bench_default();
	if (want[5])
		bench_query();
	if (want[6])
		bench_run();
	if (want[7]) {
		bench_inject();
		bench_inject_many();
	}
	if (want[8])
		bench_query_sizes();
	restore_map_count();
	print_targets();
	if (json_out) {
		fprintf(json_out, "\n]}\n");
		if (fclose(json_out))
			die("--json");
	}
	return 0;
}
