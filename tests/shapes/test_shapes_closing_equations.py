"""Closing with pending equations: the order of its decisions, case by case.

What ``close_remaining_dims`` and ``close_terminal_dims`` decide about the
dims of pending affine, concatenated and total equations (docs/shapes.md,
closing steps 5 and 8), and how a leaf row with axes before its row variable
takes its lower bounds (step 2). Each case is one the rules above were
written for; the outcome asserted is the one the rule gives. Each runs
twice: as closing runs, and with its search past contradictions off
(``test_shapes_closing_search.py``), since these rules decide them on their
first guesses and the search must not be what makes them hold.
"""

from __future__ import annotations

import pytest

from axisflow.shapes import (
    DimAtLeast,
    DimEq,
    DimIneq,
    DimVar,
    Kind,
    Origin,
    Row,
    RowEq,
    RowIneq,
    Session,
    ShapeError,
    Size,
    TotalElems,
    closing,
)
from axisflow.shapes.constraints import DimLinear, LinearKind, RowPrefix

ORIGIN = Origin("test", "t")


@pytest.fixture(autouse=True, params=["searching", "first guesses only"])
def either_way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run the case with the closing's guess search, then without it."""
    if request.param == "first guesses only":
        monkeypatch.setattr(closing, "SEARCH_ATTEMPTS", 0)


def linear(
    s: Session,
    kind: LinearKind,
    parts: list[DimVar | Size],
    axis: DimVar | Size,
) -> None:
    """``axis = Σ parts`` as an equation of ``kind``."""
    terms = (*((1, p) for p in parts), (-1, axis))
    names = tuple(f"n{i}" for i in range(len(terms)))
    s.add(DimLinear(terms, 0, names, "axis", ORIGIN, kind))


def closed(s: Session, *dims: DimVar | Size) -> tuple[int, ...]:
    """Close the session and read ``dims`` through a shape holding them."""
    shape = s.new_shape("t", Row(()), Row(()), Row(tuple(dims)))
    s.close()
    return shape.dims()[2]


def test_a_part_with_a_minimum_raises_the_least_size_of_its_axis() -> None:
    """``a^b`` with ``a`` a fixed index's axis of at least 3: the axis is 4."""
    s = Session()
    a, b, axis = (s.fresh_dim_var() for _ in range(3))
    s.add(DimAtLeast(a, 3, ORIGIN))
    linear(s, LinearKind.CONCAT, [a, b], axis)
    assert closed(s, a, b, axis) == (3, 1, 4)


def test_an_equation_with_a_known_axis_does_not_stop_the_least_sizes() -> None:
    """``a^b = 5`` made first, ``c^d`` of an unknown axis second: the second
    axis still takes the least size of its parts (2)."""
    s = Session()
    a, b, c, d, axis = (s.fresh_dim_var() for _ in range(5))
    linear(s, LinearKind.CONCAT, [a, b], Size(5))
    linear(s, LinearKind.CONCAT, [c, d], axis)
    assert closed(s, a, b, c, d, axis) == (1, 4, 1, 1, 2)


def test_an_outer_concatenation_made_first_waits_for_the_inner_least_size() -> None:
    """``v = w^d`` made before ``w = a^b^c``: ``w``'s least size (3) reaches
    ``v`` (4) although the outer equation is read first."""
    s = Session()
    a, b, c, d, w, v = (s.fresh_dim_var() for _ in range(6))
    linear(s, LinearKind.CONCAT, [w, d], v)
    linear(s, LinearKind.CONCAT, [a, b, c], w)
    assert closed(s, a, b, c, d, w, v) == (1, 1, 1, 1, 3, 4)


def test_least_sizes_reach_through_four_nested_concatenations() -> None:
    """``x = i3^e``, ``i3 = i2^d``, ``i2 = i1^c``, ``i1 = a^b``, outer first:
    the least sizes settle through every level before the outermost axis is
    guessed (5, then 4, 3, 2 and every leaf 1); reading the equations once
    would guess ``x`` 3 and leave no positive size for a part."""
    s = Session()
    a, b, c, d, e, i1, i2, i3, x = (s.fresh_dim_var() for _ in range(9))
    linear(s, LinearKind.CONCAT, [i3, e], x)
    linear(s, LinearKind.CONCAT, [i2, d], i3)
    linear(s, LinearKind.CONCAT, [i1, c], i2)
    linear(s, LinearKind.CONCAT, [a, b], i1)
    assert closed(s, x, i3, i2, i1, a, b, c, d, e) == (5, 4, 3, 2, 1, 1, 1, 1, 1)


