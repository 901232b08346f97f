"""The rank limit is inclusive: a row may have exactly 64 axes (issue 18: a
mutant comparing with ``>=`` instead of ``>`` went unnoticed)."""

from __future__ import annotations

import pytest

from axisflow.shapes import Kind, Origin, Row, RowEq, RowIneq, Session, ShapeError, Side


def bounded_by(axes: int) -> tuple[Session, Row]:
    """A session where an open row must broadcast to ``axes`` fixed axes."""
    s = Session()
    origin = Origin("test", "t", lhs=Side("p", Kind.OUTPUT), rhs=Side("q", Kind.OUTPUT))
    row = Row((), s.fresh_row_var())
    dims = tuple(s.fresh_dim_var() for _ in range(axes))
    s.add(RowIneq(row, Row(dims, None), origin))
    return s, row


def test_a_row_of_exactly_64_axes_is_accepted() -> None:
    s, row = bounded_by(64)
    assert row.var is not None
    value = s.row_entry(row.var).value
    assert value is not None
    assert len(value.dims) == 64
    assert value.var is not None


def test_a_row_of_65_axes_is_refused() -> None:
    with pytest.raises(ShapeError) as info:
        bounded_by(65)
    assert str(info.value).endswith(
        "would need infinitely many axes (more than 64 axes in one row: the "
        "inequalities are cyclic)"
    )


ORIGIN = Origin("test", "t", lhs=Side("p", Kind.OUTPUT), rhs=Side("q", Kind.OUTPUT))
CYCLIC = (
    "would need infinitely many axes (more than 64 axes in one row: the "
    "inequalities are cyclic)"
)


def templated_tail(s: Session, axes: int) -> Row:
    """The open tail ``t`` of a fresh row variable that had to broadcast to
    ``axes`` fixed axes (it became ``[axes fresh dims, ...t]``): ``t`` has
    ``axes`` axes in front of it."""
    row = Row((), s.fresh_row_var())
    s.add(
        RowIneq(row, Row(tuple(s.fresh_dim_var() for _ in range(axes)), None), ORIGIN)
    )
    assert row.var is not None
    value = s.row_entry(row.var).value
    assert value is not None and value.var is not None
    assert len(value.dims) == axes
    return Row((), value.var)


@pytest.mark.parametrize("deep_first", [True, False])
def test_equating_a_deep_tail_with_a_shallow_one_keeps_the_larger_depth(
    deep_first: bool,
) -> None:
    """One row has 60 axes in front of its tail, another 1; once the two tails
    are one variable, 10 more axes in front of it make a row of 70 axes,
    which is refused whichever tail is solved to the other (solving the
    shallow one must not lower the depth of the deep one to 1)."""
    s = Session()
    deep, shallow = templated_tail(s, 60), templated_tail(s, 1)
    pair = (deep, shallow) if deep_first else (shallow, deep)
    s.add(RowEq(pair[0], pair[1], ORIGIN))
    with pytest.raises(ShapeError) as info:
        s.add(
            RowIneq(
                deep, Row(tuple(s.fresh_dim_var() for _ in range(10)), None), ORIGIN
            )
        )
    assert str(info.value).endswith(CYCLIC)


@pytest.mark.parametrize("shallow_first", [True, False])
def test_a_tail_solved_to_a_fresh_variable_hands_on_its_depth_of_one(
    shallow_first: bool,
) -> None:
    """A tail with 1 axis in front of it, equated with a fresh row variable
    that has none: 64 more axes in front of that variable make a row of 65
    axes, refused (the depth of 1 moves to the fresh variable)."""
    s = Session()
    shallow = templated_tail(s, 1)
    fresh = Row((), s.fresh_row_var())
    pair = (shallow, fresh) if shallow_first else (fresh, shallow)
    s.add(RowEq(pair[0], pair[1], ORIGIN))
    with pytest.raises(ShapeError) as info:
        s.add(
            RowIneq(
                fresh, Row(tuple(s.fresh_dim_var() for _ in range(64)), None), ORIGIN
            )
        )
    assert str(info.value).endswith(CYCLIC)


def test_a_shallow_tail_with_room_left_accepts_axes_up_to_the_limit() -> None:
    """The counterpart: a tail with 1 axis in front of it takes 63 more (64
    in all) after being equated with a fresh variable."""
    s = Session()
    shallow = templated_tail(s, 1)
    fresh = Row((), s.fresh_row_var())
    s.add(RowEq(shallow, fresh, ORIGIN))
    s.add(
        RowIneq(fresh, Row(tuple(s.fresh_dim_var() for _ in range(63)), None), ORIGIN)
    )
    assert fresh.var is not None
    value = s.row_entry(fresh.var).value
    assert value is not None and len(value.dims) == 63
