"""The private xDSL members axisflow uses: all there, all used only through
``axisflow.xdsl_compat``, and each helper doing what xDSL's public
equivalent does."""

from __future__ import annotations

import ast
import dataclasses
import re
from io import StringIO
from pathlib import Path

import pytest
import xdsl
from xdsl.context import Context
from xdsl.dialects import arith, builtin, cf, func
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i32, i64
from xdsl.dialects.test import TestOp as _TestOp
from xdsl.interpreter import Interpreter, OpImplResult, PythonValues
from xdsl.interpreters import arith as arith_impls
from xdsl.interpreters import func as func_impls
from xdsl.ir import Block, Operation, Region
from xdsl.printer import Printer
from xdsl.utils.lexer import Token
from xdsl.utils.mlir_lexer import MLIRTokenKind

from axisflow.dialects.batch import IndexAttr
from axisflow.xdsl_compat import (
    PRIVATE_MEMBERS,
    IntegerCheckingParser,
    PrivateMember,
    StepHookInterpreter,
    current_token,
    dialect_stack,
    first_op_in,
    has_operands,
    has_successors,
    next_op_of,
    print_new_line,
    resume_at,
    set_value_type,
)

PACKAGE = Path(__file__).resolve().parents[1] / "axisflow"


def _defines(owner: type, name: str) -> bool:
    """Whether ``owner`` has ``name``: a class attribute, or a dataclass
    field without a default (which lives on instances only)."""
    if hasattr(owner, name):
        return True
    return dataclasses.is_dataclass(owner) and any(
        f.name == name for f in dataclasses.fields(owner)
    )


@pytest.mark.parametrize(
    "member",
    PRIVATE_MEMBERS,
    ids=[f"{m.owner.__name__}.{m.name}" for m in PRIVATE_MEMBERS],
)
def test_every_private_member_exists(member: PrivateMember) -> None:
    where = f"{member.owner.__module__}.{member.owner.__qualname__}.{member.name}"
    assert _defines(member.owner, member.name), (
        f"xDSL {xdsl.__version__} has no {where}, which axisflow uses "
        f"({member.use}): adapt axisflow/xdsl_compat.py"
    )


