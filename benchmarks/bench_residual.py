"""The physical residual and never-worse batching on the CSV-CCSD residuals.

For each equation (doubles, singles), each set of extents (i=80, a=μ̃=896,
Κ=1682, 8-byte elements; then the same with composite extents a<2>=40,
a<1>=60) and each policy (none, every combination of i, μ̃, Κ, nested in
that order) the pipeline runs three times: with the residual accumulation
(every tree adds into one residual buffer, roots written straight into it),
without it (each tree's result kept for the caller), and with the values
several trees share rebuilt in each tree (``share="tree"``, accumulating).
Printed per policy:

  unbatched   the peak of the forest evaluated without loops (accumulating,
              values shared)
  scheduler   the scheduler's peak before the never-worse guard
  scheduled   the peak after the guard (never above unbatched)
  ratio       scheduled / unbatched
  no-acc      the scheduled peak without residual accumulation (guarded)
  dropped     loop groups the guard dropped: (tree, space) and, after
              "v", how many of them were (value, space) groups (a value
              computed whole, its readers keeping their loops)
  rebuilt     the scheduled peak with shared values rebuilt per tree
  +madds      the multiply-adds that rebuilding adds
  best        min(scheduled, rebuilt) / unbatched: what share=auto keeps
  pipeline s  time of frontend + classify + schedule + guard (shared values)

Then, on the doubles, the trade-off between the two: rebuilding only the
shared values of at least a given size. Then the evaluator at extent 3
(every space 3) on each policy's schedule, values shared and rebuilt: the
residual computed both ways (the unbatched forest assembled, and the
schedule's own residual buffer), their relative difference and the time.

Run: .venv/bin/python benchmarks/bench_residual.py   (or make bench)
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from timing import print_notes  # benchmarks/timing.py

from axisflow.dialects.batch_model import forest_module
from axisflow.forest.sharing import rebuild_per_tree, shared_values
from axisflow.pipeline import schedule_expression, schedule_module
from axisflow.planning import policies
from axisflow.scheduling.evaluate import RESIDUAL, compare
from axisflow.scheduling.guard import DroppedLoop
from axisflow.scheduling.memory import Sizing, forest_flops, format_bytes
from axisflow.sequant import (
    BatchPolicy,
    PolicyError,
    build_forest,
    expression_layout,
    parse,
)

ROOT = Path(__file__).resolve().parent.parent
EQUATIONS = ("csv_ccsd_doubles_residual_df", "csv_ccsd_singles_residual_df")
FULL = "i=80,a=896,μ̃=896,Κ=1682"
EXTENT_SETS = (("full", FULL), ("composite", FULL + ",a<2>=40,a<1>=60"))
POLICIES = tuple(",".join(p) for p in policies(("i", "μ̃", "Κ")))


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
        "rebuilt",
        "+madds",
        "best",
        "pipeline s",
    )
    print("  " + "  ".join(f"{h:>10}" for h in header))
    best: tuple[int, str] | None = None
    unbatched = 0
    value_drops: list[str] = []
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
        rebuilt_plan = schedule_expression(
            text, policy, extents=extents, elem=8, share="tree"
        )
        rebuilt = rebuilt_plan.report
        report = planned.report
        unbatched = report.unbatched_peak
        chosen = min(report.scheduled_peak, rebuilt.scheduled_peak)
        shared_flops = rebuilt.flops - rebuilt.extra_flops
        row = (
            policy or "none",
            format_bytes(report.unbatched_peak),
            format_bytes(report.first_peak or report.scheduled_peak),
            format_bytes(report.scheduled_peak),
            f"{report.scheduled_peak / report.unbatched_peak:#.3g}x",
            format_bytes(plain.report.scheduled_peak),
            dropped_cell(planned.dropped),
            format_bytes(rebuilt.scheduled_peak),
            f"{rebuilt.extra_flops / shared_flops:+.1%}",
            f"{chosen / report.unbatched_peak:#.3g}x",
            f"{seconds:.2f}",
        )
        print("  " + "  ".join(f"{cell:>10}" for cell in row))
        for how, result in (("shared", planned), ("rebuilt", rebuilt_plan)):
            value_drops.extend(
                f"{policy or 'none'} {how}: {drop}"
                for drop in result.dropped
                if drop.kind == "value"
            )
        assert report.scheduled_peak <= report.unbatched_peak
        assert rebuilt.scheduled_peak <= rebuilt.unbatched_peak
        assert chosen <= report.unbatched_peak
        how = "shared" if chosen == report.scheduled_peak else "rebuilt"
        if best is None or chosen < best[0]:
            best = (chosen, f"{policy or 'none'} (values {how})")
    assert best is not None
    print(f"  best: {best[1]}, {unbatched / best[0]:.3g}x below unbatched")
    print(f"  values' loops dropped ({len(value_drops)}):")
    for line in value_drops or ["none"]:
        print(f"    {line}")


def dropped_cell(dropped: list[DroppedLoop]) -> str:
    """``N`` groups dropped, ``N vK`` when K of them were values' loops."""
    values = sum(1 for drop in dropped if drop.kind == "value")
    return f"{len(dropped)} v{values}" if values else str(len(dropped))


