"""Tracing a scheme (``scheme/trace.py``): exact refusals and what they carry.

Each test pins one outcome a mutation review found unchecked: the exact text
of every refusal of ``trace`` and the origins an error keeps when the trace
re-raises it, pending axis equations carried, capture references made
before the trace given back their binding once it is done, and dim facts the
body adds by hand carried into the scheme with their origins.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence

import pytest

from axisflow.shapes import (
    CaptureBind,
    DeferredCount,
    DimEq,
    DimIneq,
    DimVar,
    Kind,
    Origin,
    Row,
    RowEq,
    RowIneq,
    Session,
    ShapeError,
    Side,
    Size,
    Tensor,
    UntraceableScheme,
    scheme,
)
from axisflow.shapes.constraints import PaddedAxis
from axisflow.shapes.scheme.read import build_scheme
from axisflow.shapes.scheme.text import parse_scheme_text
from tests.shapes.test_schemes import apply, traced


def describe(error: ShapeError) -> list[str]:
    return [origin.describe() for origin in error.origins]


def test_trace_needs_a_session() -> None:
    with pytest.raises(ShapeError) as info:
        scheme.trace(3, var_mark=0, label="f", args=[], f=list)  # type: ignore[arg-type]
    assert str(info.value) == "tracing the shape scheme f: needs a Session, got 3"


def test_trace_needs_a_rewind_window() -> None:
    s = Session()
    with pytest.raises(ShapeError) as info:
        scheme.trace(s, var_mark=0, label="f", args=[], f=list)
    assert str(info.value) == (
        "tracing the shape scheme f: trace must run inside session.rewind(), which "
        "undoes the trace; open a window first"
    )


def test_the_same_tracer_twice_is_refused_exactly() -> None:
    s = Session()
    with s.rewind():
        mark = s.var_mark()
        x = s.fresh("x")
        with pytest.raises(ShapeError) as info:
            scheme.trace(s, var_mark=mark, label="f", args=[x, x], f=lambda: [x])
    assert str(info.value) == (
        "tracing the shape scheme f: the same shape is given as two arguments"
    )


def test_a_contradiction_keeps_its_origins() -> None:
    s = Session()
    with pytest.raises(ShapeError) as info:
        traced(s, lambda xs: [s.pointwise("y", s.leaf("p", "3"), s.leaf("q", "4"))])
    assert describe(info.value) == ["pointwise 'y' of p, q"]


PRECISION = DeferredCount("12 bytes at the tensor's precision", lambda: 3)


def test_a_refused_total_keeps_the_origin_of_the_failure() -> None:
    """The body swallows the refusal and then fails: the untraceable-scheme
    error has the refusal's text and the failure's origins."""
    s = Session()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        with contextlib.suppress(UntraceableScheme):
            s.total_elems(xs[0], PRECISION)
        return [s.pointwise("z", s.leaf("p", "3"), s.leaf("q", "4"))]

    with pytest.raises(UntraceableScheme) as info:
        traced(s, body)
    assert str(info.value) == (
        "tracing the shape scheme f: total_elems 'a0' (<12 bytes at the tensor's "
        "precision> elements) has a precision-dependent element count <12 bytes at "
        "the tensor's precision>; a scheme cannot carry it (the count is only known "
        "at closing)"
    )
    assert describe(info.value) == ["pointwise 'z' of p, q"]


@pytest.mark.parametrize(
    ("spec", "line"),
    [
        ("2*o=>o", "linear stride [2 d2 'o', -1 d1 '2*o'] 0 '2*o' "),
        ("a, ..r.. => ..r.., a", "prefix [...r1] begins [d1] rest [...r2] "),
    ],
)
def test_pending_axis_equations_are_carried(spec: str, line: str) -> None:
    """A strided axis (a linear equation) and axes before a row variable (a
    row prefix) stay pending in the scheme, as written in its text form."""
    s = Session()
    sc = traced(s, lambda xs: [s.einsum("y", spec, xs[0])])
    assert any(text.startswith(line) for text in sc.to_lines()), sc.to_lines()


def test_a_nested_refusal_keeps_its_origins() -> None:
    """A trace inside the traced function refuses because its body fails
    after a swallowed refusal: the outer trace re-raises it with its origins."""
    s = Session()

    def inner(xs: Sequence[Tensor]) -> list[Tensor]:
        with contextlib.suppress(UntraceableScheme):
            s.total_elems(xs[0], PRECISION)
        return [s.pointwise("z", s.leaf("p", "3"), s.leaf("q", "4"))]

    def outer(xs: Sequence[Tensor]) -> list[Tensor]:
        traced(s, inner, label="in")
        return [xs[0]]

    with pytest.raises(UntraceableScheme) as info:
        traced(s, outer, label="out")
    assert str(info.value).startswith(
        "tracing the shape scheme out: tracing the shape scheme in: total_elems 'a0'"
    )
    assert describe(info.value) == ["pointwise 'z' of p, q"]


def test_a_swallowed_contradiction_is_raised_at_the_end_with_its_origins() -> None:
    s = Session()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        with contextlib.suppress(ShapeError):
            s.pointwise("y", s.leaf("p", "3"), s.leaf("q", "4"))
        return [xs[0]]

    with pytest.raises(ShapeError) as info:
        traced(s, body)
    assert not isinstance(info.value, UntraceableScheme)
    assert str(info.value).startswith("tracing the shape scheme f: pointwise 'y'")
    assert describe(info.value) == ["pointwise 'y' of p, q"]


@pytest.mark.parametrize("closed", [False, True])
def test_a_reference_bound_before_the_trace_is_bound_again_after_it(
    closed: bool,
) -> None:
    """Bound to its variable (before a closing) or to its size (after one)."""
    s = Session()
    ref = s.dim_ref("h")
    s.einsum("e", "h=>h", s.leaf("x", "5"), capture_dims=[ref])
    if closed:
        s.close()
    var, size = ref.var, ref.size
    assert (var is None, size is None) == ((True, False) if closed else (False, True))
    with s.rewind():
        mark = s.var_mark()
        t = s.fresh("t")
        seen: list[object] = []

        def body() -> list[Tensor]:
            seen.append((ref.var, ref.size))
            return [s.pointwise("y", t)]

        scheme.trace(s, var_mark=mark, label="f", args=[t], f=body)
        assert seen == [(None, None)]  # unbound while the function ran
        assert (ref.var, ref.size) == (var, size)


DIM_ORIGIN = Origin(
    "check", "w", lhs=Side("w", Kind.OUTPUT), rhs=Side("a0", Kind.OUTPUT)
)


def test_a_dim_inequality_the_body_adds_is_in_the_scheme_with_its_origin() -> None:
    s = Session()
    w = s.param("w", "3")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        y = s.einsum("y", "i=>i", xs[0])
        (dim,) = s.solver.norm_row(y.shape.row(Kind.OUTPUT)).dims
        s.add(DimIneq(Size(3), dim, DIM_ORIGIN))
        return [s.pointwise("z", y, w)]

    sc = traced(s, body)
    assert (
        "dim_ineq 3 <= d1 ('check' 'w' lhs 'w'.output rhs 'a0'.output)" in sc.to_lines()
    )
    # An application whose argument breaks it fails with that origin.
    x = s.leaf("x", "4")
    with pytest.raises(ShapeError) as info:
        apply(sc, "site", x)
    assert "check 'w'" in describe(info.value)[0]


def test_a_swallowed_contradiction_in_a_tainted_session_fails_at_the_replay() -> None:
    """The session was tainted before the window opened, so the trace cannot
    tell the body's contradiction by the taint: replaying the body's
    constraints finds it, and the error is the body's, with its origins."""
    s = Session()
    with contextlib.suppress(ShapeError):
        s.pointwise("early", s.leaf("e", "2"), s.leaf("f", "5"))
    assert s.tainted

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        with contextlib.suppress(ShapeError):
            s.pointwise("y", xs[0], s.leaf("p", "3"), s.leaf("q", "4"))
        return [xs[0]]

    with pytest.raises(ShapeError) as info:
        traced(s, body)
    assert not isinstance(info.value, UntraceableScheme)
    assert str(info.value).startswith("tracing the shape scheme f: pointwise 'y'")
    assert describe(info.value) == ["pointwise 'y' of a0, p, q"]


