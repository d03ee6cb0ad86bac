// SPDX-License-Identifier: LGPL-2.1-or-later
//! The Rust binding of libthp: per-process transparent huge page (THP)
//! policy for Linux.
//!
//! Every public call of `<thp/thp.h>` has a function here:
//! [`ApplyOptions::apply_ranges`] (`thp_apply_ranges()`),
//! [`ApplyAllOptions::apply`] (`thp_apply_all()`), [`DefaultOptions::set`]
//! and [`DefaultOptions::get`] (`thp_set_default()`, `thp_get_default()`),
//! [`QueryOptions::query`] (`thp_query()`), [`probe`] (`thp_probe()`),
//! [`CollapseOptions::collapse`] (`thp_collapse()`), [`strerror`],
//! [`version`], [`Backend::name`], [`Policy::name`] and the `Display` of
//! [`Report`] (`thp_report_format()`).  The raw FFI is the `libthp-sys`
//! crate.
//!
//! # Errors
//!
//! A failed call is an [`Error`]: the C function, the errno (the call
//! returned `-errno`) and the library's detail (`thp_strerror_detail()`),
//! read on the same thread right after the call, before anything else can
//! overwrite it.  `std::io::Error::from(e)` keeps the errno.
//!
//! # Targets
//!
//! Every call acts on the calling process ([`Target::Current`], the
//! default) or on another one through a pidfd ([`Target::Pidfd`], a
//! [`BorrowedFd`]: open one with [`Pidfd::open`] or take it from elsewhere).
//!
//! # Options
//!
//! Each call has a builder whose [`Default`] is the library's default
//! (`THP_OPTS()` with no member set); advice and policy are arguments.
//!
//! # Memory
//!
//! A [`Range`] names addresses, it does not own memory: [`Range::of`] takes
//! a slice, [`Range::new`] raw numbers.  Advice never changes the contents
//! of memory, so no call here is `unsafe`; THP advice needs page-aligned
//! ranges (memory from `mmap`).
//!
//! # Threads
//!
//! The library is thread-safe and this crate keeps no state: every type is
//! `Send` and `Sync` (an options value holding a `BorrowedFd` is too, as
//! long as the descriptor lives), and calls may run on many threads at once.
//! The detail is per thread in C; an [`Error`] holds a copy of its own
//! call's, whichever thread reads it later.
#![warn(missing_docs)]

use libthp_sys as sys;
use std::ffi::CStr;
use std::fmt;
use std::io;
use std::os::raw::c_char;
use std::os::unix::io::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

mod apply;
mod collapse;
mod default;
mod query;

pub use apply::{AppliedAll, ApplyAllOptions, ApplyOptions, Applied};
pub use collapse::{CollapseOptions, Collapsed};
pub use default::{DefaultOptions, DefaultPolicy};
pub use query::{probe, FolioBytes, MappingFolios, MappingState, ProbeInfo, QueryOptions, QueryResult, SizeInfo};

/// The raw FFI crate, for what this one does not wrap.
pub use libthp_sys;

fn c_str(p: *const c_char) -> &'static str {
    if p.is_null() {
        return "";
    }
    // SAFETY: the library's names and messages are static, NUL-terminated ASCII.
    unsafe { CStr::from_ptr(p) }.to_str().unwrap_or("")
}

/// `thp_version()`: the library's "MAJOR.MINOR.PATCH".
pub fn version() -> &'static str {
    // SAFETY: no arguments; returns a static string.
    c_str(unsafe { sys::thp_version() })
}

/// `thp_strerror()`: the message for a libthp error code (either sign),
/// with libthp's own meaning where it has one.
pub fn strerror(code: i32) -> String {
    // SAFETY: any int is accepted; the message is static or thread-local
    // and copied before anything else runs on this thread.
    let p = unsafe { sys::thp_strerror(code) };
    if p.is_null() {
        return String::new();
    }
    // SAFETY: NUL-terminated, valid until the next call on this thread.
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// The error of a failed call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    op: &'static str,
    errno: i32,
    detail: String,
    backend_used: Backend,
}

