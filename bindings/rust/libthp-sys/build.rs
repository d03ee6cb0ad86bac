// SPDX-License-Identifier: LGPL-2.1-or-later
//! Finds libthp with pkg-config(1), run directly: the pkg-config crate is
//! not available offline everywhere this builds (see ../README.md).

use std::env;
use std::process::Command;

fn pkg_config(args: &[&str]) -> String {
    let prog = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let out = Command::new(&prog)
        .args(args)
        .arg("libthp")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {}", prog, e));
    if !out.status.success() {
        panic!(
            "{} {:?} libthp failed (is libthp installed, or PKG_CONFIG_PATH set?): {}",
            prog,
            args,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    String::from_utf8(out.stdout).expect("pkg-config printed non-UTF-8")
}

fn main() {
    for v in ["PKG_CONFIG", "PKG_CONFIG_PATH", "PKG_CONFIG_LIBDIR", "PKG_CONFIG_SYSROOT_DIR"] {
        println!("cargo:rerun-if-env-changed={}", v);
    }
    for flag in pkg_config(&["--libs"]).split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-L") {
            println!("cargo:rustc-link-search=native={}", dir);
        } else if let Some(lib) = flag.strip_prefix("-l") {
            println!("cargo:rustc-link-lib={}", lib);
        }
    }
    // The tests compile C against the same header (tests/layout.rs).
    let cflags = pkg_config(&["--cflags"]);
    println!("cargo:rustc-env=LIBTHP_SYS_CFLAGS={}", cflags.trim());
    for flag in cflags.split_whitespace() {
        if let Some(dir) = flag.strip_prefix("-I") {
            println!("cargo:include={}", dir);
        }
    }
}
