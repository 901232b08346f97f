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

The executor's contractions (``copies``) also repack the operands of a
matrix product that would run slowly as they lie (``_check_blas``): one
whose matrices have fewer than ``SKINNY_MATRIX`` rows or columns and
that BLAS does not take (NumPy's own loop, 2 to 4 GFLOP/s there), or a
skinny one whose stack broadcasts an operand of ``STREAMED_MATRIX``
bytes or more (BLAS reads it from memory once per stack entry). The
packed product stacks only the modes kept from both operands, with all
the left's other kept modes as rows and the right's as columns, each
operand taken as it lies when that is a stack of matrices BLAS takes,
else copied (the larger operand only in the first case, no operand above
``PACKED_COPY`` bytes: at most two transient copies, freed when the
product returns, small beside the arrays the memory model counts).

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
from axisflow.scheduling import pages

Array = NDArray[np.float64]

DEFAULT_MEMORY_LIMIT = 2 * 1024**3
"""Largest number of bytes one evaluation may hold at once (2 GiB)."""

SMALL_CONTRACTION = 4096
"""Below this many node elements, a matrix product is not worth its
reshapes: the direct einsum runs."""

STREAMED_MATRIX = 1024**2
"""Bytes from which a matrix that BLAS streams once per few rows or columns
of the other operand (a skinny product, its stack broadcasting that other
operand) no longer stays in the core's cache between the calls: the
product is then repacked (``_check_blas``)."""

SKINNY_MATRIX = 16
"""Fewer rows or columns than this in a stacked ``numpy.matmul``: NumPy's
own loop (operands BLAS does not take) runs it slowly, and BLAS, when the
stack broadcasts an operand, streams the other operand's matrices once
per few rows or columns (memory-bound, above ``STREAMED_MATRIX``), where
repacking merges the broadcast axes into the rows or columns
(``_check_blas``)."""

PACKED_COPY = 8 * 1024**2
"""Bytes of the largest operand the executor's contractions repack into a
layout BLAS takes (``Contraction.copies``): a transient copy, small beside
the arrays the memory model counts."""

SCALED_CHUNK = 16 * 1024
"""Bytes of the largest temporary ``add_scaled`` makes: small beside the
arrays the memory model counts, large enough that the Python loop over the
chunks costs little."""

COPIES_SCALED_CHUNK = 1024**2
"""Bytes of the largest temporary ``add_scaled`` makes for the executor
(``Contraction.copies``): a transient copy small beside the arrays the
memory model counts, and few enough chunks that their Python steps cost
little (with ``SCALED_CHUNK`` a 1 MiB block of the residual took 80)."""

_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


class EvaluationMemoryError(MemoryError):
    """An evaluation that would hold more than the memory limit."""


class MatrixProduct:
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
        blas: bool = False,
    ) -> Array:
        """The stacked ``matmul``: ``both`` (left axes of the modes kept
        from both), ``stack`` (side and axis of each stack axis, in the
        product's order: the other operand is broadcast along it),
        ``rows`` and ``cols`` merged, the summed axes the inner one.
        ``blas``: raise ``_SlowProduct`` instead of running a product that
        repacking makes faster (``_check_blas``), for the caller to
        repack the operands."""
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
        matrices_right = np.swapaxes(matrices_right, -1, -2)
        if blas:
            _check_blas(matrices_left, matrices_right, bool(stack))
        product = matmul(matrices_left, matrices_right)
        order = self.letters(both, stack, rows, cols)
        return product.reshape(hadamard + stack_dims + row_dims + col_dims).transpose(
            [order.index(c) for c in self.output]
        )


_Split = tuple[list[int], list[tuple[int, int]], list[int], list[int]]
"""A matrix product's axes: the left's of the modes kept from both, the
stack axes (side, axis), the rows (left axes), the columns (right axes)."""


class _SlowProduct(Exception):
    """A matrix product that would run NumPy's own loop on skinny
    matrices (``blas`` false), or BLAS on skinny matrices that stream a
    large broadcast operand (``blas`` true): the executor's contractions
    repack its operands instead (``_check_blas``), copying the larger one
    only in the first case (a copy of it would cost more than the
    repacking gains in the second)."""

    def __init__(self, blas: bool) -> None:
        super().__init__()
        self.blas = blas


def _blas_matrices(matrices: Array) -> bool:
    """Whether NumPy's ``matmul`` hands these (stacked) matrices to BLAS:
    one of the two matrix axes of unit stride, the other's stride a whole
    number of elements at least the first axis's extent (NumPy's
    ``is_blasable2d``, either orientation); a vector (an axis of extent
    1) needs its other axis of unit stride."""
    item = matrices.itemsize
    (outer_count, inner_count), (outer, inner) = (
        matrices.shape[-2:],
        matrices.strides[-2:],
    )
    if outer_count == 1 or inner_count == 1:
        return (inner if outer_count == 1 else outer) == item or (
            outer_count == inner_count == 1
        )

    def lies(major: int, minor: int, minor_count: int) -> bool:
        return minor == item and major % item == 0 and major // item >= minor_count

    return lies(outer, inner, inner_count) or lies(inner, outer, outer_count)