def trade_off(label: str, extents: str, policy: str) -> None:
    """Rebuild only the shared values of at least a size: peak and cost."""
    name = "csv_ccsd_doubles_residual_df"
    text = (ROOT / "examples" / "sequant" / f"{name}.txt").read_text(encoding="utf-8")
    expression = parse(text)
    forest = build_forest(expression, BatchPolicy.make(policy, extents, 8))
    layout = expression_layout(expression)
    sizing = Sizing(forest)
    shared = shared_values(forest)
    flops = forest_flops(forest)
    print(
        f"\n{name}, {label} extents, batch={policy}: rebuilding the shared values"
        f" of at least a size ({len(shared)} shared values)"
    )
    print(f"  {'at least':>10}  {'copies':>7}  {'scheduled':>10}  {'+madds':>7}")
    for threshold in (None, 2**40, 2**36, 2**33, 2**30, 2**27, 0):
        if threshold is None:
            chosen: list[str] = []
            cell = "none"
        else:
            chosen = [
                v for v in shared if sizing.full_bytes(forest.values[v]) >= threshold
            ]
            cell = format_bytes(threshold) if threshold else "0 B"
        model = rebuild_per_tree(forest, chosen)
        report = schedule_module(forest_module(model), residual=layout).forests[0]
        rebuilt = len([v for v in model.values if v not in forest.values])
        extra = (report.report.flops - flops) / flops
        print(
            f"  {cell:>10}  {rebuilt:>7}  "
            f"{format_bytes(report.report.scheduled_peak):>10}  {extra:+7.2%}"
        )


def evaluator_times(name: str) -> None:
    text = (ROOT / "examples" / "sequant" / f"{name}.txt").read_text(encoding="utf-8")
    expression = parse(text)
    small = dict.fromkeys(expression.space_keys(), 3)
    print(f"\n{name}: evaluator at extent 3 (residual both ways)")
    for policy in POLICIES:
        for share in ("forest", "tree"):
            planned = schedule_expression(
                expression, policy, extents=FULL, elem=8, share=share
            )
            start = time.perf_counter()
            comparison = compare(planned.model, planned.schedule, extents=small)
            seconds = time.perf_counter() - start
            residual = comparison.scheduled[RESIDUAL]
            how = "shared" if share == "forest" else "rebuilt"
            print(
                f"  {policy or 'none':>7} {how:>7}: {seconds:6.2f} s, residual "
                f"difference {comparison.errors[RESIDUAL]:.1e} (worst "
                f"{comparison.worst:.1e}), |R| {float(np.linalg.norm(residual)):.4g}"
            )


def main() -> None:
    print_notes()
    for name in EQUATIONS:
        for label, extents in EXTENT_SETS:
            planning_table(name, label, extents)
    trade_off("full", FULL, "i,μ̃")
    trade_off("composite", EXTENT_SETS[1][1], "i")
    for name in EQUATIONS:
        evaluator_times(name)


if __name__ == "__main__":
    main()
