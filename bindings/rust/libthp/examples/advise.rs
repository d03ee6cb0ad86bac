// SPDX-License-Identifier: LGPL-2.1-or-later
//! Advise a buffer of this process huge, touch it, and show what the
//! library reports and what smaps says (through thp_query()).
use libthp::{Advice, ApplyOptions, DefaultOptions, QueryOptions, Range};
use std::alloc::{alloc, dealloc, Layout};

fn main() -> Result<(), libthp::Error> {
    // 8 MiB at a 2 MiB boundary: page-aligned, as THP advice needs.
    let layout = Layout::from_size_align(8 << 20, 2 << 20).unwrap();
    // SAFETY: a non-zero size; freed below with the same layout.
    let p = unsafe { alloc(layout) };
    assert!(!p.is_null());
    // Not touched before the advice: a Range names the memory, no slice needed.
    let res = ApplyOptions::new().apply_ranges(Advice::HUGE, &[Range::from_ptr(p, layout.size())])?;
    println!("{}", res.reports[0]);
    for i in (0..layout.size()).step_by(4096) {
        // SAFETY: inside the allocation; the first touch allocates the pages.
        unsafe { p.add(i).write(1) };
    }
    let q = QueryOptions::new().range(p as u64, layout.size() as u64).query()?;
    let d = DefaultOptions::new().get()?;
    println!(
        "{} MiB of {} MiB in huge pages (advised huge: {}); default policy {}",
        q.anon_huge_bytes >> 20,
        layout.size() >> 20,
        q.mappings.iter().all(|m| m.advised_huge),
        d.policy
    );
    // SAFETY: allocated above with this layout.
    unsafe { dealloc(p, layout) };
    Ok(())
}
