"""The schedule's structure, passes and placement (issue 18): cases the
numerical agreement of the evaluator cannot see. Expected schedules are
derived by hand from the rules in ``axisflow/scheduling/scheduler.py``."""

from __future__ import annotations

import pytest

from axisflow.forest.builder import ForestBuilder, loop, use
from axisflow.forest.model import Forest
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
from tests.pipeline.test_scheduler import rebuild_forest


def bind(mode: str, instance: int) -> Bind:
    return Bind(Index.parse(mode), instance)


def inner_sum_forest() -> Forest:
    """``Y(b) = X(b) Z(b)`` with ``X(b) = sum_c P(b,c) Q(c)``, in ``b { c { X } Y }``."""
    builder = ForestBuilder("inner").space("b", 4, 8).space("c", 3, 8)
    builder.input("P", "b_1 c_1").input("Q", "c_1").input("Z", "b_1")
    builder.contraction("X", "b_1", "P b_1 c_1", "Q c_1")
    builder.contraction("Y", "b_1", "X b_1", "Z b_1")
    x = use("X", "b_1", use("P", "b_1 c_1"), use("Q", "c_1"))
    builder.tree(
        "t", loop("b_1", 0, use("Y", "b_1", loop("c_1", 1, x), use("Z", "b_1")))
    )
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


def join_forest() -> Forest:
    """``R(Κ) = W(Κ) E`` with ``W(Κ) = sum_a A(Κ,a) B(a)`` and
    ``E = sum_Κ X(Κ) Y(Κ)``, all in one nest over Κ."""
    builder = ForestBuilder("join").space("Κ", 4).space("a", 2)
    builder.input("A", "Κ_1 a_1").input("B", "a_1")
    builder.input("X", "Κ_1").input("Y", "Κ_1")
    builder.contraction("W", "Κ_1", "A Κ_1 a_1", "B a_1")
    builder.contraction("E", "", "X Κ_1", "Y Κ_1")
    builder.contraction("R", "Κ_1", "W Κ_1", "E")
    w = use("W", "Κ_1", use("A", "Κ_1 a_1"), use("B", "a_1"))
    e = use("E", "", use("X", "Κ_1"), use("Y", "Κ_1"))
    builder.tree("t", loop("Κ_1", 0, use("R", "Κ_1", w, e)))
    return builder.finish()


def test_a_sliced_value_joins_the_pass_of_its_reader() -> None:
    # E accumulates over Κ, so R runs in a second pass of the loop. W depends
    # on inputs only and could run in the first pass, but its one reader is R:
    # W joins R's pass and stays a slice (no demotion, one round, no buffer).
    result = schedule_forest(join_forest())
    schedule = result.schedule
    assert schedule.rounds == 1
    assert result.decisions.demoted == {}
    assert result.decisions.hoisted == {}
    outline = [type(item).__name__ for item in schedule.items]
    assert outline == ["Buffer", "LoopPass", "Buffer", "LoopPass", "Output"]
    first, second = (i for i in schedule.items if isinstance(i, LoopPass))
    assert (first.instance, first.number, second.instance, second.number) == (
        0,
        0,
        0,
        1,
    )
    assert [(type(i).__name__, getattr(i, "value", None)) for i in first.body] == [
        ("Build", "E"),
        ("Write", "E"),
    ]
    assert [(type(i).__name__, getattr(i, "value", None)) for i in second.body] == [
        ("Build", "W"),
        ("Build", "R"),
        ("Write", "R"),
    ]
    assert [i.value for i in schedule.items if isinstance(i, Buffer)] == ["E", "R"]
    assert result.placements["W"].bindings[0].disposition is Disposition.SLICE


