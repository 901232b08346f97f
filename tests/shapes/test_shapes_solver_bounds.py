"""Stage-1 bounds and the closing decisions they feed, case by case.

Each test pins one rule of the solver to a specific outcome (a size, a bound,
an error and when it is raised), for the paths a mutation review found no test
executing with an observable result. The rules follow OCANNL's ``row.ml``
where it has them: unifying two variables keeps the larger ``At_least_dim``
(``dim_conjunction``: ``Int.max``), and a total element count that the known
sizes do not divide is an error when the constraint is applied
(``total_elems_divide`` in ``apply_row_constraint``), not at closing.
"""

from __future__ import annotations

import re

import pytest

from axisflow.shapes import (
    DeferredCount,
    DimAtLeast,
    DimEq,
    DimIneq,
    DimVar,
    Kind,
    Mark,
    Origin,
    PolicyMark,
    Row,
    RowEq,
    RowIneq,
    RowVar,
    Session,
    ShapeError,
    Side,
    Size,
    Terminal,
    TotalElems,
)
from axisflow.shapes.closing import merge_single_neighbours
from axisflow.shapes.constraints import DimLinear, LinearKind, RowPrefix

ORIGIN = Origin("test", "t", lhs=Side("p", Kind.OUTPUT), rhs=Side("q", Kind.OUTPUT))


def at_least(s: Session, dim: DimVar, n: int) -> None:
    s.add(DimAtLeast(dim, n, ORIGIN))


def lower_bound(s: Session, dim: DimVar, n: int) -> None:
    """``dim`` must broadcast to size ``n`` (``n ⊑ dim``)."""
    s.add(DimIneq(Size(n), dim, ORIGIN))


def representative(s: Session, dim: DimVar) -> DimVar:
    found = s.solver.find_dim(dim)
    assert type(found) is DimVar
    return found


def relations(s: Session, dim: DimVar, count: int) -> None:
    """Give ``dim`` ``count`` inequalities (as result side) to fresh variables.

    The union of two variables links the one with fewer relations under the
    other, so this picks which side of an equality survives.
    """
    for _ in range(count):
        s.add(DimIneq(dim, s.fresh_dim_var(), ORIGIN))


# ------------------------------------------- joining two bounded dim variables


@pytest.mark.parametrize("heavier", ["first", "second"])
@pytest.mark.parametrize(("first_min", "second_min"), [(3, 5), (5, 3)])
def test_an_equality_of_two_dims_keeps_the_larger_minimum(
    heavier: str, first_min: int, second_min: int
) -> None:
    s = Session()
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    at_least(s, a, first_min)
    at_least(s, b, second_min)
    relations(s, a if heavier == "first" else b, 2)
    s.add(DimEq(a, b, ORIGIN))
    rep = representative(s, a)
    assert rep == (a if heavier == "first" else b)
    assert representative(s, b) == rep
    assert s.dim_entry(rep).at_least == 5
    # The larger minimum is enforced on the union: 4 is too small.
    with pytest.raises(ShapeError, match="indexed at position 4 would have size 4"):
        s.add(DimEq(b, Size(4), ORIGIN))


@pytest.mark.parametrize("heavier", ["first", "second"])
@pytest.mark.parametrize("bounded", ["first", "second"])
def test_an_equality_of_two_dims_keeps_either_sides_lower_bound(
    heavier: str, bounded: str
) -> None:
    s = Session()
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    lower_bound(s, a if bounded == "first" else b, 3)
    relations(s, a if heavier == "first" else b, 2)
    s.add(DimEq(a, b, ORIGIN))
    rep = representative(s, a)
    assert representative(s, b) == rep
    assert s.dim_entry(rep).glb == Size(3)


@pytest.mark.parametrize("heavier", ["first", "second"])
def test_an_equality_of_two_dims_with_different_lower_bounds_demotes_to_one(
    heavier: str,
) -> None:
    s = Session()
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    lower_bound(s, a, 3)
    lower_bound(s, b, 5)
    relations(s, a if heavier == "first" else b, 2)
    s.add(DimEq(a, b, ORIGIN))
    assert s.solver.find_dim(a) == Size(1)
    assert s.solver.find_dim(b) == Size(1)


@pytest.mark.parametrize("heavier", ["first", "second"])
def test_an_equality_passes_the_lower_bound_on_to_the_others_operands(
    heavier: str,
) -> None:
    # a ⊑ above (a's operand), b has the lower bound 3; a = b gives above 3 too.
    s = Session()
    a, b, above = s.fresh_dim_var(), s.fresh_dim_var(), s.fresh_dim_var()
    s.add(DimIneq(a, above, ORIGIN))
    lower_bound(s, b, 3)
    relations(s, a if heavier == "first" else b, 2)
    s.add(DimEq(a, b, ORIGIN))
    assert s.dim_entry(representative(s, above)).glb == Size(3)


def test_an_equality_merges_pending_totals_of_both_dims() -> None:
    # Each dim waits on its own total; after a = b, solving b from one total
    # re-checks the other total, which must then hold.
    s = Session()
    a, b, c = s.fresh_dim_var(), s.fresh_dim_var(), s.fresh_dim_var()
    s.add(TotalElems((Row((a, c)),), 12, ORIGIN))
    relations(s, a, 2)
    s.add(TotalElems((Row((b, Size(2))),), 6, ORIGIN))
    assert s.solver.find_dim(b) == Size(3)
    s.add(DimEq(b, a, ORIGIN))
    assert s.solver.find_dim(c) == Size(4)


# ------------------------------------- a bounded variable on the result side


def test_a_bounded_result_variable_pushes_its_bound_to_a_new_operand() -> None:
    s = Session()
    res, opnd = s.fresh_dim_var(), s.fresh_dim_var()
    lower_bound(s, res, 3)
    s.add(DimIneq(res, opnd, ORIGIN))
    assert s.dim_entry(opnd).glb == Size(3)
    assert s.dim_entry(res).opnd == (opnd,)
    assert s.dim_entry(opnd).res == (res,)


def test_a_bound_reaching_a_result_variable_goes_on_to_its_operands() -> None:
    s = Session()
    res, opnd = s.fresh_dim_var(), s.fresh_dim_var()
    s.add(DimIneq(res, opnd, ORIGIN))
    lower_bound(s, res, 3)
    assert s.dim_entry(opnd).glb == Size(3)
    # A second, different bound on the chain: only 1 is above both.
    lower_bound(s, opnd, 5)
    assert s.solver.find_dim(opnd) == Size(1)


def test_a_leaf_dim_takes_the_bound_pushed_through_an_inequality() -> None:
    # y's one output axis is the operand of a variable bounded by 3: at
    # closing the leaf dim takes that bound (without it, it would become 1).
    s = Session()
    y = s.leaf("y")
    leaf_dim, res = s.fresh_dim_var(), s.fresh_dim_var()
    s.add(RowEq(y.shape.row(Kind.OUTPUT), Row((leaf_dim,)), ORIGIN))
    lower_bound(s, res, 3)
    s.add(DimIneq(res, leaf_dim, ORIGIN))
    s.close()
    assert y.shape.dims()[2] == (3,)


def test_a_result_size_of_one_forces_the_operand_to_one() -> None:
    s = Session()
    opnd = s.fresh_dim_var()
    s.add(DimIneq(Size(1), opnd, ORIGIN))
    assert s.solver.find_dim(opnd) == Size(1)


def test_an_operand_size_other_than_one_forces_the_result() -> None:
    s = Session()
    res = s.fresh_dim_var()
    s.add(DimIneq(res, Size(4), ORIGIN))
    assert s.solver.find_dim(res) == Size(4)
    s2 = Session()
    free = s2.fresh_dim_var()
    s2.add(DimIneq(free, Size(1), ORIGIN))
    assert s2.solver.find_dim(free) == free


# ------------------------------------------ marks moving with a row variable


def param_row(s: Session) -> RowVar:
    """A parameter row variable left for closing to decide."""
    var = s.fresh_row_var()
    s.add(Terminal(Row((), var), True, ORIGIN))
    return var


@pytest.mark.parametrize("mark", [Mark.SAFE_TO_GUESS, Mark.USED_IN_POINTWISE])
def test_a_marked_row_variable_solved_to_another_passes_its_mark_on(
    mark: Mark,
) -> None:
    s = Session()
    s.fresh_row_var()  # variable 0 stays unmarked: marks are looked up by id
    marked = s.fresh_row_var()
    s.add(PolicyMark(Row((), marked), mark, ORIGIN))
    target = param_row(s)
    s.add(RowEq(Row((), marked), Row((), target), ORIGIN))
    assert s.row_entry(marked).value == Row((), target)
    assert s.row_entry(target).marks == {mark}
    # The parameter's row is safe to guess through the mark: no hidden-dimension error.
    s.close()


def test_a_parameter_row_without_the_mark_is_the_hidden_dimension_error() -> None:
    s = Session()
    plain = s.fresh_row_var()
    target = param_row(s)
    s.add(RowEq(Row((), plain), Row((), target), ORIGIN))
    with pytest.raises(ShapeError, match="You forgot to specify the hidden dimension"):
        s.close()


