"""The ``safe_to_guess`` mark an application gives a result-side row (step 6
of *instantiate* in docs/shape-schemes.md).

Re-running the body relates an operation's fresh result row to an argument
or anchor row as it is at the call; when that row has axes its open tail
lacks in the trace, Stage 1 gives the result row a template whose tail is
``safe_to_guess``, and unifying the result row with a parameter's row
passes the mark on. The scheme keeps ``[...x, axes] ⊒ [...tail]`` instead,
so the application marks ``x`` where the actual row has between 1 and
``axes`` axes more than the scheme's row writes. Each test pins which marks
the application writes (``Session(keep_log=True)``) and the closed shapes,
and checks both against re-evaluating the body.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from axisflow.shapes import (
    Kind,
    Mark,
    Origin,
    PolicyMark,
    RowEq,
    Session,
    ShapeError,
    Tensor,
    scheme,
)
from axisflow.shapes.scheme.read import build_scheme
from axisflow.shapes.scheme.text import parse_scheme_text
from axisflow.shapes.terms import Row, Size
from tests.shapes.test_schemes import traced

HIDDEN = "You forgot to specify the hidden dimension(s) of parameter 'w'"

Body = Callable[[Session, Tensor, Sequence[Tensor]], list[Tensor]]


def through_parameter(s: Session, w: Tensor, xs: Sequence[Tensor]) -> list[Tensor]:
    """``v = pointwise(a0)``; an einsum then unifies v's batch row with w's."""
    v = s.pointwise("v", xs[0])
    return [s.einsum("e", "...|i;...|i=>...|i", v, w)]


def through_parameter_after_an_axis(
    s: Session, w: Tensor, xs: Sequence[Tensor]
) -> list[Tensor]:
    """As :func:`through_parameter`, but an einsum first writes one axis
    behind the argument's batch tail (``[...t, i]`` in the scheme)."""
    s.einsum("u", "...,i|j=>...,i|j", xs[0])
    return through_parameter(s, w, xs)


def safe_marks_on_tail(s: Session, start: int, row: Row) -> int:
    """How many ``safe_to_guess`` marks logged since ``start`` are on a row
    whose open tail is ``row``'s (the scheme's renamed variable for it, tied
    by an equality, counts, and so does one Stage 1 has templated meanwhile)."""
    norm = s.solver.norm_row
    tail = norm(row).var
    assert tail is not None
    return sum(
        1
        for c in s.log[start:]
        if isinstance(c, PolicyMark)
        and c.mark is Mark.SAFE_TO_GUESS
        and norm(c.row).var == tail
    )


def marks_batch_tail(s: Session, start: int, w: Tensor) -> bool:
    """Whether a ``safe_to_guess`` mark logged since ``start`` is on w's batch tail."""
    return safe_marks_on_tail(s, start, w.shape.row(Kind.BATCH)) > 0


def closed(s: Session, w: Tensor, y: Tensor) -> object:
    try:
        s.close()
    except ShapeError as error:
        return str(error)[: len(HIDDEN)]
    return (w.shape.dims(), y.shape.dims())


def re_evaluated(body: Body, w_spec: str, x_spec: str) -> object:
    s = Session()
    w = s.param("w", w_spec)
    y = body(s, w, [s.leaf("x", x_spec)])[0]
    return closed(s, w, y)


def applied(
    body: Body, w_spec: str, x_spec: str, sc_of: Callable[[Session, Tensor], object]
) -> tuple[bool, object]:
    """Whether the application marks w's batch tail ``safe_to_guess``, and
    the closed shapes of w and the result (or the closing's error)."""
    s = Session(keep_log=True)
    w = s.param("w", w_spec)
    sc = sc_of(s, w)
    assert isinstance(sc, scheme.Scheme)
    x, y = s.leaf("x", x_spec), s.fresh("y")
    start = len(s.log)
    scheme.instantiate(sc, application="c", args=[x], results=[y])
    return marks_batch_tail(s, start, w), closed(s, w, y)


def traced_with(body: Body) -> Callable[[Session, Tensor], object]:
    return lambda s, w: traced(s, lambda xs: body(s, w, xs))


@pytest.mark.parametrize(
    ("x_spec", "marked", "outcome"),
    [
        # No axis more than the tracer's bare row: no template, no mark.
        ("|->2", False, HIDDEN),
        ("...|->2", False, HIDDEN),
        # One axis more, as many as v's batch row has beyond the operand's.
        ("3|->2", True, (((3,), (), (2,)), ((3,), (), (2,)))),
        ("...,3|->2", True, (((3,), (), (2,)), ((3,), (), (2,)))),
        # Two axes more: re-running templates w's tail itself.
        ("3,3|->2", False, (((3, 3), (), (2,)), ((3, 3), (), (2,)))),
    ],
)
def test_a_parameter_unified_with_a_result_row_takes_the_mark_from_one_to_axes_more(
    x_spec: str, marked: bool, outcome: object
) -> None:
    """The scheme has ``[...w, 3] ⊒ [...t]`` (one axis beyond the operand's)."""
    w_spec = "...,3|->2"
    got = applied(through_parameter, w_spec, x_spec, traced_with(through_parameter))
    assert got == (marked, outcome)
    assert re_evaluated(through_parameter, w_spec, x_spec) == outcome