def hoist_forest() -> Forest:
    """``R(Κ) = W(Κ) F`` with ``F = sum_a B(a) C(a)``, in one nest over Κ."""
    builder = ForestBuilder("hoist").space("Κ", 4).space("a", 2)
    builder.input("A", "Κ_1 a_1").input("B", "a_1").input("C", "a_1")
    builder.contraction("W", "Κ_1", "A Κ_1 a_1", "B a_1")
    builder.contraction("F", "", "B a_1", "C a_1")
    builder.contraction("R", "Κ_1", "W Κ_1", "F")
    w = use("W", "Κ_1", use("A", "Κ_1 a_1"), use("B", "a_1"))
    f = use("F", "", use("B", "a_1"), use("C", "a_1"))
    builder.tree("t", loop("Κ_1", 0, use("R", "Κ_1", w, f)))
    return builder.finish()


def test_a_value_invariant_on_the_loop_is_built_once_above_it() -> None:
    # F binds none of the loop's modes and no deeper loop keeps it: it is
    # hoisted above the loop (built once), not rebuilt per iteration; W and R
    # share the one pass.
    result = schedule_forest(hoist_forest())
    schedule = result.schedule
    assert result.placements["F"].home == ()
    assert result.placements["F"].bindings == {}
    assert result.placements["W"].home == (0,)
    assert [(type(i).__name__, getattr(i, "value", None)) for i in schedule.items] == [
        ("Build", "F"),
        ("Buffer", "R"),
        ("LoopPass", None),
        ("Output", "R"),
    ]
    (only,) = (i for i in schedule.items if isinstance(i, LoopPass))
    assert [(type(i).__name__, getattr(i, "value", None)) for i in only.body] == [
        ("Build", "W"),
        ("Build", "R"),
        ("Write", "R"),
    ]
    assert schedule.rounds == 1
    assert result.decisions.hoisted == {}


def square_forest(copies: int = 1) -> Forest:
    """``R(i_1,i_2) = T(i_1) T(i_2)`` with ``T(i) = sum_a A(i,a) B(a)``, in
    unslotted nested loops over ``i_1`` and ``i_2`` (with ``copies > 1``,
    that many independent trees ``t0``, ``t1``, ... over ``T0``, ``R0``, ...)."""
    builder = ForestBuilder("square").space("i", 3).space("a", 2)
    builder.input("A", "i_1 a_1").input("B", "a_1")
    for copy in range(copies):
        suffix = "" if copies == 1 else str(copy)
        t, r = f"T{suffix}", f"R{suffix}"
        builder.contraction(t, "i_1", "A i_1 a_1", "B a_1")
        builder.contraction(r, "i_1 i_2", f"{t} i_1", f"{t} i_2")
        first = use(t, "i_1", use("A", "i_1 a_1"), use("B", "a_1"))
        second = use(t, "i_2", use("A", "i_2 a_1"), use("B", "a_1"))
        builder.tree(
            f"t{suffix}",
            loop("i_1", None, loop("i_2", None, use(r, "i_1 i_2", first, second))),
        )
    return builder.finish()


def test_a_slice_read_without_its_block_is_demoted() -> None:
    # Without slots T is LoopLocal (each use-site's i index is bound), but T
    # is built once, sliced by the outer loop, and R also reads T(i_2), which
    # is not the outer loop's block: T is demoted to scatter in round 2, built
    # in a pass of its own and buffered in full (3 x 8 bytes).
    forest = square_forest()
    result = schedule_forest(forest, sizes=Sizing(forest))
    assert result.decisions.demoted == {
        ("T", 0): "read by @R without its block of loop instance 0"
    }
    assert result.decisions.hoisted == {}
    both = (bind("i_1", 0), bind("i_2", 1))
    assert result.schedule == Schedule(
        [
            Buffer("T", (), zero=False, bytes=3 * 8),
            LoopPass(
                0,
                "i",
                0,
                1,
                [
                    Build("T", (bind("i_1", 0),), demoted=(0,), bytes=8),
                    Write("T", accumulate=False),
                ],
            ),
            Buffer("R", (), zero=False, bytes=3 * 3 * 8),
            LoopPass(
                0,
                "i",
                1,
                1,
                [
                    LoopPass(
                        1,
                        "i",
                        0,
                        1,
                        [Build("R", both, bytes=8), Write("R", accumulate=False)],
                    )
                ],
            ),
            Output("t", "R"),
        ],
        rounds=2,
    )
    assert check_schedule(forest, result.schedule) == []


