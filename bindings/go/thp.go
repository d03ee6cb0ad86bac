// SPDX-License-Identifier: LGPL-2.1-or-later

// Package thp is the Go binding of libthp: per-process transparent huge
// page (THP) policy for Linux.
//
// Every public call of <thp/thp.h> has a function here: ApplyRanges,
// ApplyAll, SetDefault, GetDefault, Query, Probe, Collapse, Strerror,
// Version, Backend.String (thp_backend_name), Policy.String
// (thp_policy_name) and Report.String (thp_report_format).  The library's
// thread-local thp_strerror_detail() is read inside the same C call as the
// call that failed and carried by the returned *Error.
//
// # Targets
//
// Every call acts on the calling process unless its options name another
// one: Process (an *os.Process; the binding opens a pidfd for the call and
// closes it) or Pidfd (a pidfd the caller opened, e.g. with OpenPidfd; 0
// means the calling process, as THP_SELF does in C).
//
// # Options and results
//
// Options are structs whose zero values are the library's defaults (a nil
// pointer is the zero value); a call that takes advice or a policy takes
// it as an argument, since it has no default.  Results are returned as
// values; reports and failures as slices.
//
// # Memory
//
// Ranges name addresses: RangeOf takes a []byte and RangeAt an
// unsafe.Pointer and a length.  Neither copies the memory; the caller
// keeps it alive (and, for RangeAt, mapped) until the call returns.  THP
// advice needs page-aligned ranges: memory from syscall.Mmap is, Go heap
// memory in general is not.
//
// # Goroutines and threads
//
// Every function may be called from any number of goroutines at once: the
// library is thread-safe and the binding keeps no state of its own.  The
// library's error detail (thp_strerror_detail) is per thread, and a
// goroutine can run one cgo call on one OS thread and the next on another;
// the binding therefore copies the detail before its C call returns, so
// an *Error always holds the detail of its own call, whichever thread the
// goroutine runs on next.  There is deliberately no separate function to
// read the detail: called in a second cgo call it could read another
// thread's value (or "", that thread's last call having succeeded).
// Calls that act on the calling process act on the whole process (all its
// threads share one address space), so the thread a call runs on makes no
// difference to its effect.
package thp

