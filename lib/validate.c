// SPDX-License-Identifier: LGPL-2.1-or-later
/* Request validation: everything is checked before the first system call. */
#include <errno.h>

#include "compat.h"
#include "internal.h"

int validate_advice(int advice)
{
	switch (advice) {
	case THP_ADVICE_HUGE:
	case THP_ADVICE_NOHUGE:
	case THP_ADVICE_COLLAPSE:
		return 0;
	default:
		/* Destructive advice (DONTNEED, FREE, REMOVE...) never passes. */
		report_set_detail("advice %d is not THP advice: only MADV_HUGEPAGE (14), "
				  "MADV_NOHUGEPAGE (15) and MADV_COLLAPSE (25) are accepted",
				  advice);
		return -EINVAL;
	}
}

int validate_ranges(const struct thp_range *ranges, size_t n, size_t page_size,
		    bool *as_vector, uint64_t *total)
{
	uint64_t lens = 0; /* every length OR-ed: tells about all at once */
	uint64_t sum = 0;
	bool sum_ok = true;

	if (n > THP_MAX_RANGES) {
		report_set_detail("%zu ranges: at most %u per call", n, THP_MAX_RANGES);
		return -EINVAL;
	}
	if (n && !ranges) {
		report_set_detail("ranges is NULL but nr_ranges is %zu", n);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		const struct thp_range *r = &ranges[i];
		uint64_t len;

		lens |= r->len;
		if (!r->len)
			lens |= 1; /* an empty entry: not as the vector */

		if (r->addr & (page_size - 1)) {
			report_set_detail("range %zu: address 0x%llx is not page aligned", i,
					  (unsigned long long)r->addr);
			return -EINVAL;
		}
		/* Rounding up must not wrap, and neither may addr + len. */
		if (r->len > UINT64_MAX - page_size + 1) {
			report_set_detail("range %zu: length wraps", i);
			return -EINVAL;
		}
		len = range_len(r, page_size);
		if (len > UINTPTR_MAX - r->addr || r->addr + len > (uint64_t)UINTPTR_MAX) {
			report_set_detail("range %zu: 0x%llx + 0x%llx wraps the address space", i,
					  (unsigned long long)r->addr, (unsigned long long)len);
			return -EINVAL;
		}
		sum_ok &= !__builtin_add_overflow(sum, len, &sum);
	}
	*as_vector = n && !(lens & (page_size - 1));
	*total = sum_ok && sum <= (uint64_t)INT64_MAX ? sum : 0;
	return 0;
}

int validate_flags_backend(uint32_t flags, uint32_t allowed, uint32_t backend)
{
	if (flags & ~allowed) {
		report_set_detail("unknown flags 0x%x", flags & ~allowed);
		return -EINVAL;
	}
	if (backend >= THP_BACKEND_COUNT) {
		report_set_detail("unknown backend %u", backend);
		return -EINVAL;
	}
	return 0;
}
