// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz the request paths: thp_apply_ranges(), thp_apply_all(), thp_query()
 * with arbitrary options struct sizes and tails, flags, advice, backends,
 * targets and ranges, most of them relative to a real 64 MiB area (with
 * holes and a NOHUGE part), some arbitrary (unaligned, wrapping, kernel).
 *
 * Invariants (abort() on violation):
 * - returns lie in [-4095, nr_ranges] (apply_ranges), are exact counts;
 * - advice that is not THP advice never gets past validation (-EINVAL or
 *   -E2BIG), and the pattern-filled parts of the area keep their checksum
 *   after every call: no data is ever lost;
 * - every report is self-consistent;
 * - a sentinel mapping outside the area never gets hg / nh in VmFlags from
 *   anything but thp_apply_all() (checked every 100 inputs, via smaps).
 *
 * Cost: the target runs in-process for every input (libFuzzer's persistent
 * mode; nothing forks).  The area and the sentinel are built once, at a low
 * address below the sanitizers' shadow memory, so that thp_query() and the
 * sentinel check, which read smaps from the bottom of the address space,
 * stop after a handful of entries instead of walking the shadow's page
 * tables; the area is rebuilt every RESET_EVERY inputs, which undoes the
 * VMA splits and advice that inputs accumulate.  The checksum loop is kept
 * out of the coverage instrumentation (no branch in it is of interest).
 * Requests on this process can cost in proportion to the sanitizer shadow
 * memory: thp_apply_all() advises it (16 TiB; mainline process_madvise()
 * takes 2 GiB per call: ~10^4 calls, ~40 ms), so do thp_apply_ranges() with
 * more than COSTLY_BYTES outside the low reservation, and a thp_query() that
 * reaches above it reads its smaps (page-table walks, ~2 ms).  Each such
 * request is made on the first and then every COSTLY_SELF_EVERY-th input
 * asking for one of its kind (after the input is read, so the rest parses
 * the same); on other targets, within the low area, and when the library
 * must refuse it before any system call, always.  Data loss is
 * checked after every call on the first and last word of every pattern page
 * (memory is lost a page at a time), and over every byte every
 * SENTINEL_EVERY inputs.
 *
 * Input layout (missing bytes read as zero):
 *   u8 ops (bit0 apply_ranges, bit1 apply_all, bit2 query)
 *   u8 size selector, u8 tail selector, u8 target, u32 flags, u8 advice
 *   selector (+ i32 raw advice), u8 backend, u8 nr_ranges, ranges
 *   (u8 kind, then u16/u16 pages or u64/u64 raw), u8 caps.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fuzz.h"
#include "internal.h" /* validate_ranges() */
#include "thp/thp.h"

#define MIB (1024UL * 1024UL)
#define AREA_SIZE (64 * MIB)
#define GUARD (2 * MIB)
#define PAT_LEN (2 * MIB)         /* [0, 2 MiB): pattern, collapsible */
#define NOHUGE_OFF (4 * MIB)      /* [4, 8 MiB): MADV_NOHUGEPAGE */
#define NOHUGE_LEN (4 * MIB)
#define NOHUGE_PAT_LEN (512 * 1024UL)
#define MAX_RANGES 16
#define SENTINEL_EVERY 100
#define RESET_EVERY 1000
#define COSTLY_SELF_EVERY 64
/* Range bytes outside the area that make a thp_apply_ranges() costly (32 calls). */
#define COSTLY_BYTES (64ULL << 30)
/* Below the x86-64 ASan low shadow (0x7fff8000) and above non-PIE binaries. */
#define LOW_BASE 0x10000000UL

static uint8_t *area;
static uint8_t *sentinel;   /* middle page of three; the outer two are PROT_NONE */
static size_t page;
static uint64_t pat_sum;
#define PAT_PAGES_MAX ((PAT_LEN + NOHUGE_PAT_LEN) / 4096)
static uint64_t pat_edges[PAT_PAGES_MAX][2]; /* first and last word of each pattern page */
static int self_pidfd = -1, null_fd = -1;
static unsigned long iterations, apply_all_self_asked, query_self_asked,
	apply_ranges_self_asked;
