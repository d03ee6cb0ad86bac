// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A process that keeps mapping, growing, splitting and unmapping anonymous
 * memory, for the collapse agent to work on while it changes.  Prints
 *   ready PID STABLE
 * (STABLE: a 32 MiB region that stays), then churns until "quit" or EOF on
 * stdin, checking every page's pattern before each change and at the end:
 * "ok CYCLES" and exit 0, or a message on stderr and exit 1 when any
 * system call failed or any content changed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096UL
#define MIB (1024UL * 1024UL)
#define SLOTS 8

struct slot {
	char *p;
	size_t len;
	uint64_t seed;
};

static void fail(const char *what)
{
	fprintf(stderr, "churn_target: %s: %s\n", what, strerror(errno));
	exit(1);
}

static uint64_t word(uint64_t seed, size_t off)
{
	return seed * 0x9e3779b97f4a7c15ULL ^ off;
}

static void fill(char *p, size_t from, size_t to, uint64_t seed)
{
	for (size_t off = from; off < to; off += PAGE)
		*(uint64_t *)(p + off) = word(seed, off);
}

static void check(const char *p, size_t len, uint64_t seed)
{
	for (size_t off = 0; off < len; off += PAGE)
		if (*(const uint64_t *)(p + off) != word(seed, off)) {
			fprintf(stderr, "churn_target: content changed at offset %zu\n", off);
			exit(1);
		}
}

static bool quit_requested(void)
{
	struct pollfd pfd = { .fd = 0, .events = POLLIN };
	char buf[64];

	if (poll(&pfd, 1, 0) <= 0)
		return false;
	return read(0, buf, sizeof(buf)) <= 0 || !strncmp(buf, "quit", 4);
}

int main(void)
{
	struct slot s[SLOTS] = { 0 };
	struct timespec pause = { 0, 5000000 };
	size_t stable_len = 32 * MIB;
	char *stable = mmap(NULL, stable_len, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned long cycles = 0;

	if (stable == MAP_FAILED)
		fail("mmap");
	fill(stable, 0, stable_len, 7);
	srand((unsigned int)getpid());
	printf("ready %d %p\n", (int)getpid(), (void *)stable);
	fflush(stdout);
	while (!quit_requested()) {
		struct slot *c = &s[rand() % SLOTS];

		if (c->p) {
			check(c->p, c->len, c->seed);
			switch (rand() % 3) {
			case 0: { /* grow, maybe moving */
				size_t len = c->len + (size_t)(rand() % 4 + 1) * MIB;
				char *p = mremap(c->p, c->len, len, MREMAP_MAYMOVE);

				if (p == MAP_FAILED)
					fail("mremap");
				fill(p, c->len, len, c->seed);
				c->p = p;
				c->len = len;
				break;
			}
			case 1: /* split and join again */
				if (mprotect(c->p + (c->len / 2 & ~(PAGE - 1)), PAGE, PROT_READ) ||
				    mprotect(c->p + (c->len / 2 & ~(PAGE - 1)), PAGE, PROT_READ | PROT_WRITE))
					fail("mprotect");
				break;
			default:
				if (munmap(c->p, c->len))
					fail("munmap");
				c->p = NULL;
			}
		} else {
			c->len = (size_t)(rand() % 12 + 1) * MIB + (size_t)(rand() % 4) * PAGE;
			c->seed = (uint64_t)rand();
			c->p = mmap(NULL, c->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				    -1, 0);
			if (c->p == MAP_FAILED)
				fail("mmap");
			fill(c->p, 0, c->len, c->seed);
		}
		cycles++;
		nanosleep(&pause, NULL);
	}
	for (int i = 0; i < SLOTS; i++)
		if (s[i].p)
			check(s[i].p, s[i].len, s[i].seed);
	check(stable, stable_len, 7);
	printf("ok %lu\n", cycles);
	return 0;
}
