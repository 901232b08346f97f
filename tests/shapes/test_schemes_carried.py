"""What schemes carry since issue 30, applied (``scheme/apply.py``, ``read.py``).

Each construct a trace used to refuse is traced, written as text, rebuilt,
and applied, and the application is compared with re-running the body:
axes written before a row variable (a row prefix), strided axes (a linear
equation, with its kind: the solved dim keeps its basis), padded convolution
axes (margins, on an argument, an internal tensor or an anchor), capture
inputs of row variables (bound, related in ``check``, solved in the trace),
and the concrete rows presolved applications share.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from axisflow.shapes import (
    DimEq,
    DimRef,
    Origin,
    Row,
    RowEq,
    Sabotage,
    Scheme,
    Session,
    ShapeError,
    Size,
    Tensor,
    scheme,
)
from axisflow.shapes.scheme.read import build_scheme
from axisflow.shapes.scheme.text import parse_scheme_text
from tests.shapes.test_schemes import apply, traced

Body = Callable[[Session, Sequence[Tensor]], list[Tensor]]
ORIGIN = Origin("by hand", "t")


def rebuilt(sc: Scheme) -> Scheme:
    """The scheme read back from its text form, in its own session."""
    s = sc.session
    again = build_scheme(
        parse_scheme_text(sc.to_lines()),
        session=s,
        label=sc.label,
        anchors=[a.shape for a in sc.anchors],
        ref=lambda label: next(
            (c.ref for c in sc.captures if c.ref.label == label), s.dim_ref(label)
        ),
    )
    assert again.to_lines() == sc.to_lines()
    return again


def both_ways(body: Body, specs: Sequence[str | None]) -> tuple[object, object]:
    """Each spec's application through the rebuilt scheme and by re-running the
    body: the results' dims (or the failure's message after its prefix)."""
    outcomes: list[object] = []
    for through in (True, False):
        s = Session()
        sc = rebuilt(traced(s, lambda xs, s=s: body(s, xs))) if through else None
        dims: list[object] = []
        try:
            results = []
            for index, spec in enumerate(specs):
                x = s.leaf(f"x{index}", spec)
                if sc is None:
                    results.extend(body(s, [x]))
                else:
                    results.extend(apply(sc, f"c{index}", x))
            s.close()
            dims = [r.shape.dims() for r in results]
        except ShapeError as error:
            dims = [str(error).rsplit(": ", 1)[-1]]
        outcomes.append(dims)
    return outcomes[0], outcomes[1]


def rotate(s: Session, xs: Sequence[Tensor]) -> list[Tensor]:
    return [s.einsum("y", "... | a, ..r.. => ... | ..r.., a", xs[0])]


@pytest.mark.parametrize(
    "specs",
    [["2|3,4,5"], ["...|7", "3"], [None, "2|1,2"], ["|"]],
)
def test_a_row_prefix_applies_as_the_body_does(specs: list[str | None]) -> None:
    """Axes before a row variable: solved at the application when the
    argument's row is known, left pending for the closing when it is open,
    refused as the body refuses a row with too few axes."""
    through, re_evaluated = both_ways(rotate, specs)
    assert through == re_evaluated
    if specs == ["2|3,4,5"]:
        assert through == [((2,), (), (4, 5, 3))]


def strided(s: Session, xs: Sequence[Tensor]) -> list[Tensor]:
    return [s.einsum("y", "2*o=>o", xs[0])]


def test_a_strided_axis_keeps_its_kind_and_its_message() -> None:
    """The linear equation of a strided axis keeps its kind (the solved dim
    takes the basis of the axis) and its text (an error names the axis)."""
    through, re_evaluated = both_ways(strided, ["6@t"])
    assert through == re_evaluated == [((), (), (3,))]
    s = Session()
    sc = rebuilt(traced(s, lambda xs: strided(s, xs)))
    (y,) = apply(sc, "c", s.leaf("x", "6@t"))
    s.close()
    assert repr(y.shape.output) == "[3@t]"
    with pytest.raises(ShapeError) as info:
        apply(sc, "odd", s.leaf("z", "5"))
    assert str(info.value) == (
        "applying the shape scheme f to odd: einsum 'y' of z (spec '2*o=>o') in "
        "shape scheme f at application 'odd': the axis '2*o' cannot hold with "
        "2*o = 5: no positive size of 'o' satisfies it (o = 5/2)"
    )


def convolution(w: Tensor) -> Callable[[Session, Sequence[Tensor]], list[Tensor]]:
    """A padded convolution over the anchor ``w`` with the argument as kernel."""

    def body(s: Session, xs: Sequence[Tensor]) -> list[Tensor]:
        return [s.einsum("y", "... | 2*o=+k; k => ... | o", w, xs[0])]

    return body


@pytest.mark.parametrize("sever", [False, True])
def test_an_anchor_s_padded_axis_gets_its_margins(sever: bool) -> None:
    """The padded operand is a module-level tensor (an anchor): the
    application registers it, so the closing gives it its margins; with
    ``SEVER_SHARED`` the anchor is dropped, and its padding with it."""
    s = Session()
    w = s.leaf("w", "4|8")
    sc = rebuilt(traced(s, lambda xs: convolution(w)(s, xs)))
    lines = [line.split(" (")[0] for line in sc.to_lines()]
    assert [line for line in lines if line.startswith("pad")] == [
        "pad anchor 0 output -1 d1"
    ]
    # The einsum registers the anchor again in the trace: it is no internal shape.
    assert [line.split(" [")[0] for line in lines if line.startswith("internal")] == [
        "internal 0 'y'"
    ]
    kernel = s.leaf("k", "3")
    y = s.fresh("y")
    scheme.instantiate(
        sc,
        application="c",
        args=[kernel],
        results=[y],
        sabotage=Sabotage.SEVER_SHARED if sever else None,
    )
    s.close()
    assert w.shape.padding("output") == (None if sever else ((1, 2),))
    if not sever:
        assert y.shape.dims() == ((4,), (), (4,))


def test_check_pads_nothing_it_keeps() -> None:
    """``check`` makes no internal shapes: a padded internal axis is skipped,
    and nothing it adds survives its window (no margins, no registration)."""
    s = Session()
    w = s.leaf("w", "4|8")
    sc = traced(
        s,
        lambda xs: [
            s.einsum(
                "y2",
                "... | o=+k; k => ... | o",
                s.pointwise("h", convolution(w)(s, xs)[0]),
                xs[0],
            )
        ],
    )
    assert [line.split(" ")[1] for line in sc.to_lines() if line.startswith("pad")] == [
        "anchor",
        "internal",
    ]
    kernel = s.leaf("k", "3")
    before = s.state()
    scheme.check(sc, application="probe", args=[kernel])
    assert s.state() == before
    s.close()
    assert w.shape.padding("output") is None


# ------------------------------------------------------- row capture inputs


def row_capture(ref: DimRef) -> Body:
    def body(s: Session, xs: Sequence[Tensor]) -> list[Tensor]:
        return [s.einsum("y", "..r..|j=>..r..|j", xs[0], capture_dims=[ref])]

    return body


def row_scheme() -> tuple[Session, DimRef, Scheme]:
    s = Session()
    ref = s.dim_ref("r")
    return s, ref, traced(s, lambda xs: row_capture(ref)(s, xs))


def test_check_relates_a_row_capture_to_a_set_size() -> None:
    """The reference stands for a size: the captured row must hold that many
    elements (a total), in ``check`` as at the application."""
    s, ref, sc = row_scheme()
    s.set_dim(ref, 6)
    scheme.check(sc, application="fits", args=[s.leaf("x", "2,3|5")])
    with pytest.raises(ShapeError) as info:
        scheme.check(sc, application="short", args=[s.leaf("z", "4|5")])
    assert str(info.value) == (
        "applying the shape scheme f to short: einsum 'y' of z (spec "
        "'..r..|j=>..r..|j') in shape scheme f at application 'short': the axes "
        "[4] cannot hold 6 elements (their known sizes multiply to 4)"
    )


def test_check_relates_a_row_capture_to_a_bound_row() -> None:
    """The reference is bound to the row of an earlier application: the
    captured rows must be equal, in ``check`` as at the application."""
    s, ref, sc = row_scheme()
    apply(sc, "first", s.leaf("x", "2,3|5"))
    assert ref.row is not None
    scheme.check(sc, application="same", args=[s.leaf("z", "2,3|7")])
    with pytest.raises(ShapeError) as info:
        scheme.check(sc, application="other", args=[s.leaf("v", "6|5")])
    assert str(info.value).startswith(
        "applying the shape scheme f to other: einsum 'y' of v (spec "
        "'..r..|j=>..r..|j') in shape scheme f at application 'other': "
    )
    assert "row variable 'r'" in str(info.value)
    assert "capture reference 'r'" in str(info.value)


def test_check_relates_a_label_capture_to_a_row_bound_reference() -> None:
    """A label's capture input whose reference stands for a row's element
    count: the label's size must be that count."""
    s = Session()
    ref = s.dim_ref("n")
    sc = traced(
        s, lambda xs: [s.einsum("y", "...|n=>...|n", xs[0], capture_dims=[ref])]
    )
    s.einsum("z", "..n..|j=>..n..|j", s.leaf("w", "2,3|4"), capture_dims=[ref])
    scheme.check(sc, application="fits", args=[s.leaf("x", "...|6")])
    with pytest.raises(ShapeError) as info:
        scheme.check(sc, application="odd", args=[s.leaf("v", "...|5")])
    assert str(info.value).endswith(
        "the axes [2, 3] cannot hold 5 elements (their known sizes multiply to 6)"
    )


