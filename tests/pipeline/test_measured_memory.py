"""Prediction equals measurement: the NumPy evaluator's peak, traced by
``tracemalloc``, is the memory model's peak (``peak(lifetimes(...))`` of the
same schedule) within 10%, on the bundled CSV-CCSD doubles under several
policies, on plans that rebuild values inside a loop (the planner's step
4) and on random residuals with shared values.

The extents are chosen so that the arrays dominate: every predicted peak
here is 1.25 MiB or more, while what the model leaves out stays below
about 100 KiB: NumPy's iterator buffers (up to 64 KiB an operand of a
direct einsum, 8 KiB of an elementwise add), ``add_scaled``'s chunk (16
KiB) and the Python objects of the run (``docs/pipeline.md``, section
3.4)."""

from __future__ import annotations

import atexit
import functools
import math
import multiprocessing
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from axisflow.forest.model import Forest
from axisflow.pipeline.api import ModelPlan, plan_expression, plan_model
from axisflow.scheduling.evaluate import (
    input_bytes,
    measured_peak,
    random_inputs,
    run_residual,
)
from axisflow.scheduling.memory import Sizing, lifetimes, peak, schedule_flops
from axisflow.scheduling.options import Blocks, Rebuild, ShareChoice
from axisflow.scheduling.schedule import Build, Schedule, loop_extents
from axisflow.sequant import parse
from tests.conftest import EXAMPLES
from tests.ladder_terms import LADDER_BATCH, LADDER_OPTIONS, ladder_term

RELATIVE = 0.10
"""Largest relative difference of the measured peak to the predicted one."""

LARGE = 5 * 1024**2 // 4
"""A predicted peak this large (1.25 MiB) dwarfs what the model leaves out."""

DOUBLES_EXTENTS = "i=3,a=96,μ̃=24,Κ=12"
"""The doubles' extents here: the residual alone is 648 KiB."""


def planned(
    text: str,
    batch: str,
    extents: str | Mapping[str, int],
    share: ShareChoice | None,
    block: Blocks,
    budget: str | None,
    rebuild: Rebuild = "never",
) -> tuple[ModelPlan, Sizing, int]:
    """The plan of a policy, its sizing and its predicted peak. ``share=None``
    with a budget is the planner's choice (``auto``); ``rebuild="fused"``
    schedules the shared forest again, values an enclosing loop does not
    bind rebuilt inside it."""
    plan = plan_expression(
        text,
        batch,
        extents=extents,
        elem=8,
        share=share,
        block=block,
        budget=budget,
        never_worse=False,  # the policy's loops, kept even where they cost
    )
    if rebuild == "fused":
        plan = plan_model(
            plan.model,
            block=block,
            residual=plan.residual,
            never_worse=False,
            rebuild="fused",
        )
    sizing = Sizing(plan.model)
    return plan, sizing, peak(lifetimes(plan.model, plan.schedule, sizing)).bytes


@functools.cache
def _clean_process() -> ProcessPoolExecutor:
    """A process of its own for the measurements (made at the first one).
    ``tracemalloc`` counts the allocations of every thread of its process,
    and a test process has others (xdist's; Dask's while an executor test's
    cluster is up, whose monitors sample every 20 ms): one CI run measured
    the doubles over ``i`` at 1.12 of the prediction in the suite's process,
    where a process of its own measures 1.036 (1.064 beside a cluster of two
    workers)."""
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    atexit.register(pool.shutdown)
    return pool


def _measure(model: Forest, schedule: Schedule, sizing: Sizing) -> int:
    """``measured``'s run, in the process it is sent to."""
    inputs = random_inputs(model, sizing)
    run_residual(model, schedule, inputs, sizing)
    found, residual = measured_peak(model, schedule, inputs, sizing)
    assert residual is not None  # the terms add into one residual
    return found


def measured(plan: ModelPlan, sizing: Sizing) -> int:
    """The peak a run of the plan's schedule allocates, inputs aside, in a
    process that has run its code paths before (``_clean_process``): the
    first run of a path in a process allocates, once, up to 600 KiB more
    (measured on hypothesis' examples: 1.11 and 1.41 of the prediction,
    near 1.5 MiB, where a second run measured 1.02 and 1.01), which is the
    process's, not the schedule's."""
    job = _clean_process().submit(_measure, plan.model, plan.schedule, sizing)
    return job.result()