def test_marks_accumulate_on_the_variable_a_row_is_solved_to() -> None:
    s = Session()
    first, second = s.fresh_row_var(), s.fresh_row_var()
    s.add(PolicyMark(Row((), first), Mark.USED_IN_POINTWISE, ORIGIN))
    s.add(PolicyMark(Row((), second), Mark.USED_IN_SPEC_OR_COMPOSE, ORIGIN))
    s.add(RowEq(Row((), first), Row((), second), ORIGIN))
    assert s.row_entry(second).marks == {
        Mark.USED_IN_POINTWISE,
        Mark.USED_IN_SPEC_OR_COMPOSE,
    }
    # Used in a compose as well: no longer safe to guess.
    assert not s.solver.safe_to_guess(second)


def test_a_mark_on_the_variable_solved_to_survives() -> None:
    s = Session()
    plain = s.fresh_row_var()
    target = param_row(s)
    s.add(PolicyMark(Row((), target), Mark.SAFE_TO_GUESS, ORIGIN))
    s.add(RowEq(Row((), plain), Row((), target), ORIGIN))
    assert s.row_entry(target).marks == {Mark.SAFE_TO_GUESS}
    s.close()


# --------------------------------------------------------- fixed indices


def test_a_fixed_index_at_the_last_valid_position_is_accepted() -> None:
    s = Session()
    a = s.leaf("a", "2,3")
    c = s.einsum("c", "i2=>i", a)
    s.close()
    assert c.shape.dims() == ((), (), (2,))


def test_a_fixed_index_one_past_the_last_position_is_refused() -> None:
    s = Session()
    a = s.leaf("a", "2,3")
    with pytest.raises(ShapeError, match="indexed at position 3 would have size 3"):
        s.einsum("c", "i3=>i", a)


def test_a_minimum_on_a_known_size_is_checked_at_once() -> None:
    s = Session()
    s.add(DimAtLeast(Size(3), 3, ORIGIN))
    assert not s.tainted
    with pytest.raises(ShapeError, match="indexed at position 3 has size 3"):
        s.add(DimAtLeast(Size(3), 4, ORIGIN))


def test_a_minimum_met_exactly_by_a_later_size_is_accepted() -> None:
    s = Session()
    d = s.fresh_dim_var()
    at_least(s, d, 3)
    s.add(DimEq(d, Size(3), ORIGIN))
    assert s.solver.find_dim(d) == Size(3)
    s2 = Session()
    e = s2.fresh_dim_var()
    at_least(s2, e, 3)
    with pytest.raises(ShapeError, match="indexed at position 2 would have size 2"):
        s2.add(DimEq(e, Size(2), ORIGIN))


def test_a_larger_minimum_replaces_a_smaller_one_but_not_the_reverse() -> None:
    s = Session()
    d = s.fresh_dim_var()
    at_least(s, d, 3)
    at_least(s, d, 6)
    at_least(s, d, 2)
    assert s.dim_entry(d).at_least == 6


def test_an_open_dim_with_a_minimum_closes_to_the_minimum() -> None:
    s = Session()
    b = s.leaf("b")
    s.einsum("c", "i,2=>i", b)
    s.close()
    assert b.shape.dims() == ((), (), (1, 3))


# ------------------------------------------------ joining row lower bounds


def leaf_bounded_by(*bounds: Row) -> tuple[Session, Row]:
    """A session with a data leaf whose open output row broadcasts to ``bounds``."""
    s = Session()
    x = s.leaf("x")
    out = x.shape.row(Kind.OUTPUT)
    for bound in bounds:
        s.add(RowIneq(bound, out, ORIGIN))
    return s, out


def closed_output(s: Session, out: Row) -> tuple[int, ...]:
    (shape,) = [sh for sh in s.registered_shapes if sh.row(Kind.OUTPUT) is out]
    s.close()
    return shape.dims()[2]


def sizes(*ns: int) -> tuple[Size, ...]:
    return tuple(Size(n) for n in ns)


def test_the_join_of_closed_bounds_of_different_lengths_aligns_from_the_right() -> None:
    s, out = leaf_bounded_by(Row(sizes(7, 3, 4)), Row(sizes(5, 4)))
    # Shortest length 2; per axis the common size, 1 where sizes differ.
    assert closed_output(s, out) == (1, 4)


def test_the_join_keeps_a_common_size_in_every_position() -> None:
    s, out = leaf_bounded_by(Row(sizes(2, 3, 4)), Row(sizes(2, 3, 4)))
    assert closed_output(s, out) == (2, 3, 4)


def test_the_join_is_closed_when_a_shortest_bound_is_closed() -> None:
    s = Session()
    x = s.leaf("x")
    tail = s.fresh_row_var()
    out = x.shape.row(Kind.OUTPUT)
    # The open bound comes first: the closed one must still close the join.
    s.add(RowIneq(Row(sizes(5, 4), tail), out, ORIGIN))
    s.add(RowIneq(Row(sizes(3, 4)), out, ORIGIN))
    # The tail's own lower bound: if x took the open tail, x would get 9 too.
    s.add(Terminal(Row((), tail), False, ORIGIN))
    s.add(RowIneq(Row(sizes(9)), Row((), tail), ORIGIN))
    assert closed_output(s, out) == (1, 4)


def test_the_join_of_open_bounds_keeps_the_shortest_bounds_row_variable() -> None:
    s = Session()
    x = s.leaf("x")
    long_tail, short_tail = s.fresh_row_var(), s.fresh_row_var()
    out = x.shape.row(Kind.OUTPUT)
    s.add(RowIneq(Row(sizes(9, 4), long_tail), out, ORIGIN))
    s.add(RowIneq(Row(sizes(4), short_tail), out, ORIGIN))
    # The shortest bound [...short_tail, 4] is open: x = [...short_tail, 4].
    # short_tail is a leaf row too; it then takes the 9 that the longer bound
    # puts on it. A closed join would leave x at [4].
    s.add(Terminal(Row((), short_tail), False, ORIGIN))
    assert closed_output(s, out) == (9, 4)


def test_the_join_takes_the_size_in_a_column_with_a_variable() -> None:
    s = Session()
    x = s.leaf("x")
    free, other = s.fresh_dim_var(), s.fresh_dim_var()
    out = x.shape.row(Kind.OUTPUT)
    s.add(RowIneq(Row((free, Size(4))), out, ORIGIN))
    s.add(RowIneq(Row((Size(6), other)), out, ORIGIN))
    assert closed_output(s, out) == (6, 4)


def test_the_join_of_a_variable_column_takes_the_first_bounds_variable() -> None:
    s = Session()
    x = s.leaf("x")
    first, second = s.fresh_dim_var(), s.fresh_dim_var()
    at_least(s, second, 3)
    out = x.shape.row(Kind.OUTPUT)
    s.add(RowIneq(Row((first,)), out, ORIGIN))
    s.add(RowIneq(Row((second,)), out, ORIGIN))
    # x's axis is ``first`` (closed to 1), which broadcasts to ``second`` (3).
    # Taking ``second`` would give x a 3 that cannot broadcast to ``first``.
    assert closed_output(s, out) == (1,)


# ------------------------------------------------------------------- totals


def test_a_single_unknown_dim_is_solved_from_the_total_at_stage_one() -> None:
    s = Session()
    d = s.fresh_dim_var()
    s.add(TotalElems((Row((d, Size(3))), Row((Size(2),))), 30, ORIGIN))
    assert s.solver.find_dim(d) == Size(5)
    assert s.solver.totals == {}


def test_two_unknown_dims_wait_until_one_is_known() -> None:
    s = Session()
    d, e = s.fresh_dim_var(), s.fresh_dim_var()
    s.add(TotalElems((Row((d, e)),), 12, ORIGIN))
    assert s.solver.find_dim(d) == d and s.solver.find_dim(e) == e
    s.add(DimEq(e, Size(4), ORIGIN))
    assert s.solver.find_dim(d) == Size(3)


def test_a_closed_total_that_does_not_hold_exactly_is_refused() -> None:
    s = Session()
    with pytest.raises(
        ShapeError, match=r"cannot hold 12 elements \(their known sizes multiply to 6\)"
    ):
        s.add(TotalElems((Row(sizes(2, 3)),), 12, ORIGIN))
    s2 = Session()
    s2.add(TotalElems((Row(sizes(2, 3)),), 6, ORIGIN))
    assert s2.solver.totals == {}


def test_a_divisibility_failure_is_raised_at_stage_one_not_at_closing() -> None:
    s = Session()
    x = s.leaf("x", "...->5")  # batch and input rows still open
    with pytest.raises(
        ShapeError, match=r"cannot hold 12 elements \(their known sizes multiply to 5\)"
    ):
        s.total_elems(x, 12)
    assert s.tainted


def test_a_divisible_total_with_open_rows_waits_for_closing() -> None:
    s = Session()
    x = s.leaf("x", "...->5")
    s.total_elems(x, 15)
    assert not s.tainted
    s.close()
    # The quotient goes on the last open row (input); batch gets no axes.
    assert x.shape.dims() == ((), (3,), (5,))


def test_a_total_with_an_unknown_dim_and_an_open_row_closes_the_row_empty() -> None:
    s = Session()
    x, y = s.leaf("x"), s.leaf("y")
    unknown = s.fresh_dim_var()
    s.add(RowEq(y.shape.row(Kind.OUTPUT), Row((unknown, Size(2))), ORIGIN))
    s.add(TotalElems((y.shape.row(Kind.OUTPUT), x.shape.row(Kind.OUTPUT)), 6, ORIGIN))
    assert s.solver.find_dim(unknown) == unknown
    # At closing the open row gets no axes, so the unknown dim is the rest: 3
    # (putting the quotient 3 on the open row would make the dim 1 instead).
    s.close()
    assert x.shape.dims()[2] == ()
    assert y.shape.dims()[2] == (3, 2)


