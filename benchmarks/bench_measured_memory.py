"""Prediction equals measurement: the memory model's peak beside what the
NumPy evaluator allocates, on the bundled CSV-CCSD doubles.

At i=3, a=96, μ̃=24, Κ=12 (8-byte elements: the residual alone is 648 KiB,
so the arrays dominate) each policy of ``tests/pipeline/test_measured_memory.py``
is planned (never-worse guard off: the policy's own loops), its predicted
peak taken from the memory model (``peak(lifetimes(...))``) and its
schedule run once by the evaluator under ``tracemalloc``
(``measured_peak``: inputs aside). Printed per policy:

  batch      the spaces batched
  share      forest, tree, or auto (the planner's choice within the budget)
  blocks     1 (blocks of one element) or auto (as large as the budget allows)
  budget     the memory budget of blocks=auto and share=auto
  rebuild    never, or fused (values rebuilt inside loops that do not bind them)
  predicted  the model's peak
  measured   the peak the run allocated
  excess     measured - predicted (what the model leaves out: NumPy's
             buffers, the run's Python objects; docs/pipeline.md, 3.4)
  ratio      measured / predicted
  run s      the time of the measured run

With ``--reused-from BYTES`` the runs reuse freed arrays from that size
(``pages.POPULATE_BYTES``, 1 MiB by default, which few arrays at these
extents reach), as ``tests/pipeline/test_measured_memory.py`` runs them
(16384): the pool of freed arrays (``pages.reusing``) must keep the peak
too.

Run: .venv/bin/python benchmarks/bench_measured_memory.py   (or make bench)
     [--reused-from 16384]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from axisflow.pipeline.api import plan_expression, plan_model
from axisflow.scheduling import pages
from axisflow.scheduling.evaluate import measured_peak, random_inputs
from axisflow.scheduling.memory import (
    Sizing,
    display_width,
    format_bytes,
    lifetimes,
    pad_to_width,
    peak,
)
from axisflow.scheduling.options import Blocks, Rebuild, ShareChoice

ROOT = Path(__file__).resolve().parent.parent
EXTENTS = "i=3,a=96,μ̃=24,Κ=12"
POLICIES: list[tuple[str, ShareChoice | None, Blocks, str | None, Rebuild]] = [
    ("Κ", "forest", 1, None, "never"),
    ("i", "forest", 1, None, "never"),
    ("μ̃", "forest", "auto", "6MiB", "never"),
    ("i,μ̃", "forest", "auto", "3MiB", "never"),
    ("Κ", "tree", 1, None, "never"),
    ("i", "tree", "auto", "2MiB", "never"),
    ("Κ", None, "auto", "3MiB", "never"),
    ("i,Κ", "forest", 1, None, "fused"),
    ("i", "forest", {"i": 2}, None, "never"),  # a smaller last block
]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--reused-from",
        type=int,
        default=pages.POPULATE_BYTES,
        help="bytes from which freed arrays are reused (default: %(default)s)",
    )
    reused_from = parser.parse_args().reused_from
    if reused_from < 1:
        parser.error(f"--reused-from must be positive, got {reused_from}")
    pages.POPULATE_BYTES = reused_from
    text = (
        ROOT / "examples" / "sequant" / "csv_ccsd_doubles_residual_df.txt"
    ).read_text(encoding="utf-8")
    print(
        f"CSV-CCSD doubles at {EXTENTS}, 8-byte elements, "
        f"freed arrays reused from {reused_from} bytes"
    )
    header = (
        "batch",
        "share",
        "blocks",
        "budget",
        "rebuild",
        "predicted",
        "measured",
        "excess",
        "ratio",
        "run s",
    )
    rows: list[tuple[str, ...]] = []
    for batch, share, block, budget, rebuild in POLICIES:
        plan = plan_expression(
            text,
            batch,
            extents=EXTENTS,
            elem=8,
            share=share,
            block=block,
            budget=budget,
            never_worse=False,
        )
        if rebuild == "fused":
            plan = plan_model(
                plan.model,
                block=block,
                residual=plan.residual,
                never_worse=False,
                rebuild="fused",
            )
        sizing = Sizing(plan.model)
        predicted = peak(lifetimes(plan.model, plan.schedule, sizing)).bytes
        inputs = random_inputs(plan.model, sizing)
        start = time.perf_counter()
        measured, _ = measured_peak(plan.model, plan.schedule, inputs, sizing)
        seconds = time.perf_counter() - start
        rows.append(
            (
                batch,
                "auto" if share is None else share,
                ",".join(f"{k}={n}" for k, n in block.items())
                if isinstance(block, dict)
                else str(block),
                budget or "-",
                rebuild,
                format_bytes(predicted),
                format_bytes(measured),
                f"{(measured - predicted) / 1024:+.1f} KiB",
                f"{measured / predicted:.3f}",
                f"{seconds:.2f}",
            )
        )
    widths = [
        max(display_width(r[k]) for r in [header, *rows]) for k in range(len(header))
    ]
    for row in [header, *rows]:
        cells = (pad_to_width(c, w) for c, w in zip(row, widths, strict=True))
        print("  ".join(cells).rstrip())


if __name__ == "__main__":
    main()
