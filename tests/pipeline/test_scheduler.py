"""The scheduler: placement by role, split, demotion fixpoint, hoisting.

Expected schedules are written out by hand from the rules; sizes are
computed here from the extents of the example files.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from axisflow.dialects.batch_model import forest_model
from axisflow.forest.builder import ForestBuilder, loop, use
from axisflow.forest.model import Forest, ModelError
from axisflow.passes.classify_axes import classify_forest
from axisflow.roles import Index
from axisflow.scheduling.check import check_schedule
from axisflow.scheduling.memory import Sizing
from axisflow.scheduling.schedule import (
    Bind,
    Buffer,
    Build,
    Item,
    LoopPass,
    Output,
    Schedule,
    Write,
)
from axisflow.scheduling.scheduler import (
    Disposition,
    SchedulingError,
    schedule_forest,
)
from tests.conftest import example, only_forest


def classified(name: str) -> Forest:
    forest_op = only_forest(example(name))
    classify_forest(forest_op)
    return forest_model(forest_op)


def bind(mode: str, instance: int) -> Bind:
    return Bind(Index.parse(mode), instance)


def unsized(item: Item) -> Item:
    """The item with byte sizes zeroed (for tests about structure)."""
    if isinstance(item, Build | Buffer):
        return replace(item, bytes=0)
    if isinstance(item, LoopPass):
        return replace(item, body=[unsized(i) for i in item.body])
    return item


def test_four_tensor_schedule_is_the_hand_derived_one() -> None:
    forest = classified("pipeline/four_tensor.mlir")
    result = schedule_forest(forest, sizes=Sizing(forest))
    # extents a=2 b=3 c=4 d=2 e=3 f=2 i=2 j=3 k=2 l=2, 8-byte elements;
    # T1 and T2 are one (b, c) block each; S is partial in c, a slice in b.
    expected = Schedule(
        [
            Buffer("S", (), zero=True, bytes=2 * 3 * 2 * 3 * 8),
            LoopPass(
                0,
                "b",
                0,
                1,
                [
                    LoopPass(
                        1,
                        "c",
                        0,
                        1,
                        [
                            Build("T1", (bind("b", 0), bind("c", 1)), bytes=2 * 2 * 8),
                            Build("T2", (bind("b", 0), bind("c", 1)), bytes=3 * 2 * 8),
                            Build(
                                "S",
                                (bind("b", 0),),
                                (bind("c", 1),),
                                bytes=2 * 2 * 3 * 8,
                            ),
                            Write("S", accumulate=True),
                        ],
                    )
                ],
            ),
            Output("S_term", "S"),
        ],
        rounds=1,
    )
    assert result.schedule == expected
    placement = result.placements
    assert placement["S"].bindings[0].disposition is Disposition.SCATTER
    assert placement["S"].bindings[1].disposition is Disposition.ACCUMULATE
    assert placement["T1"].bindings[1].disposition is Disposition.SLICE


def test_block_size_is_recorded_per_loop_and_in_the_sizes() -> None:
    forest = classified("pipeline/four_tensor.mlir")
    schedule = schedule_forest(forest, block={"b": 2, "c": 3}).schedule
    loops = [item for item, _ in schedule.walk() if isinstance(item, LoopPass)]
    assert [(lp.space, lp.block) for lp in loops] == [("b", 2), ("c", 3)]
    sized = schedule_forest(forest, block=2, sizes=Sizing(forest)).schedule
    t1 = next(i for i, _ in sized.walk() if isinstance(i, Build) and i.value == "T1")
    assert t1.bytes == 2 * 2 * 2 * 2 * 8  # b block 2, c block 2, d=2, f=2


def test_cross_iteration_outer_product_is_scattered_on_both_loops() -> None:
    forest = classified("pipeline/cross_iteration.mlir")
    schedule = schedule_forest(forest, sizes=Sizing(forest)).schedule
    assert schedule == Schedule(
        [
            Buffer("V", (), zero=False, bytes=4 * 4 * 8),
            LoopPass(
                0,
                "i",
                0,
                1,
                [
                    LoopPass(
                        1,
                        "i",
                        0,
                        1,
                        [
                            Build("V", (bind("i_1", 0), bind("i_2", 1)), bytes=8),
                            Write("V", accumulate=False),
                        ],
                    )
                ],
            ),
            Output("term0", "V"),
        ]
    )


def test_without_loops_everything_is_built_once_at_top_level() -> None:
    builder = ForestBuilder("plain").input("A", "i_1")
    builder.contraction("V", "i_1 i_2", "A i_1", "A i_2")
    builder.tree("t", use("V", "i_3 i_4", use("A", "i_3"), use("A", "i_4")))
    schedule = schedule_forest(builder.finish()).schedule
    assert [unsized(i) for i in schedule.items] == [Build("V"), Output("t", "V")]


def test_sibling_nests_split_the_producing_loop() -> None:
    forest = classified("pipeline/sibling_nests.mlir")
    result = schedule_forest(forest)
    schedule = result.schedule
    outline = [
        (
            type(item).__name__,
            getattr(item, "value", None),
            getattr(item, "number", None),
        )
        for item in schedule.items
    ]
    assert outline == [
        ("Buffer", "X", None),
        ("LoopPass", None, 0),  # instance 0, pass 0: X, scattered
        ("Buffer", "R1", None),
        ("LoopPass", None, 1),  # instance 0, pass 1: R1 reads X after it closed
        ("Output", "R1", None),
        ("Buffer", "R2", None),
        ("LoopPass", None, 0),  # instance 1 (the sibling nest) reads X
        ("Output", "R2", None),
    ]
    first, second, sibling = (i for i in schedule.items if isinstance(i, LoopPass))
    assert (first.instance, second.instance, sibling.instance) == (0, 0, 1)
    assert [type(i).__name__ for i in first.body] == ["Build", "Write"]
    assert unsized(first.body[0]) == Build("X", (bind("i_1", 0),))
    assert unsized(second.body[0]) == Build("R1", (bind("i_1", 0),))
    assert unsized(sibling.body[0]) == Build("R2", (bind("i_1", 1),))
    assert result.decisions.demoted == {}
    assert schedule.rounds == 1


def test_a_value_read_by_two_passes_is_demoted_in_a_second_round() -> None:
    forest = classified("pipeline/demotion.mlir")
    result = schedule_forest(forest)
    schedule = result.schedule
    assert schedule.rounds == 2
    assert set(result.decisions.demoted) == {("W", 0)}
    assert (
        "@R outside the pass of loop instance 0" in result.decisions.demoted[("W", 0)]
    )
    passes = [i for i in schedule.items if isinstance(i, LoopPass)]
    assert [p.number for p in passes] == [0, 1, 2]
    assert [[type(i).__name__ for i in p.body] for p in passes] == [
        ["Build", "Write"],
        ["Build", "Write"],
        ["Build", "Write"],
    ]
    w, x, r = (unsized(p.body[0]) for p in passes)
    assert w == Build("W", (bind("Κ_1", 0),), demoted=(0,))
    assert x == Build("X", (), (bind("Κ_1", 0),))
    assert r == Build("R", (bind("Κ_1", 0),))
    assert passes[0].body[1] == Write("W", accumulate=False)
    assert passes[1].body[1] == Write("X", accumulate=True)


def test_the_round_bound_fails_loudly() -> None:
    forest = classified("pipeline/demotion.mlir")
    with pytest.raises(SchedulingError, match=r"not reached within 1 rounds.*@W"):
        schedule_forest(forest, max_rounds=1)
    with pytest.raises(SchedulingError, match="at least 1"):
        schedule_forest(forest, max_rounds=0)


def test_a_loop_invariant_value_is_homed_above_the_loop() -> None:
    # E = sum_a X(a) Y(a) neither carries nor contracts Κ: built after the loop
    # that accumulates X.
    builder = ForestBuilder("hoist").space("Κ", 3).space("a", 2)
    builder.input("W", "Κ_1 a_1").input("V", "Κ_1").input("Y", "a_1")
    builder.contraction("X", "a_1", "W Κ_1 a_1", "V Κ_1")
    builder.contraction("E", "", "X a_1", "Y a_1")
    builder.tree(
        "t",
        loop(
            "Κ_1",
            0,
            use(
                "E",
                "",
                use("X", "a_1", use("W", "Κ_1 a_1"), use("V", "Κ_1")),
                use("Y", "a_1"),
            ),
        ),
    )
    forest = builder.finish()
    result = schedule_forest(forest)
    assert result.placements["E"].home == ()
    items = result.schedule.items
    assert [type(i).__name__ for i in items] == [
        "Buffer",
        "LoopPass",
        "Build",
        "Output",
    ]
    assert unsized(items[2]) == Build("E")


def rebuild_forest(with_second_tree: bool) -> Forest:
    """T(c) is invariant on b but sliced on c, inside b { c { R = P * T } }.
    The second tree reads T in full at top level."""
    builder = ForestBuilder("rebuild").space("b", 2).space("c", 3).space("d", 2)
    builder.input("P", "b_1 c_1").input("Q", "c_1 d_1").input("G", "d_1")
    builder.contraction("T", "c_1", "Q c_1 d_1", "G d_1")
    builder.contraction("R", "b_1 c_1", "P b_1 c_1", "T c_1")
    t = use("T", "c_1", use("Q", "c_1 d_1"), use("G", "d_1"))
    builder.tree(
        "t0",
        loop("b_1", 0, loop("c_1", 1, use("R", "b_1 c_1", use("P", "b_1 c_1"), t))),
    )
    if with_second_tree:
        builder.tree("t1", t)
    return builder.finish()


def test_invariant_on_an_outer_loop_but_sliced_inside_is_rebuilt() -> None:
    result = schedule_forest(rebuild_forest(False), rebuild="fused")
    placement = result.placements["T"]
    assert placement.home == (0, 1)
    assert placement.bindings[0].disposition is Disposition.REBUILD
    assert placement.bindings[1].disposition is Disposition.SLICE
    outer = next(i for i in result.schedule.items if isinstance(i, LoopPass))
    inner = outer.body[0]
    assert isinstance(inner, LoopPass)
    assert unsized(inner.body[0]) == Build("T", (bind("c_1", 1),))


def test_a_rebuilt_value_read_outside_its_loop_is_hoisted() -> None:
    result = schedule_forest(rebuild_forest(True), rebuild="fused")
    assert set(result.decisions.hoisted) == {("T", 0)}
    assert set(result.decisions.demoted) == {("T", 1)}
    assert result.placements["T"].home == (1,)
    assert result.schedule.rounds == 2
    assert check_schedule(rebuild_forest(True), result.schedule) == []


def test_missing_roles_are_reported() -> None:
    forest_op = only_forest(example("pipeline/four_tensor.mlir"))
    forest = forest_model(forest_op)  # classify-axes not run
    with pytest.raises(ModelError, match="run classify-axes first"):
        schedule_forest(forest)


def test_bad_block_sizes_are_reported() -> None:
    forest = classified("pipeline/four_tensor.mlir")
    with pytest.raises(SchedulingError, match="block must be positive"):
        schedule_forest(forest, block=0)
    with pytest.raises(SchedulingError, match="block for b must be positive"):
        schedule_forest(forest, block={"b": -1})
