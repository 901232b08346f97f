"""Never worse than not batching: loops that raise the peak are dropped."""

from __future__ import annotations

import json

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from axisflow.execution import read_inputs
from axisflow.forest.builder import ForestBuilder, loop, use
from axisflow.forest.model import Forest, Site
from axisflow.pipeline import schedule_expression
from axisflow.scheduling.check import check_schedule
from axisflow.scheduling.evaluate import (
    TOLERANCE,
    compare,
    random_inputs,
    relative_difference,
    run_residual,
    run_schedule,
)
from axisflow.scheduling.guard import (
    DroppedLoop,
    GuardedSchedule,
    schedule_never_worse,
)
from axisflow.scheduling.memory import Sizing, memory_report
from axisflow.sequant import parse
from tests.conftest import EXAMPLES
from tests.einsum_oracle import oracle_inputs, oracle_residual

REAL = "i=80,a=896,μ̃=896,Κ=1682"


def test_batching_the_energy_over_kappa_no_longer_raises_the_peak() -> None:
    text = (EXAMPLES / "sequant" / "csv_ccsd_energy_df.txt").read_text(encoding="utf-8")
    # The figures are on the file-order forest (order="file").
    planned = schedule_expression(
        text,
        "Κ",
        extents=REAL,
        elem=8,
        never_worse=False,
        accumulate=False,
        order="file",
    )
    # the scheduler alone: 1.39x the unbatched peak
    assert planned.report.scheduled_peak > 1.3 * planned.report.unbatched_peak
    guarded = schedule_never_worse(planned.model, max_rounds=16)
    assert guarded.first_peak == planned.report.scheduled_peak
    assert guarded.scheduled_peak <= guarded.unbatched_peak
    assert guarded.unbatched_peak == planned.report.unbatched_peak
    assert guarded.dropped, "something had to be dropped"
    first = guarded.dropped[0]
    assert first.space == "Κ" and first.peak_with == guarded.first_peak
    assert first.peak_without < first.peak_with
    assert "dropped: peak 153.2 GiB with it" in str(first)
    assert check_schedule(guarded.forest, guarded.result.schedule) == []
    small = {"i": 2, "a": 2, "μ̃": 2, "Κ": 3}
    assert compare(guarded.forest, guarded.result.schedule, extents=small).agrees


def test_a_policy_that_helps_is_kept_whole() -> None:
    text = (EXAMPLES / "sequant" / "csv_ccsd_energy_df.txt").read_text(encoding="utf-8")
    planned = schedule_expression(
        text, "i", extents=REAL, elem=8, never_worse=False, accumulate=False
    )
    guarded = schedule_never_worse(planned.model, max_rounds=16)
    assert guarded.dropped == []
    assert guarded.scheduled_peak == planned.report.scheduled_peak


INDICES = ["i_1", "i_2", "i_3", "a_1", "a_2", "Κ_1"]


@st.composite
def expressions(draw: st.DrawFn) -> str:
    terms: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        tensors: list[str] = []
        for k in range(draw(st.integers(2, 4))):
            chosen = draw(
                st.lists(st.sampled_from(INDICES), min_size=1, max_size=3, unique=True)
            )
            split = draw(st.integers(0, len(chosen)))
            tensors.append(
                f"T{k}{{{','.join(chosen[:split])};{','.join(chosen[split:])}}}"
            )
        terms.append(" * ".join(tensors))
    return " + ".join(terms)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    expressions(), st.sampled_from(["i", "a", "Κ", "i,Κ", "a,i"]), st.integers(0, 99)
)
def test_the_guarded_peak_never_exceeds_the_unbatched_one(
    text: str, batch: str, seed: int
) -> None:
    keys = parse(text).space_keys()
    assume(all(space in keys for space in batch.split(",")))
    sizes = {"i": 3, "a": 2, "Κ": 4}
    extents = ",".join(f"{k}={sizes[k]}" for k in keys)
    planned = schedule_expression(
        text, batch, extents=extents, elem=8, never_worse=False, accumulate=False
    )
    for value_drops in (True, False):
        guarded = schedule_never_worse(
            planned.model, max_rounds=16, value_drops=value_drops
        )
        assert guarded.scheduled_peak <= guarded.unbatched_peak
        assert check_schedule(guarded.forest, guarded.result.schedule) == []
        assert compare(guarded.forest, guarded.result.schedule, seed=seed).agrees
        check_drops(guarded, value_drops)


