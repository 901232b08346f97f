"""The refusals an application makes before writing anything, word for word.

A capture reference discarded by a rewind and a stale scheme depending on
several loose variables: ``instantiate`` and ``check`` refuse with the
scheme's and the application's prefix, and leave the session as it was.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from axisflow.shapes import DimEq, Origin, Session, ShapeError, Tensor, scheme
from tests.shapes.test_schemes import traced


def refusals(sc: scheme.Scheme, arg: Tensor) -> list[str]:
    """What ``instantiate`` and ``check`` say; checks that nothing was written."""
    s = sc.session
    result = s.fresh("q")
    before, counter = s.state(), s.var_mark()
    said = []
    with pytest.raises(ShapeError) as info:
        scheme.instantiate(sc, application="call", args=[arg], results=[result])
    said.append(str(info.value))
    with pytest.raises(ShapeError) as info:
        scheme.check(sc, application="call", args=[arg])
    said.append(str(info.value))
    assert s.state() == before
    assert s.var_mark() == counter
    assert not s.tainted
    return said


def test_a_capture_reference_discarded_by_a_rewind_is_refused() -> None:
    s = Session()
    with s.rewind():
        ref = s.dim_ref("h")
        sc = traced(s, lambda xs: [s.einsum("y", "h=>h", xs[0], capture_dims=[ref])])
    assert ref.discarded and sc.anchors == ()
    x = s.leaf("x", "3")
    message = (
        "applying the shape scheme f to call: the capture reference 'h' was "
        "discarded by a rewind; trace the function again"
    )
    assert refusals(sc, x) == [message, message]


def test_a_stale_scheme_names_every_loose_variable_in_order() -> None:
    """Two open variables of the session, tied to the body's two dims."""
    s = Session()
    first, second = s.fresh_dim_var(), s.fresh_dim_var()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        y = s.einsum("y", "ij=>ij", xs[0])
        i, j = y.shape.current()[2].dims
        s.add(DimEq(i, first, Origin("tie", "y")))
        s.add(DimEq(j, second, Origin("tie", "y")))
        return [y]

    sc = traced(s, body)
    assert [item.old for item in sc.loose] == [first, second]
    s.close()
    message = (
        "applying the shape scheme f to call: the scheme is stale: the session was "
        f"closed since the trace and the scheme depends on open state no anchored "
        f"shape holds ({first!r}, {second!r}); trace the function again"
    )
    assert refusals(sc, s.leaf("x", "2,3")) == [message, message]
    assert (repr(first), repr(second)) == ("d0", "d1")
