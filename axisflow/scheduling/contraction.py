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

A matrix product's result lies as its matrices come out (the stack axes,
then rows, then columns). When the product that reads it merges axes that
would not lie together so (``merged``, decided once per schedule by
``scheduling.evaluate.result_layouts``), the rows, columns and stack axes
are chosen, in either orientation, so that they do: the reader then takes
it as it lies instead of copying it (a copy as large as the result).

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
        """The result, laid out as its operands lie (``split``), or
        ``None`` when the summed modes merge into one axis of both operands
        in no common order."""
        summed = self.summed_order(left, right)
        if summed is None:
            return None
        return self.product(left, right, summed, *self.split(left, right))

    def summed_order(self, left: Array, right: Array) -> list[tuple[int, int]] | None:
        """The summed axes (left, right) in an order both operands merge
        into one axis, or ``None``."""
        for side, operand in ((0, left), (1, right)):
            strides = operand.strides
            summed = sorted(self.summed, key=lambda pair: -strides[pair[side]])
            if _groups(left, [a for a, _ in summed]) and _groups(
                right, [a for _, a in summed]
            ):
                return summed
        return None

    def split(self, left: Array, right: Array) -> _Split:
        """Rows and columns as the operands lie (by decreasing stride);
        outer kept axes that do not merge with the inner ones are stack
        axes, the left's first."""
        left_strides, right_strides = left.strides, right.strides
        rows = sorted(self.left_kept, key=lambda a: -left_strides[a])
        cols = sorted(self.right_kept, key=lambda a: -right_strides[a])
        left_stack = next(k for k in range(len(rows) + 1) if _groups(left, rows[k:]))
        right_stack = next(k for k in range(len(cols) + 1) if _groups(right, cols[k:]))
        stack = [(0, a) for a in rows[:left_stack]] + [
            (1, a) for a in cols[:right_stack]
        ]
        return [a for a, _ in self.both], stack, rows[left_stack:], cols[right_stack:]

    def layout_split(self, left: Array, right: Array, layout: str) -> _Split | None:
        """A split whose product lies in ``layout``: the modes kept from
        both first, then stack axes, then the rows (left kept axes that
        merge) and the columns (right kept axes that merge), each in the
        layout's order; ``None`` when the layout does not end in rows then
        columns of at least ``SMALL_CONTRACTION`` elements together (a
        product of tiny matrices is slower than a copy later)."""
        both = [a for a, _ in self.both]
        hadamard = len(both)
        if {self.left[a] for a in both} != set(layout[:hadamard]):
            return None
        both.sort(key=lambda a: layout.index(self.left[a]))
        rest = layout[hadamard:]
        left_axis = {self.left[a]: a for a in self.left_kept}
        right_axis = {self.right[a]: a for a in self.right_kept}
        count = len(rest)
        while count and rest[count - 1] in right_axis:
            count -= 1
        cols = [right_axis[c] for c in rest[count:]]
        while cols and not _groups(right, cols):
            cols.pop(0)
            count += 1
        end = count
        while count and rest[count - 1] in left_axis:
            count -= 1
        rows = [left_axis[c] for c in rest[count:end]]
        while rows and not _groups(left, rows):
            rows.pop(0)
            count += 1
        elements = math.prod(left.shape[a] for a in rows) * math.prod(
            right.shape[a] for a in cols
        )
        if elements < SMALL_CONTRACTION:
            return None
        stack = [
            (0, left_axis[c]) if c in left_axis else (1, right_axis[c])
            for c in rest[:count]
        ]
        return both, stack, rows, cols

    def letters(
        self,
        both: list[int],
        stack: list[tuple[int, int]],
        rows: list[int],
        cols: list[int],
    ) -> list[str]:
        """The result's letters in the memory order of a product split so."""
        return (
            [self.left[a] for a in both]
            + [(self.left if side == 0 else self.right)[a] for side, a in stack]
            + [self.left[a] for a in rows]
            + [self.right[a] for a in cols]
        )

    def product(
        self,
        left: Array,
        right: Array,
        summed: list[tuple[int, int]],
        both: list[int],
        stack: list[tuple[int, int]],
        rows: list[int],
        cols: list[int],
    ) -> Array:
        """The stacked ``matmul``: ``both`` (left axes of the modes kept
        from both), ``stack`` (side and axis of each stack axis, in the
        product's order: the other operand is broadcast along it),
        ``rows`` and ``cols`` merged, the summed axes the inner one."""
        left_shape, right_shape = left.shape, right.shape
        right_of = dict(self.both)
        inner = math.prod(left_shape[a] for a, _ in summed)
        hadamard = [left_shape[a] for a in both]
        row_dims = [left_shape[a] for a in rows]
        col_dims = [right_shape[a] for a in cols]
        stack_dims = [
            (left_shape if side == 0 else right_shape)[a] for side, a in stack
        ]
        # views: each group lies as one axis, reshape copies nothing; each
        # operand has extent 1 along the other's stack axes
        matrices_left = left.transpose(
            both + [a for side, a in stack if side == 0] + rows + [a for a, _ in summed]
        ).reshape(
            hadamard
            + [
                n if side == 0 else 1
                for (side, _), n in zip(stack, stack_dims, strict=True)
            ]
            + [math.prod(row_dims), inner]
        )
        matrices_right = right.transpose(
            [right_of[a] for a in both]
            + [a for side, a in stack if side == 1]
            + cols
            + [b for _, b in summed]
        ).reshape(
            hadamard
            + [
                n if side == 1 else 1
                for (side, _), n in zip(stack, stack_dims, strict=True)
            ]
            + [math.prod(col_dims), inner]
        )
        product = np.matmul(matrices_left, np.swapaxes(matrices_right, -1, -2))
        order = self.letters(both, stack, rows, cols)
        return product.reshape(hadamard + stack_dims + row_dims + col_dims).transpose(
            [order.index(c) for c in self.output]
        )


