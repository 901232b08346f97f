"""Dense contractions for the reference evaluator: compiled once, guarded.

The evaluator builds the same value many times (once per block of every
loop around it), so everything that does not depend on the numbers is done
once per value: the einsum subscripts and, for a product of two factors,
which modes are summed and which stay (``Contraction``).

A contraction allocates its result and nothing the memory model does not
count (``docs/pipeline.md``, section 3.4). A product of two factors without
a mode kept from both (a matrix product once the modes are grouped) runs
as one ``numpy.matmul`` when both operands, transposed, group into
matrices as they lie in memory (no copy: BLAS, or NumPy's strided loop);
every other contraction, and one whose operands would need a copy to be
grouped (unless ``copies``: the Dask executor copies them, for BLAS),
runs as one direct ``numpy.einsum`` (no intermediates, no
copies: the multiply-adds of the product of its node extents, which is
what the model counts). ``numpy.einsum`` with a contraction path was the
former route: its ``tensordot`` copies transposed operands (an input's
slice included) that no model of the schedule holds.

``add_scaled`` adds ``coeff * array`` into a buffer without a temporary
of the array's size (in place for ±1, in chunks of ``SCALED_CHUNK`` bytes
otherwise).

``MemoryGuard`` refuses, before anything is allocated, an evaluation whose
arrays would exceed ``DEFAULT_MEMORY_LIMIT`` (or the limit given): dense
evaluation of a real equation at realistic extents needs terabytes.
"""

from __future__ import annotations

import itertools
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
"""Below this many node elements, a matrix product is not worth its
reshapes: the direct einsum runs."""

SCALED_CHUNK = 16 * 1024
"""Bytes of the largest temporary ``add_scaled`` makes: small beside the
arrays the memory model counts, large enough that the Python loop over the
chunks costs little."""

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


class EvaluationMemoryError(MemoryError):
    """An evaluation that would hold more than the memory limit."""


class _MatrixProduct:
    """A product of two factors as one (stacked) ``numpy.matmul``: the
    modes kept from both (Hadamard modes) are stack axes, the left
    operand's other kept modes rows, the right operand's columns, the
    summed modes the inner axis. Each group is ordered as it lies in
    memory (by decreasing stride; the summed modes as in either operand)
    and merged into one axis without a copy; outer kept modes that do not
    merge with the inner ones stay stack axes of their own (the other
    operand broadcast along them). Only summed modes that merge in neither
    order need a copy: then there is no matrix product."""

    def __init__(self, left: str, right: str, output: str) -> None:
        self.both = tuple(
            (k, right.index(c))
            for k, c in enumerate(left)
            if c in right and c in output
        )
        """Each mode kept from both operands: its axis in the left, in the right."""
        self.summed = tuple(
            (k, right.index(c))
            for k, c in enumerate(left)
            if c in right and c not in output
        )
        """Each summed mode: its axis in the left operand, in the right."""
        self.left_kept = tuple(k for k, c in enumerate(left) if c not in right)
        self.right_kept = tuple(k for k, c in enumerate(right) if c not in left)
        self.left = left
        self.right = right
        self.output = output

    @staticmethod
    def possible(left: str, right: str, output: str) -> bool:
        """Whether ``left,right->output`` is a product of two operands: no
        letter repeated in an operand or the output, every letter of one
        operand alone kept (none summed within one operand)."""
        if len(set(left)) != len(left) or len(set(right)) != len(right):
            return False
        if len(set(output)) != len(output) or not set(output) <= set(left + right):
            return False
        return set(left) ^ set(right) <= set(output)

    def __call__(self, left: Array, right: Array) -> Array | None:
        """The result, or ``None`` when the summed modes merge into one axis
        of both operands in no common order."""
        left_strides, right_strides = left.strides, right.strides
        for side, strides in ((0, left_strides), (1, right_strides)):
            summed = sorted(self.summed, key=lambda pair: -strides[pair[side]])
            if _groups(left, [a for a, _ in summed]) and _groups(
                right, [a for _, a in summed]
            ):
                break
        else:
            return None
        rows = sorted(self.left_kept, key=lambda a: -left_strides[a])
        cols = sorted(self.right_kept, key=lambda a: -right_strides[a])
        left_stack = next(k for k in range(len(rows) + 1) if _groups(left, rows[k:]))
        right_stack = next(k for k in range(len(cols) + 1) if _groups(right, cols[k:]))
        both = list(self.both)
        left_shape, right_shape = left.shape, right.shape
        inner = math.prod(left_shape[a] for a, _ in summed)
        stack_l = [left_shape[a] for a in rows[:left_stack]]
        stack_r = [right_shape[a] for a in cols[:right_stack]]
        row_dims = [left_shape[a] for a in rows[left_stack:]]
        col_dims = [right_shape[a] for a in cols[right_stack:]]
        hadamard = [left_shape[a] for a, _ in both]
        # views: each group lies as one axis, reshape copies nothing; the
        # left's stack axes are 1 in the right and the right's in the left
        matrices_left = left.transpose(
            [a for a, _ in both] + rows + [a for a, _ in summed]
        ).reshape(
            hadamard + stack_l + [1] * len(stack_r) + [math.prod(row_dims), inner]
        )
        matrices_right = right.transpose(
            [a for _, a in both] + cols + [a for _, a in summed]
        ).reshape(
            hadamard + [1] * len(stack_l) + stack_r + [math.prod(col_dims), inner]
        )
        product = np.matmul(matrices_left, np.swapaxes(matrices_right, -1, -2))
        order = (
            [self.left[a] for a, _ in both]
            + [self.left[a] for a in rows[:left_stack]]
            + [self.right[a] for a in cols[:right_stack]]
            + [self.left[a] for a in rows[left_stack:]]
            + [self.right[a] for a in cols[right_stack:]]
        )
        return product.reshape(
            hadamard + stack_l + stack_r + row_dims + col_dims
        ).transpose([order.index(c) for c in self.output])


