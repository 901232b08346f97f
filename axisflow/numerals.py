"""Decimal numerals in every text axisflow reads (IR, shape specs, SeQuant).

One rule for all readers: a numeral is ASCII digits only (``str.isdigit``
also accepts ``²`` and ``٣``, which ``int`` then rejects or reads), at most
``MAX_DIGITS`` long (Python's own int-conversion limit would otherwise
surface with no position) and, where the value is stored as an MLIR ``i64``,
at most ``I64_MAX``. ``NumeralError`` carries the reason; each reader turns it
into its own located error (file:line:col, op or text position).

Pure Python, no xDSL.
"""

from __future__ import annotations

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
