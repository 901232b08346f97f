"""Timing helpers shared by the benchmark scripts (imported, not run)."""

from __future__ import annotations

import gc
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from axisflow.gc_pause import gc_paused

T = TypeVar("T")


def best_of(runs: int, action: Callable[[], T]) -> tuple[float, T]:
    """Minimum wall time over ``runs`` calls, and the last result."""
    best = float("inf")
    result: T | None = None
    for _ in range(runs):
        start = time.perf_counter()
        result = action()
        best = min(best, time.perf_counter() - start)
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
