"""What the scheduler emits around the passes: the residual buffers first,
tree outputs added into their operator group, roots added straight into the
residual, and the operator steps last (rule 5 of
``axisflow/scheduling/scheduler.py``). Expected schedules are derived by hand
from those rules; each test compares the whole schedule."""

from __future__ import annotations

from axisflow.forest.builder import ForestBuilder, loop, use
from axisflow.forest.model import Forest
from axisflow.residual import Operator, OperatorGroup, ResidualLayout
from axisflow.roles.index import Index
from axisflow.scheduling.check import check_schedule
from axisflow.scheduling.memory import Sizing
from axisflow.scheduling.schedule import (
    Apply,
    Bind,
    Buffer,
    Build,
    LoopPass,
    Output,
    Residual,
    Schedule,
    Write,
)
from axisflow.scheduling.scheduler import Disposition, schedule_forest

J1, A1, I1 = Index.parse("j_1"), Index.parse("a_1"), Index.parse("i_1")


def four_trees() -> Forest:
    """A rootless tree ``c`` (a bare number) first, then ``t0``: ``V(j)`` in a
    loop over j (slot 0), ``t1``: ``E(j) = sum_i P(i,j) Q(i)`` in a loop over
    i (slot 1), and ``t2``: ``W(j)`` in no loop. Every tree carries j_1."""
    builder = ForestBuilder("res").space("j", 3).space("a", 2).space("i", 4)
    builder.input("A", "j_1 a_1").input("B", "a_1")
    builder.input("P", "i_1 j_1").input("Q", "i_1")
    builder.contraction("V", "j_1", "A j_1 a_1", "B a_1")
    builder.contraction("E", "j_1", "P i_1 j_1", "Q i_1")
    builder.contraction("W", "j_1", "A j_1 a_1", "B a_1")
    builder.tree("c", coeff=2)
    v = use("V", "j_1", use("A", "j_1 a_1"), use("B", "a_1"))
    builder.tree("t0", loop("j_1", 0, v))
    e = use("E", "j_1", use("P", "i_1 j_1"), use("Q", "i_1"))
    builder.tree("t1", loop("i_1", 1, e))
    builder.tree("t2", use("W", "j_1", use("A", "j_1 a_1"), use("B", "a_1")))
    return builder.finish()


SYMMETRIZER = Operator.make("Ŝ", [J1], [A1])


def test_roots_that_leave_their_loop_are_added_straight_into_their_group() -> None:
    # Group 0 (t0) has an operator, group 1 (c, t1, t2) none. The residual
    # buffers (3 elements of 8 bytes each) come first; V (a slice of j,
    # blocks of 2) and E (a partial sum over i) would need a buffer to leave
    # their loops, but only their tree's output reads them: their pieces are
    # written into the residual inside the loop (Write with the group and the
    # tree), and the outputs say so (direct). W, built outside any loop, has
    # no buffer to save: a plain build whose output adds it into group 1.
    # The rootless c adds its number into group 1. Then group 0's operator
    # in place, then group 1 (no operator) added into group 0.
    forest = four_trees()
    layout = ResidualLayout(
        (J1,),
        (J1,),
        (OperatorGroup((SYMMETRIZER,), (1,)), OperatorGroup((), (0, 2, 3))),
    )
    result = schedule_forest(
        forest, block={"j": 2}, sizes=Sizing(forest), residual=layout
    )
    assert result.schedule == Schedule(
        [
            Residual(0, (J1,), 3 * 8),
            Residual(1, (J1,), 3 * 8),
            Output("c", None, into=1, direct=False),
            LoopPass(
                0,
                "j",
                0,
                2,
                [
                    Build("V", (Bind(J1, 0),), bytes=2 * 8),
                    Write("V", accumulate=False, into=0, tree="t0"),
                ],
            ),
            Output("t0", "V", into=0, direct=True),
            LoopPass(
                1,
                "i",
                0,
                1,
                [
                    Build("E", (), (Bind(I1, 1),), bytes=3 * 8),
                    Write("E", accumulate=True, into=1, tree="t1"),
                ],
            ),
            Output("t1", "E", into=1, direct=True),
            Build("W", bytes=3 * 8),
            Output("t2", "W", into=1, direct=False),
            Apply(0, (SYMMETRIZER,), 3 * 8),
            Apply(1, (), 3 * 8),
        ],
        rounds=1,
    )
    assert result.placements["V"].bindings[0].disposition is Disposition.SCATTER
    assert result.placements["E"].bindings[1].disposition is Disposition.ACCUMULATE
    assert result.placements["W"].home == ()
    assert check_schedule(forest, result.schedule) == []


