"""Pausing CPython's cyclic garbage collector around allocation-heavy batch work.

The analyses and the shape engine's closing allocate many small acyclic
objects, freed by reference counting. Left on, the collector's full
collections scan every live object each time the heap has grown by a quarter,
so their cost follows the size of the whole heap rather than the work done.
Pure Python (the shape engine imports it and must not import xDSL).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


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
