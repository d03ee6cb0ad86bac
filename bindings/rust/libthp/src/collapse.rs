// SPDX-License-Identifier: LGPL-2.1-or-later
//! The binding of thp_collapse().

use crate::{reports, sys, Error, Report, Result, Target};

/// Options of `thp_collapse()`; the default is one pass over the calling
/// process with the kernel's khugepaged limits and no budget.
#[derive(Clone, Copy, Debug, Default)]
pub struct CollapseOptions<'fd> {
    target: Target<'fd>,
    flags: u32,
    min_present_pages: u32,
    max_shared_pages: u32,
    budget_bytes: u64,
    budget_ns: u64,
    failures_cap: usize,
}

/// What `thp_collapse()` did: the out members of `struct thp_collapse_opts`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[allow(missing_docs)]
pub struct Collapsed {
    /// Extents collapsed (the C return value).
    pub collapsed: usize,
    /// The first min(failures_needed, failures_cap) refused extents.
    pub failures: Vec<Report>,
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
    pub thp_disabled: bool,
    pub elapsed_ns: u64,
    pub extents_small_folios: u64,
    pub small_folio_bytes_before: u64,
    pub small_folio_bytes_after: u64,
    pub folio_source: u32,
    pub extents_shared: u64,
}

impl<'fd> CollapseOptions<'fd> {
    /// The library's defaults.
    pub fn new() -> Self {
        Self::default()
    }
    /// The process to collapse.
    pub fn target(mut self, t: Target<'fd>) -> Self {
        self.target = t;
        self
    }
    /// THP_COLLAPSE_F_PEER_ONLY: only a process of the caller's own user.
    pub fn peer_only(mut self, on: bool) -> Self {
        self.flag(sys::THP_COLLAPSE_F_PEER_ONLY, on);
        self
    }
    /// THP_COLLAPSE_F_CHECK_ONLY: the permission checks only.
    pub fn check_only(mut self, on: bool) -> Self {
        self.flag(sys::THP_COLLAPSE_F_CHECK_ONLY, on);
        self
    }
    /// Resident pages an extent needs (0: the kernel's max_ptes_none).
    pub fn min_present_pages(mut self, n: u32) -> Self {
        self.min_present_pages = n;
        self
    }
    /// Most pages shared with another process (0: the kernel's max_ptes_shared).
    pub fn max_shared_pages(mut self, n: u32) -> Self {
        self.max_shared_pages = n;
        self
    }
    /// Stop after collapsing this many bytes (0: no limit).
    pub fn budget_bytes(mut self, n: u64) -> Self {
        self.budget_bytes = n;
        self
    }
    /// Stop starting collapses after this many nanoseconds (0: no limit).
    pub fn budget_ns(mut self, n: u64) -> Self {
        self.budget_ns = n;
        self
    }
    /// Keep up to `n` refused extents in the result.
    pub fn failures_cap(mut self, n: usize) -> Self {
        self.failures_cap = n;
        self
    }

    fn flag(&mut self, f: u32, on: bool) {
        if on {
            self.flags |= f
        } else {
            self.flags &= !f
        }
    }

    /// `thp_collapse()`: one collapse pass over the target.
    pub fn collapse(&self) -> Result<Collapsed> {
        let (pidfd, _keep) = self.target.resolve()?;
        let mut failures = reports(self.failures_cap);
        let mut o = sys::thp_collapse_opts {
            sz: sys::sz_of::<sys::thp_collapse_opts>(),
            pidfd,
            flags: self.flags,
            min_present_pages: self.min_present_pages,
            max_shared_pages: self.max_shared_pages,
            budget_bytes: self.budget_bytes,
            budget_ns: self.budget_ns,
            failures_cap: failures.len() as u64,
            ..Default::default()
        };
        if !failures.is_empty() {
            o.failures = sys::thp_ptr64::new(failures.as_mut_ptr() as *mut sys::thp_report);
        }
        // SAFETY: failures holds failures_cap entries; o lives for the call.
        let rc = unsafe { sys::thp_collapse(&mut o) };
        if rc < 0 {
            return Err(Error::last("thp_collapse", rc, 0));
        }
        failures.truncate(o.failures_needed.min(failures.len() as u64) as usize);
        Ok(Collapsed {
            collapsed: rc as usize,
            failures,
            failures_needed: o.failures_needed,
            mappings_seen: o.mappings_seen,
            mappings_eligible: o.mappings_eligible,
            mappings_nohuge: o.mappings_nohuge,
            extents_collapsed: o.extents_collapsed,
            extents_sparse: o.extents_sparse,
            extents_failed: o.extents_failed,
            extents_over_budget: o.extents_over_budget,
            bytes_collapsed: o.bytes_collapsed,
            anon_bytes: o.anon_bytes,
            anon_huge_before: o.anon_huge_before,
            anon_huge_after: o.anon_huge_after,
            thp_disabled: o.thp_disabled != 0,
            elapsed_ns: o.elapsed_ns,
            extents_small_folios: o.extents_small_folios,
            small_folio_bytes_before: o.small_folio_bytes_before,
            small_folio_bytes_after: o.small_folio_bytes_after,
            folio_source: o.folio_source,
            extents_shared: o.extents_shared,
        })
    }
}
