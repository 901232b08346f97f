"""Non-negative counts (byte sizes, arities, extents) as attributes real MLIR
reads in generic form.

``#builtin.int<N>`` (xDSL's ``IntAttr``) has no MLIR spelling, so counts are
builtin ``IntegerAttr``: ``i64`` when the value fits, otherwise the narrowest
signless width, a multiple of 64 bits, that holds it with its sign bit clear
(dense byte sizes of real equations can pass 2**63; MLIR integers take any
width). The custom syntax prints the bare number, and parsing it back picks
the same width, so a round trip is exact.

``parse_int`` reads every integer of the custom syntaxes: at most
``MAX_DIGITS`` digits and, for an ``i64`` property, at most ``I64_MAX``, or a
located error naming the field (xDSL's own says only "out of range for type
i64", without a position, or quotes Python's int-conversion limit).
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, IntegerType, i64
from xdsl.parser import Parser

from axisflow.numerals import I64_MAX, NumeralError, check_numeral_at


def count_attr(value: int) -> IntegerAttr:
    """The attribute of the non-negative count ``value``."""
    if value < 2**63:
        return IntegerAttr(value, i64)
    width = 64 * -(-(value.bit_length() + 1) // 64)
    return IntegerAttr(value, IntegerType(width))


def count_value(attr: IntegerAttr) -> int:
    """The count an attribute holds."""
    return attr.value.data


def parse_int(
    parser: Parser,
    what: str,
    maximum: int | None = I64_MAX,
    *,
    allow_negative: bool = True,
) -> int:
    """An integer literal of at most ``MAX_DIGITS`` digits and magnitude at
    most ``maximum`` (``None``: any count, as ``count_attr`` stores); else a
    parse error at the literal naming ``what`` and the limit."""
    start = parser.pos
    try:
        check_numeral_at(parser.lexer.input.content, start, what, maximum)
    except NumeralError as error:
        parser.raise_error(str(error), start, max(start + 1, parser.pos))
    value = parser.parse_integer(
        allow_boolean=False, allow_negative=allow_negative, context_msg=f" for {what}"
    )
    if maximum is not None and abs(value) > maximum:  # a hexadecimal literal
        parser.raise_error(f"{what} {value} exceeds the maximum {maximum}", start)
    return value
