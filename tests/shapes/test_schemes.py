"""Shape schemes: the behaviours issue 6 and the specification require."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence

import pytest

from axisflow.shapes import (
    DeferredCount,
    Sabotage,
    Scheme,
    Session,
    ShapeError,
    Tensor,
    UntraceableScheme,
    scheme,
)
from axisflow.shapes.scheme.read import build_scheme
from axisflow.shapes.scheme.text import parse_scheme_text
from axisflow.shapes.trail import Trail

Body = Callable[[Sequence[Tensor]], Sequence[Tensor]]


def traced(
    s: Session,
    body: Body,
    arity: int = 1,
    label: str = "f",
    sabotage: Sabotage | None = None,
) -> Scheme:
    """Trace ``body`` on fresh tracers in a rewind window."""
    with s.rewind():
        mark = s.var_mark()
        tracers = [s.fresh(f"a{i}") for i in range(arity)]
        return scheme.trace(
            s,
            var_mark=mark,
            label=label,
            args=tracers,
            f=lambda: body(tracers),
            sabotage=sabotage,
        )


def apply(
    sc: Scheme, application: str, *args: Tensor, sabotage: Sabotage | None = None
) -> list[Tensor]:
    """Instantiate with fresh result placeholders; returns them."""
    s = sc.session
    results = [s.fresh(f"{application}_y{i}") for i in range(sc.num_results)]
    scheme.instantiate(
        sc, application=application, args=args, results=results, sabotage=sabotage
    )
    return results


def mlp_layer(s: Session) -> tuple[Tensor, Scheme]:
    """A layer ``w * x + b`` whose weight and bias were made outside the window."""
    w = s.param("w", "...->4")
    b = s.param("b", "4")
    layer = traced(
        s, lambda xs: [s.pointwise("y", s.compose("h", w, xs[0]), b)], label="layer"
    )
    return w, layer


# ------------------------------------------------------------------ the API


def test_public_names() -> None:
    assert {m.name for m in Sabotage} == {
        "NO_GENERALIZATION",
        "SEVER_SHARED",
        "NO_MARKS",
        "NO_INTERNAL_ROWS",
        "NO_END_VALIDATION",
        "NO_REF_INPUTS",
    }
    assert issubclass(UntraceableScheme, ShapeError)
    for name in ("trace", "instantiate", "check", "stale", "Scheme"):
        assert hasattr(scheme, name)


def test_scheme_reports_label_arity_results_and_a_readable_listing() -> None:
    s = Session()
    w = s.param("w", "...->4")
    ref = s.dim_ref("j")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        h = s.compose("h", w, xs[0])
        g = s.einsum("g", "...|j=>...|j", xs[1], capture_dims=[ref])
        return [s.pointwise("y", h, g), g]

    sc = traced(s, body, arity=2, label="pair")
    assert (sc.label, sc.arity, sc.num_results) == ("pair", 2, 2)
    text = str(sc)
    lines = text.splitlines()
    assert lines[0] == "shape scheme pair: 2 argument(s), 2 result(s)"
    listed = {line.split()[0] for line in lines[1:]}
    assert {"generalized", "fixed", "arg", "result", "anchor", "internal"} <= listed
    assert {"ineq", "mark", "capture"} <= listed
    assert "  anchor 0 'w' [] | [...r" in text  # w's open input row is fixed
    assert "  capture 'j' d" in text
    fixed = next(line for line in lines if line.startswith("  fixed"))
    assert fixed != "  fixed (none)"


def test_trace_must_run_inside_a_rewind_window() -> None:
    s = Session()
    x = s.fresh("x")
    before = s.state()
    with pytest.raises(ShapeError) as info:
        scheme.trace(s, var_mark=0, label="f", args=[x], f=lambda: [x])
    assert str(info.value).startswith("tracing the shape scheme f: ")
    assert "inside session.rewind()" in str(info.value)
    assert s.state() == before


@pytest.mark.parametrize(
    ("call", "expected"),
    [
        (
            lambda s, x: dict(label=3),
            "tracing a shape scheme: the label must be a string",
        ),
        (
            lambda s, x: dict(var_mark="0"),
            "var_mark must be a value of session.var_mark()",
        ),
        (
            lambda s, x: dict(var_mark=10**9),
            "var_mark must be a value of session.var_mark()",
        ),
        (lambda s, x: dict(args=[x, x]), "the same shape is given as two arguments"),
        (lambda s, x: dict(args=["x"]), "argument 0 must be a shape or a tensor"),
        (lambda s, x: dict(args=x), "the arguments must be a sequence of shapes"),
        (lambda s, x: dict(f=42), "f must be callable"),
        (lambda s, x: dict(f=lambda: 42), "the results must be a sequence of shapes"),
        (
            lambda s, x: dict(f=lambda: [Session().fresh("z")]),
            "result 0 ('z') belongs to another session",
        ),
        (lambda s, x: dict(sabotage="no_marks"), "sabotage must be a Sabotage member"),
    ],
)
def test_trace_refuses_bad_input_clearly(
    call: Callable[[Session, Tensor], dict[str, object]], expected: str
) -> None:
    s = Session()
    with s.rewind():
        mark = s.var_mark()
        x = s.fresh("x")
        kwargs: dict[str, object] = dict(
            var_mark=mark, label="f", args=[x], f=lambda: [x]
        )
        kwargs.update(call(s, x))
        with pytest.raises(ShapeError, match="^" + "tracing") as info:
            scheme.trace(s, **kwargs)  # type: ignore[arg-type]
        assert expected in str(info.value)


def test_tracers_must_be_made_after_var_mark() -> None:
    s = Session()
    old = s.fresh("old")
    with s.rewind():
        mark = s.var_mark()
        with pytest.raises(ShapeError) as info:
            scheme.trace(s, var_mark=mark, label="f", args=[old], f=lambda: [old])
    assert str(info.value) == (
        "tracing the shape scheme f: argument 0 ('old') was made before var_mark was "
        "read, so its variables would be fixed, not generalized; make the tracers "
        "after reading var_mark"
    )


# ---------------------------------------------------------- generalization


def test_applications_with_different_batch_sizes_do_not_interfere() -> None:
    s = Session()
    w, layer = mlp_layer(s)
    small = apply(layer, "small", s.leaf("xs", "2|->3"))[0]
    big = apply(layer, "big", s.leaf("xb", "7|->3"))[0]
    s.close()
    assert small.shape.dims() == ((2,), (), (4,))
    assert big.shape.dims() == ((7,), (), (4,))
    assert w.shape.dims() == ((), (3,), (4,))


def test_shared_weight_is_fixed_so_another_input_width_fails() -> None:
    s = Session()
    _, layer = mlp_layer(s)
    apply(layer, "first", s.leaf("x1", "8|->3"))
    x2 = s.leaf("x2", "8|->5")
    with pytest.raises(ShapeError) as info:
        apply(layer, "second", x2)
    assert str(info.value) == (
        "applying the shape scheme layer to second: compose 'h' of w, x2 in shape "
        "scheme layer at application 'second': input and output axes disagree: "
        "x2.output has size 5, which does not broadcast to size 3 of w.input; only "
        "size 1 broadcasts"
    )
    assert info.value.origins[0].scheme == "layer"
    assert info.value.origins[0].application == "second"
    assert s.tainted


def test_a_scheme_applies_where_the_body_does_after_a_closing() -> None:
    s = Session()
    w, layer = mlp_layer(s)
    first = apply(layer, "first", s.leaf("x1", "8|->3"))[0]
    s.close()
    assert not scheme.stale(layer)  # the weight's open rows are held by an anchor
    second = apply(layer, "second", s.leaf("x2", "5|->3"))[0]
    s.close()
    assert first.shape.dims() == ((8,), (), (4,))
    assert second.shape.dims() == ((5,), (), (4,))
    assert w.shape.dims() == ((), (3,), (4,))
    with pytest.raises(ShapeError, match=r"to third: .*x3\.output has size 5"):
        apply(layer, "third", s.leaf("x3", "->5"))


# --------------------------------------------------------------- refusals


def refused(s: Session, body: Body) -> UntraceableScheme:
    with pytest.raises(UntraceableScheme) as info:
        traced(s, body, label="bad")
    assert str(info.value).startswith("tracing the shape scheme bad: ")
    return info.value


def test_precision_dependent_total_is_untraceable() -> None:
    s = Session()
    count = DeferredCount("file bytes / precision", lambda: 12)
    error = refused(s, lambda xs: [xs[0], s.total_elems(xs[0], count)][:1])
    assert str(error) == (
        "tracing the shape scheme bad: total_elems 'a0' (<file bytes / precision> "
        "elements) has a precision-dependent element count <file bytes / precision>; "
        "a scheme cannot carry it (the count is only known at closing)"
    )
    # A plain count is carried.
    sc = traced(s, lambda xs: [xs[0], s.total_elems(xs[0], 6)][:1])
    x = s.leaf("x", "2|->...")
    apply(sc, "site", x)
    s.close()
    assert x.shape.dims() == ((2,), (), (3,))


def test_set_dim_on_a_reference_made_outside_the_window_is_untraceable() -> None:
    s = Session()
    ref = s.dim_ref("h")
    error = refused(
        s,
        lambda xs: [
            s.einsum("y", "h=>h", xs[0], capture_dims=[ref]),
            s.set_dim(ref, 3),
        ][:1],
    )
    assert (
        "set_dim on the capture reference 'h', made outside the traced window"
        in str(error)
    )

    # A reference made inside the function is the function's own business.
    def own_reference(xs: Sequence[Tensor]) -> list[Tensor]:
        mine = s.dim_ref("k")
        y = s.einsum("y", "k=>k", xs[0], capture_dims=[mine])
        s.set_dim(mine, 3)
        return [y]

    sc = traced(s, own_reference)
    x = s.leaf("x")
    apply(sc, "site", x)
    s.close()
    assert x.shape.dims() == ((), (), (3,))


@pytest.mark.parametrize("how", ["close", "dims", "swallowed"])
def test_forcing_dims_inside_the_trace_is_untraceable(how: str) -> None:
    s = Session()
    a = s.leaf("a", "3")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        y = s.pointwise("y", xs[0], a)
        if how == "close":
            s.close()
        elif how == "dims":
            a.shape.dims()
        else:
            # The function catches the refusal and carries on: still refused.
            with contextlib.suppress(UntraceableScheme):
                s.close()
        return [y]

    error = refused(s, body)
    what = "reading the dims of 'a'" if how == "dims" else "closing the session"
    assert str(error) == (
        f"tracing the shape scheme bad: the function forces dims ({what}) while it "
        f"is traced; a scheme cannot carry that (shapes are only closed after an "
        f"application)"
    )
    assert s.closings == 0


def test_a_contradiction_in_the_window_is_a_shape_error_at_trace_time() -> None:
    s = Session()
    with pytest.raises(ShapeError) as info:
        traced(s, lambda xs: [s.pointwise("y", s.leaf("p", "3"), s.leaf("q", "4"))])
    assert not isinstance(info.value, UntraceableScheme)
    assert str(info.value) == (
        "tracing the shape scheme f: pointwise 'y' of p, q: output axes disagree: "
        "q.output has size 4, which does not broadcast to size 3 of y.output; only "
        "size 1 broadcasts"
    )
    assert not s.tainted  # the rewind window undid it


def trailing_set_dim(s: Session, swallow: bool) -> Body:
    """A body whose last step, set_dim on its own reference, contradicts it."""

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        mine = s.dim_ref("k")
        y = s.einsum("y", "k;k=>k", xs[0], s.leaf("three", "3"), capture_dims=[mine])
        try:
            s.set_dim(mine, 4)
        except ShapeError:
            if not swallow:
                raise
        return [y]

    return body


@pytest.mark.parametrize("swallow", [False, True])
def test_a_trailing_set_dim_contradiction_is_a_shape_error_at_trace_time(
    swallow: bool,
) -> None:
    s = Session()
    with pytest.raises(ShapeError) as info:
        traced(s, trailing_set_dim(s, swallow))
    assert not isinstance(info.value, UntraceableScheme)
    assert str(info.value).startswith("tracing the shape scheme f: ")
    assert "capture reference 'k' has size 3" in str(info.value)
    assert "set_dim('k') has size 4" in str(info.value)


# ----------------------------------------------------------- capture inputs


def capture_scheme(s: Session) -> tuple[object, Scheme]:
    ref = s.dim_ref("h")
    sc = traced(
        s, lambda xs: [s.einsum("y", "...|h=>...|h", xs[0], capture_dims=[ref])]
    )
    return ref, sc


def test_a_capture_input_reads_as_unbound_during_the_trace() -> None:
    s = Session()
    ref = s.dim_ref("h")
    s.set_dim(ref, 5)
    seen: list[int | None] = []

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        seen.append(ref.value)
        y = s.einsum("y", "h=>h", xs[0], capture_dims=[ref])
        seen.append(ref.value)  # bound to the tracer's dim: still unsolved
        return [y]

    sc = traced(s, body)
    assert seen == [None, None]
    assert ref.value == 5  # restored after the trace
    assert [c.ref for c in sc.captures] == [ref]
    # Each application relates its binding to the size set outside.
    apply(sc, "ok", s.leaf("x", "5"))
    with pytest.raises(ShapeError) as info:
        apply(sc, "bad", s.leaf("x3", "3"))
    assert str(info.value).startswith("applying the shape scheme f to bad: einsum 'y'")
    assert "label 'h' has size 3 but capture reference 'h' has size 5" in str(
        info.value
    )


def test_capture_input_binds_and_publishes_after_stage_one_and_closing() -> None:
    s = Session()
    ref, sc = capture_scheme(s)
    assert ref.value is None  # type: ignore[attr-defined]
    apply(sc, "first", s.leaf("x", "2|->6"))
    assert ref.value == 6  # type: ignore[attr-defined]  # published after Stage 1
    s.close()
    assert ref.value == 6  # type: ignore[attr-defined]  # and at closing
    with pytest.raises(ShapeError, match="capture reference 'h' has size 6"):
        apply(sc, "later", s.leaf("z", "7"))


def test_capture_input_relates_to_a_binding_left_open_by_an_earlier_application() -> (
    None
):
    s = Session()
    ref, sc = capture_scheme(s)
    open_arg = s.leaf("open")  # nothing fixes its output yet
    first = apply(sc, "first", open_arg)[0]
    assert ref.value is None  # type: ignore[attr-defined]  # bound, open
    second = apply(sc, "second", s.leaf("x", "9"))[0]
    assert ref.value == 9  # type: ignore[attr-defined]  # the two bindings are one dim
    s.close()
    assert open_arg.shape.dims() == ((), (), (9,))
    assert first.shape.dims() == second.shape.dims() == ((), (), (9,))


# ------------------------------------------------------ refusing to instantiate


def refused_before_writing(
    sc: Scheme, *, args: Sequence[object], results: Sequence[object] | None = None
) -> str:
    """The refusal's reason; checks nothing was written (not even a variable)."""
    s = sc.session
    if results is None:
        results = [s.fresh("r")]
    before, counter = s.state(), s.var_mark()
    with pytest.raises(ShapeError) as info:
        scheme.instantiate(
            sc,
            application="site",
            args=args,  # type: ignore[arg-type]
            results=results,  # type: ignore[arg-type]
        )
    assert s.state() == before
    assert s.var_mark() == counter
    assert not s.tainted
    assert str(info.value).startswith("applying the shape scheme layer to site: ")
    return str(info.value)[len("applying the shape scheme layer to site: ") :]


