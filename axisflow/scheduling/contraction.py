"""Dense contractions for the reference evaluator: compiled once, guarded.

The evaluator builds the same value many times (once per block of every
loop around it), so everything that does not depend on the numbers is done
once per value: the einsum subscripts, and per operand shapes the
contraction path (``numpy.einsum_path``), reused on every later call with
those shapes. Small contractions skip the path machinery entirely (a direct
``numpy.einsum``), which is where per-slice Python overhead went.

``MemoryGuard`` refuses, before anything is allocated, an evaluation whose
arrays would exceed ``DEFAULT_MEMORY_LIMIT`` (or the limit given): dense
evaluation of a real equation at realistic extents needs terabytes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

import numpy as np
from numpy.typing import NDArray

from axisflow.numerals import significant

Array = NDArray[np.float64]

DEFAULT_MEMORY_LIMIT = 2 * 1024**3
"""Largest number of bytes one evaluation may hold at once (2 GiB)."""

SMALL_CONTRACTION = 4096
"""Below this many node elements, einsum runs without a path (its search
costs more than the contraction)."""

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


class EvaluationMemoryError(MemoryError):
    """An evaluation that would hold more than the memory limit."""


class Contraction:
    """One value's einsum: operand subscripts from the factor maps, output
    subscripts from the value's modes, node modes summed."""

    def __init__(
        self,
        name: str,
        node_modes: Sequence[object],
        factor_modes: Sequence[Sequence[object]],
        result_modes: Sequence[object],
    ) -> None:
        if len(node_modes) > len(_LETTERS):
            raise ValueError(f"@{name} has more than {len(_LETTERS)} modes at its node")
        letter = {mode: _LETTERS[k] for k, mode in enumerate(node_modes)}
        inputs = ",".join("".join(letter[m] for m in modes) for modes in factor_modes)
        output = "".join(letter[m] for m in result_modes)
        self.name = name
        self.subscripts = f"{inputs}->{output}"
        self.paths: dict[tuple[tuple[int, ...], ...], list[object] | None] = {}
        """Per operand shapes: the einsum path, ``None`` for a direct einsum."""

    def __call__(self, operands: Sequence[Array]) -> Array:
        shapes = tuple(op.shape for op in operands)
        if shapes not in self.paths:
            letters = {
                char: size
                for spec, shape in zip(
                    self.subscripts.split("->")[0].split(","), shapes, strict=True
                )
                for char, size in zip(spec, shape, strict=True)
            }
            small = math.prod(letters.values()) < SMALL_CONTRACTION
            self.paths[shapes] = (
                None
                if len(operands) < 2 or small
                else list(
                    np.einsum_path(self.subscripts, *operands, optimize="greedy")[0]
                )
            )
        path = self.paths[shapes]
        if path is None:
            result = np.einsum(self.subscripts, *operands)
        else:
            result = np.einsum(self.subscripts, *operands, optimize=path)
        return np.asarray(result, dtype=np.float64)


class MemoryGuard:
    """Refuses evaluations above ``limit`` bytes, before allocating."""

    def __init__(self, limit: int | None = None) -> None:
        self.limit = DEFAULT_MEMORY_LIMIT if limit is None else limit

    def check(self, needed: int, what: str) -> None:
        """Raise ``EvaluationMemoryError`` if ``needed`` exceeds the limit."""
        if needed > self.limit:
            raise EvaluationMemoryError(
                f"{what} needs {_gib(needed)} at once, above the evaluator's "
                f"memory limit of {_gib(self.limit)}; evaluate at smaller "
                "extents or pass a larger memory_limit"
            )


def _gib(size: int) -> str:
    """``size`` in GiB (three significant digits, any size), or in bytes
    below 1 MiB."""
    if size < 1024**2:
        return f"{size} B"
    return f"{significant(Fraction(size, 1024**3), 3)} GiB"
