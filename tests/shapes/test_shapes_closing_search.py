"""Closing searches past a contradiction its first guesses make.

When the guesses of closing steps 8 and 9 (docs/shapes.md) leave the
equations without positive sizes, ``closing.GuessSearch`` undoes them and
tries them raised, within its bounds; the first contradiction is reported
when no run closes. The cases of ``test_shapes_closing_equations.py`` close
on their first guesses; these need the search, or are about its bounds.
"""

from __future__ import annotations

import itertools
import math
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow.shapes import (
    DimAtLeast,
    DimVar,
    Row,
    Session,
    ShapeError,
    Size,
    TotalElems,
    closing,
)
from axisflow.shapes.constraints import LinearKind
from tests.shapes.test_shapes_closing_equations import ORIGIN, closed, linear


def _shared_parts(s: Session) -> tuple[DimVar, ...]:
    """``d4 = d8^d5`` and ``7 = d4^d5``: guessing ``d4`` its least size (2)
    leaves ``d8 = -3``; positive sizes exist (``d5`` 1 to 3)."""
    d4, d5, d8 = (s.fresh_dim_var() for _ in range(3))
    linear(s, LinearKind.CONCAT, [d8, d5], d4)
    linear(s, LinearKind.CONCAT, [d4, d5], Size(7))
    return d4, d5, d8


def test_a_guess_that_makes_the_equations_contradict_is_raised() -> None:
    """The search raises ``d4`` until the equations hold: 3 leaves ``d8 =
    -1``, 4 gives ``d5 = 3`` and ``d8 = 1`` (without the search the closing
    reports ``d8 = -3``; see the next test)."""
    s = Session()
    assert closed(s, *_shared_parts(s)) == (4, 3, 1)
    # Recorded only for the search: outside a window nothing keeps it.
    assert s._trail.entries == []  # pyright: ignore[reportPrivateUsage]


def test_without_the_search_the_same_equations_contradict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The control: no run after the first, the first guess's contradiction."""
    monkeypatch.setattr(closing, "SEARCH_ATTEMPTS", 0)
    s = Session()
    dims = _shared_parts(s)
    with pytest.raises(ShapeError, match=r"no positive size of 'n0'.*n0 = -3"):
        closed(s, *dims)


def _contradiction(s: Session) -> None:
    """``w = a^b``, ``a = c^d`` and ``w = c``: no positive sizes at all."""
    a, b, c, d, w = (s.fresh_dim_var() for _ in range(5))
    linear(s, LinearKind.CONCAT, [a, b], w)
    linear(s, LinearKind.CONCAT, [c, d], a)
    linear(s, LinearKind.CONCAT, [c], w)


def _closing_error(s: Session) -> str:
    with pytest.raises(ShapeError) as info:
        s.close()
    return str(info.value)


