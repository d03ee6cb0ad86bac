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
