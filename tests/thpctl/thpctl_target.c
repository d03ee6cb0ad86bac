// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Target process for the thpctl tests.  Maps, touches and reports:
 *   REGION   8 MiB anonymous, 2 MiB aligned, not advised
 *   NOHUGE   4 MiB anonymous, 2 MiB aligned, MADV_NOHUGEPAGE
 *   MEMFD    one page of a memfd whose name needs JSON escaping
 * and prints "0xREGION 0xNOHUGE 0xMEMFD\n" on stdout, then waits until a
 * byte arrives on stdin (or EOF) and exits 0.  Dies with its parent.
 * Argument "never" or "nohuge": set that default policy with
 * PR_SET_THP_DISABLE first (mainline 6.18 semantics).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "compat.h" /* PR_THP_DISABLE_EXCEPT_ADVISED */

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1U
#endif

#define MIB (1024UL * 1024UL)
#define PMD (2 * MIB)

static void die(const char *what)
{
	fprintf(stderr, "thpctl_target: %s: %s\n", what, strerror(errno));
	_exit(1);
}

/* @len bytes, 2 MiB aligned, with unmapped slack trimmed on both sides. */
static char *map_aligned(size_t len)
{
	size_t total = len + 2 * PMD;
	char *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *a;

	if (p == MAP_FAILED)
		die("mmap");
	a = (char *)(((uintptr_t)p + PMD) & ~(uintptr_t)(PMD - 1));
	if (munmap(p, (size_t)(a - p)) || munmap(a + len, (size_t)(p + total - (a + len))))
		die("munmap");
	return a;
}

static void touch(char *p, size_t len)
{
	for (size_t off = 0; off < len; off += 4096)
		p[off] = (char)(1 + (off >> 12));
}

int main(int argc, char **argv)
{
	char *region, *nohuge, *m;
	char c;
	int fd;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() == 1)
		_exit(1);
	if (argc > 1 && !strcmp(argv[1], "never")) {
		if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
			die("PR_SET_THP_DISABLE");
	} else if (argc > 1 && !strcmp(argv[1], "nohuge")) {
		if (prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0))
			die("PR_SET_THP_DISABLE EXCEPT_ADVISED");
	}
	region = map_aligned(8 * MIB);
	nohuge = map_aligned(4 * MIB);
	if (madvise(nohuge, 4 * MIB, MADV_NOHUGEPAGE))
		die("madvise");
	touch(region, 8 * MIB);
	touch(nohuge, 4 * MIB);
	/* Quote, backslash, tab and a non-UTF-8 byte: the JSON writer must cope. */
	fd = memfd_create("thpctl \"q\\t\tx\xff", MFD_CLOEXEC);
	if (fd < 0)
		die("memfd_create");
	if (ftruncate(fd, 4096))
		die("ftruncate");
	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		die("mmap memfd");
	close(fd);
	m[0] = 1;
	printf("%p %p %p\n", (void *)region, (void *)nohuge, (void *)m);
	if (fflush(stdout))
		die("stdout");
	while (read(0, &c, 1) < 0 && errno == EINTR)
		;
	return 0;
}