def test_instantiate_refuses_an_arity_mismatch_before_writing() -> None:
    s = Session()
    _, layer = mlp_layer(s)
    x, y = s.leaf("x", "3"), s.fresh("y")
    assert refused_before_writing(layer, args=[x, x], results=[y]) == (
        "the scheme takes 1 argument(s) but 2 were given"
    )
    assert refused_before_writing(layer, args=[x], results=[y, y]) == (
        "the scheme has 1 result(s) but 2 were given"
    )
    assert refused_before_writing(layer, args=[3], results=[y]) == (
        "argument 0 must be a shape or a tensor, got 3"
    )


def test_instantiate_refuses_a_shape_discarded_by_a_rewind_before_writing() -> None:
    s = Session()
    _, layer = mlp_layer(s)
    y = s.fresh("y")
    with s.rewind():
        gone = s.leaf("gone", "3")
    assert refused_before_writing(layer, args=[gone], results=[y]) == (
        "argument 0 ('gone') was discarded by a rewind"
    )
    with s.rewind():
        anchor = s.param("v", "3")
        inner = traced(s, lambda xs: [s.pointwise("z", xs[0], anchor)], label="layer")
    assert refused_before_writing(inner, args=[s.leaf("x", "3")], results=[y]) == (
        "the anchored shape 'v' was discarded by a rewind; trace the function again"
    )


