# SPDX-License-Identifier: LGPL-2.1-or-later
"""The calls: one function for each libthp call."""

import ctypes
from typing import Iterable, List, Optional

from ._constants import (
    Backend, DefragMode, PROBE_MAX_SIZES, PidfdLike, Policy, RangeLike, SELF,
    ShmemMode, SizesSource, SysfsMode, _DEFAULT_F_NO_EXISTING,
    _DEFAULT_F_REQUIRE_PERSISTENT, _F_NO_ERROR_ON_UNMAPPED, _F_SKIP_ERRORS,
    _PROBE_UNKNOWN, _enum_or_int,
)
from ._structs import (
    _ApplyAllOpts, _ApplyOpts, _CollapseOpts, _DefaultOpts, _MappingState,
    _ProbeInfo, _QueryOpts, _Range, _Report,
)
from ._ffi import (
    _s, _thp_apply_all, _thp_apply_ranges, _thp_backend_name, _thp_collapse,
    _thp_get_default, _thp_policy_name, _thp_probe, _thp_query, _thp_set_default,
    _thp_strerror, _thp_version,
)
from ._types import (
    ApplyAllResult, ApplyResult, CollapseResult, Coverage, DefaultState,
    MappingState, ProbeInfo, Report, SizeInfo, _check,
)
from ._args import _Exports, _backend, _flags, _nonneg, _pidfd, _signed


def apply_ranges(ranges: Iterable[RangeLike], advice: int,
                 skip_errors: bool = False, no_error_on_unmapped: bool = False,
                 pidfd: PidfdLike = None,
                 backend: Optional[int] = None) -> ApplyResult:
    """Apply THP advice to ranges of one process (thp_apply_ranges()).

    ``ranges`` is an iterable of (address, length) tuples and/or writable
    buffer objects (mmap.mmap, bytearray, memoryview slices of them); the
    buffers are held exported until the call returns.
    Returns an ApplyResult; raises ThpError (with ``.reports``) on failure.
    """
    advice = _nonneg("advice", advice, "int")
    flags = _flags(skip_errors=(_F_SKIP_ERRORS, skip_errors),
                   no_error_on_unmapped=(_F_NO_ERROR_ON_UNMAPPED,
                                         no_error_on_unmapped))
    backend = _backend(backend)
    with _Exports() as exports:
        pairs = [exports.range_of(r) for r in ranges]
        n = len(pairs)
        c_ranges = (_Range * max(n, 1))()
        for i, (addr, length) in enumerate(pairs):
            c_ranges[i].addr = addr
            c_ranges[i].len = length
        c_reports = (_Report * max(n, 1))()
        opts = _ApplyOpts(sz=ctypes.sizeof(_ApplyOpts), pidfd=_pidfd(pidfd),
                          advice=advice, flags=flags, backend=backend,
                          reports=ctypes.cast(c_reports,
                                              ctypes.POINTER(_Report)))
        ret = _thp_apply_ranges(c_ranges, n, ctypes.byref(opts))
    reports = [Report._from_c(c_reports[i]) for i in range(n)]
    _check(ret, "thp_apply_ranges", reports)
    return ApplyResult(count=ret, backend=_enum_or_int(Backend, opts.backend_used),
                       reports=reports)


def apply_all(advice: int, skip_errors: bool = False, pidfd: PidfdLike = None,
              backend: Optional[int] = None,
              max_failures: int = 64) -> ApplyAllResult:
    """Apply THP advice to every mapping of one process (thp_apply_all()).

    Up to ``max_failures`` (failures_cap, a size_t) failed mappings are
    reported; an array of that many reports is allocated.
    """
    advice = _nonneg("advice", advice, "int")
    flags = _flags(skip_errors=(_F_SKIP_ERRORS, skip_errors))
    backend = _backend(backend)
    cap = _nonneg("max_failures", max_failures, "size_t")
    c_fail = (_Report * max(cap, 1))()
    opts = _ApplyAllOpts(sz=ctypes.sizeof(_ApplyAllOpts), pidfd=_pidfd(pidfd),
                         advice=advice, flags=flags, backend=backend,
                         failures=ctypes.cast(c_fail, ctypes.POINTER(_Report)),
                         failures_cap=cap)
    ret = _thp_apply_all(ctypes.byref(opts))
    failures = [Report._from_c(c_fail[i])
                for i in range(min(opts.failures_needed, cap))]
    _check(ret, "thp_apply_all", failures)
    return ApplyAllResult(count=ret,
                          backend=_enum_or_int(Backend, opts.backend_used),
                          mappings_seen=opts.mappings_seen,
                          mappings_advised=opts.mappings_advised,
                          mappings_skipped=opts.mappings_skipped,
                          bytes_advised=opts.bytes_advised,
                          failures_needed=opts.failures_needed,
                          failures=failures)


