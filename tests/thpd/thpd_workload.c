// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A process for thpd to find: N MiB of touched private anonymous memory in
 * one 2 MiB-aligned mapping (not advised; MADV_HUGEPAGE before the touch
 * when the third argument is "huge"), optionally M more one-page
 * mappings (alternating protections, so that they stay apart), then
 * commands on stdin:
 * "check" (contents unchanged?), "prctl" (PR_GET_THP_DISABLE), "where",
 * "setresuid R E S" (no exec), "grow N" (N MiB more, aligned and touched:
 * "grown ADDR LEN"), "exec_on_huge PATH N" (exec PATH N once some of this
 * memory is huge), "eintr" (with "epoll" as the third argument: how often
 * the main thread's epoll_wait() on an empty set failed with EINTR; the
 * commands are then read by a second thread), "vfork N" (the main thread
 * waits in vfork() for a child that sleeps N seconds: no ptrace stop can
 * come meanwhile; answers once it ends).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXTENT (2UL << 20)

static uint64_t *p;
static size_t len;
static atomic_ulong eintrs;

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

static void *commands(void *unused)
{
	char line[64];

	(void)unused;
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "check", 5)) {
			size_t bad = 0;

			for (size_t i = 0; i < len / 8; i++)
				if (p[i] != (i % 512 ? 0 : i * 2654435761u + 1))
					bad++;
			printf("%s %zu\n", bad ? "bad" : "ok", bad);
		} else if (!strncmp(line, "setresuid ", 10)) {
			unsigned r, e, s;

			if (sscanf(line + 10, "%u %u %u", &r, &e, &s) == 3 && setresuid(r, e, s) == 0)
				printf("uid %u\n", r);
			else
				printf("setresuid failed\n");
		} else if (!strncmp(line, "grow ", 5)) {
			size_t n = strtoul(line + 5, NULL, 10) << 20;
			uint8_t *g = mmap(NULL, n + EXTENT, PROT_READ | PROT_WRITE,
					  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (!n || g == MAP_FAILED) {
				printf("grow failed\n");
			} else {
				uint8_t *a = (uint8_t *)(((uintptr_t)g + EXTENT - 1) & ~(EXTENT - 1));

				for (size_t i = 0; i < n; i += 4096)
					a[i] = 1;
				printf("grown %p %zu\n", (void *)a, n);
			}
		} else if (!strncmp(line, "exec_on_huge ", 13)) {
			/* Exec PATH N as soon as a collapse has begun in this process:
			 * the next MADV_COLLAPSE calls of the same pass find the new program. */
			char *path = strtok(line + 13, " \n"), *arg = strtok(NULL, " \n");
			char buf[4096];

			for (;;) {
				FILE *f = fopen("/proc/self/smaps_rollup", "r");
				size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
				const char *h;

				if (f)
					fclose(f);
				buf[n] = '\0';
				h = strstr(buf, "\nAnonHugePages:");
				if (!path || !arg || !h || strtoul(h + 15, NULL, 10) > 0)
					break;
			}
			if (path && arg)
				execl(path, path, arg, (char *)NULL);
			printf("exec failed\n");
		} else if (!strncmp(line, "prctl", 5)) {
			printf("thp_disable %d\n", prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
		} else if (!strncmp(line, "vfork ", 6)) {
			sleep_in_vfork(strtol(line + 6, NULL, 10));
			printf("vforked\n");
		} else if (!strncmp(line, "eintr", 5)) {
			printf("eintr %lu\n", atomic_load(&eintrs));
		} else {
			printf("unknown\n");
		}
		fflush(stdout);
	}
	exit(0);
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 0;
	size_t nmaps = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
	int advise = argc > 3 && !strcmp(argv[3], "huge");
	int epoll = argc > 3 && !strcmp(argv[3], "epoll");
	uint8_t *raw;

	len = mib << 20;
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
	if (epoll) {
		/*
		 * Nothing but a stop wakes the main thread: the set is empty and
		 * no signal has a handler, and a ptrace stop (PTRACE_INTERRUPT)
		 * ends epoll_wait() with EINTR, which it never restarts.
		 */
		struct epoll_event ev;
		pthread_t t;
		int ep = epoll_create1(EPOLL_CLOEXEC);

		if (ep < 0 || pthread_create(&t, NULL, commands, NULL) != 0) {
			perror("epoll/thread");
			return 1;
		}
		for (;;)
			if (epoll_wait(ep, &ev, 1, -1) < 0 && errno == EINTR)
				atomic_fetch_add(&eintrs, 1);
	}
	commands(NULL);
	return 0;
}
