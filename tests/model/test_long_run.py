#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""long_run.py: the row it appends is the checker's sums, a divergence
fails the run, and a checker without its summary line is an error.

    test_long_run.py LONG_RUN_PY THP_MODEL
"""
import os
import subprocess
import sys
import tempfile

long_run, checker = sys.argv[1], sys.argv[2]
failures = []


def run(checker_path, first, cases, results, jobs=2, extra=()):
    return subprocess.run([sys.executable, long_run, "--checker", checker_path,
                           "--first", str(first), "--cases", str(cases),
                           "--jobs", str(jobs), "--results", results] + list(extra),
                          capture_output=True, text=True, timeout=600)


def rows(path):
    with open(path, encoding="utf-8") as f:
        return [l for l in f.read().splitlines() if l.startswith("| 20")]


def expect(cond, what, r=None):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)
        if r is not None:
            print(r.stdout + r.stderr)


with tempfile.TemporaryDirectory() as tmp:
    results = os.path.join(tmp, "results.md")
    with open(results, "w", encoding="utf-8") as f:
        f.write("# Long runs\n\nProse stays as it is.\n")

    # The real checker, seeds 3..6 in two processes, twice: two rows.
    for first in (3, 5):
        r = run(checker, first, 2, results)
        expect(r.returncode == 0, "real checker, seeds %d-%d: exit %d" % (first, first + 1,
                                                                          r.returncode), r)
    got = rows(results)
    expect(len(got) == 2, "two rows after two runs: %r" % got)
    if len(got) == 2:
        cells = [c.strip() for c in got[0].strip("|").split("|")]
        expect(cells[3] == "3–4", "first row's seeds: %r" % cells[3])
        kinds = [int(x) for x in cells[4].split("/")]
        expect(sum(kinds) >= 2, "first row's requests: %r" % cells[4])
        expect(cells[10] == "0", "first row's divergences: %r" % cells[10])
    with open(results, encoding="utf-8") as f:
        expect(f.read().startswith("# Long runs\n\nProse stays as it is.\n"),
               "the prose above the table changed")

    # A checker that reports a divergence: exit 1, the row says so.
    fake = os.path.join(tmp, "fake_diverges")
    with open(fake, "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\n"
                "echo 'DIVERGENCE seed '$THP_MODEL_FIRST_SEED\n"
                "echo \"thp_model: kernel 9.9: $THP_MODEL_CASES cases (HUGE 1, NOHUGE 0, "
                "COLLAPSE 0; 0 thp_apply_all, 0 policy sequences, 0 with 100+ ranges, "
                "0 past 2 GiB) in 0.1 s: 1 divergences, 0 layouts not buildable\"\n"
                "exit 1\n")
    os.chmod(fake, 0o755)
    r = run(fake, 1, 4, results)
    expect(r.returncode == 1, "a divergence: exit %d, expected 1" % r.returncode, r)
    expect("DIVERGENCE seed 1" in r.stdout and "DIVERGENCE seed 3" in r.stdout,
           "the divergent processes' output is shown", r)
    got = rows(results)
    expect(len(got) == 3 and got[-1].rstrip().endswith("| 2 |"),
           "the row counts 2 divergences: %r" % got[-1:])

    # A checker that dies without its summary: exit 2, no row.
    broken = os.path.join(tmp, "fake_broken")
    with open(broken, "w", encoding="utf-8") as f:
        f.write("#!/bin/sh\necho crashed\nexit 139\n")
    os.chmod(broken, 0o755)
    r = run(broken, 1, 2, results)
    expect(r.returncode == 2, "no summary: exit %d, expected 2" % r.returncode, r)
    expect(len(rows(results)) == 3, "no row for a run without summaries")

    # --remote: the real checker's remote mode, a row whose kernel says so.
    r = run(checker, 3, 2, results, extra=["--remote"])
    expect(r.returncode == 0, "real checker, remote, seeds 3-4: exit %d" % r.returncode, r)
    got = rows(results)
    expect(len(got) == 4 and got[-1].split("|")[2].strip().endswith(" remote"),
           "the remote row names the mode: %r" % got[-1:])
    # A checker that ignores THP_MODEL_REMOTE: exit 2, no row.
    r = run(fake, 1, 2, results, extra=["--remote"])
    expect(r.returncode == 2, "a local summary for --remote: exit %d, expected 2"
           % r.returncode, r)
    expect(len(rows(results)) == 4, "no row for a run in the wrong mode")

print("long_run: OK" if not failures else "long_run: %d failures" % len(failures))
sys.exit(1 if failures else 0)
