"""The canonical factor order (``axisflow.sequant.canonical``) and the forest
the planner reads in it (``build_forest(canonical=True)``): the same however
the bundled equations' factors are ordered and their indices named."""

from __future__ import annotations

import itertools
import math
import random
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow.roles.index import Index
from axisflow.scheduling.memory import Sizing, forest_flops
from axisflow.sequant import Expression, parse, to_model
from axisflow.sequant.canonical import (
    READINGS_LIMIT,
    _containers,
    _Reading,
    certificate,
    class_orders,
    colour_classes,
    tie_classes,
)
from axisflow.sequant.forest import _Builder
from axisflow.sequant.syntax import Tensor, Term
from tests.conftest import EXAMPLES
from tests.forest.strategies import POOL, permuted, renamed

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


@st.composite
def tied_terms(draw: st.DrawFn) -> Term:
    """A product of 2 to 7 tensors of two labels over a few indices
    (composites and nested protos among them): many tie classes."""
    pool = draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=5, unique=True))
    tensors: list[Tensor] = []
    for _ in range(draw(st.integers(2, 7))):
        slots = draw(st.lists(st.sampled_from(pool), min_size=1, max_size=3))
        split = draw(st.integers(0, len(slots)))
        label = draw(st.sampled_from("AB"))
        tensors.append(Tensor(label, tuple(slots[:split]), tuple(slots[split:])))
    return Term(Fraction(1), tuple(tensors))


def least_reading(term: Term) -> tuple[Term, list[list[int]]]:
    """What ``tie_classes`` promises, by brute force: of every order that
    permutes its tie classes, the least sequence of readings, then the
    least unread rest, then the first order."""
    first, classes = colour_classes(term)
    tensors = first.tensors
    best: tuple[object, ...] | None = None
    for parts in itertools.product(*(itertools.permutations(c) for c in classes)):
        order = [n for part in parts for n in part]
        reading = _Reading(_containers(tensors))
        read = [reading.tensor(tensors[n]) for n in order]
        key = (read, repr(reading.unread()), order)
        if best is None or key < best:
            best = key
    assert best is not None
    order = best[2]
    assert isinstance(order, list)
    reordered = Term(first.coefficient, tuple(tensors[n] for n in order))
    return reordered, [c for c in classes if len(c) > 1]


@settings(max_examples=300, deadline=None)
@given(tied_terms())
def test_the_search_finds_the_least_reading_of_every_order(term: Term) -> None:
    """``tie_classes`` follows only the members that can read least at
    each position (those the names so far touch, and one of each group
    that reads alike otherwise): it finds what trying every order finds."""
    first, groups = colour_classes(term)
    if math.prod(math.factorial(len(group)) for group in groups) > READINGS_LIMIT:
        return  # the search may give up there (``READINGS_LIMIT``)
    found, classes = tie_classes(term)
    expected, expected_classes = least_reading(term)
    if not expected_classes:
        assert (found, classes) == (first, [])
        return
    assert classes == expected_classes
    assert found.tensors == expected.tensors


def test_a_long_chain_of_one_label_is_ordered_from_its_end() -> None:
    """A chain ``t{i_1;i_2} * t{i_2;i_3} * ...`` of 60 factors, written in a
    shuffled order: the least reading starts at the factor whose bra
    index no other factor reads as ket, and follows the chain (the search
    follows every start at once; trying each factor at each position made
    it cubic in the factors, 10 s at 200)."""
    count = 60
    chain = [
        Tensor("t", (Index("i", k),), (Index("i", k + 1),)) for k in range(1, count + 1)
    ]
    shuffled = chain[:]
    random.Random(5).shuffle(shuffled)
    found, classes = tie_classes(Term(Fraction(1), tuple(shuffled)))
    assert classes == [list(range(count))]
    assert list(found.tensors) == chain
