"""The scheduler's stage barriers and its fixpoint rounds (rules 2 and 3 of
``axisflow/scheduling/scheduler.py``): loops of one fusion slot split where a
value crosses to another loop and back, a sliced value that joins its
readers' pass only when they are all in its own loop, and rounds whose new
decision is a lone hoist, or comes before checks that decide nothing.
Expected schedules are derived by hand from those rules."""

from __future__ import annotations

from axisflow.forest.builder import ForestBuilder, loop, use
from axisflow.forest.model import Forest
from axisflow.roles.decision import LoopRole
from axisflow.scheduling.check import check_schedule
from axisflow.scheduling.schedule import Item, LoopPass
from axisflow.scheduling.scheduler import Disposition, schedule_forest

Outline = list[object]


def outline(items: list[Item]) -> Outline:
    """Each item as (kind, value), a pass as (instance, number, its body)."""
    found: Outline = []
    for item in items:
        if isinstance(item, LoopPass):
            found.append((item.instance, item.number, outline(item.body)))
        else:
            found.append((type(item).__name__, getattr(item, "value", None)))
    return found


def test_a_value_crossing_to_another_loop_and_back_splits_the_first_loop() -> None:
    # X(j) is built in slot 0 (t0), Y(j) = X(j) C(j) in slot 1 (t1), and
    # Z(j) = Y(j) D(j) in slot 0 again (t2). Each edge from one loop to the
    # other starts a new stage, so slot 0 runs twice, before and after the
    # slot-1 pass: X's pass, Y's pass, Z's pass (without that barrier X and Z
    # would share one unit that both feeds and reads Y's).
    builder = ForestBuilder("cross").space("j", 3).space("a", 2)
    builder.input("A", "j_1 a_1").input("B", "a_1")
    builder.input("C", "j_1").input("D", "j_1")
    builder.contraction("X", "j_1", "A j_1 a_1", "B a_1")
    builder.contraction("Y", "j_1", "X j_1", "C j_1")
    builder.contraction("Z", "j_1", "Y j_1", "D j_1")
    x = use("X", "j_1", use("A", "j_1 a_1"), use("B", "a_1"))
    y = use("Y", "j_1", x, use("C", "j_1"))
    builder.tree("t0", loop("j_1", 0, x))
    builder.tree("t1", loop("j_1", 1, y))
    builder.tree("t2", loop("j_1", 0, use("Z", "j_1", y, use("D", "j_1"))))
    forest = builder.finish()
    result = schedule_forest(forest)
    assert outline(result.schedule.items) == [
        ("Buffer", "X"),
        (0, 0, [("Build", "X"), ("Write", "X")]),
        ("Output", "X"),
        ("Buffer", "Y"),
        (1, 0, [("Build", "Y"), ("Write", "Y")]),
        ("Output", "Y"),
        ("Buffer", "Z"),
        (0, 1, [("Build", "Z"), ("Write", "Z")]),
        ("Output", "Z"),
    ]
    assert {name: p.home for name, p in result.placements.items()} == {
        "X": (0,),
        "Y": (1,),
        "Z": (0,),
    }
    assert result.decisions.demoted == {
        ("Y", 1): "read by the output of tree @t1 outside the pass of loop "
        "instance 1 that builds it"
    }
    assert result.schedule.rounds == 2
    assert check_schedule(forest, result.schedule) == []


def fan_builder() -> ForestBuilder:
    """In slot 0: F(j) = A(j,a) B(a), V(j) = F(j) C(j) (t0's root) and
    W(j) = F(j) D(j) (t1's root); in slot 1: Y(j) = V(j) E(j) (t2's root)."""
    builder = ForestBuilder("fan").space("j", 3).space("a", 2)
    builder.input("A", "j_1 a_1").input("B", "a_1")
    builder.input("C", "j_1").input("D", "j_1").input("E", "j_1")
    builder.contraction("F", "j_1", "A j_1 a_1", "B a_1")
    builder.contraction("V", "j_1", "F j_1", "C j_1")
    builder.contraction("W", "j_1", "F j_1", "D j_1")
    builder.contraction("Y", "j_1", "V j_1", "E j_1")
    f = use("F", "j_1", use("A", "j_1 a_1"), use("B", "a_1"))
    v = use("V", "j_1", f, use("C", "j_1"))
    builder.tree("t0", loop("j_1", 0, v))
    builder.tree("t1", loop("j_1", 0, use("W", "j_1", f, use("D", "j_1"))))
    builder.tree("t2", loop("j_1", 1, use("Y", "j_1", v, use("E", "j_1"))))
    return builder


