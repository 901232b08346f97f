"""What an application stamps on the scheme's origins: names, scheme, application, site.

The scheme's own origins are restamped per application: the tracer names
become the arguments' names, the scheme and application are added, and the
site is the application's when it gives one, else the site the traced
operation carried.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from axisflow.shapes import (
    Kind,
    Origin,
    Session,
    ShapeError,
    Side,
    Tensor,
    scheme,
)
from tests.shapes.test_schemes import apply, mlp_layer, traced

TRACED_SITE = object()
CALL_SITE = object()


def broadcast_failure(site: object) -> Origin:
    """The origin of a traced pointwise that the call's argument contradicts."""
    s = Session()
    sc = traced(
        s, lambda xs: [s.pointwise("y", xs[0], s.leaf("c", "3"), site=TRACED_SITE)]
    )
    with pytest.raises(ShapeError) as info:
        scheme.instantiate(
            sc,
            application="call",
            args=[s.leaf("x", "4")],
            results=[s.fresh("q")],
            site=site,
        )
    assert str(info.value) == (
        "applying the shape scheme f to call: pointwise 'y' of x, c in shape scheme "
        "f at application 'call': output axes disagree: x.output has size 4, which "
        "does not broadcast to size 3 of y.output; only size 1 broadcasts"
    )
    (origin,) = info.value.origins
    assert origin == Origin(
        "pointwise",
        "y",
        ("x", "c"),
        Side("y", Kind.OUTPUT),
        Side("x", Kind.OUTPUT),
        None,
        "f",
        "call",
    )
    return origin


def test_an_application_without_a_site_keeps_the_traced_operations_site() -> None:
    assert broadcast_failure(None).site is TRACED_SITE


def test_an_application_site_replaces_the_traced_operations_site() -> None:
    assert broadcast_failure(CALL_SITE).site is CALL_SITE


def test_a_nested_applications_origins_keep_their_own_path() -> None:
    """The outer scheme's body applies the layer scheme at ``inner``: the
    facts of that application are stamped ``top > inner``, the outer body's
    own ``top``, whichever of them the application writes first."""
    s = Session(keep_log=True)
    _, layer = mlp_layer(s)

    def two_layers(xs: Sequence[Tensor]) -> list[Tensor]:
        hidden = s.fresh("hidden")
        scheme.instantiate(layer, application="inner", args=[xs[0]], results=[hidden])
        return [s.pointwise("out", hidden, s.leaf("c", "->4"))]

    outer = traced(s, two_layers, label="outer")
    start = len(s.log)
    apply(outer, "top", s.leaf("x", "6|->3"))
    written = [
        (c.origin.operation, c.origin.tensor, c.origin.application)
        for c in s.log[start:]
        if c.origin.operation in ("compose", "pointwise")
    ]
    assert sorted(set(written)) == [
        ("compose", "h", "top > inner"),
        ("pointwise", "out", "top"),
        ("pointwise", "y", "top > inner"),
    ]
    # The outer body's pointwise is written between the inner facts (y's
    # rows are tied to the result: the inequality relating its template's
    # tail to h's stays).
    assert [tensor for _, tensor, _ in written] == [
        "h",
        "h",
        "out",
        "out",
        "y",
        "y",
        "y",
        "out",
    ]
