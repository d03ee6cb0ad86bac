# SPDX-License-Identifier: LGPL-2.1-or-later
"""The shared case table (tests/model/cases.txt, whose header gives the
format) through the Python binding: return, reports and smaps VmFlags as
the C runner and the Go binding check them."""

import ctypes
import errno
import os
import re
import unittest

import thp
from smaps_util import PAGE, PMD, raw_mmap, raw_munmap, vmflags

CASES = os.environ.get("THP_CASES") or os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "tests", "model", "cases.txt")
ARENA_PAGES = 1024
_MADV = {"hg": 14, "nh": 15}
_libc = ctypes.CDLL(None, use_errno=True)
_libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]


def _pos(s):
    pages, _, extra = s.partition("+")
    return int(pages, 0) * 4096 + (int(extra, 0) if extra else 0)


def _errno(s):
    return 0 if s == "0" else getattr(errno, s)


def parse(path):
    cases, c = [], None
    with open(path) as f:
        for no, line in enumerate(f, 1):
            tok = line.split("#", 1)[0].split()
            if not tok:
                continue
            where = "cases.txt:%d" % no
            if tok[0] == "case" and c is None and len(tok) == 2:
                c = dict(name=tok[1], line=no, maps=[], flags=[], ranges=[], reports=[])
            elif c is None:
                raise ValueError(where + ": directive outside a case")
            elif tok == ["end"]:
                cases.append(c)
                c = None
            elif tok[0] == "map" and len(tok) in (3, 4):
                c["maps"].append((int(tok[1]), int(tok[2]), tok[3] if len(tok) == 4 else ""))
            elif tok[0] == "flags" and len(tok) == 4:
                c["flags"].append((int(tok[1]), int(tok[2]), tok[3]))
            elif tok[0] == "apply" and len(tok) == 4:
                c["advice"] = {"huge": 14, "nohuge": 15}.get(tok[1]) or int(tok[1], 0)
                c["flagword"] = tok[2]
                c["backend"] = {"auto": 0, "madvise": 3}.get(tok[3], None)
                if c["backend"] is None:
                    c["backend"] = int(tok[3], 0)
            elif tok[0] == "range" and len(tok) == 3:
                c["ranges"].append((_pos(tok[1]), _pos(tok[2])))
            elif tok[0] == "return" and len(tok) == 2:
                c["ret"] = -_errno(tok[1][1:]) if tok[1].startswith("-") else int(tok[1])
            elif tok[0] == "used" and len(tok) == 2:
                c["used"] = tok[1]
            elif tok[0] == "report" and len(tok) == 8:
                c["reports"].append(dict(
                    pos=_pos(tok[1]), len=_pos(tok[2]), advised=_pos(tok[3]),
                    unmapped=_pos(tok[4]), fail=None if tok[5] == "-" else _pos(tok[5]),
                    error=_errno(tok[6]), attempted=int(tok[7])))
            else:
                raise ValueError(where + ": bad directive")
    if c is not None:
        raise ValueError("case without end")
    return cases


# The Python API takes flags as booleans: unknown flag bits cannot be passed.
_FLAGWORDS = {"0": {}, "skip": {"skip_errors": True},
              "gaps": {"no_error_on_unmapped": True},
              "skip+gaps": {"skip_errors": True, "no_error_on_unmapped": True}}


class TestCaseTable(unittest.TestCase):
    def test_cases(self):
        cases = parse(CASES)
        self.assertTrue(cases)
        ran = 0
        for c in cases:
            if c["flagword"] not in _FLAGWORDS:
                print("not expressible in the Python API (flags %s): %s" % (c["flagword"], c["name"]))
                continue
            with self.subTest(case=c["name"]):
                self.run_case(c)
                ran += 1
        self.assertGreaterEqual(ran, len(cases) - 1)

    def run_case(self, c):
        where = "%s (cases.txt:%d)" % (c["name"], c["line"])
        raw = raw_mmap(ARENA_PAGES * PAGE + PMD)
        base = (raw + PMD - 1) & ~(PMD - 1)
        size = ARENA_PAGES * PAGE
        if base > raw:
            raw_munmap(raw, base - raw)
        raw_munmap(base + size, raw + PMD - base)
        try:
            state = [None] * ARENA_PAGES
            for first, n, what in c["maps"]:
                for p in range(first, first + n):
                    state[p] = what
            for p, what in enumerate(state):
                if what is None:
                    raw_munmap(base + p * PAGE, PAGE)
                elif what:
                    self.assertEqual(_libc.madvise(base + p * PAGE, PAGE, _MADV[what]), 0)
            ranges = [(base + a, n) for a, n in c["ranges"]]
            try:
                res = thp.apply_ranges(ranges, c["advice"], backend=c["backend"],
                                       **_FLAGWORDS[c["flagword"]])
                ret, reports = res.count, res.reports
            except thp.ThpError as e:
                ret, reports = -e.errno, e.reports
            self.assertEqual(ret, c["ret"], where)
            self.assertEqual(len(reports), len(c["reports"]), where)
            backends = {int(r.backend) for r in reports}
            if c["used"] == "none":
                self.assertEqual(backends, {0}, where)
            elif c["used"] == "any":
                self.assertEqual(len(backends), 1, where)
                self.assertNotIn(0, backends, where)
            else:
                self.assertEqual({thp.backend_name(b) for b in backends}, {c["used"]}, where)
            for i, (r, w) in enumerate(zip(reports, c["reports"])):
                got = (r.addr - base, r.len, r.bytes_advised, r.bytes_unmapped,
                       None if not r.fail_addr else r.fail_addr - base, r.error,
                       int(r.attempted))
                want = (w["pos"], w["len"], w["advised"], w["unmapped"], w["fail"],
                        w["error"], w["attempted"])
                self.assertEqual(got, want, "%s: report %d" % (where, i))
            for first, n, what in c["flags"]:
                for p in range(first, first + n):
                    fl = vmflags(base + p * PAGE)
                    got = ("unmapped" if fl is None else
                           "hg+nh" if "hg" in fl and "nh" in fl else
                           "hg" if "hg" in fl else "nh" if "nh" in fl else "-")
                    self.assertEqual(got, what, "%s: page %d" % (where, p))
        finally:
            raw_munmap(base, size)


if __name__ == "__main__":
    unittest.main()