# ------------------------------------------------- what the scheme reads off


def test_relations_of_open_dims_are_read_off_once_each() -> None:
    """Two open dims broadcast to a third: one inequality each, none twice
    when the same dim is read twice (``y`` and ``y2`` are one dim)."""
    s = Session()

    def two(xs: Sequence[Tensor]) -> list[Tensor]:
        y = s.einsum("y", "i=>i", xs[0])
        return [s.pointwise("z", y, s.einsum("w", "j=>j", xs[1]))]

    assert traced(s, two, arity=2).to_lines()[-5:] == [
        "dim_ineq d3 <= d1 ('pointwise' 'z' of 'y', 'w' lhs 'z'.output rhs 'y'.output)",
        "dim_ineq d3 <= d2 ('pointwise' 'z' of 'y', 'w' lhs 'z'.output rhs 'w'.output)",
        "mark used_in_pointwise r2",
        "mark safe_to_guess r3",
        "gen r3 1",
    ]

    def same(xs: Sequence[Tensor]) -> list[Tensor]:
        y = s.einsum("y", "i=>i", xs[0])
        return [s.pointwise("z", y, s.einsum("y2", "i=>i", xs[0]))]

    dim_facts = [
        line for line in traced(s, same).to_lines() if line.startswith("dim_ineq")
    ]
    assert dim_facts == [
        "dim_ineq d2 <= d1 ('pointwise' 'z' of 'y', 'y2' lhs 'z'.output rhs 'y'.output)"
    ]


