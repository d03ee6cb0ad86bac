// SPDX-License-Identifier: LGPL-2.1-or-later
//! Test helpers: aligned mappings, what /proc/PID/smaps shows, a child process as target.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};

pub const PAGE: u64 = 4096;
pub const HUGE: u64 = 2 << 20;

extern "C" {
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
    fn munmap(addr: *mut u8, len: usize) -> i32;
    fn madvise(addr: *mut u8, len: usize, advice: i32) -> i32;
}

const PROT_RW: i32 = 0x1 | 0x2;
const MAP_PRIVATE_ANON: i32 = 0x02 | 0x20;

pub fn in_ci() -> bool {
    std::env::var("CI").map(|v| v == "true").unwrap_or(false)
}

/// n bytes of private anonymous memory at a 2 MiB-aligned address,
/// unmapped when dropped (holes punched in it included).
pub struct Mapping {
    pub addr: u64,
    pub len: u64,
}

impl Mapping {
    pub fn new(len: u64) -> Mapping {
        let total = (len + HUGE) as usize;
        // SAFETY: a fresh anonymous mapping.
        let raw = unsafe { mmap(std::ptr::null_mut(), total, PROT_RW, MAP_PRIVATE_ANON, -1, 0) };
        assert!(raw as isize != -1, "mmap: {}", std::io::Error::last_os_error());
        let a = raw as u64;
        let off = (HUGE - a % HUGE) % HUGE;
        // Keep exactly the aligned part, so that it is a mapping of its own.
        if off > 0 {
            unmap(a, off);
        }
        let tail = total as u64 - off - len;
        if tail > 0 {
            unmap(a + off + len, tail);
        }
        Mapping { addr: a + off, len }
    }

    pub fn bytes(&self) -> &mut [u8] {
        // SAFETY: the mapping is ours, readable and writable, for its lifetime.
        unsafe { std::slice::from_raw_parts_mut(self.addr as *mut u8, self.len as usize) }
    }

    pub fn touch(&self) {
        let b = self.bytes();
        for i in (0..b.len()).step_by(PAGE as usize) {
            b[i] = 1;
        }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        unmap(self.addr, self.len);
    }
}

pub fn unmap(addr: u64, len: u64) {
    // SAFETY: only memory of a Mapping, which nothing else refers to.
    assert_eq!(unsafe { munmap(addr as *mut u8, len as usize) }, 0);
}

pub fn advise(addr: u64, len: u64, advice: i32) {
    // SAFETY: advice does not change the contents.
    let rc = unsafe { madvise(addr as *mut u8, len as usize, advice) };
    assert_eq!(rc, 0, "madvise: {}", std::io::Error::last_os_error());
}

/// What smaps says of the mapping that holds an address.
#[derive(Debug, Default)]
pub struct Smaps {
    pub found: bool,
    pub start: u64,
    pub end: u64,
    pub vm_flags: Vec<String>,
    pub anon_huge: u64,
    pub rss: u64,
}

impl Smaps {
    pub fn has(&self, f: &str) -> bool {
        self.vm_flags.iter().any(|x| x == f)
    }
    /// "hg", "nh", "-" (neither), "hg+nh" or "unmapped".
    pub fn advice(&self) -> &'static str {
        match (self.found, self.has("hg"), self.has("nh")) {
            (false, _, _) => "unmapped",
            (_, true, true) => "hg+nh",
            (_, true, false) => "hg",
            (_, false, true) => "nh",
            _ => "-",
        }
    }
}

/// /proc/PID/smaps (pid 0: self) for the mapping containing addr.
pub fn smaps_at(pid: u32, addr: u64) -> Smaps {
    let path = if pid == 0 { "/proc/self/smaps".to_string() } else { format!("/proc/{}/smaps", pid) };
    let text = std::fs::read_to_string(&path).unwrap();
    let mut cur: Option<Smaps> = None;
    for line in text.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if let Some((s, e)) = first.split_once('-') {
            if let (Ok(s), Ok(e)) = (u64::from_str_radix(s, 16), u64::from_str_radix(e, 16)) {
                if let Some(c) = cur.take() {
                    return c;
                }
                if s <= addr && addr < e {
                    cur = Some(Smaps { found: true, start: s, end: e, ..Default::default() });
                }
                continue;
            }
        }
        if let Some(c) = cur.as_mut() {
            let kb = || line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024;
            if line.starts_with("AnonHugePages:") {
                c.anon_huge = kb();
            } else if line.starts_with("Rss:") {
                c.rss = kb();
            } else if let Some(f) = line.strip_prefix("VmFlags:") {
                c.vm_flags = f.split_whitespace().map(String::from).collect();
            }
        }
    }
    cur.unwrap_or_default()
}

/// The global THP mode must be madvise for the advice to show (as in the
/// core suite): skip outside CI, fail in CI.
pub fn require_madvise_mode() -> bool {
    let m = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
    if m.contains("[madvise]") {
        return true;
    }
    let msg = format!("global THP mode is not madvise ({:?})", m.trim());
    if in_ci() || std::env::var("THP_TEST_ANY_MODE").as_deref() == Ok("1") {
        panic!("{}", msg);
    }
    eprintln!("SKIP: {}", msg);
    false
}

/// This test binary run again as helper `name` (a #[test] of that name
/// that acts only when THP_RS_HELPER says so).
pub fn helper(name: &str) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", name, "--nocapture", "--test-threads=1"]).env("THP_RS_HELPER", name);
    c
}

pub fn is_helper(name: &str) -> bool {
    std::env::var("THP_RS_HELPER").as_deref() == Ok(name)
}

/// A child with a populated 4 MiB mapping at a 2 MiB-aligned address,
/// waiting for its stdin to close (helper "helper_target").
pub struct ChildTarget {
    pub child: Child,
    pub addr: u64,
    stdin: Option<ChildStdin>,
}

impl ChildTarget {
    pub fn start() -> ChildTarget {
        let mut child = helper("helper_target")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut addr = 0;
        let mut line = String::new();
        while out.read_line(&mut line).unwrap() > 0 {
            // libtest's "test NAME ... " may start the line.
            if let Some(i) = line.find("addr ") {
                addr = u64::from_str_radix(line[i + 5..].trim(), 16).unwrap();
                break;
            }
            line.clear();
        }
        assert_ne!(addr, 0, "the child said no address");
        ChildTarget { child, addr, stdin }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for ChildTarget {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// The child's side of ChildTarget::start.
pub fn target_main() {
    let m = Mapping::new(2 * HUGE);
    m.touch();
    let mut so = std::io::stdout();
    writeln!(so, "addr {:x}", m.addr).unwrap();
    so.flush().unwrap();
    let mut buf = String::new();
    let _ = std::io::stdin().read_line(&mut buf);
    std::process::exit(0);
}

/// Tests of one binary run on threads of one process, and some act on the
/// whole of it (apply_all, collapse): each test holds this lock.
pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