def test_a_slice_read_only_outside_its_loop_keeps_its_stage() -> None:
    # The classifier calls F LoopCarried (V's use-site in slot 1 has F below
    # it); with F LoopLocal, as the built-once V reads it, F is a slice of
    # slot 0 read by V and W there. V, LoopLocal, is read only outside slot 0
    # in round 1 (t0's output, Y in slot 1): it stays in the first stage with
    # W, so F joins both in one pass and stays a slice; only V is demoted
    # (its readers are outside the pass). Had V joined its readers' later
    # stage, F would be read across two passes and demoted too.
    roles = dict(fan_builder().finish().roles)
    assert (roles[("F", "j")], roles[("V", "j")]) == (
        LoopRole.LOOP_CARRIED,
        LoopRole.LOOP_LOCAL,
    )
    roles[("F", "j")] = LoopRole.LOOP_LOCAL
    forest = fan_builder().finish(roles)
    result = schedule_forest(forest)
    assert outline(result.schedule.items) == [
        ("Buffer", "V"),
        ("Buffer", "W"),
        (
            0,
            0,
            [
                ("Build", "F"),
                ("Build", "V"),
                ("Write", "V"),
                ("Build", "W"),
                ("Write", "W"),
            ],
        ),
        ("Output", "V"),
        ("Output", "W"),
        ("Buffer", "Y"),
        (1, 0, [("Build", "Y"), ("Write", "Y")]),
        ("Output", "Y"),
    ]
    assert result.decisions.demoted == {
        ("V", 0): "read by the output of tree @t0 outside the pass of loop "
        "instance 0 that builds it"
    }
    assert result.placements["F"].bindings[0].disposition is Disposition.SLICE
    assert result.schedule.rounds == 2
    assert check_schedule(forest, result.schedule) == []


def scalar_hoist_forest() -> Forest:
    """``R(b,d) = P(b,d) T`` with ``T = sum_d X(d) Y(d)`` in ``b { d { R } }``
    (t0), and t1 reading T at top level."""
    builder = ForestBuilder("lone").space("b", 2).space("d", 3)
    builder.input("P", "b_1 d_1").input("X", "d_1").input("Y", "d_1")
    builder.contraction("T", "", "X d_1", "Y d_1")
    builder.contraction("R", "b_1 d_1", "P b_1 d_1", "T")
    t = use("T", "", use("X", "d_1"), use("Y", "d_1"))
    r = use("R", "b_1 d_1", use("P", "b_1 d_1"), t)
    builder.tree("t0", loop("b_1", 0, loop("d_1", 1, r)))
    builder.tree("t1", t)
    return builder.finish()


def test_a_round_whose_only_decision_is_a_hoist_is_followed_by_another() -> None:
    # Round 1: T, summed over d inside R's d loop, is rebuilt per b
    # iteration (b binds none of its modes, d binds it and is in R's home),
    # accumulating out of its own d pass before R's. t1 reads T outside b:
    # the round's one decision is hoisting T above b (its d loop accumulates,
    # nothing to demote), and the last check of the round, T's accumulation
    # leaving its d pass, decides nothing. Round 2 builds T once, in a d pass
    # of its own before the b loop.
    forest = scalar_hoist_forest()
    result = schedule_forest(forest, rebuild="fused")
    assert result.decisions.hoisted == {
        ("T", 0): "read by the output of tree @t1 outside loop instance 0, "
        "which binds none of its modes"
    }
    assert result.decisions.demoted == {}
    assert result.schedule.rounds == 2
    assert outline(result.schedule.items) == [
        ("Buffer", "T"),
        (1, 0, [("Build", "T"), ("Write", "T")]),
        ("Buffer", "R"),
        (0, 0, [(1, 1, [("Build", "R"), ("Write", "R")])]),
        ("Output", "R"),
        ("Output", "T"),
    ]
    t = result.placements["T"]
    assert t.home == (1,)
    assert t.bindings[1].disposition is Disposition.ACCUMULATE
    assert check_schedule(forest, result.schedule) == []


def test_a_demotion_followed_by_block_checks_that_decide_nothing() -> None:
    # R(i_1,i_2) = T(i_1) T(i_2), T(i) = sum_a S(i,a) B(a) with S built too,
    # in unslotted loops over i_1 and i_2. Round 1 demotes T (R reads it at
    # i_2, not the outer block); the check of S, read by T in its own pass,
    # comes after and decides nothing, which must not undo the round's
    # change. Round 2: T and S in the first pass (S stays a slice), R in a
    # second pass of the outer loop.
    builder = ForestBuilder("square").space("i", 3).space("a", 2)
    builder.input("A", "i_1 a_1").input("B", "a_1").input("C", "a_1")
    builder.contraction("S", "i_1 a_1", "A i_1 a_1", "C a_1")
    builder.contraction("T", "i_1", "S i_1 a_1", "B a_1")
    builder.contraction("R", "i_1 i_2", "T i_1", "T i_2")
    s1 = use("S", "i_1 a_1", use("A", "i_1 a_1"), use("C", "a_1"))
    s2 = use("S", "i_2 a_1", use("A", "i_2 a_1"), use("C", "a_1"))
    first = use("T", "i_1", s1, use("B", "a_1"))
    second = use("T", "i_2", s2, use("B", "a_1"))
    builder.tree(
        "t", loop("i_1", None, loop("i_2", None, use("R", "i_1 i_2", first, second)))
    )
    forest = builder.finish()
    result = schedule_forest(forest)
    assert result.decisions.demoted == {
        ("T", 0): "read by @R without its block of loop instance 0"
    }
    assert result.decisions.hoisted == {}
    assert result.schedule.rounds == 2
    assert outline(result.schedule.items) == [
        ("Buffer", "T"),
        (0, 0, [("Build", "S"), ("Build", "T"), ("Write", "T")]),
        ("Buffer", "R"),
        (0, 1, [(1, 0, [("Build", "R"), ("Write", "R")])]),
        ("Output", "R"),
    ]
    assert result.placements["S"].bindings[0].disposition is Disposition.SLICE
    assert check_schedule(forest, result.schedule) == []
