"""axisflow-opt refuses what xDSL cannot lex or parse safely, locates every
error and never leaves a half-written output file."""

from __future__ import annotations

import contextlib
import io
import os
import threading
from pathlib import Path

from axisflow.cli import MAX_NESTING, check_mlir_text, main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FOUR_TENSOR = EXAMPLES / "four_tensor.mlir"
BAD_SYNTAX = 'batch.forest {\n batch.value @A [i_1 leaf "A"\n}\n'
UNKNOWN_USE = (
    'batch.forest {\n batch.value @A [i_1] leaf "A"\n'
    " batch.tree @t { batch.use @B [i_1] }\n}\n"
)
HANG_TIMEOUT = 60.0  # a guard against a hang, far above any real run


def run(tmp_path: Path, text: str | bytes, *args: str) -> tuple[int, str, str]:
    """Run axisflow-opt in process on ``text`` (written to a file)."""
    source = tmp_path / "input.mlir"
    if isinstance(text, str):
        source.write_text(text, encoding="utf-8")
    else:
        source.write_bytes(text)
    return run_args(str(source), *args)


def run_args(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status: list[int] = []

    def work() -> None:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status.append(main(list(args)))

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(HANG_TIMEOUT)
    assert not worker.is_alive(), f"axisflow-opt {args} did not finish"
    return status[0], out.getvalue(), err.getvalue()


def test_unclosed_string_is_refused_before_xdsl_lexes_it(tmp_path: Path) -> None:
    # 40+ characters after an unclosed quote never finish in xDSL's lexer.
    text = '%w = tprog.param "...->64   // hidden width of the first layer\n'
    status, _, err = run(tmp_path, text)
    assert status == 1
    assert err.splitlines()[0] == f"error: {tmp_path / 'input.mlir'}:1:18"
    assert "string literal not closed on this line" in err


def test_long_closed_strings_and_quotes_in_comments_pass() -> None:
    text = (
        '// a comment with an unclosed " quote and [[[ brackets\n'
        '%w = tprog.param "' + "x" * 200 + ' // not a comment \\" \\41"\n'
    )
    assert check_mlir_text(text.encode(), "t") == text


def test_invalid_utf8_names_file_line_and_column(tmp_path: Path) -> None:
    status, _, err = run(tmp_path, b"batch.forest {\n // caf\xc3\xa9 \xff\n}\n")
    assert status == 1
    lines = err.splitlines()
    assert lines[0] == f"error: {tmp_path / 'input.mlir'}:2:10"
    assert lines[3].strip() == "input is not valid UTF-8 (byte 0xff)"


def nested_modules(depth: int) -> str:
    return "builtin.module {\n" * depth + "}\n" * depth


def test_nesting_up_to_the_limit_works_and_one_more_is_located(
    tmp_path: Path,
) -> None:
    status, out, _ = run(tmp_path, nested_modules(MAX_NESTING))
    assert status == 0
    assert out.count("builtin.module {") == MAX_NESTING
    # The generic form opens two brackets per level ('({'): 2000 deep, more
    # than axisflow-opt reads back, so it is not written.
    status, out, err = run(tmp_path, nested_modules(MAX_NESTING), "--print-op-generic")
    assert (status, out) == (1, "")
    assert err.startswith("error: the output could not be read back (its line 501:")
    status, _, err = run(tmp_path, nested_modules(MAX_NESTING + 1))
    assert status == 1
    assert err.splitlines()[0] == (
        f"error: {tmp_path / 'input.mlir'}:{MAX_NESTING + 1}:16"
    )
    assert f"nesting deeper than {MAX_NESTING} brackets" in err


def test_verifier_error_is_located_with_split_input_file(tmp_path: Path) -> None:
    text = FOUR_TENSOR.read_text(encoding="utf-8") + "// -----\n" + UNKNOWN_USE
    status, out, err = run(tmp_path, text, "--split-input-file")
    assert status == 1
    assert "batch.forest @four_tensor" in out  # the first chunk was fine
    line = FOUR_TENSOR.read_text(encoding="utf-8").count("\n") + 4
    assert err.splitlines() == [
        f"error: {tmp_path / 'input.mlir'}:{line}:18",
        " batch.tree @t { batch.use @B [i_1] }",
        "                 ^^^^^^^^^",
        "                 batch.use @B: use of unknown value @B",
    ]


def test_failure_keeps_an_existing_output_file(tmp_path: Path) -> None:
    target = tmp_path / "out.mlir"
    target.write_text("previous contents\n", encoding="utf-8")
    os.chmod(target, 0o640)
    status, _, _ = run(tmp_path, BAD_SYNTAX, "-o", str(target))
    assert status == 1
    assert target.read_text(encoding="utf-8") == "previous contents\n"
    # Half-way through a split input: the first chunk's output must not land.
    text = FOUR_TENSOR.read_text(encoding="utf-8") + "// -----\n" + BAD_SYNTAX
    status, _, _ = run(tmp_path, text, "--split-input-file", "-o", str(target))
    assert status == 1
    assert target.read_text(encoding="utf-8") == "previous contents\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.mlir", "out.mlir"]


