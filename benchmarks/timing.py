"""Timing helpers shared by the benchmark scripts (imported, not run)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

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
