"""The Dask executor on the bundled CSV-CCSD doubles, one worker and two.

On ``examples/sequant/csv_ccsd_doubles_residual_df.txt`` at extents where
one block's work dominates (``EXTENTS``), batched over ``i`` in blocks of
``BLOCK`` (four blocks per root pass, two per worker of two, each adding
into its worker's lane; blocks of 1 make the CSV doubles' inner loops
over pairs of ``i`` run thousands of small contractions, whose Python
steps then dominate),
the residual is run with
``axisflow.execution.execute_expression`` on the embedded cluster
(``local_cluster``: worker processes on loopback, one thread and one BLAS
thread each) of one worker, then of two. Measured in the same run:

* NumPy's dense ``matmul`` rate on one worker (2048x2048 float64, one BLAS
  thread, best of 3): what one worker's core can do;
* per run: wall time, the share of planning and building the task graph,
  GFLOP/s counting the schedule's own multiply-adds (2 FLOP each) and its
  share of the ``matmul`` rate, predicted and measured peak per worker
  (the workers' memory sampled by Dask's system monitor every 20 ms,
  above what each held before the run), tasks and bytes moved;
* two workers against one; both residuals agree.

Each cluster runs the residual ``--repeat`` times, one cluster at a time
(an idle cluster's processes would share the cores with the other's
workers): each run is a row, the first on its cluster (which also loads
the executor's modules in the workers) and the best of the repeats are
the summary, a long computation's steady state being the second.

The targets: one worker at least 50% of ``matmul``; two workers
at least 1.6x one; measured peak within 10% of predicted; planning and
graph under 10% of the run. Each line says met or not met, for the first
runs and for the best.

Run: .venv/bin/python benchmarks/bench_executor.py   (or make bench)
     [--extents i=8,a=128,μ̃=128,Κ=256]   (other extents: these, the
     default until 2026-12-06, run in 8 s on one worker)
     [--repeat 3]   (runs on each cluster)
     [--block 2]   (the block along i: docs/benchmarks-executor.md has
     runs with blocks of 4, the default until 2026-12-06, 18:00 UTC)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

import numpy as np

from axisflow.execution import (
    Execution,
    execute_expression,
    input_keys,
    input_signatures,
)
from axisflow.execution.dask_executor import local_cluster
from axisflow.scheduling.evaluate import relative_difference
from axisflow.scheduling.memory import format_bytes
from axisflow.sequant import parse

EQUATION = "examples/sequant/csv_ccsd_doubles_residual_df.txt"
EXTENTS = {"i": 8, "a": 256, "μ̃": 256, "Κ": 512}
"""Since 2026-12-06: the largest products' inner dimension is 256 (at
``a=128`` it was 128, where this machine's AVX-512 BLAS reaches 50 of its
70 GFLOP/s: ``docs/benchmarks-executor.md``); a run takes about 75 s on
one worker and holds 2.4 GiB there in blocks of 2."""
BATCH = "i"
BLOCK = 2
"""Since 2026-12-06, 18:00 UTC (4 before): with a worker's blocks adding
into one lane, blocks of 2 hold less than blocks of 4 and a second block
on a worker takes the memory the first freed (``docs/benchmarks-executor.md``)."""
MATMUL_SIZE = 2048


def inputs(text: str) -> dict[str, np.ndarray]:
    """Standard-normal inputs with the symmetry of their tied protos."""
    rng = np.random.default_rng(0)
    signatures = input_signatures(parse(text))
    keys = input_keys(signatures)
    arrays: dict[str, np.ndarray] = {}
    for signature in signatures:
        # a composite kind (a<1>) without an extent of its own takes its space's
        shape = tuple(EXTENTS[kind.split("<")[0]] for kind in signature.axis_kinds)
        array = rng.standard_normal(shape)
        for first, second in signature.ties:
            array = (array + np.swapaxes(array, first, second)) / 2
        arrays[keys[signature.exact_key]] = array
    return arrays


def matmul_gflops() -> float:
    """NumPy ``matmul`` GFLOP/s in this process (best of 3)."""
    rng = np.random.default_rng(1)
    left = rng.standard_normal((MATMUL_SIZE, MATMUL_SIZE))
    right = rng.standard_normal((MATMUL_SIZE, MATMUL_SIZE))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        np.matmul(left, right)
        best = min(best, time.perf_counter() - start)
    return 2 * MATMUL_SIZE**3 / best / 1e9


def repeated(
    text: str, data: dict[str, np.ndarray], repeat: int, block: int
) -> tuple[dict[int, list[Execution]], float]:
    """``repeat`` runs on a cluster of one worker, then on one of two (one
    cluster at a time: an idle one's processes would share the cores), and
    one worker's ``matmul`` rate (the best measured on both)."""
    runs: dict[int, list[Execution]] = {1: [], 2: []}
    rates: list[float] = []
    for count, executions in runs.items():
        with local_cluster(count) as client:
            measured: dict[str, Any] = client.run(matmul_gflops)
            rates.append(min(measured.values()))
            for _ in range(repeat):
                executions.append(
                    execute_expression(
                        text, data, batch=BATCH, block=block, scheduler=client
                    )
                )
    return runs, max(rates)


def verdict(met: bool) -> str:
    return "met" if met else "NOT met"


def main() -> None:
    parser = argparse.ArgumentParser(
        description="The Dask executor on the bundled CSV-CCSD doubles."
    )
    parser.add_argument(
        "--extents",
        default=",".join(f"{k}={v}" for k, v in EXTENTS.items()),
        help="the extents, as axisflow plan takes them (default %(default)s)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="runs on each cluster (default %(default)s)",
    )
    parser.add_argument(
        "--block",
        type=int,
        default=BLOCK,
        help="the block along i (default %(default)s)",
    )
    arguments = parser.parse_args()
    chosen, repeat = arguments.extents, arguments.repeat
    if repeat < 1:
        parser.error(f"--repeat {repeat}: at least one run")
    if arguments.block < 1:
        parser.error(f"--block {arguments.block}: at least 1")
    block = arguments.block
    try:
        EXTENTS.clear()
        EXTENTS.update(
            {
                key: int(value)
                for key, value in (p.split("=") for p in chosen.split(","))
            }
        )
    except ValueError:
        parser.error(f"--extents {chosen!r}: expected key=count,...")
    if set(EXTENTS) != {"i", "a", "μ̃", "Κ"}:
        parser.error(f"--extents {chosen!r}: give i, a, μ̃ and Κ")
    if min(EXTENTS.values()) < 1:
        parser.error(f"--extents {chosen!r}: every extent must be positive")
    load_before = os.getloadavg()[0]
    with open(EQUATION, encoding="utf-8") as file:
        text = file.read()
    data = inputs(text)
    extents = ", ".join(f"{k}={v}" for k, v in EXTENTS.items())
    print(f"{EQUATION}: extents {extents}; batched over {BATCH}, blocks of {block}")
    print(f"inputs {format_bytes(sum(a.nbytes for a in data.values()))}")
    runs, rate = repeated(text, data, repeat, block)
    first = runs[1][0]
    assert first.residual is not None
    agree = max(
        relative_difference(execution.residual, first.residual)
        for count in runs
        for execution in runs[count]
        if execution.residual is not None
    )
    print(f"multiply-adds {first.report.multiply_adds:,} (the schedule's own)")
    print(f"NumPy matmul, one worker (one BLAS thread): {rate:.2f} GFLOP/s")
    print()
    header = (
        f"{'workers':>7}  {'run':>4}  {'wall s':>7}  {'plan+graph':>10}  "
        f"{'GFLOP/s':>7}  {'of matmul':>9}  {'peak predicted':>14}  "
        f"{'measured':>10}  {'ratio':>5}  {'tasks':>5}  {'moved':>10}"
    )
    print(header)
    for count in runs:
        for number in range(repeat):
            report = runs[count][number].report
            measured = report.measured_peak or 0
            print(
                f"{report.workers:>7}  {number + 1:>4}  {report.wall_seconds:>7.2f}  "
                f"{100 * report.planning_seconds / report.wall_seconds:>9.1f}%  "
                f"{report.gflops:>7.2f}  {100 * report.gflops / rate:>8.1f}%  "
                f"{format_bytes(report.predicted_peak):>14}  "
                f"{format_bytes(measured):>10}  "
                f"{measured / report.predicted_peak:>5.2f}  {report.tasks:>5}  "
                f"{format_bytes(report.bytes_moved):>10}"
            )
    print()
    print(f"residuals of every run agree to {agree:.1e}")
    print(
        f"load average (1 min) of the machine: {load_before:.2f} before, "
        f"{os.getloadavg()[0]:.2f} after ({os.cpu_count()} cores)"
    )
    best = {
        count: min(executions, key=lambda e: e.report.wall_seconds)
        for count, executions in runs.items()
    }
    summaries = [("first runs", {count: runs[count][0] for count in runs})]
    if repeat > 1:
        summaries.append((f"best of {repeat}", best))
    for title, chosen in summaries:
        one, two = chosen[1].report, chosen[2].report
        speedup = one.wall_seconds / two.wall_seconds
        share = one.gflops / rate
        print(f"{title}:")
        print(
            f"  one worker / matmul:       {share:.2f}  "
            f"(target >= 0.50: {verdict(share >= 0.5)})"
        )
        print(
            f"  two workers / one worker:  {speedup:.2f}  "
            f"(target >= 1.60: {verdict(speedup >= 1.6)})"
        )
    for count, executions in runs.items():
        ratios = [
            (e.report.measured_peak or 0) / e.report.predicted_peak for e in executions
        ]
        planning = max(
            e.report.planning_seconds / e.report.wall_seconds for e in executions
        )
        within = all(0.9 <= ratio <= 1.1 for ratio in ratios)
        print(
            f"{count} worker{'s' if count > 1 else ' '}: measured/predicted peak "
            f"{min(ratios):.2f} to {max(ratios):.2f} (target 0.90-1.10: "
            f"{verdict(within)}); planning+graph at most {100 * planning:.1f}% "
            f"(target < 10%: {verdict(planning < 0.1)})"
        )


if __name__ == "__main__":
    sys.exit(main())
