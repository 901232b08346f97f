"""Contraction orders against oracles written here and opt_einsum's paths.

The oracles recompute the cost model from its definition (sets of modes,
recursion over every two-way split of every subset), independently of the
bit-mask search in ``axisflow.order.search``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import opt_einsum
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow.order import (
    CONNECTED_MAX,
    EXACT_ALL_MAX,
    MEMORY_TOLERANCE,
    Costs,
    Extents,
    Plan,
    PlanCache,
    plan_product,
)
from axisflow.roles.index import Index
from axisflow.sequant import Expression, parse

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sequant"
FULL = Extents.make({"i": 80, "a": 896, "μ̃": 896, "Κ": 1682})
COMPOSITE = Extents.make(
    {"i": 80, "a": 896, "μ̃": 896, "Κ": 1682, "a<2>": 40, "a<1>": 60}
)


# --------------------------------------------------------------------------
# The cost model, from its definition
# --------------------------------------------------------------------------


def _modes(indices: Sequence[Index]) -> frozenset[Index]:
    found = set(indices)
    for index in indices:
        found.update(index.all_protos())
    return frozenset(found)


class Oracle:
    """Every binarization of a product, by (multiply-adds, peak) pairs."""

    def __init__(
        self,
        leaves: Sequence[Sequence[Index]],
        externals: Sequence[Index],
        extents: Extents,
    ) -> None:
        self.leaf_modes = [_modes(leaf) for leaf in leaves]
        self.output = _modes(externals)
        self.extents = extents

    def size(self, modes: frozenset[Index]) -> int:
        return math.prod(self.extents.extent(m) for m in modes)

    def kept(self, subset: frozenset[int]) -> frozenset[Index]:
        if len(subset) == 1:
            return self.leaf_modes[next(iter(subset))]
        inside: set[Index] = set()
        outside: set[Index] = set(self.output)
        for position, modes in enumerate(self.leaf_modes):
            (inside if position in subset else outside).update(modes)
        return frozenset(inside & outside)

    def pair(self, left: frozenset[int], right: frozenset[int]) -> int:
        return self.size(self.kept(left) | self.kept(right))

    def all_costs(self) -> set[tuple[int, int]]:
        """(multiply-adds, peak) of every binarization of the whole product."""

        @cache
        def costs(subset: frozenset[int]) -> frozenset[tuple[int, int]]:
            if len(subset) == 1:
                return frozenset({(0, 0)})
            members = sorted(subset)
            first, rest = members[0], members[1:]
            found: set[tuple[int, int]] = set()
            size = self.size(self.kept(subset))
            for mask in range(1 << len(rest)):
                left = frozenset(
                    [first] + [m for b, m in enumerate(rest) if mask >> b & 1]
                )
                right = subset - left
                if not right:
                    continue
                here = self.pair(left, right)
                for lf, lp in costs(left):
                    for rf, rp in costs(right):
                        found.add((lf + rf + here, max(lp, rp, size)))
            return frozenset(found)

        return set(costs(frozenset(range(len(self.leaf_modes)))))

    def replay(self, steps: Sequence[tuple[int, int]]) -> tuple[int, int]:
        """(multiply-adds, peak) of given SSA steps, checking they form one
        tree over all leaves."""
        sets: list[frozenset[int]] = [
            frozenset({k}) for k in range(len(self.leaf_modes))
        ]
        used: set[int] = set()
        flops = peak = 0
        for left, right in steps:
            assert left not in used and right not in used
            assert not sets[left] & sets[right]
            used.update((left, right))
            flops += self.pair(sets[left], sets[right])
            sets.append(sets[left] | sets[right])
            peak = max(peak, self.size(self.kept(sets[-1])))
        assert len(sets[-1]) == len(self.leaf_modes)
        return flops, peak


# --------------------------------------------------------------------------
# Random products
# --------------------------------------------------------------------------

_occupied = [Index("i", n) for n in range(1, 5)]


@st.composite
def products(
    draw: st.DrawFn, max_leaves: int
) -> tuple[list[list[Index]], list[Index], Extents]:
    """A random term: leaves over a small pool of plain and composite
    indices (so many are shared), externals the indices appearing once."""
    composites = [
        Index(
            "a",
            n,
            draw(
                st.lists(
                    st.sampled_from(_occupied), min_size=1, max_size=2, unique=True
                )
            ),
        )
        for n in range(1, 4)
    ]
    pool = [*_occupied, Index("Κ", 1), Index("Κ", 2), Index("μ", 1), *composites]
    count = draw(st.integers(1, max_leaves))
    leaves = [
        draw(st.lists(st.sampled_from(pool), min_size=0, max_size=3, unique=True))
        for _ in range(count)
    ]
    seen: dict[Index, int] = {}
    for leaf in leaves:
        for index in leaf:
            seen[index] = seen.get(index, 0) + 1
    externals = [index for index, n in seen.items() if n == 1]
    extents = Extents.make(
        {
            "i": draw(st.integers(1, 9)),
            "a": draw(st.integers(1, 9)),
            "Κ": draw(st.integers(1, 9)),
            "μ": draw(st.integers(1, 9)),
            "a<1>": draw(st.integers(1, 9)),
            "a<2>": draw(st.integers(1, 9)),
        }
    )
    return leaves, externals, extents


def _check_plan(plan: Plan, oracle: Oracle) -> None:
    """The plan is one tree over all leaves and reports its own costs."""
    assert plan.leaves == len(oracle.leaf_modes)
    if plan.leaves > 1:
        assert (plan.flops, plan.peak) == oracle.replay(plan.steps)
    assert len(plan.kept) == len(plan.steps)


@settings(max_examples=150, deadline=None)
@given(products(EXACT_ALL_MAX))
def test_flops_equal_the_exhaustive_optimum(
    product: tuple[list[list[Index]], list[Index], Extents],
) -> None:
    leaves, externals, extents = product
    oracle = Oracle(leaves, externals, extents)
    plan = plan_product(leaves, externals, Costs(extents), "flops")
    _check_plan(plan, oracle)
    assert plan.flops == min(flops for flops, _ in oracle.all_costs())


@settings(max_examples=150, deadline=None)
@given(products(EXACT_ALL_MAX))
def test_memory_is_the_smallest_peak_then_fewest_flops(
    product: tuple[list[list[Index]], list[Index], Extents],
) -> None:
    leaves, externals, extents = product
    oracle = Oracle(leaves, externals, extents)
    plan = plan_product(leaves, externals, Costs(extents), "memory")
    _check_plan(plan, oracle)
    every = oracle.all_costs()
    smallest = min(peak for _, peak in every)
    limit = smallest * (1 + MEMORY_TOLERANCE)
    assert plan.peak <= limit
    assert plan.flops == min(flops for flops, peak in every if peak <= limit)


@settings(max_examples=100, deadline=None)
@given(products(EXACT_ALL_MAX))
def test_file_order_is_the_left_to_right_fold(
    product: tuple[list[list[Index]], list[Index], Extents],
) -> None:
    leaves, externals, extents = product
    plan = plan_product(leaves, externals, Costs(extents), "file")
    n = len(leaves)
    expected = [(0, 1)] + [(n + k, k + 2) for k in range(n - 2)]
    assert list(plan.steps) == (expected if n > 1 else [])
    _check_plan(plan, Oracle(leaves, externals, extents))


def test_ties_keep_the_file_order() -> None:
    # A chain of equal matrices: every tree costs the same.
    indices = [Index("i", n) for n in range(6)]
    leaves = [[indices[k], indices[k + 1]] for k in range(5)]
    externals = [indices[0], indices[5]]
    plan = plan_product(leaves, externals, Costs(Extents.make({"i": 3})), "flops")
    assert list(plan.steps) == [(0, 1), (5, 2), (6, 3), (7, 4)]


def test_bushy_trees_are_found() -> None:
    # (A*B)*(C*D) with small A-B and C-D bonds and a big middle bond.
    i, j, k, n, m = (Index(key) for key in "ijknm")
    leaves = [[i, j], [j, k], [k, n], [n, m]]
    extents = Extents.make({"i": 2, "j": 100, "k": 2, "n": 100, "m": 2})
    plan = plan_product(leaves, [i, m], Costs(extents), "flops")
    assert list(plan.steps) == [(0, 1), (2, 3), (4, 5)]
    assert plan.flops == 2 * 100 * 2 * 2 + 2 * 2 * 2


def test_parentheses_are_kept_and_only_the_outer_product_is_ordered() -> None:
    i, j, k, n, m = (Index(key) for key in "ijknm")
    leaves = [[i, j], [j, k], [k, n], [n, m]]
    extents = Extents.make({"i": 2, "j": 100, "k": 2, "n": 100, "m": 2})
    # (B*C) fixed: the optimizer can only choose how A, (B*C), D combine.
    plan = plan_product(
        leaves, [i, m], Costs(extents), "flops", groups=[(1, 2)], operands=(0, ~0, 3)
    )
    assert plan.steps[0] == (1, 2)
    oracle = Oracle(leaves, [i, m], extents)
    assert (plan.flops, plan.peak) == oracle.replay(plan.steps)
    # A fully parenthesized product is kept whatever the order.
    kept = plan_product(
        leaves,
        [i, m],
        Costs(extents),
        "flops",
        groups=[(0, 1), (~0, 2), (~1, 3)],
        operands=(~2,),
    )
    assert list(kept.steps) == [(0, 1), (4, 2), (5, 3)]
    assert kept.method == "kept"


def test_batch_size_hook_drives_the_memory_order() -> None:
    # Slicing i makes the (i,k) intermediate of B*X the smallest one.
    i, j, k = Index("i"), Index("j"), Index("k")
    leaves = [[i], [j], [i, j, k]]
    extents = Extents.make({"i": 10, "j": 10, "k": 3})
    plain = plan_product(leaves, [k], Costs(extents), "memory")
    sliced = Costs(
        extents,
        size=lambda kept, _span: math.prod(
            1 if m == i else extents.extent(m) for m in kept
        ),
    )
    batched = plan_product(leaves, [k], sliced, "memory")
    assert plain.steps[0] == (0, 2)
    assert plain.peak == 30
    assert batched.steps[0] == (1, 2)
    assert batched.peak == 3


def test_greedy_handles_long_products_without_recursion() -> None:
    count = 2_000
    indices = [Index("i", n) for n in range(count + 1)]
    leaves = [[indices[k], indices[k + 1]] for k in range(count)]
    plan = plan_product(leaves, [indices[0], indices[-1]], Costs(Extents()), "flops")
    assert plan.method == "greedy"
    assert len(plan.steps) == count - 1
    assert plan.flops == (count - 1) * 4**3


def test_between_the_thresholds_the_connected_search_runs() -> None:
    count = CONNECTED_MAX
    indices = [Index("i", n) for n in range(count + 1)]
    leaves = [[indices[k], indices[k + 1]] for k in range(count)]
    plan = plan_product(leaves, [indices[0], indices[-1]], Costs(Extents()), "flops")
    assert plan.method == "connected"
    assert plan.flops == (count - 1) * 4**3


def test_disconnected_products_join_their_components() -> None:
    # Two chains that share nothing: each is optimized, then joined.
    chain = [Index("i", n) for n in range(6)]
    other = [Index("j", n) for n in range(6)]
    leaves = [[chain[k], chain[k + 1]] for k in range(5)]
    leaves += [[other[k], other[k + 1]] for k in range(5)]
    externals = [chain[0], chain[5], other[0], other[5]]
    extents = Extents.make({"i": 3, "j": 5})
    plan = plan_product(leaves, externals, Costs(extents), "flops")
    assert plan.method == "connected"
    oracle = Oracle(leaves, externals, extents)
    assert (plan.flops, plan.peak) == oracle.replay(plan.steps)
    assert plan.flops == 4 * 27 + 4 * 125 + 9 * 25


# --------------------------------------------------------------------------
# opt_einsum on every term of the bundled equations
# --------------------------------------------------------------------------


def _einsum_cost(
    leaves: list[tuple[Index, ...]], externals: tuple[Index, ...], extents: Extents
) -> int:
    """opt_einsum's optimal path (its dynamic programme, minimizing its own
    multiply-add count, which is the product of the union's extents), then
    that path's cost recomputed by the oracle here."""
    letters: dict[Index, str] = {}
    for modes in [*(_modes(leaf) for leaf in leaves), _modes(externals)]:
        for mode in sorted(modes, key=Index.sort_key):
            letters.setdefault(mode, opt_einsum.get_symbol(len(letters)))
    inputs = [frozenset(letters[m] for m in _modes(leaf)) for leaf in leaves]
    output = frozenset(letters[m] for m in _modes(externals))
    sizes = {letter: extents.extent(mode) for mode, letter in letters.items()}
    search = opt_einsum.paths.DynamicProgramming(
        minimize="flops", search_outer=len(leaves) <= EXACT_ALL_MAX
    )
    path = search(list(inputs), output, sizes)
    oracle = Oracle(leaves, externals, extents)
    current: list[frozenset[int]] = [frozenset({k}) for k in range(len(leaves))]
    flops = 0
    for pair in path:
        if len(pair) == 1:
            continue
        left, right = (current[p] for p in pair)
        flops += oracle.pair(left, right)
        current = [c for n, c in enumerate(current) if n not in pair] + [left | right]
    return flops


