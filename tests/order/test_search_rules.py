"""The contraction-order search on fixed, seeded products: every plan
against the exhaustive oracle of ``test_search`` (flops, the memory rule,
the modes each step keeps), the greedy search against a direct
re-implementation of its documented rule, the connected search against
opt_einsum, and the edges (no leaves, one leaf, bad order, the tolerance
of the memory order, the pair budget).

Deterministic and quick, so that the mutation campaign of the search can
run it for every mutant (the hypothesis tests cover the same ground with
more products).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from fractions import Fraction

import pytest

from axisflow.order import (
    CONNECTED_MAX,
    EXACT_ALL_MAX,
    MEMORY_TOLERANCE,
    Costs,
    Extents,
    Plan,
    plan_product,
)
from axisflow.roles.index import Index
from tests.order.test_search import Oracle, _einsum_cost

Product = tuple[list[list[Index]], list[Index], Extents]


def seeded_product(seed: int, max_leaves: int) -> Product:
    """A random term as test_search's ``products``: leaves over a small pool
    of plain and composite indices, externals the indices seen once."""
    rng = random.Random(seed)
    plain = [Index("i", n) for n in range(1, 5)]
    composites = [
        Index("a", n, rng.sample(plain, rng.randint(1, 2))) for n in range(1, 4)
    ]
    pool = [*plain, Index("Κ", 1), Index("Κ", 2), Index("μ", 1), *composites]
    count = rng.randint(2, max_leaves)
    leaves = [rng.sample(pool, rng.randint(0, 3)) for _ in range(count)]
    seen: dict[Index, int] = {}
    for leaf in leaves:
        for index in leaf:
            seen[index] = seen.get(index, 0) + 1
    externals = [index for index, n in seen.items() if n == 1]
    keys = ("i", "a", "Κ", "μ", "a<1>", "a<2>")
    extents = Extents.make({key: rng.randint(1, 9) for key in keys})
    return leaves, externals, extents


def clusters(plan: Plan) -> list[frozenset[int]]:
    """The leaves under each step's node, in step order."""
    sets = [frozenset({k}) for k in range(plan.leaves)]
    for left, right in plan.steps:
        sets.append(sets[left] | sets[right])
    return sets[plan.leaves :]


def check_against_oracle(plan: Plan, oracle: Oracle) -> None:
    """One tree over all leaves; its flops, peak and kept modes as the
    cost model defines them."""
    assert plan.leaves == len(oracle.leaf_modes)
    assert (plan.flops, plan.peak) == oracle.replay(plan.steps)
    assert list(plan.kept) == [oracle.kept(c) for c in clusters(plan)]
    assert plan.root == plan.leaves + len(plan.steps) - 1


SMALL = [seeded_product(seed, 6) for seed in range(30)]


@pytest.mark.parametrize("product", SMALL, ids=[f"seed{k}" for k in range(30)])
def test_flops_memory_and_file_plans_of_small_products(product: Product) -> None:
    leaves, externals, extents = product
    oracle = Oracle(leaves, externals, extents)
    every = oracle.all_costs()
    flops = plan_product(leaves, externals, Costs(extents), "flops")
    check_against_oracle(flops, oracle)
    assert flops.flops == min(f for f, _ in every)
    assert flops.method == "exact"
    memory = plan_product(leaves, externals, Costs(extents), "memory")
    check_against_oracle(memory, oracle)
    smallest = min(p for _, p in every)
    limit = smallest * (1 + MEMORY_TOLERANCE)
    assert memory.peak <= limit
    assert memory.flops == min(f for f, p in every if p <= limit)
    written = plan_product(leaves, externals, Costs(extents), "file")
    check_against_oracle(written, oracle)
    n = len(leaves)
    assert list(written.steps) == [(0, 1)] + [(n + k, k + 2) for k in range(n - 2)]
    assert written.method == "file"


