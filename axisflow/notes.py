"""Notes: what a user should know that is no error.

A note is a Python warning of class ``Note``: from Python it shows as a
warning (``warnings.simplefilter("ignore", Note)`` silences every note, or
one subclass); the commands (``axisflow-opt``'s passes and frontend,
``axisflow plan``) collect the notes of what they run and print each as one
line on standard error, ``note: ...``. Two kinds:

* ``UnusedOptionNote``: an option names an index space the input lacks
  (``extents=`` or ``block=`` written for several equations of one method):
  the entry is ignored, and said so;
* ``LoopsDroppedNote``: the never-worse guard dropped batch loops that would
  have raised the peak above not batching (``axisflow.scheduling.guard``).

Pure Python, no xDSL.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from contextlib import contextmanager


class Note(UserWarning):
    """Something said, not refused (module docstring)."""


class UnusedOptionNote(Note):
    """An option entry naming an index space the input lacks, ignored."""


class LoopsDroppedNote(Note):
    """Batch loops the never-worse guard dropped."""


def say(note: Note) -> None:
    """Emit ``note`` (a warning, attributed to the caller's caller)."""
    warnings.warn(note, stacklevel=3)


@contextmanager
def collected_notes() -> Iterator[list[Note]]:
    """Collect the notes emitted inside the block, in order, each once
    (the list is filled when the block ends); other warnings pass through."""
    found: list[Note] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield found
    seen: set[str] = set()
    for record in caught:
        message = record.message
        if isinstance(message, Note):
            if str(message) not in seen:
                seen.add(str(message))
                found.append(message)
        else:
            warnings.warn_explicit(
                message, record.category, record.filename, record.lineno
            )
