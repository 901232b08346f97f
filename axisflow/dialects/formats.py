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
from typing import ClassVar

from xdsl.dialects.builtin import ArrayAttr, IntegerAttr
from xdsl.ir import Attribute, Block, Region
from xdsl.irdl import IRDLOperation, RangeConstraint, VerificationContext
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    RegionVariable,
    TypeDirective,
    VariableDirective,
    VariadicResultVariable,
    irdl_custom_directive,
)
from xdsl.parser import Parser, UnresolvedOperand
from xdsl.printer import Printer
from xdsl.utils.exceptions import VerifyException

from axisflow.dialects.integers import count_attr, count_value, parse_int
from axisflow.dialects.keywords import END_OF_OP, reject_unknown_keyword
from axisflow.numerals import I64_MAX


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


def _refuse_wrong_type(
    parser: Parser,
    state: ParsingState,
    what: str,
    constraint: RangeConstraint,
    types: Sequence[Attribute],
    start: int,
    end: int,
) -> None:
    """A parse error at ``start:end`` if ``types`` break ``constraint``.

    xDSL's declarative parser checks the types itself but raises a bare
    ``VerifyException`` (a traceback in ``xdsl-opt``), so the directives that
    supply types check them first, where the text stands.
    """
    try:
        constraint.verify(types, VerificationContext())
    except VerifyException as error:
        parser.raise_error(f"{state.op_type.name}: {what}: {error}", start, end)


@irdl_custom_directive
class DefinedTypes(CustomDirective):
    """``custom<DefinedTypes>(type(operands))``: operand types from definitions.

    Placed after the operands; prints nothing.
    """

    operand_types: TypeDirective

    def parse(self, parser: Parser, state: ParsingState) -> None:
        default = _default_type(state)
        operand_defs = state.op_type.get_irdl_definition().operands
        for index, operands in enumerate(state.operands):
            if state.operand_types[index] is not None or operands is None:
                continue
            name, operand_def = operand_defs[index]
            types = [_defined_type(parser, operand, default) for operand in operands]
            for operand, type in zip(operands, types, strict=True):
                _refuse_wrong_type(
                    parser,
                    state,
                    f"operand '{name}' (%{operand.operand_name})",
                    operand_def.constr,
                    [type],
                    operand.span.start,
                    operand.span.end,
                )
            state.operand_types[index] = types

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
        start = parser.pos
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
        inner = self.result_types.inner
        assert isinstance(inner, VariableDirective)
        _, result_def = state.op_type.get_irdl_definition().results[inner.index]
        _refuse_wrong_type(
            parser, state, "result type", result_def.constr, types, start, parser.pos
        )
        inner.set_types(state, types)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        types = self.result_types.inner.get_types(op)
        if types:
            state.print_whitespace(printer)
            printer.print_string(": ")
            printer.print_list(types, printer.print_attribute)


class AttributeAnchor(CustomDirective):
    """Base of directives over one attribute (their first parameter): they
    anchor an optional group when the attribute is optional, present when set."""

    def attribute(self) -> AttributeVariable:
        """The attribute the directive parses and prints."""
        variable = getattr(self, next(iter(self.parameters)))
        assert isinstance(variable, AttributeVariable)
        return variable

    def is_present(self, op: IRDLOperation) -> bool:
        return self.attribute().is_present(op)

    def is_anchorable(self) -> bool:
        return self.attribute().is_anchorable()


class ListAnchor(AttributeAnchor):
    """Base of directives over an ``ArrayAttr`` property that anchor an
    optional clause: present when not empty; a clause left out is empty."""

    def is_present(self, op: IRDLOperation) -> bool:
        found = self.attribute().get(op)
        return isinstance(found, ArrayAttr) and bool(found.data)

    def is_anchorable(self) -> bool:
        return True

    def set_empty(self, state: ParsingState) -> None:
        self.attribute().set(state, _EMPTY_ARRAY)


_EMPTY_ARRAY: ArrayAttr[Attribute] = ArrayAttr(())
"""The one empty array of a clause left out (attributes are immutable; a
shared one is built and checked once)."""