def test_the_edges_of_plan_product() -> None:
    i, j = Index("i"), Index("j")
    costs = Costs(Extents.make({"i": 3, "j": 5}))
    empty = plan_product([], [], costs)
    assert (empty.leaves, empty.steps, empty.flops, empty.peak) == (0, (), 0, 0)
    assert (empty.method, empty.root) == ("single", 0)
    single = plan_product([[i, j]], [i], costs, "memory")
    assert (single.steps, single.method, single.root, single.peak) == (
        (),
        "single",
        0,
        0,
    )
    with pytest.raises(ValueError) as caught:
        plan_product([[i]], [i], costs, "fast")  # type: ignore[arg-type]
    assert str(caught.value) == "order must be one of file, flops, memory, got 'fast'"
    # An outer product: nothing summed, the result keeps both modes.
    outer = plan_product([[i], [j]], [i, j], costs)
    assert (outer.steps, outer.kept, outer.flops, outer.peak) == (
        ((0, 1),),
        (frozenset({i, j}),),
        15,
        15,
    )


def test_groups_fold_as_written_and_report_their_costs() -> None:
    i, j, k, m = (Index(key) for key in "ijkm")
    leaves = [[i, j], [j, k], [k, m]]
    extents = Extents.make({"i": 2, "j": 7, "k": 3, "m": 5})
    oracle = Oracle(leaves, [i, m], extents)
    for order in ("file", "flops", "memory"):
        # (A*B) fixed, then C: the only tree.
        plan = plan_product(
            leaves, [i, m], Costs(extents), order, groups=[(0, 1)], operands=(~0, 2)
        )
        assert list(plan.steps) == [(0, 1), (3, 2)]
        check_against_oracle(plan, oracle)
        # B*C fixed inside, then A with it: A first is the written order.
        inner = plan_product(
            leaves, [i, m], Costs(extents), order, groups=[(1, 2)], operands=(0, ~0)
        )
        assert list(inner.steps) == [(1, 2), (0, 3)]
        check_against_oracle(inner, oracle)
    # Groups of groups: (((A*B)*C)) with the outer group alone is kept.
    kept = plan_product(
        leaves,
        [i, m],
        Costs(extents),
        "flops",
        groups=[(0, 1), (~0, 2)],
        operands=(~1,),
    )
    assert (kept.method, list(kept.steps)) == ("kept", [(0, 1), (3, 2)])
    assert (kept.flops, kept.peak) == oracle.replay(kept.steps)


def three_chain(size_ik: int) -> Plan:
    """A[i j] B[j k] C[k l] -> [i l] with i = l = 1, j = 10, k = 2, sized by
    a hook: (A*B) keeps {i, k}, sized ``size_ik``; (B*C) keeps {j, l},
    sized 20; the result 1; anything else (the outer product A*C) 1000.
    (A*B)*C costs 20 + 2 multiply-adds, A*(B*C) 20 + 10."""
    i, j, k, m = (Index(key) for key in "ijkm")
    extents = Extents.make({"i": 1, "j": 10, "k": 2, "m": 1})
    sizes = {frozenset({i, k}): size_ik, frozenset({j, m}): 20, frozenset({i, m}): 1}
    costs = Costs(extents, size=lambda kept, _span: sizes.get(kept, 1000))
    return plan_product([[i, j], [j, k], [k, m]], [i, m], costs, "memory")


def test_the_memory_order_takes_fewer_flops_within_the_tolerance() -> None:
    assert Fraction(1, 20) == MEMORY_TOLERANCE
    # 21 is 1.05 x 20: within the tolerance, the cheaper (A*B)*C wins.
    within = three_chain(21)
    assert (list(within.steps), within.peak, within.flops) == ([(0, 1), (3, 2)], 21, 22)
    # 22 is beyond it: the smallest peak wins.
    beyond = three_chain(22)
    assert (list(beyond.steps), beyond.peak, beyond.flops) == ([(1, 2), (0, 3)], 20, 30)


# --------------------------------------------------------------------------
# Greedy, by its documented rule
# --------------------------------------------------------------------------


