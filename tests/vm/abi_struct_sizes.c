// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest check: Which ABI ran (32 or 64-bit) and that each struct's size is thp.h's newest size constant.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "vm_check.h"

/*
 * thp.h's _Static_asserts already hold every struct to one layout; this
 * says which ABI ran, and that the newest size constant of each struct is
 * what sizeof() gives here.
 */
void check_abi(void)
{
	struct check c = { .name = sizeof(void *) == 4 ? "abi_ilp32" : "abi_lp64" };
	static const struct { const char *name; size_t size, want; } structs[] = {
		{ "thp_apply_opts", sizeof(struct thp_apply_opts), THP_APPLY_OPTS_SIZE_VER0 },
		{ "thp_apply_all_opts", sizeof(struct thp_apply_all_opts),
		  THP_APPLY_ALL_OPTS_SIZE_VER0 },
		{ "thp_default_opts", sizeof(struct thp_default_opts), THP_DEFAULT_OPTS_SIZE_VER0 },
		{ "thp_probe_info", sizeof(struct thp_probe_info), THP_PROBE_INFO_SIZE_VER1 },
		{ "thp_query_opts", sizeof(struct thp_query_opts), THP_QUERY_OPTS_SIZE_VER2 },
		{ "thp_collapse_opts", sizeof(struct thp_collapse_opts),
		  THP_COLLAPSE_OPTS_SIZE_VER2 },
	};

	printf("VMTEST INFO abi: %zu-bit pointers, %zu-bit long, struct sizes", 8 * sizeof(void *),
	       8 * sizeof(long));
	for (size_t i = 0; i < sizeof(structs) / sizeof(structs[0]); i++) {
		printf(" %s %zu", structs[i].name, structs[i].size);
		if (structs[i].size != structs[i].want)
			cfail(&c, "sizeof(struct %s) %zu, thp.h's size %zu", structs[i].name,
			      structs[i].size, structs[i].want);
	}
	printf("\n");
	cdone(&c);
}
