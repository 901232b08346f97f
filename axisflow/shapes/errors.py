"""Errors of the shape engine.

A :class:`ShapeError` is the user's mistake made visible: its message names
the operation and tensors of the origins involved, the two sides that
disagree and the kind of axes. Tools read :attr:`ShapeError.origins` (most
relevant first) to place a diagnostic; an origin's ``site`` is whatever handle
the tool stored when it created the operation.
"""

from __future__ import annotations

from axisflow.shapes.terms import Origin


class ShapeError(Exception):
    """A shape contradiction, a malformed spec, or a missing dimension."""

    message: str
    """The message without a traceback: what ``str(error)`` gives."""
    origins: tuple[Origin, ...]
    """The origins involved, most relevant first (the first places a
    diagnostic)."""

    def __init__(self, message: str, origins: tuple[Origin, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.origins = origins

    def __str__(self) -> str:
        return self.message

    @property
    def site(self) -> object:
        """The ``site`` of the first origin that has one (for diagnostics)."""
        for origin in self.origins:
            if origin.site is not None:
                return origin.site
        return None


class SpecError(ShapeError):
    """A malformed shape or einsum spec; names the spec text and position."""

    spec: str
    position: int

    def __init__(self, spec: str, position: int, reason: str, what: str) -> None:
        super().__init__(f"malformed {what} {spec!r} at position {position}: {reason}")
        self.spec = spec
        self.position = position
