#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""thpctl top's cost: CPU time per refresh against the number of processes.

    bench/top_cost.py THPCTL [THPCTL...] [--processes N] [--repeats R] [--settle S]

Starts sleepers (each with a little anonymous memory, as a real process
has: 4 MiB touched, so smaps_rollup is read for it) until the machine has
N processes with memory, waits S seconds for their start to die down, then
runs `thpctl top -n 10 -d 0.1` R times per THPCTL with its output to
/dev/null, the binaries interleaved (order rotated each round), and prints
per binary the CPU time per refresh (median and range, from the child's
rusage), what that is of one core at the default 1 s refresh, and with
two or more binaries the ratio of each to the first per round.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

SLEEPER = ("import mmap, time\n"
           "m = mmap.mmap(-1, 4 << 20)\n"
           "for i in range(0, 4 << 20, 4096): m[i] = 1\n"
           "print('ready', flush=True)\n"
           "time.sleep(3600)\n")


def with_memory():
    n = 0
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/status") as f:
                    if "\nVmRSS:" in f.read():
                        n += 1
            except OSError:
                pass
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("thpctl", nargs="+")
    ap.add_argument("--processes", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--settle", type=float, default=20)
    a = ap.parse_args()
    sleepers = []
    try:
        while with_memory() < a.processes:
            for _ in range(min(50, a.processes - with_memory())):
                p = subprocess.Popen([sys.executable, "-c", SLEEPER], stdout=subprocess.PIPE,
                                     text=True)
                sleepers.append(p)
            for p in sleepers:
                if p.stdout and not p.stdout.closed:
                    p.stdout.readline()
                    p.stdout.close()
        time.sleep(a.settle)
        n = with_memory()
        per_refresh = {t: [] for t in a.thpctl}
        for r in range(a.repeats):
            k = r % len(a.thpctl)
            for t in a.thpctl[k:] + a.thpctl[:k]:
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                subprocess.run([t, "top", "-n", "10", "-d", "0.1"], stdout=subprocess.DEVNULL,
                               check=True)
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
                per_refresh[t].append(cpu / 10 * 1000)
        with open("/proc/loadavg") as f:
            load = " ".join(f.read().split()[:3])
        print(f"processes with memory: {n}; load average after the runs: {load}")
        base = a.thpctl[0]
        for t, v in per_refresh.items():
            med = statistics.median(v)
            print(f"{t}: thpctl top CPU per refresh: median {med:.1f} ms "
                  f"(min {min(v):.1f} .. max {max(v):.1f}, {a.repeats} runs "
                  f"of 10 refreshes): {med / 10:.2f}% of one core at 1 s; "
                  f"per process: {med * 1000 / n:.0f} us")
            if t != base:
                ratios = [x / y for x, y in zip(v, per_refresh[base])]
                print(f"  against {base}: {statistics.median(ratios):.3f}x "
                      f"({min(ratios):.3f} .. {max(ratios):.3f}) per round")
    finally:
        for p in sleepers:
            p.kill()
        for p in sleepers:
            p.wait()


if __name__ == "__main__":
    main()
