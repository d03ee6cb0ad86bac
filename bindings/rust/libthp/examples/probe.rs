// SPDX-License-Identifier: LGPL-2.1-or-later
//! What this kernel offers, and a refusal as the binding reports it:
//! advising another process (here: the parent) huge, which mainline refuses.
use libthp::{probe, Advice, ApplyOptions, Backend, Pidfd, Range};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let p = probe()?;
    println!("libthp {}, PMD size {} KiB", libthp::version(), p.pmd_size >> 10);
    for b in 1..libthp::libthp_sys::THP_BACKEND_COUNT {
        if p.has(Backend(b)) {
            println!("backend {}", Backend(b));
        }
    }
    for s in &p.sizes {
        println!("folio size {} KiB, HUGE policy can get it: {}", s.size >> 10, s.huge_policy);
    }
    let parent = Pidfd::open(std::os::unix::process::parent_id())?;
    match ApplyOptions::new().target(parent.target()).apply_ranges(Advice::HUGE, &[Range::new(0x10000, 4096)]) {
        Ok(r) => println!("the parent advised by {}", r.backend_used),
        Err(e) => println!("refused: errno {} ({}): {}", e.errno(), e, e.detail()),
    }
    Ok(())
}
