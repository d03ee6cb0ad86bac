# SPDX-License-Identifier: LGPL-2.1-or-later
"""python3 -m thp: what the kernel offers, and a process's THP coverage.

  python3 -m thp probe              backends and capabilities of this kernel
  python3 -m thp coverage [PID]     resident anonymous memory and how much is huge
  python3 -m thp query [PID] [--all]
                                    per-mapping state (default: mappings with
                                    huge pages or THP advice)
  python3 -m thp version

PID defaults to this process; another process is reached through
os.pidfd_open() and needs the permission to read its /proc/PID/smaps.
Exit status: 0 done, 1 the call failed, 2 bad command line.
"""

import argparse
import enum
import errno
import os
import sys
from typing import Callable, List, Optional, TypeVar

import thp

_T = TypeVar("_T")


def _mib(n: int) -> str:
    return "%.1f MiB" % (n / (1 << 20))


def _with_pidfd(pid: Optional[int], call: Callable[[Optional[int]], _T]) -> _T:
    """call(pidfd) for pid (None: this process); closes the pidfd."""
    if pid is None:
        return call(None)
    fd = os.pidfd_open(pid)
    try:
        return call(fd)
    finally:
        os.close(fd)


def _name(v: object) -> str:
    return v.name.lower() if isinstance(v, enum.Enum) else str(v)


def _probe(_args: argparse.Namespace) -> None:
    info = thp.probe()
    print("libthp %s" % thp.version())
    print("thp mode: %s" % (info.thp_mode.name.lower()
                             if isinstance(info.thp_mode, thp.SysfsMode)
                             else info.thp_mode))
    print("pmd size: %d kB" % (info.pmd_size >> 10))
    print("backends: %s" % " ".join(thp.backend_name(b) for b in info.backends))
    for name in ("procmap_query", "process_madvise_self_huge",
                 "thp_disable_except_advised", "madvise_collapse",
                 "pmadv_skip_errors", "pmadv_no_error_on_unmapped",
                 "pmadv_set_default", "pmadv_entire_address_space"):
        print("%s: %s" % (name, "yes" if getattr(info, name) else "no"))
    for si in info.sizes:
        print("size %d kB: enabled %s, mode %s, huge policy %s"
              % (si.size >> 10, _name(si.enabled), _name(si.mode),
                 "yes" if si.huge_policy else "no"))
    print("huge policy can get: %s"
          % (" ".join("%d kB" % (n >> 10) for n in info.huge_policy_sizes) or "none"))


def _coverage(args: argparse.Namespace) -> None:
    cov = _with_pidfd(args.pid, lambda fd: thp.coverage(pidfd=fd))
    who = "pid %d" % args.pid if args.pid is not None else "pid %d (self)" % os.getpid()
    print("%s: anon %s, huge %s of %s that could be (%.1f%%)"
          % (who, _mib(cov.anon_bytes), _mib(cov.anon_huge_bytes),
             _mib(cov.anon_alignable_bytes), 100.0 * cov.ratio))


def _query(args: argparse.Namespace) -> None:
    states = _with_pidfd(args.pid, lambda fd: thp.query(pidfd=fd))
    print("%-33s %5s %10s %10s  %s" % ("range", "flags", "rss kB", "huge kB", "name"))
    for s in states:
        if not (args.all or s.anon_huge_bytes or s.advised_huge or s.advised_nohuge):
            continue
        flags = ("H" if s.advised_huge else "-") + ("N" if s.advised_nohuge else "-") \
            + ("e" if s.thp_eligible else "-") + ("a" if s.anonymous else "-")
        print("%016x-%016x %5s %10d %10d  %s"
              % (s.start, s.end, flags, s.rss_bytes >> 10, s.anon_huge_bytes >> 10, s.name))


def _version(_args: argparse.Namespace) -> None:
    print(thp.version())


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python3 -m thp",
                                description="libthp from Python: probe the kernel, "
                                "show a process's THP coverage and state.",
                                epilog="Flags of query: H advised huge, N advised "
                                "nohuge, e THP-eligible, a anonymous.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)
    sub.add_parser("probe", help="what this kernel offers").set_defaults(func=_probe)
    c = sub.add_parser("coverage", help="anonymous memory and how much of it is huge")
    c.add_argument("pid", type=int, nargs="?", help="process (default: this one)")
    c.set_defaults(func=_coverage)
    q = sub.add_parser("query", help="per-mapping THP state")
    q.add_argument("pid", type=int, nargs="?", help="process (default: this one)")
    q.add_argument("--all", action="store_true",
                   help="every mapping, not only those huge or advised")
    q.set_defaults(func=_query)
    sub.add_parser("version", help="libthp's version").set_defaults(func=_version)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    p = _parser()
    args = p.parse_args(argv)
    if getattr(args, "pid", None) is not None and args.pid <= 0:
        p.error("PID must be a positive integer, got %d" % args.pid)
    try:
        args.func(args)
    except thp.ThpError as e:
        print("python3 -m thp: %s" % e, file=sys.stderr)
        return 1
    except OSError as e:
        # os.pidfd_open(): no such process (ESRCH), or not permitted.
        pid = getattr(args, "pid", None)
        what = "no such process" if e.errno == errno.ESRCH else e.strerror
        print("python3 -m thp: pid %s: %s" % (pid, what), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
