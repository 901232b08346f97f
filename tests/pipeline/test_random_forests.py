"""Property: on random small forests, the schedule is valid and computes
the same numbers as the unbatched forest."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axisflow.forest.builder import (
    ForestBuilder,
    LoopSpec,
    UseSpec,
    labels,
    loop,
    use,
)
from axisflow.forest.model import Forest
from axisflow.scheduling.check import check_schedule
from axisflow.scheduling.evaluate import compare
from axisflow.scheduling.memory import memory_report
from axisflow.scheduling.scheduler import schedule_forest

POOL = ["i_1", "i_2", "a_1", "a_2", "k_1"]


@st.composite
def forests(draw: st.DrawFn) -> Forest:
    builder = ForestBuilder("random")
    for key in "iak":
        builder.space(key, draw(st.integers(2, 3)), 8)

    def value(depth: int) -> tuple[str, list[str]]:
        if depth == 0 or draw(st.booleans()):
            carried = sorted(
                draw(st.sets(st.sampled_from(POOL), min_size=1, max_size=3))
            )
            name = "L_" + "_".join(c.replace("_", "") for c in carried)
            if name not in builder.values:
                builder.input(name, " ".join(carried))
            return name, carried
        left, left_labels = value(depth - 1)
        right, right_labels = value(depth - 1)
        union = list(dict.fromkeys(left_labels + right_labels))
        result = [x for x in union if draw(st.booleans())]
        name = f"V{len(builder.values)}"
        for existing in builder.values.values():  # share identical nodes
            factors = tuple(
                (f.value, tuple(map(str, f.labels))) for f in existing.factors
            )
            if (
                factors == ((left, tuple(left_labels)), (right, tuple(right_labels)))
                and [str(r) for r in existing.result] == result
            ):
                return existing.name, result
        builder.contraction(
            name,
            " ".join(result),
            f"{left} {' '.join(left_labels)}",
            f"{right} {' '.join(right_labels)}",
        )
        return name, result

    def spec(name: str, around: set[str]) -> UseSpec | LoopSpec:
        found = builder.values[name]
        free = [x for x in POOL if x not in around]
        label = None
        if free and found.factors and draw(st.integers(0, 5)) == 0:
            label = draw(st.sampled_from(free))
        inner = around if label is None else around | {label}
        children = [spec(f.value, inner) for f in found.factors]
        site = use(name, " ".join(map(str, found.result)), *children)
        if label is None:
            return site
        return loop(label, draw(st.sampled_from([None, 10 + POOL.index(label)])), site)

    for number in range(draw(st.integers(1, 3))):
        root, _ = value(draw(st.integers(1, 3)))
        outer = sorted(draw(st.sets(st.sampled_from(POOL), max_size=2)))
        body = spec(root, set(outer))
        for label in reversed(outer):
            slot = draw(st.sampled_from([None, POOL.index(label)]))
            body = loop(label, slot, body)
        builder.tree(f"t{number}", body, coeff=draw(st.sampled_from([1, -1, 2])))
    return builder.finish()


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(forests(), st.integers(1, 2), st.integers(0, 2**16))
def test_batched_evaluation_equals_unbatched(
    forest: Forest, block: int, seed: int
) -> None:
    result = schedule_forest(forest, block=block)
    assert check_schedule(forest, result.schedule) == []
    comparison = compare(forest, result.schedule, seed=seed)
    assert comparison.agrees, comparison.errors
    report = memory_report(forest, result.schedule)
    for row in report.values:
        assert row.piece_bytes <= row.full_bytes
        assert row.buffer_bytes is None or row.buffer_bytes <= row.full_bytes


def test_the_strategy_reaches_splits_and_demotions() -> None:
    # Guard against a strategy that only draws trivial forests: a fixed
    # forest of its shape that needs a split and a demotion round.
    builder = ForestBuilder().space("k", 3).space("a", 2)
    builder.input("P", "k_1 a_1").input("U", "k_1 a_1").input("V", "k_1")
    builder.contraction("W", "k_1 a_1", "P k_1 a_1", "U k_1 a_1")
    builder.contraction("X", "a_1", "W k_1 a_1", "V k_1")
    builder.contraction("R", "k_1", "X a_1", "W k_1 a_1")
    w = use("W", "k_1 a_1", use("P", "k_1 a_1"), use("U", "k_1 a_1"))
    builder.tree(
        "t", loop("k_1", 0, use("R", "k_1", use("X", "a_1", w, use("V", "k_1")), w))
    )
    forest = builder.finish()
    result = schedule_forest(forest)
    assert result.schedule.rounds == 2
    assert labels("k_1")[0] in forest.values["W"].modes
    assert compare(forest, result.schedule).agrees
