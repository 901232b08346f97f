"""Invariances users rely on, on random SeQuant expressions (composites,
shared and nested protos, several spaces)."""

from __future__ import annotations

import random
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axisflow.forest.roles import classify
from axisflow.pipeline import ForestSchedule, schedule_expression
from axisflow.roles.index import Index
from axisflow.scheduling.evaluate import compare
from axisflow.scheduling.options import ShareChoice
from axisflow.scheduling.schedule import Residual, Schedule
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


def unnamed(schedule: Schedule) -> Schedule:
    """The schedule with its residual buffers' modes reduced to their spaces."""
    items = [
        replace(
            item, modes=tuple(Index(k) for k in sorted(m.base_key for m in item.modes))
        )
        if isinstance(item, Residual)
        else item
        for item in schedule.items
    ]
    return replace(schedule, items=items)


@SETTINGS
@given(expressions(), st.randoms(use_true_random=False))
def test_renaming_every_index_changes_no_role_schedule_or_peak(
    case: tuple[Expression, str], rng: random.Random
) -> None:
    expression, batch = case
    before = scheduled(expression, batch)
    after = scheduled(renamed(expression, rng), batch)
    assert after.model.roles == before.model.roles
    # the residual buffer is named by the externals, which are renamed too
    assert unnamed(after.schedule) == unnamed(before.schedule)
    assert after.report.unbatched_peak == before.report.unbatched_peak
    assert after.report.scheduled_peak == before.report.scheduled_peak


@SETTINGS
@given(
    expressions(), st.randoms(use_true_random=False), st.sampled_from(["tree", "auto"])
)
def test_rebuilt_values_are_never_worse_and_independent_of_names(
    case: tuple[Expression, str], rng: random.Random, share: ShareChoice
) -> None:
    expression, batch = case
    extents = {key: 2 + n for n, key in enumerate(expression.space_keys())}
    before = schedule_expression(expression, batch, extents=extents, share=share)
    again = renamed(expression, rng)
    after = schedule_expression(again, batch, extents=extents, share=share)
    assert before.report.scheduled_peak <= before.report.unbatched_peak
    assert (after.share, after.report.extra_flops, after.report.flops) == (
        before.share,
        before.report.extra_flops,
        before.report.flops,
    )
    assert after.report.scheduled_peak == before.report.scheduled_peak
    assert after.report.unbatched_peak == before.report.unbatched_peak
    assert compare(before.model, before.schedule, seed=2).agrees


@SETTINGS
@given(expressions(), st.randoms(use_true_random=False))
def test_any_factor_order_builds_classifies_and_schedules(
    case: tuple[Expression, str], rng: random.Random
) -> None:
    expression, batch = case
    result = scheduled(permuted(expression, rng), batch)
    # (the never-worse guard may drop every loop, and with them the roles)
    assert len(result.model.roles) > 0 or not batch or result.dropped
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
