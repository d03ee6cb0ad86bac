// SPDX-License-Identifier: LGPL-2.1-or-later
//! The binding's cost per call over C (doc/performance.md): rounds of
//! 1,000 calls through the binding alternate with 1,000 calls of the same
//! request in a C loop (compiled here with $CC, loaded with dlopen: one
//! call from Rust for the whole loop), so that the load of a shared machine
//! hits both alike, timed in thread CPU time (as bench/ does), so that a
//! round in which the thread waited for a CPU does not count that wait.
//! Prints ns per call (medians over rounds) and the median of the
//! per-round ratios with their 10th..90th percentiles.
//!
//!     cargo bench --bench overhead [-- ROUNDS]

use libthp::{Advice, ApplyOptions, DefaultOptions, Range, Report};
use std::ffi::CString;
use std::os::raw::{c_char, c_int, c_void};
use std::process::Command;

extern "C" {
    fn mmap(addr: *mut u8, len: usize, prot: i32, flags: i32, fd: i32, off: i64) -> *mut u8;
    fn dlopen(file: *const c_char, mode: c_int) -> *mut c_void;
    fn dlsym(h: *mut c_void, name: *const c_char) -> *mut c_void;
    fn dlerror() -> *const c_char;
    fn clock_gettime(clock: c_int, ts: *mut [i64; 2]) -> c_int;
}

/// CLOCK_THREAD_CPUTIME_ID, in ns.
fn thread_ns() -> i64 {
    let mut ts = [0i64; 2];
    // SAFETY: ts is a struct timespec (two longs on LP64).
    assert_eq!(unsafe { clock_gettime(3, &mut ts) }, 0);
    ts[0] * 1_000_000_000 + ts[1]
}

const C_LOOPS: &str = r#"
#include <thp/thp.h>
int apply_loop(const struct thp_range *r, size_t nr, struct thp_report *rep, int n)
{
	int rc = 0;
	for (int i = 0; i < n; i++) {
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = rep);
		rc = thp_apply_ranges(r, nr, &o);
		if (rc < 0)
			break;
	}
	return rc;
}
int get_default_loop(int n)
{
	int rc = 0;
	for (int i = 0; i < n; i++) {
		THP_OPTS(thp_default_opts, o);
		rc = thp_get_default(&o);
		if (rc < 0)
			break;
	}
	return rc;
}
"#;

type ApplyLoop = unsafe extern "C" fn(*const Range, usize, *mut Report, c_int) -> c_int;
type DefaultLoop = unsafe extern "C" fn(c_int) -> c_int;

fn pkg_config(what: &str) -> Vec<String> {
    let out = Command::new("pkg-config").args([what, "libthp"]).output().expect("pkg-config");
    assert!(out.status.success(), "pkg-config {} libthp failed", what);
    String::from_utf8(out.stdout).unwrap().split_whitespace().map(String::from).collect()
}

/// The C loops, built as a shared object against the same libthp.
fn c_loops() -> (ApplyLoop, DefaultLoop) {
    let dir = std::env::temp_dir().join(format!("thp-rust-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (src, so) = (dir.join("loops.c"), dir.join("loops.so"));
    std::fs::write(&src, C_LOOPS).unwrap();
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    let mut cc = cc.split_whitespace();
    let st = Command::new(cc.next().unwrap())
        .args(cc)
        .args(["-O2", "-std=gnu11", "-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&src)
        .args(pkg_config("--cflags"))
        .args(pkg_config("--libs"))
        .status()
        .unwrap();
    assert!(st.success(), "cannot build the C loops");
    let path = CString::new(so.to_str().unwrap()).unwrap();
    // SAFETY: dlopen/dlsym with NUL-terminated names; the symbols have the
    // types above (C_LOOPS); the object stays loaded until exit.
    unsafe {
        let h = dlopen(path.as_ptr(), 2 /* RTLD_NOW */);
        assert!(!h.is_null(), "dlopen: {:?}", std::ffi::CStr::from_ptr(dlerror()));
        let a = dlsym(h, b"apply_loop\0".as_ptr() as *const c_char);
        let d = dlsym(h, b"get_default_loop\0".as_ptr() as *const c_char);
        assert!(!a.is_null() && !d.is_null());
        let _ = std::fs::remove_dir_all(&dir);
        (std::mem::transmute::<*mut c_void, ApplyLoop>(a), std::mem::transmute::<*mut c_void, DefaultLoop>(d))
    }
}

/// n one-page ranges, every second page of a fresh mapping.
fn ranges(n: usize) -> Vec<Range> {
    // SAFETY: a fresh private anonymous mapping, never unmapped.
    let p = unsafe { mmap(std::ptr::null_mut(), 2 * n * 4096, 3, 0x22, -1, 0) };
    assert!(p as isize != -1);
    (0..n).map(|i| Range::new(p as u64 + 2 * i as u64 * 4096, 4096)).collect()
}

fn pct(v: &[f64], p: usize) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    s[(s.len() - 1) * p / 100]
}

fn main() {
    let rounds: usize = std::env::args().skip(1).find(|a| !a.starts_with('-')).map(|a| a.parse().unwrap()).unwrap_or(200);
    let (c_apply, c_default) = c_loops();
    const PER: usize = 1000;
    println!("# libthp {}, {} rounds of {} calls each way", libthp::version(), rounds, PER);
    println!("| call | Rust, ns | C, ns | Rust / C (p10..p90) |");
    println!("|---|---:|---:|---:|");
    // (label, ranges; 0: thp_get_default(); vec: apply_ranges() with its Vec of reports)
    for &(label, n, vec) in &[
        ("thp_apply_ranges(), 1 range", 1usize, false),
        ("thp_apply_ranges(), 64 ranges", 64, false),
        ("thp_apply_ranges(), 1 range, reports as a new Vec", 1, true),
        ("thp_get_default()", 0, false),
    ] {
        let r = ranges(n.max(1));
        let mut rep = vec![Report::default(); r.len()];
        let opts = ApplyOptions::new();
        let dopts = DefaultOptions::new();
        let (mut rs, mut cs, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
        for round in 0..rounds + 1 {
            let t0 = thread_ns();
            for _ in 0..PER {
                let ok = if n == 0 {
                    dopts.get().is_ok()
                } else if vec {
                    opts.apply_ranges(Advice::HUGE, &r).map(|a| a.reports.len()).ok() == Some(n)
                } else {
                    opts.apply_ranges_into(Advice::HUGE, &r, &mut rep).map(|a| a.advised).ok() == Some(n)
                };
                assert!(ok, "{} failed", label);
            }
            let t1 = thread_ns();
            // SAFETY: r and rep hold r.len() entries of the C layout.
            let rc = unsafe {
                if n == 0 {
                    c_default(PER as c_int)
                } else {
                    c_apply(r.as_ptr(), r.len(), rep.as_mut_ptr(), PER as c_int)
                }
            };
            let t2 = thread_ns();
            assert_eq!(rc as usize, n, "the C loop failed");
            if round == 0 {
                continue; // warm-up
            }
            let rust = (t1 - t0) as f64 / PER as f64;
            let c = (t2 - t1) as f64 / PER as f64;
            rs.push(rust);
            cs.push(c);
            ratios.push(rust / c);
        }
        println!(
            "| `{}` | {:.0} | {:.0} | {:.2} ({:.2}..{:.2}) |",
            label,
            pct(&rs, 50),
            pct(&cs, 50),
            pct(&ratios, 50),
            pct(&ratios, 10),
            pct(&ratios, 90)
        );
    }
}
