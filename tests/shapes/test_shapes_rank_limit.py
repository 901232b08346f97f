"""The rank limit is inclusive: a row may have exactly 64 axes (issue 18: a
mutant comparing with ``>=`` instead of ``>`` went unnoticed)."""

from __future__ import annotations

import pytest

from axisflow.shapes import Kind, Origin, Row, RowIneq, Session, ShapeError, Side


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