def _bundled_terms() -> list[tuple[str, int]]:
    found: list[tuple[str, int]] = []
    for path in sorted(EXAMPLES.glob("csv_ccsd_*.txt")):
        expression = parse(path.read_text("utf-8"))
        found.extend((path.name, n) for n in range(len(expression.terms)))
    return found


@cache
def _expression(name: str) -> Expression:
    return parse((EXAMPLES / name).read_text("utf-8"))


@pytest.mark.parametrize("extents", [FULL, COMPOSITE], ids=["full", "composite"])
@pytest.mark.parametrize(("name", "number"), _bundled_terms())
def test_flops_equal_opt_einsum_on_every_bundled_term(
    name: str, number: int, extents: Extents
) -> None:
    term = _expression(name).terms[number]
    leaves = [t.indices for t in term.tensors]
    plan = plan_product(leaves, term.externals(), Costs(extents), "flops")
    assert plan.flops == _einsum_cost(leaves, term.externals(), extents)


@st.composite
def connected_products(
    draw: st.DrawFn,
) -> tuple[list[list[Index]], list[Index], Extents]:
    """A random connected network of 9 to 12 tensors (beyond the all-splits
    search): a random spanning tree of bonds, extra bonds, some composite
    bonds and open indices."""
    count = draw(st.integers(EXACT_ALL_MAX + 1, 12))
    leaves: list[list[Index]] = [[] for _ in range(count)]
    bond = 0

    def fresh() -> Index:
        nonlocal bond
        bond += 1
        if draw(st.integers(0, 5)) == 0:
            return Index("a", bond, [Index("i", draw(st.integers(1, 3)))])
        return Index(draw(st.sampled_from(["i", "Κ", "μ"])), bond)

    for k in range(1, count):
        index = fresh()
        leaves[k].append(index)
        leaves[draw(st.integers(0, k - 1))].append(index)
    for _ in range(draw(st.integers(0, 4))):
        a, b = draw(
            st.lists(st.integers(0, count - 1), min_size=2, max_size=2, unique=True)
        )
        index = fresh()
        leaves[a].append(index)
        leaves[b].append(index)
    externals: list[Index] = []
    for _ in range(draw(st.integers(0, 2))):
        index = Index("x", bond + 1 + len(externals))
        leaves[draw(st.integers(0, count - 1))].append(index)
        externals.append(index)
    extents = Extents.make(
        {key: draw(st.integers(2, 9)) for key in ("i", "Κ", "μ", "a", "a<1>", "x")}
    )
    return leaves, externals, extents