def loose_scheme(s: Session) -> Scheme:
    """A scheme that depends on an open variable no anchored shape holds."""
    from axisflow.shapes import DimEq, Origin

    old = s.fresh_dim_var()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        y = s.einsum("y", "i=>i", xs[0])
        (dim,) = y.shape.current()[2].dims
        s.add(DimEq(dim, old, Origin("tie", "y")))
        return [y]

    return traced(s, body, label="layer")


def test_instantiate_refuses_a_stale_scheme_before_writing() -> None:
    s = Session()
    sc = loose_scheme(s)
    assert [repr(item.old) for item in sc.loose] and not scheme.stale(sc)
    s.close()
    assert scheme.stale(sc)
    message = refused_before_writing(sc, args=[s.leaf("x", "3")])
    assert message.startswith(
        "the scheme is stale: the session was closed since the trace and the scheme "
        "depends on open state no anchored shape holds (d"
    )
    assert message.endswith("); trace the function again")


def test_a_scheme_whose_old_state_is_anchored_is_never_stale() -> None:
    s = Session()
    _, layer = mlp_layer(s)
    assert layer.loose == ()
    apply(layer, "first", s.leaf("x", "->3"))
    s.close()
    assert not scheme.stale(layer)


def test_a_contradiction_after_registering_taints_and_leaves_shapes_registered() -> (
    None
):
    s = Session()
    _, layer = mlp_layer(s)
    apply(layer, "first", s.leaf("x1", "->3"))
    s.close()  # nothing registered now
    x, y = s.leaf("x", "->5"), s.fresh("y")
    s.close()
    assert list(s.registered_shapes) == []
    with pytest.raises(ShapeError, match=r"^applying the shape scheme layer to bad: "):
        scheme.instantiate(layer, application="bad", args=[x], results=[y])
    assert s.tainted
    registered = list(s.registered_shapes)
    assert x.shape in registered and y.shape in registered
    assert {shape.name for shape in registered} >= {"h", "y"}
    with pytest.raises(ShapeError, match="tainted"):
        s.close()


