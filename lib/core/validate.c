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

/*
 * validate_ranges() range by range: the detail names the first bad range,
 * and the byte sum is checked for wrapping.
 */
static int validate_ranges_exact(const struct thp_range *ranges, size_t n, size_t page_size,
				 bool *as_vector, uint64_t *total)
{
	uint64_t lens = 0;
	uint64_t sum = 0;
	bool sum_ok = true;

	for (size_t i = 0; i < n; i++) {
		const struct thp_range *r = &ranges[i];
		uint64_t len;

		lens |= r->len | (r->len == 0);
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

/*
 * Below these bounds (all ones, so an OR of many values stays below one
 * when each does) nothing can wrap: addr + len fits in a pointer, and
 * THP_MAX_RANGES (2^20) lengths sum to less than 2^63.
 */
#define ADDR_BOUND ((uint64_t)(UINTPTR_MAX >> 1))
#define LEN_BOUND (ADDR_BOUND < (1ULL << 43) - 1 ? ADDR_BOUND : (1ULL << 43) - 1)
_Static_assert(THP_MAX_RANGES <= 1u << 20, "LEN_BOUND keeps the sum below 2^63");

/*
 * The common request in one pass of a few instructions a range (far less
 * than the kernel spends on each): addresses and lengths are OR-ed and
 * checked once against the page size and the bounds above.  A request
 * that fails there goes range by range, for the detail or the exact sum.
 */
int validate_ranges(const struct thp_range *ranges, size_t n, size_t page_size,
		    bool *as_vector, uint64_t *total)
{
	const uint64_t mask = page_size - 1;
	uint64_t lens = 0;  /* every length OR-ed (and 1 for an empty one) */
	uint64_t addrs = 0; /* every address OR-ed */
	uint64_t sum = 0;

	if (n > THP_MAX_RANGES) {
		report_set_detail("%zu ranges: at most %u per call", n, THP_MAX_RANGES);
		return -EINVAL;
	}
	if (n && !ranges) {
		report_set_detail("ranges is NULL but nr_ranges is %zu", n);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t len = ranges[i].len;

		addrs |= ranges[i].addr;
		lens |= len | (len == 0); /* an empty entry: not as the vector */
		sum += (len + mask) & ~mask;
	}
	if ((addrs & mask) || addrs > ADDR_BOUND || lens > LEN_BOUND)
		return validate_ranges_exact(ranges, n, page_size, as_vector, total);
	*as_vector = n && !(lens & mask);
	*total = sum;
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