@settings(max_examples=40, deadline=None)
@given(connected_products())
def test_connected_search_equals_opt_einsum_beyond_the_all_splits_search(
    product: tuple[list[list[Index]], list[Index], Extents],
) -> None:
    leaves, externals, extents = product
    plan = plan_product(leaves, externals, Costs(extents), "flops")
    _check_plan(plan, Oracle(leaves, externals, extents))
    optimum = _einsum_cost([tuple(leaf) for leaf in leaves], tuple(externals), extents)
    if plan.method == "connected":
        assert plan.flops == optimum
    else:  # a proto shared by all tensors: more splits than PAIR_BUDGET
        assert plan.method == "greedy"
        assert plan.flops >= optimum


# --------------------------------------------------------------------------
# The plan cache: the same plans, found once per network
# --------------------------------------------------------------------------


def _renamed(
    leaves: list[list[Index]], externals: list[Index], shift: int
) -> tuple[list[list[Index]], list[Index]]:
    """Every index renamed (ordinals shifted, protos too): the same network
    under other names."""

    def rename(index: Index) -> Index:
        return Index(
            index.base_key, (index.ordinal or 0) + shift, map(rename, index.protos)
        )

    return [[rename(i) for i in leaf] for leaf in leaves], [
        rename(i) for i in externals
    ]