DOUBLES_POLICIES: list[tuple[str, ShareChoice | None, Blocks, str | None, Rebuild]] = [
    ("Κ", "forest", 1, None, "never"),
    ("i", "forest", 1, None, "never"),
    ("μ̃", "forest", "auto", "6MiB", "never"),
    ("i,μ̃", "forest", "auto", "3MiB", "never"),
    ("Κ", "tree", 1, None, "never"),
    ("i", "tree", "auto", "2MiB", "never"),
    ("Κ", None, "auto", "3MiB", "never"),
    ("i,Κ", "forest", 1, None, "fused"),
    # i=3 in blocks of 2: the second block's arrays are smaller than the
    # first's (the executor measured 1.15 to 1.40 of the prediction at
    # i=7 before the pool of freed arrays freed what it lets go first:
    # tests/pipeline/test_pages.py)
    ("i", "forest", {"i": 2}, None, "never"),
]
"""Batched spaces, sharing, blocks, budget and rebuilding of the doubles'
plans measured (``benchmarks/bench_measured_memory.py`` prints the same)."""


@pytest.mark.parametrize(
    ("batch", "share", "block", "budget", "rebuild"), DOUBLES_POLICIES
)
def test_the_doubles_peak_is_the_predicted_one(
    batch: str,
    share: ShareChoice | None,
    block: Blocks,
    budget: str | None,
    rebuild: Rebuild,
) -> None:
    text = (EXAMPLES / "sequant" / "csv_ccsd_doubles_residual_df.txt").read_text(
        encoding="utf-8"
    )
    plan, sizing, predicted = planned(
        text, batch, DOUBLES_EXTENTS, share, block, budget, rebuild
    )
    assert predicted >= LARGE
    found = measured(plan, sizing)
    assert abs(found - predicted) <= RELATIVE * predicted, (predicted, found)


@pytest.mark.parametrize("term", [30, 50])
def test_a_plan_rebuilding_inside_a_loop_peaks_as_predicted(term: int) -> None:
    """A ladder term of the doubles alone, planned within 50% more
    multiply-adds: the planner rebuilds values inside a loop of two blocks
    (``planner._Search.refine``), and the run allocates what the model
    predicts for that schedule."""
    plan = plan_expression(
        ladder_term(term),
        LADDER_BATCH,
        extents="i=8,a=48,μ̃=48,Κ=16",
        elem=8,
        **LADDER_OPTIONS,
    )
    chosen = [point for point in plan.report.front or [] if point["chosen"]]
    assert chosen and chosen[0]["rebuilt_in_loops"]
    sizing = Sizing(plan.model)
    predicted = peak(lifetimes(plan.model, plan.schedule, sizing)).bytes
    assert predicted >= LARGE
    found = measured(plan, sizing)
    assert abs(found - predicted) <= RELATIVE * predicted, (predicted, found)


EXTERNALS = ("a_1", "a_2", "i_1", "i_2")
DUMMIES = ("a_3", "a_4", "i_3", "i_4", "Κ_1")
OPERATORS = ("", "Ŝ{a_1,a_2;i_1,i_2} * ", "P̂{a_1,a_2;i_1,i_2} * ")


@st.composite
def shared_residuals(draw: st.DrawFn) -> str:
    """Two to four terms over the externals a_1 a_2 i_1 i_2 that differ in
    one tensor only (its label), so every product of the others is a value
    the terms share; some under Ŝ or P̂."""
    size = draw(st.integers(3, 4))
    slots: list[list[str]] = [[] for _ in range(size)]
    for external in EXTERNALS:
        slots[draw(st.integers(0, size - 1))].append(external)
    for dummy in draw(st.lists(st.sampled_from(DUMMIES), max_size=4, unique=True)):
        first, second = draw(
            st.lists(st.integers(0, size - 1), min_size=2, max_size=2, unique=True)
        )
        slots[first].append(dummy)
        slots[second].append(dummy)
    slots = [s for s in slots if s]
    varied = draw(st.integers(0, len(slots) - 1))
    terms: list[str] = []
    for k in range(draw(st.integers(2, 4))):
        tensors = [
            f"{f'V{k}' if n == varied else f'T{n}'}"
            f"{{{','.join(s[: len(s) // 2])};{','.join(s[len(s) // 2 :])}}}"
            for n, s in enumerate(slots)
        ]
        coefficient = draw(st.sampled_from(["", "2 ", "1/2 "]))
        sign = draw(st.sampled_from(["- ", "" if k == 0 else " + "]))
        operator = draw(st.sampled_from(OPERATORS))
        terms.append(f"{sign}{coefficient}{operator}{' * '.join(tensors)}")
    return "".join(terms)


