// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A process for thpd to find: N MiB of touched private anonymous memory in
 * one 2 MiB-aligned mapping (not advised; MADV_HUGEPAGE before the touch
 * when the third argument is "huge"), optionally M more one-page
 * mappings (alternating protections, so that they stay apart), then
 * commands on stdin:
 * "check" (contents unchanged?), "prctl" (PR_GET_THP_DISABLE), "where",
 * "vfork N" (the main thread waits in vfork() for a child that sleeps N
 * seconds: no ptrace stop can come meanwhile; answers once it ends).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXTENT (2UL << 20)

/* Wait in vfork() for a child that sleeps @secs s. */
static __attribute__((noinline)) void sleep_in_vfork(long secs)
{
	struct timespec ts = { secs, 0 };
	pid_t c = vfork();

	if (c == 0) {
		/* Only system calls: a vfork() child runs on its parent's stack. */
		syscall(SYS_nanosleep, &ts, NULL);
		syscall(SYS_exit, 0);
	}
	waitpid(c, NULL, 0);
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
	size_t len = mib << 20;
	size_t nmaps = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
	int advise = argc > 3 && !strcmp(argv[3], "huge");
	char line[64];
	uint64_t *p = NULL;
	uint8_t *raw;

	if (len) {
		raw = mmap(NULL, len + EXTENT, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (raw == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		p = (uint64_t *)(((uintptr_t)raw + EXTENT - 1) & ~(EXTENT - 1));
		/* The unaligned head and tail are given back: one aligned mapping. */
		if ((uint8_t *)p > raw)
			munmap(raw, (size_t)((uint8_t *)p - raw));
		munmap((uint8_t *)p + len, (size_t)(raw + len + EXTENT - (uint8_t *)p - len));
		if (advise && madvise(p, len, MADV_HUGEPAGE) != 0) {
			perror("madvise");
			return 1;
		}
		for (size_t i = 0; i < len / 8; i += 512)
			p[i] = i * 2654435761u + 1;
	}
	for (size_t i = 0; i < nmaps; i++) {
		char *m = mmap(NULL, 4096, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		if (i % 2 == 0)
			m[0] = 1;
	}
	printf("ready %p %zu\n", (void *)p, len);
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "check", 5)) {
			size_t bad = 0;

			for (size_t i = 0; i < len / 8; i++)
				if (p[i] != (i % 512 ? 0 : i * 2654435761u + 1))
					bad++;
			printf("%s %zu\n", bad ? "bad" : "ok", bad);
		} else if (!strncmp(line, "prctl", 5)) {
			printf("thp_disable %d\n", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
		} else if (!strncmp(line, "vfork ", 6)) {
			sleep_in_vfork(strtol(line + 6, NULL, 10));
			printf("vforked\n");
		} else {
			printf("unknown\n");
		}
		fflush(stdout);
	}
	return 0;
}
