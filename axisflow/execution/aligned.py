"""Arrays that arrive aligned wherever Dask sends them.

Dask reads all the frames of a message into one buffer, so an array
unpickled from its frame starts wherever the frame fell in it, often off
the 8-byte boundary a float64 array needs. NumPy accepts such an array but
copies it for every matrix product that reads it (fresh memory, a page
fault per 4 KiB, each time) and runs its elementwise loops several times
slower. On the executor benchmark a worker that received a 128 MiB input
from the other one faulted in 20% more memory in its largest task and 3x
more in the next (``docs/benchmarks-executor.md``).

:class:`Aligned` holds an array a task returns or reads. Pickled with
protocol 5 (Dask's), its data travels as an out-of-band buffer, and
unpickling copies it once, aligned, in the process that receives it, when
it arrived unaligned; the array Dask keeps there is then the aligned one.
Importing this module gives :class:`~axisflow.scheduling.evaluate.Contribution`
(a block's part of a buffer or of the residual) the same pickling, through
``copyreg``.
"""

from __future__ import annotations

import copyreg
import pickle
from typing import Any, SupportsIndex

import numpy as np

from axisflow.scheduling import pages
from axisflow.scheduling.contraction import memory_axes
from axisflow.scheduling.evaluate import Array, Contribution


class Aligned:
    """An array sent between processes that arrives aligned."""

    __slots__ = ("array",)

    def __init__(self, array: Array) -> None:
        self.array = array

    def __sizeof__(self) -> int:
        # Dask sizes an object it does not know by sys.getsizeof: what
        # places tasks near their data, spills and counts bytes moved
        return object.__sizeof__(self) + self.array.nbytes

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        array = self.array
        if int(protocol) < 5:
            return (Aligned, (array,))
        # The buffer goes out as a C-contiguous array: Dask joins small
        # frames with ``bytes.join``, which takes no other memoryview (a
        # Fortran-ordered one raised there and the transfer hung). An array
        # whose axes are a permutation of a C-contiguous one's (Fortran
        # order, a residual laid out with its sliced axes outermost)
        # travels as that array, with the permutation.
        axes: tuple[int, ...] = ()
        if not array.flags.c_contiguous:
            axes = memory_axes(array)
            array = array.transpose(axes)
            if not array.flags.c_contiguous:
                # a view with gaps: NumPy's own pickling copies it in band
                return (Aligned, (self.array,))
        return (
            received,
            (pickle.PickleBuffer(array.data), array.dtype.str, array.shape, axes),
        )


def received(
    buffer: Any, dtype: str, shape: tuple[int, ...], axes: tuple[int, ...] = ()
) -> Aligned:
    """The array an :class:`Aligned` was pickled from, rebuilt on ``buffer``,
    or copied to memory of its own when ``buffer`` is not aligned for
    ``dtype`` (the unpickling side of :meth:`Aligned.__reduce_ex__`).
    ``shape`` is the C-contiguous array's that was sent; ``axes``, if any,
    the memory order of the array it was (``array.transpose(axes)`` was
    sent)."""
    array = np.frombuffer(buffer, dtype=np.dtype(dtype)).reshape(shape)
    if not array.flags.aligned:
        copy = pages.empty(shape) if array.dtype == np.float64 else np.empty_like(array)
        np.copyto(copy, array)
        array = copy
    if axes:
        array = array.transpose(np.argsort(axes))
    return Aligned(array)


def _reduce_contribution(contribution: Contribution) -> tuple[Any, ...]:
    return (
        _contribution,
        (
            contribution.target,
            contribution.index,
            Aligned(contribution.array),
            contribution.accumulate,
        ),
    )


def _contribution(
    target: str, index: tuple[slice, ...], array: Aligned, accumulate: bool
) -> Contribution:
    return Contribution(target, index, array.array, accumulate)


copyreg.pickle(Contribution, _reduce_contribution)
