"""The physical residual and never-worse batching on the CSV-CCSD residuals.

For each equation (doubles, singles), each set of extents (i=80, a=μ̃=896,
Κ=1682, 8-byte elements; then the same with composite extents a<2>=40,
a<1>=60 where the frontend accepts them) and each policy (none, i, Κ, i+Κ)
the pipeline runs twice: with the residual accumulation (every tree adds into
one residual buffer, roots written straight into it) and without (each tree's
result kept for the caller). Printed per policy:

  unbatched   the peak of the forest evaluated without loops (accumulating)
  scheduler   the scheduler's peak before the never-worse guard
  scheduled   the peak after the guard (never above unbatched)
  ratio       scheduled / unbatched
  no-acc      the scheduled peak without residual accumulation (guarded)
  dropped     (tree, space) loop groups the guard dropped
  pipeline s  time of frontend + classify + schedule + guard

Then the evaluator at extent 3 (every space 3) on each policy's schedule:
the residual computed both ways (the unbatched forest assembled, and the
schedule's own residual buffer), their relative difference and the time.

Run: .venv/bin/python benchmarks/bench_residual.py   (or make bench)
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from axisflow.pipeline import schedule_expression
from axisflow.pipeline.evaluate import RESIDUAL, compare
from axisflow.pipeline.memory import format_bytes
from axisflow.sequant import PolicyError, parse

ROOT = Path(__file__).resolve().parent.parent
EQUATIONS = ("csv_ccsd_doubles_residual_df", "csv_ccsd_singles_residual_df")
FULL = "i=80,a=896,μ̃=896,Κ=1682"
EXTENT_SETS = (("full", FULL), ("composite", FULL + ",a<2>=40,a<1>=60"))
POLICIES = ("", "i", "Κ", "i,Κ")


def planning_table(name: str, label: str, extents: str) -> None:
    text = (ROOT / "examples" / "sequant" / f"{name}.txt").read_text(encoding="utf-8")
    print(f"\n{name}, {label} extents ({extents}), 8 B")
    header = (
        "policy",
        "unbatched",
        "scheduler",
        "scheduled",
        "ratio",
        "no-acc",
        "dropped",
        "pipeline s",
    )
    print("  " + "  ".join(f"{h:>13}" for h in header))
    best: tuple[int, str] | None = None
    unbatched = 0
    for policy in POLICIES:
        start = time.perf_counter()
        try:
            planned = schedule_expression(text, policy, extents=extents, elem=8)
        except PolicyError as error:
            print(f"  (not run: {error})")
            return
        seconds = time.perf_counter() - start
        plain = schedule_expression(
            text, policy, extents=extents, elem=8, accumulate=False
        )
        report = planned.report
        unbatched = report.unbatched_peak
        row = (
            policy or "none",
            format_bytes(report.unbatched_peak),
            format_bytes(report.first_peak or report.scheduled_peak),
            format_bytes(report.scheduled_peak),
            f"{report.scheduled_peak / report.unbatched_peak:#.3g}x",
            format_bytes(plain.report.scheduled_peak),
            str(len(planned.dropped)),
            f"{seconds:.2f}",
        )
        print("  " + "  ".join(f"{cell:>13}" for cell in row))
        assert report.scheduled_peak <= report.unbatched_peak
        if best is None or report.scheduled_peak < best[0]:
            best = (report.scheduled_peak, policy or "none")
    assert best is not None
    print(f"  best: {best[1]}, {unbatched / best[0]:.3g}x below unbatched")


def evaluator_times(name: str) -> None:
    text = (ROOT / "examples" / "sequant" / f"{name}.txt").read_text(encoding="utf-8")
    expression = parse(text)
    small = dict.fromkeys(expression.space_keys(), 3)
    print(f"\n{name}: evaluator at extent 3 (residual both ways)")
    for policy in POLICIES:
        planned = schedule_expression(expression, policy, extents=FULL, elem=8)
        start = time.perf_counter()
        comparison = compare(planned.model, planned.schedule, extents=small)
        seconds = time.perf_counter() - start
        residual = comparison.scheduled[RESIDUAL]
        print(
            f"  {policy or 'none':>5}: {seconds:6.2f} s, residual difference "
            f"{comparison.errors[RESIDUAL]:.1e} (worst {comparison.worst:.1e}), "
            f"|R| {float(np.linalg.norm(residual)):.4g}"
        )


def main() -> None:
    for name in EQUATIONS:
        for label, extents in EXTENT_SETS:
            planning_table(name, label, extents)
    for name in EQUATIONS:
        evaluator_times(name)


if __name__ == "__main__":
    main()
