/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * apply_report: advise three anonymous regions, one with a hole, with
 * THP_ADVICE_HUGE through thp_apply_ranges(), and show what the per-range
 * reports say.
 *
 *   1. Default mode: the hole is an error (-ENOMEM, as madvise() would say),
 *      the mapped parts of that range are still advised, and the range after
 *      it is not attempted.
 *   2. THP_F_SKIP_ERRORS: best effort; the hole is not an error and every
 *      range is advised.
 *   3. The memory is touched and thp_query() reads AnonHugePages back per
 *      region from /proc/self/smaps.
 *
 * Exit status: 0 when the library behaved as documented, 1 when it did not,
 * 77 (skip) when this machine cannot show huge pages at all (THP "never").
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <thp/thp.h>

#define NR_REGIONS 3
#define MIB (1024.0 * 1024.0)

/* Layout, in units of one PMD page (2 MiB on x86-64), from an aligned base:
 *
 *   0 1 | 2 | 3 [4] 5 | 6 | 7 8
 *   A A   -   B hole B   -   C C
 *
 * "-" are unmapped guards so the regions never merge into one VMA; the
 * hole inside B is the gap that madvise() semantics turn into ENOMEM.
 */
static const struct {
	const char *name;
	unsigned int first, units;
} layout[NR_REGIONS] = {
	{ "A", 0, 2 },
	{ "B", 3, 3 }, /* unit 4 is the hole */
	{ "C", 7, 2 },
};
#define HOLE_UNIT 4
#define GUARD_UNITS_LO 2
#define GUARD_UNITS_HI 6
#define TOTAL_UNITS 9

static uintptr_t base;
static uint64_t unit;
static int failures;

static void check(bool ok, const char *what)
{
	if (!ok) {
		printf("  FAIL: %s\n", what);
		failures++;
	}
}

static const char *errname(int e)
{
	if (e == 0)
		return "-";
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
	const char *n = strerrorname_np(e);
	if (n)
		return n;
#endif
	static char buf[16];
	snprintf(buf, sizeof(buf), "%d", e);
	return buf;
}

/* Offset from the base, in MiB, to keep the table readable. */
static double off_mib(uint64_t addr)
{
	return (double)(addr - base) / MIB;
}

static void print_reports(const struct thp_report *r, size_t n)
{
	printf("  %-3s %-17s %9s %9s %9s %-8s %-16s %s\n", "#", "range (MiB off)",
	       "advised", "unmapped", "fail@", "errno", "backend", "tried");
	for (size_t i = 0; i < n; i++) {
		char range[32], fail[16];

		snprintf(range, sizeof(range), "%5.0f..%-5.0f",
			 off_mib(r[i].addr), off_mib(r[i].addr + r[i].len));
		if (r[i].fail_addr)
			snprintf(fail, sizeof(fail), "%.0fM", off_mib(r[i].fail_addr));
		else
			snprintf(fail, sizeof(fail), "-");
		printf("  %-3zu %-17s %8.0fM %8.0fM %9s %-8s %-16s %s\n", i, range,
		       (double)r[i].bytes_advised / MIB,
		       (double)r[i].bytes_unmapped / MIB, fail,
		       errname(r[i].error), thp_backend_name(r[i].backend),
		       r[i].attempted ? "yes" : "no");
	}
	printf("  thp_report_format():\n");
	for (size_t i = 0; i < n; i++) {
		char line[256];
		int need = thp_report_format(&r[i], line, sizeof(line));

		check(need > 0, "thp_report_format() returns the line length");
		check(need < (int)sizeof(line) ? strlen(line) == (size_t)need : true,
		      "thp_report_format() length matches the text");
		printf("    [%zu] %s\n", i, line);
	}
}

