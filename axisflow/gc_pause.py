"""Pausing CPython's cyclic garbage collector around allocation-heavy batch work.

The analyses and the shape engine's closing allocate many small acyclic
objects, freed by reference counting. Left on, the collector's full
collections scan every live object each time the heap has grown by a quarter,
so their cost follows the size of the whole heap rather than the work done.
Pure Python (the shape engine imports it and must not import xDSL).
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector; the previous state is restored, also on error."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def collector_paused(function: Callable[P, R]) -> Callable[P, R]:
    """Run ``function`` with the cyclic collector paused (cheaper than :func:`gc_paused`).

    For the shape engine's operations: they allocate only acyclic objects,
    which reference counting frees, so a collection started inside one would
    only scan the program's live objects for nothing. Allocations still count
    towards the next collection, which runs once the caller allocates with the
    collector on: nothing is skipped, only not repeated mid-operation. Nested
    calls pass straight through.
    """

    @functools.wraps(function)
    def paused(*args: P.args, **kwargs: P.kwargs) -> R:
        if not gc.isenabled():
            return function(*args, **kwargs)
        gc.disable()
        try:
            return function(*args, **kwargs)
        finally:
            gc.enable()

    return paused


COMMAND_THRESHOLDS = (50_000, 20, 100)
"""Collector thresholds of an ``axisflow-opt`` run. xDSL's parse, verify and
print allocate millions of objects that live to the end of the run; with the
default ``(700, 10, 10)`` the collector re-scans them again and again (10-15%
of a run). Measured in ``docs/benchmarks-phases.md``."""


@contextmanager
def collector_tuned(
    thresholds: tuple[int, int, int] = COMMAND_THRESHOLDS,
) -> Iterator[None]:
    """Run with raised collector thresholds; the previous ones are restored.

    For a command's whole run only (``axisflow-opt``), never on import: a
    host process that embeds the plugin keeps its own settings."""
    saved = gc.get_threshold()
    gc.set_threshold(*thresholds)
    try:
        yield
    finally:
        gc.set_threshold(*saved)
