// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * mthp_toucher MIB: a dynamically linked program for `thpctl run` in the
 * guest (the preload needs the dynamic loader): maps MIB MiB of anonymous
 * memory at a 2 MiB-aligned start, writes every page, prints
 * "ready PID ADDR" and waits until its standard input closes.  It advises
 * nothing itself: what the memory gets is the policy's doing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	size_t len = (argc > 1 ? strtoul(argv[1], NULL, 10) : 0) << 20, pmd = 2u << 20;
	char *raw, *p, c;

	if (!len)
		return 2;
	raw = mmap(NULL, len + pmd, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return 1;
	p = (char *)(((uintptr_t)raw + pmd - 1) & ~(uintptr_t)(pmd - 1));
	for (size_t i = 0; i < len; i += 4096)
		p[i] = 1;
	printf("ready %d 0x%lx\n", (int)getpid(), (unsigned long)(uintptr_t)p);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
