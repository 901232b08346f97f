"""The canonical factor order (``axisflow.sequant.canonical``) and the forest
the planner reads in it (``build_forest(canonical=True)``): the same however
the bundled equations' factors are ordered and their indices named."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow.roles.index import Index
from axisflow.scheduling.memory import Sizing, forest_flops
from axisflow.sequant import Expression, parse, to_model
from axisflow.sequant.canonical import certificate, class_orders, tie_classes
from axisflow.sequant.forest import _Builder
from axisflow.sequant.syntax import Tensor, Term
from tests.conftest import EXAMPLES
from tests.forest.strategies import permuted, renamed

BUNDLED = {
    "doubles": ("csv_ccsd_doubles_residual_df", "i=80,a=896,μ̃=896,Κ=1682", "i"),
    "singles": ("csv_ccsd_singles_residual_df", "i=80,a=896,μ̃=896,Κ=1682", "i"),
    "energy": ("csv_ccsd_energy_df", "i=80,a=896,μ̃=896,Κ=1682", "i"),
    "spin-free doubles": ("ccsd_doubles_residual_sf", "i=80,a=896", "i"),
}
"""Bundled equation -> its file, realistic extents and a batched space."""


def bundled(name: str) -> Expression:
    file = BUNDLED[name][0]
    return parse((EXAMPLES / "sequant" / f"{file}.txt").read_text(encoding="utf-8"))


def ladder() -> Term:
    """A ladder term: its two ``g{μ̃;i;Κ}`` are one tie class."""
    return parse("g{μ̃_1;i_1;Κ_1} * g{μ̃_2;i_2;Κ_1} * t{a_1,a_2;μ̃_1,μ̃_2}").terms[0]


def test_tensors_the_colours_cannot_order_are_one_class() -> None:
    term, classes = tie_classes(ladder())
    assert [t.label for t in term.tensors] == ["g", "g", "t"]
    assert classes == [[0, 1]]
    # its two orders read differently (which g meets which μ̃ first)
    orders = class_orders(term, [0, 1])
    assert len(orders) == 2
    assert certificate(orders[0].tensors) < certificate(orders[1].tensors)
    assert certificate(term.tensors) == certificate(orders[0].tensors)


def test_a_term_with_parentheses_keeps_its_order() -> None:
    term = parse("(g{μ̃_2;i_2;Κ_1} * t{a_1,a_2;μ̃_1,μ̃_2}) * g{μ̃_1;i_1;Κ_1}").terms[0]
    assert tie_classes(term) == (term, [])


def test_a_certificate_ignores_names_and_reads_the_order() -> None:
    i1, i2, k = Index("i", 1), Index("i", 2), Index("Κ", 1)
    first = [Tensor("g", (i1,), (k,)), Tensor("g", (i2,), (k,))]
    renamed_ = [Tensor("g", (i2,), (k,)), Tensor("g", (i1,), (k,))]
    assert certificate(first) == certificate(renamed_)
    different = [Tensor("g", (i1,), (k,)), Tensor("h", (i2,), (k,))]
    assert certificate(first) != certificate(different)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(sorted(BUNDLED)), st.randoms(use_true_random=False))
def test_the_first_canonical_order_ignores_factor_order_and_names(
    name: str, rng: random.Random
) -> None:
    expression = bundled(name)
    shuffled = renamed(permuted(expression, rng), rng)
    for term, other in zip(expression.terms, shuffled.terms, strict=True):
        first, classes = tie_classes(term)
        again, classes_again = tie_classes(other)
        assert certificate(first.tensors) == certificate(again.tensors)
        assert classes == classes_again


@pytest.mark.parametrize("name", sorted(BUNDLED))
def test_the_canonical_forest_ignores_factor_order_and_names(name: str) -> None:
    """The forest the planner reads: as many values and multiply-adds for
    two random shuffles of every product and renamings of its indices (the
    written order's forest differs: 0.74 to 1.36 times the multiply-adds,
    ``docs/planning.md``)."""
    _, extents, batch = BUNDLED[name]
    expression = bundled(name)

    def figures(e: Expression) -> tuple[int, int]:
        forest = to_model(e, batch, extents=extents, canonical=True)
        return len(forest.values), forest_flops(forest, Sizing(forest))

    before = figures(expression)
    rng = random.Random(7)
    for _ in range(2):
        assert figures(renamed(permuted(expression, rng), rng)) == before


def test_a_tentative_build_is_undone_and_lists_what_it_added() -> None:
    """``_cheapest_order`` prices each order by building it tentatively:
    what it adds is listed, then removed (names included), whatever the
    forest held before."""
    expression = parse(
        "g{μ̃_1;i_1;Κ_1} * g{μ̃_2;i_2;Κ_1} * t{a_1,a_2;μ̃_1,μ̃_2}"
        " + g{μ̃_1;i_1;Κ_1} * s{μ̃_2;μ̃_1} * t{a_1,a_2;μ̃_2,i_2}"
    )
    builder = _Builder(expression)
    builder.term_root(expression.terms[0])
    before = (dict(builder.leaves), dict(builder.nodes), dict(builder.leaf_names))
    with builder.tentative() as built:
        builder.term_root(expression.terms[1])
        added = built()
        assert added and all(v not in before[1].values() for v in added)
        assert len(builder.nodes) == len(before[1]) + len(added)
        assert len(builder.leaves) > len(before[0])  # s is a new leaf
    assert (builder.leaves, builder.nodes, builder.leaf_names) == before
    # the next value built takes the name the undone one had
    again = builder.term_root(expression.terms[1])
    assert again is not None and again.value.name == added[-1].name
