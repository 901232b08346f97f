"""Decision-tree cases no other test pinned down (found by mutation testing,
issue 18): instance-aware slots of sliced protos, ``Occurrence.slot_of``, and
the exact evidence of every verdict."""

from axisflow import Index, LoopRole, Occurrence, classify_axis
from axisflow.roles import decide_axis, occurrence_slot


def ix(*labels: str) -> tuple[Index, ...]:
    return tuple(Index.parse(label) for label in labels)


def one(label: str) -> Index:
    return Index.parse(label)


I = one("i_1")  # noqa: E741 - the occupied axis


def test_two_sliced_protos_of_one_composite_have_their_own_slots() -> None:
    # a_1<i_1,i_2> with both protos sliced, under nested loops over i_1 (slot
    # 0) and i_2 (slot 1): two slots at one carried position. Keyed by the
    # carried position alone they would clash (slot 0 against slot 1).
    carried = ix("a_1<i_1,i_2>")
    sliced = ix("i_1", "i_2")
    nested = Occurrence(carried, ix("i_1", "i_2"), slots=(0, 1))
    assert classify_axis(carried, (), I, [nested], sliced, occurrence_slot) is (
        LoopRole.LOOP_LOCAL
    )
    again = Occurrence(carried, ix("i_1", "i_2"), slots=(0, 1))
    assert classify_axis(carried, (), I, [nested, again], sliced, occurrence_slot) is (
        LoopRole.LOOP_LOCAL
    )
    # The same protos read from the other loop instances: carried.
    crossed = Occurrence(carried, ix("i_1", "i_2"), slots=(1, 0))
    verdict = decide_axis(carried, (), I, [nested, crossed], sliced, occurrence_slot)
    assert verdict.role is LoopRole.LOOP_CARRIED
    assert verdict.occurrence == 1
    assert verdict.index == one("i_1")


def test_two_sliced_protos_with_explicit_pairings_have_their_own_slots() -> None:
    # The same with the use-site naming the value's proto modes explicitly.
    carried = ix("a_1<i_1,i_2>")
    sliced = ix("i_1", "i_2")
    pairs = ((one("i_1"), one("i_3")), (one("i_2"), one("i_4")))
    site = Occurrence(ix("a_1<i_3,i_4>"), ix("i_3", "i_4"), (0, 1), protos=pairs)
    assert classify_axis(carried, (), I, [site], sliced, occurrence_slot) is (
        LoopRole.LOOP_LOCAL
    )
    swapped = Occurrence(ix("a_1<i_3,i_4>"), ix("i_3", "i_4"), (1, 0), protos=pairs)
    verdict = decide_axis(carried, (), I, [site, swapped], sliced, occurrence_slot)
    assert verdict.role is LoopRole.LOOP_CARRIED
    assert verdict.index == one("i_3")
    # An unsliced proto mode of the frame is no slot; an other-type label
    # neither.
    assert classify_axis(carried, (), I, [site], ix("i_1"), occurrence_slot) is (
        LoopRole.LOOP_LOCAL
    )


def test_slot_of_an_index_no_enclosing_loop_binds_is_unknown() -> None:
    occurrence = Occurrence(ix("i_1"), ix("i_1", "a_1"), slots=(3, 4))
    assert occurrence.slot_of(one("i_1")) == 3
    assert occurrence.slot_of(one("a_1")) == 4
    assert occurrence.slot_of(one("i_2")) == -1
    assert Occurrence(ix("i_1"), ix("i_1")).slot_of(one("i_1")) == -1


def test_slot_of_takes_the_innermost_loop_binding_the_index() -> None:
    occurrence = Occurrence(ix("i_1"), ix("i_1", "a_1", "i_1"), slots=(2, 5, 7))
    assert occurrence.slot_of(one("i_1")) == 7
    assert occurrence_slot(occurrence, one("i_1")) == 7
    outermost = Occurrence(ix("i_1"), ix("i_1", "a_1"), slots=(2, 5))
    assert outermost.slot_of(one("i_1")) == 2


def test_trusted_occurrence_equals_the_checked_one() -> None:
    pairs = ((one("i_1"), one("i_2")),)
    trusted = Occurrence.trusted(ix("i_1"), ix("i_1"), (3,), "s", pairs)
    checked = Occurrence(ix("i_1"), ix("i_1"), [3], "s", pairs)
    assert trusted == checked
    assert (trusted.carried, trusted.ectx, trusted.slots) == (
        ix("i_1"),
        ix("i_1"),
        (3,),
    )
    assert (trusted.site, trusted.protos) == ("s", pairs)
    default = Occurrence.trusted(ix("i_1"), ix("i_1"))
    assert (default.slots, default.site, default.protos) == ((), "", None)
    plain = Occurrence(ix("i_1"), ix("i_1"))
    assert (plain.slots, plain.site, plain.protos) == ((), "", None)


