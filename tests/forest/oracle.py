"""An independent numerical oracle: each term of the parsed text evaluated by
one ``numpy.einsum``, on inputs made by a generator that knows nothing of the
forest.

The generator gives every element of a tensor a pseudo-random value from its
label, symmetry, layout and, per slot, the slot's coordinate and the sorted
coordinates of its protos (recursively). Proto lists are symmetric sets, so
the value does not depend on how the protos of one composite are paired: the
inputs are symmetric under the proto-pair symmetry, and any pairing the
forest picks reads the same numbers. The same generator fills the forest's
leaf values (their frames are the tensors' slots, renamed).
"""

from __future__ import annotations

import hashlib
import itertools
import struct
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from axisflow.roles.index import Index
from axisflow.sequant.syntax import Term

Array = NDArray[np.float64]
LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def modes_of(indices: Sequence[Index]) -> list[Index]:
    """The indices, then their protos at any depth, each once (the oracle's
    own expansion)."""
    found: dict[Index, None] = {}
    for index in indices:
        found.setdefault(index, None)
    stack = [p for index in reversed(indices) for p in reversed(index.protos)]
    order: list[Index] = []
    while stack:
        proto = stack.pop()
        order.append(proto)
        stack.extend(reversed(proto.protos))
    for proto in order:
        found.setdefault(proto, None)
    return list(found)


def _signature(index: Index, coord: Mapping[Index, int]) -> tuple[object, ...]:
    return (
        coord[index],
        tuple(sorted((_signature(p, coord) for p in index.protos), key=repr)),
    )


def _element(key: tuple[object, ...]) -> float:
    digest = hashlib.blake2b(repr(key).encode(), digest_size=8).digest()
    return struct.unpack("<Q", digest)[0] / 2**64 - 0.5


def tensor_array(
    label: str,
    symmetry: str | None,
    layout: tuple[int, int, int],
    slots: Sequence[Index],
    extent: Mapping[str, int],
) -> tuple[Array, list[Index]]:
    """The tensor's array over its modes (``modes_of(slots)`` order)."""
    modes = modes_of(slots)
    shape = tuple(extent[m.base_key] for m in modes)
    array = np.empty(shape, dtype=np.float64)
    for point in itertools.product(*(range(n) for n in shape)):
        coord = dict(zip(modes, point, strict=True))
        key = (label, symmetry, layout, tuple(_signature(s, coord) for s in slots))
        array[point] = _element(key)
    return array, modes


def term_by_einsum(
    term: Term, output: Sequence[Index], extent: Mapping[str, int]
) -> Array:
    """``coefficient * product of the term's tensors``, summed over every mode
    not in ``output``, with axes in ``output`` order: one ``numpy.einsum``."""
    letter: dict[Index, str] = {}

    def letters(modes: Sequence[Index]) -> str:
        for mode in modes:
            if mode not in letter:
                letter[mode] = LETTERS[len(letter)]
        return "".join(letter[m] for m in modes)

    operands: list[Array] = []
    subscripts: list[str] = []
    for tensor in term.tensors:
        array, modes = tensor_array(
            tensor.label, tensor.symmetry, tensor.layout, tensor.indices, extent
        )
        operands.append(array)
        subscripts.append(letters(modes))
    spec = ",".join(subscripts) + "->" + letters(output)
    result = np.einsum(spec, *operands, optimize=True)
    return float(term.coefficient) * np.asarray(result, dtype=np.float64)
