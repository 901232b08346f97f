"""Reading the constraints changes nothing the engine solves.

Every constraint takes one route into the solver; a session that keeps its
log (``Session(keep_log=True)``, and no concrete fast path then) and one that
does not must reach the same solver state after Stage 1, the same error, and
the same closed shapes on any program.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from axisflow.shapes import Session, ShapeError, Tensor
from tests.shapes.test_shapes_properties import (
    SETTINGS,
    Step,
    open_programs,
    programs,
    spec_text,
)


def build(session: Session, steps: list[Step]) -> tuple[Any, ...]:
    """Stage 1 and closing of ``steps``: the state after each, or the error."""
    tensors: dict[int, Tensor] = {}
    try:
        for index, step in enumerate(steps):
            name = f"t{index}"
            args = [tensors[i] for i in step.args]
            if step.op == "leaf":
                assert step.shape is not None
                spec = spec_text(step.shape) if step.pattern is None else step.pattern
                make = session.param if step.param else session.leaf
                tensors[index] = make(name, None if spec == "*" else spec)
            elif step.op == "einsum":
                assert step.spec is not None
                tensors[index] = session.einsum(name, step.spec, *args)
            else:
                tensors[index] = getattr(session, step.op)(name, *args)
    except ShapeError as error:
        return ("stage 1 error", str(error), without_log(session.state()))
    stage1 = without_log(session.state())
    try:
        session.close()
    except ShapeError as error:
        return ("closing error", stage1, str(error))
    return ("closed", stage1, [tensors[i].shape.dims() for i in range(len(steps))])


def without_log(state: dict[str, Any]) -> dict[str, Any]:
    """The session's state but its log (which only the general path keeps),
    with the shapes and references without their ``id``s and the error that
    tainted the session as its message."""
    kept = {key: value for key, value in state.items() if key != "log"}
    kept["taint_error"] = str(kept["taint_error"])
    for key in ("shapes", "refs"):
        kept[key] = tuple(entry[1:] for entry in kept[key])
    return kept


@SETTINGS
@given(st.one_of(programs(restricted=False), open_programs()))
def test_fast_paths_reach_the_general_paths_state(steps: list[Step]) -> None:
    assert build(Session(), steps) == build(Session(keep_log=True), steps)


def test_the_general_path_is_the_one_a_kept_log_takes() -> None:
    """A negative control: the log shows the general path ran (the constraints
    were built), the fast path leaves no trace of them."""
    kept, fast = Session(keep_log=True), Session()
    for session in (kept, fast):
        session.compose("y", session.leaf("w", "3->4"), session.leaf("x", "3"))
    assert {type(c).__name__ for c in kept.log} >= {"RowEq", "RowIneq"}
    assert list(fast.log) == []
