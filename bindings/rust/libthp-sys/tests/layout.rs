// SPDX-License-Identifier: LGPL-2.1-or-later
//! Every #[repr(C)] struct's size and field offsets against the C header:
//! a C program generated here prints them as the C compiler lays them out
//! (LP64, run); for ILP32 the same numbers are compiled into _Static_asserts
//! with the C compiler's -m32 (i386: built, not run, as nothing here runs
//! i386 programs).

use libthp_sys::*;
use std::collections::BTreeMap;
use std::mem::{size_of, MaybeUninit};
use std::path::PathBuf;
use std::process::Command;
use std::ptr::addr_of;

/// (name, Rust value) of each struct's size and each field's offset, and
/// the C expression that must have the same value.
fn rust_layout() -> Vec<(String, usize, String)> {
    let mut v = Vec::new();
    macro_rules! layout {
        ($t:ident { $($f:ident),* $(,)? }) => {{
            v.push((stringify!($t).to_string(), size_of::<$t>(),
                    format!("sizeof(struct {})", stringify!($t))));
            let u = MaybeUninit::<$t>::uninit();
            let base = u.as_ptr();
            $(
                // SAFETY: addr_of! on a field of an uninitialised value reads nothing.
                let off = unsafe { addr_of!((*base).$f) as usize - base as usize };
                v.push((format!("{}.{}", stringify!($t), stringify!($f)), off,
                        format!("offsetof(struct {}, {})", stringify!($t), stringify!($f))));
            )*
        }};
    }
    layout!(thp_range { addr, len });
    layout!(thp_report { addr, len, bytes_advised, bytes_unmapped, fail_addr, error, backend,
                         attempted, reserved0, reserved });
    layout!(thp_apply_opts { sz, pidfd, advice, flags, backend, reports, backend_used, reserved0 });
    layout!(thp_apply_all_opts { sz, pidfd, advice, flags, backend, failures, failures_cap,
                                 failures_needed, mappings_seen, mappings_advised,
                                 mappings_skipped, bytes_advised, backend_used, reserved0 });
    layout!(thp_default_opts { sz, pidfd, policy, flags, backend, prctl_set, prctl_get,
                               backend_used, persistent, reserved0, mappings_changed });
    layout!(thp_size_info { size, enabled, mode, shmem_enabled, huge_policy, reserved0 });
    layout!(thp_probe_info { sz, backends, thp_mode, pmd_size, pidfd_self, procmap_query,
                             pmadv_skip_errors, pmadv_no_error_on_unmapped, pmadv_set_default,
                             pmadv_entire_address_space, process_madvise_self_huge,
                             thp_disable_except_advised, madvise_collapse, reserved0,
                             sizes_source, nr_sizes, defrag, shmem_mode,
                             khugepaged_pages_to_scan, khugepaged_scan_sleep_millisecs,
                             khugepaged_alloc_sleep_millisecs, khugepaged_max_ptes_none,
                             khugepaged_max_ptes_swap, khugepaged_max_ptes_shared,
                             khugepaged_defrag, reserved1, sizes });
    layout!(thp_mapping_state { start, end, advised_huge, advised_nohuge, thp_eligible, anonymous,
                                reserved0, anon_huge_bytes, rss_bytes, name });
    layout!(thp_folio_bytes { size, bytes });
    layout!(thp_mapping_folios { base_bytes, other_bytes, bytes });
    layout!(thp_query_opts { sz, pidfd, flags, addr, len, states, states_cap, states_needed,
                             anon_bytes, anon_huge_bytes, anon_alignable_bytes, folio_source,
                             nr_sizes, folios, anon_base_bytes, anon_other_bytes,
                             anon_sized_alignable_bytes, sizes });
    layout!(thp_collapse_opts { sz, pidfd, flags, min_present_pages, reserved0, budget_bytes,
                                budget_ns, failures, failures_cap, failures_needed,
                                mappings_seen, mappings_eligible, mappings_nohuge,
                                extents_collapsed, extents_sparse, extents_failed,
                                extents_over_budget, bytes_collapsed, anon_bytes,
                                anon_huge_before, anon_huge_after, thp_disabled, reserved1,
                                elapsed_ns, extents_small_folios, small_folio_bytes_before,
                                small_folio_bytes_after, folio_source, reserved2,
                                max_shared_pages, reserved3, extents_shared });
    v
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn cc() -> Vec<String> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let mut v: Vec<String> = cc.split_whitespace().map(String::from).collect();
    v.extend(env!("LIBTHP_SYS_CFLAGS").split_whitespace().map(String::from));
    v
}

