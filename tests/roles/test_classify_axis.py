"""Every branch of the loop-role decision tree (batching note, section 4)."""

from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow import Index, LoopRole, Occurrence, classify_axis
from axisflow.roles import decide_axis, occurrence_slot


def ix(*labels: str) -> tuple[Index, ...]:
    return tuple(Index.parse(label) for label in labels)


def one(label: str) -> Index:
    return Index.parse(label)


I = one("i_1")  # noqa: E741 - the occupied axis
KAPPA = one("Κ_1")


def test_loop_role_values() -> None:
    assert [role.value for role in LoopRole] == [
        "loop_local",
        "reduction",
        "loop_carried",
        "loop_invariant",
    ]
    assert LoopRole("reduction") is LoopRole.REDUCTION


def test_reduction_when_contracted_at_own_node() -> None:
    role = classify_axis(
        ix("a_1"), ix("Κ_3"), KAPPA, [Occurrence(ix("a_1"), ix("Κ_3"))]
    )
    assert role is LoopRole.REDUCTION


def test_invariant_when_neither_carried_nor_contracted() -> None:
    occurrences = [Occurrence(ix("a_1", "a_2"), ix("i_1"))]
    assert classify_axis(ix("a_1", "a_2"), ix("b_1"), I, occurrences) is (
        LoopRole.LOOP_INVARIANT
    )


def test_axis_compared_by_type_not_identity() -> None:
    # The axis label i_9 appears nowhere; only its type matters.
    occurrences = [Occurrence(ix("i_1"), ix("i_1"))]
    assert classify_axis(ix("i_1"), (), one("i_9"), occurrences) is LoopRole.LOOP_LOCAL


def test_local_when_bound_at_the_only_occurrence() -> None:
    occurrences = [Occurrence(ix("i_1", "a_1"), ix("i_1"))]
    assert classify_axis(ix("i_1", "a_1"), (), I, occurrences) is LoopRole.LOOP_LOCAL


def test_carried_when_free_at_one_of_several_occurrences() -> None:
    occurrences = [
        Occurrence(ix("i_1", "a_1"), ix("i_1")),
        Occurrence(ix("i_2", "a_1"), ix("i_2")),
        Occurrence(ix("i_3", "a_1"), ix("i_4")),  # cross-iteration read
    ]
    verdict = decide_axis(ix("i_1", "a_1"), (), I, occurrences)
    assert verdict.role is LoopRole.LOOP_CARRIED
    assert verdict.occurrence == 2
    assert verdict.index == one("i_3")


def test_local_at_every_one_of_several_occurrences() -> None:
    occurrences = [
        Occurrence(ix("i_1", "a_1"), ix("i_1")),
        Occurrence(ix("i_5", "a_2"), ix("Κ_1", "i_5")),
    ]
    assert classify_axis(ix("i_1", "a_1"), (), I, occurrences) is LoopRole.LOOP_LOCAL


def test_nested_same_space_loops_each_binding_a_carried_index() -> None:
    # An outer product carrying i_3 and i_4 under loops over i_3 and i_4.
    occurrences = [Occurrence(ix("i_3", "i_4"), ix("i_3", "i_4"))]
    assert classify_axis(ix("i_3", "i_4"), (), I, occurrences) is LoopRole.LOOP_LOCAL


def test_lockstep_slot_beside_a_free_one_is_carried() -> None:
    occurrences = [Occurrence(ix("i_3", "i_4"), ix("i_3"))]
    verdict = decide_axis(ix("i_3", "i_4"), (), I, occurrences)
    assert verdict.role is LoopRole.LOOP_CARRIED
    assert verdict.index == one("i_4")


def test_no_same_type_loop_anywhere_is_carried() -> None:
    occurrences = [Occurrence(ix("i_1"), ix("Κ_1")), Occurrence(ix("i_1"), ())]
    verdict = decide_axis(ix("i_1"), (), I, occurrences)
    assert verdict.role is LoopRole.LOOP_CARRIED
    assert "no enclosing loop" in verdict.reason


def test_no_occurrences_is_carried() -> None:
    assert classify_axis(ix("i_1"), (), I, []) is LoopRole.LOOP_CARRIED