REPORT = 'classify-axes,schedule-batches{{report=json report-file="{0}"}}'


def test_a_failed_run_writes_no_report_file(tmp_path: Path) -> None:
    # All or nothing, like -o: the first chunk's report used to be written
    # although the second chunk failed and no -o was.
    report = tmp_path / "report.jsonl"
    report.write_text("previous report\n", encoding="utf-8")
    target = tmp_path / "out.mlir"
    text = FOUR_TENSOR.read_text(encoding="utf-8") + "// -----\n" + BAD_SYNTAX
    passes = REPORT.format(report)
    status, _, _ = run(
        tmp_path, text, "--split-input-file", "-p", passes, "-o", str(target)
    )
    assert status == 1
    assert report.read_text(encoding="utf-8") == "previous report\n"
    assert not target.exists()
    # a later pass failing: the same (examples/four_tensor.mlir declares no
    # extents, which lower-schedule needs)
    text = FOUR_TENSOR.read_text(encoding="utf-8")
    status, _, err = run(tmp_path, text, "-p", passes + ",lower-schedule")
    assert status == 1
    assert "index space b has no extent" in err
    assert report.read_text(encoding="utf-8") == "previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.mlir", "report.jsonl"]


def test_a_successful_run_writes_every_chunks_report(tmp_path: Path) -> None:
    report = tmp_path / "report.jsonl"
    text = FOUR_TENSOR.read_text(encoding="utf-8")
    passes = REPORT.format(report)
    status, _, _ = run(
        tmp_path, text + "// -----\n" + text, "--split-input-file", "-p", passes
    )
    assert status == 0
    assert len(report.read_text(encoding="utf-8").splitlines()) == 2
    # a second run replaces the file (the first write of each run)
    status, _, _ = run(tmp_path, text, "-p", passes)
    assert status == 0
    assert len(report.read_text(encoding="utf-8").splitlines()) == 1


def test_success_replaces_the_output_file_keeping_its_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.mlir"
    target.write_text("previous contents\n", encoding="utf-8")
    os.chmod(target, 0o640)
    status, out, _ = run_args(str(FOUR_TENSOR), "-o", str(target))
    assert (status, out) == (0, "")
    assert "batch.forest @four_tensor" in target.read_text(encoding="utf-8")
    assert target.stat().st_mode & 0o777 == 0o640
    status, _, _ = run_args(str(FOUR_TENSOR), "-o", os.devnull)
    assert status == 0
    assert Path(os.devnull).is_char_device()


