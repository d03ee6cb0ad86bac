// SPDX-License-Identifier: LGPL-2.1-or-later
/* Extensible options structs: the size is the version (cf. copy_struct_from_user). */
#include <errno.h>

#include "internal.h"

int opts_check(const void *opts, size_t known, size_t ver0)
{
	const unsigned char *p = opts;
	uint64_t sz;

	if (!opts) {
		report_set_detail("options struct pointer is NULL");
		return -EINVAL;
	}
	/* Every options struct starts with a uint64_t sz on every ABI. */
	sz = *(const uint64_t *)opts;
	if (sz < ver0) {
		report_set_detail("options struct size %llu is below the first version (%zu)",
				  (unsigned long long)sz, ver0);
		return -EINVAL;
	}
#if SIZE_MAX < UINT64_MAX
	/* No object is larger than a 32-bit address space. */
	if (sz > SIZE_MAX) {
		report_set_detail("options struct size %llu is larger than the address space",
				  (unsigned long long)sz);
		return -EINVAL;
	}
#endif
	/* A newer caller may only be ignored where it left the bytes zero. */
	for (size_t i = known; i < sz; i++) {
		if (p[i]) {
			report_set_detail("options struct byte %zu is set, but this library knows "
					  "only %zu bytes", i, known);
			return -E2BIG;
		}
	}
	return 0;
}
