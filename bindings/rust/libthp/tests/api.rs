// SPDX-License-Identifier: LGPL-2.1-or-later
//! Every public call of the binding, checked against what /proc shows.

mod common;

use common::*;
use libthp::*;
use std::os::unix::io::{AsFd, AsRawFd, BorrowedFd};

const EINVAL: i32 = 22;
const EBADF: i32 = 9;
const EPERM: i32 = 1;
const EOPNOTSUPP: i32 = 95;

#[test]
fn helper_target() {
    if is_helper("helper_target") {
        target_main();
    }
}

#[test]
fn apply_ranges_self_slice() {
    let _serial = serial();
    if !require_madvise_mode() {
        return;
    }
    let m = Mapping::new(HUGE);
    let res = ApplyOptions::new().apply_ranges(Advice::HUGE, &[Range::of(m.bytes())]).unwrap();
    assert_eq!(res.advised, 1);
    assert_ne!(res.backend_used, Backend::AUTO);
    assert_eq!(res.reports.len(), 1);
    let r = &res.reports[0];
    assert_eq!((r.addr(), r.len(), r.bytes_advised(), r.attempted(), r.error()), (m.addr, HUGE, HUGE, true, 0));
    assert_eq!(r.backend(), res.backend_used);
    assert!(r.to_string().contains(&format!("{:x}", m.addr)), "report line {:?}", r.to_string());
    assert_eq!(smaps_at(0, m.addr).advice(), "hg");
    m.touch();
    assert!(smaps_at(0, m.addr).anon_huge > 0, "AnonHugePages 0 after HUGE and a touch");
    let res = ApplyOptions::new().apply_ranges(Advice::NOHUGE, &[Range::of(m.bytes())]).unwrap();
    assert_eq!(res.advised, 1);
    assert_eq!(smaps_at(0, m.addr).advice(), "nh");
}

#[test]
fn apply_ranges_raw_pointer() {
    let _serial = serial();
    if !require_madvise_mode() {
        return;
    }
    let m = Mapping::new(HUGE);
    let r = Range::from_ptr(m.addr as *const u8, PAGE as usize);
    let res = ApplyOptions::new().backend(Backend::MADVISE).apply_ranges(Advice::NOHUGE, &[r]).unwrap();
    assert_eq!((res.advised, res.backend_used), (1, Backend::MADVISE));
    assert_eq!(smaps_at(0, m.addr).advice(), "nh");
    assert_eq!(smaps_at(0, m.addr + PAGE).advice(), "-");
}

#[test]
fn apply_ranges_64_into_callers_reports() {
    let _serial = serial();
    if !require_madvise_mode() {
        return;
    }
    let m = Mapping::new(128 * PAGE);
    let ranges: Vec<Range> = (0..64).map(|i| Range::new(m.addr + 2 * i * PAGE, PAGE)).collect();
    let mut reports = vec![Report::default(); 64];
    let res = ApplyOptions::new().apply_ranges_into(Advice::HUGE, &ranges, &mut reports).unwrap();
    assert_eq!(res.advised, 64);
    assert!(res.reports.is_empty());
    for (i, r) in reports.iter().enumerate() {
        assert_eq!((r.addr(), r.bytes_advised(), r.attempted()), (ranges[i].addr(), PAGE, true), "report {}", i);
        assert_eq!(smaps_at(0, ranges[i].addr()).advice(), "hg", "range {}", i);
        let g = smaps_at(0, ranges[i].addr() + PAGE);
        assert_eq!(g.advice(), "-", "gap after range {}: {:x?} {:x}", i, g, ranges[i].addr());
    }
    // Too few reports for the ranges: refused before the library is called.
    let e = ApplyOptions::new().apply_ranges_into(Advice::HUGE, &ranges, &mut reports[..3]).unwrap_err();
    assert_eq!(e.errno(), EINVAL);
}

#[test]
fn apply_ranges_error_keeps_reports_and_detail() {
    let _serial = serial();
    let m = Mapping::new(HUGE);
    let ranges = [Range::new(m.addr, PAGE), Range::new(m.addr + 1, PAGE)];
    let mut reports = vec![Report::default(); 2];
    let e = ApplyOptions::new().apply_ranges_into(Advice::HUGE, &ranges, &mut reports).unwrap_err();
    assert_eq!((e.errno(), e.op()), (EINVAL, "thp_apply_ranges"));
    assert!(!e.detail().is_empty(), "no detail: {}", e);
    assert!(e.to_string().starts_with("thp_apply_ranges: ") && e.to_string().ends_with(e.detail()));
    assert_eq!(e.backend_used(), Backend::AUTO);
    for (i, r) in reports.iter().enumerate() {
        assert_eq!((r.addr(), r.attempted(), r.error()), (ranges[i].addr(), false, EINVAL), "report {}", i);
    }
    assert_eq!(smaps_at(0, m.addr).advice(), "-", "bad input changed the mapping");
    let io: std::io::Error = e.into();
    assert_eq!(io.kind(), std::io::ErrorKind::InvalidInput);
    // More than MAX_RANGES: refused, no report (so none allocated).
    let many = vec![Range::new(m.addr, PAGE); MAX_RANGES + 1];
    let e = ApplyOptions::new().apply_ranges(Advice::HUGE, &many).unwrap_err();
    assert_eq!(e.errno(), EINVAL);
    assert!(!e.detail().is_empty());
}

