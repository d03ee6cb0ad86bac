# SPDX-License-Identifier: LGPL-2.1-or-later
"""Loading libthp and the prototypes of its functions."""

import ctypes
import ctypes.util
import os
from typing import Any, Callable, List, Optional, cast

from ._structs import (
    _ApplyAllOpts, _ApplyOpts, _CollapseOpts, _DefaultOpts, _ProbeInfo, _QueryOpts,
    _Range, _Report,
)


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