def test_a_total_on_a_last_open_row_gets_the_quotient() -> None:
    s = Session()
    x = s.leaf("x")
    y = s.leaf("y")
    s.add(
        TotalElems(
            (y.shape.row(Kind.OUTPUT), Row(sizes(2)), x.shape.row(Kind.OUTPUT)),
            10,
            ORIGIN,
        )
    )
    s.close()
    assert y.shape.dims()[2] == ()
    assert x.shape.dims()[2] == (5,)


def test_a_total_of_exactly_the_known_sizes_closes_the_open_row_empty() -> None:
    s = Session()
    x = s.leaf("x", "...->2,3")
    s.total_elems(x, 6, kinds=[Kind.OUTPUT])
    s.close()
    assert x.shape.dims() == ((), (), (2, 3))


@pytest.mark.parametrize(("count", "expected"), [(1, ()), (3, (3,))])
def test_a_deferred_count_decides_the_open_row_at_closing(
    count: int, expected: tuple[int, ...]
) -> None:
    s = Session()
    x = s.leaf("x")
    s.total_elems(x, DeferredCount("n", lambda: count), kinds=[Kind.OUTPUT])
    s.close()
    assert x.shape.dims()[2] == expected


@pytest.mark.parametrize("bad", [0, False, True])
def test_a_deferred_count_of_zero_or_a_bool_is_refused_even_where_one_would_fit(
    bad: object,
) -> None:
    # True == 1 would satisfy an empty row; it is still not an integer count.
    s = Session()
    x = s.leaf("x", "1")
    s.total_elems(x, DeferredCount("n", lambda: bad), kinds=[Kind.OUTPUT])  # type: ignore[arg-type]
    with pytest.raises(
        ShapeError, match=f"resolved to {bad!r}, not a positive integer"
    ):
        s.close()
    assert s.tainted


# ------------------------------------------------------- unions of row variables


def row_relations(s: Session, var: RowVar, count: int) -> None:
    """Give ``var`` ``count`` inequalities (as result side) to fresh row variables."""
    for _ in range(count):
        s.add(RowIneq(Row((), var), Row((), s.fresh_row_var()), ORIGIN))


@pytest.mark.parametrize(
    ("first_relations", "second_relations", "solved"),
    [
        (0, 0, "first"),
        (1, 0, "second"),
        (0, 1, "first"),
        (2, 1, "second"),
        (1, 1, "first"),
    ],
)
def test_a_row_equality_solves_the_variable_with_fewer_relations(
    first_relations: int, second_relations: int, solved: str
) -> None:
    # Solving re-emits the solved variable's relations, so the lighter one is
    # solved (ties: the first) and the other stays the representative.
    s = Session()
    first, second = s.fresh_row_var(), s.fresh_row_var()
    row_relations(s, first, first_relations)
    row_relations(s, second, second_relations)
    s.add(RowEq(Row((), first), Row((), second), ORIGIN))
    lighter, heavier = (first, second) if solved == "first" else (second, first)
    assert s.row_entry(lighter).value == Row((), heavier)
    assert s.row_entry(heavier).value is None


def test_row_lower_bounds_count_as_relations_in_a_union() -> None:
    s = Session()
    first, second = s.fresh_row_var(), s.fresh_row_var()
    s.add(RowIneq(Row(sizes(3), s.fresh_row_var()), Row((), first), ORIGIN))
    s.add(RowEq(Row((), first), Row((), second), ORIGIN))
    assert s.row_entry(second).value == Row((), first)


def test_a_pending_total_alone_does_not_make_a_row_variable_heavier() -> None:
    # Waiting on a total creates the variable's entry but no relation.
    s = Session()
    first, second = s.fresh_row_var(), s.fresh_row_var()
    s.add(TotalElems((Row((), second),), 6, ORIGIN))
    s.add(RowEq(Row((), first), Row((), second), ORIGIN))
    assert s.row_entry(first).value == Row((), second)
    s2 = Session()
    first, second = s2.fresh_row_var(), s2.fresh_row_var()
    s2.add(TotalElems((Row((), first),), 6, ORIGIN))
    s2.add(RowEq(Row((), first), Row((), second), ORIGIN))
    assert s2.row_entry(first).value == Row((), second)


def test_a_bare_variable_equal_to_a_bounded_one_with_one_relation_is_solved() -> None:
    s = Session()
    first, second = s.fresh_row_var(), s.fresh_row_var()
    row_relations(s, first, 1)
    s.add(RowEq(Row((), first), Row((), second), ORIGIN))
    assert s.row_entry(second).value == Row((), first)


def test_reading_a_chain_of_solved_rows_compresses_it() -> None:
    s = Session()
    head, middle, tail = s.fresh_row_var(), s.fresh_row_var(), s.fresh_row_var()
    s.add(RowEq(Row((), head), Row(sizes(2), middle), ORIGIN))
    s.add(RowEq(Row((), middle), Row(sizes(3), tail), ORIGIN))
    assert s.row_entry(head).value == Row(sizes(2), middle)
    assert s.solver.norm_row(Row((), head)) == Row(sizes(3, 2), tail)
    assert s.row_entry(head).value == Row(sizes(3, 2), tail)


def test_a_row_variable_without_marks_has_none() -> None:
    s = Session()
    var = s.fresh_row_var()
    assert s.row_entry(var).marks == frozenset()
    assert not s.solver.safe_to_guess(var)
    s.add(PolicyMark(Row((), var), Mark.USED_IN_SPEC_OR_COMPOSE, ORIGIN))
    assert s.row_entry(var).marks == {Mark.USED_IN_SPEC_OR_COMPOSE}


# ------------------------------------------------------------ error messages


def test_two_sizes_with_the_same_number_but_different_bases_name_the_bases() -> None:
    s = Session()
    with pytest.raises(ShapeError) as info:
        s.add(DimEq(Size(3, "x"), Size(3, "y"), ORIGIN))
    assert str(info.value) == (
        "test 't': output axes disagree: p.output has size 3@x but q.output has "
        "size 3@y (different bases)"
    )
    s2 = Session()
    with pytest.raises(ShapeError) as info:
        s2.add(DimEq(Size(3), Size(4), ORIGIN))
    assert str(info.value) == (
        "test 't': output axes disagree: p.output has size 3 but q.output has size 4"
    )


def test_a_row_equality_of_closed_rows_of_different_lengths_names_both_sides() -> None:
    s = Session()
    with pytest.raises(ShapeError) as info:
        s.add(RowEq(Row(sizes(2)), Row(sizes(3, 2)), ORIGIN))
    # The longer row is named first, with its own side.
    assert str(info.value) == (
        "test 't': output axes disagree: q.output [3, 2] and p.output [2] have "
        "different numbers of axes"
    )


def test_a_total_that_does_not_hold_names_every_row() -> None:
    s = Session()
    with pytest.raises(ShapeError) as info:
        s.add(TotalElems((Row(sizes(2)), Row(sizes(3))), 7, ORIGIN))
    assert str(info.value) == (
        "test 't': the axes [2], [3] cannot hold 7 elements (their known sizes "
        "multiply to 6)"
    )


# ------------------------------------------------------- linear dim equations


def linear(
    s: Session, terms: tuple[tuple[int, DimVar | Size], ...], const: int
) -> None:
    names = tuple(f"n{i}" for i in range(len(terms)))
    s.add(DimLinear(terms, const, names, "a^b", ORIGIN))


def test_a_linear_equation_adds_up_the_coefficients_of_a_repeated_dim() -> None:
    s = Session()
    d = s.fresh_dim_var()
    linear(s, ((1, d), (1, d), (-1, Size(6))), 0)
    found = s.solver.find_dim(d)
    assert found == Size(3)
    assert type(found) is Size and type(found.n) is int


def test_a_linear_equation_may_solve_a_dim_to_one() -> None:
    s = Session()
    d = s.fresh_dim_var()
    linear(s, ((1, Size(3)), (1, d), (-1, Size(4))), 0)
    assert s.solver.find_dim(d) == Size(1)


def test_a_linear_equation_of_known_sizes_that_fails_says_so() -> None:
    s = Session()
    with pytest.raises(ShapeError) as info:
        linear(s, ((1, Size(3)), (1, Size(2)), (-1, Size(4))), 0)
    assert str(info.value) == (
        "test 't': the axis 'a^b' cannot hold with n0 = 3, n1 = 2, n2 = 4: the "
        "sizes do not satisfy it"
    )


def test_a_linear_solution_below_a_minimum_names_the_equation() -> None:
    s = Session()
    d = s.fresh_dim_var()
    at_least(s, d, 5)
    with pytest.raises(ShapeError, match=r"^test 't': an axis indexed at position 4"):
        linear(s, ((1, d), (-1, Size(3))), 0)