@pytest.mark.parametrize(
    ("x_spec", "marked", "outcome"),
    [
        # One and two axes more than the scheme's row ``[...t, i]`` writes.
        ("3,3|->2", True, (((3, 3, 3), (), (2,)), ((3, 3, 3), (), (2,)))),
        ("3,3,3|->2", True, (((3, 3, 3), (), (2,)), ((3, 3, 3), (), (2,)))),
        # Three more: more than the two axes of ``[...w, 3, 3] ⊒ [...t]``;
        # the trace templated v's row from ``[...t, i]`` (an axis), so w's
        # tail holds the scheme's own mark, which re-running gives it too.
        ("3,3,3,3|->2", True, (((3, 3, 3, 3), (), (2,)), ((3, 3, 3, 3), (), (2,)))),
    ],
)
def test_the_axes_counted_are_those_beyond_the_schemes_own_row(
    x_spec: str, marked: bool, outcome: object
) -> None:
    """The argument's batch row is ``[...t, i]`` in the scheme: the extra
    axes of the actual row are counted beyond that one axis."""
    w_spec = "...,3,3,3|->2"
    body = through_parameter_after_an_axis
    assert applied(body, w_spec, x_spec, traced_with(body)) == (marked, outcome)
    assert re_evaluated(body, w_spec, x_spec) == outcome


def folded(s: Session, w: Tensor, *, without_mark: bool = False) -> scheme.Scheme:
    """The scheme of :func:`through_parameter_after_an_axis` in text form,
    with its dim inequality folded into the row inequality: ``[...w, 3, 3, 3]
    ⊒ [...t, i]``, which has two axes beyond its operand's, as the traced
    ``[...w, 3, 3] ⊒ [...t]`` and ``3 ⊒ i`` together. ``without_mark``: also
    without the ``safe_to_guess`` mark the trace gave w's tail."""
    sc = traced(s, lambda xs: through_parameter_after_an_axis(s, w, xs))
    lines = sc.to_lines()
    if without_mark:
        lines.remove("mark safe_to_guess r2")
    (dim_ineq,) = [line for line in lines if line.startswith("dim_ineq 3 <= d1 ")]
    (ineq,) = [line for line in lines if line.startswith("ineq ")]
    assert ineq.startswith("ineq [...r2, 3, 3] <= [...r1] "), lines
    text = [line for line in lines if line != dim_ineq]
    text[text.index(ineq)] = ineq.replace(
        "ineq [...r2, 3, 3] <= [...r1] ", "ineq [...r2, 3, 3, 3] <= [...r1, d1] "
    )
    return build_scheme(
        parse_scheme_text(text),
        session=s,
        label="f",
        anchors=[a.shape for a in sc.anchors],
        ref=s.dim_ref,
    )


@pytest.mark.parametrize(
    ("x_spec", "marked"),
    [("3,3|->2", True), ("3,3,3|->2", True), ("3,3,3,3|->2", True)],
)
def test_an_inequality_whose_operand_has_axes_counts_the_axes_beyond_them(
    x_spec: str, marked: bool
) -> None:
    """A scheme read from text may write the operand's axis in the row
    inequality: the result side then has two axes beyond it (not four), and
    the application marks w exactly as the traced scheme does."""
    w_spec = "...,3,3,3|->2"
    got = applied(through_parameter_after_an_axis, w_spec, x_spec, folded)
    assert got == applied(
        through_parameter_after_an_axis,
        w_spec,
        x_spec,
        traced_with(through_parameter_after_an_axis),
    )
    assert got[0] is marked


def through_anchor(
    s: Session, w: Tensor, u: Tensor, xs: Sequence[Tensor]
) -> list[Tensor]:
    """``v = pointwise(u)`` of an anchored leaf ``u``, unified with w's batch row."""
    v = s.pointwise("v", u)
    return [s.einsum("e", "...|i;...|i=>...|i", v, w), s.pointwise("z", xs[0])]


def tie_batch(s: Session, u: Tensor, sizes: tuple[int, ...]) -> None:
    row = Row(tuple(Size(n) for n in sizes))
    s.add(RowEq(u.shape.row(Kind.BATCH), row, Origin("tie", "u")))


