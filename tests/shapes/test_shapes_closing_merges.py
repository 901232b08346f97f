"""The single-neighbour merge of closing, in the orders that need its bookkeeping.

Closing's first step (``merge_single_neighbours``, OCANNL's ``solve_row_ineq``
from stage 2 on) equates ``res ⊑ opnd`` when the two bare row variables are
each other's only neighbour. Variables are examined from the last made to the
first, and a merge can make another pair mergeable; each test here builds the
relations so that the merge it pins happens only if the step looks again at
what a merge changed, skips what an earlier merge solved, or reads a variable
solved since it was related for what it is now. The outcome pinned is the
leaf row that the merge lets take a bound: ``(5,)`` when it merges, ``()``
when it does not.
"""

from __future__ import annotations

import pytest

from axisflow.shapes import (
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


def bare(s: Session) -> Row:
    """A fresh row variable as a row."""
    return Row((), s.fresh_row_var())


def below(s: Session, res: Row, opnd: Row, origin: Origin = ORIGIN) -> None:
    """``res ⊑ opnd``."""
    s.add(RowIneq(res, opnd, origin))


def test_a_variable_an_earlier_merge_solved_does_not_stop_the_others() -> None:
    """Two leaves each below one operand. The operand ``oa`` of ``xa`` is made
    before ``xa`` and has fewer relations, so merging them solves ``oa``,
    whose id is examined after the merge: it is skipped, and the pair made
    first (``yb`` below ``ob``, bounded by ``[3]``) still merges."""
    s = Session()
    yb, ob = s.leaf("yb"), bare(s)
    below(s, yb.shape.row(Kind.OUTPUT), ob)
    below(s, Row((Size(3),)), ob)
    oa = bare(s)
    xa = s.leaf("xa")
    below(s, xa.shape.row(Kind.OUTPUT), oa)
    below(s, Row((Size(5),)), xa.shape.row(Kind.OUTPUT))
    s.close()
    assert yb.shape.dims() == ((), (), (3,))
    assert xa.shape.dims() == ((), (), (5,))


def test_a_merge_that_removes_a_second_operand_lets_the_variable_merge_again() -> None:
    """``v ⊑ x``, ``v ⊑ w`` and ``w ⊑ v``, with ``x`` bounded by ``[5]``: ``v``
    has two operands and does not merge at first; ``w`` and ``v`` are each
    other's only neighbour and merge; the merged variable has ``x`` as its
    only operand now and merges with it, so the leaf row ``v`` takes ``[5]``."""
    s = Session()
    x, w = bare(s), bare(s)
    leaf = s.leaf("v")
    v = leaf.shape.row(Kind.OUTPUT)
    below(s, Row((Size(5),)), x)
    below(s, v, x)
    below(s, v, w)
    below(s, w, v)
    s.close()
    assert leaf.shape.dims() == ((), (), (5,))


def test_a_merge_that_removes_a_second_result_lets_a_result_merge() -> None:
    """``n ⊑ v``, ``w ⊑ v`` and ``v ⊑ w``, with ``w`` bounded by ``[5]``; the
    leaf row ``n`` is made last, so it is examined first and does not merge
    (``v`` has two results). ``v`` and ``w`` merge; the merged variable's
    only result is ``n`` now, which is looked at again and merges."""
    s = Session()
    v, w = bare(s), bare(s)
    leaf = s.leaf("x")
    n = leaf.shape.row(Kind.OUTPUT)
    below(s, n, v)
    below(s, w, v)
    below(s, v, w)
    below(s, Row((Size(5),)), w)
    s.close()
    assert leaf.shape.dims() == ((), (), (5,))


def test_a_result_solved_to_axes_is_no_bare_neighbour() -> None:
    """The leaf row ``a ⊑ v`` and ``r ⊑ v``, ``v`` bounded by ``[5]``; then
    ``r`` is solved to ``[5, ...t]``. ``r`` is no bare variable any more (its
    tail ``t`` is no result of ``v``), so ``a`` is ``v``'s only bare result:
    they merge and the leaf takes ``[5]``."""
    s = Session()
    leaf = s.leaf("x")
    v, r = bare(s), bare(s)
    tail = s.fresh_row_var()
    below(s, leaf.shape.row(Kind.OUTPUT), v)
    below(s, r, v)
    below(s, Row((Size(5),)), v)
    s.add(RowEq(r, Row((Size(5),), tail), ORIGIN))
    s.close()
    assert leaf.shape.dims() == ((), (), (5,))


def test_a_relation_read_twice_keeps_its_origin_for_a_later_error() -> None:
    """A tail ``t`` with 10 axes in front of it is below the leaf row ``o``
    twice (origins ``first`` and ``second``) and another variable is below
    ``o`` too (no merge). Reading ``o``'s relations drops the repeated one;
    when ``o`` closes to its bound of 60 axes, ``t ⊑ o`` needs 70 axes, and
    the error names the relation kept, ``first``."""
    first = Origin("first", "a", lhs=Side("p", Kind.OUTPUT), rhs=Side("q", Kind.OUTPUT))
    second = Origin(
        "second", "b", lhs=Side("p", Kind.OUTPUT), rhs=Side("q", Kind.OUTPUT)
    )
    s = Session()
    templated = bare(s)
    below(s, templated, Row(tuple(s.fresh_dim_var() for _ in range(10))))
    value = s.solver.norm_row(templated)
    assert len(value.dims) == 10 and value.var is not None
    tail = Row((), value.var)
    leaf = s.leaf("y")
    o = leaf.shape.row(Kind.OUTPUT)
    below(s, tail, o, first)
    below(s, tail, o, second)
    below(s, bare(s), o)
    sixty = Row(tuple(Size(2) for _ in range(60)))
    below(s, sixty, o)
    with pytest.raises(ShapeError) as info:
        s.close()
    sizes = ", ".join(["2"] * 60)
    assert str(info.value) == (
        f"first 'a': output axes cannot agree: p.output [...r{value.var.id}] and "
        f"q.output [{sizes}] would need "
        "infinitely many axes (more than 64 axes in one row: the inequalities are "
        "cyclic) (found while solving leaf 'y')"
    )


def test_a_variable_equated_before_closing_is_no_second_operand() -> None:
    """The leaf row ``v ⊑ x`` (``x`` bounded by ``[5]``) and ``v ⊑ w``, then
    ``v = w`` before closing: the relation to ``w`` is one of ``v`` with
    itself now, so ``x`` is ``v``'s only operand and they merge."""
    s = Session()
    leaf = s.leaf("v")
    v = leaf.shape.row(Kind.OUTPUT)
    x, w = bare(s), bare(s)
    below(s, Row((Size(5),)), x)
    below(s, v, x)
    below(s, v, w)
    s.add(RowEq(v, w, ORIGIN))
    s.close()
    assert leaf.shape.dims() == ((), (), (5,))


def test_a_variable_equated_before_closing_is_no_second_result() -> None:
    """The leaf row ``v ⊑ x`` (``x`` bounded by ``[5]``) and ``y ⊑ x``, then
    ``x = y`` before closing: the relation of ``y`` is one of ``x`` with
    itself now, so ``v`` is ``x``'s only result and they merge."""
    s = Session()
    leaf = s.leaf("v")
    v = leaf.shape.row(Kind.OUTPUT)
    x, y = bare(s), bare(s)
    below(s, Row((Size(5),)), x)
    below(s, v, x)
    below(s, y, x)
    s.add(RowEq(x, y, ORIGIN))
    s.close()
    assert leaf.shape.dims() == ((), (), (5,))


def test_a_merge_that_makes_a_row_contain_itself_names_the_merged_relation() -> None:
    """The leaf row ``v`` broadcasts from ``[...o, 5]`` and ``v ⊑ o`` (origin
    ``merge``); ``o`` has one more relation than ``v`` (a bound ``[3]``), so
    the merge solves ``v`` to ``o``, and ``v``'s lower bound becomes
    ``[...o, 5] ⊑ o``: the error is that bound's, found while solving the
    relation the merge equated."""
    merge = Origin("merge", "m", lhs=Side("p", Kind.OUTPUT), rhs=Side("q", Kind.OUTPUT))
    s = Session()
    leaf = s.leaf("v")
    v = leaf.shape.row(Kind.OUTPUT)
    o = s.fresh_row_var()
    below(s, Row((Size(5),), o), v)
    below(s, v, Row((), o), merge)
    below(s, Row((Size(3),)), Row((), o))
    with pytest.raises(ShapeError) as info:
        s.close()
    assert str(info.value) == (
        f"test 't': output axes cannot agree: p.output [...r{o.id}, 5] and q.output "
        f"[...r{o.id}] would need infinitely many axes (a row variable would contain "
        "itself) (found while solving merge 'm')"
    )