def test_a_row_capture_solved_in_the_trace_publishes_its_count() -> None:
    """The captured row is fixed by the body (a leaf shares the row
    variable): the input's term is a closed row, which the application binds
    through a fresh row variable, and the reference publishes its count."""
    s = Session()
    ref = s.dim_ref("r")
    sc = traced(
        s,
        lambda xs: [
            s.einsum(
                "y",
                "..r..|j;..r..|k=>..r..|j",
                xs[0],
                s.leaf("c", "2,5|7"),
                capture_dims=[ref],
            )
        ],
    )
    captures = [
        line.split(" (")[0] for line in sc.to_lines() if line.startswith("capture")
    ]
    assert captures == ["capture 'r' [2, 5]"]
    (y,) = apply(rebuilt(sc), "c", s.leaf("x", "...|3"))
    assert ref.value == 10
    s.close()
    assert y.shape.dims() == ((2, 5), (), (3,))
    assert ref.value == 10


# ------------------------------------------------- presolved rows are shared


def block(s: Session, xs: Sequence[Tensor]) -> list[Tensor]:
    h = s.pointwise("h", xs[0])
    return [s.pointwise("out", s.transpose("t", h), h)]


def test_applications_with_the_same_sources_share_their_concrete_rows() -> None:
    """Presolved rows are immutable: applications whose arguments have the
    same concrete rows share them; other arguments, other rows; and a row
    that stays open (the result's) is each application's own."""
    s = Session()
    sc = traced(s, lambda xs: block(s, xs))
    first = scheme.instantiate(
        sc, application="a", args=[s.leaf("x1", "5|->8")], results=[s.fresh("y1")]
    )
    second = scheme.instantiate(
        sc, application="b", args=[s.leaf("x2", "5|->8")], results=[s.fresh("y2")]
    )
    other = scheme.instantiate(
        sc, application="c", args=[s.leaf("x3", "2|->8")], results=[s.fresh("y3")]
    )
    h1, h2, h3 = first.internal[0], second.internal[0], other.internal[0]
    assert h1.batch is h2.batch and h1.batch.is_concrete()
    assert h3.batch is not h1.batch and h3.batch != h1.batch
    out1, out2 = first.internal[-1], second.internal[-1]
    assert not out1.batch.is_concrete()
    assert out1.batch is not out2.batch
    s.close()
    assert h1.dims() == h2.dims() == ((5,), (), (8,))
    assert h3.dims() == ((2,), (), (8,))


