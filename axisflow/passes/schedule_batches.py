"""``schedule-batches``: the ordered batch schedule of every classified forest.

Run after ``classify-axes`` (``-p classify-axes,schedule-batches``). Each
``batch.forest`` gets a ``sched.schedule`` at its end (see
``axisflow.dialects.sched``); re-running replaces it. Options:

* ``report=none|table|json``: print the memory report of every forest to
  standard output before the IR (``-o /dev/null`` leaves the report alone);
* ``block=N``: elements per block of every batch loop (default 1);
* ``max-rounds=N``: bound on the demotion fixpoint (default 16).

A forest that cannot be scheduled fails the pass with a diagnostic naming the
forest; no forest is changed then.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from axisflow.pipeline.scheduler import DEFAULT_MAX_ROUNDS

REPORT_FORMATS = ("none", "table", "json")


@dataclass(frozen=True)
class ScheduleBatchesPass(ModulePass):
    """Turn each classified forest into an explicit ordered schedule."""

    name = "schedule-batches"

    report: str = "none"
    """``none``, ``table`` (for people) or ``json`` (for tools)."""
    block: int = 1
    """Elements per block of every batch loop."""
    max_rounds: int = DEFAULT_MAX_ROUNDS
    """Bound on the demotion fixpoint."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from axisflow.pipeline.api import PipelineError, schedule_module

        if self.report not in REPORT_FORMATS:
            raise PassFailedException(
                f"schedule-batches: report must be one of {', '.join(REPORT_FORMATS)}, "
                f"got {self.report!r}"
            )
        try:
            # xdsl-opt verifies the module after parsing and after each pass.
            result = schedule_module(
                op,
                block=self.block,
                max_rounds=self.max_rounds,
                classify=False,
                verify=False,
            )
        except (PipelineError, TypeError, ValueError) as error:  # options too
            raise PassFailedException(f"schedule-batches: {error}") from None
        if self.report == "table":
            print(result.tables(), end="")
        elif self.report == "json":
            import json

            reports = [f.report.to_json() for f in result.forests]
            print(json.dumps(reports, ensure_ascii=False, indent=2))
