// SPDX-License-Identifier: LGPL-2.1-or-later
//! The shared case table (tests/model/cases.txt) through the Rust binding:
//! the C runner, the Python and the Go binding run the same cases.

mod common;

use common::*;
use libthp::*;

#[derive(Default, Debug)]
struct Span {
    first: u64,
    n: u64,
    what: String,
}

#[derive(Debug, PartialEq, Eq)]
struct Want {
    pos: u64,
    len: u64,
    advised: u64,
    unmapped: u64,
    fail: Option<u64>,
    error: i32,
    attempted: bool,
}

#[derive(Default, Debug)]
struct Case {
    name: String,
    line: usize,
    maps: Vec<Span>,
    flags_after: Vec<Span>,
    advice: i32,
    flags: u32,
    backend: u32,
    ranges: Vec<(u64, u64)>,
    ret: i64,
    used: String,
    reports: Vec<Want>,
}

fn errno(s: &str) -> i32 {
    match s {
        "0" => 0,
        "EPERM" => 1,
        "ENOENT" => 2,
        "ESRCH" => 3,
        "E2BIG" => 7,
        "EBADF" => 9,
        "ENOMEM" => 12,
        "EINVAL" => 22,
        "EOPNOTSUPP" => 95,
        _ => panic!("unknown errno {}", s),
    }
}

fn num(s: &str) -> u64 {
    if let Some(h) = s.strip_prefix("0x") {
        u64::from_str_radix(h, 16).unwrap()
    } else {
        s.parse().unwrap_or_else(|_| panic!("bad number {}", s))
    }
}

/// PAGES[+BYTES].
fn pos(s: &str) -> u64 {
    match s.split_once('+') {
        Some((p, b)) => num(p) * PAGE + num(b),
        None => num(s) * PAGE,
    }
}

/// The table as built in, for a test binary run where the tree is not (a VM guest).
const BUILT_IN: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../../../tests/model/cases.txt"));

fn cases_path() -> String {
    std::env::var("THP_CASES").unwrap_or_else(|_| "the copy built in".to_string())
}

fn parse() -> Vec<Case> {
    let text = match std::env::var("THP_CASES") {
        Ok(p) => std::fs::read_to_string(p).unwrap(),
        Err(_) => BUILT_IN.to_string(),
    };
    let mut cases = Vec::new();
    let mut c: Option<Case> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let tok: Vec<&str> = raw.split('#').next().unwrap().split_whitespace().collect();
        if tok.is_empty() {
            continue;
        }
        let bad = || -> ! { panic!("cases.txt:{}: bad directive {:?}", line, raw) };
        if tok[0] == "case" && tok.len() == 2 && c.is_none() {
            c = Some(Case { name: tok[1].to_string(), line, ..Default::default() });
            continue;
        }
        let cur = match c.as_mut() {
            Some(cur) => cur,
            None => bad(),
        };
        match (tok[0], tok.len()) {
            ("end", 1) => cases.push(c.take().unwrap()),
            ("map", 3) | ("map", 4) => cur.maps.push(Span {
                first: num(tok[1]),
                n: num(tok[2]),
                what: tok.get(3).unwrap_or(&"").to_string(),
            }),
            ("flags", 4) => cur.flags_after.push(Span { first: num(tok[1]), n: num(tok[2]), what: tok[3].to_string() }),
            ("apply", 4) => {
                cur.advice = match tok[1] {
                    "huge" => Advice::HUGE.0,
                    "nohuge" => Advice::NOHUGE.0,
                    n => num(n) as i32,
                };
                cur.flags = match tok[2] {
                    "skip" => Flags::SKIP_ERRORS.0,
                    "gaps" => Flags::NO_ERROR_ON_UNMAPPED.0,
                    "skip+gaps" => (Flags::SKIP_ERRORS | Flags::NO_ERROR_ON_UNMAPPED).0,
                    n => num(n) as u32,
                };
                cur.backend = match tok[3] {
                    "auto" => Backend::AUTO.0,
                    "madvise" => Backend::MADVISE.0,
                    n => num(n) as u32,
                };
            }
            ("range", 3) => cur.ranges.push((pos(tok[1]), pos(tok[2]))),
            ("return", 2) => {
                cur.ret = match tok[1].strip_prefix('-') {
                    Some(e) => -(errno(e) as i64),
                    None => num(tok[1]) as i64,
                }
            }
            ("used", 2) => cur.used = tok[1].to_string(),
            ("report", 8) => cur.reports.push(Want {
                pos: pos(tok[1]),
                len: pos(tok[2]),
                advised: pos(tok[3]),
                unmapped: pos(tok[4]),
                fail: if tok[5] == "-" { None } else { Some(pos(tok[5])) },
                error: errno(tok[6]),
                attempted: num(tok[7]) == 1,
            }),
            _ => {
                bad();
            }
        }
    }
    assert!(c.is_none(), "a case without end");
    cases
}