def greedy_clusters(
    leaves: Sequence[Sequence[Index]], externals: Sequence[Index], extents: Extents
) -> tuple[set[frozenset[int]], int]:
    """Cheapest pair first (multiply-adds, then the size of the result, then
    file order) among pairs sharing a summed mode; when none is left, the
    two smallest values (size, then file order). Returns the clusters of
    the tree and its multiply-adds."""
    oracle = Oracle(leaves, externals, extents)
    needed = oracle.output
    nodes: dict[int, tuple[frozenset[Index], frozenset[int], int]] = {
        k: (modes, frozenset({k}), k) for k, modes in enumerate(oracle.leaf_modes)
    }
    found: set[frozenset[int]] = set()
    flops = 0
    fresh = len(nodes)

    def size(modes: frozenset[Index]) -> int:
        return math.prod(extents.extent(m) for m in modes)

    def kept(a: int, b: int) -> frozenset[Index]:
        others: set[Index] = set(needed)
        for n, (modes, _, _) in nodes.items():
            if n not in (a, b):
                others.update(modes)
        return (nodes[a][0] | nodes[b][0]) & others

    while len(nodes) > 1:
        candidates = []
        for a in nodes:
            for b in nodes:
                (ma, _, oa), (mb, _, ob) = nodes[a], nodes[b]
                if oa < ob and (ma & mb) - needed:
                    key = (size(ma | mb), size(kept(a, b)), oa, ob)
                    candidates.append((key, a, b))
        if candidates:
            _, a, b = min(candidates)
        else:
            a, b = sorted(nodes, key=lambda n: (size(nodes[n][0]), nodes[n][2]))[:2]
        result = kept(a, b)
        flops += size(nodes[a][0] | nodes[b][0])
        leaves_ab = nodes[a][1] | nodes[b][1]
        order = min(nodes[a][2], nodes[b][2])
        del nodes[a], nodes[b]
        nodes[fresh] = (result, leaves_ab, order)
        fresh += 1
        found.add(leaves_ab)
    return found, flops


def long_product(seed: int, count: int) -> Product:
    """A chain of ``count`` tensors over spaces of different extents, with a
    few extra bonds, a detached pair and open indices."""
    rng = random.Random(seed)
    keys = [chr(ord("b") + k) for k in range(12)]
    bonds = [Index(rng.choice(keys), n) for n in range(count + 4)]
    leaves = [[bonds[k], bonds[k + 1]] for k in range(count - 2)]
    for extra in range(2):
        a, b = rng.sample(range(count - 2), 2)
        index = Index("z", extra + 1)
        leaves[a].append(index)
        leaves[b].append(index)
    leaves += [[Index("y", 1)], [Index("y", 1), Index("x", 1)]]  # detached
    externals = [bonds[0], bonds[count - 2], Index("x", 1)]
    extents = Extents.make({key: rng.randint(2, 9) for key in [*keys, "z", "y", "x"]})
    return leaves, externals, extents


@pytest.mark.parametrize("seed", range(4))
def test_greedy_follows_its_rule(seed: int) -> None:
    leaves, externals, extents = long_product(seed, CONNECTED_MAX + 2)
    plan = plan_product(leaves, externals, Costs(extents), "flops")
    assert plan.method == "greedy"
    check_against_oracle(plan, Oracle(leaves, externals, extents))
    expected, flops = greedy_clusters(leaves, externals, extents)
    assert set(clusters(plan)) == expected
    assert plan.flops == flops


def test_greedy_joins_disconnected_values_smallest_first() -> None:
    # Seventeen vectors sharing nothing: outer products only, the two
    # smallest values first every time.
    leaves = [[Index(chr(ord("b") + k % 5), k)] for k in range(CONNECTED_MAX + 1)]
    extents = Extents.make({"b": 2, "c": 3, "d": 5, "e": 7, "f": 11})
    externals = [leaf[0] for leaf in leaves]
    plan = plan_product(leaves, externals, Costs(extents), "flops")
    assert plan.method == "greedy"
    expected, flops = greedy_clusters(leaves, externals, extents)
    assert set(clusters(plan)) == expected and plan.flops == flops


# --------------------------------------------------------------------------
# The connected search
# --------------------------------------------------------------------------