@pytest.mark.parametrize("equate_first", [False, True])
def test_unifying_two_unknowns_of_a_linear_equation_checks_it_again(
    equate_first: bool,
) -> None:
    """``a + b = 2 + b`` once ``b`` and ``c`` are one: ``a = 2`` whether the
    equality comes before the equation or after it (the order a shape scheme
    and re-evaluating the body add them in can differ)."""
    s = Session()
    a, b, c = s.fresh_dim_var(), s.fresh_dim_var(), s.fresh_dim_var()
    if equate_first:
        s.add(DimEq(b, c, ORIGIN))
    linear(s, ((1, a), (1, b), (-1, c), (-2, Size(1))), 0)
    if not equate_first:
        assert type(s.solver.find_dim(a)) is DimVar
        s.add(DimEq(b, c, ORIGIN))
    assert s.solver.find_dim(a) == Size(2)


# ---------------------------------------------------- axes before a row variable


def prefix(s: Session, whole: Row, beg: tuple[DimVar | Size, ...], rest: Row) -> None:
    s.add(RowPrefix(whole, beg, rest, ORIGIN))


def test_a_closed_row_with_exactly_the_written_axes_fits_a_prefix() -> None:
    s = Session()
    first, tail = s.fresh_dim_var(), s.fresh_row_var()
    prefix(s, Row(sizes(2, 3)), (first,), Row(sizes(3), tail))
    assert s.solver.find_dim(first) == Size(2)
    assert s.row_entry(tail).value == Row()


def test_a_closed_row_shorter_than_a_prefix_is_refused_with_the_count() -> None:
    s = Session()
    first, tail = s.fresh_dim_var(), s.fresh_row_var()
    with pytest.raises(ShapeError) as info:
        prefix(s, Row(sizes(2)), (first,), Row(sizes(3), tail))
    assert str(info.value) == (
        "test 't': output axes disagree: p.output [2] has fewer axes than the 1 "
        "written before the row variable of q.output"
    )


# ------------------------------------------------------------- closing steps


def test_a_parameter_dim_without_a_bound_is_reported_exactly() -> None:
    s = Session()
    w = s.param("w")
    s.einsum("y", "i;ij=>j", s.leaf("x", "3"), w)
    with pytest.raises(ShapeError) as info:
        s.close()
    # The open dim prints as its variable, whose number is the session's business.
    message = re.sub(r"\bd\d+\b", "d?", str(info.value))
    assert message == (
        "You forgot to specify the hidden dimension(s) of parameter 'w': the size "
        "of one of its output axes [3, d?] cannot be inferred; give them in its "
        "spec (param 'w')"
    )


def test_a_parameter_row_without_a_kind_is_reported_as_some_axes() -> None:
    s = Session()
    var = s.fresh_row_var()
    s.add(Terminal(Row((), var), True, Origin("param", "p")))
    with pytest.raises(ShapeError) as info:
        s.close()
    assert str(info.value) == (
        "You forgot to specify the hidden dimension(s) of parameter 'p': the number "
        f"of its some axes [...r{var.id}] cannot be inferred; give them in its spec "
        "(param 'p')"
    )


def test_two_dims_waiting_on_one_equation_are_guessed_one_at_a_time() -> None:
    # a + b = 5 with both parts unknown: guessing a = 1 solves b = 4; guessing
    # both at once would give 1 + 1 != 5.
    s = Session()
    x = s.leaf("x")
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    s.add(RowEq(x.shape.row(Kind.OUTPUT), Row((a, b)), ORIGIN))
    linear(s, ((1, a), (1, b), (-1, Size(5))), 0)
    s.close()
    assert x.shape.dims()[2] == (1, 4)


def test_dims_not_waiting_on_an_equation_are_guessed_before_those_that_are() -> None:
    # c is free; a + b = 5 waits. c is guessed 1 first, then a, then b solves.
    s = Session()
    x = s.leaf("x")
    a, b, c = s.fresh_dim_var(), s.fresh_dim_var(), s.fresh_dim_var()
    at_least(s, c, 2)
    s.add(RowEq(x.shape.row(Kind.OUTPUT), Row((c, a, b)), ORIGIN))
    linear(s, ((1, a), (1, b), (-1, Size(5))), 0)
    s.close()
    assert x.shape.dims()[2] == (2, 1, 4)


def test_a_weight_shared_by_two_results_takes_the_join_of_their_bounds() -> None:
    # w broadcasts to r1 and r2, which must broadcast to [3] and [5]: w's row
    # is the join of both, [1] (the first bound alone would clash with [5]).
    s = Session()
    w = s.leaf("w")
    r1, r2 = s.fresh_row_var(), s.fresh_row_var()
    out = w.shape.row(Kind.OUTPUT)
    s.add(RowIneq(Row((), r1), out, ORIGIN))
    s.add(RowIneq(Row((), r2), out, ORIGIN))
    s.add(RowIneq(Row(sizes(3)), Row((), r1), ORIGIN))
    s.add(RowIneq(Row(sizes(5)), Row((), r2), ORIGIN))
    s.close()
    assert w.shape.dims()[2] == (1,)


def test_a_weight_takes_no_bound_through_results_when_one_has_none() -> None:
    s = Session()
    w = s.leaf("w")
    r1, r2 = s.fresh_row_var(), s.fresh_row_var()
    out = w.shape.row(Kind.OUTPUT)
    s.add(RowIneq(Row((), r1), out, ORIGIN))
    s.add(RowIneq(Row((), r2), out, ORIGIN))
    s.add(RowIneq(Row(sizes(3)), Row((), r1), ORIGIN))
    s.close()
    # r2 has no bound: w is left to the later steps, which give it no axes.
    assert w.shape.dims()[2] == ()


def test_reading_a_variables_neighbours_keeps_every_relation() -> None:
    s = Session()
    var = s.fresh_row_var()
    above = [s.fresh_row_var() for _ in range(3)]
    for other in above:
        s.add(RowIneq(Row((), var), Row((), other), ORIGIN))
    merge_single_neighbours(s.solver)
    # Three neighbours: nothing merges, and no relation is lost on the way.
    assert s.row_entry(var).opnd == tuple(above)
    assert all(s.row_entry(other).res == (var,) for other in above)


# ------------------------------------------- relations moved by a dim union


def test_a_dim_union_moves_the_lighter_sides_relations_to_an_empty_list() -> None:
    # a has one result-side neighbour (x ⊑ a); b has two operands and no
    # result-side neighbour: a is linked under b and b takes a's neighbour.
    s = Session()
    a, b, x = s.fresh_dim_var(), s.fresh_dim_var(), s.fresh_dim_var()
    s.add(DimIneq(x, a, ORIGIN))
    relations(s, b, 2)
    s.add(DimEq(a, b, ORIGIN))
    assert representative(s, a) == b
    assert s.dim_entry(b).res == (x,)
    s.add(DimEq(b, Size(3), ORIGIN))
    assert s.solver.find_dim(x) == Size(3)


# ------------------------------------------------ what a window touched


def test_a_window_sees_the_dims_whose_relation_lists_grew() -> None:
    s = Session()
    a, b, c = s.fresh_dim_var(), s.fresh_dim_var(), s.fresh_dim_var()
    s.add(DimIneq(a, b, ORIGIN))
    with s.rewind() as window:
        s.add(DimIneq(a, c, ORIGIN))
        dims, rows = window.touched_variables()
    assert dims == {a.id, c.id}
    assert rows == set()


def test_a_window_sees_the_dim_a_union_extends() -> None:
    s = Session()
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    s.add(DimIneq(s.fresh_dim_var(), a, ORIGIN))
    relations(s, b, 2)
    s.add(DimIneq(s.fresh_dim_var(), b, ORIGIN))
    with s.rewind() as window:
        s.add(DimEq(a, b, ORIGIN))
        dims, _ = window.touched_variables()
    assert {a.id, b.id} <= dims


def test_a_window_sees_the_rows_whose_relation_lists_grew() -> None:
    s = Session()
    a, b, c = s.fresh_row_var(), s.fresh_row_var(), s.fresh_row_var()
    s.add(RowIneq(Row((), a), Row((), b), ORIGIN))
    with s.rewind() as window:
        s.add(RowIneq(Row((), a), Row((), c), ORIGIN))
        dims, rows = window.touched_variables()
    assert rows == {a.id, c.id}
    assert dims == set()


# ------------------------------------------------- sides in error messages


def test_an_error_without_sides_names_the_result_and_the_operand() -> None:
    s = Session()
    with pytest.raises(ShapeError) as info:
        s.add(DimEq(Size(3), Size(4), Origin("test", "t")))
    assert str(info.value) == (
        "test 't': sizes disagree: the result has size 3 but the operand has size 4"
    )


def test_an_error_with_one_kind_names_that_kind() -> None:
    s = Session()
    origin = Origin("test", "t", lhs=Side("p", Kind.INPUT), rhs=Side("q"))
    with pytest.raises(ShapeError) as info:
        s.add(DimEq(Size(3), Size(4), origin))
    assert str(info.value) == (
        "test 't': input axes disagree: p.input has size 3 but q has size 4"
    )
    origin = Origin("test", "t", lhs=Side("p"), rhs=Side("q", Kind.BATCH))
    with pytest.raises(ShapeError, match=r"^test 't': batch axes disagree"):
        Session().add(DimEq(Size(3), Size(4), origin))


def test_an_error_between_two_kinds_names_both() -> None:
    origin = Origin("test", "t", lhs=Side("p", Kind.INPUT), rhs=Side("q", Kind.OUTPUT))
    with pytest.raises(ShapeError, match=r"^test 't': input and output axes disagree"):
        Session().add(DimEq(Size(3), Size(4), origin))


