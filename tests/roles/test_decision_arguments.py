"""The boundary check of ``decide_axis`` (and ``classify_axis``): each
parameter's refusal with its exact message, and the trusted entry point
deciding like the checked one."""

from __future__ import annotations

from typing import Any

import pytest

from axisflow.roles import Index, LoopRole
from axisflow.roles.decision import (
    Occurrence,
    classify_axis,
    decide_axis,
    decide_axis_trusted,
)

I_1 = Index.parse("i_1")
SPACE_I = Index.parse("i")
UNTYPED_DECIDE: Any = decide_axis


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (("i_1", [], SPACE_I, []), "carried must be a sequence of Index, got str"),
        ((b"i", [], SPACE_I, []), "carried must be a sequence of Index, got bytes"),
        (({I_1}, [], SPACE_I, []), "carried must be a sequence of Index, got set"),
        (
            (["i_1"], [], SPACE_I, []),
            "carried must hold Index objects (Index.parse('i_1')), got 'i_1'",
        ),
        (
            ([I_1], "j_1", SPACE_I, []),
            "contracted_below must be a sequence of Index, got str",
        ),
        (
            ([I_1], [None], SPACE_I, []),
            "contracted_below must hold Index objects (Index.parse('i_1')), got None",
        ),
        (([I_1], [], "i", []), "axis must be an Index (Index.parse('i')), got str"),
        (
            ([I_1], [], SPACE_I, "x"),
            "occurrences must be a sequence of Occurrence, got str",
        ),
        (
            ([I_1], [], SPACE_I, 3),
            "occurrences must be a sequence of Occurrence, got int",
        ),
        (
            ([I_1], [], SPACE_I, [(I_1,)]),
            "occurrences must hold Occurrence objects, got (Index('i_1'),)",
        ),
    ],
)
def test_each_parameter_is_checked_with_its_name(
    arguments: tuple[object, ...], message: str
) -> None:
    with pytest.raises(TypeError) as caught:
        UNTYPED_DECIDE(*arguments)
    assert str(caught.value) == message


def test_enclosing_slot_must_be_callable() -> None:
    with pytest.raises(TypeError) as caught:
        UNTYPED_DECIDE([I_1], [], SPACE_I, [], enclosing_slot=3)
    assert str(caught.value) == (
        "enclosing_slot must be a function (occurrence, loop) -> slot or None, got int"
    )


def test_the_trusted_entry_decides_like_the_checked_one() -> None:
    occurrences = [Occurrence([I_1], [I_1], [0]), Occurrence([I_1], [I_1], [1])]
    checked = decide_axis(
        [I_1], [], SPACE_I, occurrences, (), lambda o, i: o.slot_of(i)
    )
    trusted = decide_axis_trusted(
        (I_1,), (), SPACE_I, occurrences, (), lambda o, i: o.slot_of(i)
    )
    assert checked == trusted
    assert checked.role is LoopRole.LOOP_CARRIED
    assert classify_axis([I_1], [], SPACE_I, occurrences) is LoopRole.LOOP_LOCAL


UNTYPED_OCCURRENCE: Any = Occurrence


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((["i_1"], []), "Occurrence carried must be Index objects, got ('i_1',)"),
        (("i_1", []), "Occurrence carried must be Index objects, got ('i', '_', '1')"),
        (
            ([I_1], [I_1, "i"]),
            "Occurrence ectx must be Index objects, got (Index('i_1'), 'i')",
        ),
        (([I_1], [], (), 3), "Occurrence site must be a str, got 3"),
    ],
)
def test_an_occurrence_checks_its_fields(
    arguments: tuple[object, ...], message: str
) -> None:
    with pytest.raises(TypeError) as caught:
        UNTYPED_OCCURRENCE(*arguments)
    assert str(caught.value) == message
