"""Closing's join of a leaf row's lower bounds does not depend on their order.

A shape scheme states its facts in another order than its body made them, so
the bounds of a leaf row arrive in another order through the scheme than
through re-evaluation; a join that kept the first variable of a choice
closed such programs differently (issue 30). Here the join of every
permutation of the bounds is the same row up to the fresh variables it
makes, every bound broadcasts to it, and a leaf row closes to the same
shape whichever order its bounds were added in.
"""

from __future__ import annotations

from itertools import permutations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow.shapes import (
    DimVar,
    Origin,
    Row,
    RowIneq,
    RowVar,
    Session,
    ShapeError,
    Size,
    Terminal,
)
from axisflow.shapes.closing import join_bounds
from axisflow.shapes.terms import Dim

ORIGIN = Origin("test", "t")


def canonical(row: Row, old: int) -> tuple[object, ...]:
    """The row with the variables minted since ``old`` numbered in order of
    appearance (the join's fresh variables; the others keep their ids)."""
    names: dict[int, int] = {}

    def name(var: DimVar | RowVar) -> object:
        if var.id < old:
            return (type(var).__name__, var.id)
        return ("fresh", type(var).__name__, names.setdefault(var.id, len(names)))

    dims = tuple(name(d) if type(d) is DimVar else d for d in row.dims)
    return (None if row.var is None else name(row.var), dims)


ITEMS = st.sampled_from(("1", "2", "3", "3@x", "a", "b"))


@st.composite
def bound_sets(draw: st.DrawFn) -> list[tuple[tuple[str, ...], str | None]]:
    """Two to four bounds: up to three axes each (sizes or named variables),
    closed or open with one of two tails."""
    return [
        (
            tuple(draw(st.lists(ITEMS, max_size=3))),
            draw(st.sampled_from((None, "t", "u"))),
        )
        for _ in range(draw(st.integers(2, 4)))
    ]


def build(
    s: Session, spec: list[tuple[tuple[str, ...], str | None]]
) -> list[tuple[Row, Origin]]:
    """The bounds as rows over variables shared by name."""
    dims: dict[str, DimVar] = {}
    rows: dict[str, RowVar] = {}

    def dim(item: str) -> Dim:
        if item[0].isdigit():
            n, _, basis = item.partition("@")
            return Size(int(n), basis) if basis else Size(int(n))
        return dims.setdefault(item, s.fresh_dim_var())

    bounds = []
    for items, tail in spec:
        var = None if tail is None else rows.setdefault(tail, s.fresh_row_var())
        bounds.append((Row(tuple(dim(i) for i in items), var), ORIGIN))
    return bounds


@settings(max_examples=60, deadline=None)
@given(bound_sets())
def test_the_join_is_the_same_for_every_order_of_the_bounds(
    spec: list[tuple[tuple[str, ...], str | None]],
) -> None:
    s = Session()
    bounds = build(s, spec)
    solver = s.solver
    joins = set()
    for order in permutations(bounds):
        old = s.var_mark()
        joins.add(canonical(join_bounds(solver, order), old))
    assert len(joins) == 1


@settings(max_examples=60, deadline=None)
@given(bound_sets())
def test_every_bound_broadcasts_to_the_join_or_the_session_says_why(
    spec: list[tuple[tuple[str, ...], str | None]],
) -> None:
    """The join is the row every bound broadcasts to, or (a lossy join) the
    re-checked bounds fail with a shape error; they never pass wrongly."""
    s = Session()
    bounds = build(s, spec)
    joined = join_bounds(s.solver, bounds)
    lengths = {len(row.dims) for row, _ in bounds}
    assert len(joined.dims) == min(lengths)
    for row, _ in bounds:
        try:
            s.add(RowIneq(row, joined, ORIGIN))
        except ShapeError:
            return


def test_different_variables_of_an_axis_join_to_a_fresh_one_above_both() -> None:
    """``[a]`` and ``[b]``: the join is a new variable, neither ``a`` nor ``b``
    (OCANNL's pairwise join keeps the newer one), and both broadcast to it."""
    s = Session()
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    mark = s.var_mark()
    joined = join_bounds(s.solver, [(Row((a,)), ORIGIN), (Row((b,)), ORIGIN)])
    (dim,) = joined.dims
    assert type(dim) is DimVar and dim.id >= mark


def test_different_tails_join_to_a_fresh_tail_with_their_marks() -> None:
    """``[...t]`` and ``[...u]``, ``t`` a template's (safe to guess): the join's
    tail is new and carries ``t``'s mark, whichever bound came first."""
    for first_safe in (True, False):
        s = Session()
        t, u = s.fresh_row_var(), s.fresh_row_var()
        safe, other = (t, u) if first_safe else (u, t)
        s.solver.row_marks[safe.id] = 1  # SAFE_TO_GUESS
        joined = join_bounds(s.solver, [(Row((), t), ORIGIN), (Row((), u), ORIGIN)])
        assert joined.var not in (t, u, None)
        assert s.solver.safe_to_guess(joined.var)
        assert not s.solver.safe_to_guess(other)


def test_the_same_tail_or_a_closed_bound_is_kept() -> None:
    s = Session()
    t = s.fresh_row_var()
    two = Row((Size(2),), t)
    assert join_bounds(s.solver, [(two, ORIGIN), (Row((Size(2),), t), ORIGIN)]) == two
    closed = join_bounds(s.solver, [(two, ORIGIN), (Row((Size(3),)), ORIGIN)])
    assert closed == Row((Size(1),))


@pytest.mark.parametrize("order", list(permutations(range(3))))
def test_a_leaf_closes_the_same_whatever_order_its_bounds_came_in(
    order: tuple[int, ...],
) -> None:
    """A leaf row below ``[...t, a]``, ``[...u, b]`` and ``[...t, 4]``, added in
    every order: the same closed shapes (the join ``[4]`` takes the size
    over the variables, which ``a ⊑ 4`` and ``b ⊑ 4`` then force)."""
    s = Session()
    t, u = s.fresh_row_var(), s.fresh_row_var()
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    leaf = Row((), s.fresh_row_var())
    bounds = [Row((a,), t), Row((b,), u), Row((Size(4),), t)]
    s.add(Terminal(leaf, False, ORIGIN))
    for index in order:
        s.add(RowIneq(bounds[index], leaf, ORIGIN))
    shape = s.new_shape("all", Row((), t), Row((), u), Row((a, b)))
    leaf_shape = s.new_shape("leaf", Row(), Row(), leaf)
    s.close()
    assert (shape.dims(), leaf_shape.dims()) == (((), (), (4, 4)), ((), (), (4,)))
