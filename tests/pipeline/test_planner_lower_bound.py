"""The lower bound of the peak: a contraction whose result and built factors
share no batched mode leaves one of them whole beside the residual (in plans
that rebuild nothing inside a loop); checked by hand on a small forest and
against every plan found on random forests."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axisflow.forest.builder import ForestBuilder, loop, use
from axisflow.forest.model import Forest
from axisflow.residual import OperatorGroup, ResidualError, ResidualLayout
from axisflow.roles.index import Index
from axisflow.scheduling.check import check_schedule
from axisflow.scheduling.memory import (
    Sizing,
    forest_flops,
    lifetimes,
    lower_bound,
    memory_report,
    peak,
)
from axisflow.scheduling.planner import plan_shared_forest
from axisflow.scheduling.scheduler import schedule_forest
from axisflow.sequant import Expression, to_model
from axisflow.sequant.forest import expression_layout
from axisflow.sequant.syntax import Term
from tests.forest.strategies import expressions
from tests.pipeline.test_planner import shared_expressions


def outer_product_forest(first: str, second: str) -> Forest:
    """``X[i_1 i_2] = sum_k Y[i_1 k_1] Z[k_1 i_2]``, ``Y = A B`` and
    ``Z = C D`` built (i: 4, batched; k: 3; m: 2), its loops ``first``
    then ``second`` (``i_1``, ``i_2``). No loop of ``i`` slices both ``Y``
    and ``Z``: one of them (96 B) stays whole."""
    builder = ForestBuilder("outer").space("i", 4).space("k", 3).space("m", 2)
    builder.input("A", "i_1 m_1").input("B", "m_1 k_1")
    builder.input("C", "k_1 m_2").input("D", "m_2 i_2")
    builder.contraction("Y", "i_1 k_1", "A i_1 m_1", "B m_1 k_1")
    builder.contraction("Z", "k_1 i_2", "C k_1 m_2", "D m_2 i_2")
    builder.contraction("X", "i_1 i_2", "Y i_1 k_1", "Z k_1 i_2")
    y = use("Y", "i_1 k_1", use("A", "i_1 m_1"), use("B", "m_1 k_1"))
    z = use("Z", "k_1 i_2", use("C", "k_1 m_2"), use("D", "m_2 i_2"))
    builder.tree("t", loop(first, 0, loop(second, 1, use("X", "i_1 i_2", y, z))))
    return builder.finish()


OUTER_LAYOUT = ResidualLayout(
    (Index.parse("i_1"), Index.parse("i_2")),
    (Index.parse("i_1"), Index.parse("i_2")),
    (OperatorGroup((), (0,)),),
)


def test_a_whole_factor_beside_the_residual_worked_out_by_hand() -> None:
    forest = outer_product_forest("i_1", "i_2")
    bound = lower_bound(forest, OUTER_LAYOUT, ["i"])
    # the residual (4 x 4 x 8 B) beside Y or Z whole (4 x 3 x 8 B)
    assert bound.bytes == 128 + 96
    assert bound.reason == (
        "the residual beside a whole value: the built factors @Y @Z of @X "
        "share no batched mode (plans that rebuild nothing inside a loop)"
    )
    # without the argument: the residual, larger than the pieces at one
    # element per batched mode (X 8 B, Y 24 B, Z 24 B)
    assert (
        lower_bound(forest, OUTER_LAYOUT, ["i"], rebuilt_inside_loops=True).bytes == 128
    )
    for first, second in (("i_1", "i_2"), ("i_2", "i_1")):
        nested = outer_product_forest(first, second)
        for block in (1, 2):
            result = schedule_forest(nested, residual=OUTER_LAYOUT, block=block)
            assert check_schedule(nested, result.schedule) == []
            found = peak(lifetimes(nested, result.schedule)).bytes
            # by hand: the residual, the factor the outer loop does not bind
            # whole, the other one's piece (block x 3 x 8 B) and X's piece
            # (block x block x 8 B)
            assert found == 128 + 96 + block * 24 + block * block * 8
            assert found >= bound.bytes


def test_a_schedule_that_rebuilds_inside_a_loop_can_go_below_it() -> None:
    """The argument needs plans that rebuild nothing inside a loop: Z rebuilt
    in each block of i_1 is never whole."""
    forest = outer_product_forest("i_1", "i_2")
    result = schedule_forest(forest, residual=OUTER_LAYOUT, rebuild="fused")
    found = peak(lifetimes(forest, result.schedule)).bytes
    assert found == 128 + 24 + 24 + 8 < 128 + 96
    report = memory_report(forest, result.schedule, residual=OUTER_LAYOUT)
    assert report.recomputed_flops > 0
    assert report.lower_bound == 128  # the residual only
    assert report.lower_bound <= report.scheduled_peak


BOUND_SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


def with_shared_product(expression: Expression) -> Expression:
    """``expression`` plus a copy of its first term with the factors in
    another order, so that the frontend shares values across two trees."""
    first = expression.terms[0]
    again = Term(Fraction(2), tuple(reversed(first.tensors)))
    return Expression((*expression.terms, again))


def below_every_plan(expression: Expression, batch: str, block: int) -> None:
    """The shared forest's bound is at most the peak of every plan the
    search finds that rebuilds nothing inside a loop; each plan's own
    forest's bound (leaving the argument out when it rebuilds) at most its
    peak."""
    try:
        layout = expression_layout(expression)
    except ResidualError:
        layout = None  # terms that are no one residual: no residual counted
    extents = {key: 2 + n for n, key in enumerate(sorted(expression.space_keys()))}
    spaces = [key for key in batch.split(",") if key]
    forest = to_model(expression, spaces, extents=extents, canonical=True)
    sizing = Sizing(forest)
    bound = lower_bound(forest, layout, spaces, sizing)
    search = plan_shared_forest(forest, layout, block=block, front=True)
    for point in search.points:
        rebuilds = point.flops > forest_flops(point.forest, Sizing(point.forest))
        own = lower_bound(
            point.forest,
            point.residual,
            spaces,
            Sizing(point.forest),
            rebuilt_inside_loops=rebuilds,
        )
        assert own.bytes <= point.peak
        if not rebuilds:  # the shared forest's bound holds for its plans
            assert bound.bytes <= point.peak


@BOUND_SETTINGS
@given(expressions(), st.booleans(), st.sampled_from([1, 2]))
def test_the_bound_is_below_every_plan_of_random_forests(
    case: tuple[Expression, str], share_a_term: bool, block: int
) -> None:
    expression, batch = case
    if share_a_term:
        expression = with_shared_product(expression)
    below_every_plan(expression, batch, block)


@BOUND_SETTINGS
@given(shared_expressions(), st.sampled_from([1, 2]))
def test_the_bound_is_below_every_plan_of_forests_sharing_values(
    case: tuple[Expression, str], block: int
) -> None:
    expression, batch = case
    below_every_plan(expression, batch, block)
