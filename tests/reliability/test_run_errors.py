"""``axisflow-run`` on bad lowered modules: one located message, status 1.

Each module is what a hand edit or the fuzzer makes of a lowered module;
each used to escape as a Python traceback (``range() arg 3 must not be
zero``, ``MemoryError``, ``Buffer length 0 ...``, ``AssertionError``,
``KeyError: 'No value for key <BlockArgument ...>'``, ``RecursionError``).
"""

from __future__ import annotations

import contextlib
import io
import subprocess
from pathlib import Path

import pytest

from axisflow.cli import MAX_NESTING
from axisflow.interpret import MAX_CALL_DEPTH, main
from axisflow.lowering.toolchain import require_toolchain

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(tmp_path: Path, text: str, *args: str) -> tuple[int, str, str]:
    """``axisflow-run FILE args`` in process on ``text``."""
    path = tmp_path / "lowered.mlir"
    path.write_text(text, encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(path), *args])
    return status, out.getvalue(), err.getvalue()


def located(tmp_path: Path, line: int, column: int, source: str, caret: str) -> str:
    """The first three lines of a message located at ``line:column``."""
    pad = " " * (column - 1)
    return f"axisflow-run: {tmp_path / 'lowered.mlir'}:{line}:{column}\n{source}\n{pad}{caret}\n"


def function(body: str, signature: str = "@main()") -> str:
    return f"func.func {signature} {{\n{body}  func.return\n}}\n"


CONSTANTS = (
    "  %c0 = arith.constant 0 : index\n"
    "  %c1 = arith.constant 1 : index\n"
    "  %c3 = arith.constant 3 : index\n"
)


def test_a_zero_step_is_refused_at_its_loop(tmp_path: Path) -> None:
    text = function(CONSTANTS + "  scf.for %i = %c0 to %c3 step %c0 {\n  }\n")
    status, out, err = run(tmp_path, text)
    assert (status, out) == (1, "")
    source = "  scf.for %i = %c0 to %c3 step %c0 {"
    assert err == located(tmp_path, 5, 3, source, "^^^^^^^") + (
        "  scf.for: the step is 0; it must be positive\n"
    )


def test_an_allocation_above_the_memory_limit_is_refused_before_it_is_made(
    tmp_path: Path,
) -> None:
    text = function("  %a = memref.alloc() : memref<100000x100000x100000xf64>\n")
    status, _, err = run(tmp_path, text)
    assert status == 1
    source = "  %a = memref.alloc() : memref<100000x100000x100000xf64>"
    assert err == located(tmp_path, 2, 3, source, "^^") + (
        "  memref.alloc: memref<100000x100000x100000xf64> needs 7.105 PiB "
        "(1e+15 (1000000000000000) elements of 8 B): above the memory limit of 2 GiB "
        "(axisflow-run --memory-limit BYTES)\n"
    )


def test_the_memory_limit_counts_what_is_live(tmp_path: Path) -> None:
    # Two buffers of 800 B each fit a limit of 1000 B one at a time, not
    # together; freed in between, they fit.
    alloc = "  %{0} = memref.alloc() : memref<100xf64>\n"
    both = function(alloc.format("a") + alloc.format("b"))
    status, _, err = run(tmp_path, both, "--memory-limit", "1000")
    assert status == 1
    assert err.endswith(
        "  memref.alloc: memref<100xf64> needs 800 B (100 elements of 8 B), "
        "with 800 B live: above the memory limit of 1000 B "
        "(axisflow-run --memory-limit BYTES)\n"
    )
    freed = function(
        alloc.format("a")
        + "  memref.dealloc %a : memref<100xf64>\n"
        + alloc.format("b")
    )
    assert run(tmp_path, freed, "--memory-limit", "1000")[0] == 0


@pytest.mark.parametrize("limit", ["0", "-5", "1e9", "²"])
def test_a_memory_limit_that_is_no_positive_count_is_a_usage_error(
    tmp_path: Path, limit: str
) -> None:
    with pytest.raises(SystemExit) as exit_status:
        run(tmp_path, function(""), "--memory-limit", limit)
    assert exit_status.value.code == 2


def test_a_load_past_the_end_of_a_buffer_names_index_and_shape(tmp_path: Path) -> None:
    text = function(
        "  %c5 = arith.constant 5 : index\n"
        "  %a = memref.alloc() : memref<0xf64>\n"
        "  %x = memref.load %a[%c5] : memref<0xf64>\n"
    )
    status, _, err = run(tmp_path, text)
    assert status == 1
    source = "  %x = memref.load %a[%c5] : memref<0xf64>"
    assert err == located(tmp_path, 4, 3, source, "^^") + (
        "  memref.load: index [5] is outside the shape [0]\n"
    )