# ----------------------------------------------------------------- check


def check_leaves_no_trace(sc: Scheme, *args: Tensor) -> ShapeError | None:
    s = sc.session
    before = s.state()
    rows = [a.shape.rows() for a in args] + [a.shape.rows() for a in sc.anchors]  # type: ignore[misc]
    try:
        scheme.check(sc, application="probe", args=args)
        outcome = None
    except ShapeError as error:
        outcome = error
    assert s.state() == before
    assert [a.shape.rows() for a in args] + [a.shape.rows() for a in sc.anchors] == rows  # type: ignore[misc]
    return outcome


def test_check_leaves_the_session_as_it_found_it_whether_it_raises_or_not() -> None:
    s = Session()
    w, layer = mlp_layer(s)
    ref, capture = capture_scheme(s)
    assert check_leaves_no_trace(layer, s.leaf("x", "8|->3")) is None
    assert check_leaves_no_trace(capture, s.leaf("c", "4")) is None
    assert ref.value is None  # type: ignore[attr-defined]  # check binds no capture
    apply(layer, "first", s.leaf("x1", "8|->3"))
    error = check_leaves_no_trace(layer, s.leaf("x2", "8|->5"))
    assert error is not None
    assert str(error).startswith(
        "applying the shape scheme layer to probe: compose 'h'"
    )
    assert not s.tainted
    # check predicts instantiate.
    apply(layer, "second", s.leaf("x3", "2|->3"))
    s.close()
    assert w.shape.dims() == ((), (3,), (4,))