static int map_layout(void)
{
	size_t total = (size_t)(TOTAL_UNITS + 1) * unit;
	void *p = mmap(NULL, total, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		return -1;
	}
	/* Trim to a PMD-aligned window of TOTAL_UNITS units. */
	uintptr_t start = (uintptr_t)p;
	uintptr_t aligned = (start + unit - 1) & ~(uintptr_t)(unit - 1);
	uintptr_t end = start + total;

	if (aligned > start)
		munmap(p, aligned - start);
	if (end > aligned + TOTAL_UNITS * unit)
		munmap((void *)(uintptr_t)(aligned + TOTAL_UNITS * unit),
		       end - (aligned + TOTAL_UNITS * unit));
	base = aligned;
	/* Guards between regions, and the hole in the middle of B. */
	if (munmap((void *)(uintptr_t)(base + GUARD_UNITS_LO * unit), unit) ||
	    munmap((void *)(uintptr_t)(base + GUARD_UNITS_HI * unit), unit) ||
	    munmap((void *)(uintptr_t)(base + HOLE_UNIT * unit), unit)) {
		perror("munmap");
		return -1;
	}
	return 0;
}

static uint64_t region_addr(unsigned int i)
{
	return base + layout[i].first * unit;
}

static uint64_t region_len(unsigned int i)
{
	return layout[i].units * unit;
}

/* Bytes of region i that are mapped (B loses its hole). */
static uint64_t region_mapped(unsigned int i)
{
	return region_len(i) - (i == 1 ? unit : 0);
}

