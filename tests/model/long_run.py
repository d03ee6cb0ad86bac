#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Run the model checker over a range of seeds and record the result.

    long_run.py --checker BUILD/tests/model/thp_model --first 1 --cases 100000
                [--jobs 2] [--remote] [--results doc/results/model-long-runs.md]

The seeds are split into --jobs processes of consecutive seeds; each
prints thp_model's summary line, and the sums become one row appended to
the results file's table (date, kernel, commit of the source tree, seeds,
requests by kind, CPU seconds, divergences).  A divergence's seed and
shrunk reproducer are printed as the checker prints them, and the exit
status is 1.  --remote runs the checker's remote mode (the requests on a
target child's pidfd through the inject backend); its rows name the
kernel "... remote".  The results file is what doc/testing.md cites: long runs
update it by running this script, not by editing prose.
"""
import argparse
import datetime
import os
import re
import resource
import subprocess
import sys

SUMMARY = re.compile(
    r"thp_model: kernel (?P<kernel>\S+(?: remote)?): (?P<cases>\d+) cases \(HUGE (?P<huge>\d+), "
    r"NOHUGE (?P<nohuge>\d+), COLLAPSE (?P<collapse>\d+); (?P<all>\d+) thp_apply_all, "
    r"(?P<policy>\d+) policy sequences, (?P<many>\d+) with 100\+ ranges, "
    r"(?P<big>\d+) past 2 GiB\) in [0-9.]+ s: (?P<div>\d+) divergences, "
    r"(?P<unbuildable>\d+) layouts not buildable")
COUNTS = ["cases", "huge", "nohuge", "collapse", "all", "policy", "many", "big", "div",
          "unbuildable"]
HEADER = ("| date (UTC) | kernel | commit | seeds | HUGE / NOHUGE / COLLAPSE | "
          "thp_apply_all | policy sequences | 100+ ranges | past 2 GiB | CPU s | "
          "divergences |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|\n")


def commit_of(path):
    try:
        out = subprocess.run(["git", "-C", path, "describe", "--always", "--dirty"],
                             capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--checker", required=True, help="path of the built thp_model")
    ap.add_argument("--first", type=int, default=1, help="first seed")
    ap.add_argument("--cases", type=int, required=True, help="number of seeds")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--remote", action="store_true",
                    help="remote mode: the requests on a target child (THP_MODEL_REMOTE=1)")
    ap.add_argument("--results", help="markdown file whose table gets the row")
    ap.add_argument("--source", default=os.path.join(os.path.dirname(__file__), "..", ".."),
                    help="source tree whose commit the row names")
    args = ap.parse_args()
    if args.cases < 1 or args.first < 1 or args.jobs < 1:
        ap.error("--first, --cases and --jobs must be at least 1")

    jobs = min(args.jobs, args.cases)
    per, extra = divmod(args.cases, jobs)
    procs, first = [], args.first
    for j in range(jobs):
        n = per + (1 if j < extra else 0)
        env = dict(os.environ, THP_MODEL_FIRST_SEED=str(first), THP_MODEL_CASES=str(n),
                   THP_MODEL_REMOTE="1" if args.remote else "0")
        procs.append(subprocess.Popen([args.checker], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
        first += n

    totals = dict.fromkeys(COUNTS, 0)
    kernel, status = None, 0
    for p in procs:
        out, _ = p.communicate()
        m = None
        for line in out.splitlines():
            m = SUMMARY.match(line) or m
        if p.returncode not in (0, 1) or m is None:
            sys.stdout.write(out)
            print("long_run: a checker process exited %d without its summary line"
                  % p.returncode, file=sys.stderr)
            return 2
        if p.returncode != 0 or int(m["div"]) != 0:
            sys.stdout.write(out)
            status = 1
        kernel = m["kernel"]
        if args.remote != kernel.endswith(" remote"):
            sys.stdout.write(out)
            print("long_run: the checker did not run in the mode asked", file=sys.stderr)
            return 2
        for k in COUNTS:
            totals[k] += int(m[k])
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = cpu.ru_utime + cpu.ru_stime

    if totals["cases"] != args.cases:
        print("long_run: %d cases ran, %d asked" % (totals["cases"], args.cases),
              file=sys.stderr)
        return 2
    last = args.first + args.cases - 1
    row = ("| %s | %s | %s | %d–%d | %d / %d / %d | %d | %d | %d | %d | %.0f | %d |\n" % (
        datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"), kernel,
        commit_of(args.source), args.first, last, totals["huge"], totals["nohuge"],
        totals["collapse"], totals["all"], totals["policy"], totals["many"], totals["big"],
        cpu_s, totals["div"]))
    print("long_run: " + row.strip())
    if args.results:
        text = ""
        if os.path.exists(args.results):
            with open(args.results, encoding="utf-8") as f:
                text = f.read()
        if HEADER not in text:
            text += ("\n" if text and not text.endswith("\n") else "") + HEADER
        if not text.endswith("\n"):
            text += "\n"
        with open(args.results, "w", encoding="utf-8") as f:
            f.write(text + row)
    return status


if __name__ == "__main__":
    sys.exit(main())