def test_check_relates_capture_inputs_to_their_current_state() -> None:
    s = Session()
    ref, sc = capture_scheme(s)
    s.set_dim(ref, 4)  # type: ignore[arg-type]
    assert check_leaves_no_trace(sc, s.leaf("ok", "4")) is None
    error = check_leaves_no_trace(sc, s.leaf("bad", "5"))
    assert error is not None and "capture reference 'h' has size 4" in str(error)


def test_check_refuses_what_instantiate_refuses_before_writing() -> None:
    s = Session()
    _, layer = mlp_layer(s)
    x = s.leaf("x", "3")
    before = s.state()
    with pytest.raises(ShapeError, match="takes 1 argument"):
        scheme.check(layer, application="site", args=[x, x])
    assert s.state() == before


def test_check_costs_the_same_whatever_the_size_of_the_rest_of_the_session() -> None:
    """The number of writes check makes (and undoes) does not depend on the session."""

    class CountingTrail(Trail):
        """Records how many entries each rewind undoes."""

        undone: list[int]

        def undo_to(self, length: int) -> None:
            self.undone.append(len(self.entries) - length)
            super().undo_to(length)

    def writes(unrelated: int) -> int:
        s = Session()
        trail = CountingTrail()
        trail.undone = []
        s.trail = s.solver.trail = trail
        for i in range(unrelated):  # unrelated open constraints
            s.pointwise(f"u{i}", s.leaf(f"p{i}"), s.leaf(f"q{i}", "...,3"))
        _, layer = mlp_layer(s)
        x = s.leaf("x", "8|->3")
        trail.undone.clear()
        scheme.check(layer, application="probe", args=[x])
        (count,) = trail.undone
        return count

    assert writes(0) == writes(300) > 0


