// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The soak phase's checksummed workload: MIB MiB of private anonymous
 * memory in one 2 MiB-aligned mapping (not advised: only a collapse from
 * outside makes it huge), filled with a pattern from SEED, verified whole
 * every PERIOD seconds and after SIGTERM; each round also rewrites one
 * 2 MiB extent with a new pattern, so that collapses meet writes.
 * usage: soak_workload MIB SEED [PERIOD]
 * A mismatch: one "MISMATCH" line on stderr (the journal) and exit 3.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define EXTENT (2UL << 20)
#define WORDS_PER_EXTENT (EXTENT / sizeof(uint64_t))
#define STEP 0x9E3779B97F4A7C15ULL

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	(void)sig;
	stop = 1;
}

/* The first word of extent E at version V: every word differs from its
 * neighbours and from the same word of other extents, seeds and versions,
 * so a page in the wrong place or of the wrong age shows. */
static uint64_t start_of(uint64_t seed, size_t e, uint64_t v)
{
	uint64_t x = seed * 0xBF58476D1CE4E5B9ULL + e * 0x94D049BB133111EBULL + v * STEP;

	x ^= x >> 31;
	return x * 0xD6E8FEB86659FD39ULL;
}

static void fill(uint64_t *p, uint64_t seed, size_t e, uint64_t v)
{
	uint64_t x = start_of(seed, e, v);
	uint64_t *w = p + e * WORDS_PER_EXTENT;

	for (size_t i = 0; i < WORDS_PER_EXTENT; i++, x += STEP)
		w[i] = x;
}

/* Words of extent E that differ; the first one's index in @first. */
static size_t verify(const uint64_t *p, uint64_t seed, size_t e, uint64_t v, size_t *first,
		     uint64_t *got, uint64_t *want)
{
	uint64_t x = start_of(seed, e, v);
	const uint64_t *w = p + e * WORDS_PER_EXTENT;
	size_t bad = 0;

	for (size_t i = 0; i < WORDS_PER_EXTENT; i++, x += STEP) {
		if (w[i] != x) {
			if (!bad++) {
				*first = e * WORDS_PER_EXTENT + i;
				*got = w[i];
				*want = x;
			}
		}
	}
	return bad;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 2 ? strtoul(argv[1], NULL, 10) : 0;
	uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 0;
	unsigned period = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 10) : 1;
	size_t next = mib / 2, len = next * EXTENT;
	struct sigaction sa;
	uint64_t *p, *ver, rounds = 0;
	uint8_t *raw;

	if (!next || !period) {
		fprintf(stderr, "usage: soak_workload MIB(>=2) SEED [PERIOD>=1]\n");
		return 2;
	}
	raw = mmap(NULL, len + EXTENT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ver = calloc(next, sizeof(*ver));
	if (raw == MAP_FAILED || !ver) {
		perror("soak_workload: mmap");
		return 1;
	}
	p = (uint64_t *)(((uintptr_t)raw + EXTENT - 1) & ~(EXTENT - 1));
	/* The unaligned head and tail go back: one aligned mapping. */
	if ((uint8_t *)p > raw)
		munmap(raw, (size_t)((uint8_t *)p - raw));
	munmap((uint8_t *)p + len, (size_t)(raw + EXTENT - (uint8_t *)p));
	for (size_t e = 0; e < next; e++)
		fill(p, seed, e, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	fprintf(stderr, "soak_workload: ready: pid %d, %zu MiB at %p, seed %llu, uid %d euid %d\n",
		(int)getpid(), mib & ~(size_t)1, (void *)p, (unsigned long long)seed, (int)getuid(),
		(int)geteuid());
	for (;;) {
		size_t bad = 0, first = 0;
		uint64_t got = 0, want = 0;
		bool last = stop;

		if (!last) {
			struct timespec ts = { .tv_sec = period };

			/* SIGTERM cuts the sleep short: the final round follows. */
			nanosleep(&ts, NULL);
			last = stop;
		}
		for (size_t e = 0; e < next; e++) {
			size_t f = 0;
			uint64_t g = 0, w = 0, b = verify(p, seed, e, ver[e], &f, &g, &w);

			if (b && !bad) {
				first = f;
				got = g;
				want = w;
			}
			bad += b;
		}
		rounds++;
		if (bad) {
			fprintf(stderr,
				"soak_workload: MISMATCH: %zu words differ in round %llu, first at byte %zu "
				"(extent %zu): 0x%016llx, want 0x%016llx\n",
				bad, (unsigned long long)rounds, first * sizeof(uint64_t),
				(size_t)(first / WORDS_PER_EXTENT), (unsigned long long)got,
				(unsigned long long)want);
			return 3;
		}
		if (last)
			break;
		/* One extent a round gets a new pattern. */
		size_t e = rounds % next;

		fill(p, seed, e, ++ver[e]);
	}
	fprintf(stderr, "soak_workload: stopped: %llu rounds verified, no mismatch\n",
		(unsigned long long)rounds);
	return 0;
}