/* The low reservation holding the area, its guards and the sentinel. */
static uint8_t *reserve_start, *reserve_end;

struct in {
	const uint8_t *p;
	size_t n;
};

static uint64_t take(struct in *in, unsigned int bytes)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < bytes; i++) {
		uint64_t b = 0;

		if (in->n) {
			b = *in->p++;
			in->n--;
		}
		v |= b << (8 * i);
	}
	return v;
}

static void fail(const char *what)
{
	fprintf(stderr, "fuzz_requests: invariant violated: %s\n", what);
	abort();
}

static uint8_t pattern_byte(size_t i)
{
	return (uint8_t)(i * 131 + 7 + (i >> 12));
}

/*
 * Any lost (zeroed or replaced) word changes the sum: each word is
 * multiplied by an odd constant, and its index is mixed in.  Written to
 * vectorize, and kept out of the sanitizers' instrumentation: it reads
 * 2.5 MiB per input and none of its branches is of interest.
 */
#if defined(__clang__)
__attribute__((no_sanitize("coverage", "address")))
#endif
static uint64_t sum_words(const uint64_t *w, size_t n)
{
	uint64_t s = 0;

	for (size_t i = 0; i < n; i++)
		s += (w[i] ^ (i * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
	return s;
}

static uint64_t checksum(void)
{
	return sum_words((const uint64_t *)area, PAT_LEN / 8) * 3 +
	       sum_words((const uint64_t *)(area + NOHUGE_OFF), NOHUGE_PAT_LEN / 8);
}

/* The pattern's pages, in order: [0, PAT_LEN), then the NOHUGE part's. */
static inline const uint64_t *pat_page(size_t i)
{
	size_t first = PAT_LEN / page;

	return (const uint64_t *)(i < first ? area + i * page
					    : area + NOHUGE_OFF + (i - first) * page);
}

static inline size_t pat_pages(void)
{
	return (PAT_LEN + NOHUGE_PAT_LEN) / page;
}

static void save_edges(void)
{
	for (size_t i = 0; i < pat_pages(); i++) {
		pat_edges[i][0] = pat_page(i)[0];
		pat_edges[i][1] = pat_page(i)[page / 8 - 1];
	}
}

static void sentinel_map(void)
{
	void *p = mmap(sentinel, page, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

	if (p != sentinel)
		fail("cannot (re)map the sentinel");
	sentinel[0] = 0x5a;
}

/* The sentinel's VmFlags carry neither hg nor nh. */
static void sentinel_check(void)
{
	char head[64], line[512];
	bool in = false, seen = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	if (!f)
		fail("cannot open /proc/self/smaps");
	/* smaps pads addresses to 8 digits (low mappings: valgrind, 32-bit). */
	snprintf(head, sizeof(head), "%08lx-", (unsigned long)(uintptr_t)sentinel);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, head, strlen(head))) {
			in = true;
			continue;
		}
		if (in && !strncmp(line, "VmFlags:", 8)) {
			seen = true;
			if (strstr(line, " hg") || strstr(line, " nh")) {
				fclose(f);
				fail("sentinel mapping outside the area changed VmFlags");
			}
			break;
		}
	}
	fclose(f);
	if (!seen)
		fail("sentinel mapping not found in smaps");
}


/*
 * Descriptor 0 is THP_SELF to libthp: started with stdin closed, the
 * helpers would get 0 and stand for this process.  Keep them above 2.
 */
static int above_std_fds(int fd)
{
	int moved = fd < 0 || fd > 2 ? fd : fcntl(fd, F_DUPFD_CLOEXEC, 3);

	if (moved != fd)
		close(fd);
	return moved;
}

/*
 * Reserve [start, start + len) PROT_NONE, low if possible (see the top of
 * the file); anywhere if that part of the address space is taken.
 */
static uint8_t *reserve_low(size_t len)
{
	for (uintptr_t at = LOW_BASE; at < 0x70000000UL; at += 0x8000000UL) {
		void *p = mmap((void *)at, len, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE,
			       -1, 0);

		if (p == (void *)at)
			return p;
		/* Kernels or emulators that take the flag as a hint only. */
		if (p != MAP_FAILED)
			munmap(p, len);
	}
	{
		void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			       -1, 0);

		if (p == MAP_FAILED)
			fail("mmap reserve");
		return p;
	}
}

