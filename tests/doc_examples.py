#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Every example a user can copy from README.md and the man pages must work.

    doc_examples.py --source DIR --build DIR --library LIBTHP_SO
                    --thpctl PATH [--no-python] [--cflag F]... -- CC...

- every ```c block of README.md and every EXAMPLES section of man/*.3 and
  man/*.7 (as man(1) renders it: what a reader copies, roff escapes
  resolved) is compiled as a complete program with -Wall -Wextra -Werror
  against the built library, then run: it must exit 0;
- every ```python block of README.md runs against the built library (as
  the python suite does: THP_LIBRARY and PYTHONPATH);
- every ```go block of README.md (with --go) is a main package built
  against bindings/go and the built library, offline, and run: it must
  exit 0;
- every ```rust block of README.md (with --cargo) is the main.rs of a
  crate that depends on bindings/rust/libthp by path, built offline
  against the built library and run: it must exit 0;
- every ```yaml block of README.md is a Kubernetes manifest that
  tests/deploy/k8s_validate.py finds valid against the API's schema;
- every thpctl command line of README.md's ```sh blocks and of thpctl(1)'s
  EXAMPLES runs with the build's thpctl, PID placeholders replaced by a
  sleeping child of this script: it must not be refused as a bad command
  line (exit 2, "Try ...") nor die of a signal.  The program `thpctl run`
  starts (a reader's server or database) is replaced by true(1) unless it
  is one of this build's (build/...): what is checked is thpctl.

Nothing here writes the THP sysfs files: the examples touch only their own
processes and this script's child.
"""
import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import textwrap

CI = os.environ.get("CI") == "true"
failures = []
checked = {"c": 0, "python": 0, "go": 0, "rust": 0, "thpctl": 0, "yaml": 0}


def fail(what, why, text=""):
    failures.append(what)
    print("FAIL %s: %s" % (what, why))
    if text:
        print(textwrap.indent(text.rstrip("\n"), "    | "))


def fenced_blocks(path):
    """(language, first line number, text) of every fenced block."""
    blocks, lang, start, lines = [], None, 0, []
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            m = re.match(r"^```(\w*)\s*$", line)
            if m and lang is None:
                lang, start, lines = m.group(1) or "text", no + 1, []
            elif line.startswith("```") and lang is not None:
                blocks.append((lang, start, "".join(lines)))
                lang = None
            elif lang is not None:
                lines.append(line)
    if lang is not None:
        fail(path, "fenced block from line %d is never closed" % start)
    return blocks


def man_examples(page):
    """The code blocks of a page's EXAMPLES section, as man(1) shows them."""
    env = dict(os.environ, LC_ALL="C.UTF-8", MANWIDTH="200")
    env.pop("MAN_KEEP_FORMATTING", None)
    out = subprocess.run(["man", "-l", page], env=env, capture_output=True,
                         text=True, check=False).stdout
    section, in_ex = [], False
    for line in out.split("\n"):
        if re.match(r"^[A-Z]", line):
            in_ex = line.strip() == "EXAMPLES"
            continue
        if in_ex:
            section.append(line)
    # Prose is indented 7 columns, .EX blocks (.in +4n) 11 or more.
    blocks, cur = [], []
    for line in section + [" x"]:
        if line.strip() == "" or line.startswith(" " * 11):
            cur.append(line)
            continue
        text = textwrap.dedent("\n".join(cur)).strip("\n")
        if text:
            blocks.append(text + "\n")
        cur = []
    return blocks


def run(cmd, what, timeout=60, **kw):
    try:
        return subprocess.run(cmd, capture_output=True, text=True,
                              timeout=timeout, check=False, **kw)
    except subprocess.TimeoutExpired:
        fail(what, "did not finish in %d s" % timeout)
        return None


def check_c(what, code, args, tmp):
    checked["c"] += 1
    src = os.path.join(tmp, "example%d.c" % checked["c"])
    exe = src[:-2]
    with open(src, "w", encoding="utf-8") as f:
        f.write(code)
    libdir = os.path.dirname(os.path.abspath(args.library))
    cmd = args.cc + ["-std=gnu11", "-Wall", "-Wextra", "-Werror"] + args.cflag + [
        "-I", os.path.join(args.source, "include"), "-o", exe, src,
        args.library, "-Wl,-rpath," + libdir]
    r = run(cmd, what + " (compile)", timeout=120)
    if r is None:
        return
    if r.returncode != 0:
        fail(what, "does not compile as a program (%s)" % " ".join(cmd),
             r.stderr + "\n" + code)
        return
    r = run([exe], what, stdin=subprocess.DEVNULL)
    if r is None:
        return
    if r.returncode != 0:
        fail(what, "exits %d" % r.returncode, r.stdout + r.stderr)
    else:
        print("ok   %s (C program): %s" % (what, r.stdout.strip().split("\n")[-1]))


def check_python(what, code, args, tmp):
    checked["python"] += 1
    src = os.path.join(tmp, "example%d.py" % checked["python"])
    with open(src, "w", encoding="utf-8") as f:
        f.write(code)
    env = dict(os.environ, THP_LIBRARY=os.path.abspath(args.library),
               PYTHONPATH=os.path.join(args.source, "bindings", "python"))
    r = run([sys.executable, src], what, env=env, stdin=subprocess.DEVNULL)
    if r is None:
        return
    if r.returncode != 0:
        fail(what, "exits %d" % r.returncode, r.stdout + r.stderr + "\n" + code)
    else:
        print("ok   %s (Python): %s" % (what, r.stdout.strip().split("\n")[-1]))


def check_go(what, code, args, tmp):
    """A ```go block: a main package built with the build tree's binding
    (a replace directive: nothing fetched, GOPROXY=off) and run."""
    checked["go"] += 1
    d = os.path.join(tmp, "go%d" % checked["go"])
    os.makedirs(d)
    with open(os.path.join(d, "main.go"), "w", encoding="utf-8") as f:
        f.write(code)
    with open(os.path.join(d, "go.mod"), "w", encoding="utf-8") as f:
        f.write("module example\n\ngo 1.19\n\n"
                "require github.com/libthp/libthp/bindings/go v0.0.0\n\n"
                "replace github.com/libthp/libthp/bindings/go => %s\n"
                % os.path.join(os.path.abspath(args.source), "bindings", "go"))
    gobuild = os.path.join(os.path.abspath(args.build), "bindings", "go")
    env = dict(os.environ, PKG_CONFIG_PATH=gobuild, GOPROXY="off", GOFLAGS="-mod=mod",
               GOTOOLCHAIN="local", GOWORK="off", GOCACHE=os.path.join(gobuild, "gocache"),
               GOPATH=os.path.join(gobuild, "gopath"), GOTMPDIR=gobuild)
    r = run([args.go, "run", "."], what, timeout=300, env=env, cwd=d,
            stdin=subprocess.DEVNULL)
    if r is None:
        return
    if r.returncode != 0:
        fail(what, "exits %d" % r.returncode, r.stdout + r.stderr + "\n" + code)
    else:
        print("ok   %s (Go): %s" % (what, r.stdout.strip().split("\n")[-1]))


def check_rust(what, code, args, tmp):
    """A ```rust block: the main.rs of a crate using bindings/rust/libthp
    by path (nothing fetched: the binding has no dependency from outside),
    built with the cargo given and its own rustc, and run."""
    checked["rust"] += 1
    d = os.path.join(tmp, "rust%d" % checked["rust"])
    os.makedirs(os.path.join(d, "src"))
    with open(os.path.join(d, "src", "main.rs"), "w", encoding="utf-8") as f:
        f.write(code)
    with open(os.path.join(d, "Cargo.toml"), "w", encoding="utf-8") as f:
        f.write('[package]\nname = "example"\nversion = "0.1.0"\nedition = "2021"\n\n'
                '[dependencies]\nlibthp = { path = "%s" }\n'
                % os.path.join(os.path.abspath(args.source), "bindings", "rust", "libthp"))
    rbuild = os.path.join(os.path.abspath(args.build), "bindings", "rust")
    bindir = os.path.dirname(args.cargo)
    env = dict(os.environ, PKG_CONFIG_PATH=rbuild, CARGO_HOME=os.path.join(rbuild, "cargo-home"),
               CARGO_TARGET_DIR=os.path.join(rbuild, "target-doc"), CARGO_NET_OFFLINE="true",
               RUSTC=os.path.join(bindir, "rustc"), RUSTDOC=os.path.join(bindir, "rustdoc"),
               LD_LIBRARY_PATH=os.path.dirname(os.path.abspath(args.library)))
    r = run([args.cargo, "run", "--offline", "-q"], what, timeout=600, env=env, cwd=d,
            stdin=subprocess.DEVNULL)
    if r is None:
        return
    if r.returncode != 0:
        fail(what, "exits %d" % r.returncode, r.stdout + r.stderr + "\n" + code)
    else:
        print("ok   %s (Rust): %s" % (what, r.stdout.strip().split("\n")[-1]))
def check_yaml(what, text, args):
    """A Kubernetes manifest, against the API's schema (tests/deploy/k8s_validate.py)."""
    sys.path.insert(0, os.path.join(args.source, "tests", "deploy"))
    try:
        import k8s_validate
    except ImportError as e:
        if CI:
            fail(what, "cannot check the manifest: %s (python3-kubernetes)" % e)
        else:
            print("%s: not checked, %s (Debian: python3-kubernetes)" % (what, e))
        return
    checked["yaml"] += 1
    errors = k8s_validate.check_text(text, what)
    if errors:
        fail(what, "not a valid Kubernetes manifest", "\n".join(errors))


def thpctl_lines(text):
    """The thpctl command lines in a shell block (prompts, ExecStart= and
    comments removed)."""
    for line in re.sub(r"\\\n\s*", " ", text).split("\n"):
        line = re.sub(r"^\s*\$\s+", "", line)
        line = re.sub(r"^ExecStart=", "", line)
        line = re.sub(r"\s+#.*$", "", line).strip()
        # Other unit settings (ExecPaths=/usr/bin/thpctl ...) name thpctl
        # but are no command line.
        if not line or line.startswith("#") or re.match(r"^[A-Z]\w*=", line):
            continue
        if os.path.basename(line.split()[0]) == "thpctl":
            yield line


def check_thpctl(what, line, args, pid):
    checked["thpctl"] += 1
    words = shlex.split(line.split("|")[0])
    pipe = line[len(line.split("|")[0]):]
    out = [args.thpctl]
    short = None
    if "--watch" in words:
        # --watch lasts as long as its target: give it one that exits soon.
        short = subprocess.Popen(["sleep", "2"])
        pid = short.pid
    if len(words) > 1 and words[1] in ("run", "compare") and "--" in words:
        cut = words.index("--") + 1
        if cut < len(words) and not words[cut].startswith("build/"):
            words = words[:cut] + ["true"]
    if len(words) > 1 and words[1] == "compare":
        # The server is "true" now: a load and a readiness check that need
        # nothing, and a metric the load prints, keep the options checked.
        for i in range(2, len(words) - 1):
            if words[i - 1] == "--ready":
                words[i] = "true"
            elif words[i - 1] == "--load":
                words[i] = "echo 'GET: 1000.5 requests per second'"
            elif words[i - 1] == "--metric" and "--load" not in words:
                words[i] = "."
            elif words[i - 1] == "--svg":
                words[i] = os.path.join(tempfile.gettempdir(), "doc-example-pairs.svg")
    for i, w in enumerate(words[1:], 1):
        if words[i - 1] in ("-p", "--pid") and (w == "PID" or w.isdigit()):
            w = str(pid)
        elif w.startswith("build/"):
            w = os.path.join(args.build, w[len("build/"):])
        out.append(w)
    cmd = " ".join(shlex.quote(w) for w in out) + pipe
    script = "%s\nexit ${PIPESTATUS[0]}\n" % cmd
    r = run(["bash", "-c", script], what + ": " + line, stdin=subprocess.DEVNULL)
    if short is not None:
        short.kill()
        short.wait()
    if r is None:
        return
    if r.returncode == 2 or r.returncode >= 128 or 'Try "thpctl' in r.stderr:
        fail(what + ": " + line, "refused or killed (exit %d)" % r.returncode,
             r.stdout + r.stderr)
    else:
        print("ok   %s: %s (exit %d)" % (what, line, r.returncode))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--source", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--library", required=True)
    p.add_argument("--thpctl", required=True)
    p.add_argument("--no-python", action="store_true")
    p.add_argument("--go", help="the go command (else ```go blocks are not run)")
    p.add_argument("--cargo", help="the cargo command (else ```rust blocks are not run)")
    p.add_argument("--cflag", action="append", default=[])
    p.add_argument("cc", nargs="+")
    args = p.parse_args()

    if shutil.which("man") is None:
        print("man(1) is not installed: cannot render the man pages")
        return 1 if CI else 77

    readme = os.path.join(args.source, "README.md")
    mandir = os.path.join(args.source, "man")
    # A process for the PID placeholders; it outlives every example
    # (thpctl collapse --watch ends when it exits).
    target = subprocess.Popen(["sleep", "600"])
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for lang, line, text in fenced_blocks(readme):
                what = "README.md:%d" % line
                if lang == "c":
                    check_c(what, text, args, tmp)
                elif lang == "python" and not args.no_python:
                    check_python(what, text, args, tmp)
                elif lang == "go" and args.go:
                    check_go(what, text, args, tmp)
                elif lang == "rust" and args.cargo:
                    check_rust(what, text, args, tmp)
                elif lang == "yaml":
                    check_yaml(what, text, args)
                elif lang == "sh":
                    for cmd in thpctl_lines(text):
                        check_thpctl(what, cmd, args, target.pid)
            for page in sorted(os.listdir(mandir)):
                path = os.path.join(mandir, page)
                if re.search(r"\.[37]$", page):
                    for i, code in enumerate(man_examples(path), 1):
                        check_c("%s EXAMPLES block %d" % (page, i), code, args, tmp)
                elif page.endswith(".1"):
                    for code in man_examples(path):
                        for cmd in thpctl_lines(code):
                            check_thpctl(page, cmd, args, target.pid)
    finally:
        target.kill()
        target.wait()

    print("checked %(c)d C programs, %(python)d Python blocks, %(go)d Go programs, "
          "%(rust)d Rust programs, "
          "%(thpctl)d thpctl command lines, %(yaml)d Kubernetes manifests" % checked)
    # An extractor that finds nothing would pass everything.
    if checked["c"] < 9 or checked["thpctl"] < 5 or \
       (not args.no_python and checked["python"] < 1) or (args.go and checked["go"] < 1) or \
       (args.cargo and checked["rust"] < 1) or (CI and checked["yaml"] < 1):
        fail("extraction", "fewer examples found than README and man/ hold")
    if failures:
        print("%d example(s) failed" % len(failures))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
