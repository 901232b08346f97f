"""Closing steps that skip one item and go on with the next.

Every step of closing (``axisflow.shapes.closing``) walks the leaves, the
totals or the remaining dims and skips those it has nothing to decide for: a
leaf row closed in an earlier round, a leaf sharing its row with one already
decided, a concrete axis, a total whose count is already a number. Each test
puts such an item *before* one that the step must still decide, and pins
what the later one closes to (or the error it leads to), so that a step that
stopped at the first item it skips would be seen.
"""

from __future__ import annotations

import pytest

from axisflow.shapes import (
    DeferredCount,
    DimVar,
    Kind,
    Origin,
    Row,
    RowEq,
    RowIneq,
    Session,
    ShapeError,
    Side,
    Size,
)

ORIGIN = Origin("test", "t", lhs=Side("p", Kind.OUTPUT), rhs=Side("q", Kind.OUTPUT))


def sizes(*ns: int) -> tuple[Size, ...]:
    return tuple(Size(n) for n in ns)


def test_a_leaf_sharing_a_decided_row_does_not_stop_the_join_step() -> None:
    """Leaves ``a`` and ``b`` share one open output row bounded by ``[3]``;
    the leaf ``x`` after them has its own bound ``[5]``: the join step skips
    ``b`` (its row is decided with ``a``'s) and still gives ``x`` its bound,
    in the first round and in the next, where ``a``'s row is closed."""
    s = Session()
    a, b, x = s.leaf("a"), s.leaf("b"), s.leaf("x")
    s.add(RowEq(a.shape.row(Kind.OUTPUT), b.shape.row(Kind.OUTPUT), ORIGIN))
    s.add(RowIneq(Row(sizes(3)), a.shape.row(Kind.OUTPUT), ORIGIN))
    s.add(RowIneq(Row(sizes(5)), x.shape.row(Kind.OUTPUT), ORIGIN))
    s.close()
    assert a.shape.dims() == b.shape.dims() == ((), (), (3,))
    assert x.shape.dims() == ((), (), (5,))


def test_a_parameter_after_a_leaf_closed_to_its_bound_is_the_hidden_dimension_error() -> (
    None
):
    """A data leaf whose open row closes to its bound ``[3]``, then a
    parameter whose output row nothing bounds: the unbounded-rows step skips
    the closed leaf and reports the parameter's hidden dimensions."""
    s = Session()
    x = s.leaf("x")
    s.add(RowIneq(Row(sizes(3)), x.shape.row(Kind.OUTPUT), ORIGIN))
    w = s.param("w", "...->...")
    s.compose("y", w, s.leaf("v", "3"))
    # compose relates w's output to y's: its row is now y's open tail.
    out = s.solver.norm_row(w.shape.row(Kind.OUTPUT))
    assert out.var is not None and not out.dims
    with pytest.raises(ShapeError) as info:
        s.close()
    assert str(info.value) == (
        "You forgot to specify the hidden dimension(s) of parameter 'w': the "
        f"number of its output axes [...r{out.var.id}] cannot be inferred; give "
        "them in its spec (param 'w' (spec '...->...'))"
    )


def test_a_parameter_dim_after_an_open_leaf_is_the_hidden_dimension_error() -> None:
    """A data leaf with an open row (closed to its bound ``[3]``), then a
    parameter ``w`` whose second axis nothing sizes: the check of parameter
    dims skips the data leaf and reports ``w``'s axis."""
    s = Session()
    x = s.leaf("x")
    s.add(RowIneq(Row(sizes(3)), x.shape.row(Kind.OUTPUT), ORIGIN))
    w = s.param("w")
    s.einsum("y", "i;ij=>j", x, w)
    first, second = s.solver.norm_row(w.shape.row(Kind.OUTPUT)).dims
    assert type(first) is DimVar and type(second) is DimVar
    with pytest.raises(ShapeError) as info:
        s.close()
    assert str(info.value) == (
        "You forgot to specify the hidden dimension(s) of parameter 'w': the "
        f"size of one of its output axes [3, d{second.id}] cannot be inferred; "
        "give them in its spec (param 'w')"
    )


def test_a_deferred_count_after_a_known_one_is_resolved() -> None:
    """Two totals: the first with a known count, the second deferred: both
    give their leaf's open output row its elements."""
    s = Session()
    x, y = s.leaf("x", "...->2"), s.leaf("y", "...->3")
    s.total_elems(x, 6)
    s.total_elems(y, DeferredCount("twelve", lambda: 12))
    s.close()
    # Each total's elements go to its last open row, the input row.
    assert x.shape.dims() == ((), (3,), (2,))
    assert y.shape.dims() == ((), (4,), (3,))


def test_a_minimum_on_an_operand_is_sized_before_an_earlier_result_axis() -> None:
    """The result ``z`` is made before the leaf ``b`` it is then related to
    (``z ⊑ b``, ``b``'s last axis indexed at 2): closing sizes ``b``'s axis
    3 first and ``z``'s axis follows it, although ``z``'s axes are read
    first."""
    s = Session()
    a = s.leaf("a")
    z = s.pointwise("z", a)
    b = s.leaf("b")
    s.einsum("c", "i,2=>i", b)
    s.add(RowIneq(z.shape.row(Kind.OUTPUT), b.shape.row(Kind.OUTPUT), ORIGIN))
    s.close()
    assert b.shape.dims() == ((), (), (1, 3))
    assert z.shape.dims() == ((), (), (1, 3))
    # a's row is z's only operand and z is its only result: they merge.
    assert a.shape.dims() == ((), (), (1, 3))