#[test]
fn apply_all_self() {
    let _serial = serial();
    if !require_madvise_mode() {
        return;
    }
    let m = Mapping::new(HUGE);
    let res = ApplyAllOptions::new().flags(Flags::SKIP_ERRORS).failures_cap(8).apply(Advice::HUGE).unwrap();
    assert!(res.mappings_seen > 1 && res.advised as u64 == res.mappings_advised, "{:?}", res);
    assert_eq!(res.failures.len() as u64, res.failures_needed.min(8));
    assert!(res.bytes_advised >= HUGE);
    assert_eq!(smaps_at(0, m.addr).advice(), "hg");
    let e = ApplyAllOptions::new().apply(Advice(4)).unwrap_err();
    assert_eq!((e.errno(), e.op()), (EINVAL, "thp_apply_all"));
}

#[test]
fn helper_default() {
    if !is_helper("helper_default") {
        return;
    }
    let d = DefaultOptions::new();
    if probe().unwrap().thp_disable_except_advised {
        let set = d.set(Policy::NOHUGE).unwrap();
        assert_ne!(set.backend_used, Backend::AUTO);
        assert_eq!(d.get().unwrap().policy, Policy::NOHUGE);
    } else {
        // Before 6.18 (Debian 12's 6.1) a mainline kernel cannot: refused, with the reason.
        let e = d.set(Policy::NOHUGE).unwrap_err();
        assert_eq!((e.errno(), e.op()), (EOPNOTSUPP, "thp_set_default"));
        assert!(e.detail().contains("NOHUGE"), "detail {:?}", e.detail());
        assert_eq!(d.get().unwrap().policy, Policy::SYSTEM, "a refused set changed the policy");
    }
    d.set(Policy::NEVER).unwrap();
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    assert!(status.contains("THP_enabled:\t0"), "THP_enabled not 0 after never");
    assert_eq!(d.get().unwrap().policy, Policy::NEVER);
    assert_eq!(d.set(Policy(9)).unwrap_err().errno(), EINVAL);
    println!("HELPER OK");
}

#[test]
fn set_get_default_in_a_child() {
    let _serial = serial();
    // stdin piped: output() would open /dev/null, which a VM guest may lack.
    let out = helper("helper_default").stdin(std::process::Stdio::piped()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("HELPER OK"), "child: {}{}", text, String::from_utf8_lossy(&out.stderr));
    let got = DefaultOptions::new().get().unwrap();
    assert_ne!(got.policy, Policy::NEVER, "the child's policy leaked to the parent");
}

#[test]
fn probe_matches_sysfs() {
    let _serial = serial();
    let p = probe().unwrap();
    assert_eq!(p.pmd_size, HUGE);
    let mode = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap();
    let want = if mode.contains("[always]") { 0 } else if mode.contains("[madvise]") { 1 } else { 2 };
    assert_eq!(p.thp_mode, want, "sysfs {:?}", mode);
    assert!(p.has(Backend::MADVISE), "backends {:#x}", p.backends);
    assert!(!p.sizes.is_empty() && p.sizes.iter().any(|s| s.size == HUGE), "{:?}", p.sizes);
}

#[test]
fn query_self() {
    let _serial = serial();
    if !require_madvise_mode() {
        return;
    }
    let m = Mapping::new(2 * HUGE);
    ApplyOptions::new().apply_ranges(Advice::HUGE, &[Range::of(m.bytes())]).unwrap();
    m.touch();
    let q = QueryOptions::new().range(m.addr, m.len).query().unwrap();
    assert_eq!(q.mappings.len(), 1, "{:?}", q);
    let s = &q.mappings[0];
    let e = smaps_at(0, m.addr);
    assert_eq!((s.start, s.end, s.advised_huge, s.anonymous), (m.addr, m.addr + m.len, true, true));
    assert_eq!((s.anon_huge_bytes, s.rss_bytes), (e.anon_huge, e.rss));
    assert!(s.folios.is_none());
    let all = QueryOptions::new().folio_sizes(true).query().unwrap();
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap().lines().count();
    assert!(all.mappings.len() > 3 && all.mappings.len() <= maps + 8, "{} mappings, maps has {}", all.mappings.len(), maps);
    assert!(all.mappings.iter().all(|m| m.folios.is_some()));
}