def test_a_store_at_a_negative_index_is_refused(tmp_path: Path) -> None:
    text = function(
        "  %m = arith.constant -1 : index\n"
        "  %v = arith.constant 1.0 : f64\n"
        "  %a = memref.alloc() : memref<4xf64>\n"
        "  memref.store %v, %a[%m] : memref<4xf64>\n"
    )
    status, _, err = run(tmp_path, text)
    assert status == 1
    assert err.endswith("  memref.store: index [-1] is outside the shape [4]\n")


@pytest.mark.parametrize("op", ["divsi", "remsi", "floordivsi"])
def test_an_integer_division_by_zero_is_named(tmp_path: Path, op: str) -> None:
    text = function(
        "  %c5 = arith.constant 5 : i64\n"
        "  %c0 = arith.constant 0 : i64\n"
        f"  %x = arith.{op} %c5, %c0 : i64\n"
    )
    status, _, err = run(tmp_path, text)
    assert status == 1
    assert err.endswith(f"  arith.{op}: division by zero\n")


@pytest.mark.parametrize(
    ("op", "amount"), [("shli", "-1"), ("shli", "64"), ("shrsi", "99")]
)
def test_a_shift_beyond_the_width_is_refused(
    tmp_path: Path, op: str, amount: str
) -> None:
    # A shift by 10^18 used to build an integer of 10^18 bits.
    text = function(
        "  %c5 = arith.constant 5 : i64\n"
        f"  %s = arith.constant {amount} : i64\n"
        f"  %x = arith.{op} %c5, %s : i64\n"
    )
    status, _, err = run(tmp_path, text)
    assert status == 1
    assert err.endswith(f"  arith.{op}: shift by {amount}, outside 0..63\n")


def test_main_with_arguments_is_refused_at_the_function(tmp_path: Path) -> None:
    text = function("  %y = arith.addi %x, %x : i64\n", "@main(%x : i64)")
    status, _, err = run(tmp_path, text)
    assert status == 1
    source = "func.func @main(%x : i64) {"
    assert err == located(tmp_path, 1, 1, source, "^^^^^^^^^") + (
        "function @main takes 1 argument (i64); axisflow-run calls a function "
        "without arguments\n"
    )


def test_symbol_naming_a_function_with_arguments_is_refused(tmp_path: Path) -> None:
    from axisflow.cli import main as opt

    path = tmp_path / "lowered.mlir"
    with contextlib.redirect_stderr(io.StringIO()):
        assert (
            opt(
                [
                    "-p",
                    "classify-axes,schedule-batches,lower-schedule{main=true}",
                    str(EXAMPLES / "pipeline" / "four_tensor.mlir"),
                    "-o",
                    str(path),
                ]
            )
            == 0
        )
    status, _, err = run(tmp_path, path.read_text(), "--symbol", "four_tensor")
    assert status == 1
    assert err.splitlines()[-1].strip() == (
        "function @four_tensor takes 5 arguments (memref<3x3x2x2xf64>, "
        "memref<4x2x3x2xf64>, memref<2x2x3x2xf64>, memref<2x4x2x2xf64>, "
        "memref<2x3x2x3xf64>); axisflow-run calls a function without arguments"
    )


def test_a_missing_symbol_or_a_declaration_is_named(tmp_path: Path) -> None:
    text = function("") + "func.func private @printI64(i64) -> ()\n"
    status, _, err = run(tmp_path, text, "--symbol", "nowhere")
    assert status == 1
    assert err == (
        f"axisflow-run: {tmp_path / 'lowered.mlir'}: no function @nowhere "
        "(functions: @main, @printI64)\n"
    )
    status, _, err = run(tmp_path, text, "--symbol", "printI64")
    assert status == 1
    assert err.splitlines()[-1] == (
        "function @printI64 takes 1 argument (i64); axisflow-run calls a "
        "function without arguments"
    )
    status, _, err = run(
        tmp_path, "func.func private @ext() -> ()\n", "--symbol", "ext"
    )
    assert status == 1
    assert err.splitlines()[-1] == (
        "function @ext is a declaration without a body; nothing to run"
    )


def test_a_function_calling_itself_stops_at_the_call_depth_limit(
    tmp_path: Path,
) -> None:
    text = function("  func.call @main() : () -> ()\n")
    status, _, err = run(tmp_path, text)
    assert status == 1
    source = "  func.call @main() : () -> ()"
    assert err == located(tmp_path, 2, 3, source, "^^^^^^^^^") + (
        f"  func.call: calls nested deeper than {MAX_CALL_DEPTH} (a function "
        "that calls itself without end?)\n"
    )


def nested_loops(depth: int) -> str:
    opening = "".join(
        f"  scf.for %i{k} = %c0 to %c1 step %c1 {{\n" for k in range(depth)
    )
    innermost = (
        "  %v = arith.constant 7 : i64\n  func.call @printI64(%v) : (i64) -> ()\n"
    )
    body = CONSTANTS + opening + innermost + "  }\n" * depth
    return function(body) + "func.func private @printI64(i64) -> ()\n"