def _facts(plan: Plan) -> tuple[object, ...]:
    return (plan.leaves, plan.steps, plan.kept, plan.flops, plan.peak, plan.method)


@settings(max_examples=60, deadline=None)
@given(connected_products(), st.sampled_from(["flops", "memory"]))
def test_a_cached_plan_is_the_plan_of_the_renamed_product(
    product: tuple[list[list[Index]], list[Index], Extents], order: str
) -> None:
    leaves, externals, extents = product
    assert order in ("flops", "memory")
    shared = PlanCache()
    first = plan_product(leaves, externals, Costs(extents), order, cache=shared)
    assert _facts(first) == _facts(
        plan_product(leaves, externals, Costs(extents), order)
    )
    renamed, renamed_externals = _renamed(leaves, externals, 100)
    again = plan_product(
        renamed, renamed_externals, Costs(extents), order, cache=shared
    )
    fresh = plan_product(renamed, renamed_externals, Costs(extents), order)
    assert _facts(again) == _facts(fresh)
    # the kept modes are the renamed product's own indices
    names = {mode for leaf in renamed for index in leaf for mode in _modes([index])}
    assert all(kept <= names for kept in again.kept)


def test_the_cache_serves_every_bundled_term_as_a_fresh_search_would() -> None:
    for name in (
        "csv_ccsd_singles_residual_df.txt",
        "csv_ccsd_doubles_residual_df.txt",
    ):
        for extents in (FULL, COMPOSITE):
            for order in ("flops", "memory"):
                shared = PlanCache()
                for term in _expression(name).terms:
                    leaves = [t.indices for t in term.tensors]
                    args = (leaves, term.externals(), Costs(extents), order)
                    cached = plan_product(
                        *args, term.groups, term.operands(), cache=shared
                    )
                    alone = plan_product(*args, term.groups, term.operands())
                    assert _facts(cached) == _facts(alone)


