"""Peak memory of the CSV-CCSD doubles residual per batching policy, and the
time the fusion pipeline takes.

Input: ``examples/sequant/csv_ccsd_doubles_residual_df.txt`` (55 terms) with
the extents i=80, a=896, μ̃=896, Κ=1682 and 8-byte elements, built by the
SeQuant frontend under each policy (spaces batched, outermost first; fusion
slots shared across trees, or one per loop with "separate"). For each policy:
the peak live bytes of the unbatched forest and of the schedule (the memory
model of docs/pipeline.md), the schedule's shape, and the time of

  classify   the classify-axes pass (in memory)
  schedule   forest model + scheduler + memory report + sched ops
  pipeline   classify + schedule (schedule_module without re-verification)

each the best of several runs on a fresh module, with the cyclic garbage
collector paused in the measured region (after a full collection: a
collection's cost follows the whole heap, not the work measured); the
frontend's own time and the verification of the forest are shown apart. Then what is live at each
scheduled peak, the energy and singles residual under the same extents, a
sensitivity run with PNO-sized virtual indices (a=40), the scaling on a 10x
input, and the xdsl-opt spelling end to end.

All forests are built with order=file (the left-to-right fold the tables in
docs/benchmarks-pipeline.md were recorded with); docs/benchmarks-order.md
measures the other orders.

Run: .venv/bin/python benchmarks/bench_pipeline.py   (or make bench)
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from timing import best_of, paused_gc, print_notes  # benchmarks/timing.py
from xdsl.dialects.builtin import ModuleOp

from axisflow.dialects.batch import ForestOp, LoopOp
from axisflow.dialects.sched import LoopOp as PassOp
from axisflow.passes.classify_axes import classify_forest
from axisflow.pipeline.api import ForestSchedule, attach, plan_forest
from axisflow.scheduling.memory import format_bytes, lifetimes, peak
from axisflow.sequant import Expression, deparse, parse, to_module
from axisflow.sequant.syntax import repeat_with_fresh_labels

ROOT = Path(__file__).resolve().parents[1]
SEQUANT = ROOT / "examples" / "sequant"
DOUBLES = SEQUANT / "csv_ccsd_doubles_residual_df.txt"
OTHERS = ("csv_ccsd_energy_df", "csv_ccsd_singles_residual_df")
EXTENTS = "i=80,a=896,μ̃=896,Κ=1682"
PNO_EXTENTS = "i=80,a=40,μ̃=896,Κ=1682"
XDSL_OPT = str(Path(sys.executable).with_name("xdsl-opt"))
POLICIES: list[tuple[str, tuple[str, ...], bool]] = [
    ("none", (), False),
    ("Κ", ("Κ",), False),
    ("i", ("i",), False),
    ("Κ,i", ("Κ", "i"), False),
    ("i,Κ", ("i", "Κ"), False),
    ("Κ separate", ("Κ",), True),
    ("i separate", ("i",), True),
    ("Κ,i separate", ("Κ", "i"), True),
]


def only_forest(module: ModuleOp) -> ForestOp:
    return next(op for op in module.walk() if isinstance(op, ForestOp))


@dataclass
class Row:
    policy: str
    loops: int
    passes: int
    rounds: int
    demoted: int
    hoisted: int
    unbatched: int
    scheduled: int
    frontend: float
    verify: float
    classify: float
    schedule: float
    result: ForestSchedule

    @property
    def pipeline(self) -> float:
        return self.classify + self.schedule


def measure(
    policy: str,
    expression: Expression,
    batch: tuple[str, ...],
    separate: bool,
    extents: str,
    runs: int,
) -> Row:
    def build() -> ModuleOp:
        return to_module(
            expression,
            batch,
            extents=extents,
            elem=8,
            separate_instances=separate,
            order="file",
        )

    t_frontend, _ = best_of(runs, build)
    t_verify = t_classify = t_schedule = float("inf")
    result: ForestSchedule | None = None
    for _ in range(runs):  # each run on a fresh module: the passes change it
        forest = only_forest(build())
        with paused_gc():
            begin = time.perf_counter()
            forest.verify()
            t_verify = min(t_verify, time.perf_counter() - begin)
        with paused_gc():
            begin = time.perf_counter()
            classify_forest(forest)
            t_classify = min(t_classify, time.perf_counter() - begin)
        with paused_gc():
            begin = time.perf_counter()
            result = plan_forest(forest)
            attach(forest, result.schedule_op)
            t_schedule = min(t_schedule, time.perf_counter() - begin)
    assert result is not None
    return Row(
        policy,
        sum(1 for op in result.forest.walk() if isinstance(op, LoopOp)),
        sum(1 for op in result.schedule_op.walk() if isinstance(op, PassOp)),
        result.schedule.rounds,
        len(result.decisions.demoted),
        len(result.decisions.hoisted),
        result.report.unbatched_peak,
        result.report.scheduled_peak,
        t_frontend,
        t_verify,
        t_classify,
        t_schedule,
        result,
    )


def print_table(rows: list[Row]) -> None:
    header = (
        f"{'policy':<13} {'loops':>5} {'passes':>6} {'rounds':>6} {'demoted':>7} "
        f"{'hoisted':>7} {'unbatched peak':>15} {'scheduled peak':>15} {'ratio':>8} "
        f"{'classify':>8} {'schedule':>8} {'pipeline':>8}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r.policy:<13} {r.loops:>5} {r.passes:>6} {r.rounds:>6} {r.demoted:>7} "
            f"{r.hoisted:>7} {format_bytes(r.unbatched):>15} "
            f"{format_bytes(r.scheduled):>15} {r.scheduled / r.unbatched:>8.3g} "
            f"{r.classify:>8.3f} {r.schedule:>8.3f} {r.pipeline:>8.3f}"
        )


def live_at_peak(row: Row, count: int) -> str:
    found = peak(lifetimes(row.result.model, row.result.schedule))
    largest = sorted(found.live, key=lambda life: -life.bytes)[:count]
    share = sum(life.bytes for life in largest) / found.bytes
    parts = ", ".join(
        f"@{life.value} {life.kind} {format_bytes(life.bytes)}" for life in largest
    )
    return f"{len(found.live)} objects; largest {parts} ({share:.0%} of the peak)"


def end_to_end(row: Row) -> tuple[float, dict[str, object]]:
    """xdsl-opt from the SeQuant text to the JSON report (Κ,i policy)."""
    command = [
        XDSL_OPT,
        "-f",
        f'sequant{{batch="Κ",i extents="{EXTENTS}" elem=8 order=file}}',
        str(DOUBLES),
        "-p",
        "classify-axes,schedule-batches{report=json}",
        "-o",
        "/dev/null",
    ]
    elapsed, done = best_of(
        2, lambda: subprocess.run(command, check=True, capture_output=True, text=True)
    )
    # The report goes to stderr, JSON Lines: one document per forest.
    (report,) = [
        json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")
    ]
    assert report["scheduled_peak_bytes"] == row.scheduled, "xdsl-opt disagrees"
    return elapsed, report


def main() -> None:
    print_notes()
    text = DOUBLES.read_text(encoding="utf-8")
    expression = parse(text, source=DOUBLES.name)
    runs = 3
    print(
        f"CSV-CCSD doubles residual ({len(expression.terms)} terms), extents "
        f"{EXTENTS}, 8-byte elements, blocks of 1"
    )
    print(f"times: best of {runs} runs, seconds, in process")
    print()
    rows = [
        measure(name, expression, batch, separate, EXTENTS, runs)
        for name, batch, separate in POLICIES
    ]
    print_table(rows)
    print()
    print(
        f"frontend (to_module) {min(r.frontend for r in rows):.3f}-"
        f"{max(r.frontend for r in rows):.3f} s; verification of the forest "
        f"{min(r.verify for r in rows):.3f}-{max(r.verify for r in rows):.3f} s "
        "(not part of the pipeline: xdsl-opt verifies between passes)"
    )
    values = len(rows[0].result.report.values)
    print(f"{values} built values; ratio = scheduled peak / unbatched peak")
    print()
    print("Live at the scheduled peak:")
    for r in rows:
        print(f"  {r.policy:<13} {live_at_peak(r, 3)}")
    print(f"  unbatched     {live_at_peak(rows[0], 3)}")
    print()

    for name in OTHERS:
        other = parse((SEQUANT / f"{name}.txt").read_text(encoding="utf-8"))
        print(f"{name} ({len(other.terms)} terms), same extents")
        print()
        print_table(
            [
                measure(policy, other, batch, separate, EXTENTS, runs)
                for policy, batch, separate in POLICIES
                if not separate
            ]
        )
        print()

    print(f"Sensitivity: PNO-sized virtual indices, extents {PNO_EXTENTS}")
    print()
    print_table(
        [
            measure(name, expression, batch, separate, PNO_EXTENTS, 1)
            for name, batch, separate in POLICIES
        ]
    )
    print()

    big = parse(deparse(Expression(repeat_with_fresh_labels(expression.terms, 10))))
    print(
        f"Scaling, policy Κ,i, best of 2 runs: 1x ({len(expression.terms)} terms) vs 10x"
    )
    small = rows[3]
    large = measure("Κ,i 10x", big, ("Κ", "i"), False, EXTENTS, 2)
    for r, terms in ((small, len(expression.terms)), (large, len(big.terms))):
        uses = sum(1 for op in r.result.forest.walk() if op.name == "batch.use")
        print(
            f"  {terms:>4} terms {uses:>6} use-sites  classify {r.classify:.3f} s  "
            f"schedule {r.schedule:.3f} s  pipeline {r.pipeline:.3f} s  "
            f"({1e6 * r.pipeline / uses:.0f} us per use-site)"
        )
    print()

    with tempfile.TemporaryDirectory():
        elapsed, report = end_to_end(small)
    print(
        "End to end: xdsl-opt -f 'sequant{batch=\"Κ\",i extents=... elem=8}' "
        "doubles.txt -p 'classify-axes,schedule-batches{report=json}'"
    )
    print(
        f"  {elapsed:.2f} s (process start-up included); JSON scheduled peak "
        f"{format_bytes(int(str(report['scheduled_peak_bytes'])))}, as in process"
    )


if __name__ == "__main__":
    main()
