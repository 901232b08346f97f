"""Invariances users rely on, on random SeQuant expressions (composites,
shared and nested protos, several spaces)."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axisflow.forest.roles import classify
from axisflow.pipeline import ForestSchedule, schedule_expression
from axisflow.pipeline.evaluate import compare
from axisflow.sequant import BatchPolicy, Expression, build_forest, parse
from tests.forest.strategies import expressions, permuted, renamed

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def scheduled(expression: Expression, batch: str) -> ForestSchedule:
    extents = {key: 2 + n for n, key in enumerate(expression.space_keys())}
    return schedule_expression(expression, batch, extents=extents, elem=8)


@SETTINGS
@given(expressions(), st.randoms(use_true_random=False))
def test_renaming_every_index_changes_no_role_schedule_or_peak(
    case: tuple[Expression, str], rng: random.Random
) -> None:
    expression, batch = case
    before = scheduled(expression, batch)
    after = scheduled(renamed(expression, rng), batch)
    assert after.model.roles == before.model.roles
    assert after.schedule == before.schedule
    assert after.report.unbatched_peak == before.report.unbatched_peak
    assert after.report.scheduled_peak == before.report.scheduled_peak


@SETTINGS
@given(expressions(), st.randoms(use_true_random=False))
def test_any_factor_order_builds_classifies_and_schedules(
    case: tuple[Expression, str], rng: random.Random
) -> None:
    expression, batch = case
    result = scheduled(permuted(expression, rng), batch)
    assert len(result.model.roles) > 0 or not batch
    assert compare(result.model, result.schedule, seed=1).agrees


def test_proto_nesting_299_deep_builds_and_classifies() -> None:
    # frames, canonical renaming and the frontend are iterative
    label = "i_1"
    for depth in range(2, 300):
        label = f"i_{depth}<{label}>"
    text = f"A{{{label};}} * B{{;{label}}}"
    forest = build_forest(parse(text), BatchPolicy.make("i"))
    classify(forest)
    assert len(forest.values["A_0"].modes) == 299
