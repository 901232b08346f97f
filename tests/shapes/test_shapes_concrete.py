"""The concrete fast path computes what the general path computes.

A session starts in the fast mode (``axisflow.shapes.concrete``): leaves with
concrete specs and ``pointwise``/``compose``/``transpose`` on them are solved
with NumPy's broadcasting rules and recorded; anything else replays them
through the general path. ``Session(concrete_fast_path=False)`` takes the
general path throughout. On random programs, mostly concrete with some open
leaves, einsums, reads of shapes, rewind windows and closings in between
(each of which makes the fast session leave the fast mode at a different
point), both sessions must print the same transcript: every tensor's closed
shape or the same error message, what each read returns, the variable
counter after every step, and, when the state is read, the same solver state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow.shapes import Session, ShapeError, Tensor
from axisflow.shapes.concrete import broadcast, fits
from axisflow.shapes.tensors import FastShape
from axisflow.shapes.terms import Size
from tests.shapes.test_shapes_fast_paths import without_log

SETTINGS = settings(max_examples=300, deadline=None)

SIZES = ("1", "1", "2", "3", "3", "3@b")
PROBES = ("describe", "dims", "state", "window", "close", "open-leaf", "einsum")


@dataclass(frozen=True)
class Step:
    """A leaf (``spec``), an operation on earlier tensors, or a probe."""

    op: str
    args: tuple[int, ...] = ()
    spec: str | None = None
    param: bool = False


@st.composite
def concrete_spec(draw: st.DrawFn) -> str:
    rows = [
        ",".join(draw(st.lists(st.sampled_from(SIZES), max_size=3))) for _ in range(3)
    ]
    return f"{rows[0]}|{rows[1]}->{rows[2]}"


@st.composite
def programs(draw: st.DrawFn) -> list[Step]:
    """Leaves and operations on them, sometimes a probe (never a probe at all
    in a third of the programs, so the fast mode also reaches closing)."""
    probes = draw(st.integers(0, 2)) > 0
    steps: list[Step] = []
    tensors = 0
    for _ in range(draw(st.integers(2, 14))):
        choice = draw(st.integers(0, 9))
        if tensors == 0 or choice < 3:
            steps.append(
                Step("leaf", spec=draw(concrete_spec()), param=draw(st.booleans()))
            )
            tensors += 1
            continue
        everything = st.integers(0, tensors - 1)
        if choice < 6:
            args = tuple(draw(st.lists(everything, min_size=1, max_size=3)))
            steps.append(Step("pointwise", args))
        elif choice < 8:
            steps.append(Step("compose", (draw(everything), draw(everything))))
        elif choice < 9 or not probes:
            steps.append(Step("transpose", (draw(everything),)))
        else:
            probe = draw(st.sampled_from(PROBES))
            if probe == "open-leaf":
                spec = draw(st.sampled_from((None, "...|->...", "...->3", "3|...")))
                steps.append(Step(probe, spec=spec, param=draw(st.booleans())))
                tensors += 1
                continue
            if probe == "einsum":
                steps.append(
                    Step(probe, (draw(everything),), spec="...|...->...i=>...i")
                )
                tensors += 1
                continue
            steps.append(Step(probe, (draw(everything),)))
            if probe == "window":
                tensors += 1
            continue
        tensors += 1
    return steps


def transcript(session: Session, steps: list[Step], *, close: bool = True) -> list[Any]:
    """What a user of the session sees, step by step (``close``: then closing)."""
    seen: list[Any] = []
    tensors: list[Tensor] = []
    try:
        for index, step in enumerate(steps):
            name = f"t{index}"
            args = [tensors[i] for i in step.args]
            op = step.op
            if op in ("leaf", "open-leaf"):
                make = session.param if step.param else session.leaf
                tensors.append(make(name, step.spec))
            elif op in ("pointwise", "compose", "transpose"):
                tensors.append(getattr(session, op)(name, *args))
            elif op == "einsum":
                assert step.spec is not None
                tensors.append(session.einsum(name, step.spec, *args))
            elif op == "describe":
                seen.append(args[0].shape.describe())
            elif op == "dims":
                try:
                    seen.append(args[0].shape.dims())
                except ShapeError as error:
                    seen.append(str(error))
            elif op == "state":
                seen.append(without_log(session.state()))
            elif op == "window":
                with session.rewind():
                    try:
                        session.pointwise(f"{name}w", *args)
                    except ShapeError as error:
                        seen.append(str(error))
                tensors.append(session.pointwise(name, *args))
            elif op == "close":
                session.close()
                seen.append([t.shape.dims() for t in tensors])
            seen.append(session.var_mark())
    except ShapeError as error:
        return [*seen, "stage 1 error", str(error), session.var_mark()]
    if not close:
        return seen
    try:
        session.close()
    except ShapeError as error:
        return [*seen, "closing error", str(error)]
    return [*seen, "closed", [t.shape.dims() for t in tensors], session.var_mark()]


@SETTINGS
@given(programs())
def test_the_fast_path_and_the_general_path_agree(steps: list[Step]) -> None:
    fast = transcript(Session(), steps)
    general = transcript(Session(concrete_fast_path=False), steps)
    assert fast == general


@SETTINGS
@given(programs())
def test_leaving_the_fast_mode_builds_the_general_state(steps: list[Step]) -> None:
    """Read at the end of Stage 1, the fast session's state (which makes it
    leave the fast mode) is the general session's, variable for variable."""
    states = []
    for session in (Session(), Session(concrete_fast_path=False)):
        outcome = transcript(session, steps, close=False)
        states.append((outcome, without_log(session.state())))
    assert states[0] == states[1]


