# SPDX-License-Identifier: LGPL-2.1-or-later
"""Argument checking of the binding: every integer argument of every public
function against its C type, and buffer lifetimes across the C call.

ctypes truncates an int to its C type without a word: pidfd 2**32 became 0
(THP_SELF), addr + 2**64 became addr, advice 2**32 + 14 became HUGE.  And a
buffer given as a range was released before thp_apply_ranges() ran, so a
generator of temporary mmaps had them unmapped by the time of the call.
"""

import errno
import mmap
import unittest

import thp
from smaps_util import (PMD, buffer_address, private_map, raw_mmap,
                        raw_munmap, vmflags)

INT_MIN, INT_MAX = -2**31, 2**31 - 1
U32_MAX = 2**32 - 1
U64_MAX = 2**64 - 1
HUGE_NEGATIVE = -2**80


class Fileno:
    """A pidfd object whose fileno() returns any value."""

    def __init__(self, fd):
        self.fd = fd

    def fileno(self):
        return self.fd


def bad_integers(ctype, valid):
    """(value, exception) for an integer argument of C type @ctype whose
    domain is the non-negative values: each out of that domain or of the C
    type, or not an integer at all."""
    top = {"int": INT_MAX, "uint32_t": U32_MAX, "uint64_t": U64_MAX}[ctype]
    cases = [(-1, ValueError), (HUGE_NEGATIVE, ValueError),
             (top + 1, OverflowError), (2**64 + valid, OverflowError),
             # A bool where an integer is meant: pidfd=False would be
             # THP_SELF, pidfd=True stdout.
             (True, TypeError), (False, TypeError),
             (float(valid), TypeError), (str(valid), TypeError)]
    if top < 2**32:
        # For a 64-bit argument 2**32 + valid is a valid, different value.
        cases.append((2**32 + valid, OverflowError))
    return cases


# A boolean option takes True/False or 0/1, nothing else (a truthy string
# such as "no" would turn the option on).
BAD_OPTIONS = [(2, ValueError), (-1, ValueError), (2**32, ValueError),
               (2**64 + 1, ValueError), ("no", TypeError), (None, TypeError),
               (1.0, TypeError)]