def test_a_total_counted_by_a_dim_is_read_back_and_applied() -> None:
    """set_equal between a row capture and a label capture made in the
    function: the row holds as many elements as the label has positions,
    through the scheme read back from its text form too."""

    def body(s: Session, xs: Sequence[Tensor]) -> list[Tensor]:
        rows, label = s.dim_ref("r"), s.dim_ref("n")
        y = s.einsum("y", "..r..|n=>..r..|n", xs[0], capture_dims=[rows, label])
        s.set_equal(rows, label)
        return [y]

    through, re_evaluated = both_ways(body, ["2,3|6", "...|4"])
    assert through == re_evaluated
    assert through[0] == ((2, 3), (), (6,))  # type: ignore[index]
    # Both fail at the application: re-running the body relates two known
    # sizes (set_equal refuses them), the scheme's total does not hold.
    through, re_evaluated = both_ways(body, ["2,3|4"])
    assert through == [
        "the axes [2, 3] cannot hold 4 elements (their known sizes multiply to 6)"
    ]
    assert re_evaluated == [
        "the capture references 'r' and 'n' stand for different sizes (6 and 4)"
    ]


@pytest.mark.parametrize("padded", ["anchor", "arg"])
def test_a_padded_shape_closed_before_is_registered_again(padded: str) -> None:
    """The padded operand was closed by an earlier closing (its rows are
    concrete, it is no longer registered): the application registers it
    again, as the einsum does, so the next closing publishes its margins."""
    s = Session()
    w = s.leaf("w", "4|8")
    kernel = s.leaf("k", "3")
    s.close()
    if padded == "anchor":
        sc = traced(s, lambda xs: convolution(w)(s, xs))
        apply(sc, "c", kernel)
    else:
        sc = traced(
            s, lambda xs: [s.einsum("y", "... | 2*o=+k; k => ... | o", xs[0], kernel)]
        )
        apply(sc, "c", w)
    s.close()
    assert w.shape.padding("output") == ((1, 2),)


