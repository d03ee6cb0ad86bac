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

# The standard-library names the one-file module imported: `from thp import
# ctypes` and the like worked, so they still do.
import ctypes  # noqa: F401
import ctypes.util  # noqa: F401
import enum
import mmap
import operator
import os
from dataclasses import dataclass, field
from typing import (Any, Callable, Dict, Iterable, List, Optional, Protocol,
                    Tuple, Type, TypeVar, Union, cast)

# Every name the package defines, the private ones too, stays importable from thp.
from ._constants import (  # noqa: F401
    Advice, Backend, COLLAPSE, DefragMode, HUGE, MAX_RANGES, NOHUGE, PROBE_MAX_SIZES,
    PidfdLike, Policy, RangeLike, SELF, ShmemMode, SizesSource, SupportsFileno,
    SysfsMode, _DEFAULT_F_NO_EXISTING, _DEFAULT_F_REQUIRE_PERSISTENT, _E,
    _F_NO_ERROR_ON_UNMAPPED, _F_SKIP_ERRORS, _PROBE_UNKNOWN, _enum_or_int,
)
from ._structs import (  # noqa: F401
    _ApplyAllOpts, _ApplyOpts, _CollapseOpts, _DefaultOpts, _EXPECTED_SIZES,
    _FolioBytes, _MappingState, _ProbeInfo, _QueryOpts, _Range, _Report, _SizeInfo,
    _ptr64,
)
from ._ffi import (  # noqa: F401
    _fn, _lib, _load, _s, _thp_apply_all, _thp_apply_ranges, _thp_backend_name,
    _thp_collapse, _thp_get_default, _thp_policy_name, _thp_probe, _thp_query,
    _thp_report_format, _thp_set_default, _thp_strerror, _thp_strerror_detail,
    _thp_version,
)
from ._types import (  # noqa: F401
    ApplyAllResult, ApplyResult, CollapseResult, Coverage, DefaultState, MappingState,
    ProbeInfo, Report, SizeInfo, ThpError, _check,
)
from ._args import (  # noqa: F401
    _C_LIMITS, _Exports, _backend, _c_limits, _fits, _flags, _index, _nonneg, _option,
    _pidfd, _signed,
)
from ._api import (  # noqa: F401
    _FOLIO_SOURCES, _KHUGEPAGED, _QUERY_F_FOLIO_SIZES, apply_all, apply_ranges,
    backend_name, collapse, coverage, get_default, policy_name, probe, query,
    set_default, strerror, version,
)

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

# The public classes and functions keep the module they had before the
# split into modules: tracebacks print thp.ThpError, help() and pickle
# name thp.X.
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) or callable(_obj) and hasattr(_obj, "__code__"):
        _obj.__module__ = __name__
del _name, _obj
