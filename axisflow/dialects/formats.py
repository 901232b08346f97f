"""Custom directives for the dialects' declarative ``assembly_format``.

The ``batch``, ``sched`` and ``tprog`` syntaxes print operands without their
types: an operand's type is whatever its definition says. xDSL's declarative
format needs every operand type either printed or inferable from the
constraints, so :class:`DefinedTypes` supplies them at parse time from the
operands' definitions (it prints nothing). :class:`ResultTypes` is an
optional ``: type, ...`` whose absence means the op's default result types.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.ir import Attribute
from xdsl.irdl import IRDLOperation
from xdsl.irdl.declarative_assembly_format import (
    CustomDirective,
    ParsingState,
    PrintingState,
    TypeDirective,
    VariadicResultVariable,
    irdl_custom_directive,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer


class DefaultTypes:
    """Mixin of ops whose omitted operand and result types have a default.

    :meth:`default_type` is the type of an operand used before its definition
    (a forward reference) and of a result whose ``: type`` is left out.
    """

    @classmethod
    def default_type(cls) -> Attribute:
        """The type an omitted operand or result type stands for."""
        raise NotImplementedError(cls.__name__)


def _default_type(state: ParsingState) -> Attribute:
    op_type = state.op_type
    assert issubclass(op_type, DefaultTypes), op_type
    return op_type.default_type()


def _defined_type(
    parser: Parser, operand: UnresolvedOperand, default: Attribute
) -> Attribute:
    defined = parser.ssa_values.get(operand.operand_name)
    if defined is not None and operand.index < len(defined):
        return defined[operand.index].type
    return default


@irdl_custom_directive
class DefinedTypes(CustomDirective):
    """``custom<DefinedTypes>(type(operands))``: operand types from definitions.

    Placed after the operands; prints nothing.
    """

    operand_types: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        default = _default_type(state)
        for index, operands in enumerate(state.operands):
            if state.operand_types[index] is None and operands is not None:
                state.operand_types[index] = [
                    _defined_type(parser, operand, default) for operand in operands
                ]

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        return


@irdl_custom_directive
class ResultTypes(CustomDirective):
    """``custom<ResultTypes>(type($r))``: ``: type, ...``, optional.

    Without it, a single result has the op's ``default_type`` and a variadic
    result is empty. Printed whenever there is a result.
    """

    result_types: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        types: Sequence[Attribute]
        variadic = isinstance(self.result_types.inner, VariadicResultVariable)
        if parser.parse_optional_punctuation(":") is not None:
            types = (
                parser.parse_comma_separated_list(
                    Parser.Delimiter.NONE, parser.parse_type
                )
                if variadic
                else (parser.parse_type(),)
            )
        elif variadic:
            types = ()
        else:
            types = (_default_type(state),)
        self.result_types.inner.set_types(state, types)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        types = self.result_types.inner.get_types(op)
        if types:
            state.print_whitespace(printer)
            printer.print_string(": ")
            printer.print_list(types, printer.print_attribute)
