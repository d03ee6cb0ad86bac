// SPDX-License-Identifier: LGPL-2.1-or-later
//! Raw FFI bindings to libthp (`<thp/thp.h>`): per-process transparent huge
//! page policy for Linux.
//!
//! Every public function, struct and constant of the header, with the same
//! names.  The structs are `#[repr(C)]` and have the header's layout on
//! every Linux ABI (`tests/layout.rs` compares each size and field offset
//! with what the C compiler says).  A `THP_PTR64` member is a [`thp_ptr64`]
//! union: the pointer and the `uint64_t` that keeps it 8 bytes wide on
//! 32-bit targets.  The safe API is the `libthp` crate.
//!
//! Conventions of the C library: an options struct starts with `sz`, its
//! `size_of()`; a call returns `>= 0` or a negative errno, and
//! [`thp_strerror_detail`] explains the last failure of the calling thread.
#![allow(non_camel_case_types)]
#![no_std]

use core::marker::PhantomData;

/// C's `int`, `unsigned int` and `char` on Linux (core::ffi has them only since Rust 1.64).
pub type c_int = i32;
/// See [`c_int`].
pub type c_uint = u32;
/// See [`c_int`].
pub type c_char = i8;

/// A `THP_PTR64(type, name)` member: a pointer in an 8-byte slot.  On
/// 32-bit targets the pointer is the low 4 bytes (little endian) and the
/// library ignores the rest; write the whole slot through [`thp_ptr64::new`]
/// or [`thp_ptr64::null`] so that those bytes are zero.
#[repr(C)]
pub union thp_ptr64<T> {
    /// The pointer.
    pub ptr: *mut T,
    /// The whole slot (`name ## _u64` in C).
    pub u64_: u64,
    _marker: PhantomData<*mut T>,
}

impl<T> thp_ptr64<T> {
    /// A null pointer, all 8 bytes zero.
    pub const fn null() -> Self {
        thp_ptr64 { u64_: 0 }
    }
    /// The slot holding `p`, its unused bytes zero.
    pub fn new(p: *mut T) -> Self {
        let mut s = Self::null();
        s.ptr = p;
        s
    }
    /// The pointer it holds.
    pub fn get(&self) -> *mut T {
        // SAFETY: both members are plain data; the pointer is the first bytes.
        unsafe { self.ptr }
    }
}

impl<T> Clone for thp_ptr64<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for thp_ptr64<T> {}
impl<T> Default for thp_ptr64<T> {
    fn default() -> Self {
        Self::null()
    }
}
impl<T> core::fmt::Debug for thp_ptr64<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{:p}", self.get())
    }
}

/// `THP_VERSION_MAJOR`.
pub const THP_VERSION_MAJOR: u32 = 0;
/// `THP_VERSION_MINOR`.
pub const THP_VERSION_MINOR: u32 = 2;
/// `THP_VERSION_PATCH`.
pub const THP_VERSION_PATCH: u32 = 0;

/// `enum thp_advice`: MADV_HUGEPAGE.
pub const THP_ADVICE_HUGE: i32 = 14;
/// MADV_NOHUGEPAGE.
pub const THP_ADVICE_NOHUGE: i32 = 15;
/// MADV_COLLAPSE.
pub const THP_ADVICE_COLLAPSE: i32 = 25;

/// `enum thp_backend`: pick the best available.
pub const THP_BACKEND_AUTO: u32 = 0;
/// process_madvise() with the RFC PMADV_* flags.
pub const THP_BACKEND_PMADV: u32 = 1;
/// Mainline process_madvise().
pub const THP_BACKEND_PROCESS_MADVISE: u32 = 2;
/// A madvise() loop (own process only).
pub const THP_BACKEND_MADVISE: u32 = 3;
/// RFC PR_SET_THP_POLICY.
pub const THP_BACKEND_PRCTL_POLICY: u32 = 4;
/// Mainline PR_SET_THP_DISABLE.
pub const THP_BACKEND_PRCTL_DISABLE: u32 = 5;
/// Existing mappings only.
pub const THP_BACKEND_EXISTING_ONLY: u32 = 6;
/// libthp-preload.so.
pub const THP_BACKEND_PRELOAD: u32 = 7;
/// The target issues the call itself (ptrace; another process, x86_64 only).
pub const THP_BACKEND_INJECT: u32 = 8;
/// Number of backend ids.
pub const THP_BACKEND_COUNT: u32 = 9;

/// Target the calling process.
pub const THP_SELF: i32 = 0;

