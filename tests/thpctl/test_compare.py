#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""thpctl compare end to end, on real workloads.

    test_compare.py THPCTL TLB_WORKLOAD SPARSE_TOUCH

- tlb_workload with TLB pressure, with a --metric from its output, --json
  and --svg: every pair ran every policy once, in rotated order; every
  figure is reported per run or said to be unavailable with a reason;
  --policy never runs hold no huge page (in their own smaps, sampled);
  the verdicts are words of the schema; the chart has one dot per run.
- tlb_workload with a working set the TLB covers (1 MiB), as a table.
- sparse_touch (one byte every 2 MiB): the huge pages' RSS cost shows in
  peak RSS.
- a "server" with --load/--ready: the metric comes from the load's output,
  the server's whole process group is gone afterwards.
- errors: bad options (exit 2), a failing command and a metric that
  matches nothing (exit 1).
Which policy is faster is never asserted: that is the machine's business.
"""
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

THPCTL, TLB, SPARSE = sys.argv[1:4]
FIGURES = ["wall_seconds", "cpu_seconds", "peak_rss_bytes", "anon_huge_bytes_max",
           "minor_faults", "major_faults", "dtlb_load_misses", "itlb_load_misses",
           "page_walk_cycles", "metric"]
ALWAYS = ["wall_seconds", "cpu_seconds", "peak_rss_bytes", "anon_huge_bytes_max",
          "minor_faults", "major_faults"]
VERDICTS = {"too_few_pairs", "lower_in_every_pair", "higher_in_every_pair",
            "same_in_every_pair", "no_measurable_difference"}
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def compare(args, expect=0):
    p = subprocess.run([THPCTL, "compare"] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=600)
    check(p.returncode == expect,
          f"compare {' '.join(args)}: exit {p.returncode}, expected {expect}\n"
          f"stdout: {p.stdout[-1500:]}\nstderr: {p.stderr[-1500:]}")
    return p


def figure(doc, name):
    return next(f for f in doc["figures"] if f["name"] == name)


def check_document(doc, pairs, policies, metric):
    check(doc["version"] == 1 and doc["command"] == "compare", "document header")
    check(doc["policies"] == policies and doc["baseline"] == policies[0], "policies")
    runs = doc["runs"]
    check(len(runs) == pairs * len(policies), f"{len(runs)} runs")
    for pair in range(1, pairs + 1):
        in_pair = sorted((r for r in runs if r["pair"] == pair), key=lambda r: r["order"])
        order = [r["policy"] for r in in_pair]
        # Rotated: pair k starts with policy k-1 (mod n).
        n = len(policies)
        want = [policies[(i + pair - 1) % n] for i in range(n)]
        check(order == want, f"pair {pair} ran {order}, expected {want}")
    for r in runs:
        figs = r["figures"]
        check(set(figs) == set(FIGURES), f"run figures {sorted(figs)}")
        for name in ALWAYS + (["metric"] if metric else []):
            check(isinstance(figs[name], (int, float)) and figs[name] >= 0,
                  f"pair {r['pair']} {r['policy']}: {name} is {figs[name]}")
        check(figs["wall_seconds"] > 0 and figs["peak_rss_bytes"] > 0,
              f"pair {r['pair']} {r['policy']}: wall/RSS zero")
        if r["policy"] == "never":
            check(figs["anon_huge_bytes_max"] == 0,
                  f"pair {r['pair']}: --policy never held {figs['anon_huge_bytes_max']} "
                  "huge bytes")
    for f in doc["figures"]:
        values = [r["figures"][f["name"]] for r in runs]
        if f["available"]:
            check(f["reason"] is None, f"{f['name']}: available with a reason")
            check(all(v is not None for v in values) or f["name"] in ("dtlb_load_misses",
                                                                      "itlb_load_misses"),
                  f"{f['name']}: available but missing in a run")
            check(len(f["comparisons"]) == len(policies) - 1, f"{f['name']}: comparisons")
            for c in f["comparisons"]:
                check(c["verdict"] in VERDICTS, f"{f['name']}: verdict {c['verdict']}")
                check(c["pairs"] <= pairs, f"{f['name']}: {c['pairs']} pairs")
            for p in f["policies"]:
                if p["median"] is not None:
                    check(p["min"] <= p["median"] <= p["max"], f"{f['name']}: median range")
        else:
            check(isinstance(f["reason"], str) and f["reason"],
                  f"{f['name']}: unavailable without a reason")
            check(all(v is None for v in values), f"{f['name']}: unavailable but has values")
    check(not figure(doc, "page_walk_cycles")["available"], "page-walk cycles claimed")
    for name in ALWAYS:
        check(figure(doc, name)["available"], f"{name} not available")


def tlb_json_svg(tmp):
    svg = os.path.join(tmp, "pairs.svg")
    p = compare(["--pairs", "3", "--json", "--svg", svg,
                 "--metric", r"ns_per_access=([0-9.]+)", "--metric-name", "ns per access",
                 "--lower-is-better", "--", TLB, "-s", "64", "-n", "300000"])
    if p.returncode:
        return
    doc = json.loads(p.stdout)
    check_document(doc, 3, ["never", "huge"], metric=True)
    check(figure(doc, "metric")["better"] == "lower", "--lower-is-better ignored")
    root = ET.parse(svg).getroot()
    dots = [c for c in root.iter("{http://www.w3.org/2000/svg}circle")
            if c.find("{http://www.w3.org/2000/svg}title") is not None]
    check(len(dots) == 6, f"the chart has {len(dots)} dots, expected 6")
    titles = " ".join(c.find("{http://www.w3.org/2000/svg}title").text for c in dots)
    check("pair 3, huge" in titles and "pair 1, never" in titles, f"chart titles: {titles}")


def small_table():
    p = compare(["--pairs", "2", "--policies", "never,nohuge,huge", "--",
                 TLB, "-s", "1", "-n", "200000"])
    for label in ["wall time", "CPU time", "peak RSS", "huge (sampled)", "minor faults",
                  "major faults", "dTLB misses", "iTLB misses", "page-walk cycles"]:
        check(label in p.stdout, f"table lacks {label!r}:\n{p.stdout}")
    check("not measured: Linux has no generic page-walk event" in p.stdout,
          "page-walk reason missing")
    check("nohuge/never" in p.stdout and "huge/never" in p.stdout, "ratio columns missing")


def sparse_rss_cost():
    p = compare(["--pairs", "2", "--json", "--", SPARSE, "-s", "256", "-t", "2048",
                 "-w", "500"])
    if p.returncode:
        return
    doc = json.loads(p.stdout)
    check_document(doc, 2, ["never", "huge"], metric=False)
    runs = doc["runs"]
    huge = [r["figures"] for r in runs if r["policy"] == "huge"]
    never = [r["figures"] for r in runs if r["policy"] == "never"]
    for h in huge:
        check(h["anon_huge_bytes_max"] >= 64 << 20,
              f"--policy huge: only {h['anon_huge_bytes_max']} huge bytes sampled in a "
              "256 MiB region touched every 2 MiB")
    # The cost: each touched 2 MiB is resident under huge, 4 KiB under never.
    worst_never = max(n["peak_rss_bytes"] for n in never)
    for h in huge:
        check(h["peak_rss_bytes"] >= worst_never + h["anon_huge_bytes_max"] // 2,
              f"peak RSS under huge {h['peak_rss_bytes']} does not show its "
              f"{h['anon_huge_bytes_max']} huge bytes over never's {worst_never}")
    rss = figure(doc, "peak_rss_bytes")["comparisons"][0]
    check(rss["verdict"] == "higher_in_every_pair", f"sparse RSS verdict {rss['verdict']}")


def marker_processes(marker):
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(pid)
        except OSError:
            pass
    return found


def server_mode():
    marker = "1000.%d" % os.getpid()
    p = compare(["--pairs", "2", "--json", "--ready", "true",
                 "--load", "echo served; echo rate=125.5", "--metric", r"rate=([0-9.]+)",
                 "--", "/bin/sh", "-c", f"echo server-log-line; sleep {marker} & wait"])
    check(not marker_processes(marker), f"the server's group survived: {marker}")
    check("server-log-line" not in p.stdout.splitlines(), "the server's own output is on stdout")
    if p.returncode:
        return
    doc = json.loads(p.stdout)
    check_document(doc, 2, ["never", "huge"], metric=True)
    check(all(r["figures"]["metric"] == 125.5 for r in doc["runs"]), "metric not read")
    check(figure(doc, "metric")["comparisons"][0]["verdict"] == "same_in_every_pair",
          "equal metrics not 'same'")
    check(doc["load"] == "echo served; echo rate=125.5", "load not in the document")


def errors():
    for args in (["--pairs", "0", "--", "true"], ["--policies", "never", "--", "true"],
                 ["--policies", "never,never", "--", "true"], ["--ready", "true", "--", "true"],
                 ["--metric", "(", "--", "true"], ["--metric-name", "x", "--", "true"],
                 ["--sample-interval", "0", "--", "true"], ["--bogus", "--", "true"], []):
        p = compare(args, expect=2)
        check("thpctl: compare:" in p.stderr, f"{args}: no message: {p.stderr}")
    p = compare(["--pairs", "2", "--", "/bin/false"], expect=1)
    check("ended with exit status 1" in p.stderr, f"failing command: {p.stderr}")
    p = compare(["--pairs", "2", "--metric", "nomatch=([0-9]+)", "--", "/bin/true"], expect=1)
    check("matched nothing" in p.stderr, f"metric without match: {p.stderr}")


with tempfile.TemporaryDirectory() as tmp:
    tlb_json_svg(tmp)
small_table()
sparse_rss_cost()
server_mode()
errors()
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("thpctl compare: all checks passed")
