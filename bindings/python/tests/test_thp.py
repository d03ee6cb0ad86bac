# SPDX-License-Identifier: LGPL-2.1-or-later
"""Tests of the libthp Python binding on real memory of this process."""

import ctypes
import errno
import os
import time
import unittest

import thp
from smaps_util import (PAGE, PMD, buffer_address, huge_kb, private_map,
                        raw_mmap, raw_munmap, vmflags)


class HugeRegion(unittest.TestCase):
    """apply_ranges() on a 2 MiB-aligned slice of an 8 MiB mmap.mmap."""

    def setUp(self):
        self.map = private_map(8 << 20)
        self.base = buffer_address(self.map)
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
        self.assertEqual(raw_munmap(self.hole, PAGE), 0)

    def tearDown(self):
        raw_munmap(self.addr, PAGE)
        raw_munmap(self.addr + 2 * PAGE, 2 * PAGE)
        raw_munmap(self.good, PAGE)

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

    def test_probe_sizes(self):
        """Every hugepages-<size>kB directory, as this test lists them itself."""
        base = "/sys/kernel/mm/transparent_hugepage"
        for _ in range(5):
            before = sorted(int(d[len("hugepages-"):-2]) << 10 for d in os.listdir(base)
                            if d.startswith("hugepages-"))
            top = _bracketed(base + "/enabled")
            info = thp.probe()
            if _bracketed(base + "/enabled") == top:
                break
        self.assertEqual(info.sizes_source, thp.SizesSource.PER_SIZE)
        self.assertEqual([s.size for s in info.sizes], before)
        self.assertEqual(info.nr_sizes, len(before))
        for s in info.sizes:
            path = "%s/hugepages-%dkB/enabled" % (base, s.size >> 10)
            word = _bracketed(path) if os.path.exists(path) else None
            if word is None:
                self.assertEqual(s.enabled, thp.SysfsMode.UNKNOWN)
                continue
            self.assertEqual(s.enabled, thp.SysfsMode[word.upper()])
            want = top if word == "inherit" else word
            self.assertEqual(s.mode, thp.SysfsMode[want.upper()], s)
            self.assertEqual(s.huge_policy, want in ("always", "madvise"), s)
        self.assertEqual(info.huge_policy_sizes,
                         [s.size for s in info.sizes if s.huge_policy])
        with open(base + "/khugepaged/max_ptes_none") as f:
            self.assertEqual(info.khugepaged["max_ptes_none"], int(f.read()))
        self.assertIsInstance(info.defrag, thp.DefragMode)
        self.assertIsInstance(info.shmem_mode, thp.ShmemMode)

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



def _bracketed(path):
    with open(path) as f:
        line = f.read()
    return line[line.index("[") + 1:line.index("]")]


def _touch_8mib(base):
    """The 2 MiB-aligned 8 MiB inside a 10 MiB mapping at base, every
    page written: base pages (not advised, madvise mode).  Returns the
    address and a view of it."""
    aligned = (base + PMD - 1) & ~(PMD - 1)
    view = (ctypes.c_char * (8 << 20)).from_address(aligned)
    for off in range(0, 8 << 20, PAGE):
        view[off] = b"\x5a"
    return aligned, view


class Collapse(unittest.TestCase):
    """collapse() and coverage() on this process's own memory."""

    def test_collapse_touched_region(self):
        base = raw_mmap(10 << 20)
        try:
            aligned, view = _touch_8mib(base)
            self.assertNotIn("hg", vmflags(aligned))
            before = thp.coverage()
            self.assertGreaterEqual(before.anon_bytes, 8 << 20)
            res = thp.collapse()
            self.assertGreaterEqual(res.extents_collapsed, 4)
            self.assertEqual(res.count, min(res.extents_collapsed, 2**31 - 1))
            self.assertFalse(res.thp_disabled)
            self.assertGreaterEqual(res.anon_huge_after - res.anon_huge_before,
                                    4 * PMD)
            states = thp.query(aligned, 8 << 20)
            self.assertEqual(sum(s.anon_huge_bytes for s in states), 8 << 20)
            after = thp.coverage()
            self.assertGreaterEqual(after.anon_huge_bytes, 8 << 20)
            self.assertGreater(after.ratio, before.ratio)
            # Contents unchanged.
            self.assertTrue(all(view[off] == b"\x5a"
                                for off in range(0, 8 << 20, PAGE)))
        finally:
            raw_munmap(base, 10 << 20)

    def test_coverage_by_folio_size(self):
        """A HUGE-advised, touched 8 MiB: root sees it in 2 MiB folios."""
        if os.geteuid() != 0:
            self.assertEqual(thp.coverage(folio_sizes=True).folio_source, "none")
            return
        base = raw_mmap(10 << 20)
        try:
            aligned = (base + PMD - 1) & ~(PMD - 1)
            thp.apply_ranges([(aligned, 8 << 20)], thp.Advice.HUGE)
            view = (ctypes.c_char * (8 << 20)).from_address(aligned)
            for off in range(0, 8 << 20, PAGE):
                view[off] = b"\x5a"
            plain = thp.coverage()
            self.assertEqual(plain.folio_source, "none")
            self.assertEqual(plain.folio_bytes, {})
            huge = sum(st.anon_huge_bytes for st in thp.query(aligned, 8 << 20))
            for _ in range(10):
                if huge:
                    break
                # A huge fault falls back to base pages when no huge page
                # is free at that moment (a loaded machine); MADV_COLLAPSE
                # compacts for one, and EAGAIN is its "not now".
                try:
                    thp.apply_ranges([(aligned, 8 << 20)], thp.Advice.COLLAPSE)
                except thp.ThpError as e:
                    if e.errno != errno.EAGAIN:
                        raise
                    time.sleep(0.1)
                huge = sum(st.anon_huge_bytes for st in thp.query(aligned, 8 << 20))
            self.assertGreater(huge, 0)
            cov = thp.coverage(folio_sizes=True)
            self.assertEqual(cov.folio_source, "kpageflags")
            # What smaps showed PMD-mapped in the region is in 2 MiB folios.
            self.assertGreaterEqual(cov.folio_bytes.get(PMD, 0), huge)
            self.assertGreater(cov.base_bytes, 0)  # the interpreter's own heap
        finally:
            raw_munmap(base, 10 << 20)

    def test_collapse_leaves_fork_shared_memory(self):
        base = raw_mmap(10 << 20)
        try:
            aligned, _ = _touch_8mib(base)
            r, w = os.pipe()
            child = os.fork()
            if child == 0:  # shares every page until it exits
                os.read(r, 1)
                os._exit(0)
            try:
                shared = thp.collapse(max_shared_pages=511)
                self.assertGreaterEqual(shared.extents_shared, 4)
                self.assertEqual(huge_kb(aligned), 0)
            finally:
                os.write(w, b"x")
                os.waitpid(child, 0)
                os.close(r)
                os.close(w)
            own = thp.collapse()
            self.assertGreaterEqual(own.extents_collapsed, 4)
            self.assertEqual(huge_kb(aligned), 8 << 10)
        finally:
            raw_munmap(base, 10 << 20)

    def test_bad_min_present(self):
        with self.assertRaises(thp.ThpError) as cm:
            thp.collapse(min_present_pages=513)
        self.assertEqual(cm.exception.errno, errno.EINVAL)

    def test_bad_max_shared(self):
        with self.assertRaises(thp.ThpError) as cm:
            thp.collapse(max_shared_pages=513)
        self.assertEqual(cm.exception.errno, errno.EINVAL)


if __name__ == "__main__":
    unittest.main()
