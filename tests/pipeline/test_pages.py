"""Arrays whose pages are mapped before they are written (``pages``)."""

from __future__ import annotations

import mmap
import platform
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow.scheduling import pages
from axisflow.scheduling.contraction import matmul

LARGE = (1024, 1024, 16)
"""128 MiB: well above ``POPULATE_BYTES`` and glibc's mapping threshold."""


def _resident_bytes() -> int:
    """This process's resident memory (Linux: ``pages.resident``)."""
    resident = pages.resident()
    assert resident is not None, "this project's machines run Linux"
    return resident


def _kernel_populates() -> bool:
    """Linux 5.14 or newer: ``MADV_POPULATE_WRITE`` exists."""
    if not sys.platform.startswith("linux"):
        return False
    major, minor = (int(part) for part in platform.release().split(".")[:2])
    return (major, minor) >= (5, 14)


def test_an_empty_array_is_resident_before_it_is_written() -> None:
    # NumPy's own empty maps nothing until the first write; ``pages.empty``
    # maps every page at once (where the kernel can), so the resident
    # memory grows by the array's size before anything is written
    assert _kernel_populates(), "this project's machines run Linux 5.14 or newer"
    before = _resident_bytes()
    plain = np.empty(LARGE)
    assert _resident_bytes() - before < plain.nbytes // 8
    del plain
    before = _resident_bytes()
    array = pages.empty(LARGE)
    grown = _resident_bytes() - before
    assert array.shape == LARGE and array.dtype == np.float64
    assert array.flags.c_contiguous
    assert grown >= array.nbytes * 0.95


def test_zeros_are_zero_even_in_memory_used_before() -> None:
    # a heap chunk reused from a freed array holds its old numbers: zeros
    # must clear them, whichever way the memory came
    for shape in [(300, 300), LARGE, (0, 5)]:
        used = np.full(shape, 7.0)
        del used
        array = pages.zeros(shape)
        assert array.shape == shape and array.dtype == np.float64
        assert not array.any()


def test_a_failing_call_switches_populating_off_and_still_allocates(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[int, int, int]] = []

    def refusing(address: int, length: int, advice: int) -> int:
        calls.append((address, length, advice))
        return -1  # an older kernel: EINVAL

    monkeypatch.setattr(pages._populate, "madvise", refusing)
    first = pages.empty(LARGE)
    assert len(calls) == 1 and calls[0][2] == 23
    assert calls[0][0] % mmap.PAGESIZE == 0 and calls[0][0] + calls[0][1] >= (
        first.ctypes.data + first.nbytes
    )
    assert pages._populate.madvise is None
    second = pages.zeros(LARGE)
    assert len(calls) == 1 and not second.any()


