"""The totals step of closing names the total whose decision broke another constraint.

At closing, each pending element total closes its open rows but the last to
no axes and puts its elements on the last (or, with unknown dims, closes the
last as well), then is checked once more. When one of those decisions breaks
another constraint, the error is that constraint's and ends with ``found
while solving`` the total (``Solver.fail``), as for a leaf's decisions
(``test_shapes_closing_rules.py``).
"""

from __future__ import annotations

import pytest

from axisflow.shapes import (
    DeferredCount,
    DimIneq,
    Kind,
    Origin,
    Row,
    RowEq,
    Session,
    ShapeError,
    Side,
    Size,
    TotalElems,
)


def origin(name: str) -> Origin:
    return Origin(name, name[0], lhs=Side("p", Kind.OUTPUT), rhs=Side("q", Kind.OUTPUT))


ALPHA, BETA, GAMMA = origin("alpha"), origin("beta"), origin("gamma")


def test_a_row_a_total_closes_to_no_axes_breaking_another_total_names_it() -> None:
    """``alpha``: ``r1`` and ``r2`` hold 6 elements; ``beta``: ``r1`` holds 4.
    Closing ``alpha`` gives ``r1`` (not its last open row) no axes, which
    leaves ``beta`` 4 elements on no axes."""
    s = Session()
    r1, r2 = s.fresh_row_var(), s.fresh_row_var()
    s.add(TotalElems((Row((), r1), Row((), r2)), 6, ALPHA))
    s.add(TotalElems((Row((), r1),), 4, BETA))
    with pytest.raises(ShapeError) as info:
        s.close()
    assert str(info.value) == (
        "beta 'b': the axes [] cannot hold 4 elements (their known sizes multiply "
        "to 1) (found while solving alpha 'a')"
    )


def test_a_last_row_a_total_closes_over_an_unknown_dim_names_it() -> None:
    """``alpha``: ``[d, ...r]`` holds 6 elements with ``d`` unknown, so its
    last open row ``r`` gets no axes (the elements go to ``d``); ``beta``:
    ``r`` holds 4, which no axes cannot."""
    s = Session()
    d, rest = s.fresh_dim_var(), s.fresh_row_var()
    s.add(TotalElems((Row((d,), rest),), 6, ALPHA))
    s.add(TotalElems((Row((), rest),), 4, BETA))
    with pytest.raises(ShapeError) as info:
        s.close()
    assert str(info.value) == (
        "beta 'b': the axes [] cannot hold 4 elements (their known sizes multiply "
        "to 1) (found while solving alpha 'a')"
    )


def test_a_dim_a_deferred_total_sizes_breaking_a_bound_names_the_total() -> None:
    """A leaf's closed row ``[d]`` with ``3 ⊑ d`` (``gamma``) and a total of a
    deferred count (``alpha``) over ``[d]`` that resolves to 6 at closing:
    the total sizes ``d`` 6, which 3 does not broadcast to. No row of the
    total is open, so the totals step commits nothing before the check."""
    s = Session()
    x, d = s.leaf("x"), s.fresh_dim_var()
    s.add(RowEq(x.shape.row(Kind.OUTPUT), Row((d,)), GAMMA))
    s.add(DimIneq(Size(3), d, GAMMA))
    s.add(TotalElems((Row((d,)),), DeferredCount("six", lambda: 6), ALPHA))
    with pytest.raises(ShapeError) as info:
        s.close()
    assert str(info.value) == (
        "gamma 'g': output axes disagree: q.output has size 6, which does not "
        "broadcast to size 3 of p.output; only size 1 broadcasts (found while "
        "solving alpha 'a')"
    )
