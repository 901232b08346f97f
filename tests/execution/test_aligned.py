"""Arrays sent between processes arrive aligned (``execution/aligned.py``).

Dask reads a message's frames into one buffer, so an out-of-band buffer
can start at any byte: the round trips here put every buffer at an odd
offset, as such a message does, and unpickle from there."""

from __future__ import annotations

import pickle
import sys
from typing import Any

import numpy as np
import pytest
from dask.sizeof import sizeof

from axisflow.execution.aligned import Aligned
from axisflow.scheduling.evaluate import Contribution


def _through_odd_offsets(obj: object) -> tuple[Any, int]:
    """``obj`` pickled with protocol 5, its out-of-band buffers each copied
    to an odd offset of a buffer of its own, and unpickled from there; and
    how many buffers went out of band."""
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    shifted: list[memoryview] = []
    for buffer in buffers:
        raw = buffer.raw()
        host = bytearray(len(raw) + 1)
        host[1:] = raw
        shifted.append(memoryview(host)[1:])
    return pickle.loads(data, buffers=shifted), len(buffers)


def test_a_bare_array_from_an_odd_offset_is_unaligned() -> None:
    """The premise: NumPy's own pickling rebuilds the array on the buffer
    where it lies."""
    array = np.arange(12.0).reshape(3, 4)
    received, sent = _through_odd_offsets(array)
    assert sent == 1 and not received.flags.aligned
    assert np.array_equal(received, array)


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12.0).reshape(3, 4),
        np.arange(12.0).reshape(3, 4).T,  # Fortran order: out of band too
        np.zeros((0, 3)),
    ],
    ids=["C", "F", "empty"],
)
def test_an_aligned_array_arrives_aligned_with_its_values(array: np.ndarray) -> None:
    received, sent = _through_odd_offsets(Aligned(array))
    assert sent == 1
    assert isinstance(received, Aligned)
    assert received.array.flags.aligned and received.array.flags.writeable
    assert received.array.shape == array.shape
    assert np.array_equal(received.array, array)


def test_a_permuted_array_travels_as_one_c_contiguous_buffer_and_keeps_its_layout() -> (
    None
):
    """A residual laid out with its sliced axes outermost (``residual_order``)
    is a C-contiguous array with its axes permuted: it goes out of band as
    that array, in one buffer Dask's framing can join with others
    (``bytes.join`` takes only C-contiguous memoryviews: a Fortran-ordered
    buffer made a transfer between two workers hang), and arrives laid out
    as it was."""
    laid = np.arange(2.0 * 3 * 4 * 5).reshape(4, 5, 2, 3)
    array = laid.transpose(2, 3, 0, 1)
    fortran = np.arange(12.0).reshape(3, 4).T
    for sent_array in (array, fortran):
        buffers: list[pickle.PickleBuffer] = []
        pickle.dumps(Aligned(sent_array), protocol=5, buffer_callback=buffers.append)
        assert len(buffers) == 1
        assert memoryview(buffers[0]).c_contiguous
        b"".join([memoryview(buffers[0]), b"x"])  # what Dask's framing does
    received, sent = _through_odd_offsets(Aligned(array))
    assert sent == 1
    assert received.array.shape == array.shape
    assert received.array.strides == array.strides
    assert np.array_equal(received.array, array)


def test_a_view_with_gaps_travels_in_band() -> None:
    array = np.arange(12.0).reshape(3, 4)[:, ::2]
    received, sent = _through_odd_offsets(Aligned(array))
    assert sent == 0
    assert received.array.flags.aligned and np.array_equal(received.array, array)


def test_a_contribution_arrives_aligned() -> None:
    array = np.arange(6.0).reshape(2, 3)
    contribution = Contribution("x", (slice(0, 2), slice(None)), array, True)
    received, sent = _through_odd_offsets([contribution])
    assert sent == 1
    (got,) = received
    assert isinstance(got, Contribution)
    assert (got.target, got.index, got.accumulate) == ("x", contribution.index, True)
    assert got.array.flags.aligned and np.array_equal(got.array, array)


def test_an_aligned_array_sizes_as_its_array() -> None:
    """Dask places tasks near their largest inputs, spills and counts the
    bytes moved by ``sizeof``, which takes ``sys.getsizeof`` for an object
    it does not know."""
    array = np.zeros((100, 100))
    assert sizeof(Aligned(array)) >= array.nbytes
    assert sys.getsizeof(Aligned(array)) - sys.getsizeof(Aligned(np.zeros(0))) == (
        array.nbytes
    )


def test_a_contribution_sizes_as_its_array() -> None:
    """A block's contributions are a task's result Dask sizes too."""
    array = np.zeros((100, 100))
    contribution = Contribution("x", (), array, True)
    assert sizeof({"x": [contribution]}) >= array.nbytes
