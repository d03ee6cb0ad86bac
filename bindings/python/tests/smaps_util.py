# SPDX-License-Identifier: LGPL-2.1-or-later
"""Helpers shared by the binding's tests: raw mappings, buffer addresses and
/proc/self/smaps VmFlags."""

import ctypes
import mmap
import os

PMD = 2 << 20
PAGE = mmap.PAGESIZE

_libc = ctypes.CDLL(None, use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                       ctypes.c_int, ctypes.c_int, ctypes.c_long]
_libc.munmap.restype = ctypes.c_int
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_MAP_FAILED = ctypes.c_void_p(-1).value
_MAP_FIXED = 0x10  # <sys/mman.h>; the mmap module does not export it


def raw_mmap(length, fixed_addr=None):
    """An anonymous private mapping that no Python object owns; at
    fixed_addr (replacing what is there: a fresh VMA, no hg/nh) if given."""
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    if fixed_addr is not None:
        flags |= _MAP_FIXED
    addr = _libc.mmap(fixed_addr, length, mmap.PROT_READ | mmap.PROT_WRITE,
                      flags, -1, 0)
    if addr in (None, _MAP_FAILED):
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return addr


def raw_munmap(addr, length):
    return _libc.munmap(addr, length)


def private_map(length, cls=mmap.mmap):
    """An mmap.mmap (or subclass) of anonymous MAP_PRIVATE memory.
    mmap.mmap(-1, n) defaults to MAP_SHARED, which is shmem and follows
    shmem_enabled rather than anonymous THP rules."""
    return cls(-1, length, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)


def buffer_address(buf):
    """Start address of a writable buffer object."""
    c = ctypes.c_char.from_buffer(buf)
    addr = ctypes.addressof(c)
    del c
    return addr


def _smaps_line(addr, key):
    """The fields after @key of the /proc/self/smaps mapping that contains
    addr, or None."""
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            head = line.split(None, 1)[0]
            if "-" in head and not head.endswith(":"):
                start, end = (int(x, 16) for x in head.split("-"))
                inside = start <= addr < end
            elif inside and line.startswith(key):
                return line.split()[1:]
    return None


def vmflags(addr):
    """VmFlags of the /proc/self/smaps mapping that contains addr."""
    return _smaps_line(addr, "VmFlags:")


def huge_kb(addr):
    """AnonHugePages (kB) of the /proc/self/smaps mapping that contains addr."""
    fields = _smaps_line(addr, "AnonHugePages:")
    return int(fields[0]) if fields else None