def test_bounds_and_relations_of_rows_are_read_off_once_each() -> None:
    """The same tracer twice among a pointwise's operands: each row relation
    and the lower bound it gets are facts once; the template the leaf's axes
    put in front of the result's tail is its depth."""
    s = Session()
    sc = traced(s, lambda xs: [s.pointwise("y", xs[0], xs[0], s.leaf("c", "2,3"))])
    of = "('pointwise' 'y' of 'a0', 'a0', 'c'"
    assert sc.to_lines() == [
        "generalized r1, r2, r3, r4, r5, r6",
        "fixed (none)",
        "arg 0 'a0' [...r1] | [...r2] -> [...r3]",
        "result 0 'y' [...r4] | [...r5] -> [...r6, 2, 3]",
        "internal 0 'c' [] | [] -> [2, 3]",
        "internal 1 'y' [...r4] | [...r5] -> [...r6, 2, 3]",
        f"ineq [...r4] <= [...r1] {of} lhs 'y'.batch rhs 'a0'.batch)",
        f"ineq [...r5] <= [...r2] {of} lhs 'y'.input rhs 'a0'.input)",
        f"ineq [...r6, 2, 3] <= [...r3] {of} lhs 'y'.output rhs 'a0'.output)",
        "mark used_in_pointwise r2",
        "mark used_in_pointwise r5",
        "mark safe_to_guess r6",
        "gen r6 2",
    ]


def test_an_old_dim_equated_in_the_body_is_a_loose_fixed_dim() -> None:
    s = Session()
    old = s.fresh_dim_var()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        y = s.einsum("y", "i=>i", xs[0])
        (dim,) = s.solver.norm_row(y.shape.row(Kind.OUTPUT)).dims
        s.add(DimEq(dim, old, Origin("eq", "y")))
        return [y]

    assert traced(s, body).to_lines() == [
        "generalized (none)",
        "fixed d1",
        "arg 0 'a0' [] | [] -> [d1]",
        "result 0 'y' [] | [] -> [d1]",
        "internal 0 'y' [] | [] -> [d1]",
        f"loose d1 = old {old!r}",
    ]


def test_a_pre_existing_tensor_read_twice_is_one_anchor() -> None:
    s = Session()
    w = s.param("w", "3")
    sc = traced(s, lambda xs: [s.pointwise("y", xs[0], w, s.pointwise("v", w))])
    assert [line for line in sc.to_lines() if line.startswith("anchor")] == [
        "anchor 0 'w' [] | [] -> [3]"
    ]


def test_a_capture_input_bound_twice_keeps_the_origin_of_its_first_binding() -> None:
    s = Session()
    ref = s.dim_ref("h")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        y = s.einsum("y", "h=>h", xs[0], capture_dims=[ref])
        s.einsum("y2", "h=>h", xs[0], capture_dims=[ref])
        return [y]

    assert [
        line for line in traced(s, body).to_lines() if line.startswith("capture")
    ] == ["capture 'h' d1 ('einsum' 'y' of 'a0' detail 'spec ''h=>h''')"]


