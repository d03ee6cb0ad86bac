# SPDX-License-Identifier: LGPL-2.1-or-later
"""ctypes binding for libthp: per-process transparent huge page policy.

The library is loaded from the path in the ``THP_LIBRARY`` environment
variable when set, otherwise from ``ctypes.util.find_library('thp')`` and
finally ``libthp.so.0``.  Every failing call raises :class:`ThpError`.

Arguments are checked before anything reaches libthp (ctypes itself would
silently truncate an integer to its C type): a non-integer or a bool where
an integer is meant raises TypeError, a negative value where the API takes
none raises ValueError, a value too large for the argument's C type (or,
for strerror(), too small) raises OverflowError.  Values that fit but that
libthp does not accept (advice 4, an unaligned address) raise ThpError from
the library, as in C.  Buffer objects given as ranges stay alive and
exported (cannot be closed or resized) until the C call has returned.
"""

import ctypes
import ctypes.util
import enum
import mmap
import operator
import os
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Iterable, List, Optional, Protocol,
                    Tuple, Type, TypeVar, Union, cast)

__all__ = [
    "Advice", "Policy", "Backend", "SysfsMode", "ShmemMode", "DefragMode", "SizesSource",
    "HUGE", "NOHUGE", "COLLAPSE",
    "SELF", "MAX_RANGES",
    "ThpError", "Report", "ApplyResult", "ApplyAllResult", "DefaultState",
    "ProbeInfo", "SizeInfo", "MappingState", "Coverage", "CollapseResult",
    "apply_ranges", "apply_all", "set_default", "get_default", "probe",
    "query", "coverage", "collapse", "version", "backend_name", "policy_name", "strerror",
    "RangeLike", "PidfdLike", "SupportsFileno",
]


# ---------------------------------------------------------------- constants

class Advice(enum.IntEnum):
    """enum thp_advice (the kernel's MADV_* values)."""
    HUGE = 14
    NOHUGE = 15
    COLLAPSE = 25


HUGE = Advice.HUGE
NOHUGE = Advice.NOHUGE
COLLAPSE = Advice.COLLAPSE


class Backend(enum.IntEnum):
    """enum thp_backend."""
    AUTO = 0
    PMADV = 1
    PROCESS_MADVISE = 2
    MADVISE = 3
    PRCTL_POLICY = 4
    PRCTL_DISABLE = 5
    EXISTING_ONLY = 6
    PRELOAD = 7
    INJECT = 8


class Policy(enum.IntEnum):
    """enum thp_policy: process-wide default THP policy."""
    SYSTEM = 0
    HUGE = 1
    NOHUGE = 2
    NEVER = 3


class SysfsMode(enum.IntEnum):
    """enum thp_sysfs_mode: /sys/kernel/mm/transparent_hugepage/enabled."""
    ALWAYS = 0
    MADVISE = 1
    NEVER = 2
    UNKNOWN = 3
    INHERIT = 4  # a size's own "enabled" only


class ShmemMode(enum.IntEnum):
    """enum thp_shmem_mode: shmem_enabled, top-level and per size."""
    ALWAYS = 0
    WITHIN_SIZE = 1
    ADVISE = 2
    NEVER = 3
    DENY = 4
    FORCE = 5
    INHERIT = 6
    UNKNOWN = 7


class DefragMode(enum.IntEnum):
    """enum thp_defrag_mode: /sys/kernel/mm/transparent_hugepage/defrag."""
    ALWAYS = 0
    DEFER = 1
    DEFER_MADVISE = 2
    MADVISE = 3
    NEVER = 4
    UNKNOWN = 5


class SizesSource(enum.IntEnum):
    """enum thp_sizes_source: where ProbeInfo.sizes came from."""
    UNKNOWN = 0
    PMD_ONLY = 1
    PER_SIZE = 2


SELF = 0
PROBE_MAX_SIZES = 16
_PROBE_UNKNOWN = 0xFFFFFFFF
MAX_RANGES = 1 << 20

_F_SKIP_ERRORS = 1 << 0
_F_NO_ERROR_ON_UNMAPPED = 1 << 1
_DEFAULT_F_REQUIRE_PERSISTENT = 1 << 0
_DEFAULT_F_NO_EXISTING = 1 << 1


_E = TypeVar("_E", bound=enum.IntEnum)


def _enum_or_int(cls: Type[_E], value: int) -> Union[_E, int]:
    """An enum member, or the plain int for an id this binding does not know."""
    try:
        return cls(value)
    except ValueError:
        return value