impl Error {
    /// The error of call `op` that returned `rc < 0`, with this thread's detail.
    fn last(op: &'static str, rc: i32, backend_used: u32) -> Error {
        // SAFETY: thread-local string, copied at once.
        let p = unsafe { sys::thp_strerror_detail() };
        let detail = if p.is_null() {
            String::new()
        } else {
            // SAFETY: NUL-terminated, valid until the next libthp call on this thread.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        };
        Error { op, errno: -rc, detail, backend_used: Backend(backend_used) }
    }

    fn new(op: &'static str, errno: i32, detail: String) -> Error {
        Error { op, errno, detail, backend_used: Backend::AUTO }
    }

    /// The C function that failed, e.g. "thp_apply_ranges".
    pub fn op(&self) -> &'static str {
        self.op
    }
    /// The positive errno (the call returned its negative).
    pub fn errno(&self) -> i32 {
        self.errno
    }
    /// The library's explanation (`thp_strerror_detail()`); may be "".
    pub fn detail(&self) -> &str {
        &self.detail
    }
    /// The backend the call had chosen when it failed (0 when it was
    /// refused before choosing one): `backend_used` of the C options.
    pub fn backend_used(&self) -> Backend {
        self.backend_used
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.op, strerror(self.errno))?;
        if !self.detail.is_empty() {
            write!(f, ": {}", self.detail)?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::new(io::Error::from_raw_os_error(e.errno).kind(), e)
    }
}

/// The result of every call.
pub type Result<T> = std::result::Result<T, Error>;

/// `enum thp_advice`: the kernel's MADV_* values (any other value is the
/// library's to refuse, with EINVAL).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Advice(pub i32);

impl Advice {
    /// MADV_HUGEPAGE: prefer huge pages here.
    pub const HUGE: Advice = Advice(sys::THP_ADVICE_HUGE);
    /// MADV_NOHUGEPAGE: never huge pages here.
    pub const NOHUGE: Advice = Advice(sys::THP_ADVICE_NOHUGE);
    /// MADV_COLLAPSE: collapse into huge pages now.
    pub const COLLAPSE: Advice = Advice(sys::THP_ADVICE_COLLAPSE);
}

/// `enum thp_backend`: the kernel interface that does the work.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Backend(pub u32);

impl Backend {
    /// Let the library choose (also "none" in results).
    pub const AUTO: Backend = Backend(sys::THP_BACKEND_AUTO);
    /// process_madvise() with the RFC PMADV_* flags.
    pub const PMADV: Backend = Backend(sys::THP_BACKEND_PMADV);
    /// Mainline process_madvise().
    pub const PROCESS_MADVISE: Backend = Backend(sys::THP_BACKEND_PROCESS_MADVISE);
    /// A madvise() loop (own process only).
    pub const MADVISE: Backend = Backend(sys::THP_BACKEND_MADVISE);
    /// RFC PR_SET_THP_POLICY.
    pub const PRCTL_POLICY: Backend = Backend(sys::THP_BACKEND_PRCTL_POLICY);
    /// Mainline PR_SET_THP_DISABLE.
    pub const PRCTL_DISABLE: Backend = Backend(sys::THP_BACKEND_PRCTL_DISABLE);
    /// Existing mappings only.
    pub const EXISTING_ONLY: Backend = Backend(sys::THP_BACKEND_EXISTING_ONLY);
    /// libthp-preload.so.
    pub const PRELOAD: Backend = Backend(sys::THP_BACKEND_PRELOAD);
    /// The target makes the call itself, stopped with ptrace.
    pub const INJECT: Backend = Backend(sys::THP_BACKEND_INJECT);

