"""Forest construction: binarization, CSE, batching, and the roles that follow."""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from axisflow.dialects.batch import AxisRolesAttr, ForestOp
from axisflow.dialects.batch_model import forest_model, forest_module
from axisflow.forest.frames import canonical_renaming
from axisflow.forest.model import Forest, Tree, Value
from axisflow.forest.roles import classify
from axisflow.passes.classify_axes import ClassifyAxesPass
from axisflow.roles import Index, LoopRole, Occurrence, classify_axis
from axisflow.sequant import (
    BatchPolicy,
    Expression,
    PolicyError,
    SequantError,
    Tensor,
    Term,
    build_forest,
    parse,
    to_module,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sequant"
L = Index.parse
LOCAL, REDUCTION = LoopRole.LOOP_LOCAL, LoopRole.REDUCTION
CARRIED, INVARIANT = LoopRole.LOOP_CARRIED, LoopRole.LOOP_INVARIANT


def _example(name: str) -> Expression:
    return parse((EXAMPLES / name).read_text(encoding="utf-8"), name)


def _forest_op(module: ModuleOp) -> ForestOp:
    return next(op for op in module.walk() if isinstance(op, ForestOp))


def _classified(module: ModuleOp) -> dict[str, dict[str, LoopRole]]:
    """Run classify-axes; the roles of every value by loop label."""
    module.verify()
    ClassifyAxesPass().apply(Context(), module)
    roles: dict[str, dict[str, LoopRole]] = {}
    for value in _forest_op(module).values():
        attr = value.attributes.get("roles")
        table: dict[str, LoopRole] = {}
        if isinstance(attr, AxisRolesAttr):
            for axis, role in attr.as_dict().items():
                table[axis.full_label] = role
        roles[value.value_name] = table
    return roles


def _node(forest: Forest, name: str) -> Value:
    value = forest.values[name]
    assert not value.is_input
    return value


@dataclass(frozen=True)
class Use:
    """A use-site of the model as a nested view: value, labels, factors."""

    value: str
    carried: tuple[Index, ...]
    factors: tuple[Use, ...] = ()

    def walk(self) -> Iterator[Use]:
        stack: list[Use] = [self]
        while stack:
            use = stack.pop()
            yield use
            stack.extend(reversed(use.factors))


def _use(forest: Forest, number: int) -> Use:
    site = forest.sites[number]
    factors = tuple(_use(forest, child) for child in site.children)
    return Use(site.value, site.labels, factors)


def _root(forest: Forest, tree: Tree) -> Use | None:
    return None if tree.root is None else _use(forest, tree.root)


def _loops(forest: Forest, tree: Tree) -> tuple[tuple[Index, int | None], ...]:
    """The tree's root loops (label, slot), outermost first."""
    if tree.root is None:
        return ()
    return tuple((lp.label, lp.slot) for lp in forest.sites[tree.root].loops)


def _use_counts(forest: Forest) -> dict[str, int]:
    counts = dict.fromkeys(forest.values, 0)
    for site in forest.sites:
        counts[site.value] += 1
    return counts


def _nodes(forest: Forest) -> list[Value]:
    return [v for v in forest.values.values() if not v.is_input]


# --------------------------------------------------------------------------
# Hand-checked forests
# --------------------------------------------------------------------------

FOUR_TENSOR = "B{b,e;f,l} * D{c,d;e,l} * C{d,f;j,k} * A{a,c;i,k}"


def test_four_tensor_forest_and_roles() -> None:
    """Section 5 of the batching note: loops over b and c around the tree."""
    expression = parse(FOUR_TENSOR)
    forest = build_forest(expression, BatchPolicy.make("b,c"))
    t1, t2, s = (_node(forest, f"v{n}") for n in range(3))
    assert [f.value for f in t1.factors] == ["B_0", "D_0"]
    assert [f.value for f in t2.factors] == ["v0", "C_0"]
    assert [f.value for f in s.factors] == ["v1", "A_0"]
    (tree,) = forest.trees
    assert _loops(forest, tree) == ((Index("b"), 0), (Index("c"), 1))
    root = _root(forest, tree)
    assert root is not None
    t2_use, a_use = root.factors
    t1_use, c_use = t2_use.factors
    # Result indices in order of first appearance (left operand, then right).
    assert t1_use.carried == tuple(map(Index, "bfcd"))
    assert t2_use.carried == tuple(map(Index, "bcjk"))
    assert root.carried == tuple(map(Index, "bjai"))
    assert {i.label for i in s.contracted} == {"c_1", "k_1"}
    assert {i.label for i in t1.contracted} == {"e_1", "l_1"}
    assert {i.label for i in t2.contracted} == {"d_1", "f_1"}
    assert (c_use.value, a_use.value) == ("C_0", "A_0")

    roles = _classified(forest_module(forest))
    assert roles == {
        "B_0": {"b": LOCAL, "c": INVARIANT},
        "D_0": {"b": INVARIANT, "c": LOCAL},
        "C_0": {"b": INVARIANT, "c": INVARIANT},
        "A_0": {"b": INVARIANT, "c": LOCAL},
        "v0": {"b": LOCAL, "c": LOCAL},  # T1
        "v1": {"b": LOCAL, "c": LOCAL},  # T2
        "v2": {"b": CARRIED, "c": REDUCTION},  # S
    }


def test_outer_product_without_loops_is_loop_carried_on_i() -> None:
    forest = build_forest(_example("legality_cross_iteration.txt"))
    (leaf, outer) = forest.values.values()
    assert leaf.is_input and leaf.result == (L("i_1"),)
    assert not outer.is_input
    assert outer.result == (L("i_1"), L("i_2")) and outer.contracted == ()
    (tree,) = forest.trees
    assert _loops(forest, tree) == ()
    assert _root(forest, tree) == Use(
        outer.name,
        (L("i_3"), L("i_4")),
        (Use(leaf.name, (L("i_3"),)), Use(leaf.name, (L("i_4"),))),
    )
    module = forest_module(forest)
    module.verify()
    read = forest_model(_forest_op(module), with_roles=False)
    occurrences = [
        Occurrence(site.labels, ()) for site in read.sites if site.value == outer.name
    ]
    role = classify_axis(outer.result, outer.contracted, Index("i"), occurrences)
    assert role is CARRIED


def test_density_fitted_term_batched_over_kappa() -> None:
    """First doubles term, 13 tensors: the node contracting Κ is Reduction,
    values below it carrying Κ (leaves included) LoopLocal, the rest of the
    tree LoopInvariant."""
    (term,) = _example("csv_ccsd_doubles_residual_df.txt").terms[:1]
    # The file-order spine (g, g*C, (g*C)*g, ...): order="file".
    forest = build_forest(Expression((term,)), BatchPolicy.make("Κ"), order="file")
    (tree,) = forest.trees
    assert _loops(forest, tree) == ((L("Κ_2"), 0),)
    roles = _classified(forest_module(forest))
    root = _root(forest, tree)
    assert root is not None
    spine = [root]
    while spine[-1].factors:
        spine.append(spine[-1].factors[0])
    spine.reverse()  # leaf g, g*C, (g*C)*g, ...
    assert [u.value for u in spine[:3]] == ["g_0", "v0", "v1"]
    assert roles["g_0"] == {"Κ_2": LOCAL}  # g{μ̃_1152;i_3;Κ_2} (and the 2nd g)
    assert roles["C_0"] == {"Κ_2": INVARIANT}  # C{a_3<i_2>;μ̃_1152}
    assert roles["v0"] == {"Κ_2": LOCAL}  # g * C carries Κ_2
    assert roles["v1"] == {"Κ_2": REDUCTION}  # ... * g contracts Κ_2
    assert [i.base_key for i in _node(forest, "v1").contracted] == ["Κ"]
    for above in spine[2 + 1 :]:
        assert roles[above.value] == {"Κ_2": INVARIANT}
        assert all(i.base_key != "Κ" for i in above.carried)
    assert {name for name, r in roles.items() if r == {"Κ_2": LOCAL}} == {
        "g_0",
        "v0",
    }


def test_every_kappa_term_of_the_doubles_residual() -> None:
    """The Κ pattern holds in all trees at once, with values shared by CSE."""
    expression = _example("csv_ccsd_doubles_residual_df.txt")
    forest = build_forest(expression, BatchPolicy.make("Κ"))
    roles = _classified(forest_module(forest))
    with_kappa = 0
    for tree in forest.trees:
        root = _root(forest, tree)
        assert root is not None
        loops = _loops(forest, tree)
        kappa = [label for label, _ in loops]
        assert len(kappa) <= 1 and all(slot == 0 for _, slot in loops)
        if not kappa:
            assert all(i.base_key != "Κ" for u in root.walk() for i in u.carried)
            continue
        with_kappa += 1
        (axis,) = kappa
        label = axis.full_label
        below_reduction = False
        for use in _post_order(root):
            role = roles[use.value][label]
            carries = axis in use.carried
            contracts = (
                axis in {i for f in use.factors for i in f.carried} and not carries
            )
            if contracts:
                assert role is REDUCTION
                below_reduction = True
            elif carries:
                assert role is LOCAL and not below_reduction
            else:
                assert role is INVARIANT
        assert below_reduction
    assert with_kappa == sum(
        1
        for t in expression.terms
        if any(i.base_key == "Κ" for x in t.tensors for i in x.indices)
    )
    assert with_kappa > 40


def _post_order(root: Use) -> list[Use]:
    return list(reversed(list(root.walk())))


# --------------------------------------------------------------------------
# Binarization details
# --------------------------------------------------------------------------


def test_hadamard_index_stays_on_the_result() -> None:
    forest = build_forest(parse("Â{i_1;a_1,a_2} * A{i_1;a_1} * B{i_1;a_2}"))
    (node,) = _nodes(forest)
    assert node.result == (L("i_1"), L("a_1"), L("a_2"))
    assert node.contracted == ()


def test_index_on_three_tensors_is_hadamard_then_contracted() -> None:
    forest = build_forest(parse("A{;i_1} * B{;i_1} * C{i_1;}"))
    first, second = (_node(forest, f"v{n}") for n in range(2))
    assert (first.result, first.contracted) == ((L("i_1"),), ())
    assert (second.result, second.contracted) == ((), (L("i_1"),))


def test_single_tensor_and_scalar_terms() -> None:
    forest = build_forest(parse("2 f{a_1;i_1} - 1/2"), BatchPolicy.make("i"))
    single, scalar = forest.trees
    assert _root(forest, single) == Use("f_0", (L("a_1"), L("i_1")))
    assert _loops(forest, single) == ((L("i_1"), 0),)
    assert scalar.root is None and scalar.coeff == -0.5
    module = forest_module(forest)
    roles = _classified(module)
    assert roles == {"f_0": {"i_1": CARRIED}}


def test_result_order_is_first_appearance() -> None:
    forest = build_forest(parse("X{p_1,q_1;r_1} * Y{r_1;s_1,p_2}"))
    (tree,) = forest.trees
    root = _root(forest, tree)
    assert root is not None
    assert root.carried == tuple(map(L, ["p_1", "q_1", "s_1", "p_2"]))


# --------------------------------------------------------------------------
# Common subexpressions
# --------------------------------------------------------------------------

TERM = "g{μ̃_1;i_3;Κ_2} * C{a_3<i_2>;μ̃_1} * g{μ̃_2;i_2;Κ_2} * t{a_3<i_2>;i_3}"
RENAMED = "g{μ̃_7;i_5;Κ_9} * C{a_8<i_2>;μ̃_7} * g{μ̃_4;i_2;Κ_9} * t{a_8<i_2>;i_5}"


def test_duplicated_term_with_renamed_dummies_shares_every_value() -> None:
    # The labels below are those of the file-order tree: order="file".
    alone = build_forest(parse(TERM), BatchPolicy.make("Κ"), order="file")
    both = build_forest(
        parse(f"{TERM} - 2 {RENAMED}"), BatchPolicy.make("Κ"), order="file"
    )
    assert both.values == alone.values
    assert len(_nodes(both)) == 3
    single = _use_counts(alone)
    assert _use_counts(both) == {name: 2 * n for name, n in single.items()}
    assert _use_counts(both)["v2"] == 2  # the root: one use-site per tree
    first, second = (_root(both, tree) for tree in both.trees)
    assert first is not None and second is not None
    assert first.value == second.value == "v2"
    assert second.factors[0].factors[0].carried == (
        L("i_5"),
        L("Κ_9"),
        L("a_8<i_2>"),
    )
    roles = _classified(forest_module(both))
    assert roles["v0"] == {"Κ_2": LOCAL, "Κ_9": LOCAL}
    assert roles["v1"] == {"Κ_2": REDUCTION, "Κ_9": REDUCTION}


def test_different_structure_is_not_shared() -> None:
    # Same tensors, but i_3 is external in the second term: different roots.
    forest = build_forest(
        parse("g{μ̃_1;i_3;Κ_2} * g{μ̃_1;i_2;Κ_2} - g{μ̃_1;i_3;Κ_2} * h{μ̃_1;i_2;Κ_2}")
    )
    assert len(_nodes(forest)) == 2
    # Layout is part of a leaf's identity: t{a;i} and t{a,i;} differ.
    forest = build_forest(parse("t{a_1;i_1} + t{a_1,i_1;}"))
    assert list(forest.values) == ["t_0", "t_1"]


def test_canonical_renaming_ignores_original_labels() -> None:
    original = canonical_renaming(([L("a_3<i_1,i_4>")], [L("b_1<i_1>"), L("i_4")]))
    relabelled = canonical_renaming(([L("a_5<i_4,i_9>")], [L("b_2<i_9>"), L("i_4")]))
    assert original[L("a_3<i_1,i_4>")] == relabelled[L("a_5<i_4,i_9>")]
    assert original[L("b_1<i_1>")] == relabelled[L("b_2<i_9>")]
    assert original[L("i_4")] == relabelled[L("i_4")] == L("i_1")
    assert original[L("a_3<i_1,i_4>")] == L("a_1<i_1,i_2>")


def _relabel(term: Term, rng: random.Random) -> Term:
    """Rename the term's dummy (non-external) indices consistently, plain and
    inside protos, to fresh random ordinals."""
    externals = set(term.externals())
    dummies: dict[Index, None] = {}
    for tensor in term.tensors:
        for index in tensor.indices:
            for part in (index, *index.all_protos()):
                if part not in externals:
                    dummies[part] = None
    pool = rng.sample(range(100, 10_000), len(dummies))
    fresh = dict(zip(dummies, pool, strict=True))
    memo: dict[Index, Index] = {}

    def rename(index: Index) -> Index:
        if index not in memo:
            ordinal = fresh.get(index, index.ordinal)
            memo[index] = Index(index.base_key, ordinal, map(rename, index.protos))
        return memo[index]

    tensors = tuple(
        Tensor(
            t.label,
            tuple(map(rename, t.bra)),
            tuple(map(rename, t.ket)),
            tuple(map(rename, t.aux)),
            t.symmetry,
        )
        for t in term.tensors
    )
    return Term(term.coefficient, tensors)


SINGLES = _example("csv_ccsd_singles_residual_df.txt")
SINGLES_POLICY = BatchPolicy.make("Κ,i")


@functools.cache
def _singles_forest() -> Forest:
    """The singles' forest under ``SINGLES_POLICY``, classified: built once
    for every example of the property below (the original does not change
    from one example to the next, only its relabelled copy does)."""
    forest = build_forest(SINGLES, SINGLES_POLICY)
    classify(forest)
    return forest


def test_classifying_the_singles_forest_leaves_its_values() -> None:
    # What lets the property below compare with the cached, classified forest.
    fresh = build_forest(SINGLES, SINGLES_POLICY)
    assert _singles_forest().values == fresh.values
    assert _singles_forest().roles and not fresh.roles


@settings(max_examples=25, deadline=None)
@given(st.randoms(use_true_random=False))
def test_cse_is_invariant_under_relabelling_of_dummies(rng: random.Random) -> None:
    terms = SINGLES.terms
    relabelled = Expression(tuple(_relabel(t, rng) for t in terms))
    policy = SINGLES_POLICY
    original = _singles_forest()
    renamed = build_forest(relabelled, policy)
    assert renamed.values == original.values
    assert _use_counts(renamed) == _use_counts(original)
    both = build_forest(Expression(terms + relabelled.terms), policy)
    assert both.values == original.values
    assert _use_counts(both) == {k: 2 * n for k, n in _use_counts(original).items()}
    # ... and the roles (decided on the models) are those of the original
    classify(renamed)
    assert renamed.roles == original.roles


# --------------------------------------------------------------------------
# Batching policy
# --------------------------------------------------------------------------


def test_loops_nest_by_policy_order_then_first_appearance() -> None:
    # First appearance, not label order: i_2 comes first in the term (label
    # order would make the nesting, and so the roles, depend on the names).
    expression = parse("A{i_2,a_1;Κ_1} * B{i_1,a_1;Κ_1} + C{i_7;a_3}")
    forest = build_forest(expression, BatchPolicy.make(("Κ", "i")))
    first, second = forest.trees
    assert _loops(forest, first) == (
        (L("Κ_1"), 0),
        (L("i_2"), 1),
        (L("i_1"), 2),
    )
    assert _loops(forest, second) == ((L("i_7"), 1),)  # shares the first i slot
    separate = build_forest(
        expression, BatchPolicy.make(("Κ", "i"), separate_instances=True)
    )
    assert [slot for t in separate.trees for _, slot in _loops(separate, t)] == [
        0,
        1,
        2,
        3,
    ]
    module = forest_module(forest)
    module.verify()
    tree = next(_forest_op(module).trees())
    text = str(tree)
    assert text.index("batch.loop Κ_1 slot 0") < text.index("batch.loop i_2 slot 1")
    assert text.index("batch.loop i_2 slot 1") < text.index("batch.loop i_1 slot 2")


def test_proto_indices_get_loops_too() -> None:
    forest = build_forest(
        parse("C{a_1<i_1,i_2>;μ_1} * D{μ_1;a_1<i_1,i_2>}"), BatchPolicy.make("i")
    )
    (tree,) = forest.trees
    assert [label for label, _ in _loops(forest, tree)] == [L("i_1"), L("i_2")]


def test_spaces_extents_elem_and_aliases() -> None:
    expression = _example("csv_ccsd_energy_df.txt")
    forest = build_forest(
        expression,
        BatchPolicy.make("Kappa", extents="i=80, a=896,Kappa=1682", elem=8),
    )
    assert [(s.key, s.extent, s.elem) for s in forest.spaces.values()] == [
        ("a", 896, 8),
        ("i", 80, 8),
        ("Κ", 1682, 8),
        ("μ̃", None, 8),
    ]
    assert {label for t in forest.trees for label, _ in _loops(forest, t)} == {L("Κ_1")}
    mu = build_forest(expression, BatchPolicy.make("mutilde"))
    assert {label.base_key for t in mu.trees for label, _ in _loops(mu, t)} == {"μ̃"}
    module = to_module(expression, "Κ", extents={"i": 80})
    text = str(module)
    assert "batch.space i extent 80" in text and "batch.loop Κ_1 slot 0" in text


@pytest.mark.parametrize(
    ("batch", "extents", "message"),
    [
        (
            "j",
            None,
            "index space 'j' does not occur in the expression (its spaces: a, i, Κ (alias Kappa), μ̃ (alias mutilde))",
        ),
        ("i,i", None, "named twice"),
        ((), "i=x", "malformed extent 'i=x'"),
        ((), "i=0", "extent of space 'i' must be positive"),
        ((), "i=3,i=4", "space 'i' is given twice in 'i=3,i=4'"),
        ((), "Κ=3,Kappa=4", "extents gives 'Kappa' twice (by its key and its alias)"),
        (",", None, "batch: an empty space name in ',' (expected SPACE,SPACE,...)"),
        ("i,,Κ", None, "batch: an empty space name in 'i,,Κ'"),
    ],
)
def test_policy_errors(batch: str, extents: str | None, message: str) -> None:
    with pytest.raises(PolicyError, match=re.escape(message)):
        to_module(_example("csv_ccsd_energy_df.txt"), batch, extents=extents)


def test_an_extent_of_a_space_the_expression_lacks_is_a_note() -> None:
    # One extents text for the energy, singles and doubles of a method: the
    # space the energy lacks is said once and ignored, not refused.
    from axisflow.notes import UnusedOptionNote

    with pytest.warns(UnusedOptionNote) as notes:
        module = to_module(
            _example("csv_ccsd_energy_df.txt"), "i", extents="i=8,q=3,q<2>=4,Κ=5"
        )
    assert [str(note.message) for note in notes] == [
        "extents names q, q<2>, which do not occur in the expression (its "
        "spaces: a, i, Κ (alias Kappa), μ̃ (alias mutilde)); ignored"
    ]
    text = str(module)
    assert "batch.space i extent 8" in text and "batch.space Κ extent 5" in text
    assert "q" not in text.replace("sequant", "")


@pytest.mark.parametrize(
    ("text", "line", "column", "message"),
    [
        ("t{a_1;i_1}\n - g{i_2,i_2;a_1}", 2, 4, "index i_2 appears twice in tensor g"),
        (
            "Ŝ{a_1;i_9} * t{a_1;i_1}",
            1,
            1,
            "operator Ŝ lists index i_9, which no tensor",
        ),
        (
            "Â{a_1;} * t{a_1;i_1}",
            1,
            11,
            "index i_1 of tensor t appears once in its term but no operator",
        ),
    ],
)
def test_terms_that_cannot_be_trees(
    text: str, line: int, column: int, message: str
) -> None:
    expression = parse(text, "eq.txt")
    with pytest.raises(SequantError) as info:
        build_forest(expression)
    assert (info.value.line, info.value.column) == (line, column)
    assert str(info.value).startswith(f"eq.txt:{line}:{column}: {message}")


def test_every_example_builds_a_verified_module() -> None:
    for path in sorted(EXAMPLES.glob("*.txt")):
        expression = _example(path.name)
        keys = expression.space_keys()
        module = to_module(expression, keys, separate_instances=True)
        module.verify()
        forest = _forest_op(module)
        assert len(list(forest.trees())) == len(expression.terms)
        assert [s.space_key for s in forest.spaces()] == keys


def test_repeated_terms_on_fresh_labels_share_every_value() -> None:
    from axisflow.sequant.syntax import repeat_with_fresh_labels

    expression = _example("csv_ccsd_singles_residual_df.txt")
    copies = repeat_with_fresh_labels(expression.terms, 3)
    assert len(copies) == 3 * len(expression.terms)
    for original, copy in zip(
        expression.terms, copies[2 * len(expression.terms) :], strict=True
    ):
        assert copy.externals() == original.externals()
        assert copy != original or not [
            i for i in original.appearances() if i not in original.externals()
        ]
    once = build_forest(expression, BatchPolicy.make("Κ"))
    thrice = build_forest(Expression(copies), BatchPolicy.make("Κ"))
    assert len(thrice.values) == len(once.values)
    assert len(thrice.trees) == 3 * len(once.trees)