class IntegerArguments(unittest.TestCase):
    """Each bad value raises its exception before libthp is called, and
    the target range keeps its VmFlags (no hg, no nh) and the process its
    default policy."""

    def setUp(self):
        self.base = raw_mmap(2 * PMD)
        self.addr = (self.base + PMD - 1) & ~(PMD - 1)
        self.assertEqual(thp.get_default().policy, thp.Policy.SYSTEM)

    def tearDown(self):
        raw_munmap(self.base, 2 * PMD)

    def reset(self):
        """Undo what a case that went wrong did, so that each case is
        judged on its own: a fresh mapping in place of the target range,
        and the default policy back to SYSTEM."""
        raw_mmap(2 * PMD, fixed_addr=self.base)
        if thp.get_default().policy != thp.Policy.SYSTEM:
            thp.set_default(thp.Policy.SYSTEM)

    def arguments(self):
        """(function, argument, call(value), [(bad value, exception)]).

        Every call is a valid request on self.addr (HUGE, the calling
        process, automatic backend, policy SYSTEM) but for the argument
        under test, so a truncated value changes the range or succeeds."""
        a = self.addr
        ranges = thp.apply_ranges
        cases = [
            ("apply_ranges", "range address",
             lambda v: ranges([(v, PMD)], thp.HUGE), bad_integers("uint64_t", a)),
            ("apply_ranges", "range length",
             lambda v: ranges([(a, v)], thp.HUGE), bad_integers("uint64_t", PMD)),
            ("apply_ranges", "advice",
             lambda v: ranges([(a, PMD)], v),
             bad_integers("int", thp.HUGE) + [(0, thp.ThpError)]),
            ("apply_ranges", "pidfd",
             lambda v: ranges([(a, PMD)], thp.HUGE, pidfd=v),
             bad_integers("int", thp.SELF)),
            ("apply_ranges", "pidfd.fileno()",
             lambda v: ranges([(a, PMD)], thp.HUGE, pidfd=Fileno(v)),
             bad_integers("int", thp.SELF) + [(0, ValueError)]),
            ("apply_ranges", "backend",
             lambda v: ranges([(a, PMD)], thp.HUGE, backend=v),
             bad_integers("uint32_t", thp.Backend.AUTO)),
            ("apply_ranges", "skip_errors",
             lambda v: ranges([(a, PMD)], thp.HUGE, skip_errors=v), BAD_OPTIONS),
            ("apply_ranges", "no_error_on_unmapped",
             lambda v: ranges([(a, PMD)], thp.HUGE, no_error_on_unmapped=v),
             BAD_OPTIONS),
            ("apply_all", "advice", lambda v: thp.apply_all(v),
             bad_integers("int", thp.HUGE) + [(0, thp.ThpError)]),
            ("apply_all", "pidfd", lambda v: thp.apply_all(thp.HUGE, pidfd=v),
             bad_integers("int", thp.SELF)),
            ("apply_all", "pidfd.fileno()",
             lambda v: thp.apply_all(thp.HUGE, pidfd=Fileno(v)),
             bad_integers("int", thp.SELF) + [(0, ValueError)]),
            ("apply_all", "backend", lambda v: thp.apply_all(thp.HUGE, backend=v),
             bad_integers("uint32_t", thp.Backend.AUTO)),
            ("apply_all", "max_failures (failures_cap)",
             lambda v: thp.apply_all(thp.HUGE, max_failures=v),
             bad_integers("uint64_t", 64)),
            ("apply_all", "skip_errors",
             lambda v: thp.apply_all(thp.HUGE, skip_errors=v), BAD_OPTIONS),
            ("set_default", "policy", lambda v: thp.set_default(v),
             bad_integers("uint32_t", thp.Policy.SYSTEM)),
            ("set_default", "backend",
             lambda v: thp.set_default(thp.Policy.SYSTEM, backend=v),
             bad_integers("uint32_t", thp.Backend.AUTO)),
            ("set_default", "require_persistent",
             lambda v: thp.set_default(thp.Policy.SYSTEM, require_persistent=v),
             BAD_OPTIONS),
            ("set_default", "no_existing",
             lambda v: thp.set_default(thp.Policy.SYSTEM, no_existing=v),
             BAD_OPTIONS),
            ("get_default", "pidfd", lambda v: thp.get_default(pidfd=v),
             bad_integers("int", thp.SELF)),
            ("get_default", "pidfd.fileno()",
             lambda v: thp.get_default(pidfd=Fileno(v)),
             bad_integers("int", thp.SELF) + [(0, ValueError)]),
            ("query", "addr", lambda v: thp.query(v, PMD),
             bad_integers("uint64_t", a)),
            ("query", "length", lambda v: thp.query(a, v),
             bad_integers("uint64_t", PMD)),
            ("query", "pidfd", lambda v: thp.query(a, PMD, pidfd=v),
             bad_integers("int", thp.SELF)),
            ("query", "pidfd.fileno()",
             lambda v: thp.query(a, PMD, pidfd=Fileno(v)),
             bad_integers("int", thp.SELF) + [(0, ValueError)]),
            # budget_bytes=1: nothing fits, so a valid pass changes nothing.
            ("collapse", "pidfd", lambda v: thp.collapse(pidfd=v, budget_bytes=1),
             bad_integers("int", thp.SELF)),
            ("collapse", "pidfd.fileno()",
             lambda v: thp.collapse(pidfd=Fileno(v), budget_bytes=1),
             bad_integers("int", thp.SELF) + [(0, ValueError)]),
            ("collapse", "min_present_pages",
             lambda v: thp.collapse(min_present_pages=v, budget_bytes=1),
             bad_integers("uint32_t", 0) + [(513, thp.ThpError)]),
            ("collapse", "budget_bytes", lambda v: thp.collapse(budget_bytes=v),
             bad_integers("uint64_t", 1)),
            ("collapse", "budget_ns",
             lambda v: thp.collapse(budget_ns=v, budget_bytes=1),
             bad_integers("uint64_t", 0)),
            ("collapse", "max_failures (failures_cap)",
             lambda v: thp.collapse(max_failures=v, budget_bytes=1),
             bad_integers("uint64_t", 16)),
            ("coverage", "pidfd", lambda v: thp.coverage(pidfd=v),
             bad_integers("int", thp.SELF)),
            ("coverage", "pidfd.fileno()", lambda v: thp.coverage(pidfd=Fileno(v)),
             bad_integers("int", thp.SELF) + [(0, ValueError)]),
            ("backend_name", "backend", thp.backend_name,
             bad_integers("uint32_t", thp.Backend.MADVISE)),
            ("policy_name", "policy", thp.policy_name,
             bad_integers("uint32_t", thp.Policy.HUGE)),
            # err is a signed int: any negative value that fits is valid.
            ("strerror", "err", thp.strerror,
             [(INT_MAX + 1, OverflowError), (INT_MIN - 1, OverflowError),
              (2**32 - errno.EINVAL, OverflowError),
              (2**64 - errno.EINVAL, OverflowError),
              (HUGE_NEGATIVE, OverflowError), (True, TypeError),
              (-22.0, TypeError)]),
        ]
        # Every public function that takes an argument is in the table.
        self.assertEqual({c[0] for c in cases},
                         {"apply_ranges", "apply_all", "set_default",
                          "get_default", "query", "collapse", "coverage",
                          "backend_name",
                          "policy_name", "strerror"})
        return cases

    def test_bad_values_raise_and_change_nothing(self):
        for func, arg, call, bad in self.arguments():
            for value, exc in bad:
                with self.subTest(function=func, argument=arg, value=value):
                    try:
                        with self.assertRaises(exc) as cm:
                            call(value)
                        if exc is thp.ThpError:
                            self.assertEqual(cm.exception.errno, errno.EINVAL)
                        flags = vmflags(self.addr)
                        self.assertNotIn("hg", flags)
                        self.assertNotIn("nh", flags)
                        self.assertEqual(thp.get_default().policy,
                                         thp.Policy.SYSTEM)
                    finally:
                        self.reset()

    def test_valid_requests_work(self):
        """The table's calls with the valid values: the checks refuse only
        bad ones (an IntEnum and an int are both integers)."""
        res = thp.apply_ranges([(self.addr, PMD)], int(thp.HUGE), skip_errors=1,
                               no_error_on_unmapped=False, pidfd=thp.SELF,
                               backend=thp.Backend.AUTO)
        self.assertEqual(res.count, 1)
        self.assertEqual(res.reports[0].bytes_advised, PMD)
        self.assertIn("hg", vmflags(self.addr))
        self.assertEqual(len(thp.query(self.addr, PMD)), 1)
        self.assertEqual(thp.backend_name(thp.Backend.MADVISE), "madvise")
        self.assertEqual(thp.backend_name(U32_MAX), "unknown")
        self.assertEqual(thp.policy_name(2), "nohuge")
        self.assertTrue(thp.strerror(INT_MIN))
        self.assertTrue(thp.strerror(INT_MAX))


