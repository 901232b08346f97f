"""The reference evaluator: the oracle for the whole pipeline."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest

from axisflow.dialects.batch_model import forest_model
from axisflow.forest.builder import ForestBuilder, loop, use
from axisflow.forest.model import Forest, Value
from axisflow.passes.classify_axes import classify_forest
from axisflow.scheduling import evaluate
from axisflow.scheduling.check import check_schedule
from axisflow.scheduling.evaluate import (
    TOLERANCE,
    Array,
    ScheduleRunError,
    compare,
    evaluate_forest,
    random_inputs,
    run_schedule,
)
from axisflow.scheduling.memory import Sizing
from axisflow.scheduling.schedule import (
    Buffer,
    LoopPass,
    Schedule,
    Write,
)
from axisflow.scheduling.scheduler import schedule_forest
from tests.conftest import example, only_forest

EXAMPLES = [
    "pipeline/four_tensor.mlir",
    "pipeline/cross_iteration.mlir",
    "pipeline/sibling_nests.mlir",
    "pipeline/demotion.mlir",
]


def classified(name: str) -> Forest:
    forest_op = only_forest(example(name))
    classify_forest(forest_op)
    return forest_model(forest_op)


@pytest.mark.parametrize("name", EXAMPLES)
@pytest.mark.parametrize("block", [1, 2, 3])
def test_schedules_agree_with_the_unbatched_forest(name: str, block: int) -> None:
    forest = classified(name)
    schedule = schedule_forest(forest, block=block).schedule
    result = compare(forest, schedule, seed=block)
    assert result.agrees, result.errors
    assert set(result.errors) == {tree.name for tree in forest.trees}
    assert result.worst <= TOLERANCE


def test_unbatched_evaluation_matches_the_whole_term_contracted_at_once() -> None:
    forest = classified("pipeline/four_tensor.mlir")
    sizing = Sizing(forest)
    inputs = random_inputs(forest, sizing, seed=3)
    whole = np.einsum(
        "befl,cdel,dfjk,acik->abij",
        inputs["B"],
        inputs["D"],
        inputs["C"],
        inputs["A"],
    )
    assert np.allclose(evaluate_forest(forest, inputs)["S_term"], whole, rtol=1e-12)


def test_coefficients_scale_the_outputs() -> None:
    forest = classified("pipeline/sibling_nests.mlir")
    inputs = random_inputs(forest, Sizing(forest), seed=0)
    results = evaluate_forest(forest, inputs)
    x = np.einsum("ib,ba->ia", inputs["P"], inputs["Q"])
    assert np.allclose(results["second"], -0.5 * np.einsum("ia,aj->ij", x, inputs["Z"]))


def test_batched_execution_really_slices(monkeypatch: pytest.MonkeyPatch) -> None:
    forest = classified("pipeline/four_tensor.mlir")
    schedule = schedule_forest(forest, block=1).schedule
    built: list[tuple[str, tuple[int, ...]]] = []
    original = evaluate._Contractions.__call__

    def recording(
        self: evaluate._Contractions, value: Value, operands: Sequence[Array]
    ) -> Array:
        result = original(self, value, operands)
        built.append((value.name, result.shape))
        return result

    monkeypatch.setattr(evaluate._Contractions, "__call__", recording)
    sizing = Sizing(forest)
    run_schedule(forest, schedule, random_inputs(forest, sizing), sizing)
    # one (b, c) block per iteration: 3 * 4 iterations of each build
    assert built.count(("T1", (1, 1, 2, 2))) == 12
    assert built.count(("T2", (1, 1, 3, 2))) == 12
    assert built.count(("S", (2, 1, 2, 3))) == 12
    assert len(built) == 36


def test_proto_indices_evaluate_densely_and_batch_through_the_proto() -> None:
    # V(m, i) = sum_a C(a<i>, m) t(a<i>, i), batched over i: the loop binds
    # the proto i_1 of a_1<i_1> on C and t.
    builder = ForestBuilder("pno").space("a", 3).space("i", 4).space("m", 2)
    builder.input("C", "a_1<i_1> m_1").input("t", "a_1<i_1> i_1")
    builder.contraction("V", "m_1 i_1", "C a_1<i_1> m_1", "t a_1<i_1> i_1")
    builder.tree(
        "r",
        loop(
            "i_1",
            0,
            use("V", "m_1 i_1", use("C", "a_1<i_1> m_1"), use("t", "a_1<i_1> i_1")),
        ),
    )
    forest = builder.finish()
    inputs = random_inputs(forest, Sizing(forest), seed=5)
    assert inputs["C"].shape == (3, 2, 4)  # a_1<i_1>, m_1, i_1
    expected = np.einsum("ami,ai->mi", inputs["C"], inputs["t"])
    assert np.allclose(evaluate_forest(forest, inputs)["r"], expected)
    schedule = schedule_forest(forest, block=2).schedule
    assert compare(forest, schedule, seed=5).agrees


def test_a_scatter_in_place_of_an_accumulation_gives_wrong_numbers() -> None:
    forest = classified("pipeline/four_tensor.mlir")
    schedule = schedule_forest(forest).schedule
    broken = _rewrite(
        schedule,
        lambda item: Write(item.value, False) if isinstance(item, Write) else item,
    )
    broken = _rewrite(
        broken,
        lambda item: replace(item, zero=False) if isinstance(item, Buffer) else item,
    )
    assert any(
        "must be accumulated" in p.message for p in check_schedule(forest, broken)
    )
    assert not compare(forest, broken).agrees


def test_reading_a_piece_of_a_closed_pass_is_caught() -> None:
    forest = classified("pipeline/demotion.mlir")
    schedule = schedule_forest(forest).schedule
    # Drop W's buffer and scatter: pass 1 then reads W from a closed pass.
    broken = _rewrite(
        schedule,
        lambda item: (
            None if isinstance(item, Buffer | Write) and item.value == "W" else item
        ),
    )
    assert any("not available" in p.message for p in check_schedule(forest, broken))
    sizing = Sizing(forest)
    with pytest.raises(ScheduleRunError, match="reads @W, which is not available"):
        run_schedule(forest, broken, random_inputs(forest, sizing), sizing)


def test_reading_a_buffer_before_its_loop_closes_is_caught() -> None:
    forest = classified("pipeline/sibling_nests.mlir")
    schedule = schedule_forest(forest).schedule
    # Move R1's build into the pass that scatters X.
    first, second = [i for i in schedule.items if isinstance(i, LoopPass)][:2]
    first.body.extend(second.body)
    second.body.clear()
    sizing = Sizing(forest)
    with pytest.raises(ScheduleRunError, match="before its buffer is complete"):
        run_schedule(forest, schedule, random_inputs(forest, sizing), sizing)


def _rewrite(schedule: Schedule, change) -> Schedule:
    def items(found: list) -> list:
        out = []
        for item in found:
            if isinstance(item, LoopPass):
                item = replace(item, body=items(item.body))
            new = change(item)
            if new is not None:
                out.append(new)
        return out

    return Schedule(items(schedule.items), schedule.rounds)