# --------------------------------------------------------------- staleness


def test_applying_something_else_than_a_scheme_is_a_clear_error() -> None:
    s = Session()
    x = s.leaf("x", "3")
    with pytest.raises(ShapeError, match="stale needs a Scheme, got 'f'"):
        scheme.stale("f")  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="expected a Scheme, got 'f'"):
        scheme.instantiate("f", application="a", args=[x], results=[])  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="expected a Scheme, got None"):
        scheme.check(None, application="a", args=[x])  # type: ignore[arg-type]
    _, layer = mlp_layer(s)
    with pytest.raises(ShapeError, match="the application must be a string, got 3"):
        scheme.check(layer, application=3, args=[x])  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="the results must be a sequence of shapes"):
        scheme.instantiate(layer, application="a", args=[x], results=None)  # type: ignore[arg-type]


def test_stale_only_after_a_closing_and_only_with_loose_state() -> None:
    s = Session()
    sc = loose_scheme(s)
    apply(sc, "before", s.leaf("x", "3"))
    assert not scheme.stale(sc)
    s.close()
    assert scheme.stale(sc)
    with s.rewind():
        s.close()
    assert scheme.stale(sc)  # a closing rewound away still left the first one


# ------------------------------------------------------ internal rows, origins


def test_internal_rows_are_registered_and_closed_with_the_application() -> None:
    s = Session()
    _, layer = mlp_layer(s)
    x = s.leaf("x", "8|->3")
    applied = scheme.instantiate(
        layer, application="site", args=[x], results=[s.fresh("y")]
    )
    s.close()
    assert [(shape.name, shape.dims()) for shape in applied.internal] == [
        ("h", ((8,), (), (4,))),
        ("y", ((8,), (), (4,))),
    ]