/* The 64 MiB area: pattern, NOHUGE part, touched pages and holes. */
static void build_area(void)
{
	if (mmap(area, AREA_SIZE, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != area)
		fail("mmap area");
	if (madvise(area + NOHUGE_OFF, NOHUGE_LEN, MADV_NOHUGEPAGE))
		fail("madvise NOHUGE");
	for (size_t i = 0; i < PAT_LEN; i++)
		area[i] = pattern_byte(i);
	for (size_t i = 0; i < NOHUGE_PAT_LEN; i++)
		area[NOHUGE_OFF + i] = pattern_byte(i + 1);
	/* A few pages touched elsewhere, and holes of several sizes. */
	for (size_t off = 9 * MIB; off < AREA_SIZE; off += 5 * MIB + page)
		area[off] = 1;
	if (munmap(area + 12 * MIB, 64 * 1024) || munmap(area + 20 * MIB, 2 * MIB) ||
	    munmap(area + 40 * MIB + page, page) || munmap(area + AREA_SIZE - 3 * page, page))
		fail("munmap holes");
	pat_sum = checksum();
	save_edges();
}

static void setup(void)
{
	/* Guard, 2 MiB for alignment, area, guard, then the sentinel's 3 pages. */
	size_t total, sentinel_off;
	uint8_t *base;
	uintptr_t a;

	page = (size_t)sysconf(_SC_PAGESIZE);
	total = AREA_SIZE + 2 * GUARD + 2 * MIB + 3 * page;
	base = reserve_low(total);
	a = ((uintptr_t)base + GUARD + 2 * MIB - 1) & ~(uintptr_t)(2 * MIB - 1);
	area = (uint8_t *)a;
	build_area();

	/* Past the guard: out of read_range()'s reach, its own VMA between PROT_NONE. */
	reserve_start = base;
	reserve_end = base + total;
	sentinel_off = total - 2 * page;
	sentinel = base + sentinel_off;
	sentinel_map();
	sentinel_check();

	self_pidfd = above_std_fds((int)syscall(SYS_pidfd_open, getpid(), 0));
	null_fd = above_std_fds(open("/dev/null", O_RDONLY | O_CLOEXEC));
	if (self_pidfd < 0 || null_fd < 0)
		fail("cannot open helper descriptors");
}

static bool thp_advice(int advice)
{
	return advice == THP_ADVICE_HUGE || advice == THP_ADVICE_NOHUGE ||
	       advice == THP_ADVICE_COLLAPSE;
}

static int pick_target(uint8_t sel)
{
	switch (sel % 8) {
	case 4: return self_pidfd;
	case 5: return null_fd;
	case 6: return -1 - (int)(sel >> 3);
	case 7: return 1000 + (int)sel; /* almost surely not open */
	default: return THP_SELF;
	}
}

static int pick_advice(struct in *in)
{
	uint8_t sel = (uint8_t)take(in, 1);

	switch (sel % 8) {
	case 0: case 1: return THP_ADVICE_HUGE;
	case 2: case 3: return THP_ADVICE_NOHUGE;
	case 4: case 5: return THP_ADVICE_COLLAPSE;
	case 6: return (int)(sel >> 3) * 2; /* small: DONTNEED (4), FREE (8), ... */
	default: return (int)(uint32_t)take(in, 4);
	}
}

/* Options struct size: exact, short, or longer with a (maybe non-zero) tail. */
static size_t pick_size(uint8_t sel, size_t real)
{
	switch (sel % 4) {
	case 1: return (size_t)(sel >> 2) % real;
	case 2: return real + 8 * ((size_t)(sel >> 2) % 8);
	default: return real;
	}
}

static void put_tail(uint8_t *buf, size_t real, size_t sz, uint8_t tail)
{
	if (sz > real && (tail & 1))
		buf[real + (size_t)(tail >> 1) % (sz - real)] = (uint8_t)(tail | 1);
}

static void check_ret(int r, long lo, long hi, const char *what)
{
	if (r < lo || r > hi || r < -4095) {
		fprintf(stderr, "%s returned %d, outside [%ld, %ld]\n", what, r, lo, hi);
		fail("return value range");
	}
}

static void check_report(const struct thp_report *r)
{
	if (r->bytes_advised > r->len || r->bytes_unmapped > r->len - r->bytes_advised)
		fail("report: bytes_advised + bytes_unmapped > len");
	if (r->error == 0 && r->fail_addr != 0)
		fail("report: fail_addr without error");
	if (r->error < 0)
		fail("report: negative error");
	if (r->reserved0 || r->reserved[0] || r->reserved[1])
		fail("report: reserved words set");
}

/* The first pattern page whose edges changed, or pat_pages(). */
#if defined(__clang__)
__attribute__((no_sanitize("coverage", "address")))
#endif
static size_t changed_page(void)
{
	size_t i, n = pat_pages(), last = page / 8 - 1;

	for (i = 0; i < n; i++) {
		const uint64_t *w = pat_page(i);

		if (w[0] != pat_edges[i][0] || w[last] != pat_edges[i][1])
			break;
	}
	return i;
}

static void check_data(const char *what)
{
	bool full = (iterations + 1) % SENTINEL_EVERY == 0;
	size_t changed = changed_page();

	if (changed != pat_pages()) {
		fprintf(stderr, "after %s: pattern page %zu changed\n", what, changed);
		fail("pattern page changed: data lost");
	}
	if (full && checksum() != pat_sum) {
		fprintf(stderr, "after %s\n", what);
		fail("pattern checksum changed: data lost");
	}
}

static void read_range(struct in *in, struct thp_range *r)
{
	uint8_t kind = (uint8_t)take(in, 1);

	if (kind % 4 != 3) {
		/* Page offsets from the area start, reaching into the guards. */
		long pg = (long)take(in, 2) % (long)(AREA_SIZE / page + 64) - 32;
		uint64_t len = take(in, 2) % (AREA_SIZE / page + 64);

		r->addr = (uint64_t)(uintptr_t)area + (uint64_t)pg * page;
		r->len = len * page;
		if (kind & 4)
			r->len -= (kind >> 4); /* not a page multiple: rounded up */
		if ((kind & 8) && r->len)
			r->addr += kind >> 4;  /* unaligned: -EINVAL */
	} else {
		r->addr = take(in, 8);
		r->len = take(in, 8);
	}
	/* Only the library may touch the sentinel: keep requests off it. */
	{
		uint64_t s = (uint64_t)(uintptr_t)sentinel;
		uint64_t e = r->len > UINT64_MAX - r->addr ? UINT64_MAX : r->addr + r->len;

		/* Saturate: a range ending at the top page must not wrap e to 0. */
		e = e > UINT64_MAX - page ? UINT64_MAX : e + page;

		if (r->addr < s + page && e > s)
			r->addr ^= 1ULL << 63;
	}
}

static bool is_self(int pidfd)
{
	return pidfd == THP_SELF || pidfd == self_pidfd;
}

/* A costly request on this process: the first, then every COSTLY_SELF_EVERY-th. */
static bool sampled(unsigned long *asked)
{
	return (*asked)++ % COSTLY_SELF_EVERY == 0;
}

/*
 * Is a request with these options refused before any system call?  Then
 * it is cheap and always made.  Only sure refusals count (a false "no"
 * merely samples a cheap request).
 */
static bool surely_refused(size_t sz, size_t real, uint8_t tail, uint32_t flags,
			   uint32_t backend, int advice)
{
	return (sz > real && (tail & 1)) ||
	       (flags & ~(uint32_t)(THP_F_SKIP_ERRORS | THP_F_NO_ERROR_ON_UNMAPPED)) ||
	       backend >= THP_BACKEND_COUNT || !thp_advice(advice);
}

/* Bytes of @ranges outside the low reservation (saturating). */
static uint64_t beyond_reservation(const struct thp_range *ranges, size_t nr)
{
	uint64_t lo = (uint64_t)(uintptr_t)reserve_start;
	uint64_t hi = (uint64_t)(uintptr_t)reserve_end, sum = 0;

	for (size_t i = 0; i < nr; i++) {
		uint64_t len = ranges[i].len, a = ranges[i].addr;
		uint64_t e = len > UINT64_MAX - a ? UINT64_MAX : a + len;

		if (a < lo)
			sum += (e < lo ? e : lo) - a;
		if (e > hi)
			sum += e - (a > hi ? a : hi);
		if (sum >= UINT64_MAX / 2)
			return UINT64_MAX;
	}
	return sum;
}

static void do_apply_ranges(struct in *in, uint8_t szsel, uint8_t tail, int pidfd)
{
	static struct thp_report reports[MAX_RANGES];
	struct thp_range ranges[MAX_RANGES];
	union {
		struct thp_apply_opts o;
		uint8_t b[sizeof(struct thp_apply_opts) + 64];
	} u;
	size_t sz = pick_size(szsel, sizeof(u.o)), nr;
	uint8_t flags_sel, backend, nsel;
	bool null_ranges, with_reports, as_vector;
	uint64_t total;
	int advice, r;

	memset(&u, 0, sizeof(u));
	flags_sel = (uint8_t)take(in, 1);
	advice = pick_advice(in);
	backend = (uint8_t)take(in, 1);
	nsel = (uint8_t)take(in, 1);
	nr = nsel % (MAX_RANGES + 1);
	null_ranges = nr && (nsel & 0x80) && (nsel & 0x40);
	with_reports = !(nsel & 0x20);
	for (size_t i = 0; i < nr; i++)
		read_range(in, &ranges[i]);

	u.o.sz = sz;
	u.o.pidfd = pidfd;
	u.o.advice = advice;
	u.o.flags = flags_sel & 0x80 ? (uint32_t)take(in, 4) : flags_sel & 3u;
	u.o.backend = backend % 10;
	u.o.reports = with_reports ? reports : NULL;
	put_tail(u.b, sizeof(u.o), sz, tail);
	memset(reports, 0, sizeof(reports));

	if (is_self(pidfd) && beyond_reservation(ranges, nr) > COSTLY_BYTES &&
	    !null_ranges && validate_ranges(ranges, nr, page, &as_vector, &total) == 0 &&
	    !surely_refused(sz, sizeof(u.o), tail, u.o.flags, u.o.backend, advice) &&
	    !sampled(&apply_ranges_self_asked))
		return;
	r = thp_apply_ranges(null_ranges ? NULL : ranges, nr, &u.o);
	check_ret(r, -4095, (long)nr, "thp_apply_ranges");
	if (r >= 0 && !(u.o.flags & THP_F_SKIP_ERRORS) && (size_t)r != nr)
		fail("thp_apply_ranges: success short of nr_ranges without SKIP_ERRORS");
	if (!thp_advice(advice) && r != -EINVAL && r != -E2BIG)
		fail("non-THP advice was not refused");
	if (null_ranges && r >= 0)
		fail("NULL ranges accepted");
	for (size_t i = 0; i < nr; i++)
		check_report(&reports[i]);
	check_data("thp_apply_ranges");
}

static void do_apply_all(struct in *in, uint8_t szsel, uint8_t tail, int pidfd)
{
	static struct thp_report failures[8];
	union {
		struct thp_apply_all_opts o;
		uint8_t b[sizeof(struct thp_apply_all_opts) + 64];
	} u;
	size_t sz = pick_size(szsel, sizeof(u.o));
	uint8_t flags_sel = (uint8_t)take(in, 1), capsel;
	int advice = pick_advice(in), r;

	memset(&u, 0, sizeof(u));
	u.o.sz = sz;
	u.o.pidfd = pidfd;
	u.o.advice = advice;
	u.o.flags = flags_sel & 0x80 ? (uint32_t)take(in, 4) : flags_sel & 3u;
	u.o.backend = (uint32_t)take(in, 1) % 10;
	capsel = (uint8_t)take(in, 1);
	u.o.failures_cap = capsel % 9;
	u.o.failures = (capsel & 0x80) ? NULL : failures;
	put_tail(u.b, sizeof(u.o), sz, tail);
	memset(failures, 0, sizeof(failures));
	/* Skipped after the input is read: what follows parses the same. */
	if (is_self(pidfd) && !(u.o.failures_cap && !u.o.failures) &&
	    !surely_refused(sz, sizeof(u.o), tail, u.o.flags, u.o.backend, advice) &&
	    !sampled(&apply_all_self_asked))
		return;
	r = thp_apply_all(&u.o);
	/* It may legitimately advise the sentinel: give it a fresh mapping. */
	if (thp_advice(advice))
		sentinel_map();
	check_ret(r, -4095, INT32_MAX, "thp_apply_all");
	if (!thp_advice(advice) && r != -EINVAL && r != -E2BIG)
		fail("non-THP advice was not refused (apply_all)");
	if (u.o.failures_cap && !u.o.failures && r >= 0)
		fail("NULL failures with a capacity accepted");
	if (r >= 0) {
		if ((uint64_t)r != (u.o.mappings_advised > INT32_MAX ? INT32_MAX : u.o.mappings_advised))
			fail("thp_apply_all: return != mappings_advised");
		if (u.o.mappings_advised + u.o.mappings_skipped > u.o.mappings_seen)
			fail("thp_apply_all: advised + skipped > seen");
	}
	if (u.o.failures) {
		size_t n = u.o.failures_needed < u.o.failures_cap ? u.o.failures_needed
								  : u.o.failures_cap;

		for (size_t i = 0; i < n; i++) {
			check_report(&failures[i]);
			if (r >= 0 && failures[i].error == 0)
				fail("apply_all failure entry without error");
		}
	}
	check_data("thp_apply_all");
}

static void do_query(struct in *in, uint8_t szsel, uint8_t tail, int pidfd)
{
	static struct thp_mapping_state states[8];
	union {
		struct thp_query_opts o;
		uint8_t b[sizeof(struct thp_query_opts) + 64];
	} u;
	size_t sz = pick_size(szsel, sizeof(u.o));
	struct thp_range q;
	uint8_t capsel;
	int r;

	memset(&u, 0, sizeof(u));
	read_range(in, &q);
	capsel = (uint8_t)take(in, 1);
	u.o.sz = sz;
	u.o.pidfd = pidfd;
	u.o.flags = (capsel & 0x40) ? (uint32_t)take(in, 1) : 0;
	u.o.addr = q.addr;
	u.o.len = q.len;
	u.o.states_cap = capsel % 9;
	u.o.states = (capsel & 0x80) ? NULL : states;
	put_tail(u.b, sizeof(u.o), sz, tail);
	if (is_self(pidfd) && (!q.len || q.addr + q.len > (uint64_t)(uintptr_t)reserve_end ||
			       q.addr + q.len < q.addr) &&
	    !sampled(&query_self_asked))
		return;

	r = thp_query(&u.o);
	check_ret(r, -4095, (long)u.o.states_cap, "thp_query");
	if (r >= 0) {
		size_t want = u.o.states_needed < u.o.states_cap ? u.o.states_needed
								 : u.o.states_cap;

		if ((size_t)r != want)
			fail("thp_query: return != min(states_needed, states_cap)");
		for (int i = 0; i < r; i++)
			if (states[i].start >= states[i].end)
				fail("thp_query: state with start >= end");
	}
	check_data("thp_query");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct in in = { data, size };
	uint8_t ops, szsel, tail;
	int pidfd;

	if (!area)
		setup();
	ops = (uint8_t)take(&in, 1);
	szsel = (uint8_t)take(&in, 1);
	tail = (uint8_t)take(&in, 1);
	pidfd = pick_target((uint8_t)take(&in, 1));

	if (ops & 1)
		do_apply_ranges(&in, szsel, tail, pidfd);
	if (ops & 2)
		do_apply_all(&in, szsel, tail, pidfd);
	if (ops & 4)
		do_query(&in, szsel, tail, pidfd);
	/* The first input too: a regression seed run alone is checked. */
	if (++iterations % SENTINEL_EVERY == 0 || iterations == 1)
		sentinel_check();
	if (iterations % RESET_EVERY == 0)
		build_area();
	return 0;
}
