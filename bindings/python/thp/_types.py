# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the calls return, and ThpError."""

import ctypes
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

from ._constants import (
    Backend, DefragMode, Policy, ShmemMode, SizesSource, SysfsMode, _enum_or_int,
)
from ._structs import _Report
from ._ffi import _s, _thp_report_format, _thp_strerror, _thp_strerror_detail


@dataclass
class Report:
    """One struct thp_report: what happened to one range or mapping."""
    addr: int
    len: int
    bytes_advised: int
    bytes_unmapped: int
    fail_addr: int
    error: int
    backend: Union[Backend, int]
    attempted: bool
    line: str = ""

    @classmethod
    def _from_c(cls, r: _Report) -> "Report":
        buf = ctypes.create_string_buffer(256)
        _thp_report_format(ctypes.byref(r), buf, len(buf))
        return cls(addr=r.addr, len=r.len, bytes_advised=r.bytes_advised,
                   bytes_unmapped=r.bytes_unmapped, fail_addr=r.fail_addr,
                   error=r.error, backend=_enum_or_int(Backend, r.backend),
                   attempted=bool(r.attempted), line=_s(buf.value))

    def __str__(self) -> str:
        return self.line or repr(self)


@dataclass
class ApplyResult:
    """Result of apply_ranges()."""
    count: int
    backend: Union[Backend, int]
    reports: List[Report] = field(default_factory=list)


@dataclass
class ApplyAllResult:
    """Result of apply_all(); failures lists the mappings that failed."""
    count: int
    backend: Union[Backend, int]
    mappings_seen: int
    mappings_advised: int
    mappings_skipped: int
    bytes_advised: int
    failures_needed: int
    failures: List[Report] = field(default_factory=list)


@dataclass
class DefaultState:
    """Result of set_default() / get_default()."""
    policy: Union[Policy, int]
    backend: Union[Backend, int]
    persistent: bool
    mappings_changed: int = 0


@dataclass
class SizeInfo:
    """One folio size the kernel offers (struct thp_size_info)."""
    size: int
    enabled: Union[SysfsMode, int]  # as written; INHERIT possible
    mode: Union[SysfsMode, int]     # inherit resolved
    shmem_enabled: Union[ShmemMode, int]
    huge_policy: bool               # a HUGE policy can get this size


@dataclass
class ProbeInfo:
    """What the running kernel offers (struct thp_probe_info)."""
    backends: List[Backend]
    backends_mask: int
    thp_mode: Union[SysfsMode, int]
    pmd_size: int
    pidfd_self: int
    procmap_query: bool
    pmadv_skip_errors: bool
    pmadv_no_error_on_unmapped: bool
    pmadv_set_default: bool
    pmadv_entire_address_space: bool
    process_madvise_self_huge: bool
    thp_disable_except_advised: bool
    madvise_collapse: bool
    # Since 0.2: every folio size and the other sysfs settings.  The
    # khugepaged values are None where unreadable.
    sizes_source: Union[SizesSource, int] = SizesSource.UNKNOWN
    nr_sizes: int = 0
    sizes: List[SizeInfo] = field(default_factory=list)
    defrag: Union[DefragMode, int] = DefragMode.UNKNOWN
    shmem_mode: Union[ShmemMode, int] = ShmemMode.UNKNOWN
    khugepaged: Dict[str, Optional[int]] = field(default_factory=dict)

    @property
    def huge_policy_sizes(self) -> List[int]:
        """The sizes a HUGE policy can get here, smallest first."""
        return [s.size for s in self.sizes if s.huge_policy]


@dataclass
class MappingState:
    """THP state of one mapping (struct thp_mapping_state)."""
    start: int
    end: int
    advised_huge: bool
    advised_nohuge: bool
    thp_eligible: bool
    anonymous: bool
    anon_huge_bytes: int
    rss_bytes: int
    name: str


class ThpError(OSError):
    """A libthp call failed.

    ``errno`` is the positive errno, ``strerror`` comes from thp_strerror(),
    ``detail`` from thp_strerror_detail() and ``reports`` holds the per-range
    (or per-failed-mapping) reports when the call produces them.
    """

    def __init__(self, err: int, func: str = "", detail: str = "",
                 reports: Optional[List[Report]] = None) -> None:
        err = abs(err)
        super().__init__(err, _s(_thp_strerror(-err)))
        self.func = func
        self.detail = detail
        self.reports = reports if reports is not None else []

    def __str__(self) -> str:
        s = "[Errno %d] %s" % (self.errno, self.strerror)
        if self.func:
            s = "%s: %s" % (self.func, s)
        if self.detail:
            s += " (%s)" % self.detail
        return s


def _check(ret: int, func: str, reports: Optional[List[Report]] = None) -> int:
    if ret < 0:
        detail = _s(_thp_strerror_detail())
        raise ThpError(-ret, func, detail, reports)
    return ret



@dataclass
class Coverage:
    """Effective THP coverage of a process (thp_query() totals): resident
    anonymous memory, how much of it is huge, and how much could be (that
    of private anonymous mappings not advised nohuge, in whole 2 MiB
    extents)."""
    anon_bytes: int
    anon_huge_bytes: int
    anon_alignable_bytes: int
    #: With folio_sizes=True: "kpageflags" where the caller may read page
    #: frames (root), else "none" and the figures below are 0, not estimates.
    folio_source: str = "none"
    #: Anonymous bytes by folio size in bytes (every size the kernel offers).
    folio_bytes: Dict[int, int] = field(default_factory=dict)
    base_bytes: int = 0
    other_bytes: int = 0
    #: What could be huge in whole extents of the smallest size a HUGE
    #: policy can get here (0 when none can).
    sized_alignable_bytes: int = 0

    @property
    def ratio(self) -> float:
        """anon_huge_bytes / anon_alignable_bytes (0.0 when nothing could be huge)."""
        if not self.anon_alignable_bytes:
            return 0.0
        return self.anon_huge_bytes / self.anon_alignable_bytes



@dataclass
class CollapseResult:
    """Result of collapse() (struct thp_collapse_opts)."""
    count: int
    thp_disabled: bool
    mappings_seen: int
    mappings_eligible: int
    mappings_nohuge: int
    extents_collapsed: int
    extents_sparse: int
    extents_failed: int
    extents_over_budget: int
    bytes_collapsed: int
    anon_bytes: int
    anon_huge_before: int
    anon_huge_after: int
    elapsed_ns: int
    failures_needed: int
    failures: List[Report] = field(default_factory=list)
    extents_shared: int = 0
