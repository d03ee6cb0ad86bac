# SPDX-License-Identifier: LGPL-2.1-or-later
"""pip install --no-build-isolation of a copy of bindings/python (the
python-pip test): meson-python builds it offline, the install has thp,
thp.__main__ and py.typed, and the copy is left as it was but for the one
file meson-python 0.12 writes into the directory it builds
(.mesonpy-native-file.ini, git-ignored).

usage: pip_check.py BINDING_DIR VERSION
Exit 77 (skip) without pip or meson-python, a failure under CI=true.
"""

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile

src, version = sys.argv[1], sys.argv[2]
missing = [m for m in ("pip", "mesonpy") if importlib.util.find_spec(m) is None]
if missing:
    print("python-pip: SKIP: no %s for %s (Debian: apt install python3-pip "
          "python3-mesonpy)" % (" or ".join(missing), sys.executable))
    sys.exit(1 if os.environ.get("CI") == "true" else 77)


def listing(top):
    out = set()
    for d, dirs, files in os.walk(top):
        for n in dirs + files:
            out.add(os.path.relpath(os.path.join(d, n), top))
    return out


with tempfile.TemporaryDirectory(prefix="libthp-pip-") as tmp:
    tree = os.path.join(tmp, "python")
    shutil.copytree(src, tree, ignore=shutil.ignore_patterns("__pycache__", ".mypy_cache"))
    before = listing(tree)
    target = os.path.join(tmp, "site")
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation",
                        "--no-index", "--no-deps", "--no-cache-dir",
                        "--disable-pip-version-check", "--target", target, tree],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    print(r.stdout)
    if r.returncode != 0:
        sys.exit("python-pip: pip install failed (exit %d)" % r.returncode)
    left = sorted(listing(tree) - before - {".mesonpy-native-file.ini"})
    if left:
        sys.exit("python-pip: the build left files in the source tree: %s" % left[:10])
    for f in ("thp/__init__.py", "thp/__main__.py", "thp/_api.py", "thp/_args.py",
              "thp/_constants.py", "thp/_ffi.py", "thp/_structs.py", "thp/_types.py",
              "thp/py.typed"):
        if not os.path.exists(os.path.join(target, f)):
            sys.exit("python-pip: %s not installed" % f)
    env = dict(os.environ, PYTHONPATH=target)
    r = subprocess.run([sys.executable, "-m", "thp", "version"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0 or r.stdout.strip() != version:
        sys.exit("python-pip: python3 -m thp version from the install: exit %d, %r %r"
                 % (r.returncode, r.stdout, r.stderr))
    print("python-pip: OK (installed thp %s; the source tree unchanged)" % version)