def connected_product(seed: int) -> Product:
    """test_search's ``connected_products``, seeded: a random spanning tree
    of bonds over 9 to 12 tensors, extra bonds, composite bonds, open
    indices."""
    rng = random.Random(seed)
    count = rng.randint(EXACT_ALL_MAX + 1, 12)
    leaves: list[list[Index]] = [[] for _ in range(count)]
    bond = 0

    def fresh() -> Index:
        nonlocal bond
        bond += 1
        if rng.randint(0, 5) == 0:
            return Index("a", bond, [Index("i", rng.randint(1, 3))])
        return Index(rng.choice(["i", "Κ", "μ"]), bond)

    for k in range(1, count):
        index = fresh()
        leaves[k].append(index)
        leaves[rng.randint(0, k - 1)].append(index)
    for _ in range(rng.randint(0, 4)):
        a, b = rng.sample(range(count), 2)
        index = fresh()
        leaves[a].append(index)
        leaves[b].append(index)
    externals: list[Index] = []
    for _ in range(rng.randint(0, 2)):
        index = Index("x", bond + 1 + len(externals))
        leaves[rng.randint(0, count - 1)].append(index)
        externals.append(index)
    keys = ("i", "Κ", "μ", "a", "a<1>", "x")
    extents = Extents.make({key: rng.randint(2, 9) for key in keys})
    return leaves, externals, extents


@pytest.mark.parametrize("seed", range(6))
def test_the_connected_search_is_optimal(seed: int) -> None:
    leaves, externals, extents = connected_product(seed)
    for order in ("flops", "memory"):
        plan = plan_product(leaves, externals, Costs(extents), order)
        assert plan.method == "connected"
        check_against_oracle(plan, Oracle(leaves, externals, extents))
    flops = plan_product(leaves, externals, Costs(extents), "flops")
    optimum = _einsum_cost([tuple(leaf) for leaf in leaves], tuple(externals), extents)
    assert flops.flops == optimum


def test_components_are_searched_apart_and_then_joined() -> None:
    # Two chains of five (connected search each) and a lone vector.
    chain = [Index("i", n) for n in range(6)]
    other = [Index("j", n) for n in range(6)]
    leaves = [[chain[k], chain[k + 1]] for k in range(5)]
    leaves += [[other[k], other[k + 1]] for k in range(5)]
    leaves.append([Index("k", 1)])
    externals = [chain[0], chain[5], other[0], other[5], Index("k", 1)]
    extents = Extents.make({"i": 3, "j": 5, "k": 2})
    oracle = Oracle(leaves, externals, extents)
    for order in ("flops", "memory"):
        plan = plan_product(leaves, externals, Costs(extents), order)
        assert plan.method == "connected"
        check_against_oracle(plan, oracle)
    plan = plan_product(leaves, externals, Costs(extents), "flops")
    # Each chain at its optimum, then the three parts joined at the fewest
    # multiply-adds: the vector (2) with the i result (9), then the j result
    # (25): 18 + 450, against 225 + 450 or 50 + 450.
    assert plan.flops == 4 * 27 + 4 * 125 + 9 * 2 + 18 * 25
    assert frozenset({*range(5), 10}) in clusters(plan)


def test_more_components_than_the_all_splits_search_are_joined_greedily() -> None:
    # Sixteen operands (the connected search's range) in nine components:
    # seven matrix pairs and two lone vectors; nine parts are more than the
    # all-splits search joins, so the parts are joined greedily.
    leaves: list[list[Index]] = []
    externals: list[Index] = []
    for k in range(7):
        bond = Index("s", k + 1)
        leaves += [[Index("i", k + 1), bond], [bond, Index("j", k + 1)]]
        externals += [Index("i", k + 1), Index("j", k + 1)]
    leaves += [[Index("v", 1)], [Index("v", 2)]]
    externals += [Index("v", 1), Index("v", 2)]
    extents = Extents.make({"i": 2, "j": 3, "s": 5, "v": 7})
    plan = plan_product(leaves, externals, Costs(extents), "flops")
    assert len(leaves) <= CONNECTED_MAX and plan.method == "greedy"
    check_against_oracle(plan, Oracle(leaves, externals, extents))
    # Every pair is contracted over its bond, then the parts are joined as
    # the greedy rule joins values.
    expected, flops = greedy_clusters(leaves, externals, extents)
    assert set(clusters(plan)) == expected and plan.flops == flops
    assert {frozenset({2 * k, 2 * k + 1}) for k in range(7)} <= expected


