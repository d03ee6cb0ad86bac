# SPDX-License-Identifier: LGPL-2.1-or-later
"""The C structures of thp.h as ctypes, their sizes checked at import."""

import ctypes
from typing import Any

from ._constants import PROBE_MAX_SIZES


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
