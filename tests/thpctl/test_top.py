#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""thpctl top against the kernel's own figures, and its live view in tmux.

    test_top.py THPCTL SPARSE_TOUCH

- --once --json: every listed process's Anonymous and AnonHugePages agree
  with its /proc/PID/smaps_rollup read just before and just after, within
  1% (a process whose figures moved more than that between those two
  reads is left out: it has no one value to agree with);
  a process started under "thpctl run --policy never" is listed with
  policy never from its own prctl (THP_enabled: 0), one under --policy
  huge with the huge bytes its smaps shows, policy huge from the agent
  or the preload; a process with huge pages in a range it advised itself
  (MADV_HUGEPAGE) has source advice; one under --policy nohuge is listed
  as "system or nohuge" (policy null, both candidates) where the kernel
  has PR_THP_DISABLE_EXCEPT_ADVISED, which /proc does not show for
  another process; --cgroup selects by cgroup v2 path.
- lines: with stdout not a terminal, -n 2 prints two tables and no escape.
- live: in a tmux pane, the table shows the workloads; "/" + a name +
  Enter filters to them, "p" sorts by pid, "q" quits with status 0.
- bad command lines exit 2.
"""
import json
import os
import shutil
import subprocess
import sys
import time

THPCTL, SPARSE = sys.argv[1:3]
CI = os.environ.get("CI") == "true"
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg)


def rollup(pid):
    out = {}
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                k, _, v = line.partition(":")
                if v.strip().endswith("kB"):
                    out[k] = int(v.split()[0]) * 1024
    except OSError:
        return None
    return out


def pids_now():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def start(policy, tag):
    # -w: stays 10 minutes; the test kills it.  The tag (size) names it.
    return subprocess.Popen([THPCTL, "run", "--policy", policy, "--", SPARSE, "-s", tag,
                             "-t", "4", "-w", "600000"], stdout=subprocess.DEVNULL)


class Workload:
    """sparse_touch under thpctl run: thpctl execs it, or (--policy huge as
    root) stays as its collapse agent, its parent."""

    def __init__(self, policy, size):
        self.proc = start(policy, str(size))
        self.size = size << 20
        self.pid = None

    def find(self):
        pid = self.proc.pid
        try:
            with open(f"/proc/{pid}/comm") as f:
                if f.read().strip() == "sparse_touch":
                    return pid
            with open(f"/proc/{pid}/task/{pid}/children") as f:
                kids = [int(k) for k in f.read().split()]
            return kids[0] if kids else None
        except OSError:
            return None

    def wait_touched(self):
        """Until its memory is touched and its huge bytes hold still for 0.5 s
        (the agent collapses it after the touch): a snapshot then has one
        value to agree with."""
        deadline = time.monotonic() + 60
        last = None
        while time.monotonic() < deadline:
            self.pid = self.pid or self.find()
            r = rollup(self.pid) if self.pid else None
            if r and r.get("Anonymous", 0) >= self.size:
                if last is not None and r.get("AnonHugePages", 0) == last:
                    return True
                last = r.get("AnonHugePages", 0)
                time.sleep(0.5)
                continue
            time.sleep(0.1)
        return False


def within(value, a, b):
    lo, hi = min(a, b), max(a, b)
    return lo - lo // 100 - 4096 <= value <= hi + hi // 100 + 4096


def once_json(workers):
    before = {p: rollup(p) for p in pids_now()}
    r = subprocess.run([THPCTL, "top", "--json"], stdout=subprocess.PIPE, text=True, timeout=120)
    after = {p: rollup(p) for p in pids_now()}
    check(r.returncode == 0, f"top --json exit {r.returncode}")
    doc = json.loads(r.stdout)
    check(doc["version"] == 1 and doc["command"] == "top", "document header")
    listed = {p["pid"]: p for p in doc["processes"]}
    checked = 0
    checked_pids = set()
    never, huge = workers
    for pid, p in listed.items():
        b, a = before.get(pid), after.get(pid)
        if not b or not a:
            continue  # started or ended around the snapshot
        if any(not within(b.get(k, 0), a.get(k, 0), a.get(k, 0))
               for k in ("Anonymous", "AnonHugePages")):
            continue  # changed by more than 1% meanwhile: nothing to compare to
        for key, field in (("Anonymous", "anon_bytes"), ("AnonHugePages", "anon_huge_bytes")):
            check(within(p[field], b.get(key, 0), a.get(key, 0)),
                  f"pid {pid} ({p['comm']}): {field} {p[field]} outside smaps_rollup's "
                  f"{b.get(key, 0)} .. {a.get(key, 0)} (1%)")
        checked += 1
        checked_pids.add(pid)
    check(checked >= 3 and never.pid in checked_pids and huge.pid in checked_pids,
          f"only {checked} processes compared ({sorted(checked_pids)})")
    n, h = listed.get(never.pid), listed.get(huge.pid)
    check(n is not None and h is not None, "a workload is not listed")
    if n:
        check(n["policy"] == "never" and n["source"] == "prctl" and n["thp_disabled"] is True,
              f"--policy never listed as {n['policy']}/{n['source']}/{n['thp_disabled']}")
        check(n["anon_huge_bytes"] == 0, "--policy never holds huge pages")
    if h:
        check(h["anon_huge_bytes"] >= 16 << 20,
              f"--policy huge: {h['anon_huge_bytes']} huge bytes listed")
        check(h["thp_disabled"] is False, "--policy huge listed as disabled")
        check(h["policy"] == "huge" and h["source"] in ("agent", "preload"),
              f"--policy huge listed as {h['policy']}/{h['source']}")
    check(doc["anon_huge_bytes"] == sum(p["anon_huge_bytes"] for p in doc["processes"]),
          "total is not the sum")


ADVISER = """
import mmap, os, sys, time
m = mmap.mmap(-1, 16 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
m.madvise(mmap.MADV_HUGEPAGE)
for i in range(0, 16 << 20, 4096):
    m[i] = 1
print("ready", flush=True)
sys.stdin.read()
"""


def top_entry(pid):
    r = subprocess.run([THPCTL, "top", "--json"], stdout=subprocess.PIPE, text=True, timeout=120)
    check(r.returncode == 0, f"top --json exit {r.returncode}")
    return next((p for p in json.loads(r.stdout)["processes"] if p["pid"] == pid), None)


def origins():
    """Where the policy comes from: the process's own advice; nohuge, hidden or not."""
    adv = subprocess.Popen([sys.executable, "-c", ADVISER], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
    try:
        check(adv.stdout.readline().strip() == "ready", "the adviser did not start")
        huge = (rollup(adv.pid) or {}).get("AnonHugePages", 0)
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            mode = f.read().split("[")[1].split("]")[0]
        if huge:
            p = top_entry(adv.pid)
            check(p is not None and p["source"] == "advice",
                  f"a process with {huge} huge bytes it advised listed as {p and p['source']}")
        else:
            check(mode == "never", f"16 MiB advised and touched, no huge page in mode {mode}")
            print("THP mode never: no huge page to credit to advice")
    finally:
        adv.stdin.close()
        adv.wait()
    probe = json.loads(subprocess.run([THPCTL, "probe", "--json"], stdout=subprocess.PIPE,
                                      text=True, timeout=60).stdout)
    hidden = probe["features"]["thp_disable_except_advised"] is True
    policy = "nohuge" if hidden else "system"
    sl = subprocess.Popen([THPCTL, "run", "--policy", policy, "--", "sleep", "600"])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{sl.pid}/comm") as f:
                    if f.read().strip() == "sleep":
                        break
            except OSError:
                pass
            time.sleep(0.05)
        p = top_entry(sl.pid)
        want = (None, ["system", "nohuge"]) if hidden else ("system", ["system"])
        check(p is not None and (p["policy"], p["policy_candidates"]) == want,
              f"--policy {policy} listed as {p and (p['policy'], p['policy_candidates'])}, "
              f"expected {want}")
    finally:
        sl.terminate()
        sl.wait()


def cgroup_filter():
    with open("/proc/self/cgroup") as f:
        mine = next((l.strip()[3:] for l in f if l.startswith("0::")), None)
    if mine is None:
        check(not CI, "no cgroup v2 line in /proc/self/cgroup")
        return
    r = subprocess.run([THPCTL, "top", "--json", "--cgroup", mine], stdout=subprocess.PIPE,
                       text=True, timeout=60)
    pids = {p["pid"] for p in json.loads(r.stdout)["processes"]}
    check(os.getpid() in pids, f"--cgroup {mine} lacks this test ({os.getpid()})")
    r = subprocess.run([THPCTL, "top", "--json", "--cgroup", "/no/such/cgroup/libthp"],
                       stdout=subprocess.PIPE, text=True, timeout=60)
    check(json.loads(r.stdout)["processes"] == [], "--cgroup of nothing lists processes")


def lines():
    r = subprocess.run([THPCTL, "top", "-n", "2", "-d", "0.2", "--sort", "anon"],
                       stdout=subprocess.PIPE, text=True, timeout=60)
    check(r.returncode == 0, f"line mode exit {r.returncode}")
    check(r.stdout.count("thpctl top:") == 2, "line mode: not two tables")
    check("\033" not in r.stdout, "line mode writes escape sequences")
    check("sorted by anon" in r.stdout, "--sort anon ignored")


def live(workers):
    tmux = shutil.which("tmux")
    if not tmux:
        check(not CI, "tmux is not installed (.ci/deps installs it)")
        print("SKIP live view: no tmux")
        return
    sock = f"libthp-top-{os.getpid()}"
    t = [tmux, "-L", sock, "-f", "/dev/null"]

    def capture():
        return subprocess.run(t + ["capture-pane", "-p", "-t", "top"], stdout=subprocess.PIPE,
                              text=True).stdout

    def wait_for(text, what):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            screen = capture()
            if text(screen):
                return screen
            time.sleep(0.2)
        check(False, f"live view: {what}; screen:\n{capture()}")
        return ""

    status_file = f"/tmp/libthp-top-status-{os.getpid()}"
    subprocess.run(t + ["new-session", "-d", "-s", "top", "-x", "150", "-y", "40",
                        f"{THPCTL} top -d 0.5; echo $? > {status_file}"], check=True)
    try:
        subprocess.run(t + ["set-option", "-t", "top", "remain-on-exit", "on"], check=True)
        wait_for(lambda s: "thpctl top:" in s and "keys:" in s, "no table")
        subprocess.run(t + ["send-keys", "-t", "top", "/", "s", "p", "a", "r", "s", "e",
                            "Enter"], check=True)
        screen = wait_for(lambda s: 'name contains "sparse"' in s, "filter not applied")
        rows = [l for l in screen.splitlines() if l.strip()[:1].isdigit()]
        check(rows and all("sparse_touch" in l for l in rows),
              f"filtered rows: {rows}")
        check(any(str(w.pid) in screen for w in workers), "workloads not shown")
        subprocess.run(t + ["send-keys", "-t", "top", "p"], check=True)
        wait_for(lambda s: "sorted by pid" in s, "p did not sort by pid")
        subprocess.run(t + ["send-keys", "-t", "top", "q"], check=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not os.path.exists(status_file):
            time.sleep(0.2)
        try:
            with open(status_file) as f:
                status = f.read().strip()
        except OSError:
            status = "(still running)"
        check(status == "0", f"q: thpctl top exit status {status}, expected 0")
    finally:
        subprocess.run(t + ["kill-server"], stderr=subprocess.DEVNULL)
        if os.path.exists(status_file):
            os.unlink(status_file)


def errors():
    for args in (["--sort", "bogus"], ["--cgroup", "relative"], ["extra"], ["-n", "0"],
                 ["--delay", "0"], ["--once", "--once"]):
        r = subprocess.run([THPCTL, "top"] + args, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=30)
        check(r.returncode == 2 and "thpctl: top:" in r.stderr,
              f"top {args}: exit {r.returncode}, {r.stderr!r}")


workers = (Workload("never", 64), Workload("huge", 65))
try:
    for w in workers:
        check(w.wait_touched(), f"workload {w.proc.pid} ({w.pid}) never touched its memory")
    once_json(workers)
    origins()
    cgroup_filter()
    lines()
    live(workers)
    errors()
finally:
    for w in workers:
        w.proc.terminate()
        w.proc.wait()
if failures:
    print(f"{len(failures)} check(s) failed")
    sys.exit(1)
print("thpctl top: all checks passed")