def test_a_product_beyond_the_pair_budget_falls_back_to_greedy() -> None:
    # Sixteen tensors sharing one summed index: a clique, far more connected
    # splits than the budget.
    shared = Index("s", 1)
    leaves = [[shared, Index("i", k + 1)] for k in range(CONNECTED_MAX)]
    externals = [Index("i", k + 1) for k in range(CONNECTED_MAX)]
    extents = Extents.make({"s": 2, "i": 2})
    plan = plan_product(leaves, externals, Costs(extents), "flops")
    assert plan.method == "greedy"
    expected, flops = greedy_clusters(leaves, externals, extents)
    assert set(clusters(plan)) == expected and plan.flops == flops


def test_a_group_whose_result_dominates_every_peak_leaves_the_choice_to_flops() -> None:
    """A[i j] B[j k] (C1[k n] C2[n m]) -> [i m], the group C = C1*C2 kept:
    its result {k, m} is sized 1000 by the hook, larger than any choice
    outside it, so every plan peaks at 1000 and the fewest multiply-adds
    win: (A*B)*C (20 + 2), not A*(B*C) (20 + 10) whose own intermediate (20)
    is the smaller one."""
    i, j, k, m, n = (Index(key) for key in "ijkmn")
    extents = Extents.make({"i": 1, "j": 10, "k": 2, "m": 1, "n": 3})
    sizes = {
        frozenset({i, k}): 22,
        frozenset({j, m}): 20,
        frozenset({k, m}): 1000,
        frozenset({i, m}): 1,
    }
    costs = Costs(extents, size=lambda kept, _span: sizes.get(kept, 1000))
    leaves = [[i, j], [j, k], [k, n], [n, m]]
    plan = plan_product(
        leaves, [i, m], costs, "memory", groups=[(2, 3)], operands=(0, 1, ~0)
    )
    assert list(plan.steps) == [(2, 3), (0, 1), (5, 4)]
    assert plan.peak == 1000


@pytest.mark.parametrize("seed", range(5))
def test_greedy_follows_its_rule_when_indices_are_shared_widely(seed: int) -> None:
    # Eighteen tensors over a pool of ten indices: many indices sit on three
    # or more tensors, so merging two of their holders leaves them live.
    rng = random.Random(seed)
    pool = [Index("i", n) for n in range(1, 5)] + [Index("Κ", 1), Index("Κ", 2)]
    pool += [Index("a", 1, [Index("i", 1)]), Index("a", 2, [Index("i", 2)])]
    pool += [Index("μ", 1), Index("μ", 2)]
    leaves = [rng.sample(pool, rng.randint(1, 3)) for _ in range(CONNECTED_MAX + 2)]
    seen: dict[Index, int] = {}
    for leaf in leaves:
        for index in leaf:
            seen[index] = seen.get(index, 0) + 1
    externals = [index for index, n in seen.items() if n == 1]
    keys = ("i", "Κ", "μ", "a", "a<1>")
    extents = Extents.make({key: rng.randint(2, 9) for key in keys})
    plan = plan_product(leaves, externals, Costs(extents), "flops")
    assert plan.method == "greedy"
    check_against_oracle(plan, Oracle(leaves, externals, extents))
    expected, flops = greedy_clusters(leaves, externals, extents)
    assert set(clusters(plan)) == expected
    assert plan.flops == flops