def rebuilt_partial_sum_forest() -> Forest:
    """``R(b,c) = P(b,c) T(c)`` with ``T(c) = sum_d Q(c,d) G(d)`` in
    ``b { c { d { T } R } }``, and a tree with no root."""
    builder = ForestBuilder("rebuilt").space("b", 2).space("c", 3).space("d", 2)
    builder.input("P", "b_1 c_1").input("Q", "c_1 d_1").input("G", "d_1")
    builder.contraction("T", "c_1", "Q c_1 d_1", "G d_1")
    builder.contraction("R", "b_1 c_1", "P b_1 c_1", "T c_1")
    t = loop("d_1", 2, use("T", "c_1", use("Q", "c_1 d_1"), use("G", "d_1")))
    r = use("R", "b_1 c_1", use("P", "b_1 c_1"), t)
    builder.tree("t0", loop("b_1", 0, loop("c_1", 1, r)))
    builder.tree("empty")
    return builder.finish()


def test_a_rebuilt_partial_sum_is_buffered_per_slice_of_the_loops_it_stays_in() -> None:
    # T is rebuilt per b iteration (kept fused with R's c slice), sliced by c
    # and summed over d: its buffer sits inside the c pass, sliced by c only
    # (the rebuilding b loop binds no mode of T). The rootless tree outputs
    # nothing.
    forest = rebuilt_partial_sum_forest()
    result = schedule_forest(forest, sizes=Sizing(forest), rebuild="fused")
    t = result.placements["T"]
    assert t.home == (0, 1, 2)
    assert [t.bindings[i].disposition for i in (0, 1, 2)] == [
        Disposition.REBUILD,
        Disposition.SLICE,
        Disposition.ACCUMULATE,
    ]
    t_slice = (bind("c_1", 1),)
    assert result.schedule == Schedule(
        [
            Buffer("R", (), zero=False, bytes=2 * 3 * 8),
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
                            Buffer("T", t_slice, zero=True, bytes=8),
                            LoopPass(
                                2,
                                "d",
                                0,
                                1,
                                [
                                    Build("T", t_slice, (bind("d_1", 2),), bytes=8),
                                    Write("T", accumulate=True),
                                ],
                            ),
                            Build("R", (bind("b_1", 0), bind("c_1", 1)), bytes=8),
                            Write("R", accumulate=False),
                        ],
                    )
                ],
            ),
            Output("t0", "R"),
            Output("empty", None),
        ],
        rounds=1,
    )


@pytest.mark.parametrize(("copies", "ellipsis"), [(1, False), (8, False), (9, True)])
def test_the_round_bound_lists_at_most_eight_pending_decisions(
    copies: int, ellipsis: bool
) -> None:
    # Each copy's T is demoted in round 1; with one round allowed, the error
    # lists the decisions, sorted, the first eight of them, then "...".
    forest = square_forest(copies)
    with pytest.raises(SchedulingError) as info:
        schedule_forest(forest, max_rounds=1)
    decided = sorted(
        f"@{name} on loop instance {forest.sites[forest.trees[k].root or 0].loops[0].instance}"
        for k, name in enumerate(f"T{'' if copies == 1 else k}" for k in range(copies))
    )
    assert str(info.value) == (
        "the demotion fixpoint was not reached within 1 rounds (max-rounds); "
        f"decided so far: {', '.join(decided[:8])}" + (" ..." if ellipsis else "")
    )


def test_hoisting_and_demotion_give_their_reasons() -> None:
    result = schedule_forest(rebuild_forest(True), rebuild="fused")
    assert result.decisions.hoisted == {
        ("T", 0): "read by the output of tree @t1 outside loop instance 0, which "
        "binds none of its modes"
    }
    assert result.decisions.demoted == {
        ("T", 1): "read by the output of tree @t1 outside the pass of loop "
        "instance 1 that builds it"
    }


def test_a_block_of_one_per_space_is_accepted() -> None:
    schedule = schedule_forest(inner_sum_forest(), block={"b": 1, "c": 1}).schedule
    loops = [item for item, _ in schedule.walk() if isinstance(item, LoopPass)]
    assert [(lp.space, lp.block) for lp in loops] == [("b", 1), ("c", 1)]