#[test]
fn collapse_self() {
    let _serial = serial();
    if !require_madvise_mode() {
        return;
    }
    let m = Mapping::new(2 * HUGE);
    m.touch();
    if smaps_at(0, m.addr).anon_huge != 0 {
        eprintln!("SKIP: already huge before the collapse");
        return;
    }
    let res = ApplyOptions::new().apply_ranges(Advice::COLLAPSE, &[Range::new(m.addr, HUGE)]).unwrap();
    assert_eq!(res.reports[0].bytes_advised(), HUGE, "{:?}", res);
    assert_eq!(smaps_at(0, m.addr).anon_huge, HUGE);
    let c = CollapseOptions::new().failures_cap(4).collapse().unwrap();
    assert_eq!(c.failures.len() as u64, c.failures_needed.min(4));
    assert!(c.mappings_seen > 0 && c.anon_huge_after >= 2 * HUGE, "{:?}", c);
    assert_eq!(smaps_at(0, m.addr).anon_huge, 2 * HUGE);
    let c = CollapseOptions::new().check_only(true).peer_only(true).collapse().unwrap();
    assert_eq!((c.collapsed, c.mappings_seen), (0, 0));
    let e = CollapseOptions::new().min_present_pages(100_000).collapse().unwrap_err();
    assert_eq!((e.errno(), e.op()), (EINVAL, "thp_collapse"));
}

#[test]
fn remote() {
    let _serial = serial();
    if !require_madvise_mode() {
        return;
    }
    let t = ChildTarget::start();
    let e = smaps_at(t.pid(), t.addr);
    assert!(e.found && e.anon_huge == 0, "child mapping {:?}", e);
    let pfd = Pidfd::open(t.pid()).unwrap();
    let q = QueryOptions::new().target(pfd.target()).range(t.addr, 2 * HUGE).query().unwrap();
    assert_eq!(q.mappings.len(), 1);
    assert_eq!((q.mappings[0].start, q.mappings[0].rss_bytes), (t.addr, 2 * HUGE));
    // Mainline advises another process with COLLAPSE only.
    let e = ApplyOptions::new()
        .target(Target::Pidfd(pfd.as_fd()))
        .apply_ranges(Advice::HUGE, &[Range::new(t.addr, HUGE)])
        .unwrap_err();
    assert!(e.errno() == EOPNOTSUPP && !e.detail().is_empty(), "remote HUGE: {}", e);
    // "system" and "nohuge" look the same from outside: refused, not guessed.
    let e = DefaultOptions::new().target(pfd.target()).get().unwrap_err();
    assert_eq!((e.errno(), e.op()), (EOPNOTSUPP, "thp_get_default"));
    let e = DefaultOptions::new().target(pfd.target()).set(Policy::NEVER).unwrap_err();
    assert_eq!((e.errno(), e.op()), (EOPNOTSUPP, "thp_set_default"));
    // A descriptor that is no pidfd.
    let f = std::fs::File::open("/proc/self/status").unwrap();
    let e = QueryOptions::new().target(Target::Pidfd(f.as_fd())).query().unwrap_err();
    assert_eq!(e.errno(), EBADF, "{}", e);
    // SAFETY: a descriptor number far above any open one, borrowed for one call.
    let bad = unsafe { BorrowedFd::borrow_raw(1 << 20) };
    assert_eq!(QueryOptions::new().target(Target::Pidfd(bad)).query().unwrap_err().errno(), EBADF);
    // SAFETY: uid 0 is root.
    let root = std::fs::read_to_string("/proc/self/status").unwrap().lines().any(|l| l.starts_with("Uid:\t0\t"));
    if root {
        let r = ApplyOptions::new().target(pfd.target()).apply_ranges(Advice::COLLAPSE, &[Range::new(t.addr, HUGE)]).unwrap();
        assert_eq!(r.reports[0].bytes_advised(), HUGE);
        assert_eq!(smaps_at(t.pid(), t.addr).anon_huge, HUGE);
        let c = CollapseOptions::new().target(pfd.target()).failures_cap(4).collapse().unwrap();
        assert!(c.extents_collapsed >= 1 && c.anon_huge_after >= 2 * HUGE, "{:?}", c);
        assert_eq!(smaps_at(t.pid(), t.addr).anon_huge, 2 * HUGE);
        let a = ApplyAllOptions::new().target(pfd.target()).flags(Flags::SKIP_ERRORS).apply(Advice::COLLAPSE);
        assert!(a.map(|a| a.mappings_seen > 0).unwrap_or(true));
        let set = DefaultOptions::new().target(pfd.target()).backend(Backend::INJECT).set(Policy::NEVER).unwrap();
        assert_eq!(set.backend_used, Backend::INJECT);
        let status = std::fs::read_to_string(format!("/proc/{}/status", t.pid())).unwrap();
        assert!(status.contains("THP_enabled:\t0"), "child's THP_enabled not 0 after never");
        assert_eq!(DefaultOptions::new().target(pfd.target()).get().unwrap().policy, Policy::NEVER);
    } else {
        let e = CollapseOptions::new().target(pfd.target()).collapse().unwrap_err();
        assert_eq!(e.errno(), EPERM);
        assert_eq!(smaps_at(t.pid(), t.addr).anon_huge, 0);
    }
    assert!(pfd.as_raw_fd() > 0);
}

