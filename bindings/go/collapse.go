// SPDX-License-Identifier: LGPL-2.1-or-later

// The binding of thp_collapse().

package thp

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import "unsafe"

// CollapseOptions are the options of Collapse; the zero value is one pass
// over the calling process with the kernel's khugepaged limits and no budget.
type CollapseOptions struct {
	Target
	Flags           CollapseFlags
	MinPresentPages uint32 // 0: the kernel's khugepaged/max_ptes_none.
	MaxSharedPages  uint32 // 0: the kernel's khugepaged/max_ptes_shared.
	BudgetBytes     uint64 // 0: no limit.
	BudgetNs        uint64 // 0: no limit.
	// Failures is where the refused extents are written, up to its
	// capacity (nil: none are kept; FailuresNeeded still counts them).
	Failures []Report
}

// CollapseResult is what Collapse did (the out fields of struct thp_collapse_opts).
type CollapseResult struct {
	Collapsed             int // The C return value.
	Failures              []Report
	FailuresNeeded        uint64
	MappingsSeen          uint64
	MappingsEligible      uint64
	MappingsNoHuge        uint64
	ExtentsCollapsed      uint64
	ExtentsSparse         uint64
	ExtentsFailed         uint64
	ExtentsOverBudget     uint64
	BytesCollapsed        uint64
	AnonBytes             uint64
	AnonHugeBefore        uint64
	AnonHugeAfter         uint64
	ThpDisabled           bool
	ElapsedNs             uint64
	ExtentsSmallFolios    uint64
	SmallFolioBytesBefore uint64
	SmallFolioBytesAfter  uint64
	FolioSource           uint32
	ExtentsShared         uint64
}

// Collapse is thp_collapse(): one collapse pass over a process.
func Collapse(opts *CollapseOptions) (CollapseResult, error) {
	if opts == nil {
		opts = &CollapseOptions{}
	}
	pidfd, done, err := opts.target()
	if err != nil {
		return CollapseResult{}, err
	}
	defer done()
	var o C.struct_thp_collapse_opts
	o.sz = C.sizeof_struct_thp_collapse_opts
	o.pidfd = C.int32_t(pidfd)
	o.flags = C.uint32_t(opts.Flags)
	o.min_present_pages = C.uint32_t(opts.MinPresentPages)
	o.max_shared_pages = C.uint32_t(opts.MaxSharedPages)
	o.budget_bytes = C.uint64_t(opts.BudgetBytes)
	o.budget_ns = C.uint64_t(opts.BudgetNs)
	f := opts.Failures[:cap(opts.Failures)]
	var fp *C.struct_thp_report
	if len(f) > 0 {
		fp = (*C.struct_thp_report)(unsafe.Pointer(&f[0]))
		o.failures_cap = C.uint64_t(len(f))
	}
	var d detailBuf
	rc := C.thpgo_collapse(&o, fp, &d[0])
	if rc < 0 {
		return CollapseResult{}, newError("thp_collapse", rc, &d)
	}
	n := uint64(o.failures_needed)
	if n > uint64(len(f)) {
		n = uint64(len(f))
	}
	return CollapseResult{
		Collapsed: int(rc), Failures: f[:n], FailuresNeeded: uint64(o.failures_needed),
		MappingsSeen: uint64(o.mappings_seen), MappingsEligible: uint64(o.mappings_eligible),
		MappingsNoHuge: uint64(o.mappings_nohuge), ExtentsCollapsed: uint64(o.extents_collapsed),
		ExtentsSparse: uint64(o.extents_sparse), ExtentsFailed: uint64(o.extents_failed),
		ExtentsOverBudget: uint64(o.extents_over_budget), BytesCollapsed: uint64(o.bytes_collapsed),
		AnonBytes: uint64(o.anon_bytes), AnonHugeBefore: uint64(o.anon_huge_before),
		AnonHugeAfter: uint64(o.anon_huge_after), ThpDisabled: o.thp_disabled != 0,
		ElapsedNs: uint64(o.elapsed_ns), ExtentsSmallFolios: uint64(o.extents_small_folios),
		SmallFolioBytesBefore: uint64(o.small_folio_bytes_before),
		SmallFolioBytesAfter:  uint64(o.small_folio_bytes_after),
		FolioSource:           uint32(o.folio_source), ExtentsShared: uint64(o.extents_shared),
	}, nil
}
