// SPDX-License-Identifier: LGPL-2.1-or-later
//! The binding of thp_probe() and thp_query().

use crate::{sys, Backend, Error, Result, Target};

/// One folio size the kernel offers (`struct thp_size_info`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SizeInfo {
    /// Bytes.
    pub size: u64,
    /// Its "enabled" as written (THP_MODE_*, INHERIT too).
    pub enabled: u8,
    /// enabled with "inherit" resolved.
    pub mode: u8,
    /// Its "shmem_enabled" (THP_SHMEM_*).
    pub shmem_enabled: u8,
    /// A HUGE policy can get this size.
    pub huge_policy: bool,
}

/// What the running kernel offers (`struct thp_probe_info`); the sysfs
/// and khugepaged figures are [`sys::THP_PROBE_UNKNOWN`] where unreadable.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct ProbeInfo {
    /// Bit (1 << backend) per usable backend: see [`ProbeInfo::has`].
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
    pub sizes_source: u32,
    /// Sizes the kernel offers (may exceed `sizes.len()`).
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
    /// Smallest first.
    pub sizes: Vec<SizeInfo>,
}

impl ProbeInfo {
    /// True when backend `b` is usable here.
    pub fn has(&self, b: Backend) -> bool {
        b.0 < 32 && self.backends & (1 << b.0) != 0
    }
}

/// `thp_probe()`: what the running kernel offers.
pub fn probe() -> Result<ProbeInfo> {
    let mut o = sys::thp_probe_info { sz: sys::sz_of::<sys::thp_probe_info>(), ..Default::default() };
    // SAFETY: o is a valid, sized struct.
    let rc = unsafe { sys::thp_probe(&mut o) };
    if rc < 0 {
        return Err(Error::last("thp_probe", rc, 0));
    }
    let n = (o.nr_sizes as usize).min(o.sizes.len());
    Ok(ProbeInfo {
        backends: o.backends,
        thp_mode: o.thp_mode,
        pmd_size: o.pmd_size,
        pidfd_self: o.pidfd_self,
        procmap_query: o.procmap_query,
        pmadv_skip_errors: o.pmadv_skip_errors,
        pmadv_no_error_on_unmapped: o.pmadv_no_error_on_unmapped,
        pmadv_set_default: o.pmadv_set_default,
        pmadv_entire_address_space: o.pmadv_entire_address_space,
        process_madvise_self_huge: o.process_madvise_self_huge,
        thp_disable_except_advised: o.thp_disable_except_advised,
        madvise_collapse: o.madvise_collapse,
        sizes_source: o.sizes_source,
        nr_sizes: o.nr_sizes,
        defrag: o.defrag,
        shmem_mode: o.shmem_mode,
        khugepaged_pages_to_scan: o.khugepaged_pages_to_scan,
        khugepaged_scan_sleep_millisecs: o.khugepaged_scan_sleep_millisecs,
        khugepaged_alloc_sleep_millisecs: o.khugepaged_alloc_sleep_millisecs,
        khugepaged_max_ptes_none: o.khugepaged_max_ptes_none,
        khugepaged_max_ptes_swap: o.khugepaged_max_ptes_swap,
        khugepaged_max_ptes_shared: o.khugepaged_max_ptes_shared,
        khugepaged_defrag: o.khugepaged_defrag,
        sizes: o.sizes[..n]
            .iter()
            .map(|s| SizeInfo {
                size: s.size,
                enabled: s.enabled,
                mode: s.mode,
                shmem_enabled: s.shmem_enabled,
                huge_policy: s.huge_policy,
            })
            .collect(),
    })
}

/// One mapping's anonymous bytes by folio size.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MappingFolios {
    /// In base pages.
    pub base_bytes: u64,
    /// In large folios of a size not listed.
    pub other_bytes: u64,
    /// `bytes[i]`: in folios of the size `QueryResult::sizes[i].size`.
    pub bytes: Vec<u64>,
}

/// THP state of one mapping, from /proc/PID/smaps (`struct thp_mapping_state`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MappingState {
    /// Mapping start.
    pub start: u64,
    /// Mapping end (exclusive).
    pub end: u64,
    /// VmFlags has "hg".
    pub advised_huge: bool,
    /// VmFlags has "nh".
    pub advised_nohuge: bool,
    /// THPeligible: 1.
    pub thp_eligible: bool,
    /// No backing file.
    pub anonymous: bool,
    /// AnonHugePages in bytes.
    pub anon_huge_bytes: u64,
    /// Rss in bytes.
    pub rss_bytes: u64,
    /// Path or `[heap]`, `[stack]`, ...: chosen by the target, untrusted bytes.
    pub name: Vec<u8>,
    /// With [`QueryOptions::folio_sizes`]: bytes by folio size.
    pub folios: Option<MappingFolios>,
}

