# SPDX-License-Identifier: LGPL-2.1-or-later
"""The C API's constants and enums, and the type aliases of the arguments."""

import enum
import mmap
from typing import Protocol, Tuple, Type, TypeVar, Union



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




class SupportsFileno(Protocol):
    """An object with fileno(), e.g. a pidfd wrapper."""

    def fileno(self) -> int: ...


#: A range: (address, length), or a writable contiguous buffer object
#: (mmap.mmap, bytearray, memoryview, ctypes array, ...).
RangeLike = Union[Tuple[int, int], mmap.mmap, bytearray, memoryview]
#: None or SELF (0): the calling process; otherwise a pidfd.
PidfdLike = Union[None, int, SupportsFileno]
