// SPDX-License-Identifier: LGPL-2.1-or-later

// The binding of thp_set_default() and thp_get_default().

package thp

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

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