# ------------------------------------------------------- totals at closing


def test_a_total_over_every_row_of_a_parameter_closes_all_but_the_last_empty() -> None:
    # The parameter's open batch and input rows are not safe to guess; the
    # total decides them (no axes), so there is no hidden-dimension error.
    s = Session()
    p = s.param("p")
    s.total_elems(p, 6)
    s.close()
    assert p.shape.dims() == ((), (), (6,))


def test_a_total_already_holding_when_its_turn_comes_is_skipped() -> None:
    # The second total holds once the first one solved x; the third still
    # has to decide the parameter's rows.
    s = Session()
    x = s.leaf("x")
    s.total_elems(x, 6, kinds=[Kind.OUTPUT])
    s.total_elems(x, 6, kinds=[Kind.OUTPUT])
    p = s.param("p")
    s.total_elems(p, 4)
    s.close()
    assert x.shape.dims()[2] == (6,)
    assert p.shape.dims() == ((), (), (4,))


def test_a_total_of_two_unknown_dims_in_closed_rows_waits_for_the_dims() -> None:
    s = Session()
    x = s.leaf("x")
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    s.add(RowEq(x.shape.row(Kind.OUTPUT), Row((a, b)), ORIGIN))
    s.add(TotalElems((Row((a, b)),), 6, ORIGIN))
    s.close()
    # a is guessed 1 with the other dims; the total then solves b.
    assert x.shape.dims()[2] == (1, 6)


def test_a_resolved_deferred_count_that_does_not_fit_names_the_total() -> None:
    s = Session()
    x = s.leaf("x", "2")
    s.total_elems(x, DeferredCount("n", lambda: 3), kinds=[Kind.OUTPUT])
    with pytest.raises(ShapeError) as info:
        s.close()
    assert str(info.value) == (
        "total_elems 'x' (<n> elements): the axes [2] cannot hold 3 elements "
        "(their known sizes multiply to 2)"
    )


def test_a_fixed_index_on_a_leaf_reaches_the_result_it_broadcasts_to() -> None:
    # b's last axis is indexed at 2 (so at least 3); z = b pointwise. Closing
    # sizes b's axis first, and z's axis follows it instead of clashing at 1.
    s = Session()
    b = s.leaf("b")
    s.einsum("c", "i,2=>i", b)
    z = s.pointwise("z", b)
    s.close()
    assert b.shape.dims() == ((), (), (1, 3))
    assert z.shape.dims() == ((), (), (1, 3))


# ------------------------------------------------- more unions and totals


def test_a_row_lower_bound_weighs_like_a_relation_in_a_union() -> None:
    # first has one relation, second one lower bound: a tie, so first is solved.
    s = Session()
    first, second = s.fresh_row_var(), s.fresh_row_var()
    row_relations(s, first, 1)
    s.add(RowIneq(Row(sizes(3), s.fresh_row_var()), Row((), second), ORIGIN))
    s.add(RowEq(Row((), first), Row((), second), ORIGIN))
    assert s.row_entry(first).value == Row((), second)


def test_a_dim_union_of_equally_related_dims_links_the_first_under_the_second() -> None:
    s = Session()
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    at_least(s, a, 2)
    at_least(s, b, 2)
    s.add(DimEq(a, b, ORIGIN))
    assert representative(s, a) == b


def test_a_dim_union_keeps_the_pending_totals_of_the_linked_dim() -> None:
    # a (heavier) waits on a*c = 12, b on b*e = 6; after a = b, sizing the
    # union re-checks both totals.
    s = Session()
    a, b, c, e = (s.fresh_dim_var() for _ in range(4))
    relations(s, a, 2)
    s.add(TotalElems((Row((a, c)),), 12, ORIGIN))
    s.add(TotalElems((Row((b, e)),), 6, ORIGIN))
    s.add(DimEq(a, b, ORIGIN))
    assert representative(s, b) == a
    s.add(DimEq(a, Size(3), ORIGIN))
    assert s.solver.find_dim(c) == Size(4)
    assert s.solver.find_dim(e) == Size(2)


def test_a_total_waiting_on_a_row_variable_is_checked_when_it_is_solved() -> None:
    s = Session()
    d, var = s.fresh_dim_var(), s.fresh_row_var()
    s.add(TotalElems((Row((d,), var),), 6, ORIGIN))
    assert s.solver.find_dim(d) == d
    s.add(RowEq(Row((), var), Row(sizes(2)), ORIGIN))
    found = s.solver.find_dim(d)
    assert found == Size(3)
    assert type(found) is Size and type(found.n) is int


def test_a_total_solving_a_dim_below_its_minimum_names_the_total() -> None:
    s = Session()
    d = s.fresh_dim_var()
    at_least(s, d, 5)
    origin = Origin("total_elems", "x")
    with pytest.raises(ShapeError) as info:
        s.add(TotalElems((Row((d, Size(2))),), 6, origin))
    assert str(info.value) == (
        "total_elems 'x': an axis indexed at position 4 would have size 3"
    )


def test_closing_forgets_every_solution_mark_and_leaf() -> None:
    s = Session()
    w = s.param("w", "...->4")
    s.compose("y", w, s.leaf("x", "3"))
    s.add(DimEq(s.fresh_dim_var(), Size(2), ORIGIN))
    solver = s.solver
    assert solver.row_subst and solver.row_marks and solver.row_gen
    assert solver.terminals and solver.dim_subst
    s.close()
    assert solver.dim_subst == {}
    assert solver.row_subst == {}
    assert solver.row_marks == {}
    assert solver.row_gen == {}
    assert solver.terminals == []


def test_a_result_merged_into_the_weight_itself_is_not_one_of_its_results() -> None:
    # As in the two-results case, plus a third result later equated with w:
    # w stays the join of the other two results' bounds.
    s = Session()
    w = s.leaf("w")
    r1, r2, r3 = s.fresh_row_var(), s.fresh_row_var(), s.fresh_row_var()
    out = w.shape.row(Kind.OUTPUT)
    for res in (r1, r2, r3):
        s.add(RowIneq(Row((), res), out, ORIGIN))
    s.add(RowEq(Row((), r3), out, ORIGIN))
    s.add(RowIneq(Row(sizes(3)), Row((), r1), ORIGIN))
    s.add(RowIneq(Row(sizes(5)), Row((), r2), ORIGIN))
    s.close()
    assert w.shape.dims()[2] == (1,)


def test_a_leaf_dim_whose_bound_is_below_its_minimum_names_the_leaf() -> None:
    s = Session()
    x = s.leaf("x")
    d = s.fresh_dim_var()
    s.add(RowEq(x.shape.row(Kind.OUTPUT), Row((d,)), ORIGIN))
    at_least(s, d, 5)
    lower_bound(s, d, 3)
    with pytest.raises(ShapeError) as info:
        s.close()
    assert str(info.value) == (
        "leaf 'x': an axis indexed at position 4 would have size 3"
    )


# ------------------------------------------- inequalities: exact outcomes


def test_an_inequality_of_equal_numbers_in_different_bases_names_the_bases() -> None:
    with pytest.raises(ShapeError) as info:
        Session().add(DimIneq(Size(3, "x"), Size(3, "y"), ORIGIN))
    assert str(info.value) == (
        "test 't': output axes disagree: q.output has size 3@y, which does not "
        "broadcast to size 3@x of p.output (different bases)"
    )


@pytest.mark.parametrize("how", ["operand forces", "unit result", "two bounds"])
def test_an_inequality_sizing_a_dim_below_its_minimum_names_the_inequality(
    how: str,
) -> None:
    s = Session()
    d = s.fresh_dim_var()
    at_least(s, d, 4)
    origin = Origin("pointwise", "z")
    with pytest.raises(ShapeError) as info:
        if how == "operand forces":
            s.add(DimIneq(d, Size(3), origin))
        elif how == "unit result":
            s.add(DimIneq(Size(1), d, origin))
        else:
            lower_bound(s, d, 3)
            s.add(DimIneq(Size(5), d, origin))
    size = 3 if how == "operand forces" else 1
    assert str(info.value) == (
        f"pointwise 'z': an axis indexed at position 3 would have size {size}"
    )


def test_a_closed_result_leaves_an_operand_of_as_many_axes_no_more() -> None:
    s = Session()
    var = s.fresh_row_var()
    s.add(RowIneq(Row(sizes(2, 3)), Row(sizes(2, 3), var), ORIGIN))
    assert s.row_entry(var).value == Row()


def test_a_row_containing_itself_is_refused_with_both_rows() -> None:
    s = Session()
    var = s.fresh_row_var()
    with pytest.raises(ShapeError) as info:
        s.add(RowEq(Row((), var), Row(sizes(2), var), ORIGIN))
    # The longer row is named first, with its own side.
    assert str(info.value) == (
        f"test 't': output axes cannot agree: q.output [...r{var.id}, 2] and p.output "
        f"[...r{var.id}] would need infinitely many axes (a row variable would "
        "contain itself)"
    )


def test_an_inequality_between_one_variable_with_different_lengths_is_refused() -> None:
    s = Session()
    var = s.fresh_row_var()
    with pytest.raises(ShapeError) as info:
        s.add(RowIneq(Row(sizes(2), var), Row((), var), ORIGIN))
    assert str(info.value) == (
        f"test 't': output axes cannot agree: p.output [...r{var.id}, 2] and "
        f"q.output [...r{var.id}] would need infinitely many axes (a row variable "
        "would contain itself)"
    )


