"""Public functions check their arguments at the boundary: a wrong type or
value raises TypeError or ValueError naming the parameter and what it
expected, never a raw error from deep inside."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from axisflow import Index, Occurrence, classify_axis
from axisflow.shapes.session import Session


def _session_call(method: str, *args: Any, **kwargs: Any) -> Callable[[], object]:
    def call() -> object:
        session: Any = Session()
        x = session.leaf("x", "3")
        resolved = [x if arg == "<tensor>" else arg for arg in args]
        return getattr(session, method)(*resolved, **kwargs)

    return call


UNTYPED_INDEX: Any = Index
UNTYPED_CLASSIFY: Any = classify_axis
UNTYPED_OCCURRENCE: Any = Occurrence
I_1, SPACE_I = Index.parse("i_1"), Index.parse("i")

MISUSES: list[tuple[str, Callable[[], object], type[Exception], str]] = [
    ("Index.parse(None)", lambda: UNTYPED_INDEX.parse(None), TypeError, "text must"),
    ("Index('i', 1.5)", lambda: UNTYPED_INDEX("i", 1.5), TypeError, "ordinal must"),
    (
        "classify_axis(carried=['i_1'])",
        lambda: UNTYPED_CLASSIFY(["i_1"], [], SPACE_I, []),
        TypeError,
        "carried must hold Index objects (Index.parse('i_1')), got 'i_1'",
    ),
    (
        "classify_axis(carried='i_1')",
        lambda: UNTYPED_CLASSIFY("i_1", [], SPACE_I, []),
        TypeError,
        "carried must be a sequence of Index, got str",
    ),
    (
        "classify_axis(axis='i')",
        lambda: UNTYPED_CLASSIFY([I_1], [], "i", []),
        TypeError,
        "axis must be an Index (Index.parse('i')), got str",
    ),
    (
        "classify_axis(occurrences='x')",
        lambda: UNTYPED_CLASSIFY([I_1], [], SPACE_I, "x"),
        TypeError,
        "occurrences must be a sequence of Occurrence, got str",
    ),
    (
        "classify_axis(enclosing_slot=3)",
        lambda: UNTYPED_CLASSIFY([I_1], [], SPACE_I, [], enclosing_slot=3),
        TypeError,
        "enclosing_slot must be a function",
    ),
    (
        "Occurrence(['i_1'], [])",
        lambda: UNTYPED_OCCURRENCE(["i_1"], []),
        TypeError,
        "Occurrence carried must be Index objects, got ('i_1',)",
    ),
    (
        "Session.total_elems(None, 12)",
        _session_call("total_elems", None, 12),
        TypeError,
        "total_elems: tensor must be a Tensor, got None",
    ),
    (
        "Session.einsum(capture_dims=None)",
        _session_call(
            "einsum", "e", "i;i=>i", "<tensor>", "<tensor>", capture_dims=None
        ),
        TypeError,
        "capture_dims must be a sequence of dim_ref()s, got None",
    ),
]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [case[1:] for case in MISUSES],
    ids=[case[0] for case in MISUSES],
)
def test_misuse_is_refused_at_the_boundary(
    call: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=re.escape(message)):
        call()
