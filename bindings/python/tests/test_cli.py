# SPDX-License-Identifier: LGPL-2.1-or-later
"""python3 -m thp: the command line of the binding."""

import subprocess
import sys
import unittest

import thp


def run(*args):
    return subprocess.run([sys.executable, "-m", "thp"] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class Cli(unittest.TestCase):
    def test_version(self):
        r = run("version")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), thp.version())

    def test_probe(self):
        r = run("probe")
        self.assertEqual(r.returncode, 0, r.stderr)
        info = thp.probe()
        self.assertIn("pmd size: %d kB" % (info.pmd_size >> 10), r.stdout)
        self.assertIn("madvise", r.stdout.split("backends:")[1].splitlines()[0])

    def test_coverage_of_another_process(self):
        # A child that holds 8 MiB of touched anonymous memory until told to go.
        child = subprocess.Popen(
            [sys.executable, "-c",
             "import mmap, sys\n"
             "m = mmap.mmap(-1, 8 << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)\n"
             "m[:] = b'x' * (8 << 20)\n"
             "print('ready', flush=True)\n"
             "sys.stdin.read()\n"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(child.stdout.readline().strip(), "ready")
            r = run("coverage", str(child.pid))
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertTrue(r.stdout.startswith("pid %d: anon " % child.pid), r.stdout)
            anon_mib = float(r.stdout.split("anon ")[1].split(" MiB")[0])
            self.assertGreaterEqual(anon_mib, 8.0, r.stdout)
            r = run("query", str(child.pid), "--all")
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertGreater(len(r.stdout.splitlines()), 3, r.stdout)
        finally:
            child.stdin.close()
            child.wait()

    def test_query_self(self):
        r = run("query", "--all")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("python", r.stdout)

    def test_no_such_process(self):
        # A pid past pid_max exists nowhere.
        with open("/proc/sys/kernel/pid_max") as f:
            pid = int(f.read()) + 1
        r = run("coverage", str(pid))
        self.assertEqual(r.returncode, 1)
        self.assertIn("pid %d: no such process" % pid, r.stderr)

    def test_bad_command_line(self):
        for args in ([], ["frobnicate"], ["coverage", "x"], ["coverage", "0"],
                     ["coverage", "-5"]):
            r = run(*args)
            self.assertEqual(r.returncode, 2, (args, r.stdout, r.stderr))
            self.assertIn("usage:", r.stderr)

    def test_help(self):
        r = run("--help")
        self.assertEqual(r.returncode, 0)
        for cmd in ("probe", "coverage", "query", "version"):
            self.assertIn(cmd, r.stdout)


if __name__ == "__main__":
    unittest.main()
