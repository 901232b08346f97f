"""Embedding: the fusion pipeline for a host, in memory, no text round trip.

::

    from axisflow.pipeline import schedule_module

    result = schedule_module(module, block=1)      # classify + schedule
    for forest in result.forests:
        print(forest.report.table())                # or forest.report.to_json()
        forest.schedule_op                          # the sched.schedule op

``schedule_module`` runs ``classify-axes`` on every ``batch.forest`` of the
module, schedules each, and attaches the ``sched.schedule`` op at the end of
the forest (replacing an earlier one). All forests are scheduled before any
is changed: on error nothing is written (roles included) and
``PipelineError`` says which forest failed and why.

``schedule_expression`` starts from SeQuant text (or a parsed expression) and
a batching policy: the frontend builds the module, then ``schedule_module``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute
from xdsl.utils.exceptions import DiagnosticException

from axisflow.dialects.batch import ForestOp, ValueOp
from axisflow.dialects.batch_model import attach_roles, forest_model
from axisflow.dialects.sched import ScheduleOp, schedule_to_op
from axisflow.forest.model import Forest, ModelError
from axisflow.forest.roles import classify
from axisflow.order import Order
from axisflow.pipeline.memory import MemoryReport, Sizing, memory_report
from axisflow.pipeline.schedule import Schedule
from axisflow.pipeline.scheduler import (
    DEFAULT_MAX_ROUNDS,
    Decisions,
    SchedulingError,
    schedule_forest,
)

if TYPE_CHECKING:
    from axisflow.sequant import Expression


class PipelineError(ValueError):
    """A forest that could not be scheduled; the message names it."""


@dataclass
class ForestSchedule:
    """The pipeline's result for one forest."""

    forest: ForestOp
    schedule_op: ScheduleOp
    model: Forest
    """The forest as the pipeline modelled it (with its roles)."""
    schedule: Schedule
    decisions: Decisions
    """Demotions and hoists, with reasons."""
    report: MemoryReport


@dataclass
class PipelineResult:
    """Every forest of a module, scheduled."""

    module: ModuleOp
    forests: list[ForestSchedule]

    def tables(self) -> str:
        """All memory reports as tables."""
        return "".join(f.report.table() for f in self.forests)


def forest_label(forest: ForestOp) -> str:
    """``batch.forest @name`` (or ``batch.forest #k`` when unnamed)."""
    if forest.sym_name is not None:
        return f"batch.forest @{forest.sym_name.data}"
    return "batch.forest (unnamed)"


def plan_forest(
    forest: ForestOp,
    *,
    block: int | Mapping[str, int] = 1,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    extents: Mapping[str, int] | None = None,
    model: Forest | None = None,
) -> ForestSchedule:
    """Schedule one classified forest without changing it.

    The returned ``schedule_op`` is not attached; ``extents`` overrides the
    forest's extents for the byte sizes; ``model``: the forest's model with
    its roles, if already read. Raises ``PipelineError``.
    """
    try:
        if model is None:
            model = forest_model(forest)
        sizing = Sizing(model, extents)
        result = schedule_forest(
            model, block=block, max_rounds=max_rounds, sizes=sizing
        )
    except (ModelError, SchedulingError) as error:
        raise PipelineError(f"{forest_label(forest)}: {error}") from None
    report = memory_report(model, result.schedule, sizing)
    return ForestSchedule(
        forest,
        schedule_to_op(result.schedule),
        model,
        result.schedule,
        result.decisions,
        report,
    )


def attach(forest: ForestOp, schedule_op: ScheduleOp) -> None:
    """Put ``schedule_op`` at the end of ``forest``, replacing any schedule."""
    for op in list(forest.body.block.ops):
        if isinstance(op, ScheduleOp):
            forest.body.block.erase_op(op)
    forest.body.block.add_op(schedule_op)


def _classified(forest: ForestOp) -> Forest:
    """The model of ``forest`` with its roles, attached to the IR too."""
    try:
        model = forest_model(forest, with_roles=False)
    except ModelError as error:
        raise PipelineError(f"{forest_label(forest)}: {error}") from None
    attach_roles(forest, classify(model))
    return model


def schedule_module(
    module: ModuleOp,
    *,
    block: int | Mapping[str, int] = 1,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    classify: bool = True,
    verify: bool = True,
) -> PipelineResult:
    """Classify (unless ``classify=False``: roles already attached) and
    schedule every ``batch.forest`` of ``module``, attaching the schedules.

    ``block``: elements per block (one size, or per space key);
    ``max_rounds``: bound on the demotion fixpoint; ``verify``: verify each
    forest first (skip only for IR verified already, as ``xdsl-opt`` does
    between passes). Raises ``PipelineError`` and leaves the module unchanged
    if any forest fails.
    """
    forests = [op for op in module.walk() if isinstance(op, ForestOp)]
    saved: list[tuple[ValueOp, dict[str, Attribute]]] = []
    planned: list[ForestSchedule] = []
    try:
        for forest in forests:
            try:
                if verify:
                    forest.verify()
            except DiagnosticException as error:
                first = str(error).splitlines()[0] if str(error) else "invalid IR"
                raise PipelineError(f"{forest_label(forest)}: {first}") from None
            model = None
            if classify:
                saved.extend((v, dict(v.attributes)) for v in forest.values())
                model = _classified(forest)
            planned.append(
                plan_forest(forest, block=block, max_rounds=max_rounds, model=model)
            )
    except PipelineError:
        for value, before in saved:
            value.attributes.clear()
            value.attributes.update(before)
        raise
    for item in planned:
        attach(item.forest, item.schedule_op)
    return PipelineResult(module, planned)


def schedule_expression(
    expression: Expression | str,
    batch: str | Iterable[str] = (),
    *,
    extents: str | Mapping[str, int] | None = None,
    elem: int | None = None,
    separate_instances: bool = False,
    name: str = "sequant",
    block: int | Mapping[str, int] = 1,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    order: Order = "flops",
) -> ForestSchedule:
    """The pipeline on a SeQuant equation: text (or ``axisflow.sequant.parse``
    output) and a batching policy, as ``axisflow.sequant.to_module`` takes
    them (``batch="Κ"``, ``"Κ,i"``, ...; ``extents="i=80,Κ=1682,a<2>=40"``;
    ``order="file|flops|memory"``), then classification and scheduling. Raises the frontend's ``SequantError`` /
    ``PolicyError`` for bad input and ``PipelineError`` if scheduling fails.
    """
    from axisflow.sequant import parse, to_module

    if isinstance(expression, str):
        expression = parse(expression)
    module = to_module(
        expression,
        batch,
        extents=extents,
        elem=elem,
        separate_instances=separate_instances,
        name=name,
        order=order,
    )
    result = schedule_module(module, block=block, max_rounds=max_rounds)
    return result.forests[0]