fn compile(src: &str, out: &PathBuf, extra: &[&str]) {
    let c = out.with_extension("c");
    std::fs::write(&c, src).unwrap();
    let cmd = cc();
    let res = Command::new(&cmd[0])
        .args(&cmd[1..])
        .args(extra)
        .arg("-std=gnu11")
        .arg("-o")
        .arg(out)
        .arg(&c)
        .output()
        .expect("cannot run the C compiler");
    assert!(
        res.status.success(),
        "{:?} {:?} failed:\n{}",
        cmd,
        extra,
        String::from_utf8_lossy(&res.stderr)
    );
}

#[test]
fn layout_matches_c_lp64() {
    let rust = rust_layout();
    let mut src = String::from("#include <stdio.h>\n#include <stddef.h>\n#include <thp/thp.h>\nint main(void)\n{\n");
    for (name, _, expr) in &rust {
        src += &format!("\tprintf(\"%s %zu\\n\", \"{}\", (size_t){});\n", name, expr);
    }
    src += "\treturn 0;\n}\n";
    let exe = scratch("layout_lp64");
    compile(&src, &exe, &[]);
    let out = Command::new(&exe).output().unwrap();
    assert!(out.status.success());
    let c: BTreeMap<String, usize> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let (k, v) = l.split_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect();
    assert_eq!(c.len(), rust.len(), "the C program printed another set of names");
    let mut bad = Vec::new();
    for (name, r, _) in &rust {
        if c[name] != *r {
            bad.push(format!("{}: Rust {}, C {}", name, r, c[name]));
        }
    }
    assert!(bad.is_empty(), "layout differs from thp.h:\n{}", bad.join("\n"));
    // Every struct of the header is here: 12 of them.
    assert_eq!(rust.iter().filter(|(n, _, _)| !n.contains('.')).count(), 12);
}

/// i386: the header promises the same layout on every ABI, so the Rust
/// (x86_64) numbers must hold for the C compiler's ILP32 layout too.
#[test]
fn layout_matches_c_ilp32() {
    assert_eq!(size_of::<usize>(), 8, "this check compares the LP64 Rust layout");
    let mut src = String::from("#include <stddef.h>\n#include <thp/thp.h>\n_Static_assert(sizeof(void *) == 4, \"not ILP32\");\n");
    for (name, r, expr) in rust_layout() {
        src += &format!("_Static_assert({} == {}, \"{} is {} in Rust\");\n", expr, r, name, r);
    }
    let obj = scratch("layout_ilp32.o");
    compile(&src, &obj, &["-m32", "-c"]);
}