def test_components_are_found_wherever_their_operands_are() -> None:
    # Nine operands: a lone vector first, then two chains whose operands
    # alternate (components {1, 3, 5, 7} and {2, 4, 6, 8}).
    i = [Index("i", n) for n in range(5)]
    j = [Index("j", n) for n in range(5)]
    leaves: list[list[Index]] = [[Index("k", 1)]]
    for n in range(4):
        leaves += [[i[n], i[n + 1]], [j[n], j[n + 1]]]
    externals = [Index("k", 1), i[0], i[4], j[0], j[4]]
    extents = Extents.make({"i": 3, "j": 5, "k": 2})
    plan = plan_product(leaves, externals, Costs(extents), "flops")
    assert plan.method == "connected"
    check_against_oracle(plan, Oracle(leaves, externals, extents))
    # Each chain at its optimum (three 3x3x3 and three 5x5x5 products), then
    # the parts joined: (k x i-result) x j-result, 18 + 450.
    assert plan.flops == 3 * 27 + 3 * 125 + 2 * 9 + 18 * 25
    assert frozenset({1, 3, 5, 7}) in clusters(plan)
    assert frozenset({2, 4, 6, 8}) in clusters(plan)


def test_the_connected_search_makes_no_outer_product() -> None:
    """U0[a] U1[a b c] U2[b] and a chain of six matrices from c: the outer
    product U0 x U2 first (6 + 60) would be cheaper than contracting U1
    with each (60 + 30), but the connected search (nine operands) only
    joins operands that share a summed index, as opt_einsum without
    outer products does."""
    a, b = Index("a", 1), Index("b", 1)
    c = [Index("c", n) for n in range(1, 8)]
    leaves = [[a], [a, b, c[0]], [b]] + [[c[n], c[n + 1]] for n in range(6)]
    externals = [c[6]]
    extents = Extents.make({"a": 2, "b": 3, "c": 10})
    plan = plan_product(leaves, externals, Costs(extents), "flops")
    assert plan.method == "connected"
    check_against_oracle(plan, Oracle(leaves, externals, extents))
    optimum = _einsum_cost([tuple(leaf) for leaf in leaves], tuple(externals), extents)
    assert plan.flops == optimum
    assert frozenset({0, 2}) not in clusters(plan)


def span_chain(size_ijk: int) -> Plan:
    """three_chain with a hook that sizes by the leaves' modes below a value
    (its span) instead of the modes it keeps: (A*B) covers {i, j, k}, sized
    ``size_ijk``; (B*C) covers {j, k, m}, sized 20; the result 1."""
    i, j, k, m = (Index(key) for key in "ijkm")
    extents = Extents.make({"i": 1, "j": 10, "k": 2, "m": 1})

    def size(kept: frozenset[Index], span: frozenset[Index]) -> int:
        if kept == {i, m}:
            return 1
        return {frozenset({i, j, k}): size_ijk, frozenset({j, k, m}): 20}.get(
            span, 1000
        )

    return plan_product(
        [[i, j], [j, k], [k, m]], [i, m], Costs(extents, size), "memory"
    )


def test_the_size_hook_sees_the_modes_of_the_leaves_below() -> None:
    within = span_chain(21)
    assert (list(within.steps), within.peak) == ([(0, 1), (3, 2)], 21)
    beyond = span_chain(22)
    assert (list(beyond.steps), beyond.peak) == ([(1, 2), (0, 3)], 20)


def test_ties_keep_the_file_order_in_the_connected_search() -> None:
    # Ten equal matrices in a chain: every tree costs the same.
    count = EXACT_ALL_MAX + 2
    indices = [Index("i", n) for n in range(count + 1)]
    leaves = [[indices[k], indices[k + 1]] for k in range(count)]
    externals = [indices[0], indices[count]]
    for order in ("flops", "memory"):
        plan = plan_product(leaves, externals, Costs(Extents.make({"i": 3})), order)
        assert plan.method == "connected"
        assert list(plan.steps) == [(0, 1)] + [
            (count + k, k + 2) for k in range(count - 2)
        ]


def test_equal_splits_of_equal_size_keep_the_latest_operand_on_the_right() -> None:
    # Three vectors over one index: every pair costs the same, and both
    # (A*B)*C and (A*C)*B put one operand on the right; the latest (C) wins.
    i = Index("i", 1)
    for order in ("flops", "memory"):
        plan = plan_product([[i], [i], [i]], [], Costs(Extents.make({"i": 3})), order)
        assert list(plan.steps) == [(0, 1), (3, 2)]
