"""What the generated ``main`` computes and prints, mirrored in NumPy.

``main`` fills input number ``k`` (in argument order) element by element, at
row-major flat position ``p``, with::

    h = (31 p^2 + 17 p + 101 k + 7) mod 129
    x = (h - 64) / 64

(integer arithmetic, then one exact scaling: the NumPy side reproduces every
bit). After calling the schedule it prints, per tree output in order, the
element count and then each element as the 64-bit integer with the same bits
(``arith.bitcast``; ``printI64`` of MLIR's C runner library), one number per
line: decimal printing of doubles would lose digits. ``decode_printed`` turns
that text back into arrays.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

Array = NDArray[np.float64]

FILL_SQUARE = 31
FILL_LINEAR = 17
FILL_INPUT = 101
FILL_OFFSET = 7
FILL_MODULUS = 129
FILL_CENTER = 64
FILL_SCALE = 1 / 64
"""The constants of the fill formula (shared with the emitter)."""


def fill_input(number: int, shape: Sequence[int]) -> Array:
    """Input ``number``'s values as the generated ``main`` fills them."""
    size = int(np.prod(shape, dtype=np.int64)) if shape else 1
    p = np.arange(size, dtype=np.int64)
    h = (
        FILL_SQUARE * p * p + FILL_LINEAR * p + FILL_INPUT * number + FILL_OFFSET
    ) % FILL_MODULUS
    return ((h - FILL_CENTER).astype(np.float64) * FILL_SCALE).reshape(tuple(shape))


class PrintedOutputError(ValueError):
    """The printed text is not what ``main`` prints for these outputs."""


def decode_printed(text: str, shapes: Sequence[Sequence[int]]) -> list[Array]:
    """The output arrays from ``main``'s printed lines (see module doc)."""
    numbers = [line.strip() for line in text.splitlines() if line.strip()]
    arrays: list[Array] = []
    position = 0
    for number, shape in enumerate(shapes):
        size = int(np.prod(shape, dtype=np.int64)) if shape else 1
        if position >= len(numbers) or numbers[position] != str(size):
            found = numbers[position] if position < len(numbers) else "end of output"
            raise PrintedOutputError(
                f"output {number}: expected its element count {size}, found {found}"
            )
        chunk = numbers[position + 1 : position + 1 + size]
        if len(chunk) != size:
            raise PrintedOutputError(
                f"output {number}: {len(chunk)} of {size} elements printed"
            )
        bits = np.array([int(n) for n in chunk], dtype=np.int64)
        arrays.append(bits.view(np.float64).reshape(tuple(shape)))
        position += 1 + size
    if position != len(numbers):
        raise PrintedOutputError(
            f"{len(numbers) - position} numbers printed after the last output"
        )
    return arrays
