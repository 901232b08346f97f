"""The forest model: modes, mode maps, IR bridge, roles parity."""

from __future__ import annotations

import pytest

from axisflow.dialects.batch_model import forest_model
from axisflow.forest.builder import ForestBuilder, labels, loop, use
from axisflow.forest.frames import FrameError, expand_modes, mode_map
from axisflow.forest.model import ModelError, topological_order
from axisflow.forest.roles import classify
from axisflow.passes.classify_axes import classify_forest
from axisflow.roles import Index, LoopRole
from tests.conftest import example, only_forest, parse

EXAMPLES = [
    "pipeline/four_tensor.mlir",
    "pipeline/cross_iteration.mlir",
    "pipeline/sibling_nests.mlir",
    "pipeline/demotion.mlir",
]


def test_modes_append_protos_once_after_the_carried_indices() -> None:
    modes = expand_modes(labels("a_1<i_1,i_2> i_1 a_2<i_2>"))
    assert [m.full_label for m in modes] == ["a_1<i_1,i_2>", "i_1", "a_2<i_2>", "i_2"]


def test_mode_map_follows_plain_indices_into_the_protos() -> None:
    # i_1 is carried, so its image i_5 fixes the proto pairing; i_2 takes the
    # other proto (forced).
    mapping = mode_map(labels("a_1<i_1,i_2> i_1"), labels("a_3<i_4,i_5> i_5"))
    assert mapping[Index.parse("i_1")] == Index.parse("i_5")
    assert mapping[Index.parse("i_2")] == Index.parse("i_4")
    assert mapping[Index.parse("a_1<i_1,i_2>")] == Index.parse("a_3<i_4,i_5>")


@pytest.mark.parametrize(
    ("frame", "here", "message"),
    [
        ("i_1 i_2", "i_3 i_3", "stands for both"),
        ("i_1 a_1", "i_1 i_2", "another index space"),
        ("a_1<i_1> i_1", "a_1<i_2> i_3", "not a proto"),
        ("i_1", "i_1 i_2", "2 labels for a value with 1"),
        ("a_1<i_1,i_2> b_1<i_1,i_2>", "a_3<i_4,i_5> b_3<i_4,i_5>", "ambiguous"),
    ],
)
def test_mode_map_rejects_inconsistent_or_ambiguous_renamings(
    frame: str, here: str, message: str
) -> None:
    with pytest.raises(FrameError, match=message):
        mode_map(labels(frame), labels(here), where="test")


def test_an_explicit_pairing_decides_what_positions_cannot() -> None:
    i = Index.parse
    mapping = mode_map(
        labels("a_1<i_1,i_2>"), labels("a_3<i_4,i_5>"), [(i("i_1"), i("i_5"))]
    )
    assert mapping[i("i_1")] == i("i_5") and mapping[i("i_2")] == i("i_4")


def test_forest_model_from_ir_records_sites_loops_and_node_modes() -> None:
    forest = forest_model(only_forest(example("pipeline/four_tensor.mlir")))
    assert [s.value for s in forest.sites] == ["S", "T2", "T1", "B", "D", "C", "A"]
    root = forest.sites[0]
    assert root.parent is None and root.children == (1, 6)
    assert [(lp.instance, lp.label.full_label) for lp in root.loops] == [
        (0, "b"),
        (1, "c"),
    ]
    s = forest.values["S"]
    assert [m.full_label for m in s.node_modes] == ["a", "b", "i", "j", "c", "k"]
    assert forest.instance_spaces == {0: "b", 1: "c"}


def test_unslotted_loops_get_instances_after_the_largest_slot() -> None:
    module = parse(
        """
        batch.forest {
          batch.value @A [i_1] leaf "A"
          batch.value @B [i_1] leaf "B"
          batch.tree @t0 { batch.loop i_1 { batch.use @A [i_1] } }
          batch.tree @t1 { batch.loop i_1 slot 3 { batch.use @B [i_1] } }
          batch.tree @t2 { batch.loop i_2 { batch.use @A [i_2] } }
        }
        """
    )
    forest = forest_model(only_forest(module))
    instances = [site.loops[0].instance for site in forest.sites]
    assert instances == [4, 3, 5]


