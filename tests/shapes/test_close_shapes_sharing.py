"""close-shapes shares one trace of a function between its module-level calls.

With ``calls=shared`` (the default) a function called at two or more
module-level sites is traced once, in memory, and its shape scheme applied at
each call; ``calls=re-evaluate`` runs the body at every call. Users must not
see a difference: the printed module, and every diagnostic (a failure while
sharing evaluates the module again by re-evaluation), byte for byte. What
sharing changes is what a call site keeps: the application's renamed
scheme, not a re-run body's constraints and variables.
"""

from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.printer import Printer
from xdsl.utils.exceptions import DiagnosticException

from axisflow.dialects.tprog_eval import BodyShapes, ProgramEvaluator
from axisflow.passes.close_shapes import CloseShapesPass
from axisflow.passes.generalize_shapes import GeneralizeShapesPass
from axisflow.shapes import Session, Shape, scheme
from axisflow.shapes.terms import Row, Size
from tests.conftest import parse
from tests.shapes.test_schemes_ir_oracle import SPECS, Module, bodies, modules

LAYER = """
%w = tprog.param "...->4"
tprog.func @layer(%in: !tprog.tensor) -> !tprog.tensor {
  %h = tprog.compose %w, %in
  %r = tprog.pointwise %h {fn = "relu"}
  %s = tprog.einsum "...|i=>...|" (%r)
  %t = tprog.pointwise %r, %s
  tprog.return %t
}
"""


def layer_module(specs: list[str]) -> str:
    """``@layer`` applied to one leaf per spec, each at its own site."""
    lines = [LAYER]
    for i, spec in enumerate(specs):
        lines.append(f'%x{i} = tprog.leaf "{spec}"')
        lines.append(f'%y{i} = tprog.call @layer(%x{i}) at "s{i}" : !tprog.tensor')
    return "\n".join(lines)


def outcome(text: str, calls: str) -> str:
    """The printed module after close-shapes, or its diagnostic."""
    module = parse(text)
    try:
        CloseShapesPass(calls=calls).apply(Context(), module)  # type: ignore[arg-type]
    except DiagnosticException as error:
        return f"error: {error}"
    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue()


@st.composite
def shared_modules(draw: st.DrawFn) -> Module:
    """Modules applying their functions at two to four module-level sites.

    ``@f`` has a generated body (strided, convolution and concatenated axes
    and capture labels among its einsums); ``@g``, when there is one, applies
    ``@f`` in its body, once or twice, so that ``@g``'s trace applies
    ``@f``'s scheme. A module-level ``set_dim`` of the label ``i`` may come
    before the calls or between them.
    """
    lines: list[str] = []
    anchors = []
    for i in range(draw(st.integers(0, 2))):
        kind = draw(st.sampled_from(("leaf", "param")))
        lines.append(f'%w{i} = tprog.{kind} "{draw(st.sampled_from(SPECS))}"')
        anchors.append(f"%w{i}")
    arity = draw(st.integers(1, 2))
    params = ", ".join(f"%fa{i}: !tprog.tensor" for i in range(arity))
    lines.append(f"tprog.func @f({params}) -> !tprog.tensor {{")
    if draw(st.booleans()):
        # A leaf made by the body: a terminal of its own at every application.
        lines.append(f'  %fl = tprog.leaf "{draw(st.sampled_from(SPECS))}"')
        lines += draw(bodies(arity, [*anchors, "%fl"], "f"))
    else:
        lines += draw(bodies(arity, anchors, "f"))
    lines.append("}")
    functions = [("f", arity)]
    if draw(st.booleans()):
        lines.append("tprog.func @g(%ga0: !tprog.tensor) -> !tprog.tensor {")
        call_args = ", ".join(["%ga0"] * arity)
        lines.append(f'  %gi = tprog.call @f({call_args}) at "in-g" : !tprog.tensor')
        lines.append("  %go = tprog.pointwise %gi, %ga0")
        if draw(st.booleans()):
            again = ", ".join(["%go"] * arity)
            lines.append(f'  %gj = tprog.call @f({again}) at "again" : !tprog.tensor')
            lines.append("  tprog.return %gj")
        else:
            lines.append("  tprog.return %go")
        lines.append("}")
        functions.append(("g", 1))
    set_dim_at = draw(st.sampled_from((None, 0, 1)))
    set_dim = f'tprog.set_dim "i" = {draw(st.sampled_from((1, 3)))}'
    results: list[str] = []
    sites = draw(st.integers(2, 4))
    for call in range(sites):
        name, count = draw(st.sampled_from(functions))
        if call >= sites - 2 and len(functions) > 1:
            # Each function has a module-level site.
            name, count = functions[sites - 1 - call]
        if call == set_dim_at:
            lines.append(set_dim)
        args = []
        for position in range(count):
            if results and draw(st.integers(0, 2)) == 0:
                args.append(draw(st.sampled_from(results)))
            else:
                leaf = f"%x{call}_{position}"
                lines.append(f'{leaf} = tprog.leaf "{draw(st.sampled_from(SPECS))}"')
                args.append(leaf)
        if call and draw(st.integers(0, 4)) == 0:
            lines.append("tprog.close")
        if anchors and draw(st.integers(0, 3)) == 0:
            # Module-level use of an anchor between applications: what the
            # body reads changes from one call to the next.
            kind = draw(st.sampled_from(("pointwise", "compose")))
            other = draw(st.sampled_from(args + results))
            lines.append(
                f"%u{call} = tprog.{kind} {draw(st.sampled_from(anchors))}, {other}"
            )
        lines.append(
            f'%y{call} = tprog.call @{name}({", ".join(args)}) at "c{call}" : !tprog.tensor'
        )
        results.append(f"%y{call}")
    return Module("\n".join(lines))


