"""The schedule's structure, passes and placement (issue 18): cases the
numerical agreement of the evaluator cannot see. Expected schedules are
derived by hand from the rules in ``axisflow/pipeline/scheduler.py``."""

from __future__ import annotations

import pytest

from axisflow.forest.builder import ForestBuilder, loop, use
from axisflow.forest.model import Forest
from axisflow.pipeline.memory import Sizing
from axisflow.pipeline.schedule import (
    Bind,
    Buffer,
    Build,
    LoopPass,
    Output,
    Schedule,
    Write,
    check_schedule,
)
from axisflow.pipeline.scheduler import (
    Disposition,
    SchedulingError,
    schedule_forest,
)
from axisflow.roles import Index


def bind(mode: str, instance: int) -> Bind:
    return Bind(Index.parse(mode), instance)


def inner_sum_forest() -> Forest:
    """``Y(b) = X(b) Z(b)`` with ``X(b) = sum_c P(b,c) Q(c)``, in ``b { c { X } Y }``."""
    builder = ForestBuilder("inner").space("b", 4, 8).space("c", 3, 8)
    builder.input("P", "b_1 c_1").input("Q", "c_1").input("Z", "b_1")
    builder.contraction("X", "b_1", "P b_1 c_1", "Q c_1")
    builder.contraction("Y", "b_1", "X b_1", "Z b_1")
    x = use("X", "b_1", use("P", "b_1 c_1"), use("Q", "c_1"))
    builder.tree("t", loop("b_1", 0, use("Y", "b_1", loop("c_1", 1, x), use("Z", "b_1"))))
    return builder.finish()


def test_a_partial_sum_gets_a_sliced_buffer_inside_the_outer_loop() -> None:
    # X accumulates over c and stays in its b slice: its buffer goes inside
    # the b pass, just before the c pass, one b block in size (2 x 8 bytes);
    # the c loop, not named in the block mapping, runs one element per block.
    forest = inner_sum_forest()
    result = schedule_forest(forest, block={"b": 2}, sizes=Sizing(forest))
    x_slices = (bind("b_1", 0),)
    assert result.schedule == Schedule(
        [
            Buffer("Y", (), zero=False, bytes=4 * 8),
            LoopPass(
                0,
                "b",
                0,
                2,
                [
                    Buffer("X", x_slices, zero=True, bytes=2 * 8),
                    LoopPass(
                        1,
                        "c",
                        0,
                        1,
                        [
                            Build("X", x_slices, (bind("c_1", 1),), bytes=2 * 8),
                            Write("X", accumulate=True),
                        ],
                    ),
                    Build("Y", (bind("b_1", 0),), bytes=2 * 8),
                    Write("Y", accumulate=False),
                ],
            ),
            Output("t", "Y"),
        ],
        rounds=1,
    )
    x = result.placements["X"]
    assert x.home == (0, 1)
    assert x.bindings[0].disposition is Disposition.SLICE
    assert x.bindings[1].disposition is Disposition.ACCUMULATE
    assert result.placements["Y"].bindings[0].disposition is Disposition.SCATTER
    assert check_schedule(forest, result.schedule) == []


@pytest.mark.parametrize("size", [0, -3])
def test_a_per_space_block_below_one_is_refused(size: int) -> None:
    with pytest.raises(SchedulingError) as info:
        schedule_forest(inner_sum_forest(), block={"b": 2, "c": size})
    assert str(info.value) == f"block for c must be positive, got {size}"


def test_a_global_block_below_one_is_refused() -> None:
    with pytest.raises(SchedulingError) as info:
        schedule_forest(inner_sum_forest(), block=0)
    assert str(info.value) == "block must be positive, got 0"
