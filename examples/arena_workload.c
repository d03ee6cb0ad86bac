// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A threaded malloc() workload: memory that libthp-preload.so cannot reach.
 *
 * -t THREADS threads (default 4) start together, so glibc gives each its own
 * arena (mapped and grown inside libc, where no preload sees it), and each
 * mallocs MIB MiB (default 64) in blocks of BLOCK KiB (default 32, below
 * the mmap threshold; -b 1024 gives one mmap() per block), and fills them
 * with a pattern.  Then the program prints
 *   ready PID BYTES SUM
 * and answers each line on stdin: "sum" prints "sum SUM" (a checksum of
 * every block, to show that collapsing changed nothing), "quit" or EOF
 * exits 0.  Built dynamically and -static (arena_workload_static).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static size_t block = 32 * 1024;

struct worker {
	pthread_t thread;
	size_t nblocks;
	uint64_t **blocks;
	unsigned int seed;
};

static pthread_barrier_t start_line;

static void *allocate(void *arg)
{
	struct worker *w = arg;

	pthread_barrier_wait(&start_line);
	for (size_t b = 0; b < w->nblocks; b++) {
		uint64_t *p = malloc(block);

		if (!p) {
			perror("arena_workload: malloc");
			exit(1);
		}
		for (size_t i = 0; i < block / sizeof(*p); i++)
			p[i] = (uint64_t)w->seed * 0x9e3779b97f4a7c15ULL ^ (b << 20 | i);
		w->blocks[b] = p;
	}
	return NULL;
}

static uint64_t checksum(const struct worker *w, int n)
{
	uint64_t sum = 0;

	for (int t = 0; t < n; t++)
		for (size_t b = 0; b < w[t].nblocks; b++)
			for (size_t i = 0; i < block / sizeof(uint64_t); i++)
				sum = (sum ^ w[t].blocks[b][i]) * 0x100000001b3ULL;
	return sum;
}

int main(int argc, char **argv)
{
	int threads = 4, opt;
	size_t mib = 64;
	struct worker *w;
	char line[64];

	while ((opt = getopt(argc, argv, "t:m:b:")) != -1) {
		if (opt == 'b')
			block = strtoul(optarg, NULL, 10) * 1024;
		else if (opt == 't')
			threads = atoi(optarg);
		else if (opt == 'm')
			mib = strtoul(optarg, NULL, 10);
		else
			goto usage;
	}
	if (threads < 1 || threads > 64 || mib < 1 || mib > 4096 || optind != argc ||
	    block < 4096 || block > mib << 20 || block % 4096)
		goto usage;
	w = calloc((size_t)threads, sizeof(*w));
	pthread_barrier_init(&start_line, NULL, (unsigned int)threads);
	for (int t = 0; t < threads; t++) {
		w[t].nblocks = mib * 1024 * 1024 / block;
		w[t].blocks = calloc(w[t].nblocks, sizeof(*w[t].blocks));
		w[t].seed = (unsigned int)t + 1;
		if (pthread_create(&w[t].thread, NULL, allocate, &w[t])) {
			fprintf(stderr, "arena_workload: cannot start thread %d\n", t);
			return 1;
		}
	}
	for (int t = 0; t < threads; t++)
		pthread_join(w[t].thread, NULL);
	printf("ready %d %zu %016llx\n", (int)getpid(), (size_t)threads * mib << 20,
	       (unsigned long long)checksum(w, threads));
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "quit\n"))
			break;
		if (!strcmp(line, "sum\n")) {
			printf("sum %016llx\n", (unsigned long long)checksum(w, threads));
			fflush(stdout);
		}
	}
	return 0;
usage:
	fprintf(stderr, "usage: arena_workload [-t THREADS] [-m MIB_PER_THREAD] [-b BLOCK_KIB]\n");
	return 2;
}