@settings(max_examples=80, deadline=None)
@given(shared_modules())
def test_shared_calls_print_what_re_evaluation_prints(module: Module) -> None:
    assert outcome(module.text, "shared") == outcome(module.text, "re-evaluate")


@settings(max_examples=40, deadline=None)
@given(modules())
def test_shared_calls_agree_on_the_scheme_oracle_modules(module: Module) -> None:
    assert outcome(module.text, "shared") == outcome(module.text, "re-evaluate")


def test_a_function_called_at_many_sites_is_traced_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    traced: list[str] = []
    real_trace = scheme.trace

    def counting(*args: object, **kwargs: object) -> scheme.Scheme:
        traced.append(str(kwargs["label"]))
        return real_trace(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scheme, "trace", counting)
    module = parse(layer_module(["2|->3", "5|->3", "7|->3"]))
    evaluator = ProgramEvaluator(module, share_calls=True)
    evaluator.evaluate()
    assert traced == ["layer"]
    assert set(evaluator.shared) == {"layer"}
    # Each call's result, and each body value once per call, got a shape.
    assert [
        evaluator.top.values[op.results[0]].shape.dims()[0]
        for op in module.ops
        if op.name == "tprog.call"
    ] == [(2,), (5,), (7,)]
    assert [shapes.count for shapes in evaluator.body_shapes.values()] == [3] * 5


def test_a_body_value_keeps_only_the_shapes_its_type_still_needs() -> None:
    """Concrete rows are final, so they are compared as the applications
    come: an application equal to the first is not kept, one that differs
    makes the type unknown and nothing is kept from then on; a shape with
    an open row waits for the closing."""
    s = Session()

    def shape(batch: Row) -> Shape:
        return s.new_shape("v", batch, Row(()), Row((Size(4),)))

    two = Row((Size(2),))
    seen = BodyShapes(shape(two))
    seen.add(shape(Row((Size(2),))))
    assert (seen.count, seen.differs, seen.pending) == (2, False, [])
    waiting = shape(Row((Size(2),), s.fresh_row_var()))
    seen.add(waiting)
    assert seen.pending == [waiting]
    s.close()  # the open tail closes to no axes: [2], as the first
    assert seen.agreed() is seen.first
    seen.add(shape(Row((Size(5),))))
    assert (seen.count, seen.differs, seen.pending) == (4, True, [])
    seen.add(shape(two))
    assert (seen.count, seen.pending, seen.agreed()) == (5, [], None)


