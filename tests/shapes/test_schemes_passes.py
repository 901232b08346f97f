"""generalize-shapes and close-shapes on schemes, driven from Python."""

from __future__ import annotations

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.universe import Universe
from xdsl.utils.exceptions import DiagnosticException

from axisflow.dialects.tprog import (
    CallOp,
    FuncOp,
    InstantiateOp,
    SchemeOp,
    TensorType,
    ValueEntry,
)
from axisflow.dialects.tprog_eval import Frame, ProgramEvaluator
from axisflow.passes.close_shapes import CloseShapesPass
from axisflow.passes.generalize_shapes import GeneralizeShapesPass
from tests.conftest import parse

PROGRAM = """
%w = tprog.param "...->4"
tprog.func @layer(%in: !tprog.tensor) -> !tprog.tensor {
  %h = tprog.compose %w, %in
  %r = tprog.pointwise %h {fn = "relu"}
  tprog.return %r
}
%a = tprog.leaf "2|->3"
%b = tprog.leaf "7|->3"
%ya = tprog.call @layer(%a) at "small" : !tprog.tensor
%yb = tprog.call @layer(%b) at "big" : !tprog.tensor
"""


def result_types(module: ModuleOp) -> dict[str, TensorType]:
    return {
        value.name_hint: value.type  # type: ignore[misc]
        for op in module.walk()
        for value in op.results
        if value.name_hint and isinstance(value.type, TensorType)
    }


def test_generalize_then_close_runs_no_function_body() -> None:
    module = parse(PROGRAM)
    GeneralizeShapesPass().apply(Context(), module)
    assert not any(isinstance(op, CallOp) for op in module.walk())
    (scheme_op,) = [op for op in module.ops if isinstance(op, SchemeOp)]
    assert scheme_op.label.data == "layer"
    assert [
        op.application.data for op in module.walk() if isinstance(op, InstantiateOp)
    ] == [
        "small",
        "big",
    ]
    evaluated: list[Operation] = []
    evaluator = ProgramEvaluator(module)
    for kind, handler in list(evaluator.handlers.items()):

        def counting(op: Operation, frame: Frame, handler=handler) -> None:
            evaluated.append(op)
            handler(op, frame)

        evaluator.handlers[kind] = counting
    evaluator.evaluate()
    assert evaluated and not any(
        isinstance(op.parent_op(), FuncOp) for op in evaluated
    )  # nothing inside a function body was evaluated


def test_schemes_type_the_module_as_re_evaluation_does() -> None:
    baseline = parse(PROGRAM)
    CloseShapesPass().apply(Context(), baseline)
    through = parse(PROGRAM)
    GeneralizeShapesPass().apply(Context(), through)
    CloseShapesPass().apply(Context(), through)
    assert result_types(through) == result_types(baseline)
    assert result_types(through)["yb"] == TensorType("7|4")
    assert result_types(through)["w"] == TensorType("3->4")


def test_value_entries_read_and_print() -> None:
    entry = ValueEntry.parse("@layer op 3 1 = internal 7")
    assert entry == ValueEntry("layer", None, 3, 1, "internal", 7)
    assert str(entry) == "@layer op 3 1 = internal 7"
    arg = ValueEntry.parse("@f arg 0 = anchor 2")
    assert arg == ValueEntry("f", 0, None, None, "anchor", 2)
    assert ValueEntry.parse("@f op 1 = internal 0") is None


def test_bytes_per_element_turns_bytes_into_elements() -> None:
    text = '%d = tprog.leaf "2|->..."\ntprog.total_elems %d = 48 bytes\n'
    for precision, expected in ((4, "2|6"), (8, "2|3")):
        module = parse(text)
        CloseShapesPass(bytes_per_element=precision).apply(Context(), module)
        assert result_types(module)["d"] == TensorType(expected)
    module = parse(text)
    with pytest.raises(
        DiagnosticException, match="48 bytes is not a whole number of 5-byte elements"
    ):
        CloseShapesPass(bytes_per_element=5).apply(Context(), module)
    for make in (CloseShapesPass, GeneralizeShapesPass):
        with pytest.raises(
            DiagnosticException, match="bytes-per-element must be a positive"
        ):
            make(bytes_per_element=0).apply(Context(), parse(text))