def test_every_verdict_states_its_evidence() -> None:
    assert decide_axis(ix("a_1"), ix("i_3"), I, []) == decide_axis(
        ix("a_1"), ix("i_3"), I, []
    )
    reduction = decide_axis(ix("a_1"), ix("a_2", "i_3"), I, [])
    assert (reduction.role, reduction.reason, reduction.index) == (
        LoopRole.REDUCTION,
        "contracts i_3 at its own node",
        one("i_3"),
    )
    invariant = decide_axis(ix("a_1"), ix("a_2"), I, [])
    assert (invariant.role, invariant.reason, invariant.index) == (
        LoopRole.LOOP_INVARIANT,
        "neither carries nor contracts an index of i",
        None,
    )
    free = decide_axis(ix("i_1"), (), I, [Occurrence(ix("i_2"), ix("i_1"), site="s")])
    assert free.reason == "s carries i_2, bound by no enclosing loop of i"
    assert (free.occurrence, free.index) == (0, one("i_2"))
    unnamed = decide_axis(ix("i_1"), (), I, [Occurrence(ix("i_2"), ix("i_1"))])
    assert unnamed.reason == "use-site #0 carries i_2, bound by no enclosing loop of i"
    sites = [
        Occurrence(ix("i_1"), ix("i_1"), (3,)),
        Occurrence(ix("i_1"), ix("i_1"), (1,), site="reader"),
    ]
    crossed = decide_axis(ix("i_1"), (), I, sites, (), occurrence_slot)
    assert crossed.reason == (
        "reader reads i_1 from loop instance 1, but use-site #0 binds that slot "
        "in instance 3"
    )
    assert (crossed.occurrence, crossed.index) == (1, one("i_1"))
    conservative = decide_axis(
        ix("i_1"), (), I, [Occurrence(ix("a_1"), ix("i_1"), site="x")]
    )
    assert conservative.reason == (
        "x is under a loop of i but carries no i index "
        "(inconsistent relabelling; conservative answer)"
    )
    assert (conservative.occurrence, conservative.index) == (0, None)
    nowhere = decide_axis(ix("i_1"), (), I, [Occurrence(ix("i_1"), ix("a_1"))])
    assert nowhere.reason == (
        "no enclosing loop of i at any use-site: a free result index"
    )
    assert (nowhere.occurrence, nowhere.index) == (None, None)
    local = decide_axis(ix("i_1"), (), I, [Occurrence(ix("i_1"), ix("i_1"))])
    assert local.reason == (
        "every i slot is bound to an enclosing loop at every use-site"
    )
    assert (local.occurrence, local.index, local.details) == (None, None, ())


def test_a_later_unbound_site_decides_after_a_bound_one() -> None:
    # The slot table and the loop scan continue past a bound use-site.
    sites = [
        Occurrence(ix("i_1", "a_1"), ix("i_1"), (0,)),
        Occurrence(ix("i_1", "a_1"), ix("a_1")),  # no loop of i: skipped
        Occurrence(ix("i_1", "a_1"), ix("i_1"), (0,)),
        Occurrence(ix("i_5", "a_1"), ix("i_1"), (0,)),
    ]
    verdict = decide_axis(ix("i_1", "a_1"), (), I, sites, (), occurrence_slot)
    assert (verdict.role, verdict.occurrence, verdict.index) == (
        LoopRole.LOOP_CARRIED,
        3,
        one("i_5"),
    )


def test_a_same_type_composite_and_its_sliced_proto_are_two_slots() -> None:
    # i_5<i_2> carried, its proto i_2 sliced: the composite (bound by the
    # loop over i_5<i_2>, slot 0) and the proto (bound by the loop over i_2,
    # slot 1) are two slots at one carried position, with their own slots.
    carried = ix("i_5<i_2>")
    site = Occurrence(carried, ix("i_5<i_2>", "i_2"), slots=(0, 1))
    assert classify_axis(carried, (), I, [site, site], ix("i_2"), occurrence_slot) is (
        LoopRole.LOOP_LOCAL
    )
    other = Occurrence(carried, ix("i_5<i_2>", "i_2"), slots=(0, 2))
    verdict = decide_axis(carried, (), I, [site, other], ix("i_2"), occurrence_slot)
    assert (verdict.role, verdict.occurrence, verdict.index) == (
        LoopRole.LOOP_CARRIED,
        1,
        one("i_2"),
    )


def test_a_sliced_proto_of_another_type_is_no_slot_of_the_axis() -> None:
    # b_1<i_1,a_2> with both protos sliced, read as b_1<i_3,a_4> under a loop
    # over i_3 only: for the i axis the a proto is no slot, so LoopLocal.
    carried = ix("b_1<i_1,a_2>")
    pairs = ((one("i_1"), one("i_3")), (one("a_2"), one("a_4")))
    site = Occurrence(ix("b_1<i_3,a_4>"), ix("i_3"), protos=pairs)
    assert classify_axis(carried, (), I, [site], ix("i_1", "a_2")) is (
        LoopRole.LOOP_LOCAL
    )


def test_an_unknown_slot_skips_only_its_own_slot() -> None:
    # The first loop's slot is unknown (-1): its slot is compared by label
    # only, but the later slots of the same use-site are still checked.
    carried = ix("i_1", "i_2")
    first = Occurrence(carried, ix("i_1", "i_2"), slots=(-1, 5))
    second = Occurrence(carried, ix("i_1", "i_2"), slots=(-1, 6))
    verdict = decide_axis(carried, (), I, [first, second], (), occurrence_slot)
    assert (verdict.role, verdict.occurrence, verdict.index) == (
        LoopRole.LOOP_CARRIED,
        1,
        one("i_2"),
    )
    unbound = Occurrence(ix("i_1", "i_3"), ix("i_1"), slots=(-1,))
    verdict = decide_axis(ix("i_1", "i_3"), (), I, [unbound], (), occurrence_slot)
    assert (verdict.role, verdict.index) == (LoopRole.LOOP_CARRIED, one("i_3"))
