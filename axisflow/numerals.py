"""Decimal numerals in every text axisflow reads (IR, shape specs, SeQuant).

The other direction, printing, has one rule too: sizes and counts are exact
integers of any size, printed without a float (``significant``).

One rule for all readers: a numeral is ASCII digits only (``str.isdigit``
also accepts ``²`` and ``٣``, which ``int`` then rejects or reads), at most
``MAX_DIGITS`` long (Python's own int-conversion limit would otherwise
surface with no position) and, where the value is stored as an MLIR ``i64``,
at most ``I64_MAX``. ``NumeralError`` carries the reason; each reader turns it
into its own located error (file:line:col, op or text position).

Pure Python, no xDSL.
"""

from __future__ import annotations

from fractions import Fraction

MAX_DIGITS = 4300
"""Longest numeral accepted: Python's default ``sys.get_int_max_str_digits()``."""

I64_MAX = 2**63 - 1
"""Largest value stored in a signed 64-bit integer attribute."""


class NumeralError(ValueError):
    """A numeral that is not ASCII digits, too long, or out of range."""


def is_ascii_digit(char: str) -> bool:
    """Whether ``char`` is one of ``0`` to ``9`` (``²`` is not)."""
    return "0" <= char <= "9" and len(char) == 1


def ascii_digits_end(text: str, start: int, end: int | None = None) -> int:
    """The end of the run of ASCII digits starting at ``start``."""
    stop = len(text) if end is None else end
    pos = start
    while pos < stop and "0" <= text[pos] <= "9":
        pos += 1
    return pos


def natural(digits: str, what: str, maximum: int | None = None) -> int:
    """The value of ``digits``; raise ``NumeralError`` naming ``what`` and the limit.

    ``digits`` must be non-empty ASCII digits, at most ``MAX_DIGITS`` long,
    with a value at most ``maximum`` when one is given.
    """
    if not digits or ascii_digits_end(digits, 0) != len(digits):
        raise NumeralError(f"{what} must be ASCII digits 0-9, got {_shown(digits)}")
    if len(digits) > MAX_DIGITS:
        raise NumeralError(
            f"{what} has {len(digits)} digits, more than the limit of {MAX_DIGITS}"
        )
    value = int(digits)
    if maximum is not None and value > maximum:
        raise NumeralError(f"{what} {_shown(digits)} exceeds the maximum {maximum}")
    return value


def check_numeral_at(
    text: str, pos: int, what: str, maximum: int | None = None
) -> None:
    """Check the decimal numeral at ``pos`` (after an optional ``-``) before a
    parser converts it: at most ``MAX_DIGITS`` digits, magnitude at most
    ``maximum``. Raises ``NumeralError``; nothing there is not an error."""
    if pos < len(text) and text[pos] == "-":
        pos += 1
    end = pos
    while end < len(text) and text[end].isdigit():  # '²' too: refused below
        end += 1
    if end > pos:
        natural(text[pos:end], what, maximum)


def check_count(parameter: str, value: object, maximum: int = I64_MAX) -> None:
    """A Python API argument that must be a positive int (``bool`` is not):
    ``TypeError`` or ``ValueError`` naming ``parameter`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{parameter} must be a positive int, got {value!r} ({type(value).__name__})"
        )
    if value < 1:
        raise ValueError(f"{parameter} must be positive, got {value}")
    if value > maximum:
        raise ValueError(f"{parameter} must be at most {maximum}, got {value}")


def _shown(digits: str) -> str:
    """``digits`` for a message: quoted, long numerals cut to 24 characters."""
    if len(digits) <= 24:
        return repr(digits)
    return repr(digits[:24] + "…")


_LOG10_2 = 0.30102999566398120
"""log10(2): the decimal exponent of a number from its bit length, to one."""


def significant(
    value: int | Fraction, digits: int = 4, *, keep_zeros: bool = False
) -> str:
    """``value`` to ``digits`` significant digits, as ``format(x, ".4g")``
    prints a float (``"#.4g"`` with ``keep_zeros``), computed exactly.

    Sizes and counts are integers of any size (18 modes at extent 10^18 are
    10^324 bytes): converting them to a float overflows past 1.8e308 and
    rounds twice below it, and ``str`` refuses more than ``MAX_DIGITS``
    digits. Here the decimal exponent comes from the bit length and the
    mantissa from one exact division, rounded half to even as Python rounds
    a float's exact value: ``significant(2**70) == "1.181e+21"``,
    ``significant(Fraction(1, 3), 3, keep_zeros=True) == "0.333"``.
    """
    if digits < 1:
        raise ValueError(f"digits must be positive, got {digits}")
    exact = Fraction(value)
    if exact < 0:
        return "-" + significant(-exact, digits, keep_zeros=keep_zeros)
    point = "." if keep_zeros else ""  # the alternate form keeps the point
    if exact == 0:
        return "0" + point + "0" * (digits - 1) if keep_zeros else "0"
    bits = exact.numerator.bit_length() - exact.denominator.bit_length()
    exponent = int(bits * _LOG10_2)
    while exact >= _power_of_ten(exponent + 1):
        exponent += 1
    while exact < _power_of_ten(exponent):
        exponent -= 1
    mantissa = round(exact / _power_of_ten(exponent - digits + 1))
    if mantissa == 10**digits:  # 9.9995 rounds up to 10.00: one more digit
        mantissa //= 10
        exponent += 1
    shown = str(mantissa)  # exactly ``digits`` digits
    if -4 <= exponent < digits:
        if exponent >= 0:
            whole, fraction = shown[: exponent + 1], shown[exponent + 1 :]
        else:
            whole, fraction = "0", "0" * (-exponent - 1) + shown
        if not keep_zeros:
            fraction = fraction.rstrip("0")
        return f"{whole}{'.' if fraction else point}{fraction}"
    fraction = shown[1:] if keep_zeros else shown[1:].rstrip("0")
    sign = "+" if exponent >= 0 else "-"
    mark = "." if fraction else point
    return f"{shown[0]}{mark}{fraction}e{sign}{abs(exponent):02d}"


def _power_of_ten(exponent: int) -> Fraction:
    return Fraction(10**exponent) if exponent >= 0 else Fraction(1, 10**-exponent)