HANDPICKED = {
    "bases differ in compose": [
        Step("leaf", spec="3@b->4"),
        Step("leaf", spec="3"),
        Step("compose", (0, 1)),
    ],
    "bases differ in pointwise": [
        Step("leaf", spec="2,3@b"),
        Step("leaf", spec="3"),
        Step("pointwise", (0, 1)),
    ],
    "a result's 1 meets a size": [
        Step("leaf", spec="1"),
        Step("pointwise", (0,)),
        Step("leaf", spec="5->2"),
        Step("compose", (2, 1)),
        Step("leaf", spec="7"),
        Step("pointwise", (1, 4)),
    ],
    "more axes than the closed input": [
        Step("leaf", spec="3->4"),
        Step("leaf", spec="2,3"),
        Step("pointwise", (1,)),
        Step("compose", (0, 2)),
    ],
    "65 axes": [Step("leaf", spec=",".join(["1"] * 65)), Step("pointwise", (0,))],
    "64 axes twice": [
        Step("leaf", spec=",".join(["1"] * 64)),
        Step("leaf", spec=",".join(["2"] * 63)),
        Step("pointwise", (1, 0)),
    ],
}


@pytest.mark.parametrize("name", sorted(HANDPICKED))
def test_handpicked_programs_agree(name: str) -> None:
    steps = HANDPICKED[name]
    fast = transcript(Session(), steps)
    assert fast == transcript(Session(concrete_fast_path=False), steps)


def test_the_fast_mode_is_taken_and_left() -> None:
    """A negative control: concrete operations make fast shapes (no solver
    state at all), an einsum makes the session leave the fast mode, and after
    a closing the fast mode is taken again."""
    s = Session()
    x = s.leaf("x", "8|->16")
    h = s.compose("h", s.leaf("w", "16->4"), x)
    assert isinstance(h.shape, FastShape)
    assert s._solver.row_subst == {}  # pyright: ignore[reportPrivateUsage]
    s.einsum("e", "...|...->...i=>...i", h)
    assert type(h.shape) is not FastShape
    assert s._solver.row_subst != {}  # pyright: ignore[reportPrivateUsage]
    s.close()
    assert h.shape.dims() == ((8,), (), (4,))
    y = s.pointwise("y", h, s.leaf("b", "4"))
    assert isinstance(y.shape, FastShape)
    general = Session(concrete_fast_path=False)
    assert type(general.leaf("x", "3").shape) is not FastShape


def test_an_error_of_the_fast_path_is_the_general_paths() -> None:
    """Detected without writing anything, re-raised by the general path."""
    for session in (Session(), Session(concrete_fast_path=False)):
        a, b = session.leaf("a", "3"), session.leaf("b", "5")
        with pytest.raises(ShapeError) as caught:
            session.pointwise("c", a, b)
        assert str(caught.value) == (
            "pointwise 'c' of a, b: output axes disagree: b.output has size 5, which "
            "does not broadcast to size 3 of c.output; only size 1 broadcasts"
        )
        assert session.tainted


def test_a_result_as_composes_left_operand_takes_the_general_path() -> None:
    """A result's open input row takes the axes ``a.input ⊑ b.output`` gives
    it on the general path; treating it as the concrete ``[]`` would be the
    error 'has more axes than h.input [], which is closed'."""
    s = Session()
    h = s.pointwise("h", s.leaf("x", "4"))
    y = s.compose("y", h, s.leaf("z", "3"))
    s.close()
    assert h.shape.dims() == ((), (3,), (4,))
    assert y.shape.dims() == ((), (), (4,))


def test_broadcast_counts_the_templates_of_the_general_path() -> None:
    three, five, one = Size(3), Size(5), Size(1)
    assert broadcast([(three,)]) == ((three,), 2)
    assert broadcast([(), (one, three)]) == ((one, three), 3)
    assert broadcast([(three,), (five, one)]) == ((five, three), 4)
    assert broadcast([(one,), (three,)]) == ((three,), 2)
    assert broadcast([(three,), (five,)]) is None
    assert broadcast([(Size(3, "b"),), (three,)]) is None
    assert fits((five, three), (three,))
    assert not fits((three,), (five, three))
    assert not fits((one,), (three,))