_Split = tuple[list[int], list[tuple[int, int]], list[int], list[int]]
"""A matrix product's axes: the left's of the modes kept from both, the
stack axes (side, axis), the rows (left axes), the columns (right axes)."""


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
        merged: Sequence[int] | None = None,
    ) -> None:
        """``merged``: the result's axes (positions in ``result_modes``)
        that its reader merges into one, in that order (``result_layouts``
        in ``scheduling.evaluate``); a matrix product whose result would
        not lie so lays it out with them innermost (the others outside in
        their order) when its matrices allow, so that the reader need not
        copy it."""
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
        self.swapped: _MatrixProduct | None = None
        """The same product with the operands swapped (its rows the right
        operand's): the other orientation a ``layout`` may need."""
        if len(specs) == 2 and _MatrixProduct.possible(specs[0], specs[1], output):
            self.matrix = _MatrixProduct(specs[0], specs[1], output)
            self.swapped = _MatrixProduct(specs[1], specs[0], output)
        self.merged = None if merged is None else "".join(output[k] for k in merged)
        """The letters of the axes the reader merges, in order, if any."""
        self.layout = None
        """The result's letters in the memory order wanted, if any."""
        if merged is not None:
            outer = [k for k in range(len(output)) if k not in merged]
            self.layout = "".join(output[k] for k in (*outer, *merged))

    def __call__(self, operands: Sequence[Array]) -> Array:
        result: Array | None = None
        matrix = self.matrix
        if matrix is not None:
            # node elements: the left operand's, times the right's kept
            right = operands[1].shape
            elements = operands[0].size * math.prod(right[a] for a in matrix.right_kept)
            if elements >= SMALL_CONTRACTION:
                result = self._matrix_product(operands[0], operands[1])
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

    def _matrix_product(self, left: Array, right: Array) -> Array | None:
        """The matrix product (``None`` if the summed axes do not group),
        laid out as ``layout`` asks when one orientation allows it."""
        matrix, swapped = self.matrix, self.swapped
        assert matrix is not None and swapped is not None
        layout, merged = self.layout, self.merged
        if layout is not None and merged is not None:
            summed = matrix.summed_order(left, right)
            if summed is None:
                return None
            split = matrix.split(left, right)
            if merged in "".join(matrix.letters(*split)):
                return matrix.product(left, right, summed, *split)
            for product, first, second in (
                (matrix, left, right),
                (swapped, right, left),
            ):
                summed = product.summed_order(first, second)
                if summed is None:
                    return None  # the same summed axes either way round
                split = product.layout_split(first, second, layout)
                if split is not None:
                    return product.product(first, second, summed, *split)
        return matrix(left, right)

    def _copied_matrix(
        self, matrix: _MatrixProduct, left: Array, right: Array
    ) -> Array | None:
        """The matrix product after copying operands into a layout that
        groups: first the smaller one, its summed axes in the other's memory
        order; then the other too, in the same order."""
        pairs = list(matrix.summed)
        if right.size <= left.size:
            pairs.sort(key=lambda pair: -left.strides[pair[0]])
            right = _laid_out(right, [b for _, b in pairs])
        else:
            pairs.sort(key=lambda pair: -right.strides[pair[1]])
            left = _laid_out(left, [a for a, _ in pairs])
        result = self._matrix_product(left, right)
        if result is None:
            if right.size <= left.size:
                left = _laid_out(left, [a for a, _ in pairs])
            else:
                right = _laid_out(right, [b for _, b in pairs])
            result = self._matrix_product(left, right)
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