def test_an_inner_axis_waits_for_its_outer_equation() -> None:
    """``inner = a^b`` made first, ``inner^c = 5``, the shape listing
    ``inner`` first: the outer equation guesses its first unknown part,
    ``inner``, at its least size 2 (``c`` = 3), and the inner one follows;
    stopping at the inner equation would fall back to the first waiting
    dim, ``inner``, at 1, which ``a^b`` cannot be."""
    s = Session()
    a, b, c, inner = (s.fresh_dim_var() for _ in range(4))
    linear(s, LinearKind.CONCAT, [a, b], inner)
    linear(s, LinearKind.CONCAT, [inner, c], Size(5))
    assert closed(s, inner, a, b, c) == (2, 1, 1, 3)


def test_a_known_first_part_leaves_the_guess_to_the_next() -> None:
    """``2^b^c = 6``, the shape listing ``c`` first: ``b``, the first unknown
    part, takes 1 and ``c`` the rest (3), whatever order the shape reads."""
    s = Session()
    b, c = s.fresh_dim_var(), s.fresh_dim_var()
    linear(s, LinearKind.CONCAT, [Size(2), b, c], Size(6))
    assert closed(s, c, b) == (3, 1)


def test_a_nested_axis_is_sized_by_its_outer_equation() -> None:
    """``inner = a^b`` made first, then ``x = c^inner`` with ``x`` at least 5:
    ``x`` (used as a part by no equation) takes 5, its first part ``c`` 1, so
    ``inner`` is 4 (``a`` 1, ``b`` 3). Guessing ``inner`` at its own least
    size (2) first would leave 3 to ``c``."""
    s = Session()
    a, b, c, inner, x = (s.fresh_dim_var() for _ in range(5))
    s.add(DimAtLeast(x, 5, ORIGIN))
    linear(s, LinearKind.CONCAT, [a, b], inner)
    linear(s, LinearKind.CONCAT, [c, inner], x)
    assert closed(s, x, c, inner, a, b) == (5, 1, 4, 1, 3)


def test_the_first_part_in_spec_order_takes_its_minimum() -> None:
    """``a^b = 5`` read through a row ``(b, a)``: ``a``, first in the
    equation, takes 1, and ``b`` the rest."""
    s = Session()
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    linear(s, LinearKind.CONCAT, [a, b], Size(5))
    assert closed(s, b, a) == (4, 1)


def test_a_dim_a_total_waits_on_takes_its_minimum() -> None:
    """``a·b = 6`` with ``a`` at least 2: ``a = 2``, ``b = 3``."""
    s = Session()
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    s.add(DimAtLeast(a, 2, ORIGIN))
    s.add(TotalElems((Row((a, b)),), 6, ORIGIN))
    assert closed(s, a, b) == (2, 3)


def test_a_total_gives_its_elements_to_its_last_dim_whatever_shape_came_first() -> None:
    """``a·b = 6`` in the total's row order, with a shape made before listing
    ``b`` first, or ``a`` first: ``a = 1``, ``b = 6`` both ways (a scheme makes
    its results before its body's shapes; the guess must not read that)."""
    outcomes = []
    for first in ("b", "a"):
        s = Session()
        a, b = s.fresh_dim_var(), s.fresh_dim_var()
        earlier = (b, a) if first == "b" else (a, b)
        s.new_shape("earlier", Row(()), Row(()), Row(earlier))
        s.add(TotalElems((Row((a, b)),), 6, ORIGIN))
        outcomes.append(closed(s, a, b))
    assert outcomes == [(1, 6), (1, 6)]


def test_a_dim_counting_a_total_waits_for_the_rows() -> None:
    """The elements of ``[e]``, ``e`` at least 3, are counted by ``d``: ``e``
    takes its minimum first and ``d`` follows (3, 3), where guessing ``d``
    first would leave no room for ``e``."""
    s = Session()
    e, d = s.fresh_dim_var(), s.fresh_dim_var()
    s.add(DimAtLeast(e, 3, ORIGIN))
    s.add(TotalElems((Row((e,)),), d, ORIGIN))
    assert closed(s, e, d) == (3, 3)


def test_a_cycle_below_a_waiting_axis_waits_with_it() -> None:
    """``r ⊑ w``, ``q ⊑ r`` and ``r ⊑ q`` with ``w = a^b``: the walk from the
    waiting axis meets the cycle once, and all follow ``w`` (2)."""
    s = Session()
    a, b, w, r, q = (s.fresh_dim_var() for _ in range(5))
    linear(s, LinearKind.CONCAT, [a, b], w)
    s.add(DimIneq(r, w, ORIGIN))
    s.add(DimIneq(q, r, ORIGIN))
    s.add(DimIneq(r, q, ORIGIN))
    assert closed(s, w, r, q) == (2, 2, 2)