/// The Rust side of ILP32: libthp-sys compiled for i686-unknown-linux-gnu
/// (metadata only: nothing here runs i386 programs) with a crate of const
/// asserts, one per size and offset, which the compiler evaluates.  An
/// offset is found in const context by setting one field of a zeroed
/// struct to non-zero bytes and looking for the first non-zero byte (Rust
/// 1.63 has no const offset_of).  Needs a sysroot with the i686 standard
/// library beside the host's: THP_RUST_I686_SYSROOT (the rust suite
/// fetches Debian's libstd-rust-dev:i386 there, bindings/rust/i686-sysroot.sh).
#[test]
fn layout_matches_c_rust_i686() {
    let sysroot = match std::env::var("THP_RUST_I686_SYSROOT") {
        Ok(s) => s,
        Err(_) => {
            // CI runs it with Debian's rustc (the rust suite sets the variable).
            let debian = std::env::var("RUSTC").as_deref() == Ok("/usr/bin/rustc");
            let ci = std::env::var("CI").as_deref() == Ok("true");
            assert!(!(ci && debian), "CI with Debian's rustc: THP_RUST_I686_SYSROOT must be set");
            eprintln!("THP_RUST_I686_SYSROOT not set: the i686 layout of the Rust structs is not compiled");
            return;
        }
    };
    if let Ok(script) = std::env::var("THP_RUST_I686_SYSROOT_SCRIPT") {
        let st = Command::new(&script).arg(&sysroot).status().expect("cannot run the sysroot script");
        assert!(st.success(), "{} {} failed", script, sysroot);
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let mut src = String::from(
        r#"#![no_std]
#![allow(dead_code)]
use core::mem::{size_of, transmute};
use libthp_sys::*;
const _: () = assert!(size_of::<usize>() == 4, "not ILP32");
trait Ones { const ONES: Self; }
impl Ones for u64 { const ONES: u64 = 0x0101_0101_0101_0101; }
impl Ones for u32 { const ONES: u32 = 0x0101_0101; }
impl Ones for i32 { const ONES: i32 = 0x0101_0101; }
impl Ones for u8 { const ONES: u8 = 1; }
impl Ones for i8 { const ONES: i8 = 1; }
impl Ones for bool { const ONES: bool = true; }
impl<T: Ones + Copy, const N: usize> Ones for [T; N] { const ONES: Self = [T::ONES; N]; }
impl<T> Ones for thp_ptr64<T> { const ONES: Self = thp_ptr64 { u64_: Ones::ONES }; }
impl Ones for usize { const ONES: usize = 0x0101_0101; }
impl Ones for thp_size_info {
    const ONES: Self = thp_size_info { size: 1, enabled: 1, mode: 1, shmem_enabled: 1, huge_policy: true, reserved0: 1 };
}
impl Ones for thp_folio_bytes { const ONES: Self = thp_folio_bytes { size: 1, bytes: 1 }; }
macro_rules! off {
    ($t:ident, $f:ident) => {{
        const N: usize = size_of::<$t>();
        let mut s: $t = unsafe { transmute::<[u8; N], $t>([0u8; N]) };
        s.$f = Ones::ONES;
        let b: [u8; N] = unsafe { transmute::<$t, [u8; N]>(s) };
        let mut i = 0;
        while i < N && b[i] == 0 {
            i += 1;
        }
        i
    }};
}
"#,
    );
    for (name, r, _) in rust_layout() {
        match name.split_once('.') {
            None => src += &format!("const _: () = assert!(size_of::<{}>() == {}, \"{}\");\n", name, r, name),
            Some((t, f)) => src += &format!("const _: () = assert!(off!({}, {}) == {}, \"{}\");\n", t, f, r, name),
        }
    }
    let dir = scratch("i686");
    std::fs::create_dir_all(&dir).unwrap();
    let check = dir.join("check.rs");
    std::fs::write(&check, src).unwrap();
    let rmeta = dir.join("liblibthp_sys.rmeta");
    let common = ["--sysroot", &sysroot, "--target", "i686-unknown-linux-gnu", "--edition", "2021"];
    let run = |args: &[&str]| {
        let out = Command::new(&rustc).args(common).args(args).output().expect("cannot run rustc");
        assert!(out.status.success(), "{} {:?}:\n{}", rustc, args, String::from_utf8_lossy(&out.stderr));
    };
    let lib = concat!(env!("CARGO_MANIFEST_DIR"), "/src/lib.rs");
    run(&["--crate-type", "rlib", "--crate-name", "libthp_sys", "--emit=metadata", "-o", rmeta.to_str().unwrap(), lib]);
    let ext = format!("libthp_sys={}", rmeta.display());
    let out = dir.join("libcheck.rmeta");
    run(&["--crate-type", "rlib", "--crate-name", "check", "--emit=metadata", "--extern", &ext, "-o", out.to_str().unwrap(), check.to_str().unwrap()]);
}