def test_without_a_residual_the_same_roots_get_buffers() -> None:
    # The same forest without a layout: no residual items, no operator
    # steps, V and E buffered in full before their loops (E zeroed), plain
    # outputs.
    forest = four_trees()
    result = schedule_forest(forest, block={"j": 2}, sizes=Sizing(forest))
    assert result.schedule == Schedule(
        [
            Output("c", None),
            Buffer("V", (), zero=False, bytes=3 * 8),
            LoopPass(
                0,
                "j",
                0,
                2,
                [
                    Build("V", (Bind(J1, 0),), bytes=2 * 8),
                    Write("V", accumulate=False),
                ],
            ),
            Output("t0", "V"),
            Buffer("E", (), zero=True, bytes=3 * 8),
            LoopPass(
                1,
                "i",
                0,
                1,
                [
                    Build("E", (), (Bind(I1, 1),), bytes=3 * 8),
                    Write("E", accumulate=True),
                ],
            ),
            Output("t1", "E"),
            Build("W", bytes=3 * 8),
            Output("t2", "W"),
        ],
        rounds=1,
    )


def test_a_root_another_value_reads_keeps_its_buffer() -> None:
    # V is t0's root and also a factor of U (t1's root) in the same loop:
    # read by more than its tree's output, it keeps a buffer (demoted from a
    # slice, since t0's output reads it outside its pass) and its output adds
    # the buffer into the residual. U, read by its output only, goes straight
    # into the residual from the second pass. One group without operators:
    # no operator step at all.
    builder = ForestBuilder("shared").space("j", 3).space("a", 2)
    builder.input("A", "j_1 a_1").input("B", "a_1").input("C", "j_1")
    builder.contraction("V", "j_1", "A j_1 a_1", "B a_1")
    builder.contraction("U", "j_1", "V j_1", "C j_1")
    v = use("V", "j_1", use("A", "j_1 a_1"), use("B", "a_1"))
    builder.tree("t0", loop("j_1", 0, v))
    builder.tree("t1", loop("j_1", 0, use("U", "j_1", v, use("C", "j_1"))))
    forest = builder.finish()
    layout = ResidualLayout((J1,), (J1,), (OperatorGroup((), (0, 1)),))
    result = schedule_forest(forest, sizes=Sizing(forest), residual=layout)
    assert result.schedule == Schedule(
        [
            Residual(0, (J1,), 3 * 8),
            Buffer("V", (), zero=False, bytes=3 * 8),
            LoopPass(
                0,
                "j",
                0,
                1,
                [
                    Build("V", (Bind(J1, 0),), demoted=(0,), bytes=8),
                    Write("V", accumulate=False),
                ],
            ),
            Output("t0", "V", into=0, direct=False),
            LoopPass(
                0,
                "j",
                1,
                1,
                [
                    Build("U", (Bind(J1, 0),), bytes=8),
                    Write("U", accumulate=False, into=0, tree="t1"),
                ],
            ),
            Output("t1", "U", into=0, direct=True),
        ],
        rounds=2,
    )
    assert result.decisions.demoted == {
        ("V", 0): "read by the output of tree @t0 outside the pass of loop "
        "instance 0 that builds it"
    }
    assert check_schedule(forest, result.schedule) == []
