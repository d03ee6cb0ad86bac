// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * tlb_workload: a TLB-heavy program that does nothing about THP itself, so
 * whatever policy it runs under (thpctl run --policy ...) decides whether
 * its memory is backed by huge pages.
 *
 *   tlb_workload [-s SIZE_MIB] [-n ACCESSES] [--exec-child]
 *
 * Allocates two buffers of SIZE_MIB (default 2048) each, one with malloc()
 * and one with mmap(MAP_PRIVATE|MAP_ANONYMOUS), writes every page, then does
 * ACCESSES (default 0: none) dependent random reads spread over both, where
 * each address depends on the value read before (so the loads cannot
 * overlap and every TLB miss is paid in full).  Prints one line per buffer
 * and one result line, space-separated key=value:
 *
 *   pid=P depth=D buffer=malloc bytes=N hg=0|1 anon_huge_kb=N
 *   pid=P depth=D buffer=mmap bytes=N hg=0|1 anon_huge_kb=N
 *   pid=P depth=D result seconds=T ns_per_access=X populate_seconds=P anon_huge_kb_total=N
 *
 * populate_seconds is the time to write both buffers the first time (page
 * faults, zeroing, the writes); seconds is the random reads alone.
 * hg is 1 when every mapping under the buffer is advised huge (VmFlags hg);
 * the numbers come from thp_query() (/proc/self/smaps).  With --exec-child it
 * then runs itself again through fork() and exec() (depth D+1), to show what
 * a program's own children inherit, and fails if the child fails.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <thp/thp.h>

#define MIB (1024ULL * 1024ULL)

struct buffer {
	const char *kind;
	uint64_t *mem;
	size_t bytes;
};

static void usage(FILE *to)
{
	fprintf(to, "usage: tlb_workload [-s SIZE_MIB] [-n ACCESSES] [--exec-child]\n");
}

static bool parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v > max)
		return false;
	*out = v;
	return true;
}

static uint64_t xorshift64(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * Write every word (so every page is touched) with values the reads chase.
 * Returns the elapsed seconds: page faults and zeroing are most of it, and
 * that is where huge pages save the most (one fault per 2 MiB, not 512).
 */
static double fill(struct buffer *b, uint64_t seed)
{
	size_t words = b->bytes / sizeof(uint64_t);
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (size_t i = 0; i < words; i++)
		b->mem[i] = xorshift64(&seed);
	return seconds_since(&t0);
}

static int report_buffer(const struct buffer *b, unsigned int depth, uint64_t *huge_total)
{
	struct thp_mapping_state st[8];
	THP_OPTS(thp_query_opts, q, .addr = (uintptr_t)b->mem, .len = b->bytes,
		 .states = st, .states_cap = 8);
	uint64_t huge = 0;
	bool hg = true;
	int n = thp_query(&q);

	if (n <= 0) {
		fprintf(stderr, "tlb_workload: thp_query(%s): %s (%s)\n", b->kind,
			thp_strerror(n ? n : -ENOENT), thp_strerror_detail());
		return -1;
	}
	/* A partial list would understate the totals below. */
	if (q.states_needed > q.states_cap) {
		fprintf(stderr, "tlb_workload: %s buffer spans %llu mappings, more than %llu\n",
			b->kind, (unsigned long long)q.states_needed,
			(unsigned long long)q.states_cap);
		return -1;
	}
	for (int i = 0; i < n; i++) {
		huge += st[i].anon_huge_bytes;
		hg = hg && st[i].advised_huge;
	}
	*huge_total += huge;
	printf("pid=%d depth=%u buffer=%s bytes=%zu hg=%d anon_huge_kb=%" PRIu64 "\n",
	       (int)getpid(), depth, b->kind, b->bytes, hg, huge / 1024);
	return 0;
}

/* Dependent random reads over both buffers; returns the elapsed seconds. */
static double chase(const struct buffer *bufs, uint64_t accesses, uint64_t *sink)
{
	size_t words[2] = { bufs[0].bytes / sizeof(uint64_t), bufs[1].bytes / sizeof(uint64_t) };
	uint64_t x = 0x9e3779b97f4a7c15ULL, v = 0;
	struct timespec t0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < accesses; i++) {
		const struct buffer *b = &bufs[i & 1];

		v = b->mem[(xorshift64(&x) ^ v) % words[i & 1]];
	}
	*sink = v;
	return seconds_since(&t0);
}

static int exec_child(uint64_t size_mib, unsigned int depth)
{
	char size[32], dep[32], self[4096];
	ssize_t n;
	int status;
	pid_t pid;

	/* The path, not /proc/self/exe itself: under valgrind that is the tool. */
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		perror("tlb_workload: readlink /proc/self/exe");
		return -1;
	}
	self[n] = '\0';

	snprintf(size, sizeof(size), "%" PRIu64, size_mib);
	snprintf(dep, sizeof(dep), "%u", depth + 1);
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		perror("tlb_workload: fork");
		return -1;
	}
	if (pid == 0) {
		execl(self, "tlb_workload", "-s", size, "--depth", dep, (char *)NULL);
		fprintf(stderr, "tlb_workload: exec %s: %s\n", self, strerror(errno));
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0) {
		perror("tlb_workload: waitpid");
		return -1;
	}
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	uint64_t size_mib = 2048, accesses = 0, depth = 0, huge_total = 0, sink = 0;
	double populate;
	bool child = false;
	struct buffer bufs[2] = { { .kind = "malloc" }, { .kind = "mmap" } };
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--exec-child")) {
			child = true;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (val && !strcmp(argv[i], "-s") && parse_u64(val, 1 << 20, &size_mib) && size_mib) {
			i++;
		} else if (val && !strcmp(argv[i], "-n") && parse_u64(val, UINT64_MAX, &accesses)) {
			i++;
		} else if (val && !strcmp(argv[i], "--depth") && parse_u64(val, 64, &depth)) {
			i++;
		} else {
			usage(stderr);
			return 2;
		}
	}

	bufs[0].bytes = bufs[1].bytes = (size_t)(size_mib * MIB);
	bufs[0].mem = malloc(bufs[0].bytes);
	bufs[1].mem = mmap(NULL, bufs[1].bytes, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!bufs[0].mem || bufs[1].mem == MAP_FAILED) {
		fprintf(stderr, "tlb_workload: cannot allocate 2 x %" PRIu64 " MiB\n", size_mib);
		return 1;
	}
	populate = fill(&bufs[0], 1) + fill(&bufs[1], 2);

	for (int i = 0; i < 2; i++)
		if (report_buffer(&bufs[i], (unsigned int)depth, &huge_total) < 0)
			rc = 1;
	if (accesses) {
		double sec = chase(bufs, accesses, &sink);

		printf("pid=%d depth=%u result seconds=%.3f ns_per_access=%.1f "
		       "populate_seconds=%.3f anon_huge_kb_total=%" PRIu64 "\n",
		       (int)getpid(), (unsigned int)depth, sec, sec * 1e9 / (double)accesses,
		       populate, huge_total / 1024);
	}
	/* Keep the chase from being optimised away without printing noise. */
	if (sink == 0x5a5a5a5a5a5a5a5aULL)
		putchar('\n');

	free(bufs[0].mem);
	munmap(bufs[1].mem, bufs[1].bytes);
	if (child && exec_child(size_mib, (unsigned int)depth) < 0)
		rc = 1;
	return rc;
}