def minted_per_site(calls: str, generalize: bool = False) -> int:
    """Variables one more call site mints while close-shapes evaluates."""
    marks = []
    for sites in (3, 4):
        module = parse(layer_module(["2|->3"] * sites))
        if generalize:
            GeneralizeShapesPass().apply(Context(), module)
        evaluator = ProgramEvaluator(module, share_calls=calls == "shared")
        evaluator.evaluate()
        marks.append(evaluator.session.var_mark())
    return marks[1] - marks[0]


def test_a_shared_call_site_mints_what_an_instantiation_does() -> None:
    shared = minted_per_site("shared")
    assert shared == minted_per_site("shared", generalize=True)
    assert shared < minted_per_site("re-evaluate")


def test_a_failing_shared_call_reports_the_re_evaluation_diagnostic() -> None:
    # The second site's input width contradicts the width the first gave %w.
    text = layer_module(["2|->3", "7|->5"])
    shared = outcome(text, "shared")
    assert shared == outcome(text, "re-evaluate")
    assert shared.startswith("error: ")
    assert "at application 's1'" in shared
    assert "shape scheme" not in shared


# A parameter read by a function and at module level, each read's result
# used by the declared matrix %m; the function applied at two sites to
# arguments of the same shape. Only %m decides %w's output: the closing
# reads it through every row %w broadcasts to (a bias-less layer).
OPEN_PARAMETER_PRELUDE = """
%w = tprog.param "...->..."
%m = tprog.leaf "5->3"
%x0 = tprog.leaf "2|->4"
%q = tprog.compose %w, %x0
%z0 = tprog.compose %m, %q
"""
OPEN_PARAMETER_CALLS = (
    OPEN_PARAMETER_PRELUDE
    + """
tprog.func @f(%x: !tprog.tensor) -> !tprog.tensor {
  %u = tprog.compose %w, %x
  %v = tprog.pointwise %u {fn = "relu"}
  tprog.return %v
}
%x1 = tprog.leaf "2|->4"
%y1 = tprog.call @f(%x1) at "s1" : !tprog.tensor
%z1 = tprog.compose %m, %y1
%x2 = tprog.leaf "2|->4"
%y2 = tprog.call @f(%x2) at "s2" : !tprog.tensor
%z2 = tprog.compose %m, %y2
"""
)


def written_out(*, second_reuses_first_hidden: bool) -> str:
    """The two applications written out; the second one's relu reads its
    own hidden row, or the first application's."""
    lines = [
        OPEN_PARAMETER_PRELUDE,
        '%x1 = tprog.leaf "2|->4"',
        "%u1 = tprog.compose %w, %x1",
        '%v1 = tprog.pointwise %u1 {fn = "relu"}',
        "%z1 = tprog.compose %m, %v1",
    ]
    if second_reuses_first_hidden:
        hidden = "%u1"
    else:
        hidden = "%u2"
        lines += ['%x2 = tprog.leaf "2|->4"', "%u2 = tprog.compose %w, %x2"]
    lines += [
        f'%v2 = tprog.pointwise {hidden} {{fn = "relu"}}',
        "%z2 = tprog.compose %m, %v2",
    ]
    return "\n".join(lines) + "\n"


W_CLOSED = '%w = tprog.param "...->..." : !tprog.tensor<"4->5">'


