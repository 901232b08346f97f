"""Never worse than not batching, on the CSV-CCSD doubles and singles residuals.

For each equation, each set of extents (i=80, a=μ̃=896, Κ=1682, 8-byte
elements; then the same with composite extents a<2>=40, a<1>=60 when the
frontend accepts them) and each policy (none, i, Κ, i+Κ), the pipeline is
run (frontend, classify-axes, scheduler) and then the never-worse guard
(``axisflow.pipeline.guard``). Printed per policy:

  unbatched   the peak of the forest evaluated without loops
  scheduler   the scheduler's peak before the guard
  scheduled   the peak after the guard (never above unbatched)
  ratio       scheduled / unbatched
  dropped     (tree, space) loop groups the guard dropped
  guard s     time of the guard (rescheduling included)

Then the evaluator at extent 3 (every space 3): the residual computed both
ways (unbatched forest and the guarded schedule, assembled with
``axisflow.pipeline.assemble``), the time of each and their relative
difference.

Run: .venv/bin/python benchmarks/bench_residual.py   (or make bench)
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from axisflow.pipeline import schedule_expression
from axisflow.pipeline.assemble import assemble_residual
from axisflow.pipeline.evaluate import (
    evaluate_forest,
    random_inputs,
    relative_difference,
    run_schedule,
)
from axisflow.pipeline.guard import schedule_never_worse
from axisflow.pipeline.memory import Sizing, format_bytes
from axisflow.residual import Operator, residual_layout
from axisflow.sequant import PolicyError, parse

ROOT = Path(__file__).resolve().parent.parent
EQUATIONS = ("csv_ccsd_doubles_residual_df", "csv_ccsd_singles_residual_df")
FULL = "i=80,a=896,μ̃=896,Κ=1682"
EXTENT_SETS = (("full", FULL), ("composite", FULL + ",a<2>=40,a<1>=60"))
POLICIES = ("", "i", "Κ", "i,Κ")
MAX_ROUNDS = 16


def planning_table(name: str, label: str, extents: str) -> None:
    text = (ROOT / "examples" / "sequant" / f"{name}.txt").read_text(encoding="utf-8")
    print(f"\n{name}, {label} extents ({extents}), 8 B")
    header = (
        "policy",
        "unbatched",
        "scheduler",
        "scheduled",
        "ratio",
        "dropped",
        "guard s",
    )
    print("  " + "  ".join(f"{h:>11}" for h in header))
    best: tuple[int, str] | None = None
    unbatched = 0
    for policy in POLICIES:
        try:
            planned = schedule_expression(text, policy, extents=extents, elem=8)
        except PolicyError as error:
            print(f"  (not run: {error})")
            return
        start = time.perf_counter()
        guarded = schedule_never_worse(planned.model, max_rounds=MAX_ROUNDS)
        seconds = time.perf_counter() - start
        ratio = guarded.scheduled_peak / guarded.unbatched_peak
        row = (
            policy or "none",
            format_bytes(guarded.unbatched_peak),
            format_bytes(guarded.first_peak),
            format_bytes(guarded.scheduled_peak),
            f"{ratio:#.3g}x",
            str(len(guarded.dropped)),
            f"{seconds:.2f}",
        )
        print("  " + "  ".join(f"{cell:>11}" for cell in row))
        unbatched = guarded.unbatched_peak
        if best is None or guarded.scheduled_peak < best[0]:
            best = (guarded.scheduled_peak, policy or "none")
        assert guarded.scheduled_peak <= guarded.unbatched_peak
    assert best is not None
    print(f"  best: {best[1]}, {unbatched / best[0]:.3g}x below unbatched")


def evaluator_times(name: str) -> None:
    text = (ROOT / "examples" / "sequant" / f"{name}.txt").read_text(encoding="utf-8")
    expression = parse(text)
    extents = dict.fromkeys(expression.space_keys(), 3)
    layout = residual_layout(
        [t.externals() for t in expression.terms],
        [
            tuple(Operator.make(o.label, o.bra, o.ket) for o in t.operators)
            for t in expression.terms
        ],
    )
    print(f"\n{name}: evaluator at extent 3 (residual both ways)")
    for policy in POLICIES:
        planned = schedule_expression(expression, policy, elem=8)
        guarded = schedule_never_worse(
            planned.model, max_rounds=MAX_ROUNDS, extents=extents
        )
        forest = guarded.forest
        sizing = Sizing(forest, extents)
        inputs = random_inputs(forest, sizing, seed=0)
        start = time.perf_counter()
        unbatched = assemble_residual(forest, evaluate_forest(forest, inputs), layout)
        middle = time.perf_counter()
        scheduled = assemble_residual(
            forest,
            run_schedule(forest, guarded.result.schedule, inputs, sizing),
            layout,
        )
        end = time.perf_counter()
        difference = relative_difference(scheduled, unbatched)
        print(
            f"  {policy or 'none':>5}: unbatched {middle - start:6.2f} s, "
            f"schedule {end - middle:6.2f} s, relative difference {difference:.1e}, "
            f"|R| {float(np.linalg.norm(unbatched)):.4g}"
        )


def main() -> None:
    for name in EQUATIONS:
        for label, extents in EXTENT_SETS:
            planning_table(name, label, extents)
    for name in EQUATIONS:
        evaluator_times(name)


if __name__ == "__main__":
    main()