fn run(c: &Case) -> Vec<String> {
    let mut errs = Vec::new();
    let arena = Mapping::new(1024 * PAGE);
    let base = arena.addr;
    let mut mapped = vec![""; 1024];
    for m in &c.maps {
        for p in m.first..m.first + m.n {
            mapped[p as usize] = if m.what.is_empty() { "-" } else { &m.what };
        }
    }
    for (p, what) in mapped.iter().enumerate() {
        let a = base + p as u64 * PAGE;
        match *what {
            // The arena's drop unmaps the whole of it, holes included.
            "" => unmap(a, PAGE),
            "hg" => advise(a, PAGE, 14),
            "nh" => advise(a, PAGE, 15),
            _ => {}
        }
    }
    let ranges: Vec<Range> = c.ranges.iter().map(|&(p, l)| Range::new(base + p, l)).collect();
    let mut reports = vec![Report::default(); ranges.len()];
    let res = ApplyOptions::new()
        .flags(Flags(c.flags))
        .backend(Backend(c.backend))
        .apply_ranges_into(Advice(c.advice), &ranges, &mut reports);
    let (ret, used) = match &res {
        Ok(a) => (a.advised as i64, a.backend_used),
        Err(e) => (-(e.errno() as i64), e.backend_used()),
    };
    if ret != c.ret {
        errs.push(format!("returned {} ({:?}), table {}", ret, res, c.ret));
    }
    let used_ok = match c.used.as_str() {
        "none" => used == Backend::AUTO,
        "any" => used != Backend::AUTO,
        name => used.name() == name,
    };
    if !used_ok {
        errs.push(format!("backend_used {}, table {}", used, c.used));
    }
    if reports.len() != c.reports.len() {
        errs.push(format!("{} reports, table {}", reports.len(), c.reports.len()));
    }
    for (i, (r, w)) in reports.iter().zip(&c.reports).enumerate() {
        let got = Want {
            pos: r.addr().wrapping_sub(base),
            len: r.len(),
            advised: r.bytes_advised(),
            unmapped: r.bytes_unmapped(),
            fail: if r.fail_addr() == 0 { None } else { Some(r.fail_addr().wrapping_sub(base)) },
            error: r.error(),
            attempted: r.attempted(),
        };
        if &got != w || r.backend() != used {
            errs.push(format!("report {}: {:?} (backend {}), table {:?}", i, got, r.backend(), w));
        }
    }
    for s in &c.flags_after {
        for p in s.first..s.first + s.n {
            let got = smaps_at(0, base + p * PAGE).advice();
            if got != s.what {
                errs.push(format!("page {}: smaps {}, table {}", p, got, s.what));
                break;
            }
        }
    }
    errs
}

#[test]
fn case_table() {
    if !require_madvise_mode() {
        return;
    }
    let cases = parse();
    assert!(cases.len() >= 10, "only {} cases in {}", cases.len(), cases_path());
    let mut failed = Vec::new();
    for c in &cases {
        for e in run(c) {
            failed.push(format!("cases.txt:{}: {}: {}", c.line, c.name, e));
        }
    }
    println!("{} cases of {}", cases.len(), cases_path());
    assert!(failed.is_empty(), "{} failures:\n{}", failed.len(), failed.join("\n"));
}
