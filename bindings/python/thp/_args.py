# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checks and conversions of the arguments before they reach libthp."""

import ctypes
import operator
from typing import Any, Dict, List, Optional, Tuple

from ._constants import Backend, PidfdLike, RangeLike, SELF


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
