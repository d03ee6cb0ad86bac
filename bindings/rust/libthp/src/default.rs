// SPDX-License-Identifier: LGPL-2.1-or-later
//! The binding of thp_set_default() and thp_get_default().

use crate::{sys, Backend, Error, Policy, Result, Target};

/// Options of `thp_set_default()` and `thp_get_default()`; the default is
/// the library's (the calling process, automatic backend, no flag).
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaultOptions<'fd> {
    target: Target<'fd>,
    flags: u32,
    backend: Backend,
    prctl: Option<(i32, i32)>,
}

/// A process's default policy, as set or read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefaultPolicy {
    /// get: the policy; set: the one asked for.
    pub policy: Policy,
    /// The backend that set or explains the policy.
    pub backend_used: Backend,
    /// The policy survives fork() and exec().
    pub persistent: bool,
    /// set: existing mappings advised.
    pub mappings_changed: u64,
}

impl<'fd> DefaultOptions<'fd> {
    /// The library's defaults.
    pub fn new() -> Self {
        Self::default()
    }
    /// The process (set: another one only with [`Backend::INJECT`]).
    pub fn target(mut self, t: Target<'fd>) -> Self {
        self.target = t;
        self
    }
    /// Force a backend.
    pub fn backend(mut self, b: Backend) -> Self {
        self.backend = b;
        self
    }
    /// THP_DEFAULT_F_REQUIRE_PERSISTENT: fail rather than set a policy
    /// that does not survive fork() and exec().
    pub fn require_persistent(mut self, on: bool) -> Self {
        self.flag(sys::THP_DEFAULT_F_REQUIRE_PERSISTENT, on);
        self
    }
    /// THP_DEFAULT_F_NO_EXISTING: leave the existing mappings alone.
    pub fn no_existing(mut self, on: bool) -> Self {
        self.flag(sys::THP_DEFAULT_F_NO_EXISTING, on);
        self
    }
    /// THP_DEFAULT_F_RFC_PRCTL with these PR_SET/PR_GET_THP_POLICY numbers
    /// (0, 0: the RFC's 78 and 79): only for a kernel known to have them.
    pub fn rfc_prctl(mut self, set: i32, get: i32) -> Self {
        self.flag(sys::THP_DEFAULT_F_RFC_PRCTL, true);
        self.prctl = Some((set, get));
        self
    }

    fn flag(&mut self, f: u32, on: bool) {
        if on {
            self.flags |= f
        } else {
            self.flags &= !f
        }
    }

    fn call(&self, set: bool, policy: Policy) -> Result<DefaultPolicy> {
        let (pidfd, _keep) = self.target.resolve()?;
        let (prctl_set, prctl_get) = self.prctl.unwrap_or((0, 0));
        let mut o = sys::thp_default_opts {
            sz: sys::sz_of::<sys::thp_default_opts>(),
            pidfd,
            policy: policy.0,
            flags: self.flags,
            backend: self.backend.0,
            prctl_set,
            prctl_get,
            ..Default::default()
        };
        // SAFETY: o is a valid, sized options struct for the call.
        let rc = unsafe {
            if set {
                sys::thp_set_default(&mut o)
            } else {
                sys::thp_get_default(&mut o)
            }
        };
        if rc < 0 {
            let op = if set { "thp_set_default" } else { "thp_get_default" };
            return Err(Error::last(op, rc, o.backend_used));
        }
        Ok(DefaultPolicy {
            policy: Policy(o.policy),
            backend_used: Backend(o.backend_used),
            persistent: o.persistent,
            mappings_changed: o.mappings_changed,
        })
    }

    /// `thp_set_default()`: set the target's default policy.
    pub fn set(&self, policy: Policy) -> Result<DefaultPolicy> {
        self.call(true, policy)
    }

    /// `thp_get_default()`: read the target's default policy.
    pub fn get(&self) -> Result<DefaultPolicy> {
        self.call(false, Policy::SYSTEM)
    }
}
