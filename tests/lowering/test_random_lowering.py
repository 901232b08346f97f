"""Property: on random small forests (the pipeline's own strategy), the
lowered schedule run in xDSL's interpreter prints the NumPy evaluator's
numbers, blocks that do not divide their extent included, and with the
residual when the trees form one (every root carrying the same labels)."""

from __future__ import annotations

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from axisflow.forest.model import Forest
from axisflow.interpret import run_main
from axisflow.lowering.harness import decode_printed, fill_input
from axisflow.lowering.plan import build_plan
from axisflow.passes.lower_schedule import lowered_module
from axisflow.scheduling.assemble import assemble_residual, forest_layout
from axisflow.scheduling.evaluate import evaluate_forest, relative_difference
from axisflow.scheduling.memory import Sizing
from axisflow.scheduling.schedule import LoopPass
from axisflow.scheduling.scheduler import schedule_forest
from tests.pipeline.test_random_forests import forests


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(forests(), st.integers(1, 2), st.booleans())
def test_lowered_random_forests_agree_with_numpy(
    forest: Forest, block: int, accumulate: bool
) -> None:
    layout = forest_layout(forest) if accumulate else None
    event("residual" if layout is not None else "one output per tree")
    schedule = schedule_forest(forest, block=block, residual=layout).schedule
    sizing = Sizing(forest)
    extents = [
        sizing.extent(item.space)
        for item, _ in schedule.walk()
        if isinstance(item, LoopPass)
    ]
    ragged = any(extent % min(block, extent) for extent in extents)
    event(f"{len(extents)} loop passes{', a ragged block' if ragged else ''}")
    plan = build_plan(forest, schedule)
    module = lowered_module([plan], main=True)
    module.verify()
    shapes = [plan.tensors[t].shape for t in plan.outputs]
    results = decode_printed(run_main(module), shapes)
    inputs = {
        plan.tensors[t].value: fill_input(k, plan.tensors[t].shape)
        for k, t in enumerate(plan.inputs)
    }
    expected = evaluate_forest(forest, inputs)
    if layout is not None:
        (got,) = results
        residual = assemble_residual(forest, expected, layout)
        assert relative_difference(got, residual) <= 1e-10
        return
    for tree, got in zip(forest.trees, results, strict=True):
        assert relative_difference(got, expected[tree.name]) <= 1e-10, tree.name
