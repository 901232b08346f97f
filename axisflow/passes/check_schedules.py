"""``check-schedules``: check every ``sched.schedule`` against its forest.

The ``sched.schedule`` verifier (run by xdsl-opt after parsing and after
every pass) checks structure only; this pass runs the deep check of
``axisflow.dialects.sched_model.check_schedule_op``: the scheduling rules of
``axisflow.scheduling.check.check_schedule`` and every declared ``bytes``
against the forest's sizes. Use it on schedules written or edited by hand
(``xdsl-opt -p check-schedules file.mlir``); a broken rule is reported at the
op that breaks it. The IR is not changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from axisflow.dialects.sched import ScheduleOp
from axisflow.dialects.sched_model import check_schedule_op


@dataclass(frozen=True)
class CheckSchedulesPass(ModulePass):
    """Check every schedule of the module against its forest."""

    name = "check-schedules"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        for schedule in [s for s in op.walk() if isinstance(s, ScheduleOp)]:
            check_schedule_op(schedule)
