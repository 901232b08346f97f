"""How long ``make test`` takes on this machine, against the 4-minute target
of the fast inner loop (docs/development.md).

Runs ``make test`` in the checkout ``--runs`` times in a row and prints, per
run, the load average at its start, the wall time, the CPU seconds of every
stage (user plus system of all its processes, as ``/usr/bin/time``
counts them) and the wall time as a share of 4 minutes::

    .venv/bin/python benchmarks/bench_make_test.py [--runs 3] [--checkout .]

A failing ``make test`` stops the script with its status (the figures of a
failing run mean nothing).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

TARGET_SECONDS = 240.0
"""The target: ``make test`` under 4 minutes on this 2-core machine."""


def children_cpu_seconds() -> float:
    """User plus system CPU seconds of every finished child process."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_make_test(checkout: Path) -> tuple[float, float, float]:
    """One ``make test`` in ``checkout``: load average at the start, wall
    seconds, CPU seconds."""
    load = os.getloadavg()[0]
    cpu_before = children_cpu_seconds()
    started = time.perf_counter()
    run = subprocess.run(
        ["make", "--no-print-directory", "test"],
        cwd=checkout,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - started
    if run.returncode != 0:
        sys.stderr.write(run.stderr[-2000:])
        raise SystemExit(f"make test failed with status {run.returncode}")
    return load, wall, children_cpu_seconds() - cpu_before


def main(argv: list[str] | None = None) -> int:
    """Time ``make test`` and print the table."""
    parser = argparse.ArgumentParser(
        description="Time make test against the 4-minute target."
    )
    parser.add_argument("--runs", type=int, default=1, help="runs in a row")
    parser.add_argument(
        "--checkout",
        type=Path,
        default=Path(__file__).resolve().parent.parent,
        help="the checkout to test (default: this one)",
    )
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs: expected a positive integer, got {args.runs}")
    if not (args.checkout / "Makefile").is_file():
        parser.error(f"--checkout {str(args.checkout)!r}: no Makefile there")
    python = Path(args.checkout, ".venv", "bin", "python").resolve()
    print(
        f"# make test in {args.checkout}: {os.cpu_count()} CPUs, "
        f".venv's interpreter {python}"
    )
    print(f"{'run':>3}  {'load':>5}  {'wall':>7}  {'CPU s':>6}  {'of 4 min':>8}")
    walls: list[float] = []
    for number in range(1, args.runs + 1):
        load, wall, cpu = timed_make_test(args.checkout)
        walls.append(wall)
        minutes, seconds = divmod(round(wall), 60)
        print(
            f"{number:>3}  {load:>5.2f}  {minutes:>4}:{seconds:02d}  {cpu:>6.0f}"
            f"  {wall / TARGET_SECONDS:>8.2f}",
            flush=True,
        )
    under = sum(wall < TARGET_SECONDS for wall in walls)
    print(f"under 4 minutes: {under} of {len(walls)} runs; slowest {max(walls):.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
