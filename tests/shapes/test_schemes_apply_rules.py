"""Applying a scheme (``scheme/apply.py``): details a mutation review found
unchecked, each pinned to an exact outcome."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from axisflow.shapes import (
    Kind,
    Origin,
    RowEq,
    Sabotage,
    Session,
    ShapeError,
    Tensor,
    scheme,
)
from axisflow.shapes.constraints import PaddedAxis
from axisflow.shapes.terms import Row, Size
from tests.shapes.test_schemes import apply, traced
from tests.shapes.test_schemes_trace_rules import padded


@pytest.mark.parametrize("closed", [False, True])
def test_check_relates_a_capture_input_to_its_references_state(closed: bool) -> None:
    """The reference is bound to a variable of size 5 (before a closing) or
    to the size 5 (after one): check predicts that an application binding
    its label to 3 fails, with the capture's sides, and binds nothing."""
    s = Session()
    ref = s.dim_ref("h")
    sc = traced(s, lambda xs: [s.einsum("y", "h=>h", xs[0], capture_dims=[ref])])
    s.einsum("e", "h=>h", s.leaf("w", "5"), capture_dims=[ref])
    if closed:
        s.close()
    state = (ref.var, ref.size)
    with pytest.raises(ShapeError) as info:
        scheme.check(sc, application="probe", args=[s.leaf("x", "3")])
    assert str(info.value) == (
        "applying the shape scheme f to probe: einsum 'y' of x (spec 'h=>h') in "
        "shape scheme f at application 'probe': sizes disagree: label 'h' has size "
        "3 but capture reference 'h' has size 5"
    )
    assert [o.describe() for o in info.value.origins] == [
        "einsum 'y' of x (spec 'h=>h') in shape scheme f at application 'probe'"
    ]
    scheme.check(sc, application="probe", args=[s.leaf("z", "5")])
    assert (ref.var, ref.size) == state


ROW_CAPTURE = "..h..|j=>..h..|j"
DIM_CAPTURE = "h=>h"


@pytest.mark.parametrize(
    ("inside", "outside", "good", "bad", "message"),
    [
        (
            ROW_CAPTURE,
            ROW_CAPTURE,
            "2,3|5",
            "4|5",
            "sizes disagree: capture reference 'h' [2, 3] and row variable 'h' [4] "
            "have different numbers of axes",
        ),
        (
            ROW_CAPTURE,
            DIM_CAPTURE,
            "2,3|5",
            "4|5",
            "the axes [4] cannot hold 6 elements (their known sizes multiply to 4)",
        ),
        (
            DIM_CAPTURE,
            ROW_CAPTURE,
            "6",
            "4",
            "the axes [2, 3] cannot hold 4 elements (their known sizes multiply to 6)",
        ),
    ],
    ids=["row-to-row", "row-to-dim", "dim-to-row"],
)
def test_check_relates_a_row_or_dim_capture_to_a_reference_bound_either_way(
    inside: str, outside: str, good: str, bad: str, message: str
) -> None:
    """The reference is bound outside the scheme to a row (``[2, 3]``) or a
    dim (6): check relates the application's captured row or label to it, a
    row to a row by an equality, a row and a dim by their element count."""
    s = Session()
    ref = s.dim_ref("h")
    sc = traced(s, lambda xs: [s.einsum("y", inside, xs[0], capture_dims=[ref])])
    w = s.leaf("w", "2,3|5" if outside == ROW_CAPTURE else "6")
    s.einsum("e", outside, w, capture_dims=[ref])
    state = (ref.var, ref.row, ref.size)
    scheme.check(sc, application="probe", args=[s.leaf("g", good)])
    with pytest.raises(ShapeError) as info:
        scheme.check(sc, application="probe", args=[s.leaf("b", bad)])
    where = (
        f"einsum 'y' of b (spec '{inside}') in shape scheme f at application 'probe'"
    )
    assert str(info.value) == (
        f"applying the shape scheme f to probe: {where}: {message}"
    )
    assert [o.describe() for o in info.value.origins] == [where]
    assert (ref.var, ref.row, ref.size) == state


def test_applications_with_the_same_presolved_values_share_no_open_row() -> None:
    """The scheme presolves its internal ``g`` (a pointwise of an internal
    leaf), so two applications on open arguments share one set of presolved
    values; the argument's output row ``[i]`` is still renamed afresh for
    each: the two arguments close to their own sizes."""
    s = Session()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        s.pointwise("g", s.leaf("c", "2"))
        return [s.einsum("y", "i=>i", xs[0])]

    sc = traced(s, body)
    xs = [s.fresh("x0"), s.fresh("x1")]
    ys = [apply(sc, f"c{i}", x)[0] for i, x in enumerate(xs)]
    for x, n in zip(xs, (3, 4), strict=True):
        row = Row((Size(n),))
        s.add(RowEq(x.shape.row(Kind.OUTPUT), row, Origin("tie", x.name)))
    s.close()
    assert [y.shape.dims() for y in ys] == [((), (), (3,)), ((), (), (4,))]


def test_no_internal_rows_leaves_a_padded_internal_shape_unregistered() -> None:
    """The body pads an internal tensor's axis (``relu``): sabotaged, the
    application registers none of its internal shapes, the padded one
    included (the padding is written, the shape is not closed)."""
    s = Session()
    kernel = s.param("kernel", "3")
    sc = traced(s, lambda xs: padded(s, xs[0], kernel))
    applied = scheme.instantiate(
        sc,
        application="c",
        args=[s.leaf("x", "2|8")],
        results=[s.fresh("y")],
        sabotage=Sabotage.NO_INTERNAL_ROWS,
    )
    assert [s.is_registered(shape) for shape in applied.internal] == [False] * 3


def test_a_padded_axis_is_written_with_its_convolutions_origin() -> None:
    """Each padded axis the application writes names the convolution that
    pads it, stamped with the scheme and the application."""
    s = Session(keep_log=True)
    kernel = s.param("kernel", "3")
    sc = traced(s, lambda xs: padded(s, xs[0], kernel))
    start = len(s.log)
    scheme.instantiate(
        sc, application="c", args=[s.leaf("x", "2|8")], results=[s.fresh("y")]
    )
    pads = [c for c in s.log[start:] if isinstance(c, PaddedAxis)]
    assert [c.origin.describe() for c in pads] == [
        "einsum 'conv' of x, kernel (spec '... | 2*o=+k; k => ... | o') in shape "
        "scheme f at application 'c'",
        "einsum 'again' of relu, kernel (spec '... | o=+k; k => ... | o') in shape "
        "scheme f at application 'c'",
    ]


@pytest.mark.parametrize(
    ("inside", "arg"), [(ROW_CAPTURE, "2,3|5"), (DIM_CAPTURE, "6")], ids=["row", "dim"]
)
def test_check_relates_a_capture_to_a_reference_bound_to_an_open_row(
    inside: str, arg: str
) -> None:
    """The reference is bound outside the scheme to a row still open: check
    relates the captured row (an equality) or label (an element count) to it,
    which nothing contradicts, and leaves the session as it found it."""
    s = Session()
    ref = s.dim_ref("h")
    sc = traced(s, lambda xs: [s.einsum("y", inside, xs[0], capture_dims=[ref])])
    s.einsum("e", ROW_CAPTURE, s.leaf("w", "...|5"), capture_dims=[ref])
    assert ref.row is not None and s.solver.norm_row(Row((), ref.row)).dims == ()
    g = s.leaf("g", arg)
    before = s.state()
    scheme.check(sc, application="probe", args=[g])
    assert s.state() == before