BASE_EXTENTS = {"a": 8, "i": 3, "Κ": 6}
SCALES = (1, 2, 3, 4, 6)
"""Multiples of the base extents tried, smallest first, until the
predicted peak is large (at 6 the residual alone is 5.7 MiB)."""

CAP = 64 * 1024**2
"""Plans above this (predicted peak or inputs) are not run (dense)."""

FLOPS_CAP = 5 * 10**7
"""Nor plans of more multiply-adds than this (a second of NumPy or so)."""

BUILDS_CAP = 2000
"""Nor plans that build more pieces than this (Python's time per block)."""


def builds_run(plan: ModelPlan, sizing: Sizing) -> int:
    """Pieces a run builds: each build once per block of every loop around
    it."""
    extents = loop_extents(plan.schedule, sizing.mode_extent, sizing.extent)
    return sum(
        math.prod(-(-extents[loop.instance] // loop.block) for loop in loops)
        for item, loops in plan.schedule.walk()
        if isinstance(item, Build)
    )


POLICIES: list[tuple[ShareChoice | None, Rebuild]] = [
    ("forest", "never"),
    ("tree", "never"),
    (None, "never"),  # the planner's choice within the budget
    ("forest", "fused"),
]


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(
    shared_residuals(),
    st.sampled_from(["i", "a", "Κ", "i,Κ", "a,i"]),
    st.sampled_from(POLICIES),
    st.sampled_from([2, 3, "auto"]),
)
@example(
    # i=9 in blocks of 5: the outer loop's second block is smaller. The
    # residual, first written after the first block's largest pieces are
    # freed, lives from the loop's start (its second block holds it
    # throughout); allocated at its first write, the run measured 0.84 of
    # the prediction
    text="- V0{a_1,i_1,i_2;a_3,i_3,i_4} * T1{a_2,a_3;a_4,i_3} * T2{;a_4} * T3{;i_4}"
    "- V1{a_1,i_1,i_2;a_3,i_3,i_4} * T1{a_2,a_3;a_4,i_3} * T2{;a_4} * T3{;i_4}",
    batch="i",
    policy=("forest", "never"),
    blocks=2,
)
@example(
    # i=9 in blocks of 7 and 2: the second block's buffers (441 KiB, below
    # the pool's threshold) met the first block's freed 3 MiB the pool
    # kept: 1.26 of the prediction until the pool counted small arrays
    text="- V0{a_1,i_1,i_2;a_3,i_3,i_4} * T1{a_2;a_3,i_3} * T2{;i_4}"
    "- V1{a_1,i_1,i_2;a_3,i_3,i_4} * T1{a_2;a_3,i_3} * T2{;i_4}",
    batch="i",
    policy=("tree", "never"),
    blocks="auto",
)
@example(
    # a=24 in blocks of 16 and 8: 1.17 while the pool made room for a
    # small array only after allocating it
    text="- V0{a_1,i_1,i_2;a_3,i_3,i_4} * T1{a_2;a_3,i_3} * T2{;i_4}"
    "- V1{a_1,i_1,i_2;a_3,i_3,i_4} * T1{a_2;a_3,i_3} * T2{;i_4}",
    batch="a",
    policy=("forest", "never"),
    blocks="auto",
)
def test_random_shared_residuals_peak_as_predicted(
    text: str,
    batch: str,
    policy: tuple[ShareChoice | None, Rebuild],
    blocks: int | str,
) -> None:
    share, rebuild = policy
    keys = parse(text).space_keys()
    spaces = ",".join(s for s in batch.split(",") if s in keys) or "i"
    planned_at: tuple[ModelPlan, Sizing, int] | None = None
    for scale in SCALES:
        extents = {k: n * scale for k, n in BASE_EXTENTS.items() if k in keys}
        # ``blocks`` per loop (of 1 or more elements), or as the budget allows
        block: Blocks = (
            "auto"
            if blocks == "auto"
            else {k: -(-n // int(blocks)) for k, n in extents.items()}
        )
        budget = "4MiB" if blocks == "auto" or share is None else None
        planned_at = planned(text, spaces, extents, share, block, budget, rebuild)
        if planned_at[2] >= LARGE:
            break
    assert planned_at is not None
    plan, sizing, predicted = planned_at
    assume(LARGE <= predicted <= CAP and input_bytes(plan.model, sizing) <= CAP)
    assume(schedule_flops(plan.model, plan.schedule, sizing) <= FLOPS_CAP)
    assume(builds_run(plan, sizing) <= BUILDS_CAP)
    found = measured(plan, sizing)
    assert abs(found - predicted) <= RELATIVE * predicted, (predicted, found)
