"""Recomputation (``axisflow.forest.sharing``): values shared by several
trees rebuilt in each, on a hand-written forest, random forests and the
CSV-CCSD doubles."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axisflow.forest.builder import ForestBuilder, loop, use
from axisflow.forest.model import Forest
from axisflow.forest.roles import classify
from axisflow.forest.sharing import (
    closed_upwards,
    reader_trees,
    rebuild_per_tree,
    shared_values,
)
from axisflow.scheduling.check import check_schedule
from axisflow.scheduling.evaluate import compare, evaluate_forest, random_inputs
from axisflow.scheduling.memory import Sizing, forest_flops
from axisflow.scheduling.scheduler import schedule_forest
from axisflow.sequant import BatchPolicy, build_forest, parse
from tests.pipeline.test_random_forests import forests

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sequant"


def two_trees() -> Forest:
    """W = P·U is read by both trees (through X in t0, directly in t1)."""
    builder = ForestBuilder().space("k", 3).space("a", 2)
    builder.input("P", "k_1 a_1").input("U", "k_1 a_1").input("V", "k_1")
    builder.contraction("W", "k_1 a_1", "P k_1 a_1", "U k_1 a_1")
    builder.contraction("X", "a_1", "W k_1 a_1", "V k_1")
    builder.contraction("Y", "k_1", "W k_1 a_1", "V k_1")
    w = use("W", "k_1 a_1", use("P", "k_1 a_1"), use("U", "k_1 a_1"))
    builder.tree("t0", loop("a_1", 0, use("X", "a_1", w, use("V", "k_1"))))
    builder.tree("t1", loop("a_1", 0, use("Y", "k_1", w, use("V", "k_1"))))
    return builder.finish()


def test_a_shared_value_gets_a_copy_per_reader_tree() -> None:
    forest = two_trees()
    assert shared_values(forest) == ["W"]
    rebuilt = rebuild_per_tree(forest)
    assert set(rebuilt.values) == {"P", "U", "V", "W", "X", "Y", "W_t1"}
    assert reader_trees(rebuilt) == {"W": [0], "X": [0], "W_t1": [1], "Y": [1]}
    assert [f.value for f in rebuilt.values["Y"].factors] == ["W_t1", "V"]
    assert [f.value for f in rebuilt.values["W_t1"].factors] == ["P", "U"]
    # the one loop slot of both trees becomes one instance per tree
    instances = [
        {lp.instance for s in rebuilt.sites if s.tree == tree for lp in s.loops}
        for tree in (0, 1)
    ]
    assert instances == [{0}, {1}]
    # the original is left as it was
    assert reader_trees(forest)["W"] == [0, 1]
    assert {lp.instance for s in forest.sites for lp in s.loops} == {0}
    # one more W: 3 * 2 multiply-adds
    assert forest_flops(rebuilt) - forest_flops(forest) == 3 * 2


def test_what_is_rebuilt_is_closed_upwards() -> None:
    builder = ForestBuilder().space("k", 2)
    for name in "ABC":
        builder.input(name, "k_1")
    builder.contraction("S", "k_1", "A k_1", "B k_1")
    builder.contraction("T", "k_1", "S k_1", "C k_1")  # shared, built from S
    s = use("S", "k_1", use("A", "k_1"), use("B", "k_1"))
    t = use("T", "k_1", s, use("C", "k_1"))
    builder.tree("t0", t).tree("t1", t)
    forest = builder.finish()
    assert closed_upwards(forest, ["S"]) == {"S", "T"}
    assert closed_upwards(forest, ["T"]) == {"T"}
    assert closed_upwards(forest, ["A"]) == set()  # an input is never rebuilt
    only_t = rebuild_per_tree(forest, ["T"])
    assert reader_trees(only_t)["S"] == [0, 1]  # still shared, under both Ts
    assert [f.value for f in only_t.values["T_t1"].factors] == ["S", "C"]


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(forests(), st.data(), st.integers(0, 2**16))
def test_rebuilt_forests_compute_the_same_trees(
    forest: Forest, data: st.DataObject, seed: int
) -> None:
    shared = shared_values(forest)
    chosen = data.draw(st.lists(st.sampled_from(shared), unique=True)) if shared else []
    rebuilt = rebuild_per_tree(forest, chosen)
    classify(rebuilt)
    # the same inputs give the same tree results as the shared forest
    inputs = random_inputs(forest, Sizing(forest), seed)
    before = evaluate_forest(forest, inputs)
    after = evaluate_forest(rebuilt, inputs)
    for name, result in before.items():
        np.testing.assert_allclose(after[name], result, rtol=1e-12, atol=1e-12)
    # and the rebuilt forest schedules and agrees with itself batched
    result = schedule_forest(rebuilt)
    assert check_schedule(rebuilt, result.schedule) == []
    assert compare(rebuilt, result.schedule, seed=seed).agrees
    # every chosen value (and what is built from it) is read by one tree
    trees = reader_trees(rebuilt)
    for name in closed_upwards(forest, chosen):
        assert len(trees[name]) == 1
    # each copy costs what its original costs, once per extra reader tree
    copies = sum(
        (len(reader_trees(forest)[name]) - 1)
        * Sizing(forest).flops(forest.values[name])
        for name in closed_upwards(forest, chosen)
    )
    assert forest_flops(rebuilt) - forest_flops(forest) == copies
    # deterministic
    again = rebuild_per_tree(forest, list(reversed(chosen)))
    assert list(again.values) == list(rebuilt.values)
    assert [s.value for s in again.sites] == [s.value for s in rebuilt.sites]


def test_the_doubles_rebuilt_per_tree() -> None:
    text = (EXAMPLES / "csv_ccsd_doubles_residual_df.txt").read_text(encoding="utf-8")
    expression = parse(text)
    policy = BatchPolicy.make("i", "i=80,a=896,μ̃=896,Κ=1682,a<2>=40,a<1>=60", 8)
    forest = build_forest(expression, policy)
    shared = shared_values(forest)
    rebuilt = build_forest(
        expression,
        BatchPolicy.make(
            "i", "i=80,a=896,μ̃=896,Κ=1682,a<2>=40,a<1>=60", 8, share="tree"
        ),
    )
    # the frontend's share="tree" is exactly this transformation
    assert list(rebuilt.values) == list(rebuild_per_tree(forest).values)
    assert shared and all(len(t) == 1 for t in reader_trees(rebuilt).values())
    sizing = Sizing(forest)
    copies = sum(
        (len(reader_trees(forest)[name]) - 1) * sizing.flops(forest.values[name])
        for name in shared
    )
    assert forest_flops(rebuilt) - forest_flops(forest) == copies
    trees_of: dict[int, set[int]] = {}
    for site in rebuilt.sites:
        for lp in site.loops:
            trees_of.setdefault(lp.instance, set()).add(site.tree)
    assert all(len(trees) == 1 for trees in trees_of.values())
