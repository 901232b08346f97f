"""The tprog dialect and the close-shapes pass, driven from Python."""

from __future__ import annotations

import re

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ArrayAttr, IntAttr, ModuleOp, NoneAttr, StringAttr
from xdsl.ir import Attribute
from xdsl.parser import Parser
from xdsl.utils.exceptions import DiagnosticException, ParseError, VerifyException

from axisflow.dialects.tprog import (
    FUNCTION_TABLES,
    UNKNOWN,
    CallOp,
    FuncOp,
    LeafOp,
    ReturnOp,
    TensorType,
)
from axisflow.dialects.tprog_eval import ProgramEvaluator
from axisflow.passes.close_shapes import CloseShapesPass
from axisflow.shapes import Session
from tests.conftest import context


def parse(text: str) -> ModuleOp:
    """Parse without verifying (the verifier's errors are tested here)."""
    return Parser(context(), text).parse_module()


def test_tensor_type_is_canonical_and_reads_back_dims() -> None:
    assert TensorType("8|3,5->4").dims() == ((8,), (3, 5), (4,))
    assert TensorType(" 8 | ->4 ").shape_text == "8|4"
    assert TensorType("->4") == TensorType("4")
    assert not UNKNOWN.is_known and UNKNOWN.dims() is None
    with pytest.raises(ValueError, match="needs a concrete shape"):
        TensorType("...->4")


def test_tensor_type_holds_its_dims_as_parameters(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    tensor = TensorType("8|3,5@rgb->4")
    assert tensor.batch == ArrayAttr([IntAttr(8)])
    assert tensor.input == ArrayAttr([IntAttr(3), IntAttr(5)])
    assert tensor.output == ArrayAttr([IntAttr(4)])
    assert [basis.data for basis in tensor.bases.data] == [
        "default",
        "default",
        "rgb",
        "default",
    ]
    assert TensorType("8|3->4").bases == ArrayAttr([])  # all default: none listed

    def no_parsing(text: str) -> None:
        raise AssertionError(f"parsed {text!r}")

    monkeypatch.setattr("axisflow.dialects.tprog.parse_shape_spec", no_parsing)
    assert tensor.dims() == ((8,), (3, 5), (4,))
    assert tensor.shape_text == "8|3,5@rgb->4"
    assert str(tensor) == '!tprog.tensor<"8|3,5@rgb->4">'


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ((NoneAttr(), ArrayAttr([]), ArrayAttr([])), "all known or all unknown"),
        ((ArrayAttr([]), ArrayAttr([]), ArrayAttr([IntAttr(0)])), "positive"),
    ],
)
def test_tensor_type_verifier_refuses_malformed_parameters(
    parameters: tuple[Attribute, ...], message: str
) -> None:
    with pytest.raises(VerifyException, match=message):
        TensorType.new((*parameters, ArrayAttr([]))).verify()


@pytest.mark.parametrize(
    ("bases", "message"),
    [
        (["default", "rgb"], "2 basis labels for 1 dims"),
        (["default"], "only when one is not the default"),
        (["r g"], "malformed basis label 'r g'"),
    ],
)
def test_tensor_type_verifier_refuses_malformed_bases(
    bases: list[str], message: str
) -> None:
    size = IntAttr(1) if bases == ["r g"] else IntAttr(2)
    parameters = (ArrayAttr([]), ArrayAttr([]), ArrayAttr([size]))
    with pytest.raises(VerifyException, match=message):
        TensorType.new(
            (*parameters, ArrayAttr([StringAttr(b) for b in bases]))
        ).verify()


def test_tensor_type_verifier_refuses_a_basis_on_a_size_one() -> None:
    parameters = (ArrayAttr([]), ArrayAttr([]), ArrayAttr([IntAttr(1), IntAttr(2)]))
    bases = ArrayAttr([StringAttr("rgb"), StringAttr("default")])
    with pytest.raises(VerifyException, match="a size 1 has the default basis"):
        TensorType.new((*parameters, bases)).verify()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '%c = "builtin.unrealized_conversion_cast"() : () -> i32\n'
            "%t = tprog.transpose %c",
            "tprog.transpose: operand 'input' (%c): i32 should be of base "
            "attribute tprog.tensor",
        ),
        (
            "%t = tprog.leaf : i32",
            "tprog.leaf: result type: i32 should be of base attribute tprog.tensor",
        ),
    ],
)
def test_a_type_that_is_not_a_tensor_is_a_located_parse_error(
    text: str, message: str
) -> None:
    # xDSL's declarative parser would raise a bare VerifyException here.
    with pytest.raises(ParseError, match=re.escape(message)):
        parse(text)


def test_call_verification_builds_one_function_table_per_module() -> None:
    calls = "\n".join(
        f'%y{i} = tprog.call @id(%x) at "site{i}" : !tprog.tensor' for i in range(200)
    )
    module = parse(
        '%x = tprog.leaf "3"\n'
        "tprog.func @id(%in: !tprog.tensor) -> !tprog.tensor {\n  tprog.return %in\n}\n"
        + calls
    )
    before = FUNCTION_TABLES.builds
    module.verify()
    assert FUNCTION_TABLES.builds == before + 1
    module.verify()
    assert FUNCTION_TABLES.builds == before + 1


def test_function_table_sees_functions_added_later() -> None:
    module = parse('%x = tprog.leaf "3"')
    x = module.ops.first
    assert isinstance(x, LeafOp)
    call = CallOp("later", [x.result], "site", [UNKNOWN])
    module.body.block.add_op(call)
    with pytest.raises(VerifyException, match=r"no tprog\.func named @later"):
        module.verify()
    func = FuncOp("later", 1, 1)
    func.body.block.add_op(ReturnOp([func.body.block.args[0]]))
    module.body.block.add_op(func)
    module.verify()


def test_pass_writes_types_and_keeps_the_program() -> None:
    module = parse(
        """
        %x = tprog.leaf "8|->3"
        %w = tprog.param "...->16"
        %h = tprog.compose %w, %x
        """
    )
    CloseShapesPass().apply(Context(), module)
    types = [op.results[0].type for op in module.ops]
    assert types == [TensorType("8|3"), TensorType("3->16"), TensorType("8|16")]
    module.verify()


def test_pass_reports_shape_errors_as_diagnostics() -> None:
    module = parse(
        """
        %a = tprog.leaf "3"
        %b = tprog.leaf "5"
        %c = tprog.pointwise %a, %b
        """
    )
    with pytest.raises(DiagnosticException, match="pointwise 'c' of a, b: output axes"):
        CloseShapesPass().apply(Context(), module)


def test_evaluator_exposes_the_session_for_extensions() -> None:
    module = parse(
        """
        %x = tprog.leaf "2|->3"
        tprog.func @f(%in: !tprog.tensor) -> !tprog.tensor {
          %t = tprog.transpose %in
          tprog.return %t
        }
        %y = tprog.call @f(%x) at "one" : !tprog.tensor
        """
    )
    evaluator = ProgramEvaluator(module, session=Session(keep_log=True))
    evaluator.evaluate()
    assert evaluator.session.closings == 1
    (body_value,) = [v for v in evaluator.body_shapes if v.name_hint == "t"]
    seen = evaluator.body_shapes[body_value]
    assert seen.count == 1
    assert seen.first.dims() == ((2,), (3,), ())
    origins = [c.origin for c in evaluator.session.log if c.origin.tensor == "t"]
    assert origins and all(o.application == "one" for o in origins)
