"""Callers share one ``Occurrence`` between use-sites nothing tells apart
(``forest.roles`` does): the decision visits a repeated occurrence object
once. Repeating occurrences, as the same object or as an equal copy, never
changes a verdict or its evidence; and a single use-site, which cannot
disagree with another on a loop instance, never needs ``enclosing_slot``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow.roles import decide_axis, occurrence_slot
from axisflow.roles.decision import Occurrence
from axisflow.roles.index import Index
from tests.roles.test_classify_axis import scenarios


def evidence(verdict):  # type: ignore[no-untyped-def]
    return (verdict.role, verdict.reason, verdict.occurrence, verdict.index)


@settings(max_examples=300, deadline=None)
@given(scenarios(), st.booleans(), st.data())
def test_repeating_occurrences_changes_no_verdict(scenario, aware, data) -> None:  # type: ignore[no-untyped-def]
    carried, contracted, axis, occurrences = scenario
    slot_fn = occurrence_slot if aware else None
    before = decide_axis(carried, contracted, axis, occurrences, (), slot_fn)
    if not occurrences:
        return
    picks = data.draw(st.lists(st.integers(0, len(occurrences) - 1), max_size=6))
    shared = [*occurrences, *(occurrences[k] for k in picks)]
    copies = [
        *occurrences,
        *(
            Occurrence(
                occurrences[k].carried, occurrences[k].ectx, occurrences[k].slots
            )
            for k in picks
        ),
    ]
    assert evidence(decide_axis(carried, contracted, axis, shared, (), slot_fn)) == (
        evidence(before)
    )
    assert (
        decide_axis(carried, contracted, axis, copies, (), slot_fn).role is before.role
    )


def test_a_repeated_occurrence_is_named_by_its_first_position() -> None:
    i1, i2 = Index.parse("i_1"), Index.parse("i_2")
    bound = Occurrence((i1,), (i1,), (0,))
    unbound = Occurrence((i2,), (i1,), (0,))
    verdict = decide_axis((i1,), (), i1, [bound, bound, unbound, bound, unbound])
    assert (verdict.occurrence, verdict.index) == (2, i2)
    assert verdict.reason == "use-site #2 carries i_2, bound by no enclosing loop of i"


def test_one_use_site_never_asks_for_loop_instances() -> None:
    i1 = Index.parse("i_1")

    def no_instances(occurrence: Occurrence, index: Index) -> int:
        raise AssertionError("one use-site has no instance to compare")

    only = Occurrence((i1,), (i1,), (0,))
    assert decide_axis((i1,), (), i1, [only], (), no_instances).reason == (
        "every i slot is bound to an enclosing loop at every use-site"
    )
    other = Occurrence((i1,), (i1,), (1,))
    asked: list[int] = []

    def instances(occurrence: Occurrence, index: Index) -> int:
        asked.append(occurrence.slots[0])
        return occurrence.slots[0]

    crossed = decide_axis((i1,), (), i1, [only, other], (), instances)
    assert (crossed.occurrence, asked) == (1, [0, 1])


def test_a_repeated_occurrence_object_is_read_once() -> None:
    # The second and third mentions of ``first`` are not read again: the
    # slot function sees each distinct use-site once.
    i1 = Index.parse("i_1")
    first = Occurrence((i1,), (i1,), (0,), site="first")
    second = Occurrence((i1,), (i1,), (0,), site="second")
    asked: list[str] = []

    def instances(occurrence: Occurrence, index: Index) -> int:
        asked.append(occurrence.site)
        return occurrence.slots[0]

    verdict = decide_axis((i1,), (), i1, [first, first, second, first], (), instances)
    assert verdict.role.value == "loop_local"
    assert asked == ["first", "second"]


def test_sliced_protos_given_as_a_frozenset_count_as_slots() -> None:
    # A composite's sliced proto is a slot whether the sliced modes come as
    # a sequence or as a frozenset; without a slot of the axis's space the
    # value is invariant whatever its sliced modes.
    i1, kappa = Index.parse("i_1"), Index.parse("Κ_1")
    carried = (Index.parse("a_1<i_1>"),)
    bound = Occurrence(carried, (i1,), (0,))
    for sliced in ((i1,), frozenset({i1})):
        assert decide_axis(carried, (), i1, [bound], sliced).reason == (
            "every i slot is bound to an enclosing loop at every use-site"
        )
        other_space = decide_axis(
            carried, (), kappa, [Occurrence(carried, (kappa,))], sliced
        )
        assert (other_space.role.value, other_space.reason) == (
            "loop_invariant",
            "neither carries nor contracts an index of Κ",
        )
