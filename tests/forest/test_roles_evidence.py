"""Roles on the forest model: which proto modes are sliced, and the evidence
with and without ``explain`` (cases found by mutation testing, issue 18)."""

from __future__ import annotations

from axisflow.forest.builder import ForestBuilder, loop, use
from axisflow.forest.model import Forest
from axisflow.forest.roles import classify, describe_site
from axisflow.roles import Index, LoopRole


def composite_forest(y_label: str) -> Forest:
    """``R(a_1<i_1>, j) = X(a_1<i_1>) Y(j)`` under a loop over ``i_2``, with
    ``Y`` read as ``y_label``."""
    builder = ForestBuilder("comp").space("a", 2).space("i", 3)
    builder.input("X", "a_1<i_1>").input("Y", "i_1")
    builder.contraction("R", f"a_1<i_1> {y_label}", "X a_1<i_1>", f"Y {y_label}")
    r = use("R", f"a_1<i_1> {y_label}", use("X", "a_1<i_1>"), use("Y", y_label))
    builder.tree("t", loop("i_2", 0, r))
    return builder.finish()


def test_a_proto_mode_no_consumer_loop_binds_is_not_sliced() -> None:
    # The loop over i_2 does not bind X's proto i_1: the proto is no i slot,
    # so X neither carries nor contracts an i index.
    forest = composite_forest("i_2")
    assert forest.roles[("X", "i")] is LoopRole.LOOP_INVARIANT
    assert forest.roles[("Y", "i")] is LoopRole.LOOP_LOCAL
    assert forest.roles[("R", "i")] is LoopRole.LOOP_CARRIED


def test_use_sites_are_named_only_when_explaining() -> None:
    forest = composite_forest("i_3")
    loop_label = Index.parse("i_2")
    plain = classify(forest)["Y"][loop_label]
    assert plain.role is LoopRole.LOOP_CARRIED
    assert plain.reason == "use-site #0 carries i_3, bound by no enclosing loop of i"
    explained = classify(forest, explain=True)["Y"][loop_label]
    assert explained.reason == (
        "use-site 0 of @Y in tree @t [i_3] carries i_3, bound by no enclosing loop of i"
    )


def test_a_use_site_is_described_with_all_its_labels() -> None:
    forest = composite_forest("i_2")
    root = forest.trees[0].root
    assert root is not None
    assert describe_site(forest, forest.sites[root], 4) == (
        "use-site 4 of @R in tree @t [a_1<i_1>, i_2]"
    )


def mixed_forest(second_slot: int | None) -> Forest:
    """``X(i_1, j_1) = A(i_1) B(j_1)`` in two trees, each under one loop over
    ``i``: tree ``t``'s loop in slot 0, tree ``u``'s in ``second_slot``
    (``None``: unslotted, in a forest that has slots)."""
    builder = ForestBuilder("mixed").space("i", 3).space("j", 4)
    builder.input("A", "i_1").input("B", "j_1")
    builder.contraction("X", "i_1 j_1", "A i_1", "B j_1")
    for tree, label, slot in (("t", "1", 0), ("u", "2", second_slot)):
        x = use(
            "X", f"i_{label} j_{label}", use("A", f"i_{label}"), use("B", f"j_{label}")
        )
        builder.tree(tree, loop(f"i_{label}", slot, x))
    return builder.finish()


def test_an_unslotted_loop_in_a_slotted_forest_is_an_unknown_slot() -> None:
    # Tree u's loop has no slot: its slot is unknown (-1) and skipped, so A's
    # i slot is compared with slot 0 alone and A stays loop-local.
    forest = mixed_forest(None)
    assert forest.has_slots
    u_loop = forest.sites[forest.trees[1].root or 0].loops[0]
    assert (u_loop.instance, u_loop.slot) == (1, None)
    verdict = classify(forest)["A"][Index.parse("i_1")]
    assert verdict.role is LoopRole.LOOP_LOCAL
    assert (
        verdict.reason == "every i slot is bound to an enclosing loop at every use-site"
    )
    assert forest.roles[("B", "i")] is LoopRole.LOOP_INVARIANT
    # The root X has no enclosing loop at its use-sites: a free result index.
    assert forest.roles[("X", "i")] is LoopRole.LOOP_CARRIED


