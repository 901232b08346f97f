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
* ``block=N`` or ``block="i=8,Κ=64"``: elements per block of every batch
  loop, or per index space (spaces not named keep blocks of 1; default 1);
* ``max-rounds=N``: bound on the demotion fixpoint (default 16);
* ``never-worse=true|false``: drop the loops that would raise the peak above
  the unbatched one, and say so in the report (default true);
* ``accumulate=true|false``: when all trees share their externals, add each
  into one residual buffer as soon as it is computed (default true).

A forest that cannot be scheduled fails the pass with a diagnostic naming the
forest; no forest is changed then.
"""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

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

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from axisflow.pipeline.api import PipelineError, schedule_module

        if self.report not in REPORT_FORMATS:
            raise PassFailedException(
                f"schedule-batches: report must be one of {', '.join(REPORT_FORMATS)}, "
                f"got {self.report!r}"
            )
        from axisflow.scheduling.options import OptionError, parse_blocks

        try:
            blocks = parse_blocks(self.block)
        except OptionError as error:
            raise PassFailedException(f"schedule-batches: {error}") from None
        try:
            # xdsl-opt verifies the module after parsing and after each pass.
            result = schedule_module(
                op,
                block=blocks,
                max_rounds=self.max_rounds,
                classify=False,
                verify=False,
                never_worse=self.never_worse,
                accumulate=self.accumulate,
            )
        except (PipelineError, TypeError, ValueError) as error:  # options too
            raise PassFailedException(f"schedule-batches: {error}") from None
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
        try:
            write_report(Path(self.report_file), text)
        except OSError as error:
            raise PassFailedException(
                f"schedule-batches: cannot write report-file {self.report_file!r}: "
                f"{error.strerror or error}"
            ) from None


_WRITTEN: set[Path] = set()
"""Report files this process has written (later writes append)."""


def write_report(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` the first time in this process, append
    afterwards; atomically (temporary file in the same directory, renamed)."""
    key = path.resolve()
    previous = ""
    if key in _WRITTEN and path.exists():
        previous = path.read_text(encoding="utf-8")
    handle, temporary = tempfile.mkstemp(dir=key.parent, prefix=f".{key.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(previous + text)
        os.replace(temporary, key)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _WRITTEN.add(key)