/// Best effort: go on past failures.
pub const THP_F_SKIP_ERRORS: u32 = 1 << 0;
/// Unmapped gaps inside a range are not errors.
pub const THP_F_NO_ERROR_ON_UNMAPPED: u32 = 1 << 1;

/// Largest nr_ranges accepted by thp_apply_ranges().
pub const THP_MAX_RANGES: u32 = 1 << 20;

/// `enum thp_policy`: follow the system setting.
pub const THP_POLICY_SYSTEM: u32 = 0;
/// New mappings default to MADV_HUGEPAGE.
pub const THP_POLICY_HUGE: u32 = 1;
/// THP only where advised.
pub const THP_POLICY_NOHUGE: u32 = 2;
/// No THP at all.
pub const THP_POLICY_NEVER: u32 = 3;
/// Number of policies.
pub const THP_POLICY_COUNT: u32 = 4;

/// Fail rather than apply a policy that does not survive fork()/exec().
pub const THP_DEFAULT_F_REQUIRE_PERSISTENT: u32 = 1 << 0;
/// Do not advise existing mappings.
pub const THP_DEFAULT_F_NO_EXISTING: u32 = 1 << 1;
/// The kernel implements the RFC PR_SET_THP_POLICY prctl.
pub const THP_DEFAULT_F_RFC_PRCTL: u32 = 1 << 2;

/// Entries of thp_probe_info.sizes.
pub const THP_PROBE_MAX_SIZES: usize = 16;
/// A khugepaged_* value that could not be read.
pub const THP_PROBE_UNKNOWN: u32 = u32::MAX;

/// `enum thp_sizes_source`.
pub const THP_SIZES_UNKNOWN: u32 = 0;
/// No per-size controls (before 6.8).
pub const THP_SIZES_PMD_ONLY: u32 = 1;
/// hugepages-SIZEkB directories (6.8+).
pub const THP_SIZES_PER_SIZE: u32 = 2;

/// `enum thp_defrag_mode`.
pub const THP_DEFRAG_ALWAYS: u32 = 0;
/// defer
pub const THP_DEFRAG_DEFER: u32 = 1;
/// defer+madvise
pub const THP_DEFRAG_DEFER_MADVISE: u32 = 2;
/// madvise
pub const THP_DEFRAG_MADVISE: u32 = 3;
/// never
pub const THP_DEFRAG_NEVER: u32 = 4;
/// absent or unreadable
pub const THP_DEFRAG_UNKNOWN: u32 = 5;

/// `enum thp_shmem_mode`.
pub const THP_SHMEM_ALWAYS: u32 = 0;
/// within_size
pub const THP_SHMEM_WITHIN_SIZE: u32 = 1;
/// advise
pub const THP_SHMEM_ADVISE: u32 = 2;
/// never
pub const THP_SHMEM_NEVER: u32 = 3;
/// deny
pub const THP_SHMEM_DENY: u32 = 4;
/// force
pub const THP_SHMEM_FORCE: u32 = 5;
/// inherit
pub const THP_SHMEM_INHERIT: u32 = 6;
/// absent or unreadable
pub const THP_SHMEM_UNKNOWN: u32 = 7;

/// `enum thp_sysfs_mode`.
pub const THP_MODE_ALWAYS: u32 = 0;
/// madvise
pub const THP_MODE_MADVISE: u32 = 1;
/// never
pub const THP_MODE_NEVER: u32 = 2;
/// absent or unreadable
pub const THP_MODE_UNKNOWN: u32 = 3;
/// inherit (thp_size_info.enabled only)
pub const THP_MODE_INHERIT: u32 = 4;

/// `enum thp_folio_source`: not read.
pub const THP_FOLIO_SOURCE_NONE: u32 = 0;
/// pagemap and kpageflags.
pub const THP_FOLIO_SOURCE_KPAGEFLAGS: u32 = 1;

/// thp_query_opts.flags: bytes by folio size.
pub const THP_QUERY_F_FOLIO_SIZES: u32 = 1 << 0;
/// thp_collapse_opts.flags: the caller's peers only.
pub const THP_COLLAPSE_F_PEER_ONLY: u32 = 1 << 0;
/// thp_collapse_opts.flags: the permission checks only.
pub const THP_COLLAPSE_F_CHECK_ONLY: u32 = 1 << 1;