def test_the_cache_is_keyed_by_extents_and_file_order() -> None:
    x, y, i, j = Index("x", 1), Index("y", 1), Index("i", 1), Index("i", 2)
    chain = [[x, i], [i, j], [j, y]]
    wide_x = Extents.make({"x": 100, "y": 1, "i": 10})
    wide_y = Extents.make({"x": 1, "y": 100, "i": 10})
    cases = [(chain, wide_x), (chain, wide_y), (chain[::-1], wide_x)]
    shared = PlanCache()
    cached = [
        plan_product(leaves, [x, y], Costs(extents), "flops", cache=shared)
        for leaves, extents in cases
    ]
    fresh = [
        plan_product(leaves, [x, y], Costs(extents), "flops")
        for leaves, extents in cases
    ]
    assert [_facts(p) for p in cached] == [_facts(p) for p in fresh]
    # the same bits under other extents: the other end of the chain first
    assert cached[0].steps == ((1, 2), (0, 3))
    assert cached[1].steps == ((0, 1), (3, 2))


def test_the_process_keeps_the_pairs_of_the_graphs_used_last(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Pairs depend on the connectivity graph alone: the process-wide table
    # gives each graph's pairs as a fresh enumeration would, keeps at most
    # SHARED_PAIRS of them, and drops the graphs used longest ago first.
    from axisflow.order import search

    shared = search._SharedPairs()
    path = (0b10, 0b101, 0b1010, 0b100)  # 0-1-2-3
    star = (0b1110, 0b1, 0b1, 0b1)  # 0 joined to 1, 2, 3
    counts = {
        graph: len(search._connected_pairs(list(graph), search.PAIR_BUDGET))
        for graph in (path, star)
    }
    monkeypatch.setattr(search, "SHARED_PAIRS", counts[path] + counts[star])
    for graph in (path, star, path):
        assert shared.get(graph) == search._connected_pairs(
            list(graph), search.PAIR_BUDGET
        )
    budget = search.PAIR_BUDGET
    assert list(shared._pairs) == [(budget, star), (budget, path)]  # path last
    triangle = (0b110, 0b101, 0b11)
    shared.get(triangle)  # over the bound: star (used longest ago) goes
    assert list(shared._pairs) == [(budget, path), (budget, triangle)]
    assert shared._count == counts[path] + len(
        search._connected_pairs(list(triangle), search.PAIR_BUDGET)
    )
