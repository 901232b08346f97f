"""The executor lays each input out once, as its heaviest reader takes it."""

from __future__ import annotations

from typing import cast

import numpy as np
import pytest
from distributed.protocol.serialize import deserialize, serialize

from axisflow.execution.dask_executor import _Plan
from axisflow.execution.evaluation import plan_evaluation
from axisflow.scheduling import contraction as contraction_module
from axisflow.scheduling.contraction import memory_axes
from axisflow.scheduling.evaluate import (
    ScheduleRun,
    built_values,
    input_layouts,
    relative_difference,
    residual_order,
)
from axisflow.sequant import parse
from tests.conftest import EXAMPLES
from tests.einsum_oracle import oracle_inputs

DOUBLES = EXAMPLES / "sequant" / "csv_ccsd_doubles_residual_df.txt"
EXTENTS = {"i": 4, "a": 24, "μ̃": 24, "Κ": 48}


@pytest.fixture(scope="module")
def doubles_plan() -> tuple[_Plan, dict[str, np.ndarray]]:
    """The doubles batched over ``i`` in blocks of 2, and its leaves."""
    text = DOUBLES.read_text(encoding="utf-8")
    inputs = oracle_inputs(parse(text), EXTENTS)
    planned = plan_evaluation(text, inputs, batch="i", block=2, scheduled=True)
    schedule = planned.schedule
    assert schedule is not None
    forest, sizing = planned.forest, planned.sizing
    orders = input_layouts(forest, built_values(forest, schedule), sizing)
    plan = _Plan(forest, schedule, sizing, orders)
    return plan, planned.inputs.leaf_arrays(forest)


def _input_copies(
    monkeypatch: pytest.MonkeyPatch, run: ScheduleRun, leaves: dict[str, np.ndarray]
) -> tuple[int, np.ndarray]:
    """How many operand copies the executor's contractions make of views
    of ``leaves``, and the residual."""
    spans = [(a.ctypes.data, a.ctypes.data + a.nbytes) for a in leaves.values()]
    copies = 0
    contiguous = np.ascontiguousarray

    def counting(array: np.ndarray) -> np.ndarray:
        nonlocal copies
        copies += any(start <= array.ctypes.data < end for start, end in spans)
        return contiguous(array)

    with monkeypatch.context() as patch:
        patch.setattr(contraction_module.np, "ascontiguousarray", counting)
        _, residual = run.run(leaves)
    assert residual is not None
    return copies, residual


def test_inputs_laid_out_for_their_readers_are_copied_less(
    monkeypatch: pytest.MonkeyPatch,
    doubles_plan: tuple[_Plan, dict[str, np.ndarray]],
) -> None:
    plan, leaves = doubles_plan
    assert plan.input_orders  # some input is read with its summed axes apart
    run = ScheduleRun(plan.forest, plan.schedule, plan.sizing, copies=True)
    in_order = {name: np.ascontiguousarray(a) for name, a in leaves.items()}
    shipped = {name: plan.shipped(name, a) for name, a in leaves.items()}
    laid_out = plan.in_frame(shipped)
    before, reference = _input_copies(monkeypatch, run, in_order)
    after, residual = _input_copies(monkeypatch, run, laid_out)
    assert relative_difference(residual, reference) <= 1e-12
    # measured: 494 copies of input views in the leaves' own order, 178 laid out
    assert after < before * 0.6, (before, after)


def test_shipped_inputs_keep_their_layout_through_dask(
    doubles_plan: tuple[_Plan, dict[str, np.ndarray]],
) -> None:
    plan, leaves = doubles_plan
    for name, order in plan.input_orders.items():
        array = leaves[name]
        shipped = plan.shipped(name, array)
        assert shipped.flags.c_contiguous
        header, frames = serialize(shipped)  # a transfer between workers
        received = cast(np.ndarray, deserialize(header, frames))
        view = plan.in_frame({name: received})[name]
        np.testing.assert_array_equal(view, array)
        # the view lies in memory in ``order``: its strides decrease along it
        strides = [view.strides[axis] for axis in order]
        assert strides == sorted(strides, reverse=True), (name, order, view.strides)


def test_the_residual_lies_with_the_axes_its_pieces_slice_outermost(
    doubles_plan: tuple[_Plan, dict[str, np.ndarray]],
) -> None:
    """Batched over ``i``, every piece added into the doubles' residual
    ``(a_1, a_2, i_1, i_2)`` is a block of ``i_1, i_2``: the residual lies
    with those outermost, so that a piece adds into whole inner matrices,
    and the run gives what the residual laid out in its axes' order does."""
    plan, leaves = doubles_plan
    run = ScheduleRun(plan.forest, plan.schedule, plan.sizing, copies=True)
    modes = plan.schedule.residual_modes()
    assert modes is not None
    assert [str(modes[k]) for k in run.residual_order] == [
        "i_1",
        "i_2",
        "a_1<i_1,i_2>",
        "a_2<i_1,i_2>",
    ]
    assert run.residual_order == residual_order(plan.forest, plan.schedule)
    _, residual = run.run(leaves)
    assert residual is not None
    assert memory_axes(residual) == run.residual_order
    run.residual_order = ()  # the axes' own order
    _, in_order = run.run(leaves)
    assert in_order is not None and in_order.flags.c_contiguous
    assert relative_difference(residual, in_order) <= 1e-12


def test_an_unbatched_residual_lies_in_its_axes_order() -> None:
    text = DOUBLES.read_text(encoding="utf-8")
    planned = plan_evaluation(text, oracle_inputs(parse(text), EXTENTS), scheduled=True)
    assert planned.schedule is not None
    assert residual_order(planned.forest, planned.schedule) == (0, 1, 2, 3)
