#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""thp-oci-hook against real processes, with the state a runtime would send.

    test_oci_hook.py --hook PATH --hooks-json PATH [--linkage static-pie|dynamic] CASE

Each case starts a child that stands for a container's init process: it
waits on a pipe (as runc init and crun's child wait for "start"), then
execs the "workload", a python3 that prints what prctl(PR_GET_THP_DISABLE)
and /proc/self/status say and forks a grandchild that says the same.  The
hook gets an OCI state on stdin, as podman, CRI-O and runc give it, and
the checks read what the kernel shows for the workload after exec.
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

CI = os.environ.get("CI") == "true"
ANNOTATION = "libthp.io/thp-policy"
PR_GET_THP_DISABLE = 42
# What the workload reports: its own prctl answer and status line, then its child's.
WORKLOAD = r"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
def report(who):
    thp = [l.split()[1] for l in open("/proc/self/status") if l.startswith("THP_enabled:")]
    print(who, libc.prctl(%d, 0, 0, 0, 0), thp[0] if thp else "-", flush=True)
report("workload")
pid = os.fork()
if pid == 0:
    report("child")
    os._exit(0)
os.waitpid(pid, 0)
""" % PR_GET_THP_DISABLE

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


class Init:
    """A process that waits before it execs the workload, as a container's init does."""

    def __init__(self):
        self.go_r, self.go_w = os.pipe()
        self.proc = subprocess.Popen(
            [sys.executable, "-c",
             "import os, sys; os.read(%d, 1); os.execv(sys.executable, [sys.executable, '-c', %r])"
             % (self.go_r, WORKLOAD)],
            pass_fds=(self.go_r,), stdout=subprocess.PIPE, text=True)
        os.close(self.go_r)
        self.pid = self.proc.pid
        # Wait until it blocks in read() of the pipe, as a runtime's init waits at createRuntime.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not self.waiting():
            time.sleep(0.01)

    def waiting(self):
        try:
            with open("/proc/%d/syscall" % self.pid) as f:
                fields = f.read().split()
        except OSError:
            return False
        return len(fields) > 1 and fields[1] == hex(self.go_r)

    def status_thp(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("THP_enabled:"):
                    return line.split()[1]
        return None

    def start(self):
        """Let it exec the workload; the workload's and its child's reports."""
        os.write(self.go_w, b"x")
        os.close(self.go_w)
        out, _ = self.proc.communicate(timeout=30)
        return dict((w, (int(a), b)) for w, a, b in (l.split() for l in out.splitlines()))


def state(pid, policy=None, **extra):
    doc = {"ociVersion": "1.0.2", "id": "c0ffee", "status": "created", "pid": pid,
           "bundle": "/run/containers/c0ffee/userdata"}
    if policy is not None:
        doc["annotations"] = {ANNOTATION: policy, "io.kubernetes.pod.name": "db"}
    doc.update(extra)
    return json.dumps(doc)


def run_hook(args, stdin, user=None):
    if isinstance(stdin, str):
        stdin = stdin.encode()
    p = subprocess.run([args.hook], input=stdin, capture_output=True, timeout=60, user=user)
    return p.returncode, p.stderr.decode(errors="replace")


# prctl(PR_GET_THP_DISABLE): 0 system, 1 never, 3 nohuge (PR_THP_DISABLE_EXCEPT_ADVISED).
EXPECT = {"never": (1, "0"), "nohuge": (3, "1"), "system": (0, "1")}


def case_policies(args):
    """Each policy, set on the waiting init, holds in the exec'd workload and its child."""
    for annotation in ("never", "nohuge", "system", "never,required", "nohuge,required"):
        policy = annotation.split(",")[0]
        init = Init()
        if policy == "system":
            # Start from never, so that system is seen to clear it.
            rc, err = run_hook(args, state(init.pid, "never"))
            check(rc == 0 and init.status_thp() == "0", "system: init set to never first")
        rc, err = run_hook(args, state(init.pid, annotation))
        check(rc == 0 and err == "", "%s: hook exits 0 and quiet (rc %d, %r)" % (annotation, rc, err))
        check(init.status_thp() == EXPECT[policy][1],
              "%s: init's THP_enabled %s before exec" % (annotation, init.status_thp()))
        seen = init.start()
        for who in ("workload", "child"):
            check(seen.get(who) == EXPECT[policy],
                  "%s: %s after exec: prctl, THP_enabled %s (expected %s)"
                  % (annotation, who, seen.get(who), EXPECT[policy]))


def case_soft(args):
    """What the hook cannot apply: exit 0, the init untouched, a reason on stderr."""
    big = b'{"pid": 1, "annotations": {"' + ANNOTATION.encode() + b'": "never"}, "x": "' \
        + b"a" * (2 << 20) + b'"}'
    rows = [
        # name, stdin (pid filled in), expected stderr
        ("huge stdin", big, "larger than"),
        ("bad JSON", '{"pid": %d, "annotations": {', "not a JSON object"),
        ("JSON array", '[%d]', "not a JSON object"),
        ("empty stdin", "", "not a JSON object"),
        ("deep JSON", '{"pid": %d, "a": ' + "[" * 10000 + "]" * 10000 + "}", "not a JSON object"),
        ("missing pid", json.dumps({"annotations": {ANNOTATION: "never"}}), "no valid \"pid\""),
        ("pid a string", '{"pid": "%d", "annotations": {"' + ANNOTATION + '": "never"}}',
         "no valid \"pid\""),
        ("pid negative", state(-1, "never"), "no valid \"pid\""),
        ("pid fraction", '{"pid": %d.5, "annotations": {"' + ANNOTATION + '": "never"}}',
         "no valid \"pid\""),
        ("pid too large", state(2 ** 40, "never"), "no valid \"pid\""),
        ("pid gone", None, "no such process"),
        ("bad policy", state("PID", "always"), "is not never, nohuge"),
        ("policy not a string", '{"pid": %d, "annotations": {"' + ANNOTATION + '": 3}}',
         "is not never, nohuge"),
        ("bad suffix", state("PID", "never,requested"), "is not never, nohuge"),
    ]
    for name, text, expect in rows:
        init = Init()
        if text is None:
            gone = subprocess.Popen(["true"])
            gone.wait()
            text = state(gone.pid, "never")
        elif isinstance(text, str):
            text = text.replace('"PID"', str(init.pid))
            if "%d" in text:
                text = text % init.pid
        rc, err = run_hook(args, text)
        check(rc == 0, "%s: exit status 0 (got %d)" % (name, rc))
        check(expect in err, "%s: stderr says %r: %r" % (name, expect, err.strip()[:200]))
        check(init.status_thp() == "1", "%s: init untouched" % name)
        seen = init.start()
        check(seen.get("workload") == (0, "1"), "%s: workload untouched %s" % (name, seen))
    # huge and no annotation: nothing to do, nothing on stderr (syslog only).
    for name, text in (("huge", state("PID", "huge")), ("no annotation", state("PID"))):
        init = Init()
        rc, err = run_hook(args, text.replace('"PID"', str(init.pid)))
        check(rc == 0 and err == "", "%s: exit 0 and quiet (rc %d, %r)" % (name, rc, err))
        check(init.start().get("workload") == (0, "1"), "%s: workload untouched" % name)


def case_required(args):
    """With ",required", a policy that cannot be applied fails the start (exit 1)."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    for name, text in (("pid gone", state(gone.pid, "never,required")),
                       ("missing pid", json.dumps({"annotations": {ANNOTATION: "nohuge,required"}})),
                       ("bad policy", state(1, "always,required"))):
        rc, err = run_hook(args, text)
        check(rc == 1, "%s: exit status 1 (got %d)" % (name, rc))
        check("container start refused" in err, "%s: says the start is refused: %r"
              % (name, err.strip()[:200]))


def case_other_user(args):
    """Another user's process: refused by ptrace rights; required fails, otherwise not."""
    if os.getuid() != 0:
        # Run by a user, the hook and the target would be that one user's,
        # which ptrace allows: another user's process takes root to make.
        print("SKIP: other_user needs root (the hook runs as nobody against root's process)")
        sys.exit(1 if CI else 77)
    # The hook runs as nobody against a root process; copy it where nobody can read it.
    tmp = tempfile.mkdtemp()
    os.chmod(tmp, 0o755)
    hook = os.path.join(tmp, "thp-oci-hook")
    shutil.copy(args.hook, hook)
    os.chmod(hook, 0o755)
    user = 65534
    try:
        for annotation, want_rc in (("never", 0), ("never,required", 1)):
            init = Init()
            p = subprocess.run([hook], input=state(init.pid, annotation).encode(),
                               capture_output=True, timeout=60, user=user)
            err = p.stderr.decode(errors="replace")
            check(p.returncode == want_rc, "%s as uid %d: exit status %d (got %d)"
                  % (annotation, user, want_rc, p.returncode))
            check("not set on pid %d" % init.pid in err, "%s: says why: %r"
                  % (annotation, err.strip()[:200]))
            check(init.status_thp() == "1", "%s: init untouched" % annotation)
            init.start()
    finally:
        shutil.rmtree(tmp)


def case_hooks_json(args):
    """The hooks.d file: oci-hooks(5) 1.0.0, the built hook's installed path, the right values."""
    with open(args.hooks_json) as f:
        doc = json.load(f)
    check(doc.get("version") == "1.0.0", "version 1.0.0")
    check(doc.get("stages") == ["createRuntime"], "stage createRuntime")
    path = doc.get("hook", {}).get("path", "")
    check(os.path.isabs(path) and path.endswith("/libthp/thp-oci-hook"), "hook path %s" % path)
    check(set(doc) == {"version", "hook", "when", "stages"}, "only the schema's members")
    ann = doc.get("when", {}).get("annotations", {})
    check(len(ann) == 1, "one annotation condition")
    key, value = next(iter(ann.items()))
    check(re.search(key, ANNOTATION) and not re.search(key, "libthp.io/thp-policyx")
          and not re.search(key, "libthpXio/thp-policy"), "key regex %s names the annotation" % key)
    for v in ("never", "nohuge", "system", "never,required", "nohuge,required", "system,required"):
        check(re.search(value, v), "value %r runs the hook" % v)
    for v in ("huge", "huge,required", "", "never,", "Never", "never,required,x", " never"):
        check(not re.search(value, v), "value %r does not run the hook" % v)


def case_linkage(args):
    """Linked as meson chose: static-pie (no interpreter, placed at random) or dynamic."""
    import struct
    with open(args.hook, "rb") as f:
        elf = f.read()
    check(elf[:4] == b"\x7fELF", "an ELF file")
    is64 = elf[4] == 2
    end = "<" if elf[5] == 1 else ">"
    e_type = struct.unpack_from(end + "H", elf, 16)[0]
    if is64:
        phoff, = struct.unpack_from(end + "Q", elf, 32)
        phentsize, phnum = struct.unpack_from(end + "HH", elf, 54)
    else:
        phoff, = struct.unpack_from(end + "I", elf, 28)
        phentsize, phnum = struct.unpack_from(end + "HH", elf, 42)
    types = [struct.unpack_from(end + "I", elf, phoff + i * phentsize)[0] for i in range(phnum)]
    PT_INTERP, ET_DYN = 3, 3
    check(e_type == ET_DYN, "position independent (ET_DYN), so placed at random")
    if args.linkage == "static-pie":
        check(PT_INTERP not in types, "static-pie: no PT_INTERP, ld.so loads nothing")
    else:
        check(PT_INTERP in types, "dynamic: PT_INTERP (a sanitizer build)")


CASES = {"policies": case_policies, "soft": case_soft, "required": case_required,
         "other_user": case_other_user, "hooks_json": case_hooks_json, "linkage": case_linkage}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--hook", required=True)
    ap.add_argument("--hooks-json")
    ap.add_argument("--linkage", choices=("static-pie", "dynamic"), default="dynamic",
                    help="how meson linked the hook")
    ap.add_argument("case", choices=list(CASES))
    args = ap.parse_args()
    if args.case not in ("hooks_json", "linkage"):
        with open("/proc/self/status") as f:
            if "THP_enabled:" not in f.read():
                print("SKIP: /proc/PID/status has no THP_enabled line (Linux < 6.x)")
                return 1 if CI else 77
    CASES[args.case](args)
    print("%s: %d check(s) failed" % (args.case, len(failures)) if failures else "%s: all passed" % args.case)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
