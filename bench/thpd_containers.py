#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""thpd's steady-state CPU with N containers it must identify (issue 40's goal: 2% of one core at 200).

    bench/thpd_containers.py --thpd BUILD/tools/thpd [--containers 200] [--seconds 60] [--runs 2]

As root, on a machine with a cgroup v2 hierarchy (/sys/fs/cgroup or
/sys/fs/cgroup/unified).  Makes N CRI-O containers without a runtime: a
cgroup kubepods.slice/kubepods-besteffort.slice/crio-ID.scope each with a
`sleep` in it, and CRI-O's record of each (config.json under a private root
that thpd is pointed at with THPD_TEST_CONTAINER_ROOT: pod namespace, pod
name, container name, labels as CRI-O embeds them, 30 mounts, an annotation
libthp.io/thp-policy: never).  Two rules match them by identity: one by pod
namespace and label (huge), one by pod namespace with the policy from the
annotation (never, reported).  Then, alternating, thpd with the sleepers in
their containers' cgroups and thpd with the same sleepers moved to one plain
cgroup (no container to identify): thpd's CPU time (from its status) over
SECONDS after a 5 s start, as a share of one core.
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from thpd_bench import wait_first_pass, window  # noqa: E402  (thpd over its socket)

SLICE = "kubepods.slice/kubepods-besteffort.slice"


def cgroup2_root():
    for path in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        if os.path.exists(os.path.join(path, "cgroup.procs")) and \
           os.path.exists(os.path.join(path, "cgroup.subtree_control")):
            return path
    sys.exit("no cgroup v2 hierarchy")


def crio_record(i):
    mounts = ",".join(json.dumps({"destination": f"/m{k}", "type": "bind",
                                  "source": f"/var/lib/x/{k}", "options": ["rbind", "ro"]})
                      for k in range(30))
    ann = {"io.kubernetes.pod.namespace": f"ns{i % 10}",
           "io.kubernetes.pod.name": f"pod-{i}",
           "io.kubernetes.container.name": "c",
           "io.kubernetes.cri-o.Labels": json.dumps({"app": f"a{i}"}),
           "libthp.io/thp-policy": "never"}
    return ('{"ociVersion":"1.0.2","process":{"args":["/bin/app"],"env":["PATH=/usr/bin"]},'
            f'"mounts":[{mounts}],"annotations":{json.dumps(ann)}}}')


def make_containers(n, root, cg):
    sleepers, dirs = [], []
    for i in range(n):
        cid = "%064x" % (0xbe9c000 + i)
        rec = os.path.join(root, "run/containers/storage/overlay-containers", cid, "userdata")
        os.makedirs(rec)
        with open(os.path.join(rec, "config.json"), "w") as f:
            f.write(crio_record(i))
        d = os.path.join(cg, SLICE, f"crio-{cid}.scope")
        os.makedirs(d)
        dirs.append(d)
        p = subprocess.Popen(["sleep", "3600"])
        with open(os.path.join(d, "cgroup.procs"), "w") as f:
            f.write(str(p.pid))
        sleepers.append(p)
    return sleepers, dirs


def place(sleepers, dirs, plain):
    """Each sleeper into its container's cgroup, or all of them into the plain one."""
    for i, p in enumerate(sleepers):
        with open(os.path.join(plain if plain else dirs[i], "cgroup.procs"), "w") as f:
            f.write(str(p.pid))


def remove_containers(sleepers, dirs, cg):
    for p in sleepers:
        p.kill()
        p.wait()
    for d in dirs:
        for _ in range(50):
            try:
                os.rmdir(d)
                break
            except OSError:
                time.sleep(0.1)
    for d in (os.path.join(cg, SLICE), os.path.join(cg, "kubepods.slice"),
              os.path.join(cg, "thpd-bench-plain")):
        try:
            os.rmdir(d)
        except OSError:
            pass


def run_thpd(args, tmp, root):
    conf = os.path.join(tmp, "thpd.conf")
    with open(conf, "w") as f:
        f.write("[rule cache]\npod_namespace = ns1\nlabel = app=a1*\npolicy = huge\n\n"
                "[rule pods]\npod_namespace = ns*\npolicy_from_annotation = yes\n"
                "enforce = report\n")
    sock = os.path.join(tmp, "thpd.sock")
    env = dict(os.environ, THPD_TEST_CONTAINER_ROOT=root)
    d = subprocess.Popen([args.thpd, "--config", conf, "--config-dir", os.path.join(tmp, "none"),
                          "--socket", sock, "--interval", "1000"],
                         env=env, stderr=subprocess.DEVNULL)
    try:
        wait_first_pass(sock)
        time.sleep(5)
        s0, s1, wall = window(sock, args.seconds)
        cpu = s1["daemon"]["cpu_seconds"] - s0["daemon"]["cpu_seconds"]
        matched = sum(r.get("processes", 0) for r in s1["rules"])
        return cpu / wall * 100, matched
    finally:
        d.terminate()
        d.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--thpd", required=True)
    ap.add_argument("--containers", type=int, default=200)
    ap.add_argument("--seconds", type=int, default=60)
    ap.add_argument("--runs", type=int, default=2)
    args = ap.parse_args()
    if os.geteuid():
        sys.exit("needs root: it makes cgroups")
    cg = cgroup2_root()
    tmp = tempfile.mkdtemp(prefix="thpd-ctr-bench-")
    root = os.path.join(tmp, "root")
    plain = os.path.join(cg, "thpd-bench-plain")
    sleepers, dirs = [], []
    results = {"containers": [], "none": []}
    try:
        sleepers, dirs = make_containers(args.containers, root, cg)
        os.makedirs(plain)
        for r in range(args.runs):
            for what in (("containers", "none") if r % 2 == 0 else ("none", "containers")):
                place(sleepers, dirs, None if what == "containers" else plain)
                share, matched = run_thpd(args, tmp, root)
                want = args.containers if what == "containers" else 0
                if matched != want:
                    sys.exit(f"{what}: {matched} processes matched a rule, not {want}")
                results[what].append(share)
                print(f"run {r + 1}, {what}: {share:.2f}% of one core, {matched} processes matched",
                      flush=True)
    finally:
        remove_containers(sleepers, dirs, cg)
        shutil.rmtree(tmp, ignore_errors=True)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    for what, v in results.items():
        label = f"{args.containers} containers" if what == "containers" else "no container"
        print(f"thpd, {label}: median {statistics.median(v):.2f}% of one core "
              f"(min {min(v):.2f} .. max {max(v):.2f}, {len(v)} runs of {args.seconds} s)")
    print(f"load average at the end: {' '.join(load)}")


if __name__ == "__main__":
    main()