def test_nested_loops_over_one_label_are_rejected() -> None:
    builder = ForestBuilder().input("A", "i_1")
    builder.tree("t", loop("i_1", 0, loop("i_1", 1, use("A", "i_1"))))
    with pytest.raises(ModelError, match="two enclosing loops bind i_1"):
        builder.finish()


@pytest.mark.parametrize("name", EXAMPLES)
def test_classify_model_agrees_with_the_classify_axes_pass(name: str) -> None:
    forest_op = only_forest(example(name))
    classify_forest(forest_op)
    from_ir = forest_model(forest_op)
    by_hand = forest_model(forest_op, with_roles=False)
    classify(by_hand)
    assert by_hand.roles == from_ir.roles
    assert from_ir.roles  # the examples have loops


def test_four_tensor_roles_are_those_of_the_note() -> None:
    forest_op = only_forest(example("pipeline/four_tensor.mlir"))
    classify_forest(forest_op)
    roles = forest_model(forest_op).roles
    assert roles[("T1", "b")] is roles[("T1", "c")] is LoopRole.LOOP_LOCAL
    assert roles[("T2", "b")] is roles[("T2", "c")] is LoopRole.LOOP_LOCAL
    assert roles[("S", "c")] is LoopRole.REDUCTION
    assert roles[("S", "b")] is LoopRole.LOOP_CARRIED
    assert roles[("B", "c")] is roles[("D", "b")] is LoopRole.LOOP_INVARIANT


def test_topological_order_puts_factors_first_and_outputs_after_roots() -> None:
    forest = forest_model(only_forest(example("pipeline/sibling_nests.mlir")))
    assert topological_order(forest) == ["X", "R1", 0, "R2", 1]


def test_a_use_site_is_renamed_jointly_across_its_factors() -> None:
    # The shape of the singles residual's @v6: the result pins i_1 -> i_2, so
    # the protos of C's composite must swap too, although C's labels alone
    # would pair them in sorted order. C's pairings are not forced by its own
    # labels: they are explicit, in the factor and at the use-site.
    builder = ForestBuilder().space("i", 2).space("a", 3)
    builder.input("F", "i_1 a_1<i_1,i_2>").input("C", "a_1<i_1,i_2>")
    builder.contraction(
        "W",
        "i_1 a_1<i_1,i_2> a_2<i_1,i_2>",
        "F i_1 a_1<i_1,i_2>",
        "C a_2<i_1,i_2> | i_1=i_1",
    )
    builder.tree(
        "t",
        loop(
            "i_1",
            0,
            use(
                "W",
                "i_2 a_2<i_1,i_2> a_3<i_1,i_2>",
                use("F", "i_2 a_2<i_1,i_2>"),
                use("C", "a_3<i_1,i_2>", protos="i_1=i_2"),
            ),
        ),
    )
    forest = builder.finish()
    w_site, f_site, c_site = forest.sites
    i_1, i_2 = Index.parse("i_1"), Index.parse("i_2")
    assert w_site.mode_labels[i_1] == i_2 and w_site.mode_labels[i_2] == i_1
    # the factors' sites read the pairing the consumer chose
    for site in (f_site, c_site):
        value = forest.values[site.value]
        position = w_site.children.index(site.number)
        factor_map = forest.values["W"].factor_maps[position]
        for mode in value.modes:
            assert site.mode_labels[mode] == w_site.mode_labels[factor_map[mode]]


def test_an_unpaired_ambiguous_use_site_is_rejected() -> None:
    # i_1, i_2 shared by two composites: their pairing is not interchangeable
    builder = ForestBuilder().input("C", "a_1<i_1,i_2> b_1<i_1,i_2>")
    builder.tree("t", use("C", "a_3<i_4,i_5> b_3<i_4,i_5>"))
    with pytest.raises(ModelError, match="ambiguous"):
        builder.finish()
