// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What the benchmarks share: the table and JSON output, the targets
 * printed at the end, the vm.max_map_count guard, the raw interfaces and
 * many small mappings.
 */
#include "bench.h"

/* ---------------------------------------------------------------- utils */

/* now_ns() (CLOCK_MONOTONIC) where a clock is passed as a function. */
double mono_ns(void)
{
	return (double)now_ns();
}

/* CPU time of this thread, kernel time (the system calls) included. */
double cpu_ns(void)
{
	return (double)clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* --json FILE: every compared row also as one JSON object (bench/charts.py). */
FILE *json_out;
bool json_first = true;

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
void print_compare(const struct compare *c, double scale, const char *section,
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

_Noreturn void die(const char *what)
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

void note_target(const char *what, double measured, double limit, const char *unit)
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
void ratio_row(const double *lib, const double *raw, double scale, const char *section,
		      const char *series, size_t x, const char *unit, const char *target,
		      double limit)
{
	struct compare cmp = compare(lib, raw, REPS);

	print_compare(&cmp, scale, section, series, x, unit);
	printf("\n");
	if (target)
		note_target(target, cmp.ratio.med, limit, "x");
}

void print_targets(void)
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

void restore_map_count(void)
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

void ensure_map_count(long need)
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

int get_raw_pidfd(void)
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

void raw_process_madvise(const struct iovec *iov, size_t n, int advice)
{
	long r = syscall(__NR_process_madvise, get_raw_pidfd(), iov, n, advice, 0);

	if (r < 0)
		die("process_madvise");
}

void raw_madvise_loop(const struct iovec *iov, size_t n, int advice)
{
	for (size_t i = 0; i < n; i++)
		if (madvise(iov[i].iov_base, iov[i].iov_len, advice))
			die("madvise");
}


/* ------------------------------------------------ many small mappings */

void **small_maps;
size_t nr_small;

void make_small_maps(size_t n)
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

void free_small_maps(void)
{
	for (size_t i = 0; i < nr_small; i++)
		munmap(small_maps[i], 4096);
	free(small_maps);
	small_maps = NULL;
	nr_small = 0;
}

size_t count_maps(void)
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


/*
 * The kernel's lower bound for advising every mapping: one madvise() over
 * the whole user address space (ENOMEM only says there were gaps).  ns.
 */
double time_madvise_all(int advice, double (*clk)(void))
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

/* ------------------------------------------------- ranges (apply, inject) */

char *map_ranges(size_t n, struct thp_range *r, struct iovec *iov)
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

void unmap_ranges(size_t n, const struct iovec *iov)
{
	for (size_t i = 0; i < n; i++)
		munmap(iov[i].iov_base, iov[i].iov_len);
}
