"""``schedule-batches``: the ordered batch schedule of every classified forest.

Run after ``classify-axes`` (``-p classify-axes,schedule-batches``). Each
``batch.forest`` gets a ``sched.schedule`` at its end (see
``axisflow.dialects.sched``); re-running replaces it. Options:

* ``report=none|table|json``: the memory report of every forest, written to
  standard error (standard output stays valid IR, so ``xdsl-opt ... |
  xdsl-opt ...`` works); ``json`` is JSON Lines: one compact JSON document
  per forest per line, so it stays valid under ``--split-input-file``;
* ``report-file=PATH``: write the report to ``PATH`` instead of standard
  error. The first write in a process replaces the file, later ones (the
  next chunk of ``--split-input-file``) append; each write is atomic (a
  temporary file renamed over ``PATH``), so the file is never half-written;
  under ``axisflow-opt`` the file is written when the run ends, and only if
  it succeeded, as ``-o`` is (``axisflow.report_file``);
* ``block=N`` or ``block="i=8,Κ=64"``: elements per block of every batch
  loop, or per index space (spaces not named keep blocks of 1; default 1);
  ``block=auto``: as large as ``budget`` allows (without a budget, within
  10% of the peak at blocks of one element);
* ``budget=100GiB``: the memory budget ``block=auto`` fills (``500MB``,
  ``4e9`` bytes); the report says whether the peak is within it;
* ``rebuild=never|fused``: a value an enclosing loop does not bind is hoisted
  above it (``never``, the default), or, when a deeper loop of its consumer
  binds it, kept inside and rebuilt every iteration (``fused``: multiply-adds
  for memory, counted in the report);
* ``max-rounds=N``: bound on the demotion fixpoint (default 16);
* ``never-worse=true|false``: drop the loops that would raise the peak above
  the unbatched one, and say so in the report (default true);
* ``accumulate=true|false``: when all trees share their externals, add each
  into one residual buffer as soon as it is computed (default true);
* ``quiet=true|false``: no notes on standard error (default false). A note
  is one line, ``note: schedule-batches: ...``, when the never-worse guard
  dropped loops (how many groups, the peak with them and without: batching
  was asked for and is not, or not wholly, done) or when ``block`` names a
  space the forest lacks (``axisflow.notes``).

A forest that cannot be scheduled fails the pass with a diagnostic naming the
forest; no forest is changed then.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from axisflow.scheduling.scheduler import DEFAULT_MAX_ROUNDS

REPORT_FORMATS = ("none", "table", "json")


@dataclass(frozen=True)
class ScheduleBatchesPass(ModulePass):
    """Turn each classified forest into an explicit ordered schedule."""

    name = "schedule-batches"

    report: str = "none"
    """``none``, ``table`` (for people) or ``json`` (for tools)."""
    block: int | str = 1
    """Elements per block: one number for every space, or ``"i=8,Κ=64"``."""
    max_rounds: int = DEFAULT_MAX_ROUNDS
    """Bound on the demotion fixpoint."""
    report_file: str = ""
    """Where the report goes (standard error when empty)."""
    never_worse: bool = True
    """Drop loops that would raise the peak above the unbatched one."""
    accumulate: bool = True
    """Accumulate trees that share their externals into one residual."""
    budget: str = ""
    """A memory budget (``100GiB``) for ``block=auto``."""
    rebuild: Literal["never", "fused"] = "never"
    """A value an enclosing loop does not bind: hoisted (``never``) or
    rebuilt every iteration inside it (``fused``)."""
    quiet: bool = False
    """No notes on standard error (loops dropped, unused block entries)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from axisflow.notes import collected_notes
        from axisflow.pipeline.api import PipelineError, schedule_module

        if self.report not in REPORT_FORMATS:
            raise PassFailedException(
                f"schedule-batches: report must be one of {', '.join(REPORT_FORMATS)}, "
                f"got {self.report!r}"
            )
        from axisflow.scheduling.options import (
            REBUILDS,
            OptionError,
            parse_blocks,
            parse_budget,
        )

        try:
            blocks = parse_blocks(self.block)
            budget = parse_budget(self.budget)
            if self.rebuild not in REBUILDS:
                raise OptionError(
                    f"rebuild must be one of {', '.join(REBUILDS)}, got {self.rebuild!r}"
                )
        except OptionError as error:
            raise PassFailedException(f"schedule-batches: {error}") from None
        try:
            # xdsl-opt verifies the module after parsing and after each pass.
            with collected_notes() as notes:
                result = schedule_module(
                    op,
                    block=blocks,
                    max_rounds=self.max_rounds,
                    classify=False,
                    verify=False,
                    never_worse=self.never_worse,
                    accumulate=self.accumulate,
                    rebuild=self.rebuild,
                    budget=budget,
                    quiet=self.quiet,
                )
        except (PipelineError, TypeError, ValueError) as error:  # options too
            raise PassFailedException(f"schedule-batches: {error}") from None
        for note in notes:
            sys.stderr.write(f"note: schedule-batches: {note}\n")
        if self.report == "none":
            return
        if self.report == "table":
            text = result.tables()
        else:
            import json

            text = "".join(
                json.dumps(f.report.to_json(), ensure_ascii=False) + "\n"
                for f in result.forests
            )
        if not self.report_file:
            sys.stderr.write(text)
            sys.stderr.flush()
            return
        from axisflow.report_file import write_report

        try:
            write_report(Path(self.report_file), text)
        except OSError as error:
            raise PassFailedException(
                f"schedule-batches: cannot write report-file {self.report_file!r}: "
                f"{error.strerror or error}"
            ) from None