def test_the_pass_is_registered_lazily() -> None:
    passes = Universe.get_multiverse().all_passes
    assert passes["generalize-shapes"]().name == "generalize-shapes"


def test_a_call_chain_longer_than_the_recursion_limit_is_traced(
    recursion_limit: int,
) -> None:
    """generalize-shapes traces callees first with an explicit stack: a chain
    of functions each calling the next works at any length, in call order.
    (The limit is lowered for the test: a chain's schemes grow quadratically
    with its length, docs/shape-schemes.md.)"""
    depth = recursion_limit + 200
    lines = [
        "tprog.func @f0(%in: !tprog.tensor) -> !tprog.tensor {",
        '  %r = tprog.pointwise %in {fn = "relu"}',
        "  tprog.return %r",
        "}",
    ]
    for k in range(1, depth):
        lines += [
            f"tprog.func @f{k}(%in: !tprog.tensor) -> !tprog.tensor {{",
            f'  %r = tprog.call @f{k - 1}(%in) at "s{k}" : !tprog.tensor',
            "  tprog.return %r",
            "}",
        ]
    lines += [
        '%a = tprog.leaf "2|->3"',
        f'%y = tprog.call @f{depth - 1}(%a) at "top" : !tprog.tensor',
    ]
    module = parse("\n".join(lines))
    GeneralizeShapesPass().apply(Context(), module)
    labels = [op.label.data for op in module.ops if isinstance(op, SchemeOp)]
    assert labels == [f"f{k}" for k in range(depth)]  # callees before callers
    CloseShapesPass().apply(Context(), module)
    assert str(result_types(module)["y"]) == '!tprog.tensor<"2|3">'


# A module-level operation connected to the shared weight (it fixes the
# weight's input width before the first call) and unnamed values around it.
CONNECTED = """
%w = tprog.param "...->4"
%0 = tprog.leaf "5"
%1 = tprog.compose %w, %0
tprog.func @layer(%in: !tprog.tensor) -> !tprog.tensor {
  %h = tprog.compose %w, %in
  %2 = tprog.pointwise %h {fn = "relu"}
  tprog.return %2
}
%a = tprog.leaf "2|->5"
%ya = tprog.call @layer(%a) at "small" : !tprog.tensor
"""

# Module-level operations no function body depends on, one of them wrong
# (sizes 3 and 6 disagree), unnamed like the body's values.
UNRELATED = """
%3 = tprog.leaf "3"
%4 = tprog.leaf "6"
%5 = tprog.pointwise %3, %4
"""


def scheme_texts(module: ModuleOp) -> list[list[str]]:
    return [
        [line.data for line in op.lines]
        for op in module.ops
        if isinstance(op, SchemeOp)
    ]


def test_generalize_evaluates_what_the_traces_depend_on() -> None:
    """The scheme sees the weight fixed by the connected compose (input 5);
    unrelated operations, even a wrong one, do not change it and are left to
    close-shapes, which reports the error."""
    alone = parse(CONNECTED)
    GeneralizeShapesPass().apply(Context(), alone)
    (text,) = scheme_texts(alone)
    assert "anchor 0 'w' [] | [...r10, 5] -> [4]" in text, text
    mixed = parse(UNRELATED + CONNECTED)
    GeneralizeShapesPass().apply(Context(), mixed)
    # The same scheme; the unnamed unrelated values still take their numbers
    # (tensor1 to tensor3), as when they were evaluated, so the body's unnamed
    # result is tensor6 instead of tensor3.
    assert scheme_texts(mixed) == [
        [line.replace("tensor3", "tensor6") for line in text]
    ]
    with pytest.raises(DiagnosticException, match="output axes disagree"):
        CloseShapesPass().apply(Context(), mixed)
