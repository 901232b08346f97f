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
time, the fastest of ``--rounds`` rounds; each round runs every size once
(the smallest twice), so that the sizes compared are measured close together
in time: a shared machine's speed drifts more between two runs of a whole
program than within a round. Run:

    .venv/bin/python benchmarks/bench_shapes_engine.py [--sizes 1000,10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
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


def measure(
    build: Builder, sizes: list[int], rounds: int
) -> dict[int, tuple[float, float, float]]:
    """The fastest run of each size over ``rounds`` rounds.

    Each round runs every size once, smallest first (the smallest twice:
    its fractions of a second vary most), so that the sizes whose growth is
    compared are measured minutes apart at most, on the same machine; the
    speed of a shared machine drifts more than that between runs of a whole
    program.
    """
    best = {n: (float("inf"), float("inf"), float("inf")) for n in sizes}
    clock = GcClock()
    gc.callbacks.append(clock)
    try:
        for _ in range(rounds):
            for n in sizes:
                for _ in range(2 if n == sizes[0] else 1):
                    run = run_once(build, n, clock)
                    if run[0] + run[1] < best[n][0] + best[n][1]:
                        best[n] = run
    finally:
        gc.callbacks.remove(clock)
    return best


def growth(current: float, previous: float | None) -> str:
    """``"9.8x"`` or ``"-"`` for the first size."""
    return "-" if previous is None or previous <= 0 else f"{current / previous:.1f}x"


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
        f"{os.cpu_count()} CPUs, load average {load:.2f} at start; "
        f"CPU seconds, best of {args.rounds} rounds over the sizes (of "
        f"{2 * args.rounds} runs for the smallest)"
    )
    header = (
        f"{'program':<11} {'ops':>7} {'stage-1 s':>10} {'growth':>7} "
        f"{'closing s':>10} {'growth':>7} {'total s':>8} {'growth':>7} {'gc %':>5} "
        f"{'growth w/o gc':>13}"
    )
    print(header)
    print("-" * len(header))
    for name in args.programs.split(","):
        build = PROGRAMS[name]
        measured = measure(build, sizes, args.rounds)
        previous: tuple[float, float] | None = None
        previous_without_gc: float | None = None
        for n in sizes:
            stage1, closing, collecting = measured[n]
            total = stage1 + closing
            print(
                f"{name:<11} {n:>7} {stage1:>10.3f} "
                f"{growth(stage1, previous[0] if previous else None):>7} "
                f"{closing:>10.3f} {growth(closing, previous[1] if previous else None):>7} "
                f"{total:>8.3f} "
                f"{growth(total, sum(previous) if previous else None):>7} "
                f"{100 * collecting / total:>5.0f} "
                f"{growth(total - collecting, previous_without_gc):>13}",
                flush=True,
            )
            previous = (stage1, closing)
            previous_without_gc = total - collecting


if __name__ == "__main__":
    main()