def test_no_module_but_the_compatibility_module_names_them() -> None:
    # Only modules that import xDSL can reach its members (a pure module may
    # have a method of the same name).
    names = sorted({m.name for m in PRIVATE_MEMBERS})
    pattern = re.compile(r"\.(" + "|".join(map(re.escape, names)) + r")\b")
    found = [
        f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "xdsl_compat.py" and _imports_xdsl(path)
        for number, line in enumerate(path.read_text("utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []


def _imports_xdsl(path: Path) -> bool:
    return any(
        isinstance(node, ast.Import | ast.ImportFrom)
        and any(
            name == "xdsl" or name.startswith("xdsl.")
            for name in (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else [alias.name for alias in node.names]
            )
        )
        for node in ast.walk(ast.parse(path.read_text("utf-8")))
    )


def test_the_scan_sees_the_modules_that_use_xdsl() -> None:
    assert _imports_xdsl(PACKAGE / "dialects" / "batch_model.py")
    assert _imports_xdsl(PACKAGE / "xdsl_compat.py")
    assert not _imports_xdsl(PACKAGE / "roles" / "index.py")


def _three_ops() -> tuple[Region, list[Operation]]:
    ops: list[Operation] = [_TestOp(), _TestOp(), _TestOp()]
    return Region(Block(ops)), ops


def test_the_linked_list_helpers_agree_with_the_public_properties() -> None:
    region, ops = _three_ops()
    assert first_op_in(region) is ops[0] is region.block.first_op
    assert [next_op_of(op) for op in ops] == [op.next_op for op in ops]
    assert next_op_of(ops[0]) is ops[1]
    assert next_op_of(ops[2]) is None
    assert first_op_in(Region()) is None
    assert first_op_in(Region(Block())) is None


def test_operand_and_successor_tests_agree_with_the_public_lists() -> None:
    constant = arith.ConstantOp(IntegerAttr(1, i64))
    user = _TestOp([constant.result])
    target = Block()
    branching = cf.BranchOp(target)
    for op in (constant, user, branching):
        assert bool(has_operands(op)) == bool(op.operands)
        assert bool(has_successors(op)) == bool(op.successors)
    assert has_operands(user) and not has_operands(constant)
    assert has_successors(branching) and not has_successors(user)


def test_set_value_type_changes_the_type_in_place() -> None:
    constant = arith.ConstantOp(IntegerAttr(1, i64))
    value = constant.result
    set_value_type(value, i32)
    assert value.type == i32
    assert constant.result is value


def test_resume_at_restarts_the_token_stream() -> None:
    parser = IntegerCheckingParser(Context(), "alpha beta gamma")
    assert current_token(parser).text == "alpha"
    resume_at(parser, len("alpha beta "))
    assert current_token(parser).text == "gamma"
    assert parser.parse_optional_identifier() == "gamma"


def test_dialect_stack_is_the_parsers() -> None:
    parser = IntegerCheckingParser(Context(), "")
    assert dialect_stack(parser) == ["builtin"]


def test_print_new_line_keeps_the_indentation() -> None:
    stream = StringIO()
    printer = Printer(stream=stream)
    printer.print_string("{")
    with printer.indented():
        print_new_line(printer)
        printer.print_string("x")
    print_new_line(printer)
    printer.print_string("}")
    assert stream.getvalue() == "{\n  x\n}"


class _RecordingParser(IntegerCheckingParser):
    def __init__(self, text: str) -> None:
        super().__init__(Context(), text)
        self.seen: list[str] = []

    def check_integer_literal(self, token: Token[MLIRTokenKind, str]) -> None:
        self.seen.append(token.text)


def test_the_integer_hook_sees_every_integer_literal_and_nothing_else() -> None:
    parser = _RecordingParser('17 "text" 4 word')
    assert parser.parse_integer() == 17
    assert parser.parse_str_literal() == "text"
    assert parser.parse_integer() == 4
    assert parser.parse_identifier() == "word"
    assert parser.seen == ["17", "4"]


class _RecordingInterpreter(StepHookInterpreter):
    def __init__(self, module: builtin.ModuleOp) -> None:
        super().__init__(module)
        self.steps: list[str] = []

    def run_step(self, op: Operation, inputs: PythonValues) -> OpImplResult:
        self.steps.append(op.name)
        return super().run_step(op, inputs)


def test_the_step_hook_sees_every_op_run() -> None:
    block = Block()
    one = arith.ConstantOp(IntegerAttr(20, i64))
    two = arith.ConstantOp(IntegerAttr(22, i64))
    total = arith.AddiOp(one, two)
    block.add_ops([one, two, total, func.ReturnOp(total)])
    main = func.FuncOp("main", ((), (i64,)), Region(block))
    module = builtin.ModuleOp([main])
    plain = Interpreter(module)
    interpreter = _RecordingInterpreter(module)
    for each in (plain, interpreter):
        each.register_implementations(arith_impls.ArithFunctions())
        each.register_implementations(func_impls.FuncFunctions())
    assert interpreter.call_op("main", ()) == plain.call_op("main", ())
    assert interpreter.call_op("main", ()) == (IntegerAttr(42, i64),)
    interpreter.steps.clear()
    interpreter.call_op("main", ())
    assert interpreter.steps == [
        "arith.constant",
        "arith.constant",
        "arith.addi",
        "func.return",
    ]


def test_attributes_can_hold_caches() -> None:
    # The dialects cache parsed labels in their (frozen) attributes' __dict__.
    attr = IndexAttr("a_1<i_1,i_2>")
    assert "_parsed" not in attr.__dict__
    assert str(attr.index) == "a_1<i_1,i_2>"
    assert "_parsed" in attr.__dict__
    assert isinstance(StringAttr("x").__dict__, dict)
