// SPDX-License-Identifier: LGPL-2.1-or-later

// The binding of thp_apply_ranges() and thp_apply_all().

package thp

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import "unsafe"

// ApplyOptions are the options of ApplyRanges; the zero value is the
// library's default (the calling process, stop at the first failure,
// automatic backend).
type ApplyOptions struct {
	Target
	Flags   Flags
	Backend Backend
	// Reports, when its capacity covers the ranges, is where the reports
	// are written (no allocation); else a new slice is allocated.
	Reports []Report
}

// ApplyResult is what ApplyRanges did.
type ApplyResult struct {
	Advised     int      // Ranges advised completely without error (the C return value).
	Reports     []Report // One per range, written on every return (see thp_apply_ranges()).
	BackendUsed Backend  // The backend that did the work.
}

// ApplyRanges is thp_apply_ranges(): advise the ranges of one process.
// The result's reports are valid also when the error is not nil, except
// for input that says nothing about them (more than MaxRanges ranges).
func ApplyRanges(advice Advice, ranges []Range, opts *ApplyOptions) (ApplyResult, error) {
	if opts == nil {
		opts = &ApplyOptions{}
	}
	pidfd, done, err := opts.target()
	if err != nil {
		return ApplyResult{}, err
	}
	defer done()
	var reports []Report
	switch {
	case len(ranges) > MaxRanges:
		// The library refuses it and writes no report: none to allocate.
	case cap(opts.Reports) >= len(ranges):
		reports = opts.Reports[:len(ranges)]
	default:
		reports = make([]Report, len(ranges))
	}
	var rp *C.struct_thp_report
	var r0 *C.struct_thp_range
	if len(reports) > 0 {
		rp = (*C.struct_thp_report)(unsafe.Pointer(&reports[0]))
	}
	if len(ranges) > 0 {
		r0 = (*C.struct_thp_range)(unsafe.Pointer(&ranges[0]))
	}
	cr := C.thpgo_apply_ranges_fast(r0, C.size_t(len(ranges)), C.int32_t(pidfd),
		C.int32_t(advice), C.uint32_t(opts.Flags), C.uint32_t(opts.Backend), rp)
	res := ApplyResult{Reports: reports, BackendUsed: Backend(cr.backend_used)}
	if cr.rc < 0 {
		return res, takeError("thp_apply_ranges", &cr)
	}
	res.Advised = int(cr.rc)
	return res, nil
}

// ApplyAllOptions are the options of ApplyAll; the zero value is the
// library's default.
type ApplyAllOptions struct {
	Target
	Flags   Flags
	Backend Backend
	// Failures is where the failed mappings are written, up to its
	// capacity (nil: none are kept; FailuresNeeded still counts them).
	Failures []Report
}

// ApplyAllResult is what ApplyAll did.
type ApplyAllResult struct {
	Advised         int      // Mappings advised without error (the C return value).
	Failures        []Report // The first min(FailuresNeeded, cap(opts.Failures)) failures.
	FailuresNeeded  uint64
	MappingsSeen    uint64
	MappingsAdvised uint64
	MappingsSkipped uint64
	BytesAdvised    uint64
	BackendUsed     Backend
}

// ApplyAll is thp_apply_all(): advise every mapping of one process.  The
// result's counters are valid also when the error is not nil.
func ApplyAll(advice Advice, opts *ApplyAllOptions) (ApplyAllResult, error) {
	if opts == nil {
		opts = &ApplyAllOptions{}
	}
	pidfd, done, err := opts.target()
	if err != nil {
		return ApplyAllResult{}, err
	}
	defer done()
	var o C.struct_thp_apply_all_opts
	o.sz = C.sizeof_struct_thp_apply_all_opts
	o.pidfd = C.int32_t(pidfd)
	o.advice = C.int32_t(advice)
	o.flags = C.uint32_t(opts.Flags)
	o.backend = C.uint32_t(opts.Backend)
	f := opts.Failures[:cap(opts.Failures)]
	var fp *C.struct_thp_report
	if len(f) > 0 {
		fp = (*C.struct_thp_report)(unsafe.Pointer(&f[0]))
		o.failures_cap = C.uint64_t(len(f))
	}
	var d detailBuf
	rc := C.thpgo_apply_all(&o, fp, &d[0])
	n := uint64(o.failures_needed)
	if n > uint64(len(f)) {
		n = uint64(len(f))
	}
	res := ApplyAllResult{
		Failures:        f[:n],
		FailuresNeeded:  uint64(o.failures_needed),
		MappingsSeen:    uint64(o.mappings_seen),
		MappingsAdvised: uint64(o.mappings_advised),
		MappingsSkipped: uint64(o.mappings_skipped),
		BytesAdvised:    uint64(o.bytes_advised),
		BackendUsed:     Backend(o.backend_used),
	}
	if rc < 0 {
		return res, newError("thp_apply_all", rc, &d)
	}
	res.Advised = int(rc)
	return res, nil
}
