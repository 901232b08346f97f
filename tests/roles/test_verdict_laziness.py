"""A verdict states its reason lazily (formatted when read), yet behaves as
the value it was: immutable, equal by role and evidence, hashable, the same
``repr``."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

from axisflow.roles import LoopRole, Verdict, decide_axis, occurrence_slot
from axisflow.roles.decision import Occurrence
from axisflow.roles.index import Index


def ix(*labels: str) -> tuple[Index, ...]:
    return tuple(Index.parse(label) for label in labels)


I = Index.parse("i_1")  # noqa: E741 - the axis


def decided() -> Verdict:
    return decide_axis(ix("i_1"), (), I, [Occurrence(ix("i_2"), ix("i_1"), site="s")])


def test_a_decided_verdict_equals_the_one_written_out() -> None:
    written = Verdict(
        LoopRole.LOOP_CARRIED,
        "s carries i_2, bound by no enclosing loop of i",
        occurrence=0,
        index=Index.parse("i_2"),
    )
    verdict = decided()
    assert verdict == written
    # Hashed as the frozen dataclass it was: by its fields, in their order.
    assert (
        hash(verdict)
        == hash(written)
        == hash((written.role, written.reason, written.occurrence, written.index, ()))
    )
    assert (
        repr(verdict)
        == repr(written)
        == (
            "Verdict(role=<LoopRole.LOOP_CARRIED: 'loop_carried'>, "
            "reason='s carries i_2, bound by no enclosing loop of i', occurrence=0, "
            "index=Index('i_2'), details=())"
        )
    )
    assert verdict != Verdict(
        LoopRole.LOOP_CARRIED, "another reason", 0, Index.parse("i_2")
    )
    assert verdict != (verdict.role, verdict.reason)


def test_the_reason_is_the_same_each_time_it_is_read() -> None:
    verdict = decided()
    assert (
        verdict.reason
        == verdict.reason
        == ("s carries i_2, bound by no enclosing loop of i")
    )


@pytest.mark.parametrize("field", ["role", "reason", "occurrence", "index", "details"])
def test_a_verdict_cannot_be_changed(field: str) -> None:
    verdict = decided()
    with pytest.raises(
        FrozenInstanceError, match=f"^cannot assign to field '{field}'$"
    ):
        setattr(verdict, field, None)
    with pytest.raises(FrozenInstanceError, match=f"^cannot delete field '{field}'$"):
        delattr(verdict, field)
    assert verdict.role is LoopRole.LOOP_CARRIED


def test_unnamed_use_sites_are_numbered_in_every_reason() -> None:
    # The reasons that name a use-site without a name give its position.
    crossed = decide_axis(
        ix("i_1"),
        (),
        I,
        [
            Occurrence(ix("i_1"), ix("i_1"), (3,)),
            Occurrence(ix("i_1"), ix("i_1"), (1,)),
        ],
        (),
        occurrence_slot,
    )
    assert crossed.reason == (
        "use-site #1 reads i_1 from loop instance 1, but use-site #0 binds that "
        "slot in instance 3"
    )
    unrelated = decide_axis(
        ix("i_1"),
        (),
        I,
        [Occurrence(ix("a_1"), ix("a_1")), Occurrence(ix("a_1"), ix("i_1"))],
    )
    assert unrelated.reason == (
        "use-site #1 is under a loop of i but carries no i index "
        "(inconsistent relabelling; conservative answer)"
    )
