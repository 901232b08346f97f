"""Term plans, the forest built along them, the batch-aware size hook, and
plans printed as parentheses."""

from __future__ import annotations

from pathlib import Path

import pytest

from axisflow.forest.frames import expand_modes
from axisflow.order import ORDERS, Costs, Extents, Order
from axisflow.roles.index import Index
from axisflow.scheduling.memory import Sizing
from axisflow.sequant import BatchPolicy, Expression, build_forest, deparse, parse
from axisflow.sequant.ordering import (
    batched_size,
    ordered_expression,
    parenthesize,
    plan_term,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sequant"
EXTENTS = {"i": 80, "a": 896, "μ̃": 896, "Κ": 1682, "a<2>": 40}


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize(
    "path", sorted(EXAMPLES.glob("csv_ccsd_*.txt")), ids=lambda p: p.name
)
def test_the_forest_costs_what_the_plan_says(path: Path, order: Order) -> None:
    """Built alone, each term's values have exactly the modes its plan keeps:
    the memory model's multiply-adds (per use-site) and largest value equal
    the plan's."""
    for term in parse(path.read_text("utf-8")).terms:
        alone = Expression((term,))
        keys = alone.space_keys()
        extents = {k: n for k, n in EXTENTS.items() if k.split("<")[0] in keys}
        plan = plan_term(term, Costs(Extents.make(EXTENTS)), order)
        forest = build_forest(alone, BatchPolicy.make(extents=extents), order=order)
        sizing = Sizing(forest)
        # One internal use-site per step (a value shared inside the term has
        # several), each costing what its value costs.
        built = [forest.values[s.value] for s in forest.sites if s.children]
        assert len(built) == len(plan.steps)
        assert sum(sizing.flops(v) for v in built) == plan.flops
        largest = max((sizing.elements(v) for v in built), default=0)
        assert largest == plan.peak


def test_a_mode_needed_only_through_a_composite_stays_as_an_index() -> None:
    # i_1 is on X and Y only, but the composite c_1<i_1> of Z and W depends on
    # it: summing i_1 at X*Y would be wrong, so X*Y keeps it.
    text = "X{;i_1} * Y{i_1;} * Z{c_1<i_1>;} * W{;c_1<i_1>}"
    forest = build_forest(parse(text), order="file")
    (tree,) = forest.trees
    assert tree.root is not None
    site = forest.sites[tree.root]
    while forest.sites[site.children[0]].children:
        site = forest.sites[site.children[0]]
    assert site.labels == (Index.parse("i_1"),)
    assert forest.values[site.value].contracted == ()


def test_parenthesized_terms_keep_their_pairs() -> None:
    (term,) = parse("(g{a_1;i_1} * t{i_1;j_1}) * (f{j_1;k_1} * u{k_1;a_1})").terms
    for order in ORDERS:
        plan = plan_term(term, Costs(Extents.make(EXTENTS)), order)
        assert plan.steps == ((0, 1), (2, 3), (4, 5))


def test_batched_sizes_slice_looped_modes_until_a_reduction() -> None:
    i1, i2, a1, k1 = map(Index.parse, ["i_1", "i_2", "a_1", "Κ_1"])
    extents = Extents.make({"i": 10, "a": 7, "Κ": 5})
    modes = frozenset({i1, i2, a1, k1})
    size = batched_size(extents, [k1, i1], modes, frozenset({i1, i2}))
    # Carries both looped modes: a slice of each.
    assert size(frozenset({i1, k1, a1}), frozenset({i1, k1, a1})) == 7
    # Κ_1 (the outer loop) summed below: i_1 now counts in full.
    assert size(frozenset({i1, a1}), frozenset({i1, k1, a1})) == 70
    # i_1 (the inner loop) summed below: Κ_1 stays sliced.
    assert size(frozenset({k1, a1}), frozenset({i1, k1, a1})) == 7
    # The root: its full buffer.
    assert size(frozenset({i1, i2}), modes) == 100


def test_modes_include_protos() -> None:
    assert expand_modes(map(Index.parse, ["a_1<i_1,i_2>", "i_3"])) == tuple(
        map(Index.parse, ["a_1<i_1,i_2>", "i_3", "i_1", "i_2"])
    )


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize(
    "path", sorted(EXAMPLES.glob("csv_ccsd_*.txt")), ids=lambda p: p.name
)
def test_deparse_prints_the_built_trees_and_reading_them_keeps_them(
    path: Path, order: Order
) -> None:
    expression = parse(path.read_text("utf-8"))
    costs = Costs(Extents.make(EXTENTS))
    ordered = ordered_expression(expression, costs, order)
    text = deparse(ordered)
    again = parse(text)
    assert again == ordered
    assert deparse(again) == text
    for term, kept in zip(expression.terms, again.terms, strict=True):
        plan = plan_term(term, costs, order)
        for other in ORDERS:  # parentheses fix the tree whatever the order
            assert plan_term(kept, costs, other).flops == plan.flops
    # Built from the printed text (sharing across terms may differ: the
    # tensors are in another order), every use-site costs what the plans say.
    forest = build_forest(again, BatchPolicy.make(extents=EXTENTS), order="file")
    sizing = Sizing(forest)
    per_site = sum(sizing.flops(forest.values[s.value]) for s in forest.sites)
    assert per_site == sum(plan_term(t, costs, order).flops for t in expression.terms)


def test_parenthesize_puts_each_subtree_in_parentheses() -> None:
    (term,) = parse("A{i;j} * C{k;n} * B{j;k} * D{n;m}").terms
    extents = Extents.make({"i": 2, "j": 100, "k": 2, "n": 100, "m": 2})
    plan = plan_term(term, Costs(extents), "flops")
    assert deparse(Expression((parenthesize(term, plan),))) == (
        "(A{i;j} * B{j;k}) * (C{k;n} * D{n;m})"
    )
