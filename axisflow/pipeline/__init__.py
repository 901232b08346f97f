"""The fusion pipeline on the IR: classify, schedule, attach the schedule.

``api`` holds the embedding entry points below (they import xDSL when first
used): ``batch.forest`` ops in, ``sched.schedule`` ops and memory reports
out. The pure work (the schedule model, the scheduler, memory accounting,
the NumPy evaluator, the never-worse guard) is ``axisflow.scheduling``.

::

    from axisflow.pipeline import schedule_module
    result = schedule_module(module)            # classify-axes + scheduler
    result.forests[0].report.table()

    from axisflow.pipeline import schedule_expression
    forest = schedule_expression(text, batch="Κ", extents="i=80,Κ=1682")

See ``docs/pipeline.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from axisflow.pipeline.api import (
        ForestSchedule,
        PipelineError,
        PipelineResult,
        plan_forest,
        schedule_expression,
        schedule_module,
    )

_API = (
    "ForestSchedule",
    "PipelineError",
    "PipelineResult",
    "plan_forest",
    "schedule_expression",
    "schedule_module",
)


def __getattr__(name: str) -> Any:
    # The embedding API imports xDSL; load it only when asked for.
    if name in _API:
        from axisflow.pipeline import api

        return getattr(api, name)
    raise AttributeError(f"module 'axisflow.pipeline' has no attribute {name!r}")


__all__ = [
    "ForestSchedule",
    "PipelineError",
    "PipelineResult",
    "plan_forest",
    "schedule_expression",
    "schedule_module",
]