def test_no_occurrences_without_carried_index_follows_q1() -> None:
    assert classify_axis(ix("a_1"), (), I, []) is LoopRole.LOOP_INVARIANT
    assert classify_axis(ix("a_1"), ix("i_2"), I, []) is LoopRole.REDUCTION


def test_occurrences_without_same_type_loop_are_skipped() -> None:
    occurrences = [
        Occurrence(ix("i_1"), ()),  # a root: skipped
        Occurrence(ix("i_2"), ix("a_1")),  # other type: skipped
        Occurrence(ix("i_3"), ix("i_3")),
    ]
    assert classify_axis(ix("i_1"), (), I, occurrences) is LoopRole.LOOP_LOCAL


def test_conservative_case_occurrence_without_same_type_index() -> None:
    # Only possible with inconsistent relabelling: under a loop of i but
    # carrying no i index at this occurrence.
    occurrences = [
        Occurrence(ix("i_1"), ix("i_1")),
        Occurrence(ix("a_7"), ix("i_2")),
    ]
    verdict = decide_axis(ix("i_1"), (), I, occurrences)
    assert verdict.role is LoopRole.LOOP_CARRIED
    assert verdict.occurrence == 1
    assert "conservative" in verdict.reason


def test_proto_aware_equality_of_bindings() -> None:
    bound = [Occurrence(ix("a_1<i_1,i_2>"), ix("a_1<i_2,i_1>"))]
    assert classify_axis(ix("a_1<i_1,i_2>"), (), one("a_1"), bound) is (
        LoopRole.LOOP_LOCAL
    )
    other_protos = [Occurrence(ix("a_1<i_1,i_2>"), ix("a_1<i_1,i_3>"))]
    assert classify_axis(ix("a_1<i_1,i_2>"), (), one("a_1"), other_protos) is (
        LoopRole.LOOP_CARRIED
    )
    plain_loop = [Occurrence(ix("a_1<i_1>"), ix("a_1"))]
    assert classify_axis(ix("a_1<i_1>"), (), one("a_1"), plain_loop) is (
        LoopRole.LOOP_CARRIED
    )


def test_instance_awareness_sibling_nests_are_carried() -> None:
    # Built per batch in its own nest (slot 0) and read by a sibling nest over
    # the same space under the same label (slot 1).
    occurrences = [
        Occurrence(ix("i_1", "i_2", "a_1", "a_2"), ix("i_1"), slots=(0,)),
        Occurrence(ix("i_1", "i_2", "a_1", "a_2"), ix("i_1"), slots=(1,)),
    ]
    carried = ix("i_1", "i_2", "a_1", "a_2")
    occurrences_free_i2 = [
        Occurrence(o.carried[:1] + o.carried[2:], o.ectx, o.slots) for o in occurrences
    ]
    carried_one = carried[:1] + carried[2:]
    # Without slots the label matches at both: LoopLocal.
    assert classify_axis(carried_one, (), I, occurrences_free_i2) is LoopRole.LOOP_LOCAL
    verdict = decide_axis(carried_one, (), I, occurrences_free_i2, (), occurrence_slot)
    assert verdict.role is LoopRole.LOOP_CARRIED
    assert verdict.occurrence == 1
    assert "instance 1" in verdict.reason and "instance 0" in verdict.reason


def test_instance_awareness_same_slot_is_local() -> None:
    occurrences = [
        Occurrence(ix("i_1"), ix("i_1"), slots=(3,)),
        Occurrence(ix("i_4"), ix("i_4"), slots=(3,)),
    ]
    assert classify_axis(ix("i_1"), (), I, occurrences, (), occurrence_slot) is (
        LoopRole.LOOP_LOCAL
    )


def test_instance_awareness_unknown_slots_fall_back_to_labels() -> None:
    occurrences = [
        Occurrence(ix("i_1"), ix("i_1"), slots=(-1,)),
        Occurrence(ix("i_1"), ix("i_1"), slots=(5,)),
    ]
    assert classify_axis(ix("i_1"), (), I, occurrences, (), occurrence_slot) is (
        LoopRole.LOOP_LOCAL
    )