def _groups(array: Array, axes: Sequence[int]) -> bool:
    """Whether ``axes`` of ``array``, in this order, lie in memory as one
    axis (each stride the next one's times its extent; axes of extent 1
    aside), so that merging them is a view."""
    shape, strides = array.shape, array.strides
    merged = [(shape[a], strides[a]) for a in axes if shape[a] != 1]
    return all(
        outer == inner * count
        for (_, outer), (count, inner) in itertools.pairwise(merged)
    )


class Contraction:
    """One value's einsum: operand subscripts from the factor maps, output
    subscripts from the value's modes, node modes summed."""

    def __init__(
        self,
        name: str,
        node_modes: Sequence[object],
        factor_modes: Sequence[Sequence[object]],
        result_modes: Sequence[object],
        copies: bool = False,
    ) -> None:
        if len(node_modes) > len(_LETTERS):
            raise ValueError(f"@{name} has more than {len(_LETTERS)} modes at its node")
        letter = {mode: _LETTERS[k] for k, mode in enumerate(node_modes)}
        specs = ["".join(letter[m] for m in modes) for modes in factor_modes]
        output = "".join(letter[m] for m in result_modes)
        self.name = name
        self.subscripts = f"{','.join(specs)}->{output}"
        self.output = output
        self.operand_letters = "".join(specs)
        self.copies = copies
        """Copy operands that do not group into a matrix product (a
        temporary of an operand's size, which the memory model does not
        count) rather than run the direct einsum: the executor's choice,
        for speed; the reference evaluator never copies."""
        self.matrix: _MatrixProduct | None = None
        """The matrix product, for two factors that form one."""
        if len(specs) == 2 and _MatrixProduct.possible(specs[0], specs[1], output):
            self.matrix = _MatrixProduct(specs[0], specs[1], output)

    def __call__(self, operands: Sequence[Array]) -> Array:
        result: Array | None = None
        matrix = self.matrix
        if matrix is not None:
            # node elements: the left operand's, times the right's kept
            right = operands[1].shape
            elements = operands[0].size * math.prod(right[a] for a in matrix.right_kept)
            if elements >= SMALL_CONTRACTION:
                result = matrix(operands[0], operands[1])
            if result is None and self.copies and elements >= SMALL_CONTRACTION:
                result = self._copied_matrix(matrix, operands[0], operands[1])
        if result is None:
            # into a result of its own, laid out in order: NumPy allocates
            # nothing else then (left to itself, it may buffer an output
            # laid out as the operands lie, or return a view of an operand)
            extent = dict(zip(self.operand_letters, _shapes(operands), strict=True))
            result = np.empty([extent[c] for c in self.output])
            np.einsum(self.subscripts, *operands, out=result)
        return result

    @staticmethod
    def _copied_matrix(
        matrix: _MatrixProduct, left: Array, right: Array
    ) -> Array | None:
        """The matrix product after copying operands into a layout that
        groups: first the smaller one, its summed axes in the other's memory
        order; then both, kept axes first and summed axes last, in one
        order."""
        pairs = list(matrix.summed)
        if right.size <= left.size:
            pairs.sort(key=lambda pair: -left.strides[pair[0]])
            result = matrix(left, _laid_out(right, [b for _, b in pairs]))
        else:
            pairs.sort(key=lambda pair: -right.strides[pair[1]])
            result = matrix(_laid_out(left, [a for a, _ in pairs]), right)
        if result is None:
            result = matrix(
                _laid_out(left, [a for a, _ in pairs]),
                _laid_out(right, [b for _, b in pairs]),
            )
        return result


def _laid_out(array: Array, last: Sequence[int]) -> Array:
    """A copy of ``array`` with the same axes, laid out in memory with the
    axes ``last`` innermost, in that order (the others outside them, in
    their order)."""
    order = [a for a in range(array.ndim) if a not in last] + list(last)
    copy = np.ascontiguousarray(array.transpose(order))
    return copy.transpose(np.argsort(order))


def _shapes(operands: Sequence[Array]) -> list[int]:
    """Every operand's extents, one after the other."""
    return [n for operand in operands for n in operand.shape]


def add_scaled(target: Array, array: Array, coeff: float) -> None:
    """``target += coeff * array`` with no temporary above ``SCALED_CHUNK``
    bytes: in place for ``coeff`` of ±1, chunk by chunk of the leading axes
    otherwise."""
    if coeff == 1.0:
        target += array
    elif coeff == -1.0:
        target -= array
    elif array.ndim == 0 or array.nbytes <= SCALED_CHUNK:
        target += coeff * array
    else:
        rows = array.shape[0]
        step = max(1, rows * SCALED_CHUNK // array.nbytes)
        if step == 1:
            for row in range(rows):
                add_scaled(target[row], array[row], coeff)
        else:
            for start in range(0, rows, step):
                target[start : start + step] += coeff * array[start : start + step]


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
