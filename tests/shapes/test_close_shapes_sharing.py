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

from axisflow.dialects.tprog_eval import ProgramEvaluator
from axisflow.passes.close_shapes import CloseShapesPass
from axisflow.passes.generalize_shapes import GeneralizeShapesPass
from axisflow.shapes import scheme
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
    """Modules whose function is called at two to four module-level sites."""
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
    results: list[str] = []
    for call in range(draw(st.integers(2, 4))):
        args = []
        for position in range(arity):
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
            f'%y{call} = tprog.call @f({", ".join(args)}) at "c{call}" : !tprog.tensor'
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
    assert sorted(len(shapes) for shapes in evaluator.body_shapes.values()) == [3] * 5


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


def test_functions_whose_bodies_reach_outside_are_re_evaluated() -> None:
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
%yb = tprog.call @cap(%b) at "b" : !tprog.tensor
%yc = tprog.call @once(%b) at "c" : !tprog.tensor
"""
    evaluator = ProgramEvaluator(parse(text), share_calls=True)
    # A capture label is module-level state; a single call gains nothing.
    assert not evaluator.share_calls
    assert outcome(text, "shared") == outcome(text, "re-evaluate")