def test_a_size_before_a_free_dim_does_not_stop_the_last_step() -> None:
    s = Session()
    d = s.fresh_dim_var()
    assert closed(s, Size(5), d) == (5, 1)


@pytest.mark.parametrize("kind", [LinearKind.SUM, LinearKind.CONCAT])
def test_a_pending_sum_does_not_keep_a_concatenation_from_its_bound(
    kind: LinearKind,
) -> None:
    """A pending equation ``e + f = 4`` (a generic sum, or a concatenation
    of known axis and unknown parts), then the concatenation ``ii^jj^kk`` of
    2, 3 and a parameter, added to ``[7]``: the parameter is still sized
    through the concatenation (2); the pending equation closes ``1 + 3``."""
    s = Session()
    e, f = s.fresh_dim_var(), s.fresh_dim_var()
    linear(s, kind, [e, f], Size(4))
    c_e = s.param("c_e", "...->...")
    joined = s.einsum(
        "cat", "ii; jj; kk => ii^jj^kk", s.leaf("a", "2"), s.leaf("b", "3"), c_e
    )
    s.pointwise("sum", joined, s.leaf("seven", "7"))
    shape = s.new_shape("ef", Row(()), Row(()), Row((e, f)))
    s.close()
    assert (c_e.shape.dims()[2], shape.dims()[2]) == ((2,), (1, 3))


def test_a_total_counted_by_a_dim_known_at_closing_sizes_an_open_row() -> None:
    """A row capture set equal to a dim capture set to 6 after: the open
    leaf's row takes the 6 elements at the totals step."""
    s = Session()
    row, dim = s.dim_ref("r"), s.dim_ref("d")
    x = s.leaf("x")
    s.einsum("a", "..r..=>", x, capture_dims=[row])
    s.einsum("b", "d=>", s.leaf("y"), capture_dims=[dim])
    s.set_equal(row, dim)
    s.set_dim(dim, 6)
    s.close()
    assert x.shape.dims()[2] == (6,)


def test_a_total_counted_by_an_unknown_dim_does_not_stop_the_others() -> None:
    """The same total with the dim never set, then a total of 6 on another
    open leaf: that one still takes its elements, the first closes to 1."""
    s = Session()
    row, dim = s.dim_ref("r"), s.dim_ref("d")
    x, z = s.leaf("x"), s.leaf("z")
    s.einsum("a", "..r..=>", x, capture_dims=[row])
    s.einsum("b", "d=>", s.leaf("y"), capture_dims=[dim])
    s.set_equal(row, dim)
    s.total_elems(z, 6, kinds=[Kind.OUTPUT])
    s.close()
    assert (x.shape.dims()[2], z.shape.dims()[2], dim.value) == ((), (6,), 1)


# ----------------------------------------------- leading axes and lower bounds


def test_leading_axes_fit_behind_the_join_where_the_first_place_fails() -> None:
    """``4,...,7`` below ``3,4,5,7``: the 4 lands on the join's second axis
    (not its first, 3), and the row takes the axes behind it: ``[4, 5, 7]``."""
    s = Session()
    x = s.param("x", "4,...,7")
    s.pointwise("p", x, s.leaf("y", "3,4,5,7"))
    s.close()
    assert x.shape.dims()[2] == (4, 5, 7)


def test_leading_axes_partly_on_the_join_land_there_first() -> None:
    """``2,3,...,7`` below ``[..., 3, 7]``: the 3 lands on the join's 3 and
    the 2 in front of it, adding one axis (``[2, 3, 7]``), not two."""
    s = Session()
    x = s.param("x", "2,3,...,7")
    s.pointwise("p", x, s.leaf("y", "3,7"))
    s.close()
    assert x.shape.dims()[2] == (2, 3, 7)


def test_a_written_size_lands_on_an_unknown_axis_of_the_join() -> None:
    """``3,...,7`` below ``[...t, d, 7]``: the 3 fits on ``d``, and the row
    takes no further axes (``[3, 7]``, and ``d`` 3)."""
    s = Session()
    x = s.param("x", "3,...,7")
    d, t = s.fresh_dim_var(), s.fresh_row_var()
    s.add(RowIneq(Row((d, Size(7)), t), x.shape.row(Kind.OUTPUT), ORIGIN))
    assert closed(s, d) == (3,)
    assert x.shape.dims()[2] == (3, 7)