def _check_blas(left: Array, right: Array, broadcast: bool) -> None:
    """Raise ``_SlowProduct`` for a ``numpy.matmul(left, right)`` that
    repacking makes several times faster (measured on the executor
    benchmark's products): matrices of fewer than ``SKINNY_MATRIX`` rows
    or columns that BLAS does not take (NumPy's own loop runs at 2 to 4
    GFLOP/s on them; on larger ones at 10 or more, where a copy costs
    more than BLAS gains), or that it takes but with the stack broadcasting
    one operand and the larger matrix at least ``STREAMED_MATRIX`` bytes
    (BLAS then streams it from memory once per few rows or columns)."""
    rows, inner = left.shape[-2:]
    cols = right.shape[-1]
    if min(rows, cols) >= SKINNY_MATRIX:
        return
    if not (_blas_matrices(left) and _blas_matrices(right)):
        raise _SlowProduct(blas=False)
    if broadcast and max(rows, cols) * inner * left.itemsize >= STREAMED_MATRIX:
        raise _SlowProduct(blas=True)


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
        self.matrix: MatrixProduct | None = None
        """The matrix product, for two factors that form one."""
        self.swapped: MatrixProduct | None = None
        """The same product with the operands swapped (its rows the right
        operand's): the other orientation a ``layout`` may need."""
        if len(specs) == 2 and MatrixProduct.possible(specs[0], specs[1], output):
            self.matrix = MatrixProduct(specs[0], specs[1], output)
            self.swapped = MatrixProduct(specs[1], specs[0], output)
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
            left, right = operands
            # node elements: the left operand's, times the right's kept
            elements = left.size * math.prod(right.shape[a] for a in matrix.right_kept)
            if elements >= SMALL_CONTRACTION:
                if self.copies:
                    result = self._blas_product(matrix, left, right)
                else:
                    result = self._matrix_product(left, right)
        if result is None:
            # into a result of its own, laid out in order: NumPy allocates
            # nothing else then (left to itself, it may buffer an output
            # laid out as the operands lie, or return a view of an operand)
            extent = dict(zip(self.operand_letters, _shapes(operands), strict=True))
            result = pages.empty([extent[c] for c in self.output])
            np.einsum(self.subscripts, *operands, out=result)
        return result

    def _matrix_product(
        self, left: Array, right: Array, blas: bool = False
    ) -> Array | None:
        """The matrix product (``None`` if the summed axes do not group),
        laid out as ``layout`` asks when one orientation allows it;
        ``blas`` as in ``MatrixProduct.product``."""
        matrix, swapped = self.matrix, self.swapped
        assert matrix is not None and swapped is not None
        layout, merged = self.layout, self.merged
        if layout is not None and merged is not None:
            summed = matrix.summed_order(left, right)
            if summed is None:
                return None
            split = matrix.split(left, right)
            if merged in "".join(matrix.letters(*split)):
                return matrix.product(left, right, summed, *split, blas=blas)
            for product, first, second in (
                (matrix, left, right),
                (swapped, right, left),
            ):
                summed = product.summed_order(first, second)
                if summed is None:
                    return None  # the same summed axes either way round
                split = product.layout_split(first, second, layout)
                if split is not None:
                    return product.product(first, second, summed, *split, blas=blas)
        summed = matrix.summed_order(left, right)
        if summed is None:
            return None
        return matrix.product(
            left, right, summed, *matrix.split(left, right), blas=blas
        )

    def _blas_product(
        self, matrix: MatrixProduct, left: Array, right: Array
    ) -> Array | None:
        """The executor's matrix product, run by BLAS: as the operands lie
        when they group into matrices BLAS takes, after copying operands
        whose summed axes do not group (``_copied_matrix``), or else with
        both operands repacked into plain stacks of matrices
        (``_packed_product``); failing all (an operand above
        ``PACKED_COPY``), as the reference evaluator runs it."""
        try:
            result = self._matrix_product(left, right, blas=True)
            if result is None:
                result = self._copied_matrix(matrix, left, right, blas=True)
            if result is not None:
                return result
            # no layout groups, copies included: only repacking can
            return self._packed_product(matrix, left, right, copy_larger=True)
        except _SlowProduct as slow:
            packed = self._packed_product(matrix, left, right, not slow.blas)
        if packed is not None:
            return packed
        # repacking would copy too much: the slow product, as it lies
        result = self._matrix_product(left, right)
        if result is None:
            result = self._copied_matrix(matrix, left, right)
        return result

    def _packed_product(
        self, matrix: MatrixProduct, left: Array, right: Array, copy_larger: bool
    ) -> Array | None:
        """The product as one ``numpy.matmul`` over the modes kept from
        both (the only stack axes), the left's other kept modes as rows
        and the right's as columns, each operand taken as it lies where
        that is a stack of matrices BLAS takes and copied otherwise.
        ``None`` when a copy would exceed ``PACKED_COPY``, or would be of
        the larger operand unless ``copy_larger``, or when the result
        would not lie as its reader merges it (``merged``) and exceeds
        ``PACKED_COPY`` (the reader copies it then). The groups lie in
        ``layout``'s order when that puts ``merged`` together, else each
        as its operand lies (fewest copies)."""
        letters, both, rows, cols, swap = self._packed_order(matrix, left, right)
        if self.merged is not None and self.merged not in "".join(letters):
            letters, both, rows, cols, swap = self._packed_order(
                matrix, left, right, as_they_lie=True
            )
            size = math.prod(left.shape[a] for a in both + rows) * math.prod(
                right.shape[a] for a in cols
            )
            if size * left.itemsize > PACKED_COPY:
                return None  # its reader would copy it
        # the summed axes as the larger operand lies: it is the one to keep
        larger = _larger(left, right)
        strides = (left, right)[larger].strides
        summed = sorted(matrix.summed, key=lambda pair: -strides[pair[larger]])
        right_of = dict(matrix.both)
        matrices_left = _stacked_matrices(
            left, both, rows, [a for a, _ in summed], copy_larger or larger == 1
        )
        if matrices_left is None:
            return None
        matrices_right = _stacked_matrices(
            right,
            [right_of[a] for a in both],
            cols,
            [b for _, b in summed],
            copy_larger or larger == 0,
        )
        if matrices_right is None:
            return None
        hadamard = [left.shape[a] for a in both]
        row_dims = [left.shape[a] for a in rows]
        col_dims = [right.shape[a] for a in cols]
        if swap:
            product = matmul(matrices_right, np.swapaxes(matrices_left, -1, -2))
            dims = hadamard + col_dims + row_dims
        else:
            product = matmul(matrices_left, np.swapaxes(matrices_right, -1, -2))
            dims = hadamard + row_dims + col_dims
        return product.reshape(dims).transpose([letters.index(c) for c in self.output])

    def _packed_order(
        self,
        matrix: MatrixProduct,
        left: Array,
        right: Array,
        as_they_lie: bool = False,
    ) -> tuple[list[str], list[int], list[int], list[int], bool]:
        """A packed product's result letters in memory order, its stack
        axes (left axes of the modes kept from both), rows (left axes),
        columns (right axes), and whether the columns come first: in the
        order ``layout`` (else the output) gives, or ``as_they_lie`` in
        the operands (by decreasing stride, the stack as the larger lies)."""
        if as_they_lie:
            larger = _larger(left, right)
            stack_strides = (left, right)[larger].strides
            pairs = sorted(matrix.both, key=lambda pair: -stack_strides[pair[larger]])
            both = [a for a, _ in pairs]
            rows = sorted(matrix.left_kept, key=lambda a: -left.strides[a])
            cols = sorted(matrix.right_kept, key=lambda a: -right.strides[a])
            swap = False
        else:
            position = (self.layout or self.output).index
            both = sorted(
                (a for a, _ in matrix.both), key=lambda a: position(matrix.left[a])
            )
            rows = sorted(matrix.left_kept, key=lambda a: position(matrix.left[a]))
            cols = sorted(matrix.right_kept, key=lambda a: position(matrix.right[a]))
            swap = bool(rows and cols) and position(matrix.right[cols[0]]) < position(
                matrix.left[rows[0]]
            )
        row_letters = [matrix.left[a] for a in rows]
        col_letters = [matrix.right[a] for a in cols]
        letters = [matrix.left[a] for a in both] + (
            col_letters + row_letters if swap else row_letters + col_letters
        )
        return letters, both, rows, cols, swap

    def _copied_matrix(
        self, matrix: MatrixProduct, left: Array, right: Array, blas: bool = False
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
        result = self._matrix_product(left, right, blas)
        if result is None:
            if right.size <= left.size:
                left = _laid_out(left, [a for a, _ in pairs])
            else:
                right = _laid_out(right, [b for _, b in pairs])
            result = self._matrix_product(left, right, blas)
        return result


def matmul(left: Array, right: Array) -> Array:
    """``numpy.matmul(left, right)`` into a result whose pages are mapped
    first (``pages.empty``): a fresh result's page faults, one per page
    written, slowed the largest products by half."""
    shape = (
        *np.broadcast_shapes(left.shape[:-2], right.shape[:-2]),
        left.shape[-2],
        right.shape[-1],
    )
    return np.matmul(left, right, out=pages.empty(shape))


def _larger(left: Array, right: Array) -> int:
    """Which operand of a packed product is the larger (0: the left, on a
    tie): its layout is the one kept, the other follows it."""
    return 0 if left.size >= right.size else 1


def _stacked_matrices(
    array: Array, stack: list[int], kept: list[int], summed: list[int], copy: bool
) -> Array | None:
    """``array`` as a stack (axes ``stack``) of matrices, ``kept`` merged
    into rows and ``summed`` into columns: a view when they group into
    matrices BLAS takes, else a copy laid out so (``None`` without
    ``copy``, or above ``PACKED_COPY`` bytes). The copy's matrices lie
    row-major or column-major, whichever puts innermost the group whose
    innermost axis has the shorter stride in ``array``: a transposing copy
    that reads along shorter strides runs several times faster (0.18
    against 0.65 ms for the benchmark's 1.1 MiB block of amplitudes)."""
    view = array.transpose(stack + kept + summed)
    shape = [array.shape[a] for a in stack] + [
        math.prod(array.shape[a] for a in kept),
        math.prod(array.shape[a] for a in summed),
    ]
    if _groups(array, kept) and _groups(array, summed):
        matrices = view.reshape(shape)
        if _blas_matrices(matrices):
            return matrices
    if not copy or array.nbytes > PACKED_COPY:
        return None
    strides = array.strides
    if kept and summed and abs(strides[kept[-1]]) < abs(strides[summed[-1]]):
        # column-major matrices: the kept axes innermost
        packed = np.ascontiguousarray(array.transpose(stack + summed + kept))
        return np.swapaxes(packed.reshape(shape[:-2] + shape[:-3:-1]), -1, -2)
    return np.ascontiguousarray(view).reshape(shape)


def _laid_out(array: Array, last: Sequence[int]) -> Array:
    """A copy of ``array`` with the same axes, laid out in memory with the
    axes ``last`` innermost, in that order (the others outside them, in
    their order)."""
    order = [a for a in range(array.ndim) if a not in last] + list(last)
    # from the pool (``pages``): the executor's blocks copy the same operands
    # again and again, and the pool's ceiling must see what they take
    copy = pages.empty([array.shape[a] for a in order])
    np.copyto(copy, array.transpose(order))
    return copy.transpose(np.argsort(order))


def _shapes(operands: Sequence[Array]) -> list[int]:
    """Every operand's extents, one after the other."""
    return [n for operand in operands for n in operand.shape]


def add_scaled(
    target: Array, array: Array, coeff: float, chunk: int = SCALED_CHUNK
) -> None:
    """``target += coeff * array`` with no temporary above ``chunk`` bytes
    (``SCALED_CHUNK``, the reference evaluator's; the executor passes
    ``COPIES_SCALED_CHUNK``): in place for ``coeff`` of ±1, chunk by chunk
    of the leading axes otherwise. Both run in ``array``'s memory order
    (``_in_memory_order``)."""
    target, array = _in_memory_order(target, array)
    if coeff == 1.0:
        target += array
    elif coeff == -1.0:
        target -= array
    elif array.ndim == 0 or array.nbytes <= chunk:
        target += coeff * array
    else:
        rows = array.shape[0]
        step = max(1, rows * chunk // array.nbytes)
        if step == 1:
            for row in range(rows):
                add_scaled(target[row], array[row], coeff, chunk)
        else:
            for start in range(0, rows, step):
                target[start : start + step] += coeff * array[start : start + step]


def _in_memory_order(target: Array, array: Array) -> tuple[Array, Array]:
    """``target`` and ``array`` (of one shape) with their axes permuted
    alike, into ``array``'s memory order (by decreasing stride), so that
    an elementwise operation on them reads ``array`` along its memory:
    NumPy iterates a ``+=`` in the target's order, and a piece added into
    a residual laid out otherwise (the benchmark's: the piece's block axes
    outermost, the residual's innermost) was read across its memory,
    three to four times slower (1.5 against 0.36 ms for a 2 MiB piece)."""
    if array.ndim < 2 or target.shape != array.shape:
        return target, array
    order = memory_axes(array)
    if order == tuple(range(array.ndim)):
        return target, array
    return target.transpose(order), array.transpose(order)


def memory_axes(array: Array) -> tuple[int, ...]:
    """``array``'s axes from the outermost in memory to the innermost (by
    decreasing stride; axes of equal strides in their order)."""
    strides = array.strides
    return tuple(sorted(range(array.ndim), key=lambda axis: -abs(strides[axis])))


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
