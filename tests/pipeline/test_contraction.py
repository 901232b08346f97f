"""Compiled contractions and the evaluator's memory guard."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import cast

import numpy as np
import pytest

from axisflow.scheduling import contraction as contraction_module
from axisflow.scheduling.contraction import (
    COPIES_SCALED_CHUNK,
    SCALED_CHUNK,
    STREAMED_MATRIX,
    Contraction,
    EvaluationMemoryError,
    MemoryGuard,
    _in_memory_order,
    add_scaled,
)


@pytest.fixture
def matrix_products(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The operands of every ``numpy.matmul`` call while the test runs."""
    products: list[object] = []
    matmul = np.matmul

    def spy(*operands: np.ndarray, out: np.ndarray) -> np.ndarray:
        products.append(operands)
        return matmul(*operands, out=out)

    monkeypatch.setattr(np, "matmul", spy)
    return products


@pytest.mark.parametrize("size", [2, 40])  # direct einsum, then a matrix product
def test_contraction_matches_einsum(size: int, matrix_products: list[object]) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((size, 3, size))
    b = rng.standard_normal((3, size, 4))
    # node modes x y z w: result (x, w), y and z summed
    contraction = Contraction(
        "v", ["x", "w", "y", "z"], [["x", "y", "z"], ["y", "z", "w"]], ["x", "w"]
    )
    expected = np.einsum("xyz,yzw->xw", a, b)
    np.testing.assert_allclose(contraction([a, b]), expected, rtol=1e-12)
    assert len(matrix_products) == (size == 40)


def measured(call: Callable[[], np.ndarray]) -> tuple[np.ndarray, int]:
    """The result of ``call`` and the peak bytes traced while it ran."""
    call()  # warm NumPy's caches
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        result = call()
        return result, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(
    ("left", "right", "output", "cut", "matmul"),
    [
        ("xyz", "yzw", "wx", False, True),  # a matrix product, result transposed
        ("xyz", "zyw", "xw", False, False),  # summed modes that group in neither
        ("xyz", "yzw", "xw", True, False),  # cut operands: the groups are strided
        ("xyz", "zyw", "xyw", False, True),  # y kept from both: a stack axis
        ("xy", "zyw", "xw", False, False),  # z summed in one operand: direct einsum
    ],
)
def test_a_contraction_allocates_its_result_only(
    left: str,
    right: str,
    output: str,
    cut: bool,
    matmul: bool,
    matrix_products: list[object],
) -> None:
    extent = {"x": 60, "y": 50, "z": 40, "w": 30}
    rng = np.random.default_rng(2)
    a = rng.standard_normal([extent[c] for c in left])
    b = rng.standard_normal([extent[c] for c in right])
    if cut:  # every mode cut to part of its range: strided operands
        a, b = a[:-3, 1:, :-2], b[1:, :-2, 2:]
    node = sorted(set(left) | set(right))
    contraction = Contraction("v", node, [list(left), list(right)], list(output))
    result, peak = measured(lambda: contraction([a, b]))
    assert bool(matrix_products) == matmul
    np.testing.assert_allclose(
        result, np.einsum(f"{left},{right}->{output}", a, b), rtol=1e-10
    )
    # the operands are 480 KB and more; NumPy's iterator buffers stay below
    assert peak - result.nbytes < 2 * 64 * 1024 + 4096


