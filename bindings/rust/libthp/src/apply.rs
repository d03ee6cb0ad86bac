// SPDX-License-Identifier: LGPL-2.1-or-later
//! The binding of thp_apply_ranges() and thp_apply_all().

use crate::{reports, sys, Advice, Backend, Error, Flags, Range, Report, Result, Target};

/// Options of `thp_apply_ranges()`; the default is the library's: the
/// calling process, stop at the first failure, automatic backend.
#[derive(Clone, Copy, Debug, Default)]
pub struct ApplyOptions<'fd> {
    target: Target<'fd>,
    flags: Flags,
    backend: Backend,
}

/// What `thp_apply_ranges()` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Applied {
    /// Ranges advised completely without error (the C return value).
    pub advised: usize,
    /// The backend that did the work.
    pub backend_used: Backend,
    /// One report per range ([`ApplyOptions::apply_ranges`]; empty from
    /// [`ApplyOptions::apply_ranges_into`], which writes the caller's).
    pub reports: Vec<Report>,
}

impl<'fd> ApplyOptions<'fd> {
    /// The library's defaults.
    pub fn new() -> Self {
        Self::default()
    }
    /// The process to advise.
    pub fn target(mut self, t: Target<'fd>) -> Self {
        self.target = t;
        self
    }
    /// THP_F_* flags.
    pub fn flags(mut self, f: Flags) -> Self {
        self.flags = f;
        self
    }
    /// Force a backend (the default lets the library choose).
    pub fn backend(mut self, b: Backend) -> Self {
        self.backend = b;
        self
    }

    /// `thp_apply_ranges()`: advise the ranges, one report per range.  On
    /// failure the reports are lost; [`apply_ranges_into`](Self::apply_ranges_into)
    /// keeps them.
    pub fn apply_ranges(&self, advice: Advice, ranges: &[Range]) -> Result<Applied> {
        // More than MAX_RANGES: refused before any report is written; none to allocate.
        let mut rep = reports(if ranges.len() > crate::MAX_RANGES { 0 } else { ranges.len() });
        let mut res = self.apply_ranges_into(advice, ranges, &mut rep)?;
        res.reports = rep;
        Ok(res)
    }

    /// `thp_apply_ranges()` writing the reports into `reports`, which must
    /// hold at least one per range (else EINVAL, nothing done); they are
    /// written on every return, failures included (see thp_apply_ranges(3)),
    /// and the result's `reports` is empty: no allocation.
    pub fn apply_ranges_into(
        &self,
        advice: Advice,
        ranges: &[Range],
        reports: &mut [Report],
    ) -> Result<Applied> {
        if reports.len() < ranges.len() && ranges.len() <= crate::MAX_RANGES {
            return Err(Error::new(
                "thp_apply_ranges",
                libc_einval(),
                format!("{} reports for {} ranges", reports.len(), ranges.len()),
            ));
        }
        let (pidfd, _keep) = self.target.resolve()?;
        let mut o = sys::thp_apply_opts {
            sz: sys::sz_of::<sys::thp_apply_opts>(),
            pidfd,
            advice: advice.0,
            flags: self.flags.0,
            backend: self.backend.0,
            // Report is repr(transparent) over thp_report.
            reports: sys::thp_ptr64::new(reports.as_mut_ptr() as *mut sys::thp_report),
            ..Default::default()
        };
        // SAFETY: Range is repr(transparent) over thp_range; ranges and
        // reports are valid for ranges.len() entries; o lives for the call.
        let rc = unsafe {
            sys::thp_apply_ranges(ranges.as_ptr() as *const sys::thp_range, ranges.len(), &mut o)
        };
        if rc < 0 {
            return Err(Error::last("thp_apply_ranges", rc, o.backend_used));
        }
        Ok(Applied { advised: rc as usize, backend_used: Backend(o.backend_used), reports: Vec::new() })
    }
}

pub(crate) fn libc_einval() -> i32 {
    22
}

/// Options of `thp_apply_all()`; the default is the library's.
#[derive(Clone, Copy, Debug, Default)]
pub struct ApplyAllOptions<'fd> {
    target: Target<'fd>,
    flags: Flags,
    backend: Backend,
    failures_cap: usize,
}

/// What `thp_apply_all()` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppliedAll {
    /// Mappings advised without error (the C return value).
    pub advised: usize,
    /// The first min(failures_needed, failures_cap) failed mappings.
    pub failures: Vec<Report>,
    /// Mappings that failed.
    pub failures_needed: u64,
    /// Mappings found.
    pub mappings_seen: u64,
    /// Mappings advised without error.
    pub mappings_advised: u64,
    /// Failed mappings passed over (SKIP_ERRORS).
    pub mappings_skipped: u64,
    /// Bytes advised without error.
    pub bytes_advised: u64,
    /// The backend that did the work.
    pub backend_used: Backend,
}

impl<'fd> ApplyAllOptions<'fd> {
    /// The library's defaults (no failure kept, only counted).
    pub fn new() -> Self {
        Self::default()
    }
    /// The process to advise.
    pub fn target(mut self, t: Target<'fd>) -> Self {
        self.target = t;
        self
    }
    /// THP_F_* flags (gaps never count as errors here).
    pub fn flags(mut self, f: Flags) -> Self {
        self.flags = f;
        self
    }
    /// Force a backend.
    pub fn backend(mut self, b: Backend) -> Self {
        self.backend = b;
        self
    }
    /// Keep up to `n` failed mappings in the result.
    pub fn failures_cap(mut self, n: usize) -> Self {
        self.failures_cap = n;
        self
    }

    /// `thp_apply_all()`: advise every mapping of the target.
    pub fn apply(&self, advice: Advice) -> Result<AppliedAll> {
        let (pidfd, _keep) = self.target.resolve()?;
        let mut failures = reports(self.failures_cap);
        let mut o = sys::thp_apply_all_opts {
            sz: sys::sz_of::<sys::thp_apply_all_opts>(),
            pidfd,
            advice: advice.0,
            flags: self.flags.0,
            backend: self.backend.0,
            failures_cap: failures.len() as u64,
            ..Default::default()
        };
        if !failures.is_empty() {
            o.failures = sys::thp_ptr64::new(failures.as_mut_ptr() as *mut sys::thp_report);
        }
        // SAFETY: failures holds failures_cap entries; o lives for the call.
        let rc = unsafe { sys::thp_apply_all(&mut o) };
        if rc < 0 {
            return Err(Error::last("thp_apply_all", rc, o.backend_used));
        }
        failures.truncate(o.failures_needed.min(failures.len() as u64) as usize);
        Ok(AppliedAll {
            advised: rc as usize,
            failures,
            failures_needed: o.failures_needed,
            mappings_seen: o.mappings_seen,
            mappings_advised: o.mappings_advised,
            mappings_skipped: o.mappings_skipped,
            bytes_advised: o.bytes_advised,
            backend_used: Backend(o.backend_used),
        })
    }
}
