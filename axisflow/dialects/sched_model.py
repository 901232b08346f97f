"""The bridge between the ``sched`` dialect and the schedule model.

* ``schedule_to_op(schedule)``: the emitter, model -> ``sched.schedule`` op
  (``schedule-batches`` and the embedding API attach what the scheduler
  made);
* ``schedule_from_op(op)``: the reader, op -> model, with the op of each
  item for diagnostics (the lowering reads a schedule through it);
* ``check_schedule_op(op)``: the deep check of a schedule op against its
  forest (``check-schedules``, and ``lower-schedule`` before it lowers).

Next to the dialect as ``batch_model`` is for ``batch``: the ops live in
``axisflow.dialects.sched``, the model and its rules in the pure
``axisflow.scheduling`` package.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Operation, Region
from xdsl.utils.exceptions import VerifyException

from axisflow.dialects.batch import ForestOp
from axisflow.dialects.batch_model import forest_model
from axisflow.dialects.sched import (
    AccumulateOp,
    ApplyOp,
    BufferOp,
    BuildOp,
    LoopOp,
    OutputOp,
    ResidualOp,
    ScatterOp,
    ScheduleOp,
    body_ops,
)
from axisflow.forest.model import ModelError
from axisflow.scheduling import schedule as model
from axisflow.scheduling.check import check_schedule
from axisflow.scheduling.memory import Sizing


def check_schedule_op(op: ScheduleOp) -> None:
    """The deep check of a schedule against its forest: the rules of
    ``axisflow.scheduling.check.check_schedule``, one extent per loop
    instance (``loop_extents``) and every ``bytes`` against the forest's
    sizes: what the lowering and the evaluator rely on. Builds the forest model; raises ``VerifyException`` at
    the first offending op. ``schedule-batches`` checks what it makes, so
    this is for schedules written or edited by hand (``check-schedules``)."""
    forest = op.parent_op()
    if not isinstance(forest, ForestOp):
        return
    try:
        forest_info = forest_model(forest, with_roles=False).check_loops()
    except ModelError as error:
        message = f"sched.schedule: the forest cannot be scheduled: {error}"
        op.emit_error(message, VerifyException(message))
    schedule, origin = schedule_from_op(op)
    for problem in check_schedule(forest_info, schedule):
        where = op if problem.item is None else origin[id(problem.item)]
        message = f"{where.name}: {problem.message}"
        where.emit_error(message, VerifyException(message))
    sizing = Sizing(forest_info)
    try:  # one range per loop, as the lowering and the evaluator run them
        model.loop_extents(schedule, sizing.mode_extent, sizing.extent)
    except model.LoopExtentError as error:
        message = f"sched.schedule: {error}"
        op.emit_error(message, VerifyException(message))
    blocks = schedule.blocks()
    for item, _ in schedule.walk():
        if isinstance(item, model.Build | model.Buffer):
            expected = sizing.bytes(forest_info.values[item.value], item.slices, blocks)
            if item.bytes != expected:
                child = origin[id(item)]
                message = (
                    f"{child.name} @{item.value}: declares {item.bytes} bytes, but "
                    f"the forest's sizes give {expected}"
                )
                child.emit_error(message, VerifyException(message))


def schedule_to_op(schedule: model.Schedule) -> ScheduleOp:
    """The ``sched.schedule`` op of a schedule."""

    def ops(items: Sequence[model.Item]) -> list[Operation]:
        out: list[Operation] = []
        for item in items:
            if isinstance(item, model.LoopPass):
                out.append(LoopOp(item, ops(item.body)))
            elif isinstance(item, model.Build):
                out.append(BuildOp(item))
            elif isinstance(item, model.Buffer):
                out.append(BufferOp(item))
            elif isinstance(item, model.Write):
                kind = AccumulateOp if item.accumulate else ScatterOp
                out.append(kind(item.value, item.into, item.tree))
            elif isinstance(item, model.Residual):
                out.append(ResidualOp(item))
            elif isinstance(item, model.Apply):
                out.append(ApplyOp(item))
            else:
                out.append(OutputOp(item.tree, item.value, item.into, item.direct))
        return out

    return ScheduleOp(schedule.rounds, ops(schedule.items))


def schedule_from_op(
    op: ScheduleOp,
) -> tuple[model.Schedule, dict[int, Operation]]:
    """The schedule of a ``sched.schedule`` op, and the op of each item
    (keyed by ``id(item)``) for diagnostics."""
    origin: dict[int, Operation] = {}

    def items(region: Region) -> list[model.Item]:
        out: list[model.Item] = []
        for child in body_ops(region):
            item: model.Item
            if isinstance(child, LoopOp):
                item = child.to_model()
                item.body = items(child.body)
            elif isinstance(
                child,
                BuildOp
                | BufferOp
                | OutputOp
                | ResidualOp
                | ApplyOp
                | ScatterOp
                | AccumulateOp,
            ):
                item = child.to_model()
            else:
                message = f"{child.name} is not a schedule op"
                child.emit_error(message, VerifyException(message))
            origin[id(item)] = child
            out.append(item)
        return out

    schedule = model.Schedule(items(op.body), op.rounds.value.data)
    return schedule, origin