/// Anonymous bytes in folios of one size.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FolioBytes {
    /// Folio size.
    pub size: u64,
    /// Anonymous bytes in folios of that size.
    pub bytes: u64,
}

/// What `thp_query()` found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct QueryResult {
    /// Every matching mapping, in address order.
    pub mappings: Vec<MappingState>,
    pub anon_bytes: u64,
    pub anon_huge_bytes: u64,
    pub anon_alignable_bytes: u64,
    pub folio_source: u32,
    pub anon_base_bytes: u64,
    pub anon_other_bytes: u64,
    pub anon_sized_alignable_bytes: u64,
    pub sizes: Vec<FolioBytes>,
}

/// Options of `thp_query()`; the default is every mapping of the calling process.
#[derive(Clone, Copy, Debug, Default)]
pub struct QueryOptions<'fd> {
    target: Target<'fd>,
    flags: u32,
    addr: u64,
    len: u64,
}

impl<'fd> QueryOptions<'fd> {
    /// The library's defaults.
    pub fn new() -> Self {
        Self::default()
    }
    /// The process to read.
    pub fn target(mut self, t: Target<'fd>) -> Self {
        self.target = t;
        self
    }
    /// Only the mappings overlapping `[addr, addr + len)` (len 0: all).
    pub fn range(mut self, addr: u64, len: u64) -> Self {
        self.addr = addr;
        self.len = len;
        self
    }
    /// THP_QUERY_F_FOLIO_SIZES: bytes by folio size (CAP_SYS_ADMIN to be non-zero).
    pub fn folio_sizes(mut self, on: bool) -> Self {
        if on {
            self.flags |= sys::THP_QUERY_F_FOLIO_SIZES
        } else {
            self.flags &= !sys::THP_QUERY_F_FOLIO_SIZES
        }
        self
    }

    /// `thp_query()`: the state of every matching mapping (asked again
    /// with room for all when the first call found more than it had).
    pub fn query(&self) -> Result<QueryResult> {
        let (pidfd, _keep) = self.target.resolve()?;
        let folios_on = self.flags & sys::THP_QUERY_F_FOLIO_SIZES != 0;
        let mut cap = 64usize;
        loop {
            let mut states = vec![sys::thp_mapping_state::default(); cap];
            let mut folios = vec![sys::thp_mapping_folios::default(); if folios_on { cap } else { 0 }];
            let mut o = sys::thp_query_opts {
                sz: sys::sz_of::<sys::thp_query_opts>(),
                pidfd,
                flags: self.flags,
                addr: self.addr,
                len: self.len,
                states: sys::thp_ptr64::new(states.as_mut_ptr()),
                states_cap: cap as u64,
                ..Default::default()
            };
            if folios_on {
                o.folios = sys::thp_ptr64::new(folios.as_mut_ptr());
            }
            // SAFETY: states (and folios) hold cap entries; o lives for the call.
            let rc = unsafe { sys::thp_query(&mut o) };
            if rc < 0 {
                return Err(Error::last("thp_query", rc, 0));
            }
            if o.states_needed > cap as u64 {
                // The address space grew between two reads: ask again, bigger.
                cap = o.states_needed as usize + 16;
                continue;
            }
            let nsizes = (o.nr_sizes as usize).min(o.sizes.len());
            let n = o.states_needed as usize;
            let mappings = states[..n]
                .iter()
                .enumerate()
                .map(|(i, s)| MappingState {
                    start: s.start,
                    end: s.end,
                    advised_huge: s.advised_huge,
                    advised_nohuge: s.advised_nohuge,
                    thp_eligible: s.thp_eligible,
                    anonymous: s.anonymous,
                    anon_huge_bytes: s.anon_huge_bytes,
                    rss_bytes: s.rss_bytes,
                    name: s.name.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect(),
                    folios: if folios_on {
                        Some(MappingFolios {
                            base_bytes: folios[i].base_bytes,
                            other_bytes: folios[i].other_bytes,
                            bytes: folios[i].bytes[..nsizes].to_vec(),
                        })
                    } else {
                        None
                    },
                })
                .collect();
            return Ok(QueryResult {
                mappings,
                anon_bytes: o.anon_bytes,
                anon_huge_bytes: o.anon_huge_bytes,
                anon_alignable_bytes: o.anon_alignable_bytes,
                folio_source: o.folio_source,
                anon_base_bytes: o.anon_base_bytes,
                anon_other_bytes: o.anon_other_bytes,
                anon_sized_alignable_bytes: o.anon_sized_alignable_bytes,
                sizes: o.sizes[..nsizes]
                    .iter()
                    .map(|s| FolioBytes { size: s.size, bytes: s.bytes })
                    .collect(),
            });
        }
    }
}
