"""The SeQuant forest builder rule by rule: names of spaces and tensors,
the batching policy and its refusals (exact messages), external-only
batching, composite extents, leaf and value naming, the pairing of a plan."""

from __future__ import annotations

from fractions import Fraction

import pytest

from axisflow.forest.model import Forest
from axisflow.order import Costs, Extents, plan_product
from axisflow.roles import Index
from axisflow.sequant import BatchPolicy, PolicyError, build_forest, parse
from axisflow.sequant.forest import (
    ascii_alias,
    binarize,
    parse_extents,
    plan_pairing,
    symbol_name,
)

L = Index.parse


@pytest.mark.parametrize(
    ("key", "alias"),
    [
        ("i", None),
        ("Κ", "Kappa"),
        ("κ", "kappa"),
        ("μ̃", "mutilde"),
        ("ω̂", "omegahat"),
        ("ā", None),  # not Greek
        ("α̅", None),  # U+0305 is not one of tilde, hat, bar
        ("ϐ", None),  # GREEK BETA SYMBOL: no plain letter name
        ("α̃̄", "alphatildebar"),
    ],
)
def test_ascii_aliases_of_space_keys(key: str, alias: str | None) -> None:
    assert ascii_alias(key) == alias


@pytest.mark.parametrize(
    ("label", "name"),
    [
        ("t", "t"),
        ("g_2", "g_2"),
        ("δ", "delta"),
        ("Κ", "Kappa"),
        ("μ̃", "mutilde"),
        ("2x", "t2x"),
        ("_a", "_a"),
        # The last word of the Unicode name, when it is alphanumeric ...
        ("a€", "asign"),  # EURO SIGN
        ("a\u00b7", "adot"),  # MIDDLE DOT
        # ... otherwise the code point.
        ("a-b", "au002db"),  # HYPHEN-MINUS
    ],
)
def test_symbol_names_of_tensor_labels(label: str, name: str) -> None:
    assert symbol_name(label) == name


