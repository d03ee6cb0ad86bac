// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A 32-bit (i386) target for the inject check of 64-bit guests
 * (inject_policies.c): fills 4 MiB, says where, waits in read() on stdin,
 * then says what its read() returned, its PR_GET_THP_DISABLE and whether
 * the memory is unchanged.  Built with -m32 -static; run only in guests.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#define LEN (4u << 20)

static uint32_t sum(const unsigned char *p)
{
	uint32_t s = 0;

	for (uint32_t i = 0; i < LEN; i++)
		s = s * 31 + p[i];
	return s;
}

int main(void)
{
	unsigned char *m = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	uint32_t s0;
	ssize_t n;
	char c = 0;

	if (m == MAP_FAILED)
		return 2;
	for (uint32_t i = 0; i < LEN; i++)
		m[i] = (unsigned char)(i * 13 + 1);
	s0 = sum(m);
	printf("ADDR %lx\n", (unsigned long)(uintptr_t)m);
	fflush(stdout);
	n = read(0, &c, 1);
	printf("DONE read=%d byte=%c disable=%d sum=%d\n", (int)n, c,
	       (int)prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), sum(m) == s0);
	fflush(stdout);
	return 0;
}