class BufferLifetime(unittest.TestCase):
    """Buffers given as ranges stay mapped until thp_apply_ranges() returns."""

    def check_temporaries(self, released_views):
        """apply_ranges() over a generator of temporary mmaps: each one's
        only reference is the one the generator yields (or the memoryview
        it yields and releases once the binding has taken the next one), so
        the binding must keep it until the C call has returned.  __del__
        runs before the mmap is unmapped and records its VmFlags then."""
        flags_at_death = {}

        class TrackedMap(mmap.mmap):
            def __del__(self):
                flags_at_death[self.addr] = vmflags(self.addr)

        def temporaries(n):
            for _ in range(n):
                m = private_map(PMD, cls=TrackedMap)
                m.addr = buffer_address(m)
                if released_views:
                    view = memoryview(m)
                    del m
                    yield view
                    view.release()
                else:
                    yield m

        res = thp.apply_ranges(temporaries(3), thp.HUGE)
        # All three were unmapped by the time the call returned (no leak)...
        self.assertEqual(len(flags_at_death), 3)
        self.assertEqual(res.count, 3)
        self.assertEqual(sorted(r.addr for r in res.reports),
                         sorted(flags_at_death))
        for rep in res.reports:
            self.assertEqual(rep.bytes_advised, PMD)
            self.assertEqual(rep.bytes_unmapped, 0)
            self.assertEqual(rep.error, 0)
            # ...and each was mapped and advised when the call ran.
            self.assertIn("hg", flags_at_death[rep.addr])

    def test_generator_of_temporary_mmaps(self):
        self.check_temporaries(released_views=False)

    def test_generator_of_released_memoryviews(self):
        self.check_temporaries(released_views=True)

    def _close_previous_during_conversion(self, make, invalidate):
        """A ranges generator that yields a buffer and then tries to close
        or resize it before the C call: BufferError."""
        buf = make()

        def ranges():
            yield buf
            invalidate(buf)
            yield (0, 0)
        with self.assertRaises(BufferError):
            thp.apply_ranges(ranges(), thp.HUGE)
        return buf

    def test_mmap_closed_during_conversion(self):
        m = self._close_previous_during_conversion(
            lambda: private_map(PMD), lambda b: b.close())
        self.assertFalse(m.closed)
        self.assertNotIn("hg", vmflags(buffer_address(m)))
        m.close()  # the failed call left no export behind

    def test_bytearray_resized_during_conversion(self):
        b = self._close_previous_during_conversion(
            lambda: bytearray(PMD), lambda b: b.extend(b"x" * PMD))
        self.assertEqual(len(b), PMD)
        b.extend(b"x")

    def test_exports_released_after_call(self):
        m = private_map(PMD)
        res = thp.apply_ranges([m, memoryview(m)[:PMD // 2]], thp.HUGE)
        self.assertEqual(res.count, 2)
        self.assertIn("hg", vmflags(buffer_address(m)))
        m.close()  # BufferError if an export were left

    def test_exports_released_after_bad_range(self):
        m = private_map(PMD)
        with self.assertRaises(TypeError):
            thp.apply_ranges([m, b"read-only"], thp.HUGE)
        with self.assertRaises(OverflowError):
            thp.apply_ranges([m, (0, 2**64)], thp.HUGE)
        self.assertNotIn("hg", vmflags(buffer_address(m)))
        m.close()


if __name__ == "__main__":
    unittest.main()
