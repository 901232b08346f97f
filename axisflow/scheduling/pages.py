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

Inside ``reusing()`` (each root item of a schedule's run in one process,
each task of the executor) an array gets the memory of a freed one of its
size when there is one: mapped once, written many times. A loop pass
builds the same values block after block, so most of its large arrays are
such repeats (898 of the 1,023 of the executor benchmark's schedule), and
the kernel then neither unmaps nor maps and zeroes them again: that
schedule in one process, allocating as the executor's workers do, spent
0.37 to 0.58 s in the kernel instead of 1.34 to 1.38 s
(``docs/benchmarks-executor.md``). What the pool holds, freed arrays
included, never exceeds the most its arrays were live at once, but for
``1/SLACK`` of it (``_Reuse``), and leaving the outermost ``reusing()``
lets them all go: before an operator step or an output's sum allocates
apart from the pool. Arrays below ``POPULATE_BYTES`` are NumPy's own, but
the pool counts those ``empty`` and ``zeros`` hand out while they live
(``_Reuse.small_array``): a freed array kept while they take its place would
otherwise make the process hold more than without the pool (a random
residual, batched over ``i=9`` in blocks of 7 and 2, measured 1.26 of the
memory model's peak, and 1.005 since). The peak the memory model predicts
is what a run measures (1.01 of it at the executor benchmark's ``i=7``);
taking arrays from 16 KiB, the NumPy evaluator's measured peak on the CSV
doubles rose to 1.08 of it (``docs/pipeline.md``, section 3.4).

The executor opens one scope on each worker for a whole run
(``open_run``), so that a task reuses what the run's earlier tasks freed:
the blocks of a loop pass run one after the other on a worker, each
asking for the same large arrays. Their results, which Dask holds, stay
live in the pool, so the pool's bound alone let the benchmark's largest
array (512 MiB, a 4 GiB one at twice the extents) go between blocks for a
request a few MiB over it. The run's scope has a *ceiling* as well: the
plan's predicted peak per worker above the process's resident memory
when the run began. While the process stays within it, free arrays are
kept beyond the bound; when memory taken outside the pool (arrays another
worker sent) takes it above, the executor's workers let as many go as
bring it back (``keep_within_ceiling``). Mapping memory again is dear on this project's
machine: its host takes back the memory a guest frees (free page
reporting), and a fresh 2 GiB array took 6.4 to 8.5 s to map after
a few seconds free, against 0.07 s per 512 MiB when it was mapped before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import math
import mmap
import sys
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

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


def _references(owners: list[Array], position: int) -> int:
    """References to ``owners[position]``, counted in one way everywhere:
    the list's own and the call's are the ones a free array has."""
    return sys.getrefcount(owners[position])


def _calibrated() -> int | None:
    """The count ``_references`` gives for an array no one else holds,
    measured on this interpreter, or ``None`` if it counts no references
    or a view held elsewhere does not raise the count (then freed arrays
    cannot be told apart, and nothing is reused)."""
    if not hasattr(sys, "getrefcount"):
        return None
    owners = [np.empty(1)]
    free = _references(owners, 0)
    view = owners[0].reshape(1, 1)  # a view's base is the owning array
    held = _references(owners, 0)
    del view
    return free if held > free and _references(owners, 0) == free else None


class _Reuse:
    """Large arrays handed out inside ``reusing()``, kept to be handed out
    again once freed.

    Each is a one-dimensional *owner* of its memory; callers get views of
    it, and every view of a view refers to the owner, so the owner is free
    when only this pool refers to it (``_references``). A request takes a
    free owner of its size. Otherwise (a miss) the new array would make
    the process hold ``live + size`` without the pool: ``high`` is the
    most that has been, and free owners are let go (the fewest bytes that
    make room) until what the pool holds, live and free, plus the new
    array is within it and ``1/SLACK`` of it, the owners let go freed
    before the new array is allocated. So the pool's arrays never take
    more than they would without it, but for that slack (the module's
    docstring says what that leaves out)."""

    MAX_OWNERS = 512
    """Owners kept at most: a miss reads them all (beyond, a request gets
    an array of its own, as outside ``reusing()``)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        """Reentrant: a small array's finalizer may run inside ``take``."""
        self.depth = 0
        """Open ``reusing()`` scopes."""
        self.free_references = _calibrated()
        self.owners: dict[int, list[Array]] = {}
        """Element count -> the owners of that size."""
        self.count = 0
        """Owners kept."""
        self.held = 0
        """Bytes of every owner, live or free."""
        self.high = 0
        """The most bytes asked for live at once (with the request), the
        small arrays' included."""
        self.small = 0
        """Bytes of the arrays below ``POPULATE_BYTES`` handed out in this
        scope and still live (``small_array``)."""
        self.ceiling: int | None = None
        """Resident bytes within which free owners are kept beyond
        ``high`` (``open_run``): the plan's predicted peak above what the
        process held when the run began."""
        self.generation = 0
        """Counts the scopes closed: a small array outliving its scope is
        no longer counted when it goes."""

    def take(self, shape: Sequence[int], elements: int) -> Array:
        """An array of ``shape`` (``elements`` float64s), its pages mapped."""
        free = self.free_references
        size = 8 * elements
        with self.lock:
            group = self.owners.get(elements, [])
            for position in range(len(group)):
                if _references(group, position) == free:
                    return group[position].reshape(shape)
            self._make_room(size)
            owner = np.empty(elements)
            _populate(owner)
            if self.count >= self.MAX_OWNERS:
                return owner.reshape(shape)
            self.owners.setdefault(elements, []).append(owner)
            self.count += 1
            self.held += size
            return owner.reshape(shape)

    def _make_room(self, size: int) -> None:
        """Let free owners go until the owners, the live small arrays and
        ``size`` more bytes are within ``high`` (raised to what is live
        with them) and its slack. Called with the lock held."""
        idle = self._idle()
        live = self.held - sum(owner.nbytes for owner in idle)
        self.high = max(self.high, live + self.small + size)
        deficit = self.held + self.small + size - self.high - self.high // SLACK
        if deficit > 0 and self.ceiling is not None:
            held_now = resident()
            if held_now is not None and held_now + size <= self.ceiling:
                # within what the plan predicts this process holds: keep the
                # freed arrays for the blocks that ask for them again
                deficit = 0
        self._let_go(idle, deficit)
        # the owners let go are freed before the new array is allocated
        # (this list held them: the process held both at once)
        idle.clear()

    def small_array(self, shape: Sequence[int], zeroed: bool) -> Array:
        """A new array of ``shape`` below ``POPULATE_BYTES`` (NumPy's own),
        counted live until it goes: a freed owner kept while small arrays
        take its place would make the process hold more than it would
        without the pool (the memory model's peak,
        ``tests/pipeline/test_measured_memory.py``). Room is made before
        the array is allocated."""
        size = 8 * math.prod(shape)
        with self.lock:
            if self.held + self.small + size > self.high + self.high // SLACK:
                self._make_room(size)
            self.small += size
            generation = self.generation
        array = np.zeros(shape) if zeroed else np.empty(shape)
        weakref.finalize(array, self._untrack, size, generation)
        return array

    def _untrack(self, size: int, generation: int) -> None:
        with self.lock:
            if generation == self.generation:
                self.small -= size

    def _let_go(self, idle: list[Array], deficit: int) -> None:
        """Let free owners of ``idle`` go, ``deficit`` bytes at least: the
        smallest one that is enough, or the smallest ones together, which
        ever is fewer bytes (a freed array is mapped again at a cost that
        grows with its bytes)."""
        if deficit <= 0:
            return
        idle.sort(key=_bytes)
        together: list[Array] = []
        total = 0
        for owner in idle:
            if total >= deficit:
                break
            together.append(owner)
            total += owner.nbytes
        enough = next((owner for owner in idle if owner.nbytes >= deficit), None)
        victims = [enough] if enough is not None and enough.nbytes < total else together
        for victim in victims:
            group = self.owners[victim.size]
            group[:] = [owner for owner in group if owner is not victim]
            self.count -= 1
            self.held -= victim.nbytes

    def _idle(self) -> list[Array]:
        """The free owners (only this pool refers to them). Called with the
        lock held."""
        free = self.free_references
        return [
            members[position]
            for members in self.owners.values()
            for position in range(len(members))
            if _references(members, position) == free
        ]

    def keep_within_ceiling(self) -> int:
        """Let free owners go until the process's resident memory is back
        within the ceiling, if it has one and is above it (memory taken
        outside the pool while it kept its free arrays up to the ceiling:
        arrays another process sent); the bytes let go."""
        with self.lock:
            held_now = resident()
            if self.ceiling is None or held_now is None or held_now <= self.ceiling:
                return 0
            idle = self._idle()
            before = self.held
            self._let_go(idle, held_now - self.ceiling)
            idle.clear()
            return before - self.held

    def let_go_free(self) -> int:
        """Let every free owner go; the bytes let go."""
        with self.lock:
            idle = self._idle()
            total = sum(owner.nbytes for owner in idle)
            self._let_go(idle, total)
            idle.clear()
            return total

    def enter(self) -> None:
        with self.lock:
            self.depth += 1

    def leave(self) -> None:
        """Close a scope; the outermost lets every owner go (live ones
        stay their holders' ordinary arrays)."""
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                self.forget()

    def forget(self) -> None:
        self.owners.clear()
        self.count = self.held = self.high = self.small = 0
        self.generation += 1


SLACK = 64
"""The pool may hold ``1/SLACK`` of ``high`` beyond it: a freed large
array kept through a few small requests until it is asked for again (the
benchmark's 512 MiB product, then 2 MiB ones, then it again: 0.3%)."""


def _bytes(array: Array) -> int:
    return array.nbytes


_reuse = _Reuse()


@contextmanager
def reusing() -> Iterator[None]:
    """Inside, ``empty`` and ``zeros`` hand out the memory of freed arrays
    of the same size (``_Reuse``); leaving the outermost scope lets the
    freed ones go."""
    _reuse.enter()
    try:
        yield
    finally:
        _reuse.leave()


_open_runs: dict[str, int | None] = {}
"""Runs holding a scope open on this process (``open_run``), each with its
resident-memory ceiling."""


def open_run(
    key: str, allowance: int | None = None, *, most: int | None = None
) -> None:
    """Open a ``reusing()`` scope for run ``key`` until ``close_run(key)``:
    the executor's tasks on a worker then reuse the arrays earlier tasks
    of the run freed, not only their own blocks'. ``allowance``: bytes
    the process may grow by from now (the plan's predicted peak per
    worker), ``most``: resident bytes it must stay below in any case (a
    worker's limit): free arrays are kept beyond what the pool would
    otherwise hold while the process's resident memory stays within both
    (``_Reuse.ceiling``). Opening a key already open does nothing."""
    with _reuse.lock:
        if key in _open_runs:
            return
        held_now = resident()
        ceiling = None
        if allowance is not None and held_now is not None:
            ceiling = held_now + allowance
            if most is not None:
                ceiling = min(ceiling, most)
        _open_runs[key] = ceiling
        _reuse.enter()
        _reuse.ceiling = _lowest_ceiling()


def close_run(key: str) -> None:
    """Close run ``key``'s scope, if this process opened it (a worker that
    replaced a lost one did not)."""
    with _reuse.lock:
        if key in _open_runs:
            del _open_runs[key]
            _reuse.ceiling = _lowest_ceiling()
            _reuse.leave()


def let_go_free() -> int:
    """Let the arrays the open scopes keep free go, now: the bytes let go
    (the executor's workers call it when their process nears the memory at
    which Dask pauses them: a paused worker runs no task, so no request
    would let them go, and the memory they keep would hold it paused)."""
    return _reuse.let_go_free()


def keep_within_ceiling() -> int:
    """Let the free arrays the open scopes keep go until the process's
    resident memory is within the runs' ceiling (``open_run``): the bytes
    let go (the executor's workers call it as they watch their memory)."""
    return _reuse.keep_within_ceiling()


def _lowest_ceiling() -> int | None:
    """The lowest ceiling of the open runs: none if a run has none."""
    ceilings = list(_open_runs.values())
    if not ceilings or None in ceilings:
        return None
    return min(c for c in ceilings if c is not None)


def resident() -> int | None:
    """This process's resident bytes (Linux's ``/proc/self/statm``), or
    ``None`` where there is no such file."""
    try:
        with open("/proc/self/statm", "rb") as statm:
            return int(statm.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return None


def empty(shape: Sequence[int]) -> Array:
    """``numpy.empty(shape)`` (float64, C order), its pages mapped."""
    elements = math.prod(shape)
    if _reuse.depth and _reuse.free_references is not None:
        if 8 * elements >= POPULATE_BYTES:
            return _reuse.take(shape, elements)
        return _reuse.small_array(shape, zeroed=False)
    array = np.empty(shape)
    _populate(array)
    return array


def zeros(shape: Sequence[int]) -> Array:
    """``numpy.zeros(shape)`` (float64), its pages mapped before zeroing:
    NumPy's own zeros maps fresh pages at their first write instead (and
    cannot take a freed array's memory)."""
    if 8 * math.prod(shape) < POPULATE_BYTES:
        if _reuse.depth and _reuse.free_references is not None:
            return _reuse.small_array(shape, zeroed=True)
        return np.zeros(shape)
    if _populate.madvise is None and not _reuse.depth:
        return np.zeros(shape)
    array = empty(shape)
    array.fill(0.0)
    return array
