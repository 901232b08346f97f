"""The boundary equalities of a scheme application, and the origins they carry.

Instantiating relates each traced argument and result row to the call's
shape: a contradiction there names the boundary (``argument``/``result``,
the tracer or traced result, the call's shape, the two sides with their axis
kind, the position) and the scheme and application, and hands the
application's ``site`` to tools. Each test pins the exact message and origin.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from axisflow.shapes import Kind, Origin, Session, ShapeError, Side, Tensor, scheme
from tests.shapes.test_schemes import traced

SITE = object()
"""An opaque site handle, as the IR pass passes the operation."""


def shared_dim(s: Session) -> scheme.Scheme:
    """``y = einsum("i;i=>i", a0, a1)``: both arguments' output rows are one dim."""

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        return [s.einsum("y", "i;i=>i", xs[0], xs[1])]

    return traced(s, body, arity=2)


def refusal(
    sc: scheme.Scheme,
    args: Sequence[Tensor],
    results: Sequence[Tensor],
    site: object = None,
) -> ShapeError:
    with pytest.raises(ShapeError) as info:
        scheme.instantiate(
            sc, application="call", args=args, results=results, site=site
        )
    return info.value


def test_an_argument_boundary_names_the_tracer_the_shape_and_the_position() -> None:
    """The second argument's output row meets the first one's size."""
    s = Session()
    sc = shared_dim(s)
    error = refusal(sc, [s.leaf("x", "3"), s.leaf("z", "4")], [s.fresh("q")], SITE)
    assert str(error) == (
        "applying the shape scheme f to call: argument 'a1' of z (argument 1) in "
        "shape scheme f at application 'call': output axes disagree: a1.output has "
        "size 3 but z.output has size 4"
    )
    (origin,) = error.origins
    assert origin == Origin(
        "argument",
        "a1",
        ("z",),
        Side("a1", Kind.OUTPUT),
        Side("z", Kind.OUTPUT),
        "argument 1",
        "f",
        "call",
    )
    assert origin.site is SITE


def test_an_argument_boundary_on_the_batch_row_names_the_batch_sides() -> None:
    """The tracer's batch row is empty; the call's argument has a batch axis."""
    s = Session()
    sc = traced(s, lambda xs: [s.einsum("y", "i=>i", xs[0])])
    error = refusal(sc, [s.leaf("x", "3|4->5")], [s.fresh("q")])
    assert str(error) == (
        "applying the shape scheme f to call: argument 'a0' of x (argument 0) in "
        "shape scheme f at application 'call': batch axes disagree: x.batch [3] and "
        "a0.batch [] have different numbers of axes"
    )
    (origin,) = error.origins
    assert origin == Origin(
        "argument",
        "a0",
        ("x",),
        Side("x", Kind.BATCH),  # the solver names the longer row first
        Side("a0", Kind.BATCH),
        "argument 0",
        "f",
        "call",
    )
    assert origin.site is None  # no site given: none made up


def test_a_result_boundary_names_the_traced_result_the_shape_and_the_position() -> None:
    s = Session()
    sc = traced(s, lambda xs: [s.pointwise("y", xs[0], s.leaf("c", "3"))])
    error = refusal(sc, [s.leaf("x", "3")], [s.leaf("r", "2")], SITE)
    assert str(error) == (
        "applying the shape scheme f to call: result 'y' of r (result 0) in shape "
        "scheme f at application 'call': output axes disagree: y.output has size 3 "
        "but r.output has size 2"
    )
    (origin,) = error.origins
    assert origin == Origin(
        "result",
        "y",
        ("r",),
        Side("y", Kind.OUTPUT),
        Side("r", Kind.OUTPUT),
        "result 0",
        "f",
        "call",
    )
    assert origin.site is SITE


def test_check_names_an_argument_boundary_as_instantiate_does() -> None:
    """``check`` has no results and no site: the argument's origin is the same."""
    s = Session()
    sc = shared_dim(s)
    with pytest.raises(ShapeError) as info:
        scheme.check(sc, application="call", args=[s.leaf("x", "3"), s.leaf("z", "4")])
    assert str(info.value) == (
        "applying the shape scheme f to call: argument 'a1' of z (argument 1) in "
        "shape scheme f at application 'call': output axes disagree: a1.output has "
        "size 3 but z.output has size 4"
    )
    (origin,) = info.value.origins
    assert origin.detail == "argument 1" and origin.site is None