def check_drops(guarded: GuardedSchedule, value_drops: bool) -> None:
    """What the report says of the drops holds: whose loops, both figures
    chained from the first peak to the kept one, the loops really gone."""

    def tree_name(site: Site) -> str:
        return guarded.forest.trees[site.tree].name

    before = guarded.first_peak
    for number, drop in enumerate(guarded.dropped):
        assert drop.unbatched_peak == guarded.unbatched_peak
        assert (drop.kind == "value") == (drop.value is not None)
        assert value_drops or drop.kind == "tree"
        if drop.peak_with != before:
            # only the closing "drop everything else" entries share a start
            assert drop.peak_without == guarded.unbatched_peak
            assert guarded.dropped[number - 1].peak_with == drop.peak_with
        assert drop.peak_without < drop.peak_with
        before = drop.peak_without
        if drop.kind == "tree":
            gone = [s for s in guarded.forest.sites if tree_name(s) == drop.tree]
        else:
            gone = [s for s in guarded.forest.sites if s.value == drop.value]
        assert gone and all(lp.space != drop.space for s in gone for lp in s.loops)
    assert before == guarded.scheduled_peak


def one_value_worse_than_its_tree() -> Forest:
    """One tree in a loop over k: ``X`` sums over k (its partial sums and
    their buffer, 2 x 128 B, in the loop), ``Y`` and ``R`` are sliced.

    ``X[a,c] = sum_k W[k,a,c] V[k]``, ``Y[k,a,b] = P[k,a] Q[k,b]``,
    ``R[k,b] = sum_{a,c} X[a,c] Y[k,a,b]``; k=2, a=2, b=2, c=8, 8 B.
    """
    return (
        ForestBuilder("hand")
        .space("k", 2)
        .space("a", 2)
        .space("b", 2)
        .space("c", 8)
        .input("W", "k_1 a_1 c_1")
        .input("V", "k_1")
        .input("P", "k_1 a_1")
        .input("Q", "k_1 b_1")
        .contraction("X", "a_1 c_1", "W k_1 a_1 c_1", "V k_1")
        .contraction("Y", "k_1 a_1 b_1", "P k_1 a_1", "Q k_1 b_1")
        .contraction("R", "k_1 b_1", "X a_1 c_1", "Y k_1 a_1 b_1")
        .tree(
            "t",
            loop(
                "k_1",
                0,
                use(
                    "R",
                    "k_1 b_1",
                    use("X", "a_1 c_1", use("W", "k_1 a_1 c_1"), use("V", "k_1")),
                    use("Y", "k_1 a_1 b_1", use("P", "k_1 a_1"), use("Q", "k_1 b_1")),
                ),
            ),
        )
        .finish()
    )


