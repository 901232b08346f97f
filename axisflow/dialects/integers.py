"""Non-negative counts (byte sizes, arities, extents) as attributes real MLIR
reads in generic form.

``#builtin.int<N>`` (xDSL's ``IntAttr``) has no MLIR spelling, so counts are
builtin ``IntegerAttr``: ``i64`` when the value fits, otherwise the narrowest
signless width, a multiple of 64 bits, that holds it with its sign bit clear
(dense byte sizes of real equations can pass 2**63; MLIR integers take any
width). The custom syntax prints the bare number, and parsing it back picks
the same width, so a round trip is exact.
"""

from __future__ import annotations

from xdsl.dialects.builtin import IntegerAttr, IntegerType, i64


def count_attr(value: int) -> IntegerAttr:
    """The attribute of the non-negative count ``value``."""
    if value < 2**63:
        return IntegerAttr(value, i64)
    width = 64 * -(-(value.bit_length() + 1) // 64)
    return IntegerAttr(value, IntegerType(width))


def count_value(attr: IntegerAttr) -> int:
    """The count an attribute holds."""
    return attr.value.data