def test_applications_keep_their_own_rows_above_an_open_parameter() -> None:
    """Why an application's rows above a parameter still open are its own.

    Each application's ``%u`` broadcasts to that application's ``%v`` alone,
    so the closing merges the two and reads ``%m``'s bound on ``%v`` through
    ``%u`` into ``%w``. A ``%u`` shared by both applications broadcasts to
    two rows: nothing is merged, and ``%w``'s output is the hidden-dimension
    error. So an application cannot take the rows of an earlier one with
    the same arguments; what it can skip is the body (a scheme).
    """
    shared = outcome(OPEN_PARAMETER_CALLS, "shared")
    assert shared == outcome(OPEN_PARAMETER_CALLS, "re-evaluate")
    assert W_CLOSED in shared
    module = parse(OPEN_PARAMETER_CALLS)
    evaluator = ProgramEvaluator(module, share_calls=True)
    evaluator.evaluate()
    assert set(evaluator.shared) == {"f"}  # both sites served, no retry
    # Each application with its own hidden row, as re-evaluation has them ...
    assert W_CLOSED in outcome(
        written_out(second_reuses_first_hidden=False), "re-evaluate"
    )
    # ... and the second reusing the first one's, as an application sharing
    # the rows of an earlier one with the same arguments would.
    merged = outcome(written_out(second_reuses_first_hidden=True), "re-evaluate")
    assert merged.startswith("error: ")
    assert "hidden dimension(s) of parameter 'w'" in merged


