"""Compiled contractions and the evaluator's memory guard."""

from __future__ import annotations

import numpy as np
import pytest

from axisflow.scheduling.contraction import (
    Contraction,
    EvaluationMemoryError,
    MemoryGuard,
)


@pytest.mark.parametrize("size", [2, 40])  # direct einsum, then a cached path
def test_contraction_matches_einsum_and_caches_per_shape(size: int) -> None:
    rng = np.random.default_rng(1)
    a = rng.standard_normal((size, 3, size))
    b = rng.standard_normal((size, 3, 4))
    # node modes x y z w: result (x, w), y summed, z Hadamard then summed
    contraction = Contraction(
        "v", ["x", "w", "y", "z"], [["x", "y", "z"], ["z", "y", "w"]], ["x", "w"]
    )
    expected = np.einsum("xyz,zyw->xw", a, b)
    np.testing.assert_allclose(contraction([a, b]), expected, rtol=1e-12)
    np.testing.assert_allclose(contraction([a, b]), expected, rtol=1e-12)
    assert len(contraction.paths) == 1
    assert (contraction.paths[(a.shape, b.shape)] is None) == (size == 2)


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