def test_loops_nested_to_the_bracket_limit_run(tmp_path: Path) -> None:
    # One loop per level of brackets: the deepest nest the reader accepts
    # (the function's braces and the call's parentheses are two levels).
    status, out, err = run(tmp_path, nested_loops(MAX_NESTING - 2))
    assert (status, out, err) == (0, "7", "")


def test_loops_nested_past_the_bracket_limit_are_refused_at_the_bracket(
    tmp_path: Path,
) -> None:
    status, _, err = run(tmp_path, nested_loops(MAX_NESTING - 1))
    assert status == 1
    # the bracket past the limit: the innermost call's opening parenthesis
    assert err.splitlines()[0] == (
        f"axisflow-run: {tmp_path / 'lowered.mlir'}:{MAX_NESTING + 5}:22"
    )
    assert err.splitlines()[-1].strip().startswith(f"nesting deeper than {MAX_NESTING}")


def test_parse_errors_name_the_file(tmp_path: Path) -> None:
    status, _, err = run(
        tmp_path, "func.func @main() {\n  %x = arith.constant 1 : i64\n"
    )
    assert status == 1
    assert err.startswith(f"axisflow-run: {tmp_path / 'lowered.mlir'}:")
    assert "<unknown>" not in err


USED_BEFORE_DEFINITION = (
    "  %t = arith.addi %c1, %s : index\n  %s = arith.addi %c1, %c3 : index\n"
)
"""``%s`` used a line before it is defined."""

USED_BEFORE_LOOP = (
    "  %t = arith.addi %c1, %inner : index\n"
    "  scf.for %i = %c0 to %c3 step %c1 {\n"
    "    %inner = arith.addi %i, %c1 : index\n"
    "  }\n"
)
"""``%inner``, defined in a loop's body, used before the loop."""


def test_a_value_used_before_its_definition_is_refused_at_the_use(
    tmp_path: Path,
) -> None:
    """The fuzzer's swap of two names: ``%s`` used a line before it is
    defined (xDSL's verifier does not check dominance; its interpreter then
    failed with ``KeyError: 'No value for key ...'``)."""
    status, out, err = run(tmp_path, function(CONSTANTS + USED_BEFORE_DEFINITION))
    assert (status, out) == (1, "")
    source = "  %t = arith.addi %c1, %s : index"
    assert err == located(tmp_path, 5, 3, source, "^^") + (
        "  arith.addi: operand #1 (%s) does not dominate this use (it is used "
        "before or outside the region where it is defined)\n"
    )


def test_a_value_of_a_loop_body_used_before_the_loop_is_refused(
    tmp_path: Path,
) -> None:
    """Defined inside a loop's body, used before the loop (what the fuzzer
    made; used after it, the parser already refuses the name)."""
    status, out, err = run(tmp_path, function(CONSTANTS + USED_BEFORE_LOOP))
    assert (status, out) == (1, "")
    source = "  %t = arith.addi %c1, %inner : index"
    assert err == located(tmp_path, 5, 3, source, "^^") + (
        "  arith.addi: operand #1 (%inner) does not dominate this use (it is used "
        "before or outside the region where it is defined)\n"
    )


def test_values_defined_above_a_loop_and_its_own_index_are_visible_in_it(
    tmp_path: Path,
) -> None:
    """The control: the same names in order run (the check refuses nothing
    MLIR accepts: values of enclosing blocks, block arguments)."""
    text = function(
        CONSTANTS
        + "  %s = arith.addi %c1, %c3 : index\n"
        + "  scf.for %i = %c0 to %c3 step %c1 {\n"
        + "    %inner = arith.addi %i, %s : index\n"
        + "  }\n"
    )
    assert run(tmp_path, text) == (0, "", "")


@pytest.mark.parametrize(
    ("operand", "body"),
    [(1, USED_BEFORE_DEFINITION), (1, USED_BEFORE_LOOP)],
    ids=["before-definition", "before-loop"],
)
def test_real_mlir_refuses_what_the_dominance_check_refuses(
    tmp_path: Path, operand: int, body: str
) -> None:
    """The oracle: MLIR's own verifier (mlir-opt) refuses the same modules,
    naming the same operand."""
    path = tmp_path / "lowered.mlir"
    path.write_text(function(CONSTANTS + body), encoding="utf-8")
    done = subprocess.run(
        [require_toolchain().mlir_opt, str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert f"error: operand #{operand} does not dominate this use" in done.stderr
    status, _, err = run(tmp_path, path.read_text(encoding="utf-8"))
    assert status == 1
    assert f"operand #{operand} (" in err
