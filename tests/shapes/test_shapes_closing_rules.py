"""Closing decisions whose consequences fail, and the steps' bookkeeping.

Each test pins what a closing step decides or reports in a case a mutation
review found no test observing: the error a closing decision leads to names
the leaf whose decision it was, with the rows it assigned; a decision of a
later round sees those of the earlier ones.
"""

from __future__ import annotations

import pytest

from axisflow.shapes import (
    DimIneq,
    Kind,
    Origin,
    Row,
    RowIneq,
    Session,
    ShapeError,
    Side,
    Size,
    Terminal,
    TotalElems,
)

ORIGIN = Origin("test", "t", lhs=Side("p", Kind.OUTPUT), rhs=Side("q", Kind.OUTPUT))
LEAF = Origin("leaf", "x", lhs=Side("x", Kind.OUTPUT))


def templated_tail(s: Session, axes: int) -> Row:
    """The open tail ``t`` of a fresh row that had to broadcast to ``axes``
    fixed axes (it became ``[axes fresh dims, ...t]``)."""
    row = Row((), s.fresh_row_var())
    s.add(
        RowIneq(row, Row(tuple(s.fresh_dim_var() for _ in range(axes)), None), ORIGIN)
    )
    assert row.var is not None
    value = s.row_entry(row.var).value
    assert value is not None and value.var is not None
    return Row((), value.var)


def test_a_leaf_row_closed_to_its_bound_past_the_rank_limit_names_the_leaf() -> None:
    """A leaf row ``t`` with 10 axes in front of it and a lower bound of 60
    sizes over an open row: closing it to its bound makes a row of 70 axes;
    the error is that of the leaf's decision, with ``t`` and the join."""
    s = Session()
    tail = templated_tail(s, 10)
    assert tail.var is not None
    s.add(Terminal(tail, False, LEAF))
    rest = s.fresh_row_var()
    s.add(RowIneq(Row(tuple(Size(2) for _ in range(60)), rest), tail, ORIGIN))
    with pytest.raises(ShapeError) as info:
        s.close()
    sizes = ", ".join(["2"] * 60)
    assert str(info.value) == (
        f"leaf 'x': output axes cannot agree: x.output [...r{tail.var.id}] and the "
        f"operand [...r{rest.id}, {sizes}] would need infinitely many axes (more "
        f"than 64 axes in one row: the inequalities are cyclic)"
    )


def test_a_total_broken_by_a_leaf_closed_to_its_bound_names_the_leaf() -> None:
    """A leaf row with lower bound ``[3]`` and a total of 4 elements: closing
    the leaf to its bound breaks the total; the error is the total's, found
    while solving the leaf's decision."""
    s = Session()
    var = s.fresh_row_var()
    s.add(Terminal(Row((), var), False, LEAF))
    s.add(RowIneq(Row((Size(3),)), Row((), var), ORIGIN))
    s.add(TotalElems((Row((), var),), 4, ORIGIN))
    with pytest.raises(ShapeError) as info:
        s.close()
    assert str(info.value) == (
        "test 't': the axes [3] cannot hold 4 elements (their known sizes multiply "
        "to 3) (found while solving leaf 'x')"
    )


def test_a_total_broken_by_a_leaf_dim_closed_to_its_bound_names_the_leaf() -> None:
    """A leaf dim with lower bound 3 in a total of 7 elements over two dims:
    closing the dim to its bound breaks the total; the error is the total's,
    found while solving the leaf's decision."""
    s = Session()
    dim, other = s.fresh_dim_var(), s.fresh_dim_var()
    s.add(Terminal(Row((dim,)), False, LEAF))
    s.add(DimIneq(Size(3), dim, ORIGIN))
    s.add(TotalElems((Row((dim, other)),), 7, ORIGIN))
    with pytest.raises(ShapeError) as info:
        s.close()
    assert str(info.value) == (
        f"test 't': the axes [3, d{other.id}] cannot hold 7 elements (their known "
        f"sizes multiply to 3) (found while solving leaf 'x')"
    )