/// Sizes of the first published (and later) versions of the structs.
pub const THP_APPLY_OPTS_SIZE_VER0: u64 = 40;
/// See [`THP_APPLY_OPTS_SIZE_VER0`].
pub const THP_APPLY_ALL_OPTS_SIZE_VER0: u64 = 88;
/// See [`THP_APPLY_OPTS_SIZE_VER0`].
pub const THP_DEFAULT_OPTS_SIZE_VER0: u64 = 48;
/// See [`THP_APPLY_OPTS_SIZE_VER0`].
pub const THP_PROBE_INFO_SIZE_VER0: u64 = 40;
/// See [`THP_APPLY_OPTS_SIZE_VER0`].
pub const THP_PROBE_INFO_SIZE_VER1: u64 = 344;
/// See [`THP_APPLY_OPTS_SIZE_VER0`].
pub const THP_QUERY_OPTS_SIZE_VER0: u64 = 56;
/// See [`THP_APPLY_OPTS_SIZE_VER0`].
pub const THP_QUERY_OPTS_SIZE_VER1: u64 = 80;
/// See [`THP_APPLY_OPTS_SIZE_VER0`].
pub const THP_QUERY_OPTS_SIZE_VER2: u64 = 376;
/// See [`THP_APPLY_OPTS_SIZE_VER0`].
pub const THP_COLLAPSE_OPTS_SIZE_VER0: u64 = 168;
/// See [`THP_APPLY_OPTS_SIZE_VER0`].
pub const THP_COLLAPSE_OPTS_SIZE_VER1: u64 = 200;
/// See [`THP_APPLY_OPTS_SIZE_VER0`].
pub const THP_COLLAPSE_OPTS_SIZE_VER2: u64 = 216;

/// `struct thp_range`: one range of virtual addresses.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct thp_range {
    pub addr: u64,
    pub len: u64,
}

/// `struct thp_report`: what happened to one range or mapping.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct thp_report {
    pub addr: u64,
    pub len: u64,
    pub bytes_advised: u64,
    pub bytes_unmapped: u64,
    pub fail_addr: u64,
    pub error: i32,
    pub backend: u32,
    pub attempted: u32,
    pub reserved0: u32,
    pub reserved: [u64; 2],
}

/// `struct thp_apply_opts`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct thp_apply_opts {
    pub sz: u64,
    pub pidfd: i32,
    pub advice: i32,
    pub flags: u32,
    pub backend: u32,
    pub reports: thp_ptr64<thp_report>,
    pub backend_used: u32,
    pub reserved0: u32,
}

/// `struct thp_apply_all_opts`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct thp_apply_all_opts {
    pub sz: u64,
    pub pidfd: i32,
    pub advice: i32,
    pub flags: u32,
    pub backend: u32,
    pub failures: thp_ptr64<thp_report>,
    pub failures_cap: u64,
    pub failures_needed: u64,
    pub mappings_seen: u64,
    pub mappings_advised: u64,
    pub mappings_skipped: u64,
    pub bytes_advised: u64,
    pub backend_used: u32,
    pub reserved0: u32,
}

/// `struct thp_default_opts`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct thp_default_opts {
    pub sz: u64,
    pub pidfd: i32,
    pub policy: u32,
    pub flags: u32,
    pub backend: u32,
    pub prctl_set: i32,
    pub prctl_get: i32,
    pub backend_used: u32,
    pub persistent: bool,
    pub reserved0: [u8; 3],
    pub mappings_changed: u64,
}

/// `struct thp_size_info`: one folio size the kernel offers.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct thp_size_info {
    pub size: u64,
    pub enabled: u8,
    pub mode: u8,
    pub shmem_enabled: u8,
    pub huge_policy: bool,
    pub reserved0: u32,
}

/// `struct thp_probe_info`: what the running kernel offers.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct thp_probe_info {
    pub sz: u64,
    pub backends: u32,
    pub thp_mode: u32,
    pub pmd_size: u64,
    pub pidfd_self: i32,
    pub procmap_query: bool,
    pub pmadv_skip_errors: bool,
    pub pmadv_no_error_on_unmapped: bool,
    pub pmadv_set_default: bool,
    pub pmadv_entire_address_space: bool,
    pub process_madvise_self_huge: bool,
    pub thp_disable_except_advised: bool,
    pub madvise_collapse: bool,
    pub reserved0: u32,
    pub sizes_source: u32,
    pub nr_sizes: u32,
    pub defrag: u32,
    pub shmem_mode: u32,
    pub khugepaged_pages_to_scan: u32,
    pub khugepaged_scan_sleep_millisecs: u32,
    pub khugepaged_alloc_sleep_millisecs: u32,
    pub khugepaged_max_ptes_none: u32,
    pub khugepaged_max_ptes_swap: u32,
    pub khugepaged_max_ptes_shared: u32,
    pub khugepaged_defrag: u32,
    pub reserved1: u32,
    pub sizes: [thp_size_info; THP_PROBE_MAX_SIZES],
}