    /// `thp_backend_name()`: "madvise", "process_madvise", ..., "unknown".
    pub fn name(self) -> &'static str {
        // SAFETY: any value is accepted; returns a static string.
        c_str(unsafe { sys::thp_backend_name(self.0) })
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// `enum thp_policy`: a process's default THP policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Policy(pub u32);

impl Policy {
    /// Follow /sys/kernel/mm/transparent_hugepage/enabled.
    pub const SYSTEM: Policy = Policy(sys::THP_POLICY_SYSTEM);
    /// New mappings default to MADV_HUGEPAGE.
    pub const HUGE: Policy = Policy(sys::THP_POLICY_HUGE);
    /// THP only where advised.
    pub const NOHUGE: Policy = Policy(sys::THP_POLICY_NOHUGE);
    /// No THP at all.
    pub const NEVER: Policy = Policy(sys::THP_POLICY_NEVER);

    /// `thp_policy_name()`: "system", "huge", "nohuge", "never" or "unknown".
    pub fn name(self) -> &'static str {
        // SAFETY: any value is accepted; returns a static string.
        c_str(unsafe { sys::thp_policy_name(self.0) })
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The THP_F_* flags of [`ApplyOptions`] and [`ApplyAllOptions`]; combine with `|`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Flags(pub u32);

impl Flags {
    /// Go on past failures (implies NO_ERROR_ON_UNMAPPED).
    pub const SKIP_ERRORS: Flags = Flags(sys::THP_F_SKIP_ERRORS);
    /// Unmapped gaps inside a range are no error.
    pub const NO_ERROR_ON_UNMAPPED: Flags = Flags(sys::THP_F_NO_ERROR_ON_UNMAPPED);
}

impl std::ops::BitOr for Flags {
    type Output = Flags;
    fn bitor(self, o: Flags) -> Flags {
        Flags(self.0 | o.0)
    }
}

/// The most ranges one call accepts (THP_MAX_RANGES).
pub const MAX_RANGES: usize = sys::THP_MAX_RANGES as usize;

/// The process a call acts on.
#[derive(Clone, Copy, Debug, Default)]
pub enum Target<'fd> {
    /// The calling process (THP_SELF).
    #[default]
    Current,
    /// Another process, through a pidfd that outlives the call.
    Pidfd(BorrowedFd<'fd>),
}

impl<'fd> Target<'fd> {
    /// The pidfd to pass, and a descriptor to keep open for the call when
    /// the caller's is 0 (THP_SELF to the library: it is duplicated).
    fn resolve(&self) -> Result<(i32, Option<OwnedFd>)> {
        match self {
            Target::Current => Ok((sys::THP_SELF, None)),
            Target::Pidfd(fd) if fd.as_raw_fd() == 0 => {
                let dup = fd.try_clone_to_owned().map_err(|e| {
                    Error::new("thp", e.raw_os_error().unwrap_or(0), "cannot move pidfd 0".into())
                })?;
                Ok((dup.as_raw_fd(), Some(dup)))
            }
            Target::Pidfd(fd) => Ok((fd.as_raw_fd(), None)),
        }
    }
}

/// An open pidfd (close-on-exec), closed when dropped.
#[derive(Debug)]
pub struct Pidfd(OwnedFd);

extern "C" {
    fn syscall(num: i64, ...) -> i64;
}

/// pidfd_open(2): the same number on every architecture.
const SYS_PIDFD_OPEN: i64 = 434;

impl Pidfd {
    /// pidfd_open(2) for `pid`.  The PID must not have been reused: a
    /// child not yet waited for (`std::process::Child::id()`) is safe.
    pub fn open(pid: u32) -> io::Result<Pidfd> {
        // SAFETY: pidfd_open takes a PID and flags and returns a new descriptor.
        let fd = unsafe { syscall(SYS_PIDFD_OPEN, pid as i64, 0i64) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: a descriptor we just opened and own.
        let owned = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        if fd == 0 {
            // 0 means THP_SELF to the library: move it.
            return Ok(Pidfd(owned.try_clone()?));
        }
        Ok(Pidfd(owned))
    }

    /// The target this pidfd names.
    pub fn target(&self) -> Target<'_> {
        Target::Pidfd(self.0.as_fd())
    }
}

impl AsFd for Pidfd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl AsRawFd for Pidfd {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_raw_fd()
    }
}

impl From<OwnedFd> for Pidfd {
    fn from(fd: OwnedFd) -> Pidfd {
        Pidfd(fd)
    }
}

/// `struct thp_range`: one range of virtual addresses (the C layout: a
/// `&[Range]` is handed to the library as it is).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Range(sys::thp_range);

impl Range {
    /// The range of `len` bytes at `addr`.
    pub const fn new(addr: u64, len: u64) -> Range {
        Range(sys::thp_range { addr, len })
    }
    /// The memory of a slice (not copied; it must stay mapped for the call).
    pub fn of<T>(s: &[T]) -> Range {
        Range::new(s.as_ptr() as usize as u64, std::mem::size_of_val(s) as u64)
    }
    /// The range of `len` bytes at `p`.
    pub fn from_ptr<T>(p: *const T, len: usize) -> Range {
        Range::new(p as usize as u64, len as u64)
    }
    /// Start.
    pub fn addr(&self) -> u64 {
        self.0.addr
    }
    /// Length in bytes.
    pub fn len(&self) -> u64 {
        self.0.len
    }
    /// True when the length is 0.
    pub fn is_empty(&self) -> bool {
        self.0.len == 0
    }
}

/// `struct thp_report`: what happened to one requested range, or to one
/// failed mapping or extent (the C layout: a `&mut [Report]` is written by
/// the library in place).
#[repr(transparent)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report(sys::thp_report);

impl Report {
    /// Start of the range or mapping.
    pub fn addr(&self) -> u64 {
        self.0.addr
    }
    /// Its length (page-rounded).
    pub fn len(&self) -> u64 {
        self.0.len
    }
    /// True when the length is 0.
    pub fn is_empty(&self) -> bool {
        self.0.len == 0
    }
    /// Bytes advised without error (COLLAPSE: huge after the call).
    pub fn bytes_advised(&self) -> u64 {
        self.0.bytes_advised
    }
    /// Bytes that no mapping covered.
    pub fn bytes_unmapped(&self) -> u64 {
        self.0.bytes_unmapped
    }
    /// First address that failed (0 if none).
    pub fn fail_addr(&self) -> u64 {
        self.0.fail_addr
    }
    /// Positive errno of that failure, 0 if none (see thp_apply_ranges(3)).
    pub fn error(&self) -> i32 {
        self.0.error
    }
    /// The backend that did the work (0 if the call was refused before choosing).
    pub fn backend(&self) -> Backend {
        Backend(self.0.backend)
    }
    /// True if the range was reached.
    pub fn attempted(&self) -> bool {
        self.0.attempted != 0
    }
    /// The C struct.
    pub fn raw(&self) -> &sys::thp_report {
        &self.0
    }
}

impl fmt::Display for Report {
    /// `thp_report_format()`: one human-readable line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = vec![0u8; 256];
        loop {
            // SAFETY: buf is writable for buf.len() bytes; the report is read only.
            let n = unsafe {
                sys::thp_report_format(&self.0, buf.as_mut_ptr() as *mut c_char, buf.len())
            };
            let n = n.max(0) as usize;
            if n < buf.len() {
                return f.write_str(&String::from_utf8_lossy(&buf[..n]));
            }
            buf.resize(n + 1, 0);
        }
    }
}

/// A Vec of `n` zeroed reports, as the library's outputs.
fn reports(n: usize) -> Vec<Report> {
    vec![Report::default(); n]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_send_sync<T: Send + Sync>() {}

    #[test]
    fn types_are_send_and_sync() {
        is_send_sync::<Error>();
        is_send_sync::<Target<'static>>();
        is_send_sync::<ApplyOptions<'static>>();
        is_send_sync::<Report>();
        is_send_sync::<Pidfd>();
    }
}