def test_a_prefix_whose_row_variable_ends_in_axes_keeps_them_last() -> None:
    """An einsum's ``a, ..r..`` whose ``r`` already ends in 3 (``"...,3"``)
    on an open leaf below ``[2, 9, 3]``: the 3 stays last, the written ``a``
    lands on the 2 and ``r`` takes the 9 before its 3 (``r = [9, 3]``)."""
    s = Session()
    x = s.leaf("x")
    y = s.leaf("y", "...,3")
    s.einsum("e", "a, ..r..; ..r.. => ", x, y)
    s.pointwise("p", x, s.leaf("z", "2,9,3"))
    s.close()
    assert x.shape.dims()[2] == (2, 9, 3)
    assert y.shape.dims()[2] == (9, 3)


def test_written_axes_that_fit_nowhere_behind_go_in_front_of_the_join() -> None:
    """A leaf ``[5, 7, ...r, 7, 9]`` (``r`` already ends in 7, 9) below an
    open ``[..., 5, 7, 9]``: the written 7 cannot land on the join's 5, so
    the written axes go in front and ``r`` takes the 5 (``[5, 7, 5, 7, 9]``);
    laying them on the join's own 5, 7 would leave the row's 7 against its
    5."""
    s = Session()
    x = s.leaf("x")
    rest = Row((Size(7), Size(9)), s.fresh_row_var())
    s.add(RowPrefix(x.shape.row(Kind.OUTPUT), (Size(5), Size(7)), rest, ORIGIN))
    s.pointwise("p", x, s.leaf("z", "...,5,7,9"))
    s.close()
    assert x.shape.dims()[2] == (5, 7, 5, 7, 9)


def test_a_leaf_shorter_than_its_written_axes_shows_them_to_the_leaf_dims_step() -> (
    None
):
    """A leaf row ``[a, 3, ...r]`` known to have no axes yet, with ``5 ⊑ a``:
    closing its unbounded rows gives ``r`` no axes, which makes the row ``[a,
    3]`` before the leaf dims step, so ``a`` takes its bound 5 there (left
    to the last step it would be 1)."""
    s = Session()
    x = s.leaf("x")
    a = s.fresh_dim_var()
    rest = Row((), s.fresh_row_var())
    s.add(RowPrefix(x.shape.row(Kind.OUTPUT), (a, Size(3)), rest, ORIGIN))
    s.add(DimIneq(Size(5), a, ORIGIN))
    s.close()
    assert x.shape.dims()[2] == (5, 3)


def test_a_solved_dim_equated_later_is_read_through_the_equation() -> None:
    """A concatenation whose part is equated to a size after it was made."""
    s = Session()
    a, b, axis = (s.fresh_dim_var() for _ in range(3))
    linear(s, LinearKind.CONCAT, [a, b], axis)
    s.add(DimEq(a, Size(4), ORIGIN))
    assert closed(s, a, b, axis) == (4, 1, 5)


def test_a_guess_sizes_another_equation_before_it_is_guessed() -> None:
    """``v1 = a^b`` and ``v2 = c^d`` with ``c ⊑ v1``: guessing ``v1`` (2)
    forces ``c`` to 2 at Stage 1, and ``v2`` is then guessed from that (3),
    not from ``c``'s minimum (which would leave ``d`` no room)."""
    s = Session()
    a, b, v1, c, d, v2 = (s.fresh_dim_var() for _ in range(6))
    linear(s, LinearKind.CONCAT, [a, b], v1)
    linear(s, LinearKind.CONCAT, [c, d], v2)
    s.add(DimIneq(c, v1, ORIGIN))
    assert closed(s, a, b, v1, c, d, v2) == (1, 1, 2, 2, 1, 3)


def test_a_bounded_dim_after_a_waiting_one_is_sized_first() -> None:
    """A part ``p`` of ``p^q`` broadcasts from ``b``, a fixed index's axis of
    at least 3, read after ``p``: ``b`` is sized first and forces ``p`` (3),
    and the concatenation follows (4)."""
    s = Session()
    p, q, v, b = (s.fresh_dim_var() for _ in range(4))
    linear(s, LinearKind.CONCAT, [p, q], v)
    s.add(DimAtLeast(b, 3, ORIGIN))
    s.add(DimIneq(p, b, ORIGIN))
    assert closed(s, p, q, v, b) == (3, 1, 4, 3)


