"""Benchmark of the shape engine: Stage-1 and closing time as programs grow.

Programs of 1k, 10k and 100k operations:

* ``chain``: ``h = w_i * h`` and ``h = h + b_i`` alternating, weights and
  biases with concrete specs; every operation depends on the previous one.
* ``wide``: one input ``x`` and ``n`` independent layers ``y_i = w_i * x``.
* ``open-chain``: ``h = h + b_i`` where the data leaves ``b_i`` have no spec:
  their shapes are lower bounds solved at closing (the closing does the work).

For each program and size it prints the Stage-1 time (building the program,
solving each constraint as it arrives), the closing time, and the growth of
each from the previous size (the goal is at most 12x per 10x operations),
the share of the time the garbage collector took, and the growth of the time
outside the collector (the engine's own work). Times are process CPU
time. Each of ``--rounds`` rounds runs every size once, smallest first, so
that the sizes compared are measured next to each other in time (a shared
machine's speed drifts more between two runs of a whole program than within a
round); the table gives the median time over the rounds and, as growth, the
median over the rounds of each round's own ratio (a best-of-N minimum favours
the short runs, which more often fall into a quiet moment). Run:

    .venv/bin/python benchmarks/bench_shapes_engine.py [--sizes 1000,10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import time
from collections.abc import Callable

from axisflow.shapes import Session

Builder = Callable[[int], Session]


def chain(n: int) -> Session:
    """``n`` operations, each consuming the previous result."""
    s = Session()
    h = s.leaf("x", "8|->16")
    for i in range(n):
        if i % 2 == 0:
            h = s.compose(f"h{i}", s.leaf(f"w{i}", "16->16"), h)
        else:
            h = s.pointwise(f"h{i}", h, s.leaf(f"b{i}", "16"))
    return s


def wide(n: int) -> Session:
    """``n`` independent layers reading one input."""
    s = Session()
    x = s.leaf("x", "8|->16")
    for i in range(n):
        s.compose(f"y{i}", s.leaf(f"w{i}", "16->4"), x)
    return s


def open_chain(n: int) -> Session:
    """``n`` pointwise operations with unspecified data leaves."""
    s = Session()
    h = s.leaf("x", "8|->16")
    for i in range(n):
        h = s.pointwise(f"h{i}", h, s.leaf(f"b{i}"))
    return s


PROGRAMS: dict[str, Builder] = {"chain": chain, "wide": wide, "open-chain": open_chain}


class GcClock:
    """CPU time spent in the garbage collector (via ``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.process_time()
        else:
            self.seconds += time.process_time() - self._started


def run_once(build: Builder, n: int, clock: GcClock) -> tuple[float, float, float]:
    """Stage-1, closing and garbage-collection CPU times of one run."""
    gc.collect()
    clock.seconds = 0.0
    start = time.process_time()
    session = build(n)
    built = time.process_time()
    session.close()
    closed = time.process_time()
    del session
    return (built - start, closed - built, clock.seconds)


Run = tuple[float, float, float]
"""Stage-1, closing and garbage-collection CPU seconds of one run."""


def measure(build: Builder, sizes: list[int], rounds: int) -> list[dict[int, Run]]:
    """One run of every size per round, smallest first.

    The sizes whose growth is compared are measured next to each other in
    time, so that both see the same machine: a shared machine's speed drifts
    more between two runs of a whole program than within a round.
    """
    measured: list[dict[int, Run]] = []
    clock = GcClock()
    gc.callbacks.append(clock)
    try:
        for _ in range(rounds):
            measured.append({n: run_once(build, n, clock) for n in sizes})
    finally:
        gc.callbacks.remove(clock)
    return measured


def median_growth(
    measured: list[dict[int, Run]], n: int, previous: int, part: Callable[[Run], float]
) -> str:
    """The median over rounds of the round's growth of ``part`` from ``previous`` to ``n``."""
    ratios = [part(run[n]) / part(run[previous]) for run in measured]
    return f"{statistics.median(ratios):.1f}x"


def main() -> None:
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description="Shape engine benchmark.")
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--programs", default=",".join(PROGRAMS))
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"# shape engine benchmark: Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average {load:.2f} at start; CPU seconds, "
        f"median of {args.rounds} rounds; growth: median over the rounds of "
        f"each round's ratio"
    )
    header = (
        f"{'program':<11} {'ops':>7} {'stage-1 s':>10} {'growth':>7} "
        f"{'closing s':>10} {'growth':>7} {'total s':>8} {'growth':>7} {'gc %':>5} "
        f"{'growth w/o gc':>13}"
    )
    print(header)
    print("-" * len(header))

    for name in args.programs.split(","):
        measured = measure(PROGRAMS[name], sizes, args.rounds)
        for index, n in enumerate(sizes):
            previous = sizes[index - 1] if index else None
            print(f"{name:<11} {n:>7} {table_cells(measured, n, previous)}", flush=True)


def stage1(run: Run) -> float:
    """Stage-1 seconds."""
    return run[0]


def closing(run: Run) -> float:
    """Closing seconds."""
    return run[1]


def total(run: Run) -> float:
    """Stage 1 and closing."""
    return run[0] + run[1]


def without_gc(run: Run) -> float:
    """Stage 1 and closing outside the collector."""
    return run[0] + run[1] - run[2]


def gc_share(run: Run) -> float:
    """The collector's share of the run."""
    return run[2] / (run[0] + run[1])


def table_cells(measured: list[dict[int, Run]], n: int, previous: int | None) -> str:
    """The cells of one row: median times, growths, the collector's share."""

    def median(part: Callable[[Run], float]) -> float:
        return statistics.median(part(run[n]) for run in measured)

    def grown(part: Callable[[Run], float]) -> str:
        return "-" if previous is None else median_growth(measured, n, previous, part)

    return (
        f"{median(stage1):>10.3f} {grown(stage1):>7} "
        f"{median(closing):>10.3f} {grown(closing):>7} "
        f"{median(total):>8.3f} {grown(total):>7} "
        f"{100 * median(gc_share):>5.0f} {grown(without_gc):>13}"
    )


if __name__ == "__main__":
    main()
