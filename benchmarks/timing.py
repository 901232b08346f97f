"""Timing helpers shared by the benchmark scripts (imported, not run)."""

from __future__ import annotations

import argparse
import gc
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from axisflow.gc_pause import gc_paused

T = TypeVar("T")


def best_of(
    runs: int, action: Callable[[], T], clock: Callable[[], float] = time.perf_counter
) -> tuple[float, T]:
    """Minimum time over ``runs`` calls, and the last result (``clock``:
    wall time by default, ``time.process_time`` for CPU time)."""
    best = float("inf")
    result: T | None = None
    for _ in range(runs):
        start = clock()
        result = action()
        best = min(best, clock() - start)
    assert result is not None
    return best, result


@contextmanager
def paused_gc() -> Iterator[None]:
    """Run the block with the cyclic garbage collector paused
    (``axisflow.gc_pause.gc_paused``), after a full collection: a collection
    inside it walks every live object, so its cost follows the size of the
    whole heap (the script's other data included), not the work measured."""
    gc.collect()
    with gc_paused():
        yield


def _print_note(message: Warning | str, *_: object, **__: object) -> None:
    print(f"note: {message}")


def print_notes() -> None:
    """Print the library's warnings (the planner's notes, such as the
    never-worse guard dropping loops) as ``note: ...`` lines in the
    benchmark's output, without the source line a warning shows."""
    warnings.showwarning = _print_note


def counts_option(text: str, least: int = 1) -> list[int]:
    """A comma-separated list of counts, each at least ``least`` (an
    option's value: ``--sites 10,100,1000``), in the order given."""
    try:
        counts = [int(item) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected counts separated by commas, such as 10,100"
        ) from None
    if not all(count >= least for count in counts):
        raise argparse.ArgumentTypeError(
            f"{text!r}: every count must be at least {least}"
        )
    return counts


def positive_option(text: str) -> int:
    """One positive count (an option's value: ``--repeat 3``)."""
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected one positive count")
    return count
