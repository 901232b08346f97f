"""The CSV-CCSD doubles' ladder terms, alone: the planner's rebuilds inside a
loop (``axisflow.scheduling.planner._Search.refine``) at sizes a test can
evaluate. Shared by the planner, measured-memory and lowering tests."""

from __future__ import annotations

from typing import TypedDict

from axisflow.sequant import parse
from axisflow.sequant.syntax import Expression
from tests.conftest import EXAMPLES

LADDER_TERMS = (12, 26, 30, 50)
"""The doubles' terms that hold a whole value beside the residual in the
plan without rebuilds at full extents (docs/benchmarks-planner.md): each a
contraction whose factors share no batched label with it."""

LADDER_BATCH = "i,μ̃"


class LadderOptions(TypedDict):
    """The keyword arguments of ``LADDER_OPTIONS``."""

    max_extra_flops: str
    never_worse: bool
    quiet: bool


LADDER_OPTIONS: LadderOptions = {
    "max_extra_flops": "50%",
    "never_worse": False,  # the plan's own loops, even where they cost
    "quiet": True,
}
"""Planning options under which the planner rebuilds inside a loop: within
50% more multiply-adds than the shared forest."""


def ladder_term(term: int) -> Expression:
    """Term ``term`` of the bundled doubles as an expression of its own."""
    text = (EXAMPLES / "sequant" / "csv_ccsd_doubles_residual_df.txt").read_text(
        encoding="utf-8"
    )
    return Expression((parse(text).terms[term],))