def test_a_dim_only_a_fact_mentions_is_declared() -> None:
    s = Session()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        s.add(DimIneq(Size(3), s.fresh_dim_var(), Origin("lone", "f")))
        return [xs[0]]

    assert traced(s, body).to_lines() == [
        "generalized r1, r2, r3, d1",
        "fixed (none)",
        "arg 0 'a0' [...r1] | [...r2] -> [...r3]",
        "result 0 'a0' [...r1] | [...r2] -> [...r3]",
        "dim_ineq 3 <= d1 ('lone' 'f')",
    ]


def test_two_old_dims_equated_in_the_body_are_one_loose_fixed_dim() -> None:
    """The dim they become is in no row and no fact: only the loose items
    mention it, and it is declared fixed."""
    s = Session()
    first, second = s.fresh_dim_var(), s.fresh_dim_var()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        s.add(DimEq(first, second, Origin("olds", "ab")))
        return [xs[0]]

    assert traced(s, body).to_lines() == [
        "generalized r1, r2, r3",
        "fixed d1",
        "arg 0 'a0' [...r1] | [...r2] -> [...r3]",
        "result 0 'a0' [...r1] | [...r2] -> [...r3]",
        f"loose d1 = old {first!r}",
        f"loose d1 = old {second!r}",
    ]


def test_an_old_dim_solved_in_the_window_before_the_trace_is_its_size() -> None:
    """Solved inside the rewind window but before the trace began: the scheme
    reads it as solved (the trace's start, not the window's, is "before")."""
    s = Session()
    w = s.param("w")
    s.einsum("q", "i;ij=>j", s.leaf("x0", "3"), w)
    dim = s.solver.norm_row(w.shape.row(Kind.OUTPUT)).dims[1]
    assert type(dim) is DimVar
    with s.rewind():
        s.add(DimEq(dim, Size(5), Origin("fix", "w")))
        mark = s.var_mark()
        x = s.fresh("x")
        sc = scheme.trace(
            s, var_mark=mark, label="f", args=[x], f=lambda: [s.pointwise("y", w, x)]
        )
    lines = sc.to_lines()
    assert lines[1] == "fixed (none)"
    assert "anchor 0 'w' [] | [] -> [3, 5]" in lines


def test_an_old_dim_the_body_solves_reads_as_that_size() -> None:
    """The body's own equation replays on the old dim's placeholder, so the
    scheme reads the size the body gave it."""
    s = Session()
    w = s.param("w")
    s.einsum("q", "i;ij=>j", s.leaf("x0", "3"), w)
    dim = s.solver.norm_row(w.shape.row(Kind.OUTPUT)).dims[1]

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        s.add(DimEq(dim, Size(5), Origin("fix", "w")))
        return [s.pointwise("y", w, xs[0])]

    lines = traced(s, body).to_lines()
    assert lines[1] == "fixed (none)"
    assert "anchor 0 'w' [] | [] -> [3, 5]" in lines


def test_a_capture_input_bound_to_a_dim_solved_before_the_trace_is_its_size() -> None:
    """The label's dim is that of a tensor made (and sized) before the trace:
    the capture binds a fresh variable equal to it, which the scheme reads as
    the size, and an application publishes it."""
    s = Session()
    ref = s.dim_ref("h")
    w = s.leaf("w", "5")
    sc = traced(
        s,
        lambda xs: [
            s.pointwise("z", s.einsum("y", "h=>h", w, capture_dims=[ref]), xs[0])
        ],
    )
    assert sc.to_lines()[-1] == (
        "capture 'h' 5 ('einsum' 'y' of 'w' detail 'spec ''h=>h''')"
    )
    apply(sc, "site", s.leaf("x", "5"))
    s.close()
    assert ref.value == 5


def test_a_row_capture_is_a_capture_input_carried_as_a_row() -> None:
    """A reference bound to a row variable (its element count) made before
    the trace is an input whose term is a row; each application binds it as
    the body would, and set_dim outside counts the row's elements."""
    s = Session()
    ref = s.dim_ref("r")
    sc = traced(
        s, lambda xs: [s.einsum("y", "..r..|j=>..r..|j", xs[0], capture_dims=[ref])]
    )
    assert [
        line.split(" (")[0] for line in sc.to_lines() if line.startswith("capture")
    ] == ["capture 'r' [...r1]"]
    (y,) = apply(sc, "site", s.leaf("x", "...|5"))
    s.set_dim(ref, 6)
    s.close()
    assert y.shape.dims() == ((6,), (), (5,))
    assert ref.value == 6


