"""The SeQuant forest builder rule by rule: names of spaces and tensors,
the batching policy and its refusals (exact messages), external-only
batching, composite extents, leaf and value naming, the pairing of a plan."""

from __future__ import annotations

from fractions import Fraction

import pytest

from axisflow.forest.model import Forest
from axisflow.order import Costs, Extents, plan_product
from axisflow.roles import Index
from axisflow.sequant import BatchPolicy, PolicyError, SequantError, build_forest, parse
from axisflow.sequant.forest import (
    ascii_alias,
    binarize,
    canonical_term,
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


def test_policy_boundaries() -> None:
    # Extents and element sizes of 1 are fine; only 0 and below are refused.
    policy = BatchPolicy.make("i", extents={"i": 1}, elem=1)
    assert (policy.extents, policy.elem) == ((("i", 1),), 1)
    with pytest.raises(PolicyError) as caught:
        BatchPolicy.make(share="x")
    assert str(caught.value) == "share must be one of forest, tree, got 'x'"


def test_terms_that_cannot_be_trees_have_exact_messages() -> None:
    for text, message in [
        (
            "t{a_1;i_1}\n - g{i_2,i_2;a_1}",
            "eq.txt:2:4: index i_2 appears twice in tensor g: traces and diagonals "
            "are not supported (a tensor's indices must be distinct)",
        ),
        (
            "Â{a_1;} * t{a_1;i_1}",
            "eq.txt:1:11: index i_1 of tensor t appears once in its term but no "
            "operator of the term lists it as a result index",
        ),
    ]:
        with pytest.raises(SequantError) as caught:
            build_forest(parse(text, "eq.txt"))
        assert str(caught.value) == message


def test_a_character_without_a_unicode_name_is_spelled_by_its_code_point() -> None:
    assert symbol_name("a\u0378") == "au0378"  # U+0378 is unassigned


def test_leaves_keep_their_symmetry() -> None:
    forest = build_forest(parse("g{i_1;a_1}:N-S * t{a_1;i_1}"))
    assert {name: v.symmetry for name, v in forest.values.items()} == {
        "g_0": "N-S",
        "t_0": None,
        "v0": None,
    }


def test_canonical_term_renames_by_first_appearance() -> None:
    (term,) = parse("A{i_7;a_3} * B{a_3;i_5}:N-S").terms
    tensors, renaming = canonical_term(term.tensors)
    assert renaming == {L("i_7"): L("i_1"), L("a_3"): L("a_1"), L("i_5"): L("i_2")}
    assert [(t.label, t.bra, t.ket, t.symmetry) for t in tensors] == [
        ("A", (L("i_1"),), (L("a_1"),), None),
        ("B", (L("a_1"),), (L("i_2"),), "N-S"),
    ]
    # A renaming given is used as it is.
    given = {L("i_7"): L("i_4"), L("a_3"): L("a_2"), L("i_5"): L("i_3")}
    tensors, same = canonical_term(term.tensors, given)
    assert same is given and tensors[0].bra == (L("i_4"),)


def test_the_extents_choose_the_pairing_of_a_ring() -> None:
    # A ring of four matrices: pair the two products over the large indices.
    text = "A{i_1;j_1} * B{j_1;k_1} * C{k_1;m_1} * D{m_1;i_1}"

    def pairs(extents: str) -> list[tuple[str, list[str]]]:
        forest = build_forest(parse(text), BatchPolicy.make(extents=extents))
        return [
            (v.name, [f.value for f in v.factors])
            for v in forest.values.values()
            if v.factors
        ]

    assert pairs("i=2,j=100,k=2,m=100") == [
        ("v0", ["A_0", "B_0"]),
        ("v1", ["C_0", "D_0"]),
        ("v2", ["v0", "v1"]),
    ]
    assert pairs("i=100,j=2,k=100,m=2") == [
        ("v0", ["A_0", "D_0"]),
        ("v1", ["B_0", "C_0"]),
        ("v2", ["v0", "v1"]),
    ]


def test_a_proto_a_later_tensor_needs_stays_a_mode_and_sites_are_linked() -> None:
    # A and B contract a_1<i_1> and j_1, but C still carries i_1: v0 keeps
    # i_1 as an index of its own.
    forest = build_forest(
        parse("A{a_1<i_1>;j_1} * B{j_1;a_1<i_1>} * C{i_1;k_1}"), order="file"
    )
    v0, v1 = forest.values["v0"], forest.values["v1"]
    assert (v0.result, v0.contracted) == ((L("i_1"),), (L("a_1<i_1>"), L("j_1")))
    assert [f.value for f in v1.factors] == ["v0", "C_0"]
    sites = [(s.number, s.value, s.parent, s.children, s.protos) for s in forest.sites]
    assert sites == [
        (0, "v1", None, (1, 4), ()),
        (1, "v0", 0, (2, 3), ()),
        (2, "A_0", 1, (), ((L("i_1"), L("i_1")),)),
        (3, "B_0", 1, (), ((L("i_1"), L("i_1")),)),
        (4, "C_0", 0, (), ()),
    ]


def test_the_extent_of_a_composite_kind_chooses_the_pairing() -> None:
    # The ring with a_1<i_1> for i_1: only the extent of a<1> differs.
    text = "A{a_1<i_1>;j_1} * B{j_1;k_1} * C{k_1;m_1} * D{m_1;a_1<i_1>}"

    def pairs(extents: str) -> list[list[str]]:
        forest = build_forest(parse(text), BatchPolicy.make(extents=extents))
        return [
            [f.value for f in v.factors] for v in forest.values.values() if v.factors
        ]

    assert pairs("a<1>=2,i=2,j=100,k=2,m=100") == [
        ["A_0", "B_0"],
        ["C_0", "D_0"],
        ["v0", "v1"],
    ]
    assert pairs("a<1>=10000,i=2,j=100,k=2,m=100") == [
        ["A_0", "B_0"],
        ["v0", "D_0"],
        ["v1", "C_0"],
    ]


def test_policy_share_default_name_and_external_alias() -> None:
    assert BatchPolicy.make(share="tree").share == "tree"
    expression = parse("A{i_1;Κ_1} * B{Κ_1;i_2}")
    forest = build_forest(expression, BatchPolicy.make("Kappa:external"))
    assert forest.name == "sequant"
    # Κ_1 is summed: external-only batching over Κ (spelled by its alias)
    # gives it no loop.
    root = forest.trees[0].root
    assert root is not None and forest.sites[root].loops == ()
    assert build_forest(expression, BatchPolicy.make("Kappa")).sites[root].loops


def test_a_parenthesized_group_is_built_first() -> None:
    def pairs(text: str) -> list[list[str]]:
        forest = build_forest(parse(text), order="file")
        return [
            [f.value for f in v.factors] for v in forest.values.values() if v.factors
        ]

    assert pairs("A{i_1;j_1} * (B{j_1;k_1} * C{k_1;m_1})") == [
        ["B_0", "C_0"],
        ["A_0", "v0"],
    ]
    assert pairs("A{i_1;j_1} * B{j_1;k_1} * C{k_1;m_1}") == [
        ["A_0", "B_0"],
        ["v0", "C_0"],
    ]


def test_loops_are_instances_of_their_slots_and_trees_keep_operators() -> None:
    forest = build_forest(
        parse("1/4 Ŝ{i_1;a_1} * t{a_1;i_1} + A{i_1;Κ_1} * B{Κ_1;i_2}"),
        BatchPolicy.make("i,Kappa"),
    )
    assert [t.operators for t in forest.trees] == [("Ŝ{i_1;a_1}",), ()]
    loops = [
        [(lp.instance, lp.slot, str(lp.label)) for lp in forest.sites[t.root].loops]
        for t in forest.trees
        if t.root is not None
    ]
    # The k-th loop of a space shares its slot across trees.
    assert loops == [
        [(0, 0, "i_1")],
        [(0, 0, "i_1"), (1, 1, "i_2"), (2, 2, "Κ_1")],
    ]


def test_ascii_aliases_need_a_greek_letter_with_a_unicode_name() -> None:
    # LATIN SMALL LETTER ALPHA ends in a Greek letter's name but is no Greek
    # letter; U+0378 has no name at all.
    assert ascii_alias("ɑ") is None
    assert ascii_alias("\u0378") is None


def test_an_operator_sequant_refuses_is_located_at_its_term() -> None:
    text = "t{a_1;i_1}\n + Ŝ{i_1,i_2;a_1} * t{a_1;i_1} * u{;i_2}"
    with pytest.raises(SequantError) as caught:
        build_forest(parse(text, "eq.txt"))
    assert str(caught.value) == (
        "eq.txt:2:2: Ŝ{i_1,i_2;a_1}: the particle symmetrizer needs as many bra "
        "as ket indices (columns), got 2 and 1"
    )


def test_share_tree_rebuilds_shared_values_per_tree() -> None:
    expression = parse("A{i_1;a_1} * B{a_1;i_2} + A{i_3;a_3} * B{a_3;i_4}")
    shared = build_forest(expression, BatchPolicy.make("i"))
    rebuilt = build_forest(expression, BatchPolicy.make("i", share="tree"))
    assert [(s.value, s.tree) for s in shared.sites if s.parent is None] == [
        ("v0", 0),
        ("v0", 1),
    ]
    assert [(s.value, s.tree) for s in rebuilt.sites if s.parent is None] == [
        ("v0", 0),
        ("v0_term1", 1),
    ]


def test_one_batch_loop_makes_a_slotted_forest() -> None:
    forest = build_forest(parse("A{i_1;Κ_1} * B{Κ_1;i_2}"), BatchPolicy.make("Kappa"))
    assert forest.has_slots
    assert not build_forest(parse("A{i_1;Κ_1} * B{Κ_1;i_2}")).has_slots
