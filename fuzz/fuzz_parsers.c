// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz the /proc/PID/maps line parser (white-box): arbitrary text must never
 * crash or read past @len, and an accepted line must have start < end.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t start = 0xdeadbeef, end = 0xdeadbeef;
	char *copy;
	int r;

	/* Exact-size copy so that ASan catches any read past @len. */
	copy = malloc(size ? size : 1);
	if (!copy)
		abort();
	if (size)
		memcpy(copy, data, size);
	r = maps_parse_line(copy, size, &start, &end);
	if (r != 0 && r != -EINVAL)
		abort();
	if (r == 0 && !(start < end))
		abort();
	/* Every prefix too: the walk hands the parser partial buffers. */
	for (size_t n = 0; n < size && n < 64; n++) {
		r = maps_parse_line(copy, n, &start, &end);
		if (r == 0 && !(start < end))
			abort();
	}
	free(copy);
	return 0;
}