def test_a_template_on_a_variable_at_the_rank_limit_is_refused() -> None:
    # 64 axes put in front of a variable by templates; one more on its tail
    # goes past the limit.
    s = Session()
    row = Row((), s.fresh_row_var())
    s.add(RowIneq(row, Row(tuple(s.fresh_dim_var() for _ in range(64))), ORIGIN))
    assert row.var is not None
    value = s.row_entry(row.var).value
    assert value is not None and value.var is not None
    with pytest.raises(ShapeError, match=r"more than 64 axes in one row"):
        s.add(RowIneq(Row((), value.var), Row((s.fresh_dim_var(),)), ORIGIN))


# --------------------------------------------- single-neighbour merges


def leaf_below_operand(s: Session) -> tuple[Row, RowVar]:
    """A leaf output row ``v`` with one operand ``o`` (``v ⊑ o``), ``o`` bounded by [5]."""
    x = s.leaf("x")
    out = x.shape.row(Kind.OUTPUT)
    operand = s.fresh_row_var()
    s.add(RowIneq(out, Row((), operand), ORIGIN))
    s.add(RowIneq(Row(sizes(5)), Row((), operand), ORIGIN))
    return out, operand


def test_a_leaf_row_merged_with_its_only_operand_takes_the_operands_bound() -> None:
    # OCANNL (row.ml, solve_row_ineq from stage 2): two bare row variables that
    # are each other's only neighbour are equated, so the leaf gets [5].
    s = Session()
    out, _ = leaf_below_operand(s)
    assert closed_output(s, out) == (5,)


def test_a_row_with_two_operands_is_not_merged() -> None:
    s = Session()
    out, _ = leaf_below_operand(s)
    s.add(RowIneq(out, Row((), s.fresh_row_var()), ORIGIN))
    assert closed_output(s, out) == ()


def test_an_operand_with_two_results_is_not_merged() -> None:
    s = Session()
    out, operand = leaf_below_operand(s)
    s.add(RowIneq(Row((), s.fresh_row_var()), Row((), operand), ORIGIN))
    assert closed_output(s, out) == ()


@pytest.mark.parametrize("later", ["two operands", "shared operand", "no relation"])
def test_a_merge_happens_whatever_variables_come_after_it(later: str) -> None:
    # Variables made later are looked at first; one that cannot merge must
    # not stop the others.
    s = Session()
    out, _ = leaf_below_operand(s)
    other = s.fresh_row_var()
    if later == "two operands":
        for _ in range(2):
            s.add(RowIneq(Row((), other), Row((), s.fresh_row_var()), ORIGIN))
    elif later == "shared operand":
        target = s.fresh_row_var()
        s.add(RowIneq(Row((), other), Row((), target), ORIGIN))
        s.add(RowIneq(Row((), s.fresh_row_var()), Row((), target), ORIGIN))
    else:
        s.add(TotalElems((Row((), other),), 1, ORIGIN))
    assert closed_output(s, out) == (5,)


def test_a_chain_of_single_neighbours_merges_all_the_way() -> None:
    # v ⊑ o ⊑ p, p bounded by [5]: merging v with o makes o's operand p the
    # merged variable's only neighbour, which merges in turn.
    s = Session()
    x = s.leaf("x")
    out = x.shape.row(Kind.OUTPUT)
    middle, top = s.fresh_row_var(), s.fresh_row_var()
    s.add(RowIneq(Row(sizes(5)), Row((), top), ORIGIN))
    s.add(RowIneq(Row((), middle), Row((), top), ORIGIN))
    s.add(RowIneq(out, Row((), middle), ORIGIN))
    assert closed_output(s, out) == (5,)


# ------------------------------------------------- more closing steps


def test_an_unbounded_leaf_before_a_bounded_one_does_not_stop_the_join_step() -> None:
    s = Session()
    s.leaf("a")
    x = s.leaf("x")
    out = x.shape.row(Kind.OUTPUT)
    s.add(RowIneq(Row(sizes(5)), out, ORIGIN))
    assert closed_output(s, out) == (5,)


def test_a_parameter_after_a_data_leaf_is_still_checked_for_hidden_dims() -> None:
    s = Session()
    x = s.leaf("x", "3")
    w = s.param("w")
    s.einsum("y", "i;ij=>j", x, w)
    with pytest.raises(ShapeError, match=r"hidden dimension\(s\) of parameter 'w'"):
        s.close()


def test_a_join_that_breaks_a_minimum_names_the_bound_and_the_leaf() -> None:
    s = Session()
    x = s.leaf("x")
    d = s.fresh_dim_var()
    at_least(s, d, 5)
    out = x.shape.row(Kind.OUTPUT)
    s.add(RowIneq(Row((d,)), out, ORIGIN))
    s.add(RowIneq(Row(sizes(3)), out, ORIGIN))
    with pytest.raises(ShapeError) as info:
        s.close()
    assert str(info.value) == (
        "test 't': an axis indexed at position 4 would have size 3 (found while "
        "solving leaf 'x')"
    )


def test_a_total_closing_a_parameters_rows_with_an_unknown_dim() -> None:
    # The parameter's last open row closes empty (an unknown dim remains);
    # then the dim is the rest of the total.
    s = Session()
    p, y = s.param("p"), s.leaf("y")
    unknown = s.fresh_dim_var()
    s.add(RowEq(y.shape.row(Kind.OUTPUT), Row((unknown, Size(2))), ORIGIN))
    s.add(TotalElems((y.shape.row(Kind.OUTPUT), *p.shape.rows()), 6, ORIGIN))
    s.close()
    assert p.shape.dims() == ((), (), ())
    assert y.shape.dims()[2] == (3, 2)


def test_a_total_over_several_known_sizes_gives_the_open_row_their_quotient() -> None:
    s = Session()
    x = s.leaf("x")
    s.add(TotalElems((Row(sizes(2, 3)), x.shape.row(Kind.OUTPUT)), 24, ORIGIN))
    s.close()
    (n,) = x.shape.dims()[2]
    assert n == 4 and type(n) is int


@pytest.mark.parametrize("index", [1, 2])
def test_a_fixed_index_bound_of_any_size_is_sized_before_the_rest(index: int) -> None:
    s = Session()
    b = s.leaf("b")
    s.einsum("c", f"i,{index}=>i", b)
    z = s.pointwise("z", b)
    s.close()
    assert z.shape.dims() == b.shape.dims() == ((), (), (1, index + 1))


# ------------------------------------- depths, empty rows, compressed paths


def template_tail_at_depth(s: Session, depth: int) -> RowVar:
    """The tail of a template that put ``depth`` axes in front of a variable."""
    row = Row((), s.fresh_row_var())
    s.add(RowIneq(row, Row(tuple(s.fresh_dim_var() for _ in range(depth))), ORIGIN))
    assert row.var is not None
    value = s.row_entry(row.var).value
    assert value is not None and value.var is not None
    return value.var


def test_the_depth_of_a_variable_moves_to_the_variable_it_is_solved_to() -> None:
    s = Session()
    tail = template_tail_at_depth(s, 64)
    other = s.fresh_row_var()
    s.add(RowEq(Row((), tail), Row((), other), ORIGIN))
    # other now stands for a row already 64 axes deep: one more is refused.
    with pytest.raises(ShapeError) as info:
        s.add(RowEq(Row((), other), Row(sizes(2), s.fresh_row_var()), ORIGIN))
    assert str(info.value).startswith("test 't': output axes cannot agree: ")
    assert str(info.value).endswith(
        "would need infinitely many axes (more than 64 axes in one row: the "
        "inequalities are cyclic)"
    )


def test_a_variable_below_the_depth_limit_may_be_solved_to_more_axes() -> None:
    s = Session()
    tail = template_tail_at_depth(s, 63)
    rest = s.fresh_row_var()
    s.add(RowEq(Row((), tail), Row(sizes(2), rest), ORIGIN))
    assert s.row_entry(tail).value == Row(sizes(2), rest)


def test_emptying_a_result_row_empties_its_operands() -> None:
    s = Session()
    res, opnd = s.fresh_row_var(), s.fresh_row_var()
    s.add(RowIneq(Row((), res), Row((), opnd), ORIGIN))
    s.add(RowEq(Row((), res), Row(), ORIGIN))
    assert s.row_entry(opnd).value == Row()


def test_an_inequality_between_rows_of_one_variable_relates_their_dims() -> None:
    s = Session()
    var, d = s.fresh_row_var(), s.fresh_dim_var()
    s.add(RowIneq(Row((d, Size(2)), var), Row((Size(3), Size(2)), var), ORIGIN))
    assert s.solver.find_dim(d) == Size(3)


def test_reading_a_chain_of_linked_dims_compresses_it() -> None:
    s = Session()
    a, b, c = s.fresh_dim_var(), s.fresh_dim_var(), s.fresh_dim_var()
    for dim in (a, b, c):
        at_least(s, dim, 2)  # bounded dims: unions link them one by one
    relations(s, b, 1)
    relations(s, c, 5)
    s.add(DimEq(a, b, ORIGIN))  # a -> b
    s.add(DimEq(b, c, ORIGIN))  # b -> c: a reaches c through b
    assert s.dim_entry(a).value == b
    assert s.solver.find_dim(a) == c
    assert s.dim_entry(a).value == c
    assert s.dim_entry(b).value == c