def outline(items: list[Item]) -> list[tuple[str, str | None]]:
    return [(type(i).__name__, getattr(i, "value", None)) for i in items]


def test_two_trees_on_one_fusion_slot_share_one_pass() -> None:
    # R reads the hoisted F and the slice W; Z, in another tree on the same
    # slot, reads inputs only. Nothing leaves the loop between them: one pass,
    # no needless split (F, built above the loop, is no barrier).
    builder = ForestBuilder("fused").space("Κ", 4).space("a", 2)
    builder.input("A", "Κ_1 a_1").input("B", "a_1").input("C", "a_1")
    builder.contraction("W", "Κ_1", "A Κ_1 a_1", "B a_1")
    builder.contraction("F", "", "B a_1", "C a_1")
    builder.contraction("R", "Κ_1", "W Κ_1", "F")
    builder.contraction("Z", "Κ_1", "A Κ_1 a_1", "C a_1")
    w = use("W", "Κ_1", use("A", "Κ_1 a_1"), use("B", "a_1"))
    f = use("F", "", use("B", "a_1"), use("C", "a_1"))
    z = use("Z", "Κ_1", use("A", "Κ_1 a_1"), use("C", "a_1"))
    builder.tree("t", loop("Κ_1", 0, use("R", "Κ_1", w, f)))
    builder.tree("z", loop("Κ_1", 0, z))
    schedule = schedule_forest(builder.finish()).schedule
    assert outline(schedule.items) == [
        ("Build", "F"),
        ("Buffer", "R"),
        ("Buffer", "Z"),
        ("LoopPass", None),
        ("Output", "R"),
        ("Output", "Z"),
    ]
    (only,) = (i for i in schedule.items if isinstance(i, LoopPass))
    assert outline(only.body) == [
        ("Build", "W"),
        ("Build", "R"),
        ("Write", "R"),
        ("Build", "Z"),
        ("Write", "Z"),
    ]
    assert schedule.rounds == 1


def test_a_value_carrying_another_label_of_the_space_is_built_above_the_loop() -> None:
    # T(i_2) under a loop over i_1: the loop binds none of T's modes (T is
    # LoopCarried on i, not invariant), so T is not in the loop: built once
    # above it, in full.
    builder = ForestBuilder("other").space("i", 3).space("a", 2)
    builder.input("A", "i_1").input("B", "i_1 a_1").input("C", "a_1")
    builder.contraction("T", "i_1", "B i_1 a_1", "C a_1")
    builder.contraction("P", "i_1 i_2", "A i_1", "T i_2")
    t = use("T", "i_2", use("B", "i_2 a_1"), use("C", "a_1"))
    builder.tree("t", loop("i_1", 0, use("P", "i_1 i_2", use("A", "i_1"), t)))
    forest = builder.finish()
    result = schedule_forest(forest, sizes=Sizing(forest))
    assert result.placements["T"].home == ()
    assert result.schedule.items[0] == Build("T", bytes=3 * 8)
    assert outline(result.schedule.items) == [
        ("Build", "T"),
        ("Buffer", "P"),
        ("LoopPass", None),
        ("Output", "P"),
    ]


def test_a_partial_sum_its_consumer_does_not_slice_leaves_the_outer_loop() -> None:
    # X(d) = sum_c Q(c,d) G(c) under b { c { X } Y(b,d) }: b binds none of X's
    # modes and no loop inside Y's home binds X, so X is hoisted above b (not
    # rebuilt per b iteration): its c loop runs once, before the b loop.
    builder = ForestBuilder("nokeep").space("b", 2).space("c", 3).space("d", 2)
    builder.input("P", "b_1 d_1").input("Q", "c_1 d_1").input("G", "c_1")
    builder.contraction("X", "d_1", "Q c_1 d_1", "G c_1")
    builder.contraction("Y", "b_1 d_1", "P b_1 d_1", "X d_1")
    x = loop("c_1", 1, use("X", "d_1", use("Q", "c_1 d_1"), use("G", "c_1")))
    builder.tree("t", loop("b_1", 0, use("Y", "b_1 d_1", use("P", "b_1 d_1"), x)))
    result = schedule_forest(builder.finish())
    assert result.placements["X"].home == (1,)
    assert result.decisions.hoisted == {}
    passes = [i for i in result.schedule.items if isinstance(i, LoopPass)]
    assert [(p.instance, p.space) for p in passes] == [(1, "c"), (0, "b")]
    assert outline(passes[0].body) == [("Build", "X"), ("Write", "X")]
    assert outline(passes[1].body) == [("Build", "Y"), ("Write", "Y")]