def test_small_arrays_are_left_to_numpy(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(
        pages._populate,
        "madvise",
        lambda address, length, advice: calls.append(length) or 0,
    )
    pages.empty((100, 100))  # 80 KB
    pages.zeros((100, 100))
    assert calls == []
    pages.empty((512, 256))  # exactly 1 MiB
    assert len(calls) == 1


@pytest.mark.parametrize(
    ("left_shape", "right_shape"),
    [((3, 40, 50), (50, 60)), ((40, 50), (4, 50, 60)), ((2, 1, 7, 8), (5, 8, 9))],
)
def test_matmul_into_mapped_pages_is_numpy_matmul(
    left_shape: tuple[int, ...], right_shape: tuple[int, ...]
) -> None:
    rng = np.random.default_rng(0)
    left, right = rng.standard_normal(left_shape), rng.standard_normal(right_shape)
    product = matmul(left, right)
    expected = np.matmul(left, right)
    assert product.shape == expected.shape
    np.testing.assert_allclose(product, expected, rtol=1e-13, atol=1e-13)


# -- reuse of freed arrays (``pages.reusing``) -------------------------------

MIB = 1024**2 // 8
"""Float64 elements of 1 MiB (the smallest array the pool keeps)."""


@contextmanager
def traced() -> Iterator[Callable[[], int]]:
    """Inside, ``tracemalloc`` traces; the callable yielded gives the most
    bytes held at once inside, above what was held on entry (read after
    the block)."""
    peak = 0
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        yield lambda: peak
        peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_a_freed_array_is_handed_out_again_only_inside_reusing() -> None:
    with pages.reusing():
        first = pages.empty((4, MIB))
        address = first.ctypes.data
        del first
        again = pages.empty((2, 2 * MIB))  # the same size, another shape
        assert again.ctypes.data == address and again.shape == (2, 2 * MIB)
        again.fill(5.0)
        del again
        zeroed = pages.zeros((4, MIB))  # the same memory, written before
        assert zeroed.ctypes.data == address and not zeroed.any()
    assert pages._reuse.held == 0 and pages._reuse.count == 0
    # outside, each array is NumPy's own: none is kept to be handed out again
    outside = pages.empty((4, MIB))
    del outside
    assert pages._reuse.count == 0


def test_an_array_a_view_still_holds_is_not_handed_out() -> None:
    with pages.reusing():
        first = pages.empty((4, MIB))
        address = first.ctypes.data
        first.fill(1.0)
        view = first.T[::2]  # a view of a view: it refers to the owner too
        del first
        second = pages.empty((4, MIB))
        second.fill(2.0)
        assert not np.shares_memory(second, view)
        assert (view == 1.0).all()
        del view
        third = pages.empty((4, MIB))  # the first's memory, free now
        assert third.ctypes.data == address


def test_letting_the_free_arrays_go_keeps_the_live_ones() -> None:
    with pages.reusing():
        live = pages.empty((2, MIB))
        freed = pages.empty((3, MIB))
        view = live[1:]  # the owner stays live through a view
        del live, freed
        assert pages._reuse.held == 5 * MIB * 8
        assert pages.let_go_free() == 3 * MIB * 8
        assert pages._reuse.held == 2 * MIB * 8 and pages._reuse.count == 1
        assert pages.let_go_free() == 0
        del view
        assert pages.let_go_free() == 2 * MIB * 8
        assert pages._reuse.held == 0 and pages._reuse.count == 0


def test_a_free_array_of_another_size_is_let_go_to_make_room() -> None:
    # a process without the pool would hold 3 MiB at most: keeping the
    # freed 3 MiB array beside the new one would hold 5, also while the
    # new one is allocated (the pool once freed it only after: a ragged
    # last block measured 1.53 of the memory model's peak)
    with traced() as most, pages.reusing():
        large = pages.empty((3, MIB))
        del large
        smaller = pages.empty((2, MIB))
        assert pages._reuse.count == 1 and pages._reuse.held == smaller.nbytes
    assert 3 * MIB * 8 <= most() < 4 * MIB * 8


def test_a_run_keeps_a_freed_array_within_its_ceiling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # as in the test above the 3 MiB array would be let go for the 2 MiB
    # one; inside a run whose ceiling the process stays within, it is kept
    # for the next block that asks for it, and it is let go as before once
    # the resident memory would pass the ceiling
    resident = {"bytes": 100 * MIB}
    monkeypatch.setattr(pages, "resident", lambda: resident["bytes"])
    pages.open_run("run", allowance=8 * MIB * 8)
    try:
        assert pages._reuse.ceiling == 100 * MIB + 8 * MIB * 8
        with pages.reusing():  # a task inside the run
            large = pages.empty((3, MIB))
            address = large.ctypes.data
            del large
        smaller = pages.empty((2, MIB))  # the next task
        assert pages._reuse.count == 2
        del smaller
        again = pages.empty((3, MIB))
        assert again.ctypes.data == address
        del again
        resident["bytes"] = 100 * MIB + 7 * MIB * 8  # 1 MiB left below it
        other = pages.empty((4, MIB))
        assert pages._reuse.count == 1 and pages._reuse.held == other.nbytes
    finally:
        pages.close_run("run")
    assert pages._reuse.depth == 0 and pages._reuse.ceiling is None
    assert pages._reuse.held == 0


def test_memory_taken_outside_the_pool_lets_free_arrays_go_to_the_ceiling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the pool keeps free arrays up to the ceiling; when memory it did not
    # hand out (arrays another worker sent) takes the process above it,
    # the smallest free arrays that bring it back are let go, not all
    resident = {"bytes": 100 * MIB}
    monkeypatch.setattr(pages, "resident", lambda: resident["bytes"])
    assert pages.keep_within_ceiling() == 0  # no run: no ceiling
    pages.open_run("run", allowance=16 * MIB * 8)
    try:
        with pages.reusing():
            live = pages.empty((1, MIB))
            small, medium, large = (pages.empty((n, MIB)) for n in (2, 3, 5))
            del small, medium, large
        assert pages._reuse.held == 11 * MIB * 8
        resident["bytes"] = 100 * MIB + 16 * MIB * 8  # at the ceiling
        assert pages.keep_within_ceiling() == 0
        resident["bytes"] += 3 * MIB * 8  # 3 MiB above it
        assert pages.keep_within_ceiling() == 3 * MIB * 8  # the 3 MiB one
        assert pages._reuse.held == 8 * MIB * 8 and pages._reuse.count == 3
        resident["bytes"] += 6 * MIB * 8  # the free 2 and 5 MiB are not enough
        assert pages.keep_within_ceiling() == 7 * MIB * 8
        assert pages._reuse.held == live.nbytes  # the live one stays
    finally:
        pages.close_run("run")


def test_runs_open_and_close_once_each_with_the_lowest_ceiling(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pages, "resident", lambda: 1000)
    pages.open_run("first", allowance=50)
    pages.open_run("first", allowance=10)  # opened already: nothing changes
    pages.open_run("second", allowance=20)
    try:
        assert pages._reuse.depth == 2 and pages._reuse.ceiling == 1020
        pages.close_run("second")
        assert pages._reuse.depth == 1 and pages._reuse.ceiling == 1050
        pages.close_run("never opened")  # a worker that replaced a lost one
        assert pages._reuse.depth == 1
        pages.open_run("no allowance")
        assert pages._reuse.ceiling is None  # that run keeps to the bound
        pages.close_run("no allowance")
        pages.open_run("limited", allowance=500, most=1040)
        assert pages._reuse.ceiling == 1040  # below its limit, and first's
        pages.close_run("limited")
    finally:
        pages.close_run("first")
        pages.close_run("second")
    assert pages._reuse.depth == 0 and pages._reuse.ceiling is None


def test_the_interpreter_tells_free_arrays_apart() -> None:
    # counted on every Python the project supports; where a view did not
    # raise the count, nothing would be reused (and this would fail)
    assert pages._reuse.free_references is not None


def test_a_freed_array_is_let_go_while_small_arrays_take_its_place() -> None:
    # without the pool the process would hold 3 MiB at most; keeping the
    # freed 3 MiB beside 2.5 MiB of small arrays (each below the pool's
    # threshold, so NumPy's own) would hold 5.5 (a random residual once
    # measured 1.26 of the memory model's peak so)
    with traced() as most, pages.reusing():
        large = pages.empty((3, MIB))
        del large
        assert pages._reuse.held == 3 * MIB * 8
        small = [pages.zeros((MIB // 2,)) for _ in range(5)]
        assert pages._reuse.held == 0 and pages._reuse.small == 5 * MIB * 4
        del small
        assert pages._reuse.small == 0
    # the freed array goes before the first small one is allocated
    assert 3 * MIB * 8 <= most() < 3 * MIB * 8 + 64 * 1024
    # an array outliving its scope is not counted into the next one
    with pages.reusing():
        kept = pages.empty((MIB // 2,))
    with pages.reusing():
        assert pages._reuse.small == 0
        del kept
        assert pages._reuse.small == 0


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(1, 24), st.integers(0, 5)), min_size=1, max_size=40)
)
def test_the_pool_never_holds_more_than_the_most_live_and_never_shares(
    steps: list[tuple[int, int]],
) -> None:
    """Random requests (quarters of a ``MiB`` each: the small ones are
    NumPy's own, the others the pool's) and frees: every live array keeps
    what was written into it, and what the pool holds, with the small
    arrays live, stays within the most bytes that were live at once (plus
    ``1/SLACK``), what a process without it would have held at some
    point."""
    live: list[tuple[float, np.ndarray]] = []
    most = 0
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        with pages.reusing():
            for number, (quarters, drop) in enumerate(steps):
                if live and drop:
                    live.pop(drop % len(live))
                array = pages.empty((quarters, MIB // 4))
                array.fill(float(number))
                live.append((float(number), array))
                del array  # the list holds it alone: dropped from it, it is free
                most = max(most, sum(a.nbytes for _, a in live))
                small = sum(a.nbytes for _, a in live if a.nbytes < 8 * MIB)
                assert pages._reuse.small == small
                assert pages._reuse.held + small <= most + most // pages.SLACK
                # also while a request is served: what it lets go is freed first
                held_at_most = tracemalloc.get_traced_memory()[1] - before
                assert held_at_most <= most + most // pages.SLACK + 8 * MIB
                assert all((a == value).all() for value, a in live)
    finally:
        tracemalloc.stop()
    assert pages._reuse.held == 0