@pytest.mark.parametrize(
    ("sizes", "marked", "outcome"),
    [
        ((), False, HIDDEN),
        ((3,), True, (((3,), (), (2,)), ((3,), (), (2,)))),
        ((3, 3), False, (((3, 3), (), (2,)), ((3, 3), (), (2,)))),
    ],
)
def test_an_anchor_row_given_axes_after_the_trace_marks_as_an_argument_does(
    sizes: tuple[int, ...], marked: bool, outcome: object
) -> None:
    """The anchored leaf u's batch row is open at the trace and tied to
    ``sizes`` before the application: its axes beyond the trace's bare row
    decide the mark, as an argument's do."""
    w_spec = "...,3|->2"
    s = Session(keep_log=True)
    w, u = s.param("w", w_spec), s.leaf("u", "...|->2")
    sc = traced(s, lambda xs: through_anchor(s, w, u, xs))
    tie_batch(s, u, sizes)
    ys = [s.fresh("y0"), s.fresh("y1")]
    start = len(s.log)
    scheme.instantiate(sc, application="c", args=[s.leaf("x", "2")], results=ys)
    assert (marks_batch_tail(s, start, w), closed(s, w, ys[0])) == (
        marked,
        outcome,
    )
    r = Session()
    rw, ru = r.param("w", w_spec), r.leaf("u", "...|->2")
    tie_batch(r, ru, sizes)
    ry = through_anchor(r, rw, ru, [r.leaf("x", "2")])[0]
    assert closed(r, rw, ry) == outcome


def constant_template_into_argument(s: Session, xs: Sequence[Tensor]) -> list[Tensor]:
    """``y = pointwise(c)`` of a constant ``->3`` (a template on y's fresh
    output row), then y's output row equated with the argument's."""
    y = s.pointwise("y", s.leaf("c", "->3"))
    s.add(
        RowEq(
            y.shape.row(Kind.OUTPUT), xs[0].shape.row(Kind.OUTPUT), Origin("tie", "y")
        )
    )
    return [y]


def test_an_argument_tail_keeps_the_mark_of_a_constants_template() -> None:
    """The argument's output tail holds the mark of y's template, which
    re-running makes from the constant whatever the argument is: applied to
    a parameter whose output row already has the axis, the mark stays and
    closing guesses the parameter's tail, as re-evaluation does."""

    def outcome(through_scheme: bool) -> object:
        s = Session()
        sc = traced(s, lambda xs: constant_template_into_argument(s, xs))
        x = s.param("x", "->...,3")
        if through_scheme:
            scheme.instantiate(sc, application="c", args=[x], results=[s.fresh("y")])
        else:
            constant_template_into_argument(s, [x])
        try:
            s.close()
        except ShapeError as error:
            return str(error)
        return x.shape.dims()

    assert outcome(through_scheme=False) == ((), (), (3,))
    assert outcome(through_scheme=True) == outcome(through_scheme=False)


def test_a_compose_templated_argument_row_loses_its_mark_whatever_its_other_marks() -> (
    None
):
    """The tracer's input row took a template from w's output row (a
    compose's left operand), so its tail's ``safe_to_guess`` is not written
    on an argument whose input row already has the axis: for the traced
    scheme, and for the same scheme read from text without the tail's other
    mark (``used_in_spec_or_compose``)."""

    def written_on_input_tail(without_other_mark: bool) -> bool:
        s = Session(keep_log=True)
        w = s.param("w", "...,1|...,1->...,1")
        sc = traced(s, lambda xs: [s.compose("v", xs[0], w)])
        if without_other_mark:
            lines = sc.to_lines()
            tail = "r2"
            assert f"mark safe_to_guess {tail}" in lines
            lines.remove(f"mark used_in_spec_or_compose {tail}")
            sc = build_scheme(
                parse_scheme_text(lines),
                session=s,
                label="f",
                anchors=[w.shape],
                ref=s.dim_ref,
            )
        x = s.leaf("x", "...|...,1->...")
        start = len(s.log)
        scheme.instantiate(sc, application="c", args=[x], results=[s.fresh("y")])
        return safe_marks_on_tail(s, start, x.shape.row(Kind.INPUT)) > 0

    assert written_on_input_tail(without_other_mark=False) is False
    assert written_on_input_tail(without_other_mark=True) is False


@pytest.mark.parametrize(
    ("x_spec", "marked"),
    [("3,3|->2", True), ("3,3,3|->2", True), ("3,3,3,3|->2", False)],
)
def test_a_tail_the_scheme_leaves_unmarked_takes_the_mark_by_the_axes_beyond_its_row(
    x_spec: str, marked: bool
) -> None:
    """Without the trace's mark on w's tail, only the templated-tail rule
    marks it: where the argument's batch row has 1 to 2 axes (the result
    side's beyond the operand's) more than the scheme's ``[...t, i]``."""
    got = applied(
        through_parameter_after_an_axis,
        "...,3,3,3|->2",
        x_spec,
        lambda s, w: folded(s, w, without_mark=True),
    )
    assert got[0] is marked


def test_a_tail_the_scheme_marks_and_the_rule_templates_is_marked_once() -> None:
    """With the trace's mark kept, w's tail is also a templated tail for an
    argument one axis longer than ``[...t, i]``: one ``safe_to_guess`` is
    written on it, not two."""
    s = Session(keep_log=True)
    w = s.param("w", "...,3,3,3|->2")
    sc = folded(s, w)
    start = len(s.log)
    scheme.instantiate(
        sc, application="c", args=[s.leaf("x", "3,3|->2")], results=[s.fresh("y")]
    )
    assert safe_marks_on_tail(s, start, w.shape.row(Kind.BATCH)) == 1
