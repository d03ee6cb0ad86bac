// SPDX-License-Identifier: LGPL-2.1-or-later

// The binding of thp_probe() and thp_query().

package thp

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

// SizeInfo is struct thp_size_info: one folio size the kernel offers.
type SizeInfo struct {
	Size         uint64
	Enabled      uint8 // enum thp_sysfs_mode as written (INHERIT too).
	Mode         uint8 // Enabled with "inherit" resolved.
	ShmemEnabled uint8 // enum thp_shmem_mode.
	HugePolicy   bool  // A HUGE policy can get this size.
}

// ProbeInfo is struct thp_probe_info: what the running kernel offers.
type ProbeInfo struct {
	Backends                      uint32 // Bit (1 << Backend) per usable backend.
	ThpMode                       uint32 // sysfs "enabled": 0 always, 1 madvise, 2 never, 3 unknown.
	PmdSize                       uint64
	PidfdSelf                     int32
	ProcmapQuery                  bool
	PmadvSkipErrors               bool
	PmadvNoErrorOnUnmapped        bool
	PmadvSetDefault               bool
	PmadvEntireAddressSpace       bool
	ProcessMadviseSelfHuge        bool
	ThpDisableExceptAdvised       bool
	MadviseCollapse               bool
	SizesSource                   uint32 // enum thp_sizes_source.
	NrSizes                       uint32 // Sizes the kernel offers (may exceed len(Sizes)).
	Defrag                        uint32
	ShmemMode                     uint32
	KhugepagedPagesToScan         uint32 // ProbeUnknown where unreadable, as the others.
	KhugepagedScanSleepMillisecs  uint32
	KhugepagedAllocSleepMillisecs uint32
	KhugepagedMaxPtesNone         uint32
	KhugepagedMaxPtesSwap         uint32
	KhugepagedMaxPtesShared       uint32
	KhugepagedDefrag              uint32
	Sizes                         []SizeInfo // Smallest first.
}

// ProbeUnknown is a khugepaged value that could not be read.
const ProbeUnknown = ^uint32(0)

// Has says whether backend b is usable here.
func (p *ProbeInfo) Has(b Backend) bool { return b < 32 && p.Backends&(1<<b) != 0 }

// Probe is thp_probe(): what this kernel offers.
func Probe() (ProbeInfo, error) {
	var o C.struct_thp_probe_info
	o.sz = C.sizeof_struct_thp_probe_info
	var d detailBuf
	if rc := C.thpgo_probe(&o, &d[0]); rc < 0 {
		return ProbeInfo{}, newError("thp_probe", rc, &d)
	}
	p := ProbeInfo{
		Backends: uint32(o.backends), ThpMode: uint32(o.thp_mode), PmdSize: uint64(o.pmd_size),
		PidfdSelf: int32(o.pidfd_self), ProcmapQuery: bool(o.procmap_query),
		PmadvSkipErrors: bool(o.pmadv_skip_errors), PmadvNoErrorOnUnmapped: bool(o.pmadv_no_error_on_unmapped),
		PmadvSetDefault: bool(o.pmadv_set_default), PmadvEntireAddressSpace: bool(o.pmadv_entire_address_space),
		ProcessMadviseSelfHuge: bool(o.process_madvise_self_huge), ThpDisableExceptAdvised: bool(o.thp_disable_except_advised),
		MadviseCollapse: bool(o.madvise_collapse), SizesSource: uint32(o.sizes_source), NrSizes: uint32(o.nr_sizes),
		Defrag: uint32(o.defrag), ShmemMode: uint32(o.shmem_mode),
		KhugepagedPagesToScan:         uint32(o.khugepaged_pages_to_scan),
		KhugepagedScanSleepMillisecs:  uint32(o.khugepaged_scan_sleep_millisecs),
		KhugepagedAllocSleepMillisecs: uint32(o.khugepaged_alloc_sleep_millisecs),
		KhugepagedMaxPtesNone:         uint32(o.khugepaged_max_ptes_none),
		KhugepagedMaxPtesSwap:         uint32(o.khugepaged_max_ptes_swap),
		KhugepagedMaxPtesShared:       uint32(o.khugepaged_max_ptes_shared),
		KhugepagedDefrag:              uint32(o.khugepaged_defrag),
	}
	n := int(o.nr_sizes)
	if n > len(o.sizes) {
		n = len(o.sizes)
	}
	for _, s := range o.sizes[:n] {
		p.Sizes = append(p.Sizes, SizeInfo{Size: uint64(s.size), Enabled: uint8(s.enabled),
			Mode: uint8(s.mode), ShmemEnabled: uint8(s.shmem_enabled), HugePolicy: bool(s.huge_policy)})
	}
	return p, nil
}