def test_a_total_counted_by_a_dim_is_carried() -> None:
    """set_equal between a row capture and a label capture, both made in the
    function: the row holds as many elements as the label has positions."""
    s = Session()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        rows, label = s.dim_ref("r"), s.dim_ref("n")
        y = s.einsum("y", "..r..|n=>..r..|n", xs[0], capture_dims=[rows, label])
        s.set_equal(rows, label)
        return [y]

    sc = traced(s, body)
    assert any(line.startswith("total [...r1] = d1 ") for line in sc.to_lines()), (
        sc.to_lines()
    )
    (y,) = apply(sc, "site", s.leaf("x", "2,3|6"))
    s.close()
    assert y.shape.dims() == ((2, 3), (), (6,))
    with pytest.raises(ShapeError, match="cannot hold 4 elements"):
        apply(sc, "bad", s.leaf("z", "2,3|4"))


def test_set_equal_on_a_reference_made_before_the_trace_is_refused() -> None:
    s = Session()
    outside, inside_label = s.dim_ref("h"), "n"

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        inside = s.dim_ref(inside_label)
        y = s.einsum("y", "h;n=>h", xs[0], xs[0], capture_dims=[outside, inside])
        s.set_equal(inside, outside)
        return [y]

    with pytest.raises(UntraceableScheme) as info:
        traced(s, body)
    assert str(info.value) == (
        "tracing the shape scheme f: set_equal 'n' (= 'h') relates the capture "
        "reference 'h', made outside the traced window; a scheme cannot carry that "
        "(relate the references outside the function)"
    )


def padded(s: Session, x: Tensor, kernel: Tensor) -> list[Tensor]:
    """A padded convolution of the argument, and one of an internal tensor."""
    conv = s.einsum("conv", "... | 2*o=+k; k => ... | o", x, kernel)
    relu = s.pointwise("relu", conv)
    return [s.einsum("again", "... | o=+k; k => ... | o", relu, kernel)]


def test_padding_margins_are_carried() -> None:
    """A padded convolution's axis gets OCANNL's margins at closing; through
    a scheme the argument and the internal tensor of each application get
    the margins re-evaluating the body gives them, and the text form names
    which shape's axis is padded."""
    s = Session()
    kernel = s.param("kernel", "3")
    sc = traced(s, lambda xs: padded(s, xs[0], kernel))
    pads = [line.split(" (")[0] for line in sc.to_lines() if line.startswith("pad ")]
    assert pads == ["pad arg 0 output -1 3", "pad internal 1 output -1 3"]
    assert (
        build_scheme(
            parse_scheme_text(sc.to_lines()),
            session=s,
            label="f",
            anchors=[a.shape for a in sc.anchors],
            ref=s.dim_ref,
        ).to_lines()
        == sc.to_lines()
    )
    xs = [s.leaf(f"x{i}", f"{i + 1}|{4 * (i + 1)}") for i in range(2)]
    applied = [
        scheme.instantiate(
            sc, application=f"c{i}", args=[x], results=[s.fresh(f"y{i}")]
        )
        for i, x in enumerate(xs)
    ]
    s.close()
    reference = Session()
    ref_kernel = reference.param("kernel", "3")
    ref_xs = [reference.leaf(f"x{i}", f"{i + 1}|{4 * (i + 1)}") for i in range(2)]
    runs = []
    for x in ref_xs:
        runs.append(
            reference.pointwise(
                "relu",
                reference.einsum("conv", "... | 2*o=+k; k => ... | o", x, ref_kernel),
            )
        )
        reference.einsum("again", "... | o=+k; k => ... | o", runs[-1], ref_kernel)
    reference.close()
    assert (
        [x.shape.padding("output") for x in xs]
        == [x.shape.padding("output") for x in ref_xs]
        == [((1, 2),), ((1, 2),)]
    )
    assert [app.internal[1].padding("output") for app in applied] == [
        relu.shape.padding("output") for relu in runs
    ]


# ------------------------------------------- old and new variables, anchors

BEFORE = Origin("before", "w")


