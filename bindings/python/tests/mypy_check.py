# SPDX-License-Identifier: LGPL-2.1-or-later
"""mypy --strict over the thp package (the python-mypy test).

usage: mypy_check.py PACKAGE_DIR CACHE_DIR
Exit 77 (skip) without mypy (Debian: apt install mypy), a failure under
CI=true.  The cache goes to CACHE_DIR (the build tree), not the sources.
"""

import os
import subprocess
import sys

pkg, cache = sys.argv[1], sys.argv[2]
try:
    import mypy  # noqa: F401  (only: is it there?)
except ImportError:
    print("python-mypy: SKIP: no mypy for %s (Debian: apt install mypy)" % sys.executable)
    sys.exit(1 if os.environ.get("CI") == "true" else 77)
cmd = [sys.executable, "-m", "mypy", "--strict", "--cache-dir", cache, pkg]
print(" ".join(cmd), flush=True)
sys.exit(subprocess.run(cmd).returncode)