# ------------------------------------------------ the queries shape schemes use


def test_the_queries_read_a_window_without_its_tables() -> None:
    """What a scheme's read-off asks of the solver, each answer checked: the
    entries as they were before a point of the trail, the pending equations
    added since it (in the order added, solved ones left out), the variables
    whose entries were written since, bounds and relations, marks, depths."""
    s = Session()
    a, b, c, e, f, g = (s.fresh_dim_var() for _ in range(6))
    r, t = s.fresh_row_var(), s.fresh_row_var()
    s.add(DimEq(a, Size(3), ORIGIN))
    solver = s.solver
    with s.rewind() as window:
        start = window.trail_start
        s.add(DimEq(a, Size(3), ORIGIN))  # already holds: writes nothing
        s.add(DimIneq(e, c, ORIGIN))
        s.add(DimIneq(Size(5), c, ORIGIN))
        s.add(RowIneq(Row(sizes(2)), Row((), r), ORIGIN))
        s.add(RowIneq(Row((), t), Row((), r), ORIGIN))
        linear(s, ((1, b), (1, c), (-1, Size(9))), 0)
        s.add(TotalElems((Row((f, g)),), 6, ORIGIN))
        s.add(TotalElems((Row(sizes(2)),), 2, ORIGIN))  # holds at once
        s.add(RowPrefix(Row((), t), (b,), Row((), r), ORIGIN))
        solver.raise_template_depth(r.id, 2)
        solver.raise_template_depth(r.id, 1)  # lower: no change
        s.add(PolicyMark(Row((), t), Mark.SAFE_TO_GUESS, ORIGIN))
        dims, rows = solver.touched_since(start)
        assert a.id not in dims and {b.id, c.id, e.id} <= dims
        assert rows == {r.id, t.id}
        pending = solver.pending_since(start)
        assert [type(p).__name__ for p in pending] == [
            "DimLinear",
            "TotalElems",
            "RowPrefix",
        ]
        assert solver.dim_lower_bound(c.id) == (Size(5), ORIGIN)
        assert solver.dim_lower_bound(b.id) is None
        assert [v for v, _ in solver.dim_results(c.id)] == [e]
        assert [row for row, _ in solver.row_lower_bounds(r.id)] == [Row(sizes(2))]
        assert [v for v, _ in solver.row_results(r.id)] == [t]
        assert solver.template_depth(r.id) == 2
        assert solver.mark_bits(t.id) == 1
        assert not solver.is_row_solved(r.id)
        assert solver.dim_link(a.id) == Size(3)
        assert solver.row_link(r.id) is None
        s.add(DimEq(b, Size(4), ORIGIN))
        dims_before, rows_before = solver.links_before(start)
        assert set(dims_before) >= {b.id, c.id} and a.id not in dims_before
        assert rows_before == {}
        # The linear equation is solved by b = 4 (c = 5), the others wait.
        assert [type(p).__name__ for p in solver.pending_since(start)] == [
            "TotalElems",
            "RowPrefix",
        ]
        terminals = solver.terminal_count()
        s.add(Terminal(Row((), t), False, ORIGIN))
        assert list(solver.terminals_since(terminals)) == [
            Terminal(Row((), t), False, ORIGIN)
        ]