@pytest.mark.parametrize("solved", [False, True])
def test_the_first_dim_minted_after_the_mark_is_generalized(solved: bool) -> None:
    """``var_mark`` is the id the next variable gets: that variable is the
    trace's own (generalized, no placeholder of an old one), also when it
    was solved between the mark and the call, whose constraints are not the
    scheme's."""
    s = Session()
    s.leaf("z", "2")  # the mark is not 0
    with s.rewind():
        mark = s.var_mark()
        first = s.fresh_dim_var()
        assert first.id == mark
        if solved:
            s.add(DimEq(first, Size(5), BEFORE))
        x = s.fresh("x")

        def body() -> list[Tensor]:
            y = s.einsum("y", "i=>i", x)
            (dim,) = s.solver.norm_row(y.shape.row(Kind.OUTPUT)).dims
            s.add(DimEq(dim, first, Origin("eq", "y")))
            return [y]

        sc = scheme.trace(s, var_mark=mark, label="f", args=[x], f=body)
    assert sc.to_lines() == [
        "generalized d1",
        "fixed (none)",
        "arg 0 'x' [] | [] -> [d1]",
        "result 0 'y' [] | [] -> [d1]",
        "internal 0 'y' [] | [] -> [d1]",
    ]


def test_a_tracer_row_solved_before_the_call_stays_generalized() -> None:
    """The tracer's batch row variable is the first minted after the mark;
    giving it axes before the call is not the scheme's concern."""
    s = Session()
    s.leaf("z", "2")
    with s.rewind():
        mark = s.var_mark()
        x = s.fresh("x")
        batch = x.shape.row(Kind.BATCH)
        assert batch.var is not None and batch.var.id == mark
        s.add(RowEq(batch, Row((Size(2),)), BEFORE))
        sc = scheme.trace(
            s, var_mark=mark, label="f", args=[x], f=lambda: [s.pointwise("y", x)]
        )
    assert sc.to_lines()[2] == "arg 0 'x' [...r1] | [...r2] -> [...r3]"


@pytest.mark.parametrize("tail_solved_in_body", [False, True])
def test_an_anchor_row_solved_through_a_chain_reads_all_its_axes(
    tail_solved_in_body: bool,
) -> None:
    """The weight's output row was solved to ``[...r, 3]`` before the trace,
    and ``r`` to ``[...t, 4]`` before it or by the body (reading the row then
    rewrites its entry to the flattened chain): the anchor's row in the
    scheme has the axes the session gives the weight at the end of the body,
    and the open tail is held by the anchor (no loose variable)."""
    s = Session()
    w = s.param("w")
    out = w.shape.row(Kind.OUTPUT)
    middle = s.fresh_row_var()
    s.add(RowEq(out, Row((Size(3),), middle), BEFORE))

    def solve_tail() -> None:
        s.add(RowEq(Row((), middle), Row((Size(4),), s.fresh_row_var()), BEFORE))

    if not tail_solved_in_body:
        solve_tail()
    seen: list[Row] = []

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        if tail_solved_in_body:
            solve_tail()
        y = s.pointwise("y", w, xs[0])
        seen.append(s.solver.norm_row(out))
        return [y]

    sc = traced(s, body)
    assert seen[0].dims == (Size(4), Size(3))
    (anchor,) = sc.anchors
    assert anchor.rows[2].dims == seen[0].dims
    assert anchor.rows[2].var in sc.fixed
    assert sc.loose == ()


@pytest.mark.parametrize("solved_first", [False, True])
def test_an_old_dim_solved_to_another_shares_its_placeholder(
    solved_first: bool,
) -> None:
    """Two old dims equated before the trace are one open dim: the body
    relating either (in either order) gives one fixed dim, loose once."""
    s = Session()
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    s.add(DimEq(a, b, BEFORE))
    root = s.solver.find_dim(a)
    solved = a if root == b else b
    olds = (solved, root) if solved_first else (root, solved)

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        y = s.einsum("y", "i=>i", xs[0])
        (dim,) = s.solver.norm_row(y.shape.row(Kind.OUTPUT)).dims
        for old in olds:
            s.add(DimIneq(dim, old, Origin("rel", "y")))
        return [y]

    lines = traced(s, body).to_lines()
    assert lines[1] == "fixed d2"
    assert [line for line in lines if line.startswith("loose")] == [
        f"loose d2 = old {root!r}"
    ]


