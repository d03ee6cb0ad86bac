// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Standalone driver for the fuzz targets, for compilers without libFuzzer
 * (the gcc CI build): feeds every file of a corpus directory to
 * LLVMFuzzerTestOneInput(), then a fixed number of pseudo-random mutations
 * of them with a fixed seed, so every run is the same run.
 *
 *   replay <corpus-dir> [iterations [seed]]
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#define MAX_INPUTS 1024 /* the kept corpora are a few hundred files each */
#define MAX_LEN 16384	/* above the line reader's 8 KiB buffer */

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* xorshift64* */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1DULL;
}

struct input {
	uint8_t *data;
	size_t len;
};

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run one input from an exact-size heap copy (ASan sees any overread). */
static void run(const uint8_t *data, size_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		abort();
	if (len)
		memcpy(copy, data, len);
	LLVMFuzzerTestOneInput(copy, len);
	free(copy);
}

static size_t mutate(uint8_t *buf, size_t len)
{
	static const uint8_t interesting[] = { 0, 1, 0x7f, 0x80, 0xff, 0x10, 0x40, 0xfe };
	unsigned int n = 1 + (unsigned int)(rnd() % 4);

	for (unsigned int k = 0; k < n; k++) {
		size_t pos = len ? (size_t)(rnd() % len) : 0;

		switch (rnd() % 7) {
		case 0: /* flip a bit */
			if (len)
				buf[pos] ^= (uint8_t)(1u << (rnd() % 8));
			break;
		case 1: /* random byte */
			if (len)
				buf[pos] = (uint8_t)rnd();
			break;
		case 2: /* interesting byte */
			if (len)
				buf[pos] = interesting[rnd() % sizeof(interesting)];
			break;
		case 3: /* insert a byte */
			if (len < MAX_LEN) {
				memmove(buf + pos + 1, buf + pos, len - pos);
				buf[pos] = (uint8_t)rnd();
				len++;
			}
			break;
		case 4: /* delete a byte */
			if (len) {
				memmove(buf + pos, buf + pos + 1, len - pos - 1);
				len--;
			}
			break;
		case 5: /* append random bytes */
			for (unsigned int i = (unsigned int)(rnd() % 16); i && len < MAX_LEN; i--)
				buf[len++] = (uint8_t)rnd();
			break;
		default: /* truncate */
			if (len)
				len = pos;
			break;
		}
	}
	return len;
}

int main(int argc, char **argv)
{
	static struct input inputs[MAX_INPUTS];
	static uint8_t buf[MAX_LEN];
	char *names[MAX_INPUTS];
	size_t nr = 0, nnames = 0;
	unsigned long iterations = argc > 2 ? strtoul(argv[2], NULL, 0) : 20000;
	struct dirent *de;
	DIR *d;

	if (argc < 2) {
		fprintf(stderr, "usage: %s <corpus-dir> [iterations [seed]]\n", argv[0]);
		return 2;
	}
	rng_state = argc > 3 ? strtoull(argv[3], NULL, 0) : 0x5eed5eed1ULL;
	if (!rng_state)
		rng_state = 1;
	d = opendir(argv[1]);
	if (!d) {
		fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	while ((de = readdir(d)) && nnames < MAX_INPUTS)
		if (de->d_name[0] != '.')
			names[nnames++] = strdup(de->d_name);
	closedir(d);
	/* readdir order is not stable across file systems: sort for determinism. */
	qsort(names, nnames, sizeof(names[0]), cmp_names);
	for (size_t i = 0; i < nnames; i++) {
		char path[4096];
		FILE *f;
		size_t n;

		snprintf(path, sizeof(path), "%s/%s", argv[1], names[i]);
		f = fopen(path, "rb");
		if (!f) {
			fprintf(stderr, "%s: %s\n", path, strerror(errno));
			return 1;
		}
		n = fread(buf, 1, MAX_LEN, f);
		fclose(f);
		inputs[nr].data = malloc(n ? n : 1);
		if (!inputs[nr].data)
			abort();
		memcpy(inputs[nr].data, buf, n);
		inputs[nr].len = n;
		run(inputs[nr].data, n);
		nr++;
		free(names[i]);
	}
	if (!nr) {
		fprintf(stderr, "%s: empty corpus\n", argv[1]);
		return 1;
	}
	printf("replayed %zu corpus inputs\n", nr);
	for (unsigned long it = 0; it < iterations; it++) {
		const struct input *in = &inputs[rnd() % nr];
		size_t len = in->len;

		memcpy(buf, in->data, len);
		len = mutate(buf, len);
		run(buf, len);
	}
	printf("ran %lu mutated inputs\n", iterations);
	for (size_t i = 0; i < nr; i++)
		free(inputs[i].data);
	return 0;
}
