# SPDX-License-Identifier: LGPL-2.1-or-later
"""Tests of the libthp Python binding on real memory of this process."""

import ctypes
import errno
import mmap
import os
import unittest

import thp

PMD = 2 << 20
PAGE = mmap.PAGESIZE

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                       ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value


def raw_mmap(length):
    addr = _libc.mmap(None, length, mmap.PROT_READ | mmap.PROT_WRITE,
                      mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    if addr in (None, _MAP_FAILED):
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return addr


def vmflags(addr):
    """VmFlags of the /proc/self/smaps mapping that contains addr."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                start, end = (int(x, 16) for x in head.split("-"))
                inside = start <= addr < end
            elif inside and line.startswith("VmFlags:"):
                return line.split()[1:]
    return None


class HugeRegion(unittest.TestCase):
    """apply_ranges() on a 2 MiB-aligned slice of an 8 MiB mmap.mmap."""

    def setUp(self):
        # MAP_PRIVATE: mmap.mmap(-1, n) defaults to MAP_SHARED, which is
        # shmem and follows shmem_enabled rather than anonymous THP rules.
        self.map = mmap.mmap(-1, 8 << 20,
                             flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
        c = ctypes.c_char.from_buffer(self.map)
        self.base = ctypes.addressof(c)
        del c
        self.aligned = (self.base + PMD - 1) & ~(PMD - 1)
        self.off = self.aligned - self.base

    def tearDown(self):
        self.map.close()

    def test_huge_buffer_slice(self):
        view = memoryview(self.map)[self.off:self.off + PMD]
        try:
            res = thp.apply_ranges([view], thp.HUGE)
        finally:
            view.release()
        self.assertEqual(res.count, 1)
        self.assertIsInstance(res.backend, thp.Backend)
        self.assertNotEqual(res.backend, thp.Backend.AUTO)
        self.assertEqual(len(res.reports), 1)
        rep = res.reports[0]
        self.assertEqual(rep.addr, self.aligned)
        self.assertEqual(rep.len, PMD)
        self.assertEqual(rep.bytes_advised, PMD)
        self.assertEqual(rep.bytes_unmapped, 0)
        self.assertEqual(rep.error, 0)
        self.assertTrue(rep.attempted)
        self.assertIn("hg", vmflags(self.aligned))

        states = thp.query(self.aligned, PMD)
        self.assertEqual(len(states), 1)
        self.assertTrue(states[0].advised_huge)
        self.assertTrue(states[0].anonymous)

        # Touch the region; the fault should map a huge page.  Fall back to
        # MADV_COLLAPSE if the allocator could not find one at fault time.
        self.map[self.off:self.off + PMD] = b"\x01" * PMD
        anon_huge = sum(s.anon_huge_bytes for s in thp.query(self.aligned, PMD))
        if anon_huge == 0:
            thp.apply_ranges([(self.aligned, PMD)], thp.COLLAPSE)
            anon_huge = sum(s.anon_huge_bytes
                            for s in thp.query(self.aligned, PMD))
        self.assertGreater(anon_huge, 0)

    def test_tuple_range_nohuge(self):
        res = thp.apply_ranges([(self.aligned, PMD)], thp.Advice.NOHUGE)
        self.assertEqual(res.count, 1)
        self.assertIn("nh", vmflags(self.aligned))

    def test_query_all(self):
        states = thp.query()
        self.assertTrue(any(s.start <= self.base < s.end for s in states))


class Errors(unittest.TestCase):
    """A range with an unmapped hole; bad advice."""

    def setUp(self):
        self.len = 4 * PAGE
        self.addr = raw_mmap(self.len)
        # Map "good" before punching the hole: a one-page mmap() after it
        # could be placed in the hole.
        self.good = raw_mmap(PAGE)
        self.hole = self.addr + PAGE
        self.assertEqual(_libc.munmap(self.hole, PAGE), 0)

    def tearDown(self):
        _libc.munmap(self.addr, PAGE)
        _libc.munmap(self.addr + 2 * PAGE, 2 * PAGE)
        _libc.munmap(self.good, PAGE)

    def test_hole_enomem(self):
        with self.assertRaises(thp.ThpError) as cm:
            thp.apply_ranges([(self.addr, self.len)], thp.HUGE)
        err = cm.exception
        self.assertIsInstance(err, OSError)
        self.assertEqual(err.errno, errno.ENOMEM)
        self.assertTrue(err.strerror)
        self.assertIsInstance(err.detail, str)
        self.assertEqual(len(err.reports), 1)
        rep = err.reports[0]
        self.assertEqual(rep.bytes_unmapped, PAGE)
        self.assertEqual(rep.bytes_advised, 3 * PAGE)
        self.assertEqual(rep.error, errno.ENOMEM)
        self.assertEqual(rep.fail_addr, self.hole)

    def test_no_error_on_unmapped(self):
        res = thp.apply_ranges([(self.addr, self.len)], thp.HUGE,
                               no_error_on_unmapped=True)
        self.assertEqual(res.count, 1)
        self.assertEqual(res.reports[0].bytes_unmapped, PAGE)

    def test_skip_errors_count(self):
        res = thp.apply_ranges([(self.good, PAGE), (self.addr, self.len),
                                (self.good, PAGE)],
                               thp.HUGE, skip_errors=True)
        self.assertIsInstance(res, thp.ApplyResult)
        self.assertGreaterEqual(res.count, 2)
        self.assertEqual(len(res.reports), 3)
        self.assertEqual(res.reports[1].bytes_unmapped, PAGE)
        self.assertEqual(res.reports[1].bytes_advised, 3 * PAGE)

    def test_bad_advice(self):
        with self.assertRaises(thp.ThpError) as cm:
            thp.apply_ranges([(self.good, PAGE)], 4)
        self.assertEqual(cm.exception.errno, errno.EINVAL)

    def test_pidfd_object_on_descriptor_0(self):
        class OnZero:
            def fileno(self):
                return 0
        with self.assertRaises(ValueError):
            thp.apply_ranges([(self.good, PAGE)], thp.HUGE, pidfd=OnZero())
        self.assertNotIn("hg", vmflags(self.good))

    def test_bad_buffer(self):
        with self.assertRaises(TypeError):
            thp.apply_ranges([b"read-only"], thp.HUGE)


class Info(unittest.TestCase):

    def test_probe(self):
        info = thp.probe()
        self.assertEqual(info.pmd_size, PMD)
        self.assertIn(info.thp_mode, list(thp.SysfsMode))
        self.assertIn(thp.Backend.MADVISE, info.backends)
        self.assertEqual(info.backends_mask & (1 << thp.Backend.MADVISE),
                         1 << thp.Backend.MADVISE)
        self.assertIsInstance(info.madvise_collapse, bool)

    def test_get_default_self(self):
        state = thp.get_default()
        self.assertEqual(state.policy, thp.Policy.SYSTEM)
        self.assertIsInstance(state.persistent, bool)

    def test_version(self):
        self.assertEqual(thp.version().count("."), 2)

    def test_names(self):
        self.assertEqual(thp.policy_name(thp.Policy.SYSTEM), "system")
        self.assertEqual(thp.backend_name(thp.Backend.MADVISE), "madvise")
        self.assertTrue(thp.strerror(-errno.EINVAL))


if __name__ == "__main__":
    unittest.main()