def test_policy_values() -> None:
    policy = BatchPolicy.make(" i , Κ:external ,", extents="i=3", elem=4)
    assert policy == BatchPolicy(("i", "Κ"), (("i", 3),), 4, False, ("Κ",))
    assert BatchPolicy.make(["a"], {"a": 2}).extents == (("a", 2),)
    assert BatchPolicy.make().spaces == ()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"batch": "i:all"},
            "malformed batch entry 'i:all': expected SPACE or SPACE:external",
        ),
        ({"extents": {"i": 0}}, "extent of space 'i' must be positive"),
        ({"elem": 0}, "element size must be positive, got 0"),
        ({"extents": "i=x"}, "malformed extent 'i=x': expected KEY=POSITIVE_INTEGER"),
    ],
)
def test_policy_refusals(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(PolicyError) as caught:
        BatchPolicy.make(**arguments)  # type: ignore[arg-type]
    assert str(caught.value).startswith(message)


def test_parse_extents_raises_policy_errors() -> None:
    assert parse_extents("i=2,a<1>=3") == {"i": 2, "a<1>": 3}
    with pytest.raises(PolicyError) as caught:
        parse_extents("a<0>=3")
    assert str(caught.value) == (
        "composite kind 'a<0>' has no protos: a composite has at least one"
    )


def test_build_forest_refusals() -> None:
    expression = parse("A{i_1;a_1} * B{a_1;i_1}")
    with pytest.raises(PolicyError) as caught:
        build_forest(expression, order="best")  # type: ignore[arg-type]
    assert str(caught.value) == "order must be one of file, flops, memory, got 'best'"
    with pytest.raises(PolicyError) as caught:
        build_forest(expression, BatchPolicy.make("i,i"))
    assert str(caught.value) == "an index space is named twice in batch=('i', 'i')"
    with pytest.raises(PolicyError) as caught:
        build_forest(expression, BatchPolicy.make("q:external"))
    assert str(caught.value) == (
        "index space 'q' does not occur in the expression (its spaces: a, i)"
    )
    with pytest.raises(PolicyError) as caught:
        build_forest(parse("2"), BatchPolicy.make("i"))
    assert str(caught.value) == (
        "index space 'i' does not occur in the expression (its spaces: none)"
    )
    with pytest.raises(PolicyError) as caught:
        build_forest(expression, BatchPolicy.make(extents={"a<x>": 3}))
    assert str(caught.value).startswith("malformed composite kind 'a<x>'")


def loops_of(forest: Forest, tree: int) -> list[tuple[str, int | None]]:
    root = forest.trees[tree].root
    assert root is not None
    return [(lp.label.full_label, lp.slot) for lp in forest.sites[root].loops]


def test_external_batching_skips_contracted_indices() -> None:
    # i_1 is external, i_2 summed; with i:external only i_1 gets a loop.
    expression = parse("A{i_1;i_2} * B{i_2;a_1} + C{i_1;a_1}")
    every = build_forest(expression, BatchPolicy.make("i"))
    assert loops_of(every, 0) == [("i_1", 0), ("i_2", 1)]
    assert loops_of(every, 1) == [("i_1", 0)]
    external = build_forest(expression, BatchPolicy.make("i:external"))
    assert loops_of(external, 0) == [("i_1", 0)]
    assert loops_of(external, 1) == [("i_1", 0)]
    # A proto of an external composite counts as external too.
    composite = build_forest(
        parse("A{a_1<i_1>;i_2} * B{i_2;i_1}"), BatchPolicy.make("i:external")
    )
    assert loops_of(composite, 0) == [("i_1", 0)]


def test_spaces_take_composite_extents_by_alias() -> None:
    expression = parse("C{a_1<i_1,i_2>;Κ_1} * D{Κ_1;a_1<i_1,i_2>}")
    forest = build_forest(
        expression, BatchPolicy.make(extents={"a<2>": 7, "Kappa": 5, "i": 3}, elem=2)
    )
    spaces = {key: (s.extent, s.elem, s.composites) for key, s in forest.spaces.items()}
    assert spaces == {"a": (None, 2, ((2, 7),)), "i": (3, 2, ()), "Κ": (5, 2, ())}
    assert forest.has_slots is False


def test_leaves_values_and_trees_are_named_and_numbered() -> None:
    expression = parse("1/2 δ{i_1;a_1} * t{a_1;i_1} + 3 δ{i_2;a_2} * t{a_2;i_2} - 4")
    forest = build_forest(expression, BatchPolicy.make("i"))
    assert sorted(forest.values) == ["delta_0", "t_0", "v0"]
    assert [t.name for t in forest.trees] == ["term0", "term1", "term2"]
    assert [t.coeff for t in forest.trees] == [
        Fraction(1, 2),
        Fraction(3),
        Fraction(-4),
    ]
    assert forest.trees[2].root is None and forest.has_slots
    leaf = forest.values["delta_0"]
    assert (leaf.tensor, leaf.symmetry, leaf.layout) == ("δ", None, (1, 1, 0))
    # Both terms share v0 and its loop slot.
    assert loops_of(forest, 0) == [("i_1", 0)] and loops_of(forest, 1) == [("i_2", 0)]


def test_the_pairing_of_a_plan_and_of_the_file_order() -> None:
    assert binarize([object()] * 1) == 0  # type: ignore[list-item]
    assert binarize([object()] * 4) == (((0, 1), 2), 3)  # type: ignore[list-item]
    i, j, k, m = (Index(key) for key in "ijkm")
    extents = Extents.make({"i": 2, "j": 100, "k": 2, "m": 100})
    plan = plan_product([[i, j], [j, k], [k, m], [m, i]], [], Costs(extents))
    assert plan_pairing(plan) == ((0, 1), (2, 3))
    single = plan_product([[i]], [i], Costs(extents))
    assert plan_pairing(single) == 0
