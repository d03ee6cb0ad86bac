/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What thp_bench's benchmarks share (common.c), and each one's entry point. */
#ifndef THP_BENCH_H
#define THP_BENCH_H

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

#if UINTPTR_MAX > 0xffffffffu
#define TASK_END 0x7ffffffff000UL
#else
/* A 32-bit program on a 64-bit kernel: 4 GiB less one page. */
#define TASK_END 0xfffff000UL
#endif

/* common.c: clocks where a clock is passed as a function, in ns. */
double mono_ns(void); /* CLOCK_MONOTONIC */
double cpu_ns(void);  /* this thread's CPU time, its system calls included */

/* --json FILE: every compared row also as one JSON object (bench/charts.py). */
extern FILE *json_out;
extern bool json_first;

/*
 * A row's cells "a med / min / max | b med / min / max | ratio (min..max) |",
 * and the same as JSON: @section and @series name the curve, @x its point
 * (ranges, VMAs or mappings), @unit the time unit after dividing by @scale.
 */
void print_compare(const struct compare *c, double scale, const char *section,
		   const char *series, size_t x, const char *unit);
_Noreturn void die(const char *what);

/* The issue-15 targets: each measured median beside its target, printed at the end. */
void note_target(const char *what, double measured, double limit, const char *unit);
void ratio_row(const double *lib, const double *raw, double scale, const char *section,
	       const char *series, size_t x, const char *unit, const char *target,
	       double limit);
void print_targets(void);

/* vm.max_map_count raised to @need if lower (root only), restored at exit and on signals. */
void ensure_map_count(long need);
void restore_map_count(void);

/* The raw interfaces libthp is compared with. */
int get_raw_pidfd(void);
void raw_process_madvise(const struct iovec *iov, size_t n, int advice);
void raw_madvise_loop(const struct iovec *iov, size_t n, int advice);

/*
 * @n mappings of RANGE_LEN at 2 MiB-aligned starts RANGE_STRIDE apart, as
 * ranges and as iovecs; returns the first.
 */
#define RANGE_LEN MIB	       /* per mapping, at a 2 MiB-aligned start */
#define RANGE_STRIDE (4 * MIB) /* leaves an unmapped guard gap */
char *map_ranges(size_t n, struct thp_range *r, struct iovec *iov);
void unmap_ranges(size_t n, const struct iovec *iov);

/* @n one-page mappings, alternately read-only and writable. */
extern void **small_maps;
extern size_t nr_small;
void make_small_maps(size_t n);
void free_small_maps(void);
size_t count_maps(void);
double time_madvise_all(int advice, double (*clk)(void));

/* The benchmarks, one file each, in thp_bench.c's table. */
void bench_apply(void);
void bench_all(void);
void bench_vma(void);
void bench_effect(void);
void bench_default(void);
void bench_query(void);
void bench_query_sizes(void);
void bench_run(void);
void bench_inject(void);

#endif