# ------------------------------------------------------ what the trace reads off


def test_a_pending_total_of_the_session_is_not_read_off() -> None:
    """Only the pending equations the function's constraints leave belong to
    the scheme, not those the session held before the trace."""
    s = Session()
    s.total_elems(s.leaf("u", "...|..."), 12)
    sc = traced(s, lambda xs: strided(s, xs))
    assert [
        line.split(" ")[0]
        for line in sc.to_lines()
        if " = " in line or line.startswith("linear")
    ] == ["linear"]


def test_a_count_solved_in_the_function_is_a_number() -> None:
    """A row capture equated with a label the function sets: the row's total
    is pending with a known count, written as a number, and applied."""

    def body(s: Session, xs: Sequence[Tensor]) -> list[Tensor]:
        rows, label = s.dim_ref("r"), s.dim_ref("n")
        y = s.einsum("y", "..r..|n=>..r..|", xs[0], capture_dims=[rows, label])
        s.set_equal(rows, label)  # both open: the row's total is the label's dim
        s.set_dim(label, 6)  # which the function then solves
        return [y]

    s = Session()
    sc = traced(s, lambda xs: body(s, xs))
    totals = [line.split(" (")[0] for line in sc.to_lines() if line.startswith("total")]
    assert totals == ["total [...r1] = 6"]
    (y,) = apply(rebuilt(sc), "c", s.leaf("x", "...|6"))
    s.close()
    assert y.shape.dims() == ((6,), (), ())
    through, re_evaluated = both_ways(body, ["...|6", "2,3|6"])
    assert through == re_evaluated


def test_a_row_bound_before_the_trace_is_given_back() -> None:
    """A reference bound to a row before the trace reads as unbound while the
    function runs and is bound again afterwards."""
    s = Session()
    ref = s.dim_ref("r")
    s.einsum("z", "..r..|j=>..r..|j", s.leaf("w", "...|4"), capture_dims=[ref])
    bound = ref.row
    assert bound is not None
    seen: list[object] = []

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        seen.append(ref.row)
        return [s.pointwise("y", xs[0])]

    with s.rewind():
        mark = s.var_mark()
        x = s.fresh("x")
        scheme.trace(s, var_mark=mark, label="f", args=[x], f=lambda: body([x]))
        assert seen == [None]
        assert ref.row == bound  # given back by the trace, not by the rewind


def test_a_nested_trace_reads_off_only_its_own_constraints() -> None:
    """A trace inside a traced function replays what the inner function
    added, not what the outer one added before it."""
    s = Session()
    inner: list[Scheme] = []

    def outer(xs: Sequence[Tensor]) -> list[Tensor]:
        y = s.pointwise("p", xs[0], s.leaf("c", "3"))
        inner.append(traced(s, lambda zs: [s.pointwise("q", zs[0])], label="in"))
        return [y]

    traced(s, outer, label="out")
    (sc,) = inner
    assert not any("'p'" in line or "'c'" in line for line in sc.to_lines())


def test_open_variables_no_anchor_holds_are_loose_dims_and_rows() -> None:
    """The function ties its argument's output to a dim and a row variable
    of the session that no tensor holds: each is a loose term of its kind,
    which an application equates with the old variable."""
    s = Session()
    old_dim, old_row = s.fresh_dim_var(), s.fresh_row_var()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        s.add(RowEq(xs[0].shape.output, Row((old_dim,), old_row), ORIGIN))
        return [s.pointwise("y", xs[0])]

    sc = traced(s, body)
    loose = [line for line in sc.to_lines() if line.startswith("loose")]
    assert loose == [f"loose d2 = old {old_dim!r}", f"loose [...r6] = old {old_row!r}"]
    apply(sc, "c", s.leaf("x", "2,3"))
    assert s.solver.find_dim(old_dim) == Size(3)
    assert s.solver.norm_row(Row((), old_row)) == Row((Size(2),))


def test_a_loose_dim_s_root_made_by_the_function_is_fixed() -> None:
    """The old dim is equated with one the function made: the class's root
    is the function's variable, which stands for the old one, so it is a
    fixed variable of the scheme, not a generalized one."""
    s = Session()
    old_dim, old_row = s.fresh_dim_var(), s.fresh_row_var()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        young = s.fresh_dim_var()
        s.add(RowEq(xs[0].shape.output, Row((young,), old_row), ORIGIN))
        s.add(DimEq(old_dim, young, ORIGIN))
        return [s.pointwise("y", xs[0])]

    lines = traced(s, body).to_lines()
    assert lines[1] == "fixed r6, d2"
    assert "loose d2 = old d0" in lines