/// Each error carries the detail of its own call, made on its own thread.
#[test]
fn threads_keep_their_detail() {
    let _serial = serial();
    let m = Mapping::new(HUGE);
    let addr = m.addr;
    let calls: Vec<Box<dyn Fn() -> Error + Send + Sync>> = vec![
        Box::new(move || ApplyOptions::new().apply_ranges(Advice::HUGE, &[Range::new(addr + 1, PAGE)]).unwrap_err()),
        Box::new(|| ApplyOptions::new().apply_ranges(Advice(4), &[]).unwrap_err()),
        Box::new(|| CollapseOptions::new().min_present_pages(100_000).collapse().unwrap_err()),
    ];
    let alone: Vec<String> = calls.iter().map(|c| c().detail().to_string()).collect();
    std::thread::scope(|s| {
        let hs: Vec<_> = calls
            .iter()
            .map(|c| {
                s.spawn(move || {
                    (0..200).map(|_| {
                        let e = c();
                        // A success on this thread between the call and the read must not matter.
                        libthp::probe().unwrap();
                        e.detail().to_string()
                    }).collect::<Vec<_>>()
                })
            })
            .collect();
        for (i, h) in hs.into_iter().enumerate() {
            for d in h.join().unwrap() {
                assert_eq!(d, alone[i], "call {}", i);
            }
        }
    });
    assert!(alone[0] != alone[1] && alone[1] != alone[2] && !alone[0].is_empty(), "{:?}", alone);
}

#[test]
fn names() {
    let _serial = serial();
    let v = version();
    if let Ok(want) = std::env::var("THP_VERSION") {
        assert_eq!(v, want);
    }
    // The crates carry the library's version.
    assert_eq!(v, env!("CARGO_PKG_VERSION"));
    assert_eq!(v, format!("{}.{}.{}", libthp_sys::THP_VERSION_MAJOR, libthp_sys::THP_VERSION_MINOR, libthp_sys::THP_VERSION_PATCH));
    assert_eq!((Backend::MADVISE.name(), Backend::PROCESS_MADVISE.to_string().as_str(), Backend(99).name()),
               ("madvise", "process_madvise", "unknown"));
    assert_eq!((Policy::HUGE.name(), Policy::NEVER.to_string().as_str(), Policy(7).name()), ("huge", "never", "unknown"));
    assert!(strerror(-EINVAL).len() > 3);
    assert_eq!(strerror(-EINVAL), strerror(EINVAL));
    assert_ne!(strerror(EPERM), strerror(EINVAL));
}

/// A call the running kernel refuses is reported with the library's errno
/// and detail: process_madvise() on the calling process with HUGE (6.13+;
/// the library refuses it before 6.13, as in Debian 12's 6.1).
#[test]
fn kernel_refusal_is_reported() {
    let _serial = serial();
    if !require_madvise_mode() {
        return;
    }
    let m = Mapping::new(HUGE);
    let p = probe().unwrap();
    let res = ApplyOptions::new()
        .backend(Backend::PROCESS_MADVISE)
        .apply_ranges(Advice::HUGE, &[Range::of(m.bytes())]);
    if p.process_madvise_self_huge {
        let a = res.unwrap();
        assert_eq!((a.advised, a.backend_used), (1, Backend::PROCESS_MADVISE));
        assert_eq!(smaps_at(0, m.addr).advice(), "hg");
    } else {
        let e = res.unwrap_err();
        assert_eq!((e.errno(), e.op()), (EOPNOTSUPP, "thp_apply_ranges"));
        assert!(!e.detail().is_empty(), "no detail for the refusal");
        assert_eq!(smaps_at(0, m.addr).advice(), "-", "a refused call changed the mapping");
    }
    println!("process_madvise_self_huge {}: {:?}", p.process_madvise_self_huge, ApplyOptions::new()
        .backend(Backend::PROCESS_MADVISE).apply_ranges(Advice::HUGE, &[Range::of(m.bytes())]).map(|a| a.advised));
}
