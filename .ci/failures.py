#!/usr/bin/env python3
"""Print the tests that did not pass in the given meson testlog*.json files,
each with its result, exit code, environment that varies per run
(MALLOC_PERTURB_), every line of its output that reports a failed check
(a test's own output may be too long for its tail to reach the failure),
and the end of its output.

.ci/run calls this last, so that the tail of a CI log, which may be all a
reader gets to see, names every failure and shows why, whichever phase it
was in.

    .ci/failures.py [--lines N] TESTLOG.json...
"""
import json
import os
import sys

# CI allows no skips: a SKIP is listed like a failure.
PASSING = {"OK", "EXPECTEDFAIL"}

# How the project's tests report a failed check: Check ("...:F:..."),
# the VM and systemd guests ("VMTEST FAIL"), TAP-like and script tests.
FAILED_CHECK_MARKERS = (":F:", ":E:", "VMTEST FAIL", "FAIL:", "FAIL ",
                        "not ok", "AddressSanitizer", "runtime error:")
MAX_CHECK_LINES = 40


def main(argv):
    lines = 25
    paths = []
    it = iter(argv)
    for arg in it:
        if arg == "--lines":
            lines = int(next(it))
        else:
            paths.append(arg)

    found = 0
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for raw in f:
                try:
                    test = json.loads(raw)
                except ValueError:
                    continue
                if test.get("result") in PASSING:
                    continue
                found += 1
                env = test.get("env") or {}
                print(f"--- {test.get('name')}: {test.get('result')} "
                      f"(exit {test.get('returncode')}, "
                      f"{test.get('duration', 0):.1f} s, "
                      f"MALLOC_PERTURB_={env.get('MALLOC_PERTURB_', '-')}) "
                      f"in {path}")
                out = (test.get("stdout") or "") + (test.get("stderr") or "")
                out_lines = out.rstrip("\n").split("\n")
                checks = [line for line in out_lines[:-lines]
                          if any(m in line for m in FAILED_CHECK_MARKERS)]
                if checks:
                    print(f"  failed checks before the tail "
                          f"({len(checks)}, at most {MAX_CHECK_LINES} shown):")
                    for line in checks[:MAX_CHECK_LINES]:
                        print(f"    {line}")
                    print("  the tail:")
                for line in out_lines[-lines:]:
                    print(f"    {line}")
    if found:
        print(f"{found} test run(s) did not pass (above).")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