def set_default(policy: int, require_persistent: bool = False,
                no_existing: bool = False,
                backend: Optional[int] = None) -> DefaultState:
    """Set the default THP policy of the calling process (thp_set_default())."""
    policy = _nonneg("policy", policy, "uint32_t")
    flags = _flags(
        require_persistent=(_DEFAULT_F_REQUIRE_PERSISTENT, require_persistent),
        no_existing=(_DEFAULT_F_NO_EXISTING, no_existing))
    opts = _DefaultOpts(sz=ctypes.sizeof(_DefaultOpts), pidfd=SELF,
                        policy=policy, flags=flags, backend=_backend(backend))
    _check(_thp_set_default(ctypes.byref(opts)), "thp_set_default")
    return DefaultState(policy=_enum_or_int(Policy, opts.policy),
                        backend=_enum_or_int(Backend, opts.backend_used),
                        persistent=bool(opts.persistent),
                        mappings_changed=opts.mappings_changed)


def get_default(pidfd: PidfdLike = None) -> DefaultState:
    """Read the effective default policy of self or a pidfd (thp_get_default())."""
    opts = _DefaultOpts(sz=ctypes.sizeof(_DefaultOpts), pidfd=_pidfd(pidfd))
    _check(_thp_get_default(ctypes.byref(opts)), "thp_get_default")
    return DefaultState(policy=_enum_or_int(Policy, opts.policy),
                        backend=_enum_or_int(Backend, opts.backend_used),
                        persistent=bool(opts.persistent))


_KHUGEPAGED = ("pages_to_scan", "scan_sleep_millisecs", "alloc_sleep_millisecs",
               "max_ptes_none", "max_ptes_swap", "max_ptes_shared", "defrag")


def probe() -> ProbeInfo:
    """Report what the running kernel offers (thp_probe())."""
    info = _ProbeInfo(sz=ctypes.sizeof(_ProbeInfo))
    _check(_thp_probe(ctypes.byref(info)), "thp_probe")
    backends = [b for b in Backend if info.backends & (1 << int(b))]
    return ProbeInfo(
        backends=backends, backends_mask=info.backends,
        thp_mode=_enum_or_int(SysfsMode, info.thp_mode),
        pmd_size=info.pmd_size, pidfd_self=info.pidfd_self,
        procmap_query=info.procmap_query,
        pmadv_skip_errors=info.pmadv_skip_errors,
        pmadv_no_error_on_unmapped=info.pmadv_no_error_on_unmapped,
        pmadv_set_default=info.pmadv_set_default,
        pmadv_entire_address_space=info.pmadv_entire_address_space,
        process_madvise_self_huge=info.process_madvise_self_huge,
        thp_disable_except_advised=info.thp_disable_except_advised,
        madvise_collapse=info.madvise_collapse,
        sizes_source=_enum_or_int(SizesSource, info.sizes_source),
        nr_sizes=info.nr_sizes,
        sizes=[SizeInfo(size=si.size,
                        enabled=_enum_or_int(SysfsMode, si.enabled),
                        mode=_enum_or_int(SysfsMode, si.mode),
                        shmem_enabled=_enum_or_int(ShmemMode, si.shmem_enabled),
                        huge_policy=bool(si.huge_policy))
               for si in info.sizes[:min(info.nr_sizes, PROBE_MAX_SIZES)]],
        defrag=_enum_or_int(DefragMode, info.defrag),
        shmem_mode=_enum_or_int(ShmemMode, info.shmem_mode),
        khugepaged={name: (None if v == _PROBE_UNKNOWN else int(v))
                    for name, v in (
                        (n, getattr(info, "khugepaged_" + n)) for n in _KHUGEPAGED)})


def query(addr: int = 0, length: int = 0,
          pidfd: PidfdLike = None) -> List[MappingState]:
    """THP state of the mappings overlapping [addr, addr+length) (all when
    length is 0), from /proc/PID/smaps (thp_query())."""
    addr = _nonneg("addr", addr, "uint64_t")
    length = _nonneg("length", length, "uint64_t")
    fd = _pidfd(pidfd)
    cap = 0
    while True:
        states = (_MappingState * max(cap, 1))()
        opts = _QueryOpts(sz=ctypes.sizeof(_QueryOpts), pidfd=fd,
                          addr=addr, len=length,
                          states=ctypes.cast(states, ctypes.POINTER(_MappingState)),
                          states_cap=cap)
        ret = _check(_thp_query(ctypes.byref(opts)), "thp_query")
        if opts.states_needed <= cap:
            break
        # The address space may change between calls: leave some slack.
        cap = opts.states_needed + 16
    return [MappingState(start=s.start, end=s.end,
                         advised_huge=s.advised_huge,
                         advised_nohuge=s.advised_nohuge,
                         thp_eligible=s.thp_eligible, anonymous=s.anonymous,
                         anon_huge_bytes=s.anon_huge_bytes,
                         rss_bytes=s.rss_bytes, name=_s(s.name))
            for s in states[:ret]]