def test_unwritable_output_names_the_file(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "out.mlir"
    status, _, err = run_args(str(FOUR_TENSOR), "-o", str(target))
    assert status == 1
    assert err == f"error: cannot write {target}: No such file or directory\n"


def test_an_option_of_the_wrong_type_names_the_pass_option_and_value(
    tmp_path: Path,
) -> None:
    # xDSL's own message ("Incompatible types: given ('bogus',), expected
    # typing.Literal[...]") names neither the pass nor the option.
    cases = {
        "close-shapes{calls=bogus}": (
            "error: close-shapes: option calls=bogus is not valid: "
            "expected one of shared, re-evaluate"
        ),
        "classify-axes,schedule-batches{max-rounds=x}": (
            "error: schedule-batches: option max-rounds=x is not valid: "
            "expected an integer"
        ),
        "schedule-batches{never-worse=3}": (
            "error: schedule-batches: option never-worse=3 is not valid: "
            "expected true or false"
        ),
    }
    for pipeline, message in cases.items():
        status, out, err = run(tmp_path, "builtin.module {}\n", "-p", pipeline)
        assert (status, out, err) == (1, "", message + "\n"), pipeline


def test_a_frontend_option_of_the_wrong_type_names_the_option(tmp_path: Path) -> None:
    source = tmp_path / "eq.txt"
    source.write_text("R{a_1;i_1} = f{a_1;i_1}\n", encoding="utf-8")
    status, out, err = run_args(str(source), "-f", "sequant{batch=3}")
    assert (status, out) == (1, "")
    assert err == (
        "error: sequant: option batch=3 is not valid: "
        "expected a comma-separated list of strings\n"
    )


def test_a_forest_in_generic_form_without_its_block_is_located(
    tmp_path: Path,
) -> None:
    # The forest's verifier read the region's one block before xDSL's own
    # check: "'block' property of Region class is only available for
    # single-block regions", without a location.
    status, _, err = run(tmp_path, '"batch.forest"() ({\n}) : () -> ()\n')
    assert status == 1
    assert err == (
        f"error: {tmp_path / 'input.mlir'}:1:1\n"
        '"batch.forest"() ({\n'
        "^^^^^^^^^^^^^^\n"
        "Region 'body' at position 0 expected a single block, but got 0 blocks\n"
    )


def test_what_an_op_parser_raises_instead_of_a_parse_error_is_located(
    tmp_path: Path,
) -> None:
    # xDSL's linalg.fill parser indexes its inputs: 'i ns(' leaves none.
    text = (
        "%0 = arith.constant 0.0 : f64\n"
        "%a = memref.alloc() : memref<2xf64>\n"
        "linalg.fill i ns(%0 : f64) outs(%a : memref<2xf64>)\n"
    )
    status, _, err = run(tmp_path, text)
    assert status == 1
    assert err.splitlines()[0] == f"error: {tmp_path / 'input.mlir'}:3:13"
    assert err.splitlines()[-1].strip() == (
        "cannot read the op before this token (xDSL's parser stopped with IndexError)"
    )
    # a ValueError of the generic's parser, at the token after the attribute
    text = (
        "%a = memref.alloc() : memref<2xf64>\n"
        "linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], "
        'iterator_types = ["parxallel"]} outs(%a : memref<2xf64>) {\n'
        "^bb0(%x: f64):\n  linalg.yield %x : f64\n}\n"
    )
    status, _, err = run(tmp_path, text)
    assert status == 1
    assert err.splitlines()[0] == f"error: {tmp_path / 'input.mlir'}:2:93"
    assert err.splitlines()[-1].strip() == "'parxallel' is not a valid IteratorType"


def chain(factors: int) -> str:
    """A SeQuant product of ``factors`` factors: a use-site nested per factor."""
    return " * ".join(f"t{{i_{k};i_{k + 1}}}" for k in range(1, factors + 1))


def test_what_axisflow_opt_writes_it_reads(tmp_path: Path) -> None:
    # 990 factors nest within the limit and read back; 1005 used to be
    # written, then refused on reading (nesting deeper than 1000).
    source = tmp_path / "chain.txt"
    target = tmp_path / "out.mlir"
    source.write_text(chain(990), encoding="utf-8")
    assert run_args("-f", "sequant", str(source), "-o", str(target))[0] == 0
    assert run_args(str(target), "-o", os.devnull)[0] == 0
    source.write_text(chain(1005), encoding="utf-8")
    target.unlink()
    status, _, err = run_args("-f", "sequant", str(source), "-o", str(target))
    assert status == 1
    assert err == (
        "error: the output could not be read back (its line 2007: nesting deeper "
        "than 1000 brackets; xDSL's parser and printer recurse once per level): "
        "nothing is written\n"
    )
    assert not target.exists()