def test_instance_awareness_is_per_position_not_per_type() -> None:
    # Nested loops of one space have distinct slots by design: slot 0 binds
    # position 0 and slot 1 binds position 1 at every occurrence.
    occurrences = [
        Occurrence(ix("i_3", "i_4"), ix("i_3", "i_4"), slots=(0, 1)),
        Occurrence(ix("i_5", "i_6"), ix("i_5", "i_6"), slots=(0, 1)),
    ]
    assert classify_axis(ix("i_3", "i_4"), (), I, occurrences, (), occurrence_slot) is (
        LoopRole.LOOP_LOCAL
    )
    swapped = [
        Occurrence(ix("i_3", "i_4"), ix("i_3", "i_4"), slots=(0, 1)),
        Occurrence(ix("i_5", "i_6"), ix("i_6", "i_5"), slots=(0, 1)),
    ]
    assert classify_axis(ix("i_3", "i_4"), (), I, swapped, (), occurrence_slot) is (
        LoopRole.LOOP_CARRIED
    )


def test_caller_supplied_enclosing_slot_function() -> None:
    calls: list[tuple[Occurrence, Index]] = []

    def slot(occurrence: Occurrence, loop_index: Index) -> int:
        calls.append((occurrence, loop_index))
        return 7 if occurrence.carried[0] == one("i_1") else 8

    occurrences = [Occurrence(ix("i_1"), ix("i_1")), Occurrence(ix("i_2"), ix("i_2"))]
    assert classify_axis(ix("i_1"), (), I, occurrences, (), slot) is (
        LoopRole.LOOP_CARRIED
    )
    assert calls == [(occurrences[0], one("i_1")), (occurrences[1], one("i_2"))]


def test_sliced_rule_for_proto_indices() -> None:
    # A value carrying only a_1<i_1,i_2> under a loop over i_1.
    carried = ix("a_1<i_1,i_2>")
    occurrences = [Occurrence(carried, ix("i_1"))]
    # With sliced empty the tree above holds unchanged: no i slot.
    assert classify_axis(carried, (), I, occurrences) is LoopRole.LOOP_INVARIANT
    assert classify_axis(carried, ix("i_5"), I, occurrences) is LoopRole.REDUCTION
    # i_1 sliced: the proto counts as an i slot, bound by the loop.
    assert classify_axis(carried, (), I, occurrences, ix("i_1")) is LoopRole.LOOP_LOCAL
    # i_1 and i_2 sliced: i_2 is a slot no loop binds.
    verdict = decide_axis(carried, (), I, occurrences, ix("i_1", "i_2"))
    assert verdict.role is LoopRole.LOOP_CARRIED
    assert verdict.index == one("i_2")


def test_sliced_rule_reaches_nested_protos() -> None:
    carried = ix("a_1<i_5<i_2>>")
    occurrences = [Occurrence(carried, ix("i_2"))]
    assert classify_axis(carried, (), I, occurrences, ix("i_2")) is LoopRole.LOOP_LOCAL
    assert classify_axis(carried, (), I, occurrences, ix("i_5<i_2>", "i_2")) is (
        LoopRole.LOOP_CARRIED
    )


def test_plain_carried_counts_whether_or_not_sliced() -> None:
    occurrences = [Occurrence(ix("i_1"), ix("i_1"))]
    assert classify_axis(ix("i_1"), (), I, occurrences, ix("i_1")) is (
        LoopRole.LOOP_LOCAL
    )
    assert classify_axis(ix("i_1"), (), I, occurrences, ()) is LoopRole.LOOP_LOCAL


def test_occurrence_validates_slot_count() -> None:
    try:
        Occurrence(ix("i_1"), ix("i_1", "i_2"), slots=(0,))
    except ValueError as error:
        assert "2 enclosing loops but 1 slots" in str(error)
    else:
        raise AssertionError("a slot list of the wrong length must be refused")


# ---------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------

KEYS = ["i", "a", "Κ"]


