// SPDX-License-Identifier: LGPL-2.1-or-later

// Package cbench is the C baseline of the binding's benchmarks: the same
// libthp calls made n times in a loop inside one C call, so that the Go
// figures can be set against C's without cgo's per-call cost.
package cbench

/*
#cgo pkg-config: libthp
#include <thp/thp.h>

static int apply_loop(const struct thp_range *r, size_t nr, struct thp_report *rep, int n)
{
	int rc = 0;
	for (int i = 0; i < n; i++) {
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = rep);
		rc = thp_apply_ranges(r, nr, &o);
		if (rc < 0)
			break;
	}
	return rc;
}

static int get_default_loop(int n)
{
	int rc = 0;
	for (int i = 0; i < n; i++) {
		THP_OPTS(thp_default_opts, o);
		rc = thp_get_default(&o);
		if (rc < 0)
			break;
	}
	return rc;
}
*/
import "C"

import "unsafe"

// ApplyHuge calls thp_apply_ranges(HUGE) n times over the ranges (a
// []thp.Range: pairs of uint64) with reports, in C.
func ApplyHuge(ranges unsafe.Pointer, nr int, reports unsafe.Pointer, n int) int {
	return int(C.apply_loop((*C.struct_thp_range)(ranges), C.size_t(nr),
		(*C.struct_thp_report)(reports), C.int(n)))
}

// GetDefault calls thp_get_default() n times in C.
func GetDefault(n int) int { return int(C.get_default_loop(C.int(n))) }
