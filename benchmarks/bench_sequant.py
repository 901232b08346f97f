"""Time the SeQuant frontend against xDSL's own parse of the IR it produces.

Inputs: the CSV-CCSD doubles residual (55 terms) and a 10x input made of its
terms repeated with fresh labels for the dummy (summed) indices, so CSE
shares the values and only the use-sites grow. Batching over Κ.

Stages, each the best of several runs, in-process:
  parse     SeQuant text -> Expression
  forest    binarization + CSE + loop placement (pure Python)
  emit      Forest -> batch-dialect module
  classify  the classify-axes pass
and, for comparison, xDSL's Parser on the printed module (what `xdsl-opt`
does with the IR file). Also end to end as subprocesses: `xdsl-opt -f
sequant ... -p classify-axes` versus `xdsl-opt file.mlir -p classify-axes`.

Forests are built with order=file (the left-to-right fold the tables in
docs/benchmarks-sequant.md were recorded with).

Run: .venv/bin/python benchmarks/bench_sequant.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import best_of  # benchmarks/timing.py
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.parser import Parser

from axisflow.dialects.batch import Batch
from axisflow.dialects.batch_model import forest_module
from axisflow.passes.classify_axes import ClassifyAxesPass
from axisflow.sequant import BatchPolicy, Expression, build_forest, parse
from axisflow.sequant.syntax import deparse, repeat_with_fresh_labels

ROOT = Path(__file__).resolve().parents[1]
DOUBLES = ROOT / "examples" / "sequant" / "csv_ccsd_doubles_residual_df.txt"
XDSL_OPT = str(Path(sys.executable).with_name("xdsl-opt"))


def ten_times(text: str) -> str:
    terms = parse(text).terms
    return deparse(Expression(repeat_with_fresh_labels(terms, 10)))


def context() -> Context:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Batch)
    return ctx


def measure(name: str, text: str, runs: int) -> dict[str, float | int | str]:
    policy = BatchPolicy.make("Κ")
    t_parse, expression = best_of(runs, lambda: parse(text))
    t_forest, forest = best_of(
        runs, lambda: build_forest(expression, policy, order="file")
    )
    t_emit, _ = best_of(runs, lambda: forest_module(forest))

    # classify-axes changes the module, so each run gets a fresh one and only
    # the pass itself is timed.
    best_classify = float("inf")
    module = forest_module(forest)
    for _ in range(runs):
        module = forest_module(forest)
        begin = time.perf_counter()
        ClassifyAxesPass().apply(Context(), module)
        best_classify = min(best_classify, time.perf_counter() - begin)
    printed = str(module)
    ctx = context()
    t_xdsl, _ = best_of(runs, lambda: Parser(ctx, printed).parse_module())
    frontend = t_parse + t_forest + t_emit + best_classify
    uses = len(forest.sites)
    return {
        "input": name,
        "terms": len(expression.terms),
        "values": len(forest.values),
        "uses": uses,
        "parse": t_parse,
        "forest": t_forest,
        "emit": t_emit,
        "classify": best_classify,
        "frontend": frontend,
        "xdsl_parse": t_xdsl,
        "ratio": frontend / t_xdsl,
        "ir_bytes": len(printed.encode()),
        "printed": printed,
    }


def end_to_end(text: str, printed: str, runs: int) -> tuple[float, float]:
    """Wall time of xdsl-opt on the SeQuant text and on the IR, both with
    classify-axes (process start-up included)."""
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "eq.txt")
        ir = os.path.join(tmp, "eq.mlir")
        Path(source).write_text(text, encoding="utf-8")
        Path(ir).write_text(printed, encoding="utf-8")
        frontend = [
            XDSL_OPT,
            "-f",
            'sequant{batch="Κ" order=file}',
            source,
            "-p",
            "classify-axes",
        ]
        mlir = [XDSL_OPT, ir, "-p", "classify-axes"]
        times = []
        for command in (frontend, mlir):
            elapsed, _ = best_of(
                runs,
                lambda command=command: subprocess.run(
                    command, check=True, capture_output=True
                ),
            )
            times.append(elapsed)
    return times[0], times[1]


def main() -> None:
    text = DOUBLES.read_text(encoding="utf-8")
    big = ten_times(text)
    rows = [measure("doubles", text, 5), measure("doubles x10", big, 2)]
    print("In-process, best of 5 (1x) / 2 (10x) runs, seconds; batch=Κ")
    header = (
        f"{'input':<12} {'terms':>5} {'values':>6} {'uses':>6} {'parse':>7} "
        f"{'forest':>7} {'emit':>7} {'classify':>8} {'frontend':>8} "
        f"{'xdsl-parse':>10} {'ratio':>6}"
    )
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r['input']:<12} {r['terms']:>5} {r['values']:>6} {r['uses']:>6} "
            f"{r['parse']:>7.4f} {r['forest']:>7.4f} {r['emit']:>7.4f} "
            f"{r['classify']:>8.4f} {r['frontend']:>8.4f} {r['xdsl_parse']:>10.4f} "
            f"{r['ratio']:>6.2f}"
        )
    print()
    print("frontend = parse + forest + emit + classify; ratio = frontend / xdsl-parse")
    print(
        "(xdsl-parse: xDSL's Parser on the printed module, "
        f"{rows[0]['ir_bytes']} / {rows[1]['ir_bytes']} bytes of IR)"
    )
    print()
    print("End to end, xdsl-opt subprocess with -p classify-axes, best of 2, seconds")
    for r, source in zip(rows, (text, big), strict=True):
        sequant, mlir = end_to_end(source, str(r["printed"]), 2)
        print(
            f"{r['input']:<12} sequant text {sequant:.3f}   its IR {mlir:.3f}   "
            f"ratio {sequant / mlir:.2f}"
        )


if __name__ == "__main__":
    main()