@irdl_custom_directive
class Count(AttributeAnchor):
    """``custom<Count>($n)``: a non-negative count, printed as a bare integer.

    Parsed by :func:`~axisflow.dialects.integers.parse_int` (a located error
    for an over-long literal, naming the op and the property) and stored by
    :func:`~axisflow.dialects.integers.count_attr`; at most ``MAXIMUM``
    (``None``: any size).
    """

    count: AttributeVariable

    MAXIMUM: ClassVar[int | None] = None
    ALLOW_NEGATIVE: ClassVar[bool] = False

    def parse(self, parser: Parser, state: ParsingState) -> None:
        start = parser.pos
        what = f"{state.op_type.name} {self.count.name}"
        value = parse_int(
            parser, what, self.MAXIMUM, allow_negative=self.ALLOW_NEGATIVE
        )
        self.check(parser, state, value, start)
        self.count.set(state, count_attr(value))

    def check(self, parser: Parser, state: ParsingState, value: int, start: int):
        """Refuse a value out of range, at its position (none here)."""

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        attr = self.count.get(op)
        assert isinstance(attr, IntegerAttr)
        state.print_whitespace(printer)
        printer.print_string(str(count_value(attr)))


@irdl_custom_directive
class I64Count(Count):
    """``custom<I64Count>($n)``: a count of at most ``2**63 - 1`` (an ``i64``)."""

    count: AttributeVariable  # parameters are read from the class's own fields

    MAXIMUM = I64_MAX


@irdl_custom_directive
class I64Integer(Count):
    """``custom<I64Integer>($n)``: an ``i64`` integer, negative ones too
    (range rules are the verifier's)."""

    count: AttributeVariable  # parameters are read from the class's own fields

    MAXIMUM = I64_MAX
    ALLOW_NEGATIVE = True


@irdl_custom_directive
class PositiveCount(Count):
    """``custom<PositiveCount>($n)``: a count that must be at least 1."""

    count: AttributeVariable  # parameters are read from the class's own fields

    ALLOW_NEGATIVE = True

    def check(self, parser: Parser, state: ParsingState, value: int, start: int):
        if value < 1:
            parser.raise_error(
                f"{state.op_type.name}: the {self.count.name} must be a positive integer",
                start,
                parser.pos,
            )


@irdl_custom_directive
class Body(CustomDirective):
    """``custom<Body>($body)``: a single-block region without block arguments.

    ``{ }`` parses to one empty block (not to a region without blocks), and
    the block's (absent) arguments are not printed.
    """

    body: RegionVariable

    def _region(self, parser: Parser) -> Region:
        return parser.parse_region()

    def parse(self, parser: Parser, state: ParsingState) -> None:
        region = self._region(parser)
        if not region.blocks:
            region.add_block(Block())
        self.body.set(state, region)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_region(self.body.get(op), print_entry_block_args=False)


@irdl_custom_directive
class OptionalBody(Body):
    """``custom<OptionalBody>($body)``: a single-block region that may be left
    out (an empty block); always printed."""

    body: RegionVariable  # parameters are read from the class's own fields

    def _region(self, parser: Parser) -> Region:
        region = parser.parse_optional_region()
        return Region() if region is None else region


@irdl_custom_directive
class NonEmptyBody(CustomDirective):
    """``custom<NonEmptyBody>($body)``: a region printed only when it holds
    ops; left out, it has no block."""

    body: RegionVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        region = parser.parse_optional_region()
        self.body.set(state, Region() if region is None else region)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        region = self.body.get(op)
        block = region.blocks.first
        if block is None or block.first_op is None:
            return
        state.print_whitespace(printer)
        printer.print_region(
            region, print_entry_block_args=False, print_empty_block=False
        )


class UnknownKeyword(CustomDirective):
    """Base of ``custom<...>()`` directives that refuse a misspelt keyword.

    Placed where optional keyword clauses were declined (the else branch of
    an optional group); see :func:`~axisflow.dialects.keywords.reject_unknown_keyword`.
    A subclass names the keywords accepted there (``EXPECTED``) and what else
    may follow (``THEN``). When ``EXPECTED`` starts with optional clauses that
    come in order, ``CLAUSES`` names their properties: only the keywords after
    the last clause given are expected. Prints nothing.
    """

    EXPECTED: ClassVar[tuple[str, ...]]
    THEN: ClassVar[tuple[str, ...]] = END_OF_OP
    CLAUSES: ClassVar[tuple[str, ...]] = ()

    def expected(self, state: ParsingState) -> tuple[str, ...]:
        """The keywords accepted here, given the clauses parsed so far."""
        given = [
            position
            for position, name in enumerate(self.CLAUSES)
            if (attr := state.properties.get(name)) is not None
            and not (isinstance(attr, ArrayAttr) and not attr.data)
        ]
        return self.EXPECTED[given[-1] + 1 :] if given else self.EXPECTED

    def parse(self, parser: Parser, state: ParsingState) -> None:
        reject_unknown_keyword(
            parser, state.op_type.name, self.expected(state), then=self.THEN
        )

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        return