_QUERY_F_FOLIO_SIZES = 1 << 0
_FOLIO_SOURCES = {0: "none", 1: "kpageflags"}


def coverage(pidfd: PidfdLike = None, folio_sizes: bool = False) -> Coverage:
    """Anonymous memory, AnonHugePages and what could be huge, for self or a
    pidfd (the totals of thp_query()).  folio_sizes=True also counts the
    bytes in folios of each size from pagemap and kpageflags (root only;
    it costs a pagemap read of every mapping with anonymous memory)."""
    opts = _QueryOpts(sz=ctypes.sizeof(_QueryOpts), pidfd=_pidfd(pidfd),
                      flags=_QUERY_F_FOLIO_SIZES if folio_sizes else 0)
    _check(_thp_query(ctypes.byref(opts)), "thp_query")
    n = min(opts.nr_sizes, PROBE_MAX_SIZES)
    return Coverage(anon_bytes=opts.anon_bytes,
                    anon_huge_bytes=opts.anon_huge_bytes,
                    anon_alignable_bytes=opts.anon_alignable_bytes,
                    folio_source=_FOLIO_SOURCES.get(opts.folio_source, "unknown"),
                    folio_bytes={opts.sizes[i].size: opts.sizes[i].bytes
                                 for i in range(n)},
                    base_bytes=opts.anon_base_bytes,
                    other_bytes=opts.anon_other_bytes,
                    sized_alignable_bytes=opts.anon_sized_alignable_bytes)


def collapse(pidfd: PidfdLike = None, min_present_pages: int = 0,
             budget_bytes: int = 0, budget_ns: int = 0,
             max_failures: int = 16, max_shared_pages: int = 0) -> CollapseResult:
    """One collapse pass over self or a pidfd (thp_collapse()): the private
    anonymous, not-nohuge 2 MiB extents with at least ``min_present_pages``
    resident pages (0: the kernel's max_ptes_none) become huge pages, within
    ``budget_bytes`` / ``budget_ns`` (0: no limit).  An extent with more than
    ``max_shared_pages`` pages shared with another process (after a fork;
    0: the kernel's max_ptes_shared) is left alone: collapsing would copy
    them (``extents_shared``).  Up to ``max_failures`` (a size_t) refused
    extents are reported."""
    min_present = _nonneg("min_present_pages", min_present_pages, "uint32_t")
    max_shared = _nonneg("max_shared_pages", max_shared_pages, "uint32_t")
    budget_bytes = _nonneg("budget_bytes", budget_bytes, "uint64_t")
    budget_ns = _nonneg("budget_ns", budget_ns, "uint64_t")
    cap = _nonneg("max_failures", max_failures, "size_t")
    c_fail = (_Report * max(cap, 1))()
    opts = _CollapseOpts(sz=ctypes.sizeof(_CollapseOpts), pidfd=_pidfd(pidfd),
                         min_present_pages=min_present,
                         max_shared_pages=max_shared,
                         budget_bytes=budget_bytes, budget_ns=budget_ns,
                         failures=ctypes.cast(c_fail, ctypes.POINTER(_Report)),
                         failures_cap=cap)
    ret = _thp_collapse(ctypes.byref(opts))
    failures = [Report._from_c(c_fail[i])
                for i in range(min(opts.failures_needed, cap))]
    _check(ret, "thp_collapse", failures)
    return CollapseResult(
        count=ret, thp_disabled=bool(opts.thp_disabled),
        mappings_seen=opts.mappings_seen,
        mappings_eligible=opts.mappings_eligible,
        mappings_nohuge=opts.mappings_nohuge,
        extents_collapsed=opts.extents_collapsed,
        extents_sparse=opts.extents_sparse,
        extents_failed=opts.extents_failed,
        extents_over_budget=opts.extents_over_budget,
        bytes_collapsed=opts.bytes_collapsed, anon_bytes=opts.anon_bytes,
        anon_huge_before=opts.anon_huge_before,
        anon_huge_after=opts.anon_huge_after, elapsed_ns=opts.elapsed_ns,
        failures_needed=opts.failures_needed, failures=failures,
        extents_shared=opts.extents_shared)


def version() -> str:
    """Library version as "MAJOR.MINOR.PATCH"."""
    return _s(_thp_version())


def backend_name(backend: int) -> str:
    """Name of a backend ("pmadv", "madvise", ...; "unknown" past the last)."""
    return _s(_thp_backend_name(_nonneg("backend", backend, "unsigned int")))


def policy_name(policy: int) -> str:
    """Name of a policy ("system", "huge", "nohuge", "never"; "unknown")."""
    return _s(_thp_policy_name(_nonneg("policy", policy, "unsigned int")))


def strerror(err: int) -> str:
    """libthp message for an errno (positive or negative, a C int)."""
    return _s(_thp_strerror(_signed("err", err, "int")))