@st.composite
def scenarios(
    draw: st.DrawFn,
) -> tuple[tuple[Index, ...], tuple[Index, ...], Index, list[Occurrence]]:
    def label(key: str) -> Index:
        return Index(key, draw(st.integers(1, 4)))

    carried = tuple(
        dict.fromkeys(
            label(draw(st.sampled_from(KEYS))) for _ in range(draw(st.integers(0, 3)))
        )
    )
    contracted = tuple(
        label(draw(st.sampled_from(KEYS))) for _ in range(draw(st.integers(0, 2)))
    )
    axis = label(draw(st.sampled_from(KEYS)))
    occurrences = []
    for _ in range(draw(st.integers(0, 4))):
        occ_carried = tuple(label(c.base_key) for c in carried)
        ectx = tuple(
            label(draw(st.sampled_from(KEYS))) for _ in range(draw(st.integers(0, 3)))
        )
        slots = tuple(draw(st.integers(-1, 1)) for _ in ectx)
        occurrences.append(Occurrence(occ_carried, ectx, slots))
    return carried, contracted, axis, occurrences


def reference_role(
    carried: Sequence[Index],
    contracted: Sequence[Index],
    axis: Index,
    occurrences: Sequence[Occurrence],
    instance_aware: bool,
) -> LoopRole:
    """The specification's sentences, transcribed directly (no sliced protos)."""
    kind = axis.base_key
    if not [c for c in carried if c.base_key == kind]:
        if [c for c in contracted if c.base_key == kind]:
            return LoopRole.REDUCTION
        return LoopRole.LOOP_INVARIANT
    relevant = [o for o in occurrences if any(e.base_key == kind for e in o.ectx)]
    if not relevant:
        return LoopRole.LOOP_CARRIED
    seen_slots: dict[int, set[int]] = {}
    for occurrence in relevant:
        same_type_loops = [e for e in occurrence.ectx if e.base_key == kind]
        slots_here = [
            (p, c) for p, c in enumerate(occurrence.carried) if c.base_key == kind
        ]
        if not slots_here:
            return LoopRole.LOOP_CARRIED
        for position, index in slots_here:
            if not any(index == loop for loop in same_type_loops):
                return LoopRole.LOOP_CARRIED
            if instance_aware:
                slot = occurrence.slot_of(index)
                if slot != -1:
                    seen_slots.setdefault(position, set()).add(slot)
    if any(len(slots) > 1 for slots in seen_slots.values()):
        return LoopRole.LOOP_CARRIED
    return LoopRole.LOOP_LOCAL


@settings(max_examples=300, deadline=None)
@given(scenarios(), st.booleans())
def test_matches_a_direct_transcription_of_the_specification(
    scenario, aware: bool
) -> None:  # type: ignore[no-untyped-def]
    carried, contracted, axis, occurrences = scenario
    expected = reference_role(carried, contracted, axis, occurrences, aware)
    slot_fn = occurrence_slot if aware else None
    assert (
        classify_axis(carried, contracted, axis, occurrences, (), slot_fn) is expected
    )


def rename_ordinals(index: Index, shift: dict[str, int]) -> Index:
    ordinal = (
        None if index.ordinal is None else index.ordinal * 3 + shift[index.base_key]
    )
    return Index(
        index.base_key, ordinal, (rename_ordinals(p, shift) for p in index.protos)
    )


@settings(max_examples=300, deadline=None)
@given(
    scenarios(),
    st.fixed_dictionaries({k: st.integers(0, 2) for k in KEYS}),
    st.booleans(),
)
def test_roles_unchanged_under_consistent_ordinal_renaming(
    scenario, shift, aware: bool
) -> None:  # type: ignore[no-untyped-def]
    carried, contracted, axis, occurrences = scenario
    slot_fn = occurrence_slot if aware else None
    before = classify_axis(carried, contracted, axis, occurrences, (), slot_fn)

    def r(indices: Sequence[Index]) -> tuple[Index, ...]:
        return tuple(rename_ordinals(i, shift) for i in indices)

    renamed = [Occurrence(r(o.carried), r(o.ectx), o.slots) for o in occurrences]
    after = classify_axis(
        r(carried), r(contracted), rename_ordinals(axis, shift), renamed, (), slot_fn
    )
    assert after is before