def traces_of(
    monkeypatch: pytest.MonkeyPatch, text: str
) -> tuple[ProgramEvaluator, list[str]]:
    """Evaluate a module sharing calls; the labels of the traces, in order."""
    traced: list[str] = []
    real_trace = scheme.trace

    def counting(*args: object, **kwargs: object) -> scheme.Scheme:
        traced.append(str(kwargs["label"]))
        return real_trace(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(scheme, "trace", counting)
    evaluator = ProgramEvaluator(parse(text), share_calls=True)
    evaluator.evaluate()
    return evaluator, traced


def served(evaluator: ProgramEvaluator) -> dict[str, str]:
    """Each call site's status in the report, by its application site."""
    return {
        call.application.data: status  # type: ignore[attr-defined]
        for call, status in evaluator.call_report.status.items()
    }


NESTED = """
%w = tprog.param "...->4"
tprog.func @linear(%x: !tprog.tensor) -> !tprog.tensor {
  %h = tprog.compose %w, %x
  tprog.return %h
}
tprog.func @block(%x: !tprog.tensor) -> !tprog.tensor {
  %a = tprog.call @linear(%x) at "first" : !tprog.tensor
  %r = tprog.pointwise %a {fn = "relu"}
  %b = tprog.call @linear(%r) at "second" : !tprog.tensor
  tprog.return %b
}
%p = tprog.leaf "2|->4"
%q = tprog.leaf "5|->4"
%yp = tprog.call @block(%p) at "p" : !tprog.tensor
%yq = tprog.call @block(%q) at "q" : !tprog.tensor
"""


def test_nested_calls_are_served_bottom_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """The callee is traced first; the caller's trace applies its scheme, so
    the caller's scheme carries it and no body runs at the two sites."""
    evaluator, traced = traces_of(monkeypatch, NESTED)
    assert traced == ["linear", "block"]
    assert served(evaluator) == dict.fromkeys(
        ["first", "second", "p", "q"], "by a scheme"
    )
    shared = outcome(NESTED, "shared")
    assert shared == outcome(NESTED, "re-evaluate")
    assert 'tprog.call @block(%q) at "q" : !tprog.tensor<"5|4">' in shared


def test_capture_labels_are_carried_and_a_single_call_is_re_evaluated(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = """
tprog.func @cap(%in: !tprog.tensor) -> !tprog.tensor {
  %s = tprog.einsum "...|i=>...|i" (%in) capture ["i"]
  tprog.return %s
}
tprog.func @once(%in: !tprog.tensor) -> !tprog.tensor {
  %r = tprog.pointwise %in {fn = "relu"}
  tprog.return %r
}
%a = tprog.leaf "2|->3"
%b = tprog.leaf "4|->3"
%ya = tprog.call @cap(%a) at "a" : !tprog.tensor
tprog.set_dim "i" = 3
%yb = tprog.call @cap(%b) at "b" : !tprog.tensor
%yc = tprog.call @once(%b) at "c" : !tprog.tensor
"""
    evaluator, traced = traces_of(monkeypatch, text)
    assert traced == ["cap"]
    assert served(evaluator) == {
        "a": "by a scheme",
        "b": "by a scheme",
        "c": "re-evaluated: @once is called once (one run costs less than a trace "
        "and an application)",
    }
    assert evaluator.session.refs[0].value == 3
    assert outcome(text, "shared") == outcome(text, "re-evaluate")


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (
            "tprog.total_elems %in = 12 bytes",
            "total_elems 'in' (<12 bytes at the tensor's precision> elements) has a "
            "precision-dependent element count",
        ),
        (
            'tprog.set_dim "h" = 3',
            "set_dim on the capture reference 'h', made outside the traced window",
        ),
        ("tprog.close", "the function forces dims (closing the session)"),
    ],
)
def test_what_no_scheme_carries_is_re_evaluated_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, body: str, why: str
) -> None:
    """The trace refuses (the specification's three refusals); the function
    and the function calling it are re-evaluated at every call, and the
    report says why. An element count that is not precision-dependent is
    carried (``@counted``)."""
    text = f"""
tprog.func @odd(%in: !tprog.tensor) -> !tprog.tensor {{
  %e = tprog.einsum "h=>h" (%in) capture ["h"]
  {body}
  tprog.return %e
}}
tprog.func @outer(%in: !tprog.tensor) -> !tprog.tensor {{
  %o = tprog.call @odd(%in) at "inside" : !tprog.tensor
  tprog.return %o
}}
tprog.func @counted(%in: !tprog.tensor) -> !tprog.tensor {{
  tprog.total_elems %in = 3
  tprog.return %in
}}
%a = tprog.leaf "3"
%ya = tprog.call @outer(%a) at "a" : !tprog.tensor
%yb = tprog.call @outer(%a) at "b" : !tprog.tensor
%ca = tprog.call @counted(%a) at "ca" : !tprog.tensor
%cb = tprog.call @counted(%a) at "cb" : !tprog.tensor
"""
    evaluator, traced = traces_of(monkeypatch, text)
    assert traced == ["odd", "counted"]  # @outer is not tried: it runs @odd
    report = served(evaluator)
    refusal = f"re-evaluated: tracing the shape scheme odd: {why}"
    assert report["inside"].startswith(refusal)
    assert report["a"] == report["b"]
    assert report["a"].startswith(
        f"re-evaluated: it calls @odd, which is re-evaluated: tracing the shape "
        f"scheme odd: {why}"
    )
    assert report["ca"] == report["cb"] == "by a scheme"
    assert outcome(text, "shared") == outcome(text, "re-evaluate")


def test_recursion_is_refused_with_a_located_error() -> None:
    """A recursive function is not traced; its call fails as re-evaluation's
    does, at the call that closes the cycle."""
    text = """
tprog.func @even(%in: !tprog.tensor) -> !tprog.tensor {
  %o = tprog.call @odd(%in) at "to-odd" : !tprog.tensor
  tprog.return %o
}
tprog.func @odd(%in: !tprog.tensor) -> !tprog.tensor {
  %e = tprog.call @even(%in) at "to-even" : !tprog.tensor
  tprog.return %e
}
%a = tprog.leaf "3"
%ya = tprog.call @even(%a) at "a" : !tprog.tensor
%yb = tprog.call @even(%a) at "b" : !tprog.tensor
"""
    evaluator = ProgramEvaluator(parse(text), share_calls=True)
    assert not evaluator.share_calls
    assert evaluator.not_shared == {
        "even": "@even is recursive (a call cycle cannot be traced)",
        "odd": "@odd is recursive (a call cycle cannot be traced)",
    }
    shared = outcome(text, "shared")
    assert shared == outcome(text, "re-evaluate")
    assert shared.startswith(
        "error: tprog.call: recursive call @even -> @odd -> @even cannot be evaluated"
    )
