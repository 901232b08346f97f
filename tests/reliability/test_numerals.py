"""Huge, Unicode and out-of-range numbers get a located error in every reader."""

from __future__ import annotations

from pathlib import Path

import pytest

from axisflow.numerals import I64_MAX, MAX_DIGITS, NumeralError, natural

from .test_cli_guards import run, run_args

HUGE = "9" * (MAX_DIGITS + 1)
ABOVE_2_64 = str(2**64 + 1)


@pytest.mark.parametrize(
    ("digits", "message"),
    [
        ("²", "must be ASCII digits 0-9, got '²'"),
        ("٣", "must be ASCII digits 0-9, got '٣'"),
        ("", "must be ASCII digits 0-9, got ''"),
        (HUGE, f"has {MAX_DIGITS + 1} digits, more than the limit of {MAX_DIGITS}"),
        (ABOVE_2_64, f"exceeds the maximum {I64_MAX}"),
    ],
)
def test_natural_names_what_and_the_limit(digits: str, message: str) -> None:
    with pytest.raises(NumeralError, match=message):
        natural(digits, "the size", I64_MAX)
    assert natural("9" * MAX_DIGITS, "the size") == int("9" * MAX_DIGITS)


@pytest.mark.parametrize(
    ("text", "line_col", "message"),
    [
        (
            f"batch.forest {{\n batch.space a extent {HUGE}\n}}\n",
            "2:23",
            f"batch.space extent has {MAX_DIGITS + 1} digits, more than the limit",
        ),
        (
            f"batch.forest {{\n batch.space a extent {ABOVE_2_64}\n}}\n",
            "2:23",
            f"batch.space extent '{ABOVE_2_64}' exceeds the maximum {I64_MAX}",
        ),
        (
            f"batch.forest {{\n batch.tree @t coeff -{ABOVE_2_64} {{ }}\n}}\n",
            "2:23",
            "batch.tree coefficient",
        ),
        (
            f'batch.forest {{\n batch.value @A [i_{HUGE}] leaf "A"\n}}\n',
            "2:20",
            f"expected an ordinal of at most {MAX_DIGITS} digits",
        ),
        (
            'batch.forest {\n batch.value @A [i_²] leaf "A"\n}\n',
            "2:20",
            "'²' is not a digit here: numbers are ASCII digits 0-9",
        ),
        (
            "batch.forest {\n batch.space a extent ²\n}\n",
            "2:23",
            "'²' is not a digit here: numbers are ASCII digits 0-9",
        ),
        (f'%w = tprog.param "{HUGE}"\n', "1:1", "more than the limit of 4300"),
        ('%w = tprog.param "٣"\n', "1:1", "a size must be ASCII digits 0-9"),
        (
            f'tprog.set_dim "n" = {HUGE}\n',
            "1:21",
            "tprog.set_dim size has 4301 digits",
        ),
        # sched ops: their own message, the field named (xDSL's had no
        # location for i64, Python's set_int_max_str_digits for 4301 digits)
        (
            f"sched.schedule rounds {ABOVE_2_64} {{\n}}\n",
            "1:23",
            f"sched.schedule rounds '{ABOVE_2_64}' exceeds the maximum {I64_MAX}",
        ),
        (
            f"sched.schedule rounds {HUGE} {{\n}}\n",
            "1:23",
            "sched.schedule rounds has 4301 digits, more than the limit of 4300",
        ),
        (
            f"sched.schedule rounds 1 {{\n sched.loop over b instance 0 pass "
            f"{ABOVE_2_64} block 1 {{\n }}\n}}\n",
            "2:36",
            f"sched.loop pass '{ABOVE_2_64}' exceeds the maximum {I64_MAX}",
        ),
        # generic form: named by the entry, at the literal
        (
            f'"sched.schedule"() <{{rounds = {ABOVE_2_64} : i64}}> ({{\n}}) : () -> ()\n',
            "1:31",
            f"rounds = {ABOVE_2_64}: the value does not fit in i64",
        ),
        (
            f'"sched.schedule"() <{{rounds = {HUGE} : i64}}> ({{\n}}) : () -> ()\n',
            "1:31",
            "integer literal has 4301 digits, more than the limit of 4300",
        ),
        # any integer of the standard dialects
        (
            f"%a = memref.alloc() : memref<2x{HUGE}xf64>\n",
            "1:32",
            "integer literal has 4301 digits, more than the limit of 4300",
        ),
        (
            f"%c = arith.constant {ABOVE_2_64} : i64\n",
            "1:21",
            f"{ABOVE_2_64}: the value does not fit in i64",
        ),
        # an operand list's literal, refused after the list was read
        (
            "%a = memref.alloc() : memref<4xf64>\n%b = memref.subview "
            "%a[0x7fffffffffffffffff] [1] [1] : memref<4xf64> to "
            "memref<1xf64, strided<[1], offset: ?>>\n",
            "2:24",
            "0x7fffffffffffffffff: the value does not fit in i64",
        ),
    ],
)
def test_mlir_numbers_are_located(
    tmp_path: Path, text: str, line_col: str, message: str
) -> None:
    status, _, err = run(tmp_path, text)
    assert status == 1
    assert err.splitlines()[0] == f"error: {tmp_path / 'input.mlir'}:{line_col}"
    assert message in err
    assert "sys.set_int_max_str_digits" not in err
    assert "out of range for type" not in err


@pytest.mark.parametrize(
    ("text", "line_col", "message"),
    [
        ("x{i_²}", "1:5", "expected an ordinal (digits) after '_'"),
        (f"x{{i_{HUGE}}}", "1:5", f"an ordinal of at most {MAX_DIGITS} digits"),
        (f"{HUGE} x{{i_1}}", "1:1", f"a number of at most {MAX_DIGITS} digits"),
        ("1e99999999 x{i_1}", "1:1", "a number of at most 4300 digits and exponent"),
    ],
)
def test_sequant_numbers_are_located(
    tmp_path: Path, text: str, line_col: str, message: str
) -> None:
    source = tmp_path / "eq.txt"
    source.write_text(text, encoding="utf-8")
    status, _, err = run_args("-f", "sequant", str(source))
    assert status == 1
    assert err.splitlines()[0] == f"error: {source}:{line_col}"
    assert message in err


def test_sequant_coefficient_beyond_i64_names_the_tree(tmp_path: Path) -> None:
    source = tmp_path / "eq.txt"
    source.write_text("1e4300 x{i_1;a_1}", encoding="utf-8")
    status, _, err = run_args("-f", "sequant", str(source))
    assert status == 1
    assert err == (
        "error: batch.tree @term0: coefficient numerator does not fit in i64 "
        f"(|value| > {I64_MAX})\n"
    )