def test_a_value_is_rebuilt_under_two_outer_loops_binding_none_of_its_modes() -> None:
    # T(c) under b { e { c { R(b,e,c) = P(b,e,c) T(c) } } }: invariant on b and
    # e, sliced by c, which R's home shares: T is rebuilt per b and per e
    # iteration (two rebuilding loops, neither binding a mode).
    builder = ForestBuilder("twice").space("b", 2).space("e", 2).space("c", 3)
    builder.space("d", 2)
    builder.input("P", "b_1 e_1 c_1").input("Q", "c_1 d_1").input("G", "d_1")
    builder.contraction("T", "c_1", "Q c_1 d_1", "G d_1")
    builder.contraction("R", "b_1 e_1 c_1", "P b_1 e_1 c_1", "T c_1")
    t = use("T", "c_1", use("Q", "c_1 d_1"), use("G", "d_1"))
    r = use("R", "b_1 e_1 c_1", use("P", "b_1 e_1 c_1"), t)
    builder.tree("t", loop("b_1", 0, loop("e_1", 1, loop("c_1", 2, r))))
    result = schedule_forest(builder.finish(), rebuild="fused")
    placement = result.placements["T"]
    assert placement.home == (0, 1, 2)
    assert [placement.bindings[i].disposition for i in (0, 1, 2)] == [
        Disposition.REBUILD,
        Disposition.REBUILD,
        Disposition.SLICE,
    ]
    outer = next(i for i in result.schedule.items if isinstance(i, LoopPass))
    middle = outer.body[0]
    assert isinstance(middle, LoopPass)
    inner = middle.body[0]
    assert isinstance(inner, LoopPass)
    assert outline(inner.body) == [("Build", "T"), ("Build", "R"), ("Write", "R")]


def test_the_block_check_reads_past_a_factor_that_is_another_value() -> None:
    # R(i_1,i_2) = U(i_1) T(i_2), U(i_1) = T(i_1) C(i_1): T is built (sliced by
    # i_1) under U; R's second factor reads T at i_2, not the i_1 block, so T
    # is demoted although R's first factor is U.
    builder = ForestBuilder("second").space("i", 3).space("a", 2)
    builder.input("A", "i_1 a_1").input("B", "a_1").input("C", "i_1")
    builder.contraction("T", "i_1", "A i_1 a_1", "B a_1")
    builder.contraction("U", "i_1", "T i_1", "C i_1")
    builder.contraction("R", "i_1 i_2", "U i_1", "T i_2")
    first = use("T", "i_1", use("A", "i_1 a_1"), use("B", "a_1"))
    second = use("T", "i_2", use("A", "i_2 a_1"), use("B", "a_1"))
    u = use("U", "i_1", first, use("C", "i_1"))
    builder.tree(
        "t", loop("i_1", None, loop("i_2", None, use("R", "i_1 i_2", u, second)))
    )
    forest = builder.finish()
    result = schedule_forest(forest)
    assert result.decisions.demoted == {
        ("T", 0): "read by @R without its block of loop instance 0"
    }
    assert result.schedule.rounds == 2
    passes = [i for i in result.schedule.items if isinstance(i, LoopPass)]
    assert outline(passes[0].body) == [("Build", "T"), ("Write", "T")]
    assert outline(passes[1].body) == [("Build", "U"), ("LoopPass", None)]
    assert check_schedule(forest, result.schedule) == []