@pytest.mark.parametrize("chunk", [SCALED_CHUNK, COPIES_SCALED_CHUNK // 2])
def test_add_scaled_keeps_its_temporaries_within_the_chunk_given(chunk: int) -> None:
    rng = np.random.default_rng(4)
    target = rng.standard_normal((8, 8, 96, 96))[:, 2:6]  # a block of a residual
    array = rng.standard_normal((96, 96, 4, 8)).transpose(3, 2, 1, 0)  # 2.25 MiB
    expected = target + 0.5 * array

    def add() -> np.ndarray:
        add_scaled(target, array, 0.5, chunk)
        return target

    target_before = target.copy()
    _, peak = measured(add)  # adds twice (a warm-up first)
    np.testing.assert_allclose(target, target_before + 2 * 0.5 * array, rtol=1e-12)
    target[...] = target_before
    add()
    np.testing.assert_allclose(target, expected, rtol=1e-12)
    # a chunk, and NumPy's iterator buffers (the target is read across
    # its memory: the add runs in the array's memory order)
    assert chunk // 2 < peak <= chunk + 2 * 64 * 1024 + 4096


@pytest.mark.parametrize("coeff", [1.0, -1.0, 0.5, -3.0])
def test_add_scaled_adds_without_a_copy_of_the_array(coeff: float) -> None:
    rng = np.random.default_rng(3)
    target = rng.standard_normal((80, 60, 40))
    array = rng.standard_normal((40, 60, 80)).transpose(2, 1, 0)  # 1.5 MB
    expected = target + coeff * array

    def add() -> np.ndarray:
        add_scaled(target, array, coeff)
        return target

    target_before = target.copy()
    measured(add)  # adds twice (a warm-up first)
    np.testing.assert_allclose(target, target_before + 2 * coeff * array)
    target[...] = target_before
    add()
    np.testing.assert_allclose(target, expected, rtol=1e-12)
    _, peak = measured(lambda: np.zeros(0))
    assert peak < 1024
    target[...] = target_before
    _, peak = measured(add)
    assert peak <= SCALED_CHUNK + 64 * 1024 + 4096  # a chunk and NumPy's buffer


def test_add_scaled_reaches_a_zero_dimensional_target() -> None:
    target = np.zeros(())
    add_scaled(target[...], np.asarray(2.0), 1.5)
    assert float(target) == 3.0


def test_memory_guard_refuses_before_allocating() -> None:
    guard = MemoryGuard(limit=1024)
    guard.check(1024, "ok")
    with pytest.raises(EvaluationMemoryError, match=r"needs 5e\+03 GiB at once, above"):
        guard.check(5000 * 1024**3, "the unbatched forest")


def test_compare_refuses_a_huge_dense_evaluation_before_allocating() -> None:
    from axisflow.pipeline import schedule_expression
    from axisflow.scheduling.evaluate import compare
    from tests.conftest import EXAMPLES

    text = (EXAMPLES / "sequant" / "csv_ccsd_doubles_residual_df.txt").read_text(
        encoding="utf-8"
    )
    forest = schedule_expression(text, "i", extents="i=80,a=896,μ̃=896,Κ=1682")
    with pytest.raises(EvaluationMemoryError, match="above the evaluator's memory"):
        compare(forest.model, forest.schedule)  # terabytes: refused at once
    with pytest.raises(EvaluationMemoryError, match="limit of 10000 B"):
        compare(
            forest.model,
            forest.schedule,
            extents=dict.fromkeys("ia", 3) | {"μ̃": 3, "Κ": 3},
            memory_limit=10_000,
        )


@pytest.mark.parametrize(
    ("left_modes", "right_modes"),
    [
        # summed (e, f) lie e-major in the left, f-major in the right
        ("aebcf", "dfe"),
        # the left's summed axes do not lie together: both are copied
        ("eaf", "dfe"),
    ],
)
def test_copies_make_a_matrix_product_of_operands_that_do_not_group(
    left_modes: str, right_modes: str, matrix_products: list[object]
) -> None:
    rng = np.random.default_rng(2)
    extent = dict(a=16, b=1, c=2, d=24, e=20, f=12)
    left = rng.standard_normal([extent[m] for m in left_modes])
    right = rng.standard_normal([extent[m] for m in right_modes])
    output = "".join(m for m in "abcd" if m in left_modes + right_modes)
    node = sorted(set(left_modes + right_modes))
    reference = np.einsum(f"{left_modes},{right_modes}->{output}", left, right)
    direct = Contraction("v", node, [list(left_modes), list(right_modes)], list(output))
    assert np.allclose(direct([left, right]), reference, rtol=1e-12, atol=1e-12)
    assert matrix_products == []  # the reference evaluator does not copy
    copying = Contraction(
        "v", node, [list(left_modes), list(right_modes)], list(output), copies=True
    )
    assert np.allclose(copying([left, right]), reference, rtol=1e-12, atol=1e-12)
    assert len(matrix_products) == 1


def test_a_result_is_laid_out_with_the_axes_its_reader_merges_together(
    matrix_products: list[object],
) -> None:
    # v = g[a,f,b] t[f,c,d,e] -> v[a,b,c,d,e]; its reader sums over b and e
    # (merged as e then b): built so, v lies with e outside b, innermost
    rng = np.random.default_rng(3)
    g = rng.standard_normal((6, 7, 96))
    t = rng.standard_normal((7, 4, 4, 64))[:, :3, 1:4, :]  # a slice, as a block
    node = list("abcdef")
    reference = np.einsum("afb,fcde->abcde", g, t)
    plain = Contraction("v", node, [list("afb"), list("fcde")], list("abcde"))
    laid_out = Contraction(
        "v", node, [list("afb"), list("fcde")], list("abcde"), merged=(4, 1)
    )
    for contraction in (plain, laid_out):
        assert np.allclose(contraction([g, t]), reference, rtol=1e-12, atol=1e-12)
    result = laid_out([g, t])
    item = result.itemsize
    assert result.strides[1] == item and result.strides[4] == item * result.shape[1]
    merged_plain = plain([g, t])
    assert merged_plain.strides[4] != merged_plain.strides[1] * merged_plain.shape[1]
    assert len(matrix_products) == 4  # every product a matrix product


def _only_product(products: list[object]) -> tuple[np.ndarray, np.ndarray]:
    """The operands of the one ``numpy.matmul`` call recorded."""
    assert len(products) == 1
    left, right = cast("tuple[np.ndarray, np.ndarray]", products[0])
    return left, right


def _blas_takes(matrices: np.ndarray) -> bool:
    """NumPy's rule for handing (stacked) matrices to BLAS: one of the two
    last axes of unit stride, the other's stride at least the first's
    extent (numpy/_core/src/umath/matmul.c.src, ``is_blasable2d``)."""
    item = matrices.itemsize
    (rows, cols), (row_stride, col_stride) = matrices.shape[-2:], matrices.strides[-2:]
    row_major = col_stride == item and row_stride >= cols * item
    column_major = row_stride == item and col_stride >= rows * item
    return row_major or column_major


def test_executor_repacks_stacked_operands_blas_does_not_take(
    matrix_products: list[object],
) -> None:
    # abcfe,fdec->abcde: c and e kept from both (the stack), f summed, 4
    # rows (a, b); the right operand a block of a larger tensor whose
    # unit-stride axis is a stack axis: no matrix of it has a unit stride
    # (the benchmark's @v4, with 16 rows there)
    rng = np.random.default_rng(5)
    left = rng.standard_normal((2, 2, 4, 96, 4))
    right = rng.standard_normal((96, 96, 8, 8))[:, :, 2:6, 4:8]
    node = list("abcdef")
    reference = np.einsum("abcfe,fdec->abcde", left, right)
    factors = [list("abcfe"), list("fdec")]
    plain = Contraction("v", node, factors, list("abcde"))
    np.testing.assert_allclose(plain([left, right]), reference, rtol=1e-12, atol=1e-12)
    # the reference evaluator's matrix product: stacked matrices BLAS refuses
    plain_left, plain_right = _only_product(matrix_products)
    assert not (_blas_takes(plain_left) and _blas_takes(plain_right))
    matrix_products.clear()
    copying = Contraction("v", node, factors, list("abcde"), copies=True)
    result = copying([left, right])
    np.testing.assert_allclose(result, reference, rtol=1e-12, atol=1e-12)
    packed_left, packed_right = _only_product(matrix_products)
    assert _blas_takes(packed_left) and _blas_takes(packed_right)
    # stacked over the 16 (c, e) pairs only, the rows a, b merged
    assert packed_left.shape == (4, 4, 4, 96) and packed_right.shape == (4, 4, 96, 96)


def test_executor_repacks_a_skinny_product_that_streams_a_large_operand(
    matrix_products: list[object],
) -> None:
    # aeb,cde->abcd with the result laid out b, d, c, a (its reader merges
    # c then a): the layout makes a a stack axis broadcasting the right
    # operand and b the only row, so BLAS streams the right operand's
    # 2.25 MiB once per row of 4 (the benchmark's @v169)
    rng = np.random.default_rng(6)
    left = rng.standard_normal((4, 96, 4))
    right = rng.standard_normal((48, 64, 96))
    node = list("abcde")
    assert right[0].nbytes * 48 >= STREAMED_MATRIX
    reference = np.einsum("aeb,cde->abcd", left, right)
    factors = [list("aeb"), list("cde")]
    plain = Contraction("v", node, factors, list("abcd"), merged=(2, 0))
    np.testing.assert_allclose(plain([left, right]), reference, rtol=1e-12, atol=1e-12)
    plain_left, plain_right = _only_product(matrix_products)
    assert min(plain_left.shape[-2], plain_right.shape[-1]) == 4
    assert np.broadcast_shapes(plain_left.shape[:-2], plain_right.shape[:-2]) == (4,)
    matrix_products.clear()
    copying = Contraction("v", node, factors, list("abcd"), copies=True, merged=(2, 0))
    result = copying([left, right])
    np.testing.assert_allclose(result, reference, rtol=1e-12, atol=1e-12)
    packed_left, packed_right = _only_product(matrix_products)
    # one product of all rows (a, b) by all columns (c, d); the large
    # operand read as it lies, not copied
    assert packed_left.shape == (16, 96) and packed_right.shape == (96, 48 * 64)
    assert np.shares_memory(packed_right, right)


def test_add_scaled_runs_in_the_memory_order_of_the_array_added(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a piece laid out with its block axes outermost, added into a residual
    # block whose innermost axes they are: both are taken in the piece's
    # memory order (views), so the add reads the piece along its memory
    residual = np.zeros((16, 16, 8, 8))
    target = residual[:, :, 0:4, 4:8]
    piece = np.random.default_rng(5).standard_normal((4, 4, 16, 16))  # j i a b
    array = piece.transpose(2, 3, 1, 0)  # a b i j, as the residual
    ordered_target, ordered_array = _in_memory_order(target, array)
    assert ordered_array.flags.c_contiguous
    assert np.shares_memory(ordered_target, residual)
    assert ordered_target.shape == ordered_array.shape == (4, 4, 16, 16)
    np.testing.assert_array_equal(ordered_array, piece)
    ordered: list[bool] = []

    def spy(target: np.ndarray, array: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        result = _in_memory_order(target, array)
        ordered.append(result[1].flags.c_contiguous)
        return result

    monkeypatch.setattr(contraction_module, "_in_memory_order", spy)
    add_scaled(target, array, -2.5)
    assert ordered == [True]  # the add ran on the ordered views
    np.testing.assert_allclose(residual[:, :, 0:4, 4:8], -2.5 * array, rtol=1e-15)
    assert not residual[:, :, 4:8].any() and not residual[:, :, :, 0:4].any()
