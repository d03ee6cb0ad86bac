// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * folio_ref_tool PID START LEN: tests/folio_ref.c's count of a range of
 * another process, for the Python tests: one line "ORDER BYTES" for each
 * folio order present.  Exit 1 with the error on stderr.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../folio_ref.h"

int main(int argc, char **argv)
{
	uint64_t bytes[FOLIO_REF_ORDERS] = { 0 }, start, len;
	int ret;

	if (argc != 4) {
		fprintf(stderr, "usage: %s PID START LEN\n", argv[0]);
		return 2;
	}
	start = strtoull(argv[2], NULL, 0);
	len = strtoull(argv[3], NULL, 0);
	ret = folio_ref_count((pid_t)atoi(argv[1]), start, start + len, bytes);
	if (ret < 0) {
		fprintf(stderr, "folio_ref_count: %s\n", strerror(-ret));
		return 1;
	}
	for (int order = 0; order < FOLIO_REF_ORDERS; order++)
		if (bytes[order])
			printf("%d %" PRIu64 "\n", order, bytes[order]);
	return 0;
}