# ------------------------------------------------------------ C structures

def _ptr64(name: str, ptr_type: Any) -> Any:
    """THP_PTR64 in thp.h: a pointer in an 8-byte slot on every ABI."""
    return type("_" + name + "_slot", (ctypes.Union,),
                {"_fields_": [(name, ptr_type), (name + "_u64", ctypes.c_uint64)]})


class _Range(ctypes.Structure):
    _fields_ = [("addr", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Report(ctypes.Structure):
    _fields_ = [
        ("addr", ctypes.c_uint64),
        ("len", ctypes.c_uint64),
        ("bytes_advised", ctypes.c_uint64),
        ("bytes_unmapped", ctypes.c_uint64),
        ("fail_addr", ctypes.c_uint64),
        ("error", ctypes.c_int32),
        ("backend", ctypes.c_uint32),
        ("attempted", ctypes.c_uint32),
        ("reserved0", ctypes.c_uint32),
        ("reserved", ctypes.c_uint64 * 2),
    ]


class _ApplyOpts(ctypes.Structure):
    _anonymous_ = ("_reports",)
    _fields_ = [
        ("sz", ctypes.c_uint64),
        ("pidfd", ctypes.c_int32),
        ("advice", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
        ("backend", ctypes.c_uint32),
        ("_reports", _ptr64("reports", ctypes.POINTER(_Report))),
        ("backend_used", ctypes.c_uint32),
        ("reserved0", ctypes.c_uint32),
    ]


class _ApplyAllOpts(ctypes.Structure):
    _anonymous_ = ("_failures",)
    _fields_ = [
        ("sz", ctypes.c_uint64),
        ("pidfd", ctypes.c_int32),
        ("advice", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
        ("backend", ctypes.c_uint32),
        ("_failures", _ptr64("failures", ctypes.POINTER(_Report))),
        ("failures_cap", ctypes.c_uint64),
        ("failures_needed", ctypes.c_uint64),
        ("mappings_seen", ctypes.c_uint64),
        ("mappings_advised", ctypes.c_uint64),
        ("mappings_skipped", ctypes.c_uint64),
        ("bytes_advised", ctypes.c_uint64),
        ("backend_used", ctypes.c_uint32),
        ("reserved0", ctypes.c_uint32),
    ]


class _DefaultOpts(ctypes.Structure):
    _fields_ = [
        ("sz", ctypes.c_uint64),
        ("pidfd", ctypes.c_int32),
        ("policy", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("backend", ctypes.c_uint32),
        ("prctl_set", ctypes.c_int32),
        ("prctl_get", ctypes.c_int32),
        ("backend_used", ctypes.c_uint32),
        ("persistent", ctypes.c_bool),
        ("reserved0", ctypes.c_uint8 * 3),
        ("mappings_changed", ctypes.c_uint64),
    ]


class _SizeInfo(ctypes.Structure):
    _fields_ = [
        ("size", ctypes.c_uint64),
        ("enabled", ctypes.c_uint8),
        ("mode", ctypes.c_uint8),
        ("shmem_enabled", ctypes.c_uint8),
        ("huge_policy", ctypes.c_bool),
        ("reserved0", ctypes.c_uint32),
    ]


class _ProbeInfo(ctypes.Structure):
    _fields_ = [
        ("sz", ctypes.c_uint64),
        ("backends", ctypes.c_uint32),
        ("thp_mode", ctypes.c_uint32),
        ("pmd_size", ctypes.c_uint64),
        ("pidfd_self", ctypes.c_int32),
        ("procmap_query", ctypes.c_bool),
        ("pmadv_skip_errors", ctypes.c_bool),
        ("pmadv_no_error_on_unmapped", ctypes.c_bool),
        ("pmadv_set_default", ctypes.c_bool),
        ("pmadv_entire_address_space", ctypes.c_bool),
        ("process_madvise_self_huge", ctypes.c_bool),
        ("thp_disable_except_advised", ctypes.c_bool),
        ("madvise_collapse", ctypes.c_bool),
        ("reserved0", ctypes.c_uint32),
        # Since 0.2 (THP_PROBE_INFO_SIZE_VER1).
        ("sizes_source", ctypes.c_uint32),
        ("nr_sizes", ctypes.c_uint32),
        ("defrag", ctypes.c_uint32),
        ("shmem_mode", ctypes.c_uint32),
        ("khugepaged_pages_to_scan", ctypes.c_uint32),
        ("khugepaged_scan_sleep_millisecs", ctypes.c_uint32),
        ("khugepaged_alloc_sleep_millisecs", ctypes.c_uint32),
        ("khugepaged_max_ptes_none", ctypes.c_uint32),
        ("khugepaged_max_ptes_swap", ctypes.c_uint32),
        ("khugepaged_max_ptes_shared", ctypes.c_uint32),
        ("khugepaged_defrag", ctypes.c_uint32),
        ("reserved1", ctypes.c_uint32),
        ("sizes", _SizeInfo * PROBE_MAX_SIZES),
    ]


class _MappingState(ctypes.Structure):
    _fields_ = [
        ("start", ctypes.c_uint64),
        ("end", ctypes.c_uint64),
        ("advised_huge", ctypes.c_bool),
        ("advised_nohuge", ctypes.c_bool),
        ("thp_eligible", ctypes.c_bool),
        ("anonymous", ctypes.c_bool),
        ("reserved0", ctypes.c_uint32),
        ("anon_huge_bytes", ctypes.c_uint64),
        ("rss_bytes", ctypes.c_uint64),
        ("name", ctypes.c_char * 64),
    ]


class _FolioBytes(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint64), ("bytes", ctypes.c_uint64)]


class _QueryOpts(ctypes.Structure):
    _anonymous_ = ("_states",)
    _fields_ = [
        ("sz", ctypes.c_uint64),
        ("pidfd", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
        ("addr", ctypes.c_uint64),
        ("len", ctypes.c_uint64),
        ("_states", _ptr64("states", ctypes.POINTER(_MappingState))),
        ("states_cap", ctypes.c_uint64),
        ("states_needed", ctypes.c_uint64),
        ("anon_bytes", ctypes.c_uint64),
        ("anon_huge_bytes", ctypes.c_uint64),
        ("anon_alignable_bytes", ctypes.c_uint64),
        # Since VER2: bytes by folio size (THP_QUERY_F_FOLIO_SIZES).
        ("folio_source", ctypes.c_uint32),
        ("nr_sizes", ctypes.c_uint32),
        ("folios", ctypes.c_uint64),  # per-mapping array: not used here
        ("anon_base_bytes", ctypes.c_uint64),
        ("anon_other_bytes", ctypes.c_uint64),
        ("anon_sized_alignable_bytes", ctypes.c_uint64),
        ("sizes", _FolioBytes * PROBE_MAX_SIZES),
    ]


class _CollapseOpts(ctypes.Structure):
    _anonymous_ = ("_failures",)
    _fields_ = [
        ("sz", ctypes.c_uint64),
        ("pidfd", ctypes.c_int32),
        ("flags", ctypes.c_uint32),
        ("min_present_pages", ctypes.c_uint32),
        ("reserved0", ctypes.c_uint32),
        ("budget_bytes", ctypes.c_uint64),
        ("budget_ns", ctypes.c_uint64),
        ("_failures", _ptr64("failures", ctypes.POINTER(_Report))),
        ("failures_cap", ctypes.c_uint64),
        ("failures_needed", ctypes.c_uint64),
        ("mappings_seen", ctypes.c_uint64),
        ("mappings_eligible", ctypes.c_uint64),
        ("mappings_nohuge", ctypes.c_uint64),
        ("extents_collapsed", ctypes.c_uint64),
        ("extents_sparse", ctypes.c_uint64),
        ("extents_failed", ctypes.c_uint64),
        ("extents_over_budget", ctypes.c_uint64),
        ("bytes_collapsed", ctypes.c_uint64),
        ("anon_bytes", ctypes.c_uint64),
        ("anon_huge_before", ctypes.c_uint64),
        ("anon_huge_after", ctypes.c_uint64),
        ("thp_disabled", ctypes.c_uint32),
        ("reserved1", ctypes.c_uint32),
        ("elapsed_ns", ctypes.c_uint64),
        # THP_COLLAPSE_OPTS_SIZE_VER1
        ("extents_small_folios", ctypes.c_uint64),
        ("small_folio_bytes_before", ctypes.c_uint64),
        ("small_folio_bytes_after", ctypes.c_uint64),
        ("folio_source", ctypes.c_uint32),
        ("reserved2", ctypes.c_uint32),
        # THP_COLLAPSE_OPTS_SIZE_VER2
        ("max_shared_pages", ctypes.c_uint32),
        ("reserved3", ctypes.c_uint32),
        ("extents_shared", ctypes.c_uint64),
    ]


# The same sizes on every ABI (thp.h's _Static_asserts): the layout must
# match thp.h exactly.  An ImportError rather than an assert, which python
# -O would drop.
_EXPECTED_SIZES = {
    _Range: 16,
    _Report: 72,
    _ApplyOpts: 40,
    _ApplyAllOpts: 88,
    _DefaultOpts: 48,
    _SizeInfo: 16,
    _ProbeInfo: 344,
    _MappingState: 104,
    _FolioBytes: 16,
    _QueryOpts: 376,
    _CollapseOpts: 216,
}
for _cls, _size in _EXPECTED_SIZES.items():
    if ctypes.sizeof(_cls) != _size:
        raise ImportError("thp: %s is %d bytes, thp.h says %d"
                          % (_cls.__name__, ctypes.sizeof(_cls), _size))


# ----------------------------------------------------------------- loading

def _load() -> ctypes.CDLL:
    path = os.environ.get("THP_LIBRARY")
    if not path:
        path = ctypes.util.find_library("thp") or "libthp.so.0"
    return ctypes.CDLL(path)


_lib = _load()


def _fn(name: str, restype: Any, argtypes: List[Any]) -> Callable[..., Any]:
    f = getattr(_lib, name)
    f.restype = restype
    f.argtypes = argtypes
    return cast(Callable[..., Any], f)


_thp_apply_ranges = _fn("thp_apply_ranges", ctypes.c_int,
                        [ctypes.POINTER(_Range), ctypes.c_size_t,
                         ctypes.POINTER(_ApplyOpts)])
_thp_apply_all = _fn("thp_apply_all", ctypes.c_int, [ctypes.POINTER(_ApplyAllOpts)])
_thp_set_default = _fn("thp_set_default", ctypes.c_int, [ctypes.POINTER(_DefaultOpts)])
_thp_get_default = _fn("thp_get_default", ctypes.c_int, [ctypes.POINTER(_DefaultOpts)])
_thp_probe = _fn("thp_probe", ctypes.c_int, [ctypes.POINTER(_ProbeInfo)])
_thp_query = _fn("thp_query", ctypes.c_int, [ctypes.POINTER(_QueryOpts)])
_thp_collapse = _fn("thp_collapse", ctypes.c_int, [ctypes.POINTER(_CollapseOpts)])
_thp_backend_name = _fn("thp_backend_name", ctypes.c_char_p, [ctypes.c_uint])
_thp_policy_name = _fn("thp_policy_name", ctypes.c_char_p, [ctypes.c_uint])
_thp_strerror = _fn("thp_strerror", ctypes.c_char_p, [ctypes.c_int])
_thp_strerror_detail = _fn("thp_strerror_detail", ctypes.c_char_p, [])
_thp_report_format = _fn("thp_report_format", ctypes.c_int,
                         [ctypes.POINTER(_Report), ctypes.c_char_p, ctypes.c_size_t])
_thp_version = _fn("thp_version", ctypes.c_char_p, [])


def _s(b: Optional[bytes]) -> str:
    return b.decode("utf-8", "replace") if b is not None else ""


# ------------------------------------------------------------ result types

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


# ------------------------------------------------------- argument checks

def _c_limits(ctype: Any) -> Tuple[int, int]:
    bits = 8 * ctypes.sizeof(ctype)
    if ctype(-1).value < 0:
        return -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    return 0, (1 << bits) - 1


# By C spelling: ctypes.c_uint64 and c_size_t are the same class on LP64,
# so the class cannot name the type in a message.
_C_LIMITS: Dict[str, Tuple[int, int]] = {
    "int": _c_limits(ctypes.c_int),
    "unsigned int": _c_limits(ctypes.c_uint),
    "uint32_t": _c_limits(ctypes.c_uint32),
    "uint64_t": _c_limits(ctypes.c_uint64),
    "size_t": _c_limits(ctypes.c_size_t),
}


def _index(name: str, value: Any) -> int:
    """value as an int; bools are refused (pidfd=True would be stdout)."""
    if isinstance(value, bool):
        raise TypeError("%s must be an integer, not bool" % name)
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError("%s must be an integer, not %s"
                        % (name, type(value).__name__)) from None


def _fits(name: str, value: int, ctype: str) -> int:
    lo, hi = _C_LIMITS[ctype]
    if not lo <= value <= hi:
        raise OverflowError("%s %d does not fit the C type %s (%d..%d)"
                            % (name, value, ctype, lo, hi))
    return value


def _nonneg(name: str, value: Any, ctype: str) -> int:
    """A non-negative integer argument passed to libthp as @ctype."""
    v = _index(name, value)
    if v < 0:
        raise ValueError("%s must not be negative, got %d" % (name, v))
    return _fits(name, v, ctype)


def _signed(name: str, value: Any, ctype: str) -> int:
    """A signed integer argument passed to libthp as @ctype."""
    return _fits(name, _index(name, value), ctype)


def _option(name: str, value: Any) -> bool:
    """A boolean option: True/False, or the integers 0 and 1."""
    if isinstance(value, bool):
        return value
    v = _index(name, value)
    if v not in (0, 1):
        raise ValueError("%s must be True or False, got %d" % (name, v))
    return bool(v)


def _flags(**options: Tuple[int, Any]) -> int:
    """THP_F_* / THP_DEFAULT_F_* bits from name=(bit, value) keywords."""
    flags = 0
    for name, (bit, value) in options.items():
        if _option(name, value):
            flags |= bit
    return flags


def _pidfd(pidfd: "PidfdLike") -> int:
    """None or SELF (0): this process; an int or an object with fileno():
    a pidfd.  Call it after every other conversion: user code run later
    (a ranges generator) could close the descriptor."""
    if pidfd is None:
        return SELF
    if not isinstance(pidfd, int) and hasattr(pidfd, "fileno"):
        fd = _nonneg("pidfd.fileno()", pidfd.fileno(), "int")
        # libthp reads 0 as THP_SELF: a pidfd object on descriptor 0 would
        # silently stand for this process.
        if fd == SELF:
            raise ValueError("this pidfd is descriptor 0, which libthp reads "
                             "as THP_SELF; dup() it to another descriptor")
        return fd
    return _nonneg("pidfd", pidfd, "int")


def _backend(backend: Optional[int]) -> int:
    if backend is None:
        return Backend.AUTO
    return _nonneg("backend", backend, "uint32_t")


class _Exports:
    """Buffer exports held until the C call returns.

    While one of these memoryviews is unreleased, its object is kept alive
    and cannot be closed (mmap) or resized (bytearray), so the address
    handed to libthp stays mapped: a generator of temporary mmaps would
    otherwise free each one before the call.  (A memoryview the caller
    passed may be released meanwhile: ours shares its export.)"""

    def __init__(self) -> None:
        self._views: List[memoryview] = []

    def __enter__(self) -> "_Exports":
        return self

    def __exit__(self, *exc: object) -> None:
        while self._views:
            self._views.pop().release()

    def range_of(self, item: "RangeLike") -> Tuple[int, int]:
        """(address, length) of a range: a tuple or a writable buffer."""
        if isinstance(item, tuple):
            if len(item) != 2:
                raise TypeError("a range tuple is (address, length), got %d "
                                "items" % len(item))
            return (_nonneg("range address", item[0], "uint64_t"),
                    _nonneg("range length", item[1], "uint64_t"))
        try:
            view = memoryview(item)
        except TypeError:
            raise TypeError("range must be an (address, length) tuple or a "
                            "buffer object, not %r"
                            % type(item).__name__) from None
        self._views.append(view)
        length = view.nbytes
        if length == 0:
            return 0, 0
        if view.readonly:
            raise TypeError("read-only buffers are not supported; pass "
                            "(address, length) instead")
        if not view.c_contiguous:
            raise TypeError("buffer must be contiguous")
        # from_buffer() exports view once more; drop that at once so that
        # __exit__ can release view.
        anchor = ctypes.c_char.from_buffer(view)
        addr = ctypes.addressof(anchor)
        del anchor
        return addr, length


# -------------------------------------------------------------------- API

class SupportsFileno(Protocol):
    """An object with fileno(), e.g. a pidfd wrapper."""

    def fileno(self) -> int: ...


#: A range: (address, length), or a writable contiguous buffer object
#: (mmap.mmap, bytearray, memoryview, ctypes array, ...).
RangeLike = Union[Tuple[int, int], mmap.mmap, bytearray, memoryview]
#: None or SELF (0): the calling process; otherwise a pidfd.
PidfdLike = Union[None, int, SupportsFileno]


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