def test_a_contradiction_no_size_resolves_is_the_first_one_met(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every run fails; the error is the one the first guesses met, as
    without the search, and the session is tainted as after any error."""
    s = Session()
    _contradiction(s)
    searched = _closing_error(s)
    with pytest.raises(ShapeError, match="tainted"):
        s.close()
    monkeypatch.setattr(closing, "SEARCH_ATTEMPTS", 0)
    s = Session()
    _contradiction(s)
    assert _closing_error(s) == searched
    assert "no positive size" in searched


def _runs_of_a_failing_closing(
    monkeypatch: pytest.MonkeyPatch, independent: int
) -> int:
    """Runs the search tries on a contradiction made first, beside
    ``independent`` satisfiable pairs of nested concatenations."""
    retries = 0
    retry = closing.GuessSearch.retry

    def counted(search: closing.GuessSearch, error: ShapeError) -> bool:
        nonlocal retries
        again = retry(search, error)
        retries += again
        return again

    monkeypatch.setattr(closing.GuessSearch, "retry", counted)
    s = Session()
    _contradiction(s)
    dims: list[DimVar] = []
    for _ in range(independent):
        a, b, c, d, w = (s.fresh_dim_var() for _ in range(5))
        linear(s, LinearKind.CONCAT, [a, b], w)
        linear(s, LinearKind.CONCAT, [c, d], a)
        dims += [a, b, c, d, w]
    s.new_shape("t", Row(()), Row(()), Row(tuple(dims)))
    _closing_error(s)
    return retries


def test_a_small_contradiction_gets_every_attempt_and_a_large_one_its_work_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each run reads every open row, so a contradiction in a large program
    would cost ``SEARCH_ATTEMPTS`` closings: the work bound stops it first."""
    assert _runs_of_a_failing_closing(monkeypatch, 0) == closing.SEARCH_ATTEMPTS
    large = _runs_of_a_failing_closing(monkeypatch, 2000)
    assert 0 < large < closing.SEARCH_ATTEMPTS // 4
    # the bound as SEARCH_WORK says: 16 times the first run's reads, plus 4096
    assert large == LARGE_RUNS


LARGE_RUNS = 17
"""Runs of the search on the contradiction beside 2,000 satisfiable pairs:
each run reads the 10,000 dims once more, the first read them once."""


def test_the_step_alone_makes_its_own_search() -> None:
    """``close_remaining_dims`` called without a search (as each step can be
    called alone) makes its guesses through one of its own (only ``close``
    runs the steps again)."""
    s = Session()
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    linear(s, LinearKind.CONCAT, [a, b], Size(5))
    shape = s.new_shape("t", Row(()), Row(()), Row((a, b)))
    solver = s._solver  # pyright: ignore[reportPrivateUsage]
    closing.close_remaining_dims(solver, [shape.rows()[2]])
    assert (solver.find_dim(a), solver.find_dim(b)) == (Size(1), Size(4))
    # Its search ended with the step: nothing keeps recording on the trail.
    assert (solver.trail.depth, solver.trail.entries) == (0, [])


def test_a_search_inside_a_rewind_window_is_undone_with_it() -> None:
    """The search records on the solver's trail from its first guess; in a
    window, what it kept must stay on the trail for the window to undo."""
    s = Session()
    d4, d5, d8 = _shared_parts(s)
    shape = s.new_shape("t", Row(()), Row(()), Row((d4, d5, d8)))
    with s.rewind():
        s.close()
        assert shape.dims()[2] == (4, 3, 1)
    assert shape.rows()[2] == Row((d4, d5, d8))
    s.close()
    assert shape.dims()[2] == (4, 3, 1)


def test_the_raises_tried_first_are_one_guess_alone_the_latest_first() -> None:
    raises = list(itertools.islice(closing._raises(2), 2 * closing.SEARCH_WIDTH + 3))
    assert raises[:4] == [(0, 1), (1, 0), (0, 2), (2, 0)]
    assert raises[2 * closing.SEARCH_WIDTH :] == [(1, 1), (1, 2), (2, 1)]
    assert len(set(itertools.islice(closing._raises(3), 500))) == 500
    # every composition comes, a last guess left as it was included
    assert (1, 1, 0) in set(itertools.islice(closing._raises(3), 200))


_PARTS = st.lists(st.integers(0, 5), min_size=2, max_size=3, unique=True)


@settings(max_examples=150, deadline=None)
@given(
    equations=st.lists(
        st.tuples(_PARTS, st.one_of(st.integers(0, 5), st.integers(-9, -2))),
        min_size=1,
        max_size=4,
    ),
    minima=st.lists(st.tuples(st.integers(0, 5), st.integers(2, 4)), max_size=2),
)
def test_the_search_changes_no_closing_the_first_guesses_reach(
    equations: list[tuple[list[int], int]], minima: list[tuple[int, int]]
) -> None:
    """Concatenations over six dims (an axis ``-n`` is the size ``n``):
    where the closing succeeds its sizes satisfy every equation, and where
    the first guesses alone succeed the search changes nothing."""

    def outcome(attempts: int) -> tuple[int, ...] | str:
        with mock.patch.object(closing, "SEARCH_ATTEMPTS", attempts):
            s = Session()
            dims = [s.fresh_dim_var() for _ in range(6)]
            for dim, least in minima:
                s.add(DimAtLeast(dims[dim], least, ORIGIN))
            for parts, axis in equations:
                parts = [p for p in parts if p != axis]
                if not parts:
                    continue
                linear(
                    s,
                    LinearKind.CONCAT,
                    [dims[p] for p in parts],
                    Size(-axis) if axis < 0 else dims[axis],
                )
            try:
                return closed(s, *dims)
            except ShapeError as error:
                return str(error)

    searched, first = outcome(closing.SEARCH_ATTEMPTS), outcome(0)
    if not isinstance(first, str):
        assert searched == first
    if not isinstance(searched, str):
        for parts, axis in equations:
            parts = [p for p in parts if p != axis]
            if parts:
                whole = -axis if axis < 0 else searched[axis]
                assert sum(searched[p] for p in parts) == whole
        for dim, least in minima:
            assert searched[dim] >= least


def test_an_error_other_than_a_contradiction_still_ends_the_search(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whatever leaves the search, the trail stops recording: a session
    left recording would behave as if inside a rewind window."""

    def broken(solver: object) -> None:
        raise RuntimeError("broken check")

    monkeypatch.setattr(closing, "check_totals", broken)
    s = Session()
    dims = _shared_parts(s)
    with pytest.raises(RuntimeError, match="broken check"):
        closed(s, *dims)
    trail = s._trail  # pyright: ignore[reportPrivateUsage]
    assert (trail.depth, trail.entries) == (0, [])


# ---------------------------------------------------------------------------
# Systems found by a random search over concatenations (2026-12-05) whose
# first guesses contradict and which the search closes. Each names the dims
# ``d0, d1, ...`` and is checked against its own equations, not against
# sizes written here: a wrong first guess (a part read as the axis, a part
# left out of an axis's least size, a minimum ignored) starts the search
# where none of its runs closes.

_System = tuple[
    int,  # dims
    list[tuple[list[int], int | Size]],  # parts (indices) and axis (index or size)
    list[tuple[list[int], int]],  # totals: dims and element count
    list[tuple[int, int]],  # minima: dim and least size
]


def _close_system(system: _System) -> tuple[int, ...]:
    count, equations, totals, minima = system
    s = Session()
    dims = [s.fresh_dim_var() for _ in range(count)]
    for parts, axis in equations:
        whole = axis if isinstance(axis, Size) else dims[axis]
        linear(s, LinearKind.CONCAT, [dims[p] for p in parts], whole)
    for members, elements in totals:
        s.add(TotalElems((Row(tuple(dims[m] for m in members)),), elements, ORIGIN))
    for dim, least in minima:
        s.add(DimAtLeast(dims[dim], least, ORIGIN))
    return closed(s, *dims)


def _holds(system: _System, sizes: tuple[int, ...]) -> bool:
    _, equations, totals, minima = system
    return (
        all(
            sum(sizes[p] for p in parts)
            == (axis.n if isinstance(axis, Size) else sizes[axis])
            for parts, axis in equations
        )
        and all(math.prod(sizes[m] for m in members) == n for members, n in totals)
        and all(sizes[dim] >= least for dim, least in minima)
    )


_SEARCHED: dict[str, _System] = {
    # d1 = d3^d6, 7 = d4^d5, d4 = d8^d5, d0 = 8.
    "an axis read as the equation's last term": (
        9,
        [([3, 6], 1), ([4, 5], Size(7)), ([8, 5], 4)],
        [([0], 8)],
        [],
    ),
    # d0 = d5^d1^d2 = d1^d3, d6 = d3^d5^d1, d0·d1 = 8.
    "every part in an axis's least size": (
        7,
        [([5, 1, 2], 0), ([1, 3], 0), ([3, 5, 1], 6)],
        [([0, 1], 8)],
        [],
    ),
    # d7 = d6^d4 (at least 3), d0 = d7^d4^d3 (d3 at least 3), d5 = d6^d2^d4.
    "a part's own minimum": (
        8,
        [([6, 4], 7), ([7, 4, 3], 0), ([6, 2, 4], 5)],
        [],
        [(3, 3), (7, 3)],
    ),
}


@pytest.mark.parametrize("name", list(_SEARCHED))
def test_the_search_closes_systems_whose_first_guesses_contradict(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each system closes, to sizes that satisfy it; without the search it
    does not (so the search is what this checks)."""
    system = _SEARCHED[name]
    sizes = _close_system(system)
    assert _holds(system, sizes), sizes
    monkeypatch.setattr(closing, "SEARCH_ATTEMPTS", 0)
    with pytest.raises(ShapeError):
        _close_system(system)


def test_an_outermost_axis_keeps_its_least_size_through_the_search() -> None:
    """In "a part's own minimum", ``d0 = d7 + d4 + d3`` is at least ``3 + 1 +
    3 = 7`` (the minima of ``d7`` and ``d3``): its first guess, and where it
    closes after the search has raised the guesses of its parts (a minimum
    left out of the least size starts lower and ends at 8)."""
    sizes = _close_system(_SEARCHED["a part's own minimum"])
    assert sizes[0] == 7
