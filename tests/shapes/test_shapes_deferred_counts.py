"""A deferred element count must resolve to a positive integer at closing
(issue 18: resolving to 0 or to a bool went unnoticed)."""

from __future__ import annotations

import pytest

from axisflow.shapes import DeferredCount, Session, ShapeError


def close_with(resolve: object) -> Session:
    s = Session()
    x = s.leaf("x", "...->3")
    # A callback breaking its int contract, as user code may.
    s.total_elems(x, DeferredCount("file bytes / precision", lambda: resolve))  # type: ignore[arg-type]
    s.close()
    return s


@pytest.mark.parametrize("bad", [0, -4, True, False, 6.0, "6", None])
def test_a_deferred_count_that_is_not_a_positive_integer_is_refused(
    bad: object,
) -> None:
    with pytest.raises(ShapeError) as info:
        close_with(bad)
    assert f"resolved to {bad!r}, not a positive integer" in str(info.value)
    assert "file bytes / precision" in str(info.value)


def test_a_failing_deferred_count_is_reported_with_its_error() -> None:
    def broken() -> int:
        raise OSError("no such file")

    s = Session()
    x = s.leaf("x", "...->3")
    s.total_elems(x, DeferredCount("file bytes / precision", broken))
    with pytest.raises(ShapeError) as info:
        s.close()
    assert "could not be resolved: no such file" in str(info.value)


def test_a_deferred_count_of_one_is_accepted() -> None:
    s = Session()
    x = s.leaf("x", "...->1")
    s.total_elems(x, DeferredCount("one", lambda: 1))
    s.close()
    assert x.shape.dims() == ((), (), (1,))
