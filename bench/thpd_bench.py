#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""thpd's cost: time and CPU to make touched memory huge, and its CPU and RSS in steady state."""
import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time


def query(sock, word):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock)
    s.sendall(word.encode() + b"\n")
    out = b""
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        out += b
    s.close()
    return out.decode()


def status(sock):
    return json.loads(query(sock, "json"))


def huge_of(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return int(re.search(r"AnonHugePages:\s+(\d+)", f.read()).group(1)) << 10


def start_workloads(exe, n, mib, nmaps):
    ps = []
    for _ in range(n):
        p = subprocess.Popen([exe, str(mib), str(nmaps)], stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
        ps.append(p)
    for p in ps:
        assert p.stdout.readline().startswith("ready")
    return ps


def start_daemon(args, tmp, exe, interval):
    conf = os.path.join(tmp, "thpd.conf")
    with open(conf, "w") as f:
        f.write(f"[daemon]\ncatchup_budget = {args.catchup}%\n\n"
                f"[rule bench]\nexe = {exe}\npolicy = huge\nmax_ms_per_pass = {args.max_ms}\n")
    sock = os.path.join(tmp, "thpd.sock")
    d = subprocess.Popen([args.thpd, "--config", conf, "--config-dir", os.path.join(tmp, "none"),
                          "--socket", sock, "--interval", str(interval)],
                         stderr=subprocess.DEVNULL)
    wait_first_pass(sock)
    return d, sock


def wait_first_pass(sock, timeout=30):
    """Until the thpd on @sock has made a pass; exits when none within @timeout s."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            if status(sock)["daemon"]["passes"] >= 1:
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    raise SystemExit("thpd did not start")


def window(sock, seconds):
    """thpd's status before and after @seconds, and the wall time between them."""
    st0 = status(sock)
    t0 = time.monotonic()
    time.sleep(seconds)
    st1 = status(sock)
    return st0, st1, time.monotonic() - t0


def stop(ps):
    for p in ps:
        p.kill()
        p.wait()


def catchup(args, tmp, exe):
    ws = start_workloads(exe, 1, args.gib << 10, 0)
    t0 = time.monotonic()
    d, sock = start_daemon(args, tmp, exe, 1000)
    target = 0.9 * (args.gib << 30)
    while huge_of(ws[0].pid) < target and time.monotonic() - t0 < 120:
        time.sleep(0.05)
    took = time.monotonic() - t0
    st = status(sock)
    print(f"catch-up: {args.gib} GiB touched, max_ms_per_pass {args.max_ms}, catchup_budget {args.catchup}%: "
          f"90% huge after {took:.2f} s, "
          f"thpd CPU {st['daemon']['cpu_seconds']:.3f} s, {st['daemon']['passes']} passes")
    d.terminate()
    d.wait()
    stop(ws)


def steady(args, tmp, exe):
    ws = start_workloads(exe, args.procs, args.mib, args.maps)
    d, sock = start_daemon(args, tmp, exe, 1000)
    # Until every process is collapsed and the catch-up budget is over.
    prev = -1
    while True:
        time.sleep(3)
        c = status(sock)["rules"][0]["collapses"]
        if c == prev:
            break
        prev = c
    st0, st1, wall = window(sock, args.seconds)
    cpu = st1["daemon"]["cpu_seconds"] - st0["daemon"]["cpu_seconds"]
    passes = st1["daemon"]["passes"] - st0["daemon"]["passes"]
    with open(f"/proc/{d.pid}/status") as f:
        hwm = int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))
    nprocs = st1["rules"][0]["processes"]
    print(f"steady: {nprocs} processes x ({args.mib} MiB + {args.maps} mappings): "
          f"{cpu / wall * 100:.2f}% of one core over {wall:.0f} s ({passes} passes, "
          f"{cpu / max(passes, 1) * 1000:.2f} ms per pass), RSS {st1['daemon']['rss_bytes'] >> 10} kB, "
          f"peak {hwm} kB")
    d.terminate()
    d.wait()
    stop(ws)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--thpd", required=True)
    ap.add_argument("--workload", required=True)
    ap.add_argument("--procs", type=int, default=200)
    ap.add_argument("--maps", type=int, default=250)
    ap.add_argument("--mib", type=int, default=4)
    ap.add_argument("--gib", type=int, default=1)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--max-ms", type=int, default=250, help="max_ms_per_pass of the rule (the daemon's default)")
    ap.add_argument("--catchup", type=int, default=25, help="catchup_budget, percent of one core")
    ap.add_argument("what", nargs="*", default=["catchup", "steady"])
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="thpd-bench-")
    exe = os.path.join(tmp, "thpd-bench-workload")
    shutil.copy(args.workload, exe)
    try:
        for w in args.what:
            {"catchup": catchup, "steady": steady}[w](args, tmp, exe)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
