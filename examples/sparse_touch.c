// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * sparse_touch: a program that maps a large anonymous region and writes
 * one byte every STRIDE, the access pattern where huge pages cost memory:
 * each write faults in a whole huge page under a huge policy, one base page
 * otherwise.  Like tlb_workload it does nothing about THP itself.
 *
 *   sparse_touch [-s SIZE_MIB] [-t STRIDE_KIB] [-w MS]
 *
 * Maps SIZE_MIB (default 256) of MAP_PRIVATE|MAP_ANONYMOUS memory, writes
 * one byte every STRIDE_KIB (default 2048), stays MS milliseconds (default
 * 0) so that a sampler can see it, and prints one line:
 *
 *   pid=P bytes=N touched=K rss_kb=R anon_huge_kb=H
 *
 * from /proc/self/smaps_rollup.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static unsigned long rollup_kb(const char *key)
{
	char line[256];
	unsigned long kb = 0;
	size_t n = strlen(key);
	FILE *f = fopen("/proc/self/smaps_rollup", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, n) && line[n] == ':') {
			kb = strtoul(line + n + 1, NULL, 10);
			break;
		}
	fclose(f);
	return kb;
}

static int number(const char *s, unsigned long lo, unsigned long hi, unsigned long *out)
{
	char *end;

	errno = 0;
	*out = strtoul(s, &end, 10);
	return errno || end == s || *end || *out < lo || *out > hi ? -1 : 0;
}

int main(int argc, char **argv)
{
	unsigned long size_mib = 256, stride_kib = 2048, wait_ms = 0, touched = 0;
	int opt;

	while ((opt = getopt(argc, argv, "s:t:w:")) != -1) {
		int bad = 0;

		if (opt == 's')
			bad = number(optarg, 1, 1UL << 20, &size_mib);
		else if (opt == 't')
			bad = number(optarg, 4, 1UL << 20, &stride_kib);
		else if (opt == 'w')
			bad = number(optarg, 0, 3600000, &wait_ms);
		else
			bad = 1;
		if (bad) {
			fprintf(stderr, "usage: sparse_touch [-s SIZE_MIB] [-t STRIDE_KIB] [-w MS]\n");
			return 2;
		}
	}
	size_t bytes = size_mib << 20, stride = stride_kib << 10;
	char *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("sparse_touch: mmap");
		return 1;
	}
	for (size_t off = 0; off < bytes; off += stride, touched++)
		p[off] = 1;
	if (wait_ms) {
		struct timespec t = { (time_t)(wait_ms / 1000), (long)(wait_ms % 1000) * 1000000L };

		nanosleep(&t, NULL);
	}
	printf("pid=%d bytes=%zu touched=%lu rss_kb=%lu anon_huge_kb=%lu\n", (int)getpid(), bytes,
	       touched, rollup_kb("Rss"), rollup_kb("AnonHugePages"));
	return 0;
}
