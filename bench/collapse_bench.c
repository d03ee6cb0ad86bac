// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_collapse() against the raw system calls it issues, and what its
 * shared-page check (max_shared_pages) costs and saves.
 *
 * Each repetition maps EXTENTS 2 MiB-aligned extents of this process,
 * fills them in base pages, and collapses them three ways, in turn and
 * each on fresh memory (the order rotates between repetitions):
 *   raw      process_madvise(MADV_COLLAPSE) per extent, on a pidfd of self;
 *   libthp   thp_collapse() with max_shared_pages = 512: no shared check;
 *   checked  thp_collapse() with the default (khugepaged's max_ptes_shared),
 *            which reads the extent's 4 KiB of pagemap entries first.
 * Then "fork": the same with a child holding the pages copy-on-write.
 * libthp (no limit) collapses and so copies every extent; checked leaves
 * them alone.  The tables give time medians, min and max in ms, and the
 * ratios to raw and to libthp per repetition (median, min..max).
 *
 * Usage: collapse_bench [REPS]  (default 21).  Needs CAP_SYS_NICE only
 * for another process; this one collapses itself.  THP mode "always" would
 * make the fill huge already: the benchmark refuses it.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thp/thp.h>

#include "bench_stats.h"
#include "clock_ns.h"

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_process_madvise
#define SYS_process_madvise 440
#endif

#define PMD (2UL << 20)
#define EXTENTS 32

enum way {
	RAW,
	LIBTHP,
	CHECKED,
	NR_WAYS,
};
static const char *const way_names[NR_WAYS] = { "raw", "libthp", "checked" };

static int self_pidfd;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* EXTENTS aligned extents, written page by page: base pages, not huge. */
static char *fill(void)
{
	size_t len = EXTENTS * PMD;
	char *raw = mmap(NULL, len + PMD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *p;

	if (raw == MAP_FAILED)
		die("mmap");
	p = (char *)(((uintptr_t)raw + PMD - 1) & ~(PMD - 1));
	if (p > raw)
		munmap(raw, (size_t)(p - raw));
	munmap(p + len, (size_t)(raw + PMD - p));
	for (size_t off = 0; off < len; off += 4096)
		p[off] = (char)(off >> 12 | 1);
	return p;
}

/* One way over the extents at @p: seconds, and the extents it collapsed. */
static double collapse(enum way w, char *p, uint64_t *collapsed)
{
	uint64_t t0 = now_ns();

	*collapsed = 0;
	if (w == RAW) {
		for (size_t i = 0; i < EXTENTS; i++) {
			struct iovec iov = { p + i * PMD, PMD };

			if (syscall(SYS_process_madvise, self_pidfd, &iov, 1, MADV_COLLAPSE, 0) ==
			    (long)PMD)
				(*collapsed)++;
		}
	} else {
		THP_OPTS(thp_collapse_opts, o, .pidfd = THP_SELF,
			 .max_shared_pages = w == LIBTHP ? (uint32_t)(PMD / 4096) : 0);

		if (thp_collapse(&o) < 0)
			die("thp_collapse");
		*collapsed = o.extents_collapsed;
	}
	return (double)(now_ns() - t0) / 1e9;
}

/* A child that holds the pages copy-on-write until killed. */
static pid_t hold(void)
{
	int fds[2];
	char c;
	pid_t pid;

	if (pipe(fds))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0) {
		close(fds[0]);
		if (write(fds[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &c, 1) != 1)
		die("child");
	close(fds[0]);
	return pid;
}

static void row(const char *name, const double *t, const double *raw, const double *lib, int reps)
{
	struct compare c = compare(t, raw, (size_t)reps), l = compare(t, lib, (size_t)reps);

	printf("| %-26s | %8.3f / %8.3f / %8.3f | %5.3f (%5.3f..%5.3f) | %5.3f (%5.3f..%5.3f) |\n",
	       name, c.a.med * 1e3, c.a.min * 1e3, c.a.max * 1e3, c.ratio.med, c.ratio.min,
	       c.ratio.max, l.ratio.med, l.ratio.min, l.ratio.max);
}

static bool mode_always(void)
{
	char buf[128] = "";
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");

	if (f) {
		if (!fgets(buf, sizeof(buf), f))
			buf[0] = 0;
		fclose(f);
	}
	return strstr(buf, "[always]") != NULL;
}

int main(int argc, char **argv)
{
	int reps = argc > 1 ? atoi(argv[1]) : 21;
	static double t[2][NR_WAYS][MAX_REPS];
	uint64_t got[2][NR_WAYS] = { { 0 } };

	if (reps < 1 || reps > MAX_REPS) {
		fprintf(stderr, "usage: %s [REPS: 1..%d]\n", argv[0], MAX_REPS);
		return 2;
	}
	if (mode_always()) {
		fprintf(stderr, "collapse_bench: THP mode is always: the fill would be huge already\n");
		return 1;
	}
	self_pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (self_pidfd < 0)
		die("pidfd_open");
	for (int r = 0; r < reps; r++) {
		for (int forked = 0; forked < 2; forked++) {
			for (int k = 0; k < NR_WAYS; k++) {
				enum way w = (enum way)((k + r) % NR_WAYS);
				char *p = fill();
				pid_t child = forked ? hold() : 0;
				uint64_t n;

				t[forked][w][r] = collapse(w, p, &n);
				got[forked][w] += n;
				if (child) {
					kill(child, SIGKILL);
					waitpid(child, NULL, 0);
				}
				munmap(p, EXTENTS * PMD);
			}
		}
	}
	printf("# collapse_bench: libthp %s, %d extents of 2 MiB, %d repetitions, order rotated\n",
	       thp_version(), EXTENTS, reps);
	printf("# ms: median / min / max; ratios per repetition: median (min..max)\n\n");
	for (int forked = 0; forked < 2; forked++) {
		printf("%s\n\n| way | ms | ratio to raw | ratio to libthp |\n|---|---|---|---|\n",
		       forked ? "With a fork child holding every page (all 512 shared):"
			      : "Private memory (no page shared):");
		for (int w = 0; w < NR_WAYS; w++) {
			char name[64];

			snprintf(name, sizeof(name), "%s (%.1f collapsed)", way_names[w],
				 (double)got[forked][w] / reps);
			row(name, t[forked][w], t[forked][RAW], t[forked][LIBTHP], reps);
		}
		printf("\n");
	}
	return 0;
}