/// `struct thp_mapping_state`: THP state of one mapping.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct thp_mapping_state {
    pub start: u64,
    pub end: u64,
    pub advised_huge: bool,
    pub advised_nohuge: bool,
    pub thp_eligible: bool,
    pub anonymous: bool,
    pub reserved0: u32,
    pub anon_huge_bytes: u64,
    pub rss_bytes: u64,
    pub name: [c_char; 64],
}

impl Default for thp_mapping_state {
    fn default() -> Self {
        thp_mapping_state {
            start: 0,
            end: 0,
            advised_huge: false,
            advised_nohuge: false,
            thp_eligible: false,
            anonymous: false,
            reserved0: 0,
            anon_huge_bytes: 0,
            rss_bytes: 0,
            name: [0; 64],
        }
    }
}

/// `struct thp_folio_bytes`: anonymous bytes in folios of one size.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct thp_folio_bytes {
    pub size: u64,
    pub bytes: u64,
}

/// `struct thp_mapping_folios`: one mapping's anonymous bytes by folio size.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct thp_mapping_folios {
    pub base_bytes: u64,
    pub other_bytes: u64,
    pub bytes: [u64; THP_PROBE_MAX_SIZES],
}

/// `struct thp_query_opts`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct thp_query_opts {
    pub sz: u64,
    pub pidfd: i32,
    pub flags: u32,
    pub addr: u64,
    pub len: u64,
    pub states: thp_ptr64<thp_mapping_state>,
    pub states_cap: u64,
    pub states_needed: u64,
    pub anon_bytes: u64,
    pub anon_huge_bytes: u64,
    pub anon_alignable_bytes: u64,
    pub folio_source: u32,
    pub nr_sizes: u32,
    pub folios: thp_ptr64<thp_mapping_folios>,
    pub anon_base_bytes: u64,
    pub anon_other_bytes: u64,
    pub anon_sized_alignable_bytes: u64,
    pub sizes: [thp_folio_bytes; THP_PROBE_MAX_SIZES],
}

/// `struct thp_collapse_opts`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct thp_collapse_opts {
    pub sz: u64,
    pub pidfd: i32,
    pub flags: u32,
    pub min_present_pages: u32,
    pub reserved0: u32,
    pub budget_bytes: u64,
    pub budget_ns: u64,
    pub failures: thp_ptr64<thp_report>,
    pub failures_cap: u64,
    pub failures_needed: u64,
    pub mappings_seen: u64,
    pub mappings_eligible: u64,
    pub mappings_nohuge: u64,
    pub extents_collapsed: u64,
    pub extents_sparse: u64,
    pub extents_failed: u64,
    pub extents_over_budget: u64,
    pub bytes_collapsed: u64,
    pub anon_bytes: u64,
    pub anon_huge_before: u64,
    pub anon_huge_after: u64,
    pub thp_disabled: u32,
    pub reserved1: u32,
    pub elapsed_ns: u64,
    pub extents_small_folios: u64,
    pub small_folio_bytes_before: u64,
    pub small_folio_bytes_after: u64,
    pub folio_source: u32,
    pub reserved2: u32,
    pub max_shared_pages: u32,
    pub reserved3: u32,
    pub extents_shared: u64,
}

extern "C" {
    pub fn thp_apply_ranges(
        ranges: *const thp_range,
        nr_ranges: usize,
        opts: *mut thp_apply_opts,
    ) -> c_int;
    pub fn thp_apply_all(opts: *mut thp_apply_all_opts) -> c_int;
    pub fn thp_set_default(opts: *mut thp_default_opts) -> c_int;
    pub fn thp_get_default(opts: *mut thp_default_opts) -> c_int;
    pub fn thp_probe(info: *mut thp_probe_info) -> c_int;
    pub fn thp_query(opts: *mut thp_query_opts) -> c_int;
    pub fn thp_collapse(opts: *mut thp_collapse_opts) -> c_int;
    pub fn thp_backend_name(backend: c_uint) -> *const c_char;
    pub fn thp_policy_name(policy: c_uint) -> *const c_char;
    pub fn thp_strerror(err: c_int) -> *const c_char;
    pub fn thp_strerror_detail() -> *const c_char;
    pub fn thp_report_format(r: *const thp_report, buf: *mut c_char, len: usize) -> c_int;
    pub fn thp_version() -> *const c_char;
}

/// The `sz` of an options struct: its size, as `THP_OPTS()` sets it.
pub const fn sz_of<T>() -> u64 {
    core::mem::size_of::<T>() as u64
}
