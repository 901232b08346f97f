"""The report file of ``schedule-batches{report-file=PATH}``: written whole.

``write_report`` replaces the file the first time a process writes it and
appends afterwards (the next chunk of ``--split-input-file``), each write
atomic (a temporary file in the same directory, renamed over ``PATH``).

Inside ``all_or_nothing`` (``axisflow-opt`` runs every command in one) the
writes are held back: the reports of the whole run are written when it
ends, each path once, and only if it succeeded, as ``-o`` is; after a
failure no report file changes. Outside one (stock ``xdsl-opt``, the Python
API) each write happens at once.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

_WRITTEN: set[Path] = set()
"""Report files this process has written (later writes append)."""

_HELD: list[dict[Path, str]] = []
"""The reports held back by each active ``all_or_nothing``, innermost last:
per resolved path, the whole text it will hold."""


def write_report(path: Path, text: str) -> None:
    """Replace ``path`` by ``text`` the first time, append afterwards
    (module docstring); held back inside ``all_or_nothing``. Raises
    ``OSError`` for a file that cannot be written (at once, or when the
    run ends)."""
    key = path.resolve()
    if _HELD:
        held = _HELD[-1]
        held[key] = held.get(key, "") + text
        return
    previous = ""
    if key in _WRITTEN and path.exists():
        previous = path.read_text(encoding="utf-8")
    _replace(key, previous + text)
    _WRITTEN.add(key)


@contextmanager
def all_or_nothing() -> Iterator[None]:
    """Hold report writes back until the block ends; write them if it ends
    normally, drop them if it raises."""
    held: dict[Path, str] = {}
    _HELD.append(held)
    try:
        yield
    finally:
        _HELD.pop()
    for key, text in held.items():
        try:
            _replace(key, text)
        except OSError as error:
            raise OSError(
                f"cannot write report-file {str(key)!r}: {error.strerror or error}"
            ) from None


def _replace(key: Path, text: str) -> None:
    """``key`` holds ``text``: written to a temporary file next to it, renamed."""
    handle, temporary = tempfile.mkstemp(dir=key.parent, prefix=f".{key.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(temporary, key)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