def test_dropping_one_values_loop_beats_dropping_its_trees() -> None:
    forest = one_value_worse_than_its_tree()
    # By hand (bytes = 8 x elements; inputs are not counted). Unbatched, at
    # R's build: X (a c) 16 elements, Y (k a b) 8, R (k b) 4: 28 x 8 = 224 B.
    # Scheduled in the loop: X's zeroed buffer and one partial sum, 2 x 16
    # elements = 256 B (pass 0); pass 1 holds X 16 + a Y piece 4 + an R
    # piece 2 + R's buffer 4 = 26 (208 B).
    # Dropping the tree: everything whole, 224 B. Dropping X's loop: X is
    # computed whole (16) and read in slices by Y's and R's pass: 208 B.
    trees_only = schedule_never_worse(forest, max_rounds=16, value_drops=False)
    assert (trees_only.first_peak, trees_only.unbatched_peak) == (256, 224)
    assert trees_only.scheduled_peak == 224
    assert [(d.kind, d.tree, d.value, d.space) for d in trees_only.dropped] == [
        ("tree", "t", None, "k")
    ]
    guarded = schedule_never_worse(forest, max_rounds=16)
    assert guarded.scheduled_peak == 208
    assert guarded.dropped == [
        DroppedLoop("t", "k", ("k_1",), 256, 208, 224, "value", "X")
    ]
    assert str(guarded.dropped[0]) == (
        "value @X (tree @t, computed whole): loop over k_1 (k) dropped: peak "
        "256 B with it, 208 B without (unbatched 224 B)"
    )
    # X has left the loop, its readers have kept it
    site_loops = {s.value: [lp.space for lp in s.loops] for s in guarded.forest.sites}
    assert site_loops == {
        "R": ["k"],
        "X": [],
        "W": [],
        "V": [],
        "Y": ["k"],
        "P": ["k"],
        "Q": ["k"],
    }
    assert ("X", "k") not in guarded.forest.roles
    assert check_schedule(guarded.forest, guarded.result.schedule) == []
    # the schedule's numbers against one einsum of the term (X sums over a
    # k of its own: values live in their own frames)
    sizing = Sizing(guarded.forest)
    inputs = random_inputs(guarded.forest, sizing, seed=3)
    result = run_schedule(guarded.forest, guarded.result.schedule, inputs, sizing)
    expected = np.einsum(
        "jac,j,ka,kb->kb", inputs["W"], inputs["V"], inputs["P"], inputs["Q"]
    )
    assert relative_difference(result["t"], expected) <= TOLERANCE


def test_the_report_says_whose_loops_were_dropped() -> None:
    guarded = schedule_never_worse(one_value_worse_than_its_tree(), max_rounds=16)
    report = memory_report(
        guarded.forest, guarded.result.schedule, Sizing(guarded.forest)
    )
    report.dropped = [d.to_json() for d in guarded.dropped]
    report.first_peak = guarded.first_peak
    (entry,) = json.loads(report.json_text())["dropped_loops"]
    assert entry == {
        "kind": "value",
        "tree": "t",
        "value": "X",
        "space": "k",
        "loops": ["k_1"],
        "peak_with_bytes": 256,
        "peak_without_bytes": 208,
        "unbatched_peak_bytes": 224,
        "reason": "value @X (tree @t, computed whole): loop over k_1 (k) dropped: "
        "peak 256 B with it, 208 B without (unbatched 224 B)",
    }
    assert report.table().endswith(
        "  loops dropped (they raised the peak; 256 B before): 1\n"
        "    value @X (tree @t, computed whole): loop over k_1 (k) dropped: peak "
        "256 B with it, 208 B without (unbatched 224 B)\n"
    )
    trees_only = schedule_never_worse(
        one_value_worse_than_its_tree(), max_rounds=16, value_drops=False
    )
    assert trees_only.dropped[0].to_json()["kind"] == "tree"
    assert trees_only.dropped[0].to_json()["value"] is None


def test_value_drops_of_the_energy_agree_with_the_einsum_oracle() -> None:
    # Planned at the real extents, where the guard drops values' loops;
    # evaluated at extent 2 against one einsum per term.
    expression = parse(
        (EXAMPLES / "sequant" / "csv_ccsd_energy_df.txt").read_text(encoding="utf-8")
    )
    planned = schedule_expression(expression, "Κ", extents=REAL, elem=8, order="file")
    kinds = [(d.kind, d.value, d.peak_with, d.peak_without) for d in planned.dropped]
    assert [kind for kind, *_ in kinds] == ["value", "value"]
    assert planned.report.scheduled_peak <= planned.report.unbatched_peak
    small = dict.fromkeys(expression.space_keys(), 2)
    inputs = read_inputs(
        expression, oracle_inputs(expression, small, 0), extents=small
    ).leaf_arrays(planned.model)
    _, scheduled = run_residual(
        planned.model, planned.schedule, inputs, Sizing(planned.model, small)
    )
    assert scheduled is not None
    _, reference = oracle_residual(expression, small, 0)
    assert relative_difference(scheduled, reference) <= TOLERANCE