// MappingState is struct thp_mapping_state: the THP state of one mapping
// (/proc/PID/smaps).
type MappingState struct {
	Start, End    uint64
	AdvisedHuge   bool   // VmFlags "hg".
	AdvisedNoHuge bool   // VmFlags "nh".
	ThpEligible   bool   // THPeligible: 1.
	Anonymous     bool   // No backing file.
	AnonHugeBytes uint64 // AnonHugePages.
	RssBytes      uint64
	// Name is the path or [heap], [stack], ... (truncated); chosen by the
	// target process: untrusted, escape it before showing it.
	Name string
	// Folios are the anonymous bytes by folio size (FolioSizes only).
	Folios *MappingFolios
}

// MappingFolios is struct thp_mapping_folios: one mapping's anonymous
// bytes by folio size; Bytes[i] is for QueryResult.Sizes[i].
type MappingFolios struct {
	BaseBytes  uint64
	OtherBytes uint64
	Bytes      []uint64
}

// FolioBytes is struct thp_folio_bytes.
type FolioBytes struct {
	Size  uint64 // Folio size.
	Bytes uint64 // Anonymous bytes in folios of that size.
}

// QueryOptions are the options of Query; the zero value reads every
// mapping of the calling process.
type QueryOptions struct {
	Target
	Flags QueryFlags
	Addr  uint64 // Only mappings overlapping [Addr, Addr+Len) ...
	Len   uint64 // ... when Len != 0.
}

// QueryResult is what Query read.
type QueryResult struct {
	Mappings                []MappingState
	AnonBytes               uint64
	AnonHugeBytes           uint64
	AnonAlignableBytes      uint64
	FolioSource             uint32 // enum thp_folio_source.
	AnonBaseBytes           uint64
	AnonOtherBytes          uint64
	AnonSizedAlignableBytes uint64
	Sizes                   []FolioBytes
}

// Query is thp_query(): the THP state of a process's mappings.  It calls
// the library again with a larger array when mappings appeared in
// between, so that Mappings holds every matching one.
func Query(opts *QueryOptions) (QueryResult, error) {
	if opts == nil {
		opts = &QueryOptions{}
	}
	pidfd, done, err := opts.target()
	if err != nil {
		return QueryResult{}, err
	}
	defer done()
	n := 64
	for {
		var o C.struct_thp_query_opts
		o.sz = C.sizeof_struct_thp_query_opts
		o.pidfd = C.int32_t(pidfd)
		o.flags = C.uint32_t(opts.Flags)
		o.addr = C.uint64_t(opts.Addr)
		o.len = C.uint64_t(opts.Len)
		o.states_cap = C.uint64_t(n)
		states := make([]C.struct_thp_mapping_state, n)
		var folios []C.struct_thp_mapping_folios
		var fp *C.struct_thp_mapping_folios
		if opts.Flags&FolioSizes != 0 {
			folios = make([]C.struct_thp_mapping_folios, n)
			fp = &folios[0]
		}
		var d detailBuf
		rc := C.thpgo_query(&o, &states[0], fp, &d[0])
		if rc < 0 {
			return QueryResult{}, newError("thp_query", rc, &d)
		}
		if uint64(o.states_needed) > uint64(n) {
			n = int(o.states_needed) + 16
			continue
		}
		res := QueryResult{AnonBytes: uint64(o.anon_bytes), AnonHugeBytes: uint64(o.anon_huge_bytes),
			AnonAlignableBytes: uint64(o.anon_alignable_bytes), FolioSource: uint32(o.folio_source),
			AnonBaseBytes: uint64(o.anon_base_bytes), AnonOtherBytes: uint64(o.anon_other_bytes),
			AnonSizedAlignableBytes: uint64(o.anon_sized_alignable_bytes)}
		nsizes := int(o.nr_sizes)
		if nsizes > len(o.sizes) {
			nsizes = len(o.sizes)
		}
		for _, s := range o.sizes[:nsizes] {
			res.Sizes = append(res.Sizes, FolioBytes{Size: uint64(s.size), Bytes: uint64(s.bytes)})
		}
		res.Mappings = make([]MappingState, int(rc))
		for i := range res.Mappings {
			s := &states[i]
			m := &res.Mappings[i]
			*m = MappingState{Start: uint64(s.start), End: uint64(s.end),
				AdvisedHuge: bool(s.advised_huge), AdvisedNoHuge: bool(s.advised_nohuge),
				ThpEligible: bool(s.thp_eligible), Anonymous: bool(s.anonymous),
				AnonHugeBytes: uint64(s.anon_huge_bytes), RssBytes: uint64(s.rss_bytes),
				Name: C.GoString(&s.name[0])}
			if folios != nil {
				f := &folios[i]
				mf := &MappingFolios{BaseBytes: uint64(f.base_bytes), OtherBytes: uint64(f.other_bytes)}
				for _, b := range f.bytes[:nsizes] {
					mf.Bytes = append(mf.Bytes, uint64(b))
				}
				m.Folios = mf
			}
		}
		return res, nil
	}
}