/*
#cgo pkg-config: libthp
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// Advice is enum thp_advice: the kernel's MADV_* values.
type Advice int32

// The advice libthp accepts.
const (
	AdviceHuge     Advice = C.THP_ADVICE_HUGE     // MADV_HUGEPAGE: prefer huge pages here.
	AdviceNoHuge   Advice = C.THP_ADVICE_NOHUGE   // MADV_NOHUGEPAGE: never huge pages here.
	AdviceCollapse Advice = C.THP_ADVICE_COLLAPSE // MADV_COLLAPSE: collapse into huge pages now.
)

// Backend is enum thp_backend: the kernel interface that does the work.
type Backend uint32

// The backends; BackendAuto (the zero value) lets the library choose.
const (
	BackendAuto           Backend = C.THP_BACKEND_AUTO
	BackendPmadv          Backend = C.THP_BACKEND_PMADV
	BackendProcessMadvise Backend = C.THP_BACKEND_PROCESS_MADVISE
	BackendMadvise        Backend = C.THP_BACKEND_MADVISE
	BackendPrctlPolicy    Backend = C.THP_BACKEND_PRCTL_POLICY
	BackendPrctlDisable   Backend = C.THP_BACKEND_PRCTL_DISABLE
	BackendExistingOnly   Backend = C.THP_BACKEND_EXISTING_ONLY
	BackendPreload        Backend = C.THP_BACKEND_PRELOAD
	BackendInject         Backend = C.THP_BACKEND_INJECT
	BackendCount          Backend = C.THP_BACKEND_COUNT
)

// String is thp_backend_name(): "madvise", "process_madvise", ..., "unknown".
func (b Backend) String() string { return C.GoString(C.thp_backend_name(C.uint(b))) }

// Policy is enum thp_policy: a process's default THP policy.
type Policy uint32

// The policies.
const (
	PolicySystem Policy = C.THP_POLICY_SYSTEM // Follow the system setting.
	PolicyHuge   Policy = C.THP_POLICY_HUGE   // New mappings default to MADV_HUGEPAGE.
	PolicyNoHuge Policy = C.THP_POLICY_NOHUGE // THP only where advised.
	PolicyNever  Policy = C.THP_POLICY_NEVER  // No THP at all.
)

// String is thp_policy_name(): "system", "huge", "nohuge", "never" or "unknown".
func (p Policy) String() string { return C.GoString(C.thp_policy_name(C.uint(p))) }

// Flags are the THP_F_* flags of ApplyRanges and ApplyAll.
type Flags uint32

// The flags.
const (
	SkipErrors        Flags = C.THP_F_SKIP_ERRORS          // Go on past failures.
	NoErrorOnUnmapped Flags = C.THP_F_NO_ERROR_ON_UNMAPPED // Gaps are no error.
)

// DefaultFlags are the THP_DEFAULT_F_* flags of SetDefault and GetDefault.
type DefaultFlags uint32

// The flags.
const (
	RequirePersistent DefaultFlags = C.THP_DEFAULT_F_REQUIRE_PERSISTENT
	NoExisting        DefaultFlags = C.THP_DEFAULT_F_NO_EXISTING
	RFCPrctl          DefaultFlags = C.THP_DEFAULT_F_RFC_PRCTL
)

// QueryFlags are the THP_QUERY_F_* flags of Query.
type QueryFlags uint32

// FolioSizes fills the bytes by folio size (needs CAP_SYS_ADMIN to be non-zero).
const FolioSizes QueryFlags = C.THP_QUERY_F_FOLIO_SIZES

// CollapseFlags are the THP_COLLAPSE_F_* flags of Collapse.
type CollapseFlags uint32

// The flags.
const (
	PeerOnly  CollapseFlags = C.THP_COLLAPSE_F_PEER_ONLY
	CheckOnly CollapseFlags = C.THP_COLLAPSE_F_CHECK_ONLY
)

// MaxRanges is the most ranges ApplyRanges accepts (THP_MAX_RANGES).
const MaxRanges = C.THP_MAX_RANGES

// Version is thp_version(): the library's "MAJOR.MINOR.PATCH".
func Version() string { return C.GoString(C.thp_version()) }

// Strerror is thp_strerror(): the message for a libthp error code (the
// sign does not matter), with libthp's own meaning where it has one.
func Strerror(code int) string { return C.GoString(C.thp_strerror(C.int(code))) }

// Error is the error of a failed call: the call, its errno and the
// library's detail (thp_strerror_detail(), read in the same C call).
// errors.Is(err, syscall.EINVAL) and the like work through Unwrap.
type Error struct {
	Op     string        // The C function, e.g. "thp_apply_ranges".
	Errno  syscall.Errno // Positive errno (the call returned -Errno).
	Detail string        // The library's explanation; may be "".
}

func (e *Error) Error() string {
	s := e.Op + ": " + Strerror(int(e.Errno))
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the errno, so that errors.Is(err, syscall.EPERM) and
// errors.Is(err, os.ErrPermission) work.
func (e *Error) Unwrap() error { return e.Errno }

type detailBuf [C.THPGO_DETAIL_LEN]C.char

// takeError makes the error of a failed fast call and frees its detail.
func takeError(op string, r *C.struct_thpgo_result) error {
	e := &Error{Op: op, Errno: syscall.Errno(-r.rc)}
	if r.detail != nil {
		e.Detail = C.GoString(r.detail)
		C.free(unsafe.Pointer(r.detail))
	}
	return e
}

func newError(op string, rc C.int, d *detailBuf) error {
	return &Error{Op: op, Errno: syscall.Errno(-rc), Detail: C.GoString(&d[0])}
}

// Range is struct thp_range: one range of virtual addresses (same layout,
// so that a []Range is handed to C without a copy).
type Range struct {
	Addr uint64 // Start; page aligned.
	Len  uint64 // Length in bytes, rounded up to whole pages.
}

// RangeOf is the range of b's memory (not copied).  An empty b is the
// zero-length range at address 0.
func RangeOf(b []byte) Range {
	if len(b) == 0 {
		return Range{}
	}
	return Range{Addr: uint64(uintptr(unsafe.Pointer(&b[0]))), Len: uint64(len(b))}
}

// RangeAt is the range of n bytes at p (not copied).
func RangeAt(p unsafe.Pointer, n uintptr) Range {
	return Range{Addr: uint64(uintptr(p)), Len: uint64(n)}
}

// Report is struct thp_report: what happened to one requested range
// (ApplyRanges) or one failed mapping or extent (ApplyAll, Collapse).
// Same layout as the C struct: a []Report is filled by the library in place.
type Report struct {
	Addr          uint64  // Start of the range or mapping.
	Len           uint64  // Its length (page-rounded).
	BytesAdvised  uint64  // Bytes advised without error (COLLAPSE: huge after the call).
	BytesUnmapped uint64  // Bytes that no mapping covered.
	FailAddr      uint64  // First address that failed (0 if none).
	Error         int32   // Positive errno of that failure, 0 if none (see thp.h).
	Backend       Backend // The backend that did the work (0 if refused before choosing).
	Attempted     uint32  // 1 if the range was reached, 0 if not.
	reserved0     uint32
	reserved      [2]uint64
}

// Errno is r.Error as a syscall.Errno (0 if none).
func (r *Report) Errno() syscall.Errno { return syscall.Errno(r.Error) }

// String is thp_report_format(): one human-readable line.
func (r *Report) String() string {
	var buf [256]C.char
	n := C.thp_report_format((*C.struct_thp_report)(unsafe.Pointer(r)), &buf[0], C.size_t(len(buf)))
	if int(n) >= len(buf) {
		big := make([]byte, int(n)+1)
		C.thp_report_format((*C.struct_thp_report)(unsafe.Pointer(r)),
			(*C.char)(unsafe.Pointer(&big[0])), C.size_t(len(big)))
		return string(big[:n])
	}
	return C.GoStringN(&buf[0], n)
}

// Target names the process a call acts on.  The zero value is the calling
// process.  At most one of Process and Pidfd may be set.
type Target struct {
	// Process is another process; the binding opens a pidfd for the call.
	// Its PID must not have been reused: a child not yet waited for is safe.
	Process *os.Process
	// Pidfd is a pidfd the caller opened (0: the calling process).
	Pidfd int
}

// target resolves t to a pidfd for one call and the function that releases it.
func (t *Target) target() (C.int, func(), error) {
	if t.Process != nil && t.Pidfd != 0 {
		return 0, nil, &Error{Op: "thp", Errno: syscall.EINVAL,
			Detail: "both Process and Pidfd given"}
	}
	if t.Process == nil {
		return C.int(t.Pidfd), func() {}, nil
	}
	fd, err := pidfdOpen(t.Process.Pid)
	if err != nil {
		return 0, nil, &Error{Op: "pidfd_open", Errno: err.(syscall.Errno),
			Detail: fmt.Sprintf("cannot open a pidfd for PID %d", t.Process.Pid)}
	}
	return C.int(fd), func() { syscall.Close(fd) }, nil
}

// Pidfd is an open pidfd (see OpenPidfd).
type Pidfd struct{ fd int }

// Fd is the descriptor, for Target.Pidfd.
func (p *Pidfd) Fd() int { return p.fd }

// Close closes the descriptor.
func (p *Pidfd) Close() error {
	if p.fd < 0 {
		return syscall.EBADF
	}
	err := syscall.Close(p.fd)
	p.fd = -1
	return err
}

// OpenPidfd opens a pidfd for p (pidfd_open(2), close-on-exec).
func OpenPidfd(p *os.Process) (*Pidfd, error) {
	fd, err := pidfdOpen(p.Pid)
	if err != nil {
		return nil, os.NewSyscallError("pidfd_open", err)
	}
	return &Pidfd{fd: fd}, nil
}

const sysPidfdOpen = 434 // the same number on every architecture

func pidfdOpen(pid int) (int, error) {
	fd, _, e := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if e != 0 {
		return -1, e
	}
	if fd == 0 {
		// fd 0 means THP_SELF to the library: move it.
		nfd, err := syscall.Dup(0)
		syscall.Close(0)
		if err != nil {
			return -1, err
		}
		syscall.CloseOnExec(nfd)
		return nfd, nil
	}
	return int(fd), nil
}

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

// DefaultOptions are the options of SetDefault and GetDefault; the zero
// value is the library's default.
type DefaultOptions struct {
	Target
	Flags    DefaultFlags
	Backend  Backend
	PrctlSet int32 // With RFCPrctl: PR_SET_THP_POLICY number (0 = 78).
	PrctlGet int32 // With RFCPrctl: PR_GET_THP_POLICY number (0 = 79).
}

// DefaultResult is a process's default policy as set or read.
type DefaultResult struct {
	Policy          Policy  // GetDefault: the policy; SetDefault: the one asked for.
	BackendUsed     Backend // The backend that set or explains the policy.
	Persistent      bool    // The policy survives fork() and exec().
	MappingsChanged uint64  // SetDefault: existing mappings advised.
}

func (opts *DefaultOptions) call(set bool, policy Policy) (DefaultResult, error) {
	pidfd, done, err := opts.target()
	if err != nil {
		return DefaultResult{}, err
	}
	defer done()
	cr := C.thpgo_default_fast(C.bool(set), C.int32_t(pidfd), C.uint32_t(policy),
		C.uint32_t(opts.Flags), C.uint32_t(opts.Backend), C.int32_t(opts.PrctlSet),
		C.int32_t(opts.PrctlGet))
	res := DefaultResult{Policy: Policy(cr.policy), BackendUsed: Backend(cr.backend_used),
		Persistent: bool(cr.persistent), MappingsChanged: uint64(cr.mappings_changed)}
	if cr.rc < 0 {
		op := "thp_get_default"
		if set {
			op = "thp_set_default"
		}
		return res, takeError(op, &cr)
	}
	return res, nil
}

// SetDefault is thp_set_default(): set the default policy of the calling
// process (another one only with BackendInject).
func SetDefault(policy Policy, opts *DefaultOptions) (DefaultResult, error) {
	if opts == nil {
		opts = &DefaultOptions{}
	}
	return opts.call(true, policy)
}

// GetDefault is thp_get_default(): read a process's default policy.
func GetDefault(opts *DefaultOptions) (DefaultResult, error) {
	if opts == nil {
		opts = &DefaultOptions{}
	}
	return opts.call(false, 0)
}

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

// layout is the C side of the layout test: the sizes and offsets the Go
// mirror types Range and Report must have.
func layout() map[string]uintptr {
	var r C.struct_thp_report
	var g C.struct_thp_range
	return map[string]uintptr{
		"range.size":           unsafe.Sizeof(g),
		"range.len":            unsafe.Offsetof(g.len),
		"report.size":          unsafe.Sizeof(r),
		"report.bytes_advised": unsafe.Offsetof(r.bytes_advised),
		"report.fail_addr":     unsafe.Offsetof(r.fail_addr),
		"report.error":         unsafe.Offsetof(r.error),
		"report.backend":       unsafe.Offsetof(r.backend),
		"report.attempted":     unsafe.Offsetof(r.attempted),
	}
}
