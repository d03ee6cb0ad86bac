# SPDX-License-Identifier: LGPL-2.1-or-later
"""python3 -m build --no-isolation of bindings/python (the python-build
test): meson-python makes the sdist from a clone of the committed tree
(it packs with `meson dist`, which needs git) and the wheel from that
sdist, offline; the wheel, installed with pip into a fresh venv, imports
and `python -m thp version` prints VERSION.  Outside a git checkout (a
release tarball) the wheel is built from a copy of the directory.

usage: build_check.py SRC_ROOT VERSION
Exit 77 (skip) without python3-build, meson-python or venv, a failure
under CI=true.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

src, version = sys.argv[1], sys.argv[2]
missing = [m for m in ("build", "mesonpy", "venv", "ensurepip")
           if importlib.util.find_spec(m) is None]
if missing:
    print("python-build: SKIP: no %s for %s (Debian: apt install python3-build "
          "python3-mesonpy python3-venv)" % (" or ".join(missing), sys.executable))
    sys.exit(1 if os.environ.get("CI") == "true" else 77)


def run(cmd, **kw):
    print("+", " ".join(cmd))
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, **kw)
    print(r.stdout)
    if r.returncode != 0:
        sys.exit("python-build: %s failed (exit %d)" % (cmd[0:3], r.returncode))
    return r.stdout


with tempfile.TemporaryDirectory(prefix="libthp-build-") as tmp:
    dist = os.path.join(tmp, "dist")
    # A checkout of its own, not a tarball unpacked inside another one.
    top = subprocess.run(["git", "-C", src, "rev-parse", "--show-toplevel"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    in_git = top.returncode == 0 and os.path.realpath(top.stdout.strip()) == os.path.realpath(src)
    if in_git:
        run(["git", "clone", "--quiet", "--no-hardlinks", src, os.path.join(tmp, "clone")])
        tree = os.path.join(tmp, "clone", "bindings", "python")
        run([sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, tree])
    else:
        tree = os.path.join(tmp, "python")
        shutil.copytree(os.path.join(src, "bindings", "python"), tree)
        run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir", dist, tree])
    built = sorted(os.listdir(dist))
    wheel = "thp-%s-py3-none-any.whl" % version
    want = [wheel] + (["thp-%s.tar.gz" % version] if in_git else [])
    if sorted(want) != built:
        sys.exit("python-build: built %s, expected %s" % (built, sorted(want)))
    with zipfile.ZipFile(os.path.join(dist, wheel)) as z:
        names = set(z.namelist())
    for f in ("thp/__init__.py", "thp/__main__.py", "thp/_ffi.py", "thp/py.typed"):
        if f not in names:
            sys.exit("python-build: %s not in %s" % (f, wheel))
    venv = os.path.join(tmp, "venv")
    run([sys.executable, "-m", "venv", venv])
    py = os.path.join(venv, "bin", "python")
    run([py, "-m", "pip", "install", "--no-index", "--no-deps", "--no-cache-dir",
         "--disable-pip-version-check", os.path.join(dist, wheel)])
    # From outside the source tree, so that the venv's thp is the one found.
    out = run([py, "-c", "import thp, sys; print(thp.__file__); print(thp.version())"],
              cwd=tmp).split("\n")
    if not out[0].startswith(venv + os.sep) or out[1].strip() != version:
        sys.exit("python-build: the venv imported %r, version %r" % (out[0], out[1]))
    print("python-build: OK (%s, thp %s from the venv)" % (" and ".join(built), version))