@pytest.mark.parametrize("solved_first", [False, True])
def test_anchors_whose_rows_were_equated_before_the_trace_share_one_row(
    solved_first: bool,
) -> None:
    """Two weights' output rows equated before the trace are one open row:
    read in either order, both anchors hold the same scheme row there."""
    s = Session()
    w1, w2 = s.param("w1"), s.param("w2")
    s.add(RowEq(w1.shape.row(Kind.OUTPUT), w2.shape.row(Kind.OUTPUT), BEFORE))
    out1 = w1.shape.row(Kind.OUTPUT).var
    assert out1 is not None
    solved, root = (w1, w2) if s.solver.is_row_solved(out1.id) else (w2, w1)
    first, second = (solved, root) if solved_first else (root, solved)
    sc = traced(s, lambda xs: [s.pointwise("y", first, xs[0], second)])
    assert [anchor.shape for anchor in sc.anchors] == [first.shape, second.shape]
    assert sc.anchors[0].rows[2] == sc.anchors[1].rows[2]
    assert sc.anchors[0].rows[2].var in sc.fixed


def test_a_padded_axis_of_a_shape_the_scheme_cannot_name_is_refused() -> None:
    """A shape made after the mark but before the call is neither an
    argument, an anchor (those are older) nor made by the function."""
    s = Session()
    kernel = s.param("kernel", "3")
    with s.rewind():
        mark = s.var_mark()
        x = s.fresh("x")
        z = s.leaf("z", "8")
        with pytest.raises(UntraceableScheme) as info:
            scheme.trace(
                s,
                var_mark=mark,
                label="f",
                args=[x],
                f=lambda: [s.einsum("conv", "2*o=+k; k => o", z, kernel)],
            )
    assert str(info.value) == (
        "tracing the shape scheme f: einsum 'conv' of z, kernel (spec "
        "'2*o=+k; k => o') pads an axis of a shape that is neither an argument, "
        "an anchor nor made by the function; a scheme cannot name it"
    )


def test_a_row_lower_bound_added_twice_is_one_fact() -> None:
    """The same bound with two origins: one inequality, the first origin."""
    s = Session()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        out = xs[0].shape.row(Kind.OUTPUT)
        above = Row((Size(4),), s.fresh_row_var())
        s.add(RowIneq(above, out, Origin("first", "x")))
        s.add(RowIneq(above, out, Origin("second", "x")))
        return [xs[0]]

    assert [line for line in traced(s, body).to_lines() if line.startswith("ineq")] == [
        "ineq [...r4, 4] <= [...r3] ('first' 'x')"
    ]


def test_a_dim_only_a_capture_input_mentions_is_declared() -> None:
    s = Session()
    ref = s.dim_ref("h")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        s.add(CaptureBind(ref, s.fresh_dim_var(), Origin("bind", "h")))
        return [xs[0]]

    lines = traced(s, body).to_lines()
    assert lines[0] == "generalized r1, r2, r3, d1"
    assert lines[-1] == "capture 'h' d1 ('bind' 'h')"


def test_a_kernel_dim_only_a_padding_mentions_is_declared() -> None:
    s = Session()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        out = xs[0].shape.row(Kind.OUTPUT)
        s.add(PaddedAxis(out, 0, s.fresh_dim_var(), Origin("pad", "x")))
        return [xs[0]]

    lines = traced(s, body).to_lines()
    assert lines[0] == "generalized r1, r2, r3, d1"
    assert lines[-1] == "pad arg 0 output 0 d1 ('pad' 'x')"


def test_a_result_the_scheme_holds_only_as_a_result_is_located_there() -> None:
    """A shape made after the mark but before the call, returned by the
    function: only the results hold it. A result made by the function is
    also internal, which ``locate`` reports first."""
    s = Session()
    with s.rewind():
        mark = s.var_mark()
        x = s.fresh("x")
        z = s.fresh("z")
        made: list[Tensor] = []

        def body() -> list[Tensor]:
            made.append(s.pointwise("y", x, z))
            return [z, made[0]]

        sc = scheme.trace(s, var_mark=mark, label="f", args=[x], f=body)
    assert sc.locate(z.shape) == ("result", 0)
    assert sc.locate(made[0].shape) == ("internal", 0)
    assert sc.locate(x.shape) == ("arg", 0)