int main(void)
{
	THP_OPTS(thp_probe_info, info);
	struct thp_range ranges[NR_REGIONS];
	struct thp_report reports[NR_REGIONS];
	int ret;

	/* Line-buffered, so the output reads in order when piped (meson test). */
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("libthp %s\n", thp_version());
	ret = thp_probe(&info);
	if (ret < 0) {
		printf("thp_probe: %s\n", thp_strerror(ret));
		return 1;
	}
	static const char *const modes[] = { "always", "madvise", "never", "unknown" };
	printf("sysfs THP mode: %s, PMD size: %" PRIu64 " KiB, backends:",
	       modes[info.thp_mode < 4 ? info.thp_mode : 3], info.pmd_size / 1024);
	for (unsigned int b = 1; b < THP_BACKEND_COUNT; b++)
		if (info.backends & (1u << b))
			printf(" %s", thp_backend_name(b));
	printf("\n");

	unit = info.pmd_size ? info.pmd_size : 2u << 20;
	if (map_layout())
		return 1;
	printf("\nregions (offsets in MiB from %#" PRIxPTR "):\n", base);
	for (unsigned int i = 0; i < NR_REGIONS; i++) {
		ranges[i].addr = region_addr(i);
		ranges[i].len = region_len(i);
		printf("  %s: %5.0f..%-5.0f %s\n", layout[i].name,
		       off_mib(ranges[i].addr),
		       off_mib(ranges[i].addr + ranges[i].len),
		       i == 1 ? "(hole at 8..10 unmapped)" : "");
	}

	/* ---- 1. default mode: the hole is an error ---- */
	printf("\n1) thp_apply_ranges(HUGE, flags = 0)\n");
	memset(reports, 0xa5, sizeof(reports)); /* the library must fill them */
	{
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE,
			 .reports = reports);
		errno = 0;
		ret = thp_apply_ranges(ranges, NR_REGIONS, &o);
		int saved = errno;

		printf("  return %d (%s), errno %s, backend %s\n", ret,
		       ret < 0 ? thp_strerror(ret) : "ok", errname(saved),
		       thp_backend_name(o.backend_used));
		if (ret < 0 && *thp_strerror_detail())
			printf("  detail: %s\n", thp_strerror_detail());
		print_reports(reports, NR_REGIONS);
		check(ret == -ENOMEM, "default mode returns -ENOMEM for the hole");
		check(saved == ENOMEM, "errno is ENOMEM too");
		check(reports[0].attempted && reports[0].error == 0 &&
			      reports[0].bytes_advised == region_len(0) &&
			      reports[0].bytes_unmapped == 0,
		      "range A advised completely");
		check(reports[1].attempted && reports[1].error == ENOMEM,
		      "range B fails with ENOMEM");
		check(reports[1].fail_addr == base + HOLE_UNIT * unit,
		      "range B fail address is the start of the hole");
		check(reports[1].bytes_unmapped == unit,
		      "range B reports the hole as unmapped");
		check(reports[1].bytes_advised == region_mapped(1),
		      "range B's mapped parts are still advised");
		check(!reports[2].attempted && reports[2].bytes_advised == 0,
		      "range C is not attempted after the stop");
		for (unsigned int i = 0; i < NR_REGIONS; i++)
			check(reports[i].addr == ranges[i].addr &&
				      reports[i].len == ranges[i].len,
			      "report carries the requested range");
	}

	/* ---- 2. best effort ---- */
	printf("\n2) thp_apply_ranges(HUGE, THP_F_SKIP_ERRORS)\n");
	memset(reports, 0xa5, sizeof(reports));
	{
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE,
			 .flags = THP_F_SKIP_ERRORS, .reports = reports);
		ret = thp_apply_ranges(ranges, NR_REGIONS, &o);
		printf("  return %d (%s), backend %s\n", ret,
		       ret < 0 ? thp_strerror(ret) : "ranges advised without error",
		       thp_backend_name(o.backend_used));
		print_reports(reports, NR_REGIONS);
		check(ret == NR_REGIONS,
		      "SKIP_ERRORS: a gap is no failure, all 3 ranges count");
		for (unsigned int i = 0; i < NR_REGIONS; i++) {
			check(reports[i].attempted && reports[i].error == 0 &&
				      reports[i].fail_addr == 0,
			      "SKIP_ERRORS: no range reports an error");
			check(reports[i].bytes_advised == region_mapped(i),
			      "SKIP_ERRORS: every mapped byte is advised");
			check(reports[i].bytes_unmapped ==
				      region_len(i) - region_mapped(i),
			      "SKIP_ERRORS: unmapped bytes are the hole only");
		}
	}

	/* ---- 3. touch, then read AnonHugePages back ---- */
	for (unsigned int i = 0; i < NR_REGIONS; i++)
		for (uint64_t a = region_addr(i); a < region_addr(i) + region_len(i);
		     a += unit)
			if (i != 1 || a != base + HOLE_UNIT * unit)
				memset((void *)(uintptr_t)a, 0x5a, (size_t)unit);

	printf("\n3) touched every mapped byte; thp_query() per region:\n");
	printf("  %-6s %-4s %-8s %-4s %10s %10s\n", "region", "vmas", "advised",
	       "elig", "Rss", "AnonHuge");
	uint64_t total_huge = 0;
	for (unsigned int i = 0; i < NR_REGIONS; i++) {
		struct thp_mapping_state st[4];
		THP_OPTS(thp_query_opts, q, .addr = region_addr(i),
			 .len = region_len(i), .states = st, .states_cap = 4);
		uint64_t huge = 0, rss = 0;
		bool advised = true, eligible = true;

		ret = thp_query(&q);
		if (ret < 0) {
			printf("  thp_query(%s): %s\n", layout[i].name, thp_strerror(ret));
			failures++;
			continue;
		}
		for (int k = 0; k < ret; k++) {
			huge += st[k].anon_huge_bytes;
			rss += st[k].rss_bytes;
			advised = advised && st[k].advised_huge;
			eligible = eligible && st[k].thp_eligible;
		}
		total_huge += huge;
		printf("  %-6s %-4d %-8s %-4s %9.0fM %9.0fM\n", layout[i].name, ret,
		       advised ? "huge" : "no", eligible ? "yes" : "no",
		       (double)rss / MIB, (double)huge / MIB);
		check(ret == (i == 1 ? 2 : 1) && q.states_needed == (size_t)ret,
		      "thp_query finds one mapping per region piece");
		check(advised, "smaps shows VM_HUGEPAGE (hg) on every piece");
		check(rss == region_mapped(i), "Rss covers every touched byte");
	}

	if (info.thp_mode == THP_MODE_NEVER) {
		printf("\nTHP is \"never\" system-wide: no huge pages to show.\n");
		return failures ? 1 : 77;
	}
	check(total_huge > 0, "AnonHugePages > 0 in at least one region");
	if (failures) {
		printf("\n%d check(s) failed: the library misbehaved\n", failures);
		return 1;
	}
	printf("\nok: %.0f MiB of %.0f MiB touched are huge pages\n",
	       (double)total_huge / MIB,
	       (double)(region_mapped(0) + region_mapped(1) + region_mapped(2)) / MIB);
	return 0;
}
