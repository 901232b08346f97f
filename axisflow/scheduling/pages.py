"""Arrays whose pages are mapped before they are written.

A fresh large array (NumPy maps one of 32 MiB or more, or 1 MiB with
glibc's defaults, straight from the kernel) costs a page fault on the first
write to every 4 KiB page: the kernel maps and zeroes one page per fault.
Under a virtual machine a fault is dear: on this project's machine (a
Firecracker guest) touching a fresh 512 MiB array took 0.34 to 2.5 s, and
a matrix product writing its fresh result ran at 26 GFLOP/s instead of
the 45 it reaches into memory already mapped. Linux (5.14 and newer) maps
a whole range in one call, ``madvise(MADV_POPULATE_WRITE)``: the same
array then took 0.07 to 0.13 s (``docs/benchmarks-executor.md``).

``empty`` and ``zeros`` allocate as NumPy does and then populate the pages
of an array of ``POPULATE_BYTES`` or more. The array's bytes, and so the
memory the model counts, are the same: only when its pages are mapped
changes (all at once, instead of at each page's first write). Where the
call is not available (another system, an older kernel, no C library),
they are NumPy's ``empty`` and ``zeros``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import mmap
import sys
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

POPULATE_BYTES = 1024**2
"""Arrays from this many bytes have their pages mapped in one call: below
it, glibc serves them from its heap, mostly from pages already mapped."""

_MADV_POPULATE_WRITE = 23
"""Linux's ``MADV_POPULATE_WRITE`` (``<linux/mman.h>``, Linux 5.14)."""

_PAGE = mmap.PAGESIZE
"""The system's page size (4 KiB on x86-64, up to 64 KiB elsewhere)."""


class _Populate:
    """``madvise(MADV_POPULATE_WRITE)`` through the C library, found once;
    switched off for good at its first failure (an older kernel says
    ``EINVAL``): the array is then faulted in as NumPy leaves it."""

    def __init__(self) -> None:
        self.madvise: Callable[[int, int, int], int] | None = None
        if sys.platform.startswith("linux"):
            name = ctypes.util.find_library("c")
            try:
                library = ctypes.CDLL(name or "libc.so.6", use_errno=True)
                madvise = library.madvise
            except (OSError, AttributeError):
                return
            madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
            madvise.restype = ctypes.c_int
            self.madvise = madvise

    def __call__(self, array: Array) -> None:
        """Map the whole pages ``array`` spans (it owns its memory)."""
        madvise = self.madvise
        if madvise is None or array.nbytes < POPULATE_BYTES:
            return
        address = array.ctypes.data
        start = address - address % _PAGE
        end = address + array.nbytes
        if madvise(start, end - start, _MADV_POPULATE_WRITE) != 0:
            self.madvise = None


_populate = _Populate()


def empty(shape: Sequence[int]) -> Array:
    """``numpy.empty(shape)`` (float64, C order), its pages mapped."""
    array = np.empty(shape)
    _populate(array)
    return array


def zeros(shape: Sequence[int]) -> Array:
    """``numpy.zeros(shape)`` (float64), its pages mapped before zeroing:
    NumPy's own zeros maps fresh pages at their first write instead."""
    if _populate.madvise is None or 8 * math.prod(shape) < POPULATE_BYTES:
        return np.zeros(shape)
    array = empty(shape)
    array.fill(0.0)
    return array
