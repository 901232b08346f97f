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