def test_two_slots_for_one_position_make_the_value_loop_carried() -> None:
    # The same forest with tree u's loop in slot 1 (and slot 0 in tree t):
    # A's i slot is read from two loop instances.
    verdict = classify(mixed_forest(1), explain=True)["A"][Index.parse("i_2")]
    assert verdict.role is LoopRole.LOOP_CARRIED
    assert verdict.reason == (
        "use-site 1 of @A in tree @u [i_2] reads i_2 from loop instance 1, but "
        "use-site 0 of @A in tree @t [i_1] binds that slot in instance 0"
    )


def sliced_in_two_instances() -> Forest:
    """``R(a_1<i_1>) = X(a_1<i_1>) Y(i_1)`` read in two trees under loops over
    ``i_1`` in different fusion slots: ``X``'s proto ``i_1`` is sliced (every
    consumer loop binds it), and the two use-sites read it from two loop
    instances."""
    builder = ForestBuilder("two").space("a", 2).space("i", 3)
    builder.input("X", "a_1<i_1>").input("Y", "i_1")
    builder.contraction("R", "a_1<i_1>", "X a_1<i_1>", "Y i_1")
    for tree, slot in (("t1", 0), ("t2", 1)):
        r = use("R", "a_1<i_1>", use("X", "a_1<i_1>"), use("Y", "i_1"))
        builder.tree(tree, loop("i_1", slot, r))
    return builder.finish()


def test_sliced_protos_name_use_sites_only_when_explaining() -> None:
    forest = sliced_in_two_instances()
    axis = Index.parse("i_1")
    plain = classify(forest)["X"][axis]
    assert plain.role is LoopRole.LOOP_CARRIED
    assert plain.reason == (
        "use-site #1 reads i_1 from loop instance 1, but use-site #0 binds that "
        "slot in instance 0"
    )
    explained = classify(forest, explain=True)["X"][axis]
    assert explained.reason == (
        "use-site 1 of @X in tree @t2 [a_1<i_1>] reads i_1 from loop instance 1, "
        "but use-site 0 of @X in tree @t1 [a_1<i_1>] binds that slot in instance 0"
    )


def test_a_value_read_under_two_loop_nests_leaves_the_nests_alone() -> None:
    # L is read under a loop over i_1 and under one over Κ_1; M only under a
    # loop nest equal to L's first: M's axes are that nest's alone.
    builder = ForestBuilder("nests").space("i", 2).space("Κ", 2)
    builder.input("L", "i_1 Κ_1").input("M", "i_1")
    builder.tree("t1", loop("i_1", 0, use("L", "i_1 Κ_1")))
    builder.tree("t2", loop("Κ_1", 1, use("L", "i_1 Κ_1")))
    builder.tree("t3", loop("i_1", 0, use("M", "i_1")))
    verdicts = classify(builder.finish())
    assert list(verdicts["L"]) == [Index.parse("i_1"), Index.parse("Κ_1")]
    assert list(verdicts["M"]) == [Index.parse("i_1")]


def test_a_role_is_decided_once_per_value_and_index_space(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Loops over i_1 and i_2 enclose X: one decision for the space i, one
    # verdict shared by both loop labels.
    from axisflow.forest import roles as roles_module

    decided: list[tuple[str, str]] = []
    decide = roles_module.decide_axis_trusted

    def counting(carried, contracted, axis, occurrences, sliced, slot_of):  # type: ignore[no-untyped-def]
        decided.append((str(carried), axis.base_key))
        return decide(carried, contracted, axis, occurrences, sliced, slot_of)

    builder = ForestBuilder("nested").space("i", 2).space("a", 2)
    builder.input("X", "i_1 i_2 a_1")
    builder.tree("t", loop("i_1", 0, loop("i_2", 1, use("X", "i_1 i_2 a_1"))))
    forest = builder.finish()
    monkeypatch.setattr(roles_module, "decide_axis_trusted", counting)
    found = classify(forest)["X"]
    assert decided == [("(Index('i_1'), Index('i_2'), Index('a_1'))", "i")]
    assert found[Index.parse("i_1")] is found[Index.parse("i_2")]
