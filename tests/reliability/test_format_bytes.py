"""Sizes and counts print exactly, whatever their size: one helper
(``axisflow.numerals.significant``) for the memory report, ``axisflow plan``,
the lowering's too-large message and the evaluator's memory guard."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow.numerals import significant
from axisflow.scheduling.memory import format_bytes, format_count


@pytest.mark.parametrize(
    ("base", "power", "shown"),
    [
        (1023, 1, "1023 B"),
        (1536, 1, "1.5 KiB"),
        (3 * 1024**6, 1, "3072 PiB"),
        (10, 100, "8.882e+84 PiB"),
        # 18 modes at extent 1e18: beyond a float (1.8e308) in bytes.
        (10**18, 18, "8.882e+308 PiB"),
        (2, 5000, "1.255e+1490 PiB"),
        (10, 10000, "8.882e+9984 PiB"),  # more digits than str(int) allows
    ],
)
def test_format_bytes_never_overflows(base: int, power: int, shown: str) -> None:
    assert format_bytes(base**power) == shown


COUNTS = [
    (999_999, "999999"),
    (295_671_870_848_499_712_000, "2.957e+20 (295671870848499712000)"),
    (10**23 + 1, "1e+23 (100000000000000000000001)"),
    (10**24, "1e+24"),  # beyond EXACT_COUNT_DIGITS: rounded only
    (10**720, "1e+720"),  # used to raise OverflowError
    (7 * 10**9999, "7e+9999"),  # more digits than str(int) allows
]


# ids by the text shown: pytest would print the counts, past str's limit
@pytest.mark.parametrize(("count", "shown"), COUNTS, ids=[s for _, s in COUNTS])
def test_format_count_of_any_size(count: int, shown: str) -> None:
    assert format_count(count) == shown


@settings(max_examples=300, deadline=None)
@given(
    st.integers(min_value=0, max_value=2**53),
    st.integers(min_value=1, max_value=8),
    st.booleans(),
)
def test_significant_prints_what_a_float_prints_where_one_is_exact(
    value: int, digits: int, keep_zeros: bool
) -> None:
    # Below 2^53 an int is an exact float, and Python formats floats exactly
    # (rounding half to even): the two must agree digit for digit.
    spec = f"{'#' if keep_zeros else ''}.{digits}g"
    assert significant(value, digits, keep_zeros=keep_zeros) == format(
        float(value), spec
    )


@pytest.mark.parametrize(
    ("value", "digits", "keep_zeros", "shown"),
    [
        (Fraction(1, 3), 3, True, "0.333"),
        (Fraction(1, 2), 3, True, "0.500"),
        # 0.000125 exactly is a tie, to even; the float 0.000125 lies above it
        # and prints 0.00013
        (Fraction(1, 8000), 2, False, "0.00012"),
        (Fraction(1, 300000), 3, False, "3.33e-06"),
        (Fraction(99995, 10), 4, False, "1e+04"),  # rounds up into a new digit
        (Fraction(-5, 2), 2, False, "-2.5"),
        (2**70, 4, False, "1.181e+21"),
        (2**70 + 1, 25, False, "1180591620717411303425"),
        # 0.5 exactly: half to even at every digit count
        (Fraction(25, 10), 1, False, "2"),
        (Fraction(35, 10), 1, False, "4"),
    ],
)
def test_significant_is_exact_beyond_a_float(
    value: int | Fraction, digits: int, keep_zeros: bool, shown: str
) -> None:
    assert significant(value, digits, keep_zeros=keep_zeros) == shown


def test_significant_refuses_no_digits() -> None:
    with pytest.raises(ValueError, match="digits must be positive, got 0"):
        significant(5, 0)


def test_the_evaluators_memory_guard_names_any_size() -> None:
    from axisflow.scheduling.contraction import EvaluationMemoryError, MemoryGuard

    with pytest.raises(EvaluationMemoryError) as refused:
        MemoryGuard(1024**3).check(10**400, "@v")
    assert str(refused.value) == (
        "@v needs 9.31e+390 GiB at once, above the evaluator's memory limit of "
        "1 GiB; evaluate at smaller extents or pass a larger memory_limit"
    )
