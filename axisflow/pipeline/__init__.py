"""The fusion pipeline: schedule by role, account memory, check the numbers.

Pure modules (no xDSL): ``model`` (the forest the pipeline works on),
``scheduler`` (roles -> ordered schedule, with split and demotion),
``schedule`` (the schedule and its validity rules), ``memory`` (sizes, live
ranges, peaks, report) and ``evaluate`` (NumPy reference evaluator). IR
plumbing: ``ir`` (``batch.forest`` -> model) and ``api`` (the embedding
entry points below, which import xDSL when first used).

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
