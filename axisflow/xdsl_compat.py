"""Every private member of xDSL that axisflow uses, in one place.

axisflow pins ``xdsl==0.75.0``. xDSL may rename or drop what it does not
export (names starting with ``_``) in any release; this module is the only
place in axisflow that reads, writes, calls or overrides such a member, so
that an upgrade has one file to check. ``PRIVATE_MEMBERS`` lists each member
with what it is used for, and ``tests/test_xdsl_compat.py`` fails naming any
member the installed xDSL lacks (and checks each helper against xDSL's public
equivalent where there is one).

The members and why no public API does instead:

* ``Operation._next_op``, ``Region._first_block``, ``Block._first_op``: the
  forest reader and the roles writer walk every op of a forest through the
  linked lists; the public ``next_op``/``first_block``/``first_op``
  properties cost a Python call each (``operator.attrgetter`` does not).
* ``Operation._operands``, ``Operation._successors``: the fast verifier asks
  whether an op has any; the public ``operands``/``successors`` build a view
  object per call.
* ``GenericParser._resume_from``: custom op syntaxes scan SeQuant labels
  (``μ̃_1``, ``a_1<i_1,i_2>``, not MLIR tokens) from the raw text and restart
  the token stream after them.
* ``GenericParser._current_token``: the next token, for a located error at a
  misspelt keyword and at a failing op.
* ``GenericParser._parser_state`` (its ``dialect_stack``): whether a word
  names an op the parser would accept next (xDSL's own op lookup).
* ``GenericParser._consume_token``: overridden to refuse an integer literal
  before Python's int conversion fails on it with its own wording.
* ``BasePrinter._print_new_line``: a new line at the printer's indentation
  inside a custom op syntax.
* ``SSAValue._type``: a value retyped in place, as MLIR's ``Value::setType``
  (xDSL's ``Rewriter.replace_value_with_new_type`` makes a new value).
* ``Interpreter._run_op``: overridden to name the innermost op an error
  comes from.

Beyond members: the dialects keep caches in the ``__dict__`` of their
(frozen dataclass) attributes; the test checks that attributes still have one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from operator import attrgetter
from typing import cast

from xdsl.interpreter import Interpreter, OpImplResult, PythonValues
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.parser import BaseParser, Parser
from xdsl.parser.generic_parser import GenericParser
from xdsl.printer import Printer
from xdsl.utils.base_printer import BasePrinter
from xdsl.utils.lexer import Token
from xdsl.utils.mlir_lexer import MLIRTokenKind


@dataclass(frozen=True)
class PrivateMember:
    """One private member of an xDSL class that axisflow relies on."""

    owner: type
    """The xDSL class that defines it."""
    name: str
    """The member's name."""
    use: str
    """What axisflow uses it for (and through which helper of this module)."""


PRIVATE_MEMBERS: tuple[PrivateMember, ...] = (
    PrivateMember(Operation, "_next_op", "next_op_of: forest reader, roles writer"),
    PrivateMember(Region, "_first_block", "first_op_in: forest reader"),
    PrivateMember(Block, "_first_op", "first_op_in: forest reader"),
    PrivateMember(Operation, "_operands", "has_operands: fast verifier"),
    PrivateMember(Operation, "_successors", "has_successors: fast verifier"),
    PrivateMember(
        GenericParser, "_resume_from", "resume_at: labels scanned from the raw text"
    ),
    PrivateMember(
        GenericParser,
        "_current_token",
        "current_token: keyword errors, axisflow-opt's located errors",
    ),
    PrivateMember(
        GenericParser, "_parser_state", "dialect_stack: is a word an op's name"
    ),
    PrivateMember(
        GenericParser,
        "_consume_token",
        "IntegerCheckingParser overrides it: axisflow-opt's digit limit",
    ),
    PrivateMember(
        BasePrinter, "_print_new_line", "print_new_line: tprog's multi-line syntax"
    ),
    PrivateMember(SSAValue, "_type", "set_value_type: close-shapes retypes values"),
    PrivateMember(
        Interpreter, "_run_op", "StepHookInterpreter overrides it: axisflow-run"
    ),
)
"""Every private xDSL member used, with its use."""


# --------------------------------------------------------------------------
# IR structure
# --------------------------------------------------------------------------

next_op_of = cast(Callable[[Operation], Operation | None], attrgetter("_next_op"))
"""The op after ``op`` in its block (``op.next_op``, without a Python call)."""

_first_block_of = cast(Callable[[Region], Block | None], attrgetter("_first_block"))
_first_op_of = cast(Callable[[Block], Operation | None], attrgetter("_first_op"))


def first_op_in(region: Region) -> Operation | None:
    """The first op of the first block of ``region`` (``None`` without one)."""
    block = _first_block_of(region)
    return None if block is None else _first_op_of(block)


has_operands = cast(Callable[[Operation], object], attrgetter("_operands"))
"""Truthy when ``op`` has operands (``op.operands`` builds a view per call)."""

has_successors = cast(Callable[[Operation], object], attrgetter("_successors"))
"""Truthy when ``op`` has successors (``op.successors`` builds a view per call)."""


def set_value_type(value: SSAValue, new_type: Attribute) -> None:
    """Give ``value`` a new type in place (MLIR's ``Value::setType``); the
    caller keeps the IR consistent (every use must accept the new type)."""
    value._type = new_type  # pyright: ignore[reportPrivateUsage]


# --------------------------------------------------------------------------
# Parsing and printing
# --------------------------------------------------------------------------


def resume_at(parser: BaseParser, position: int) -> None:
    """Restart ``parser``'s token stream at ``position`` of its input."""
    parser._resume_from(position)  # pyright: ignore[reportPrivateUsage]


def current_token(parser: BaseParser) -> Token[MLIRTokenKind, str]:
    """The token ``parser`` reads next (not consumed)."""
    return parser._current_token  # pyright: ignore[reportPrivateUsage]


def dialect_stack(parser: Parser) -> list[str]:
    """The dialects whose ops ``parser`` accepts by their short names now."""
    return parser._parser_state.dialect_stack  # pyright: ignore[reportPrivateUsage]


def print_new_line(printer: Printer) -> None:
    """A new line at ``printer``'s current indentation."""
    printer._print_new_line()  # pyright: ignore[reportPrivateUsage]


class IntegerCheckingParser(Parser):
    """xDSL's ``Parser`` calling ``check_integer_literal`` on every integer
    literal before consuming it (xDSL has no hook there)."""

    def check_integer_literal(self, token: Token[MLIRTokenKind, str]) -> None:
        """Raise a ``ParseError`` to refuse ``token``; accepts by default."""

    def _consume_token(
        self, expected_kind: MLIRTokenKind | None = None
    ) -> Token[MLIRTokenKind, str]:
        token = self._current_token
        if token.kind == MLIRTokenKind.INTEGER_LIT:
            self.check_integer_literal(token)
        return super()._consume_token(expected_kind)


class StepHookInterpreter(Interpreter):
    """xDSL's ``Interpreter`` running every op through ``run_step``, which a
    subclass overrides to wrap each op's run (xDSL's listeners cannot catch)."""

    def run_step(self, op: Operation, inputs: PythonValues) -> OpImplResult:
        """Run ``op`` on ``inputs`` as xDSL does."""
        return super()._run_op(op, inputs)

    def _run_op(self, op: Operation, inputs: PythonValues) -> OpImplResult:
        return self.run_step(op, inputs)