def test_a_closing_time_failure_names_the_scheme_and_application() -> None:
    s = Session()
    sc = traced(s, lambda xs: [s.compose("h", s.param("v", "...->..."), xs[0])])
    apply(sc, "site", s.leaf("x", "3"))
    with pytest.raises(ShapeError) as info:
        s.close()
    assert str(info.value).startswith(
        "You forgot to specify the hidden dimension(s) of parameter 'v': the number "
        "of its output axes"
    )
    assert str(info.value).endswith(
        "(param 'v' (spec '...->...') in shape scheme f at application 'site')"
    )


# ------------------------------------------------------------ nesting, text


def test_a_scheme_applied_inside_a_trace_composes() -> None:
    s = Session()
    w, layer = mlp_layer(s)

    def two_layers(xs: Sequence[Tensor]) -> list[Tensor]:
        hidden = s.fresh("hidden")
        scheme.instantiate(layer, application="inner", args=[xs[0]], results=[hidden])
        return [s.pointwise("out", hidden)]

    outer = traced(s, two_layers, label="outer")
    y = apply(outer, "top", s.leaf("x", "6|->3"))[0]
    s.close()
    assert y.shape.dims() == ((6,), (), (4,))
    assert w.shape.dims() == ((), (3,), (4,))
    with pytest.raises(ShapeError) as info:
        apply(outer, "again", s.leaf("x5", "6|->5"))
    assert str(info.value).startswith(
        "applying the shape scheme outer to again: compose 'h' of w, x5 in shape "
        "scheme outer at application 'again > inner': "
    )


def test_nested_traces_follow_stack_discipline() -> None:
    s = Session()
    ref = s.dim_ref("h")
    s.set_dim(ref, 2)
    inner_schemes: list[Scheme] = []

    def outer_body(xs: Sequence[Tensor]) -> list[Tensor]:
        y = s.einsum("y", "h=>h", xs[0], capture_dims=[ref])
        inner_schemes.append(
            traced(s, lambda vs: [s.pointwise("z", vs[0], y)], label="in")
        )
        assert ref.value is None  # still the outer trace's unbound input
        return [y]

    outer = traced(s, outer_body, label="out")
    assert ref.value == 2 and s.window is None
    (inner,) = inner_schemes
    assert [a.shape.name for a in inner.anchors] == ["y"]  # the outer's tracer result
    assert [c.ref for c in outer.captures] == [ref]
    x = s.leaf("x", "2")
    apply(outer, "site", x)
    s.close()
    assert x.shape.dims() == ((), (), (2,))


def test_a_nested_refusal_names_both_schemes() -> None:
    s = Session()

    def outer_body(xs: Sequence[Tensor]) -> list[Tensor]:
        traced(s, lambda vs: [vs[0], s.close()][:1], label="inner")
        return [xs[0]]

    with pytest.raises(UntraceableScheme) as info:
        traced(s, outer_body, label="outer")
    assert str(info.value) == (
        "tracing the shape scheme outer: tracing the shape scheme inner: the function "
        "forces dims (closing the session) while it is traced; a scheme cannot carry "
        "that (shapes are only closed after an application)"
    )


def test_the_text_form_round_trips_and_rebuilds_an_equivalent_scheme() -> None:
    s = Session()
    _, layer = mlp_layer(s)
    lines = layer.to_lines()
    rebuilt_here = build_scheme(
        parse_scheme_text(lines),
        session=s,
        label="layer",
        anchors=[a.shape for a in layer.anchors],
        ref=lambda label: s.dim_ref(label),
    )
    assert rebuilt_here.to_lines() == lines
    other = Session()
    w2 = other.param("w", "...->4")
    b2 = other.param("b", "4")
    elsewhere = build_scheme(
        parse_scheme_text(lines),
        session=other,
        label="layer",
        anchors=[w2.shape, b2.shape],
        ref=lambda label: other.dim_ref(label),
    )
    assert elsewhere.to_lines() == lines
    y = other.fresh("y")
    scheme.instantiate(
        elsewhere, application="site", args=[other.leaf("x", "5|->3")], results=[y]
    )
    other.close()
    assert y.shape.dims() == ((5,), (), (4,))
    assert w2.shape.dims() == ((), (3,), (4,))