def test_a_prefix_short_of_its_written_axes_closes_its_row_variable() -> None:
    """An open leaf under ``a, ..r..`` where ``r`` ends in 3: the leaf has
    fewer axes than the two written, so ``r`` gets no more (``[1, 3]``)."""
    s = Session()
    x = s.leaf("x")
    s.einsum("e", "a, ..r..; ..r.. => ", x, s.leaf("y", "...,3"))
    s.close()
    assert x.shape.dims()[2] == (1, 3)


def test_a_leaf_dim_after_a_known_one_still_takes_its_bound() -> None:
    """A leaf row ``[5, d]`` with ``3 ⊑ d``: the known 5 does not stop the
    leaf dims step, and ``d`` takes its bound 3 (not the 1 of the last step)."""
    s = Session()
    x = s.leaf("x")
    d = s.fresh_dim_var()
    s.add(RowEq(x.shape.row(Kind.OUTPUT), Row((Size(5), d)), ORIGIN))
    s.add(DimIneq(Size(3), d, ORIGIN))
    s.close()
    assert x.shape.dims()[2] == (5, 3)


def test_the_last_of_three_unknown_parts_takes_the_rest() -> None:
    """``a^b^c = 7`` read through a row ``(c, a, b)``: ``a`` takes its
    minimum, then ``b`` (the equation is read again after each guess), and
    ``c`` the rest, whatever the order of the row."""
    s = Session()
    a, b, c = (s.fresh_dim_var() for _ in range(3))
    linear(s, LinearKind.CONCAT, [a, b, c], Size(7))
    assert closed(s, c, a, b) == (5, 1, 1)


def closing_error(s: Session, *dims: DimVar | Size) -> str:
    """The message of the contradiction closing reports (it must report one)."""
    with pytest.raises(ShapeError) as info:
        closed(s, *dims)
    return str(info.value)


def test_a_contradiction_of_a_cycle_names_the_equation_not_a_minimum() -> None:
    """``b = a^c`` and ``a = b^c`` need ``c = 0``; with ``a`` a fixed index's
    axis of at least 3, the guess takes that minimum (``a = 3``), and the
    error is the equations', not the index's (a guess of 1 would report the
    index that 1 breaks)."""
    s = Session()
    a, b, c = (s.fresh_dim_var() for _ in range(3))
    s.add(DimAtLeast(a, 3, Origin("index", "i")))
    linear(s, LinearKind.CONCAT, [a, c], b)
    linear(s, LinearKind.CONCAT, [b, c], a)
    assert closing_error(s, a, b, c) == (
        "test 't': the axis 'axis' cannot hold with n0 = 4, n1 = 1, n2 = 3: "
        "the sizes do not satisfy it"
    )


def test_a_contradiction_after_a_guess_names_the_closing_that_guessed() -> None:
    """``b = c^a`` and ``c = b^a`` need ``a = 0``; no equation has an axis
    to guess from, so the closing guesses the first dim waiting (``c``), and
    the error says it was found while solving that guess."""
    s = Session()
    a, b, c = (s.fresh_dim_var() for _ in range(3))
    linear(s, LinearKind.CONCAT, [c, a], b)
    linear(s, LinearKind.CONCAT, [b, a], c)
    assert closing_error(s, a, b, c) == (
        "test 't': the axis 'axis' cannot hold with n1 = 1, n2 = 1: no positive "
        "size of 'n0' satisfies it (n0 = 0/1) (found while solving close 'the session')"
    )


def test_a_contradiction_after_a_part_is_guessed_names_that_equation() -> None:
    """``a^b = 4`` (made first) and ``a^a^c = 2``: the first part of the first
    equation is guessed (``a = 1``), which leaves ``c = 0`` in the second;
    the error names the first as what was being solved."""
    s = Session()
    a, b, c = (s.fresh_dim_var() for _ in range(3))
    first, second = Origin("concat", "x"), Origin("concat", "y")
    s.add(
        DimLinear(
            ((1, a), (1, b), (-1, Size(4))),
            0,
            ("a", "b", "x"),
            "x",
            first,
            LinearKind.CONCAT,
        )
    )
    s.add(
        DimLinear(
            ((1, a), (1, a), (1, c), (-1, Size(2))),
            0,
            ("a", "a", "c", "y"),
            "y",
            second,
            LinearKind.CONCAT,
        )
    )
    assert closing_error(s, a, b, c) == (
        "concat 'y': the axis 'y' cannot hold with a = 1, a = 1, y = 2: no positive "
        "size of 'c' satisfies it (c = 0/1) (found while solving concat 'x')"
    )