def test_a_cycle_of_inequalities_reaches_the_rank_limit_re_emitting_each_relation_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``x`` broadcasts to ``p`` and ``p`` to ``x`` with one axis less, through
    two einsums dropping an axis: closing templates one axis per round until
    the rank limit. Solving a relation again records it again; re-emitting
    every copy when a variable is solved doubled the relations each round
    (2**64 work: the soak's program ran out of memory). Each relation is
    re-emitted once, so the cycle reaches the limit in a few hundred steps."""
    import axisflow.shapes.solver as solver_module

    solved = 0
    real = solver_module.Solver._row_ineq

    def counted(self: solver_module.Solver, *args: object) -> None:
        nonlocal solved
        solved += 1
        assert solved < 20_000, "the cycle's relations multiply"
        real(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(solver_module.Solver, "_row_ineq", counted)
    s = Session()
    x = s.leaf("x", None)
    y = s.einsum("y", "...i=>...", x)
    s.pointwise("p", x, y)
    z = s.einsum("z", "...i=>...", y)
    s.pointwise("q", y, z)
    with pytest.raises(ShapeError) as info:
        s.close()
    assert re.fullmatch(
        r"pointwise 'p' of x, y: output axes cannot agree: p\.output \[\.\.\.r\d+\] "
        r"and x\.output \[\.\.\.r\d+, d\d+\] would need infinitely many axes \(more "
        r"than 64 axes in one row: the inequalities are cyclic\) \(found while "
        r"solving leaf 'x'\)",
        str(info.value),
    ), str(info.value)


def test_repeated_relations_are_re_emitted_once_each_at_their_last_place() -> None:
    from axisflow.shapes.solver import _distinct

    a, b, c = (RowVar(n) for n in (1, 2, 3))
    first, second, third = (Origin("leaf", name) for name in ("u", "v", "w"))
    entries = [(a, first), (b, first), (a, second), (c, third), (b, third)]
    assert _distinct(entries) == [(a, second), (c, third), (b, third)]
    unique = [(a, first), (b, second)]
    assert _distinct(unique) is unique


@pytest.mark.parametrize(
    ("kind", "terms", "parts"),
    [
        (
            "concat",
            ((1, Size(2, "x")), (1, Size(3, "x")), (-1, Size(5, "y"))),
            "n0 = 2@x, n1 = 3@x, n2 = 5@y",
        ),
        ("stride", ((2, Size(4, "x")), (-1, Size(8, "y"))), "n0 = 4@x, n1 = 8@y"),
    ],
)
def test_an_equation_of_known_sizes_checks_the_axis_basis(
    kind: str, terms: tuple[tuple[int, Size], ...], parts: str
) -> None:
    """Every size known: the axis (the last term) must have the basis its
    parts give (OCANNL's ``row.ml``), else the equation names both."""
    s = Session()
    names = tuple(f"n{i}" for i in range(len(terms)))
    with pytest.raises(ShapeError) as info:
        s.add(DimLinear(terms, 0, names, "a^b", ORIGIN, LinearKind(kind)))
    assert str(info.value) == (
        f"test 't': the axis 'a^b' cannot hold with {parts}: its size has basis y "
        "but its parts give x (different bases)"
    )


@pytest.mark.parametrize(
    ("kind", "terms"),
    [
        ("concat", ((1, Size(2, "x")), (1, Size(3, "x")), (-1, Size(5, "x")))),
        ("concat", ((1, Size(2, "x")), (1, Size(3)), (-1, Size(5, "x")))),
        ("stride", ((2, Size(4, "x")), (-1, Size(8, "x")))),
    ],
)
def test_an_equation_of_known_sizes_in_the_basis_of_its_parts_holds(
    kind: str, terms: tuple[tuple[int, Size], ...]
) -> None:
    s = Session()
    names = tuple(f"n{i}" for i in range(len(terms)))
    s.add(DimLinear(terms, 0, names, "a^b", ORIGIN, LinearKind(kind)))
    assert not s.solver.linears


def test_the_queries_of_an_inner_window_see_only_what_it_wrote() -> None:
    """Inside a window nested in another, the entries as they were, the
    pending equations and the answers for variables nothing touched count
    from the inner window's start, not from the outer one's."""
    s = Session()
    a, b, c = (s.fresh_dim_var() for _ in range(3))
    r, t, u = s.fresh_row_var(), s.fresh_row_var(), s.fresh_row_var()
    solver = s.solver
    with s.rewind():
        s.add(DimEq(a, Size(3), ORIGIN))
        s.add(RowEq(Row((), u), Row(sizes(2)), ORIGIN))
        s.add(TotalElems((Row((b, c)),), 12, ORIGIN))
        with s.rewind() as inner:
            start = inner.trail_start
            s.add(RowEq(Row((), r), Row(sizes(4)), ORIGIN))
            dims_before, rows_before = solver.links_before(start)
            assert a.id not in dims_before
            assert set(rows_before) == {r.id}
            assert [p.count for p in solver.pending_since(start)] == []  # type: ignore[union-attr]
            assert solver.row_link(r.id) == Row(sizes(4))
            assert solver.row_link(u.id) == Row(sizes(2))
    assert solver.mark_bits(t.id) == 0
    assert solver.template_depth(t.id) == 0
    assert list(solver.dim_results(b.id)) == []
    solver.raise_template_depth(t.id, 1)
    assert solver.template_depth(t.id) == 1


def test_pending_since_lists_only_the_equations_added_after_the_start() -> None:
    s = Session()
    b, c, d = (s.fresh_dim_var() for _ in range(3))
    solver = s.solver
    with s.rewind():
        s.add(TotalElems((Row((b, c)),), 6, ORIGIN))
        with s.rewind() as inner:
            s.add(TotalElems((Row((c, d)),), 10, ORIGIN))
            assert [p.count for p in solver.pending_since(inner.trail_start)] == [10]  # type: ignore[union-attr]


def test_set_dim_twice_on_an_unbound_reference_must_agree() -> None:
    s = Session()
    r = s.dim_ref("r")
    s.set_dim(r, 3)
    s.set_dim(r, 3)  # the same size again: nothing to refuse
    with pytest.raises(ShapeError) as info:
        s.set_dim(r, 4)
    assert str(info.value) == (
        "set_dim 'r': the capture reference 'r' already stands for size 3, not 4"
    )


def test_set_dim_on_a_bound_reference_names_both_sides() -> None:
    s = Session()
    r = s.dim_ref("r")
    s.einsum("z", "r=>", s.leaf("x", "5"), capture_dims=[r])
    with pytest.raises(ShapeError) as info:
        s.set_dim(r, 4)
    assert "capture reference 'r' has size 5 but set_dim('r') has size 4" in str(
        info.value
    ), str(info.value)


def test_a_second_row_capture_that_disagrees_names_the_row_variable() -> None:
    s = Session()
    r = s.dim_ref("r")
    s.einsum("a", "..r..=>", s.leaf("x", "2,3"), capture_dims=[r])
    with pytest.raises(ShapeError) as info:
        s.einsum("b", "..r..=>", s.leaf("y", "4"), capture_dims=[r])
    assert str(info.value) == (
        "einsum 'b' of y (spec '..r..=>'): sizes disagree: capture reference 'r' "
        "[2, 3] and row variable 'r' [4] have different numbers of axes"
    )


@pytest.mark.parametrize(
    ("terms", "message"),
    [
        # A part conflicts with another while two are unknown (Stage 1).
        (
            ((1, Size(2, "x")), (1, Size(3, "y")), (1, "c"), (-1, "d")),
            "concat: conflicting dimension bases (x and y)",
        ),
        # The conflicting part is the last one.
        (
            ((1, Size(2, "x")), (1, "b"), (1, Size(3, "y")), (-1, "d")),
            "concat: conflicting dimension bases (x and y)",
        ),
        # A part solved from the whole, whose basis conflicts with the parts'.
        (
            ((1, Size(2, "x")), (1, "b"), (-1, Size(5, "y"))),
            "concat: conflicting dimension bases (x and y)",
        ),
    ],
)
def test_a_concatenation_names_its_conflicting_bases(
    terms: tuple[tuple[int, Size | str], ...], message: str
) -> None:
    s = Session()
    made = tuple(
        (coeff, s.fresh_dim_var() if isinstance(dim, str) else dim)
        for coeff, dim in terms
    )
    names = tuple(f"n{i}" for i in range(len(made)))
    with pytest.raises(ShapeError) as info:
        s.add(DimLinear(made, 0, names, "a^b", ORIGIN, LinearKind.CONCAT))
    assert str(info.value).endswith(message), str(info.value)


@pytest.mark.parametrize(
    ("parts", "whole", "basis"),
    [
        # The other parts' named basis, though the whole has the default.
        ((Size(2), Size(3, "x"), None), Size(7), "x"),
        ((Size(2), None, Size(3, "x")), Size(7), "x"),
        # The whole's named basis, though the other parts have the default.
        ((Size(2), Size(3), None), Size(7, "x"), "x"),
    ],
)
def test_a_part_solved_from_a_concatenation_takes_the_named_basis(
    parts: tuple[Size | None, ...], whole: Size, basis: str
) -> None:
    s = Session()
    unknown = s.fresh_dim_var()
    terms = (*((1, unknown if p is None else p) for p in parts), (-1, whole))
    s.add(DimLinear(terms, 0, ("a", "b", "c", "d"), "a^b^c", ORIGIN, LinearKind.CONCAT))
    assert s.solver.find_dim(unknown) == Size(2, basis)


def test_an_unpadded_convolution_axis_takes_the_kernel_basis() -> None:
    """``o+k`` of input size ``i`` (stride 1, dilation 1): ``o + k - 1 = i``.
    A named kernel basis wins over the default of ``o``; two named ones
    conflict, and the message names both, whether the axis is solved (from
    ``o`` of basis ``x``) or ``o`` is (from the axis of basis ``x``)."""
    s = Session()
    axis = s.fresh_dim_var()
    terms = ((1, Size(4)), (1, Size(3, "k")), (-1, axis))
    s.add(DimLinear(terms, -1, ("o", "k", "i"), "o+k", ORIGIN, LinearKind.CONVOLUTION))
    assert s.solver.find_dim(axis) == Size(6, "k")
    for solved in ("axis", "o"):
        s = Session()
        unknown = s.fresh_dim_var()
        if solved == "axis":
            terms = ((1, Size(4, "x")), (1, Size(3, "y")), (-1, unknown))
        else:
            terms = ((1, unknown), (1, Size(3, "y")), (-1, Size(6, "x")))
        with pytest.raises(ShapeError) as info:
            s.add(
                DimLinear(
                    terms, -1, ("o", "k", "i"), "o+k", ORIGIN, LinearKind.CONVOLUTION
                )
            )
        assert str(info.value).endswith(
            "convolution: conflicting dimension bases between stride and kernel "
            "(x and y)"
        ), str(info.value)


def test_asking_for_an_equation_that_is_not_pending_names_its_id() -> None:
    """``Solver.pending`` of an id no pending equation has: a KeyError
    carrying that id."""
    s = Session()
    with pytest.raises(KeyError) as info:
        s.solver.pending(123456)
    assert info.value.args == (123456,)


def test_a_dim_counting_a_row_is_sized_at_stage_one_once_the_row_is_known() -> None:
    """set_equal between a row capture and a label, both open: when the row
    is solved later, Stage 1 re-checks the waiting total and sizes the dim,
    before any closing."""
    s = Session()
    rows, label = s.dim_ref("r"), s.dim_ref("n")
    x = s.leaf("x")
    s.einsum("a", "..r..=>", x, capture_dims=[rows])
    s.einsum("b", "n=>", s.leaf("y"), capture_dims=[label])
    s.set_equal(rows, label)
    assert label.value is None
    s.pointwise("p", x, s.leaf("z", "2,3"))
    s.add(RowEq(x.shape.row(Kind.OUTPUT), Row(sizes(2, 3)), ORIGIN))
    assert label.value == 6


def test_two_repeats_of_one_relation_are_re_emitted_once() -> None:
    from axisflow.shapes.solver import _distinct

    a = RowVar(1)
    first, second = Origin("leaf", "u"), Origin("leaf", "v")
    assert _distinct([(a, first), (a, second)]) == [(a, second)]


def test_a_total_counted_by_a_dim_below_its_minimum_names_the_total() -> None:
    s = Session()
    d = s.fresh_dim_var()
    at_least(s, d, 7)
    with pytest.raises(ShapeError) as info:
        s.add(TotalElems((Row(sizes(2, 3)),), d, ORIGIN))
    assert str(info.value) == (
        "test 't': an axis indexed at position 6 would have size 6"
    )


def test_two_open_row_captures_of_one_reference_are_one_row() -> None:
    """The reference first captures an open row, then another open row: the
    two are equated (the later one given axes gives them to both)."""
    s = Session()
    r = s.dim_ref("r")
    x, y = s.leaf("x"), s.leaf("y")
    s.einsum("a", "..r..=>", x, capture_dims=[r])
    s.einsum("b", "..r..=>", y, capture_dims=[r])
    s.add(RowEq(y.shape.row(Kind.OUTPUT), Row(sizes(2, 3)), ORIGIN))
    s.close()
    assert (x.shape.dims()[2], r.value) == ((2, 3), 6)


@pytest.mark.parametrize("label_first", [True, False])
def test_two_references_counting_open_rows_keep_their_own_totals(
    label_first: bool,
) -> None:
    """Each reference binds a label and an open row (in either order): two
    pending totals, each closing its own row."""
    s = Session()
    leaves = []
    for name, n in (("r", 6), ("q", 10)):
        ref = s.dim_ref(name)
        x = s.leaf(f"x{name}")
        label = (f"l{name}", f"{name}=>", s.leaf(f"y{name}", str(n)))
        row = (f"w{name}", f"..{name}..=>", x)
        for op, spec, operand in (label, row) if label_first else (row, label):
            s.einsum(op, spec, operand, capture_dims=[ref])
        leaves.append(x)
    s.close()
    assert [x.shape.dims()[2] for x in leaves] == [(6,), (10,)]


def test_a_fresh_row_above_others_takes_their_marks_and_deepest_depth() -> None:
    s = Session()
    solver = s.solver
    a, b, plain = s.fresh_row_var(), s.fresh_row_var(), s.fresh_row_var()
    s.add(PolicyMark(Row((), a), Mark.SAFE_TO_GUESS, ORIGIN))
    s.add(PolicyMark(Row((), b), Mark.USED_IN_POINTWISE, ORIGIN))
    solver.raise_template_depth(a.id, 2)
    solver.raise_template_depth(b.id, 3)
    above = solver.fresh_row_above([a, b])
    assert solver.marks(above) == {Mark.SAFE_TO_GUESS, Mark.USED_IN_POINTWISE}
    assert solver.template_depth(above.id) == 3
    alone = solver.fresh_row_above([b])
    assert solver.marks(alone) == {Mark.USED_IN_POINTWISE}
    bare = solver.fresh_row_above([plain])
    assert (solver.mark_bits(bare.id), solver.template_depth(bare.id)) == (0, 0)
    assert bare.id not in solver.row_gen and bare.id not in solver.row_marks
