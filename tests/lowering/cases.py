"""Scheduled modules for the lowering tests, and their NumPy reference.

The reference is the pipeline's NumPy evaluator (``evaluate_forest``, the
unbatched forest, and ``run_residual``, the schedule as written) on the
inputs the generated ``main`` fills (``axisflow.lowering.harness``): per
output the function writes, a tree's own result or the residual (the
unbatched trees assembled by ``assemble_residual``, and the schedule's own
residual buffer, its operator steps applied).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from axisflow.dialects.batch import ForestOp
from axisflow.dialects.batch_model import forest_model
from axisflow.dialects.sched import ScheduleOp
from axisflow.dialects.sched_model import schedule_from_op
from axisflow.lowering.harness import Array, fill_input
from axisflow.lowering.plan import Plan
from axisflow.order import Order
from axisflow.passes.lower_schedule import lower_module
from axisflow.pipeline.api import schedule_module
from axisflow.scheduling.assemble import assemble_residual, schedule_layout
from axisflow.scheduling.evaluate import (
    evaluate_forest,
    relative_difference,
    run_residual,
)
from axisflow.scheduling.memory import Sizing
from axisflow.scheduling.schedule import Output
from tests.conftest import EXAMPLES, example, parse

TOLERANCE = 1e-10


@dataclass
class Reference:
    """Per forest (in module order), per output (the trees that are results
    of their own, then the residual): the unbatched and scheduled NumPy
    results."""

    unbatched: list[list[Array]]
    scheduled: list[list[Array]]


# never_worse=False unless asked: the scheduler's loops stay even where the
# guard would drop them, so the lowering has loops to lower. accumulate=True
# (the default of schedule-batches) accumulates the residual.


def scheduled_example(
    name: str, block: int = 1, *, accumulate: bool = True, never_worse: bool = False
) -> ModuleOp:
    """``examples/<name>``, classified and scheduled."""
    module = example(name)
    schedule_module(module, block=block, accumulate=accumulate, never_worse=never_worse)
    return module


def scheduled_examples(*names: str, accumulate: bool = True) -> ModuleOp:
    """Several examples in one module (one function each, one ``@main``),
    classified and scheduled."""
    text = "\n".join((EXAMPLES / name).read_text(encoding="utf-8") for name in names)
    module = parse(text)
    schedule_module(module, accumulate=accumulate, never_worse=False)
    return module


def with_operator(name: str, operator: str) -> str:
    """A bundled equation's text with ``operator`` written into every term
    (as SeQuant writes ``Ŝ`` into each term of an expanded residual)."""
    from axisflow.sequant import parse as parse_sequant

    text = (EXAMPLES / "sequant" / name).read_text(encoding="utf-8")
    pieces = []
    for k, term in enumerate(parse_sequant(text).terms):
        sign = "-" if term.coefficient < 0 else ("" if k == 0 else "+")
        body = " * ".join(str(t) for t in term.tensors)
        pieces.append(f"{sign} {abs(term.coefficient)} {operator} * {body}")
    return " ".join(pieces)


def scheduled_text(
    text: str,
    batch: str,
    extents: str,
    name: str,
    *,
    block: int = 1,
    order: Order = "flops",
    accumulate: bool = True,
    never_worse: bool = False,
) -> ModuleOp:
    """SeQuant text through the frontend, classified and scheduled."""
    from axisflow.sequant import parse as parse_sequant
    from axisflow.sequant import to_module

    module = to_module(
        parse_sequant(text), batch, extents=extents, name=name, order=order
    )
    schedule_module(module, block=block, accumulate=accumulate, never_worse=never_worse)
    return module


def scheduled_sequant(
    name: str,
    batch: str,
    extents: str,
    block: int = 1,
    order: Order = "flops",
    *,
    accumulate: bool = True,
    never_worse: bool = False,
) -> ModuleOp:
    """A bundled SeQuant equation through the frontend (``order``: how each
    term is binarized), classified and scheduled."""
    text = (EXAMPLES / "sequant" / name).read_text(encoding="utf-8")
    return scheduled_text(
        text,
        batch,
        extents,
        name[:-4],
        block=block,
        order=order,
        accumulate=accumulate,
        never_worse=never_worse,
    )


def planned_ladder_term(term: int, extents: Mapping[str, int]) -> ModuleOp:
    """One term of the CSV-CCSD doubles planned by the scope-tree planner
    within 50% more multiply-adds, where it rebuilds values inside a loop
    of two blocks (``planner._Search.refine``; checked here): the module
    holding its forest and schedule."""
    from axisflow.pipeline import schedule_expression
    from tests.ladder_terms import LADDER_BATCH, LADDER_OPTIONS, ladder_term

    planned = schedule_expression(
        ladder_term(term),
        LADDER_BATCH,
        extents=extents,
        share="auto",
        **LADDER_OPTIONS,
    )
    chosen = [p for p in planned.report.front or [] if p["chosen"]]
    assert chosen and chosen[0]["rebuilt_in_loops"], "the plan rebuilds nothing"
    module = planned.forest.get_toplevel_object()
    assert isinstance(module, ModuleOp)
    return module


def reference(module: ModuleOp) -> Reference:
    """The NumPy evaluator's results on ``main``'s inputs."""
    unbatched: list[list[Array]] = []
    scheduled: list[list[Array]] = []
    for forest in (op for op in module.walk() if isinstance(op, ForestOp)):
        model = forest_model(forest)
        schedule_op = next(
            op for op in forest.body.block.ops if isinstance(op, ScheduleOp)
        )
        schedule, _ = schedule_from_op(schedule_op)
        sizing = Sizing(model)
        used = {site.value for site in model.sites}
        inputs = {}
        number = 0
        for name, value in model.values.items():
            if value.is_input and name in used:
                shape = tuple(sizing.mode_extent(m) for m in value.modes)
                inputs[name] = fill_input(number, shape)
                number += 1
        plain = evaluate_forest(model, inputs)
        batched, residual = run_residual(model, schedule, inputs, sizing)
        into_residual = {
            item.tree
            for item, _ in schedule.walk()
            if isinstance(item, Output) and item.into is not None
        }
        own = [t.name for t in model.trees if t.name not in into_residual]
        unbatched.append([plain[name] for name in own])
        scheduled.append([batched[name] for name in own])
        layout = schedule_layout(model, schedule)
        if layout is not None:
            assert residual is not None
            unbatched[-1].append(assemble_residual(model, plain, layout))
            scheduled[-1].append(residual)
    return Reference(unbatched, scheduled)


def lowered(module: ModuleOp) -> tuple[ModuleOp, list[Plan]]:
    """A lowered copy of ``module`` with ``@main``."""
    copy = module.clone()
    plans = lower_module(copy, main=True)
    copy.verify()
    return copy, plans


def output_shapes(plans: list[Plan]) -> list[tuple[int, ...]]:
    """Every output's shape, in the order ``main`` prints them."""
    return [plan.tensors[t].shape for plan in plans for t in plan.outputs]


def assert_agrees(results: list[Array], expected: Reference) -> None:
    """Each printed output equals both NumPy evaluations to 1e-10 relative."""
    flat_plain = [a for forest in expected.unbatched for a in forest]
    flat_batched = [a for forest in expected.scheduled for a in forest]
    assert len(results) == len(flat_plain)
    for number, (got, plain, batched) in enumerate(
        zip(results, flat_plain, flat_batched, strict=True)
    ):
        assert got.shape == np.shape(plain), f"output {number}: shape"
        assert relative_difference(got, np.asarray(plain)) <= TOLERANCE, (
            f"output {number}: {got} vs unbatched {plain}"
        )
        assert relative_difference(got, np.asarray(batched)) <= TOLERANCE, (
            f"output {number}: {got} vs scheduled {batched}"
        )
