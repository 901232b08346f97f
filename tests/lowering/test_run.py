"""The lowered schedule runs: real MLIR (mlir-opt + mlir-runner) and xDSL's
interpreter both print the NumPy evaluator's numbers (1e-10 relative).

The mlir-runner tests need Debian's ``mlir-22-tools`` (installed by the
Makefile and ``.ci/run``); without them they fail, saying how to install,
rather than skipping: the real-MLIR check is the point of the feature.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from xdsl.dialects.builtin import ModuleOp

from axisflow.interpret import parse_lowered, run_main
from axisflow.lowering.harness import decode_printed
from axisflow.lowering.toolchain import compile_and_run
from tests.lowering.cases import (
    assert_agrees,
    lowered,
    output_shapes,
    planned_ladder_term,
    reference,
    scheduled_example,
    scheduled_examples,
    scheduled_sequant,
    scheduled_text,
    with_operator,
)

SMALL = "i=2,a=2,μ̃=2,Κ=2"
"""Small extents for the CSV-CCSD equations (dense evaluation)."""

SINGLES = "csv_ccsd_singles_residual_df.txt"
DOUBLES = "csv_ccsd_doubles_residual_df.txt"
SINGLES_S = "Ŝ{a_1<i_1>;i_1}"
DOUBLES_S = "Ŝ{a_1<i_1,i_2>,a_2<i_1,i_2>;i_1,i_2}"

GROUPS = (
    "Ŝ{a_1,a_2;i_1,i_2} * A{a_1,a_3;i_1,i_3} * B{a_3,a_2;i_3,i_2}"
    " - 1/2 Â{a_1,a_2;i_1,i_2} * C{a_1,a_2;i_3,i_4} * D{i_3,i_4;i_1,i_2}"
    " + 2 P̂{a_1,a_2;i_1,i_2} * E{a_1;i_2} * F{a_2;i_1}"
    " + 3 G{a_2,a_1;i_1,i_2}"
)
"""Four operator groups (Ŝ, Â, P̂, none): three residual buffers beside the
result, each operator step added into it."""

CASES = {
    "four-tensor": lambda: scheduled_example("pipeline/four_tensor.mlir"),
    "cross-iteration": lambda: scheduled_example("pipeline/cross_iteration.mlir"),
    "sibling-nests": lambda: scheduled_example("pipeline/sibling_nests.mlir"),
    "sibling-nests-block-2": lambda: scheduled_example(
        "pipeline/sibling_nests.mlir", block=2
    ),
    "four-tensor-block-3": lambda: scheduled_example(
        "pipeline/four_tensor.mlir", block=3
    ),
    "sibling-nests-block-3": lambda: scheduled_example(
        "pipeline/sibling_nests.mlir", block=3
    ),
    "demotion": lambda: scheduled_example("pipeline/demotion.mlir"),
    "two-forests": lambda: scheduled_examples(
        "pipeline/cross_iteration.mlir", "pipeline/sibling_nests.mlir"
    ),
    "energy-i": lambda: scheduled_sequant("csv_ccsd_energy_df.txt", "i", SMALL),
    "energy-kappa": lambda: scheduled_sequant("csv_ccsd_energy_df.txt", "Κ", SMALL),
    "energy-i-kappa": lambda: scheduled_sequant("csv_ccsd_energy_df.txt", "i,Κ", SMALL),
    "singles-i": lambda: scheduled_sequant(SINGLES, "i", SMALL),
    "singles-kappa": lambda: scheduled_sequant(SINGLES, "Κ", SMALL),
    # the operator step: Ŝ on the singles and doubles, several groups
    "singles-S-i": lambda: scheduled_text(
        with_operator(SINGLES, SINGLES_S), "i", SMALL, "singles_S"
    ),
    "singles-S-kappa": lambda: scheduled_text(
        with_operator(SINGLES, SINGLES_S), "Κ", SMALL, "singles_S"
    ),
    "doubles-S-i": lambda: scheduled_text(
        with_operator(DOUBLES, DOUBLES_S), "i", SMALL, "doubles_S"
    ),
    "groups-i": lambda: scheduled_text(GROUPS, "i", "a=2,i=3", "groups"),
    "groups-a-block-2": lambda: scheduled_text(
        GROUPS, "a", "a=3,i=2", "groups", block=2
    ),
    # composite kinds with extents of their own: the loop over a runs over
    # the composites' extent (3, or 5 in blocks of 2), not a's
    "energy-a-composite": lambda: scheduled_sequant(
        "csv_ccsd_energy_df.txt", "a", SMALL + ",a<1>=3,a<2>=3", block=2
    ),
    "composite-a-ragged": lambda: scheduled_text(
        "A{a_1<i_1>;i_1} * B{i_1;a_1<i_1>}", "a", "i=2,a=3,a<1>=5", "comp", block=2
    ),
    # schedule-batches exactly as its defaults give it (the never-worse
    # guard on), and without the residual (one output per tree)
    "energy-i-defaults": lambda: scheduled_sequant(
        "csv_ccsd_energy_df.txt", "i", SMALL, never_worse=True
    ),
    "singles-S-i-defaults": lambda: scheduled_text(
        with_operator(SINGLES, SINGLES_S), "i", SMALL, "singles_S", never_worse=True
    ),
    "four-tensor-separate": lambda: scheduled_example(
        "pipeline/four_tensor.mlir", accumulate=False
    ),
    "energy-i-separate": lambda: scheduled_sequant(
        "csv_ccsd_energy_df.txt", "i", SMALL, accumulate=False
    ),
    # the planner's rebuilds inside a loop of two blocks (per-loop blocks,
    # values rebuilt in one loop only)
    "ladder-rebuilt": lambda: planned_ladder_term(30, {"i": 4, "a": 7, "μ̃": 7, "Κ": 8}),
}

_MODULES: dict[str, tuple[ModuleOp, ModuleOp, list[tuple[int, ...]]]] = {}


def case(name: str) -> tuple[ModuleOp, ModuleOp, list[tuple[int, ...]]]:
    """(scheduled module, lowered module, output shapes), built once."""
    if name not in _MODULES:
        scheduled = CASES[name]()
        module, plans = lowered(scheduled)
        _MODULES[name] = (scheduled, module, output_shapes(plans))
    return _MODULES[name]


COMPILED = [
    name
    for name in CASES
    # run through mlir-runner elsewhere, or the same lowering as another case
    if name not in ("groups-a-block-2", "singles-S-i-defaults")
]
"""Cases run through mlir-runner: all but groups-a-block-2 (compared with
mlir-runner by the axisflow-run test) and singles-S-i-defaults (the same
operator step as singles-S-i; the interpreter runs it)."""


@pytest.mark.parametrize("name", COMPILED)
def test_mlir_runner_agrees_with_numpy(name: str) -> None:
    scheduled, module, shapes = case(name)
    printed = compile_and_run(str(module))
    assert_agrees(decode_printed(printed, shapes), reference(scheduled))


INTERPRETED = list(CASES)


@pytest.mark.parametrize("name", INTERPRETED)
def test_interpreter_agrees_with_numpy(name: str) -> None:
    scheduled, module, shapes = case(name)
    printed = run_main(module)
    assert_agrees(decode_printed(printed, shapes), reference(scheduled))


def test_interpreter_prints_what_mlir_runner_prints() -> None:
    # Through the printed text both ways: what xdsl-opt writes is what runs.
    _, module, _ = case("four-tensor-block-3")
    text = str(module)
    assert run_main(parse_lowered(text)) == compile_and_run(text)


def test_the_energy_is_a_nonzero_scalar_the_sum_of_its_terms() -> None:
    # Guards against vacuous agreement: the residual of the energy is one
    # nonzero scalar, and it is the sum of the five terms the schedule
    # without a residual outputs on their own.
    _, module, shapes = case("energy-i")
    (energy,) = decode_printed(run_main(module), shapes)
    assert energy.shape == () and abs(float(energy)) > 0
    _, separate, separate_shapes = case("energy-i-separate")
    terms = decode_printed(run_main(separate), separate_shapes)
    assert [t.shape for t in terms] == [()] * 5
    assert abs(float(sum(terms)) - float(energy)) <= 1e-12 * abs(float(energy))


def test_the_operator_steps_change_the_residual() -> None:
    # The operators must act: the residual of GROUPS differs from the one
    # with the operators left out (so an operator step that did nothing, or
    # a group never added into the result, would fail the agreement above).
    _, with_operators, shapes = case("groups-i")
    plain = scheduled_text(
        GROUPS.replace("Ŝ{a_1,a_2;i_1,i_2} * ", "")
        .replace("Â{a_1,a_2;i_1,i_2} * ", "")
        .replace("P̂{a_1,a_2;i_1,i_2} * ", ""),
        "i",
        "a=2,i=3",
        "groups",
    )
    (before,) = decode_printed(run_main(lowered(plain)[0]), shapes)
    (after,) = decode_printed(run_main(with_operators), shapes)
    assert before.shape == after.shape == (2, 2, 3, 3)
    assert float(abs(before - after).max()) > 1e-3


def _console_script(name: str) -> str:
    """A console script of this environment (next to its Python)."""
    return str(Path(sys.executable).parent / name)


def test_axisflow_run_prints_what_mlir_runner_prints(tmp_path: Path) -> None:
    # The residual with three operator steps, through the printed text, run
    # by the console script as a user runs it.
    _, module, shapes = case("groups-a-block-2")
    path = tmp_path / "lowered.mlir"
    path.write_text(str(module), encoding="utf-8")
    run = subprocess.run(
        [_console_script("axisflow-run"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == compile_and_run(str(module))
    assert decode_printed(run.stdout, shapes)[0].shape == (3, 3, 2, 2)


def test_axisflow_run_reports_errors_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "lowered.mlir"
    path.write_text(str(case("four-tensor")[1]), encoding="utf-8")
    run = subprocess.run(
        [_console_script("axisflow-run"), str(path), "--symbol", "nowhere"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode == 1
    assert run.stderr == (
        f"axisflow-run: {path}: no function @nowhere (functions: @four_tensor, "
        "@main, @printI64, @printNewline)\n"
    )


def test_stock_xdsl_run_lacks_the_functions_axisflow_run_adds(tmp_path: Path) -> None:
    # Why axisflow-run exists: xDSL 0.75's xdsl-run has no interpreter
    # function for arith.sitofp (the first op of main's input fill it
    # meets), nor memref.subview, arith.bitcast, printI64.
    path = tmp_path / "lowered.mlir"
    path.write_text(str(case("four-tensor")[1]), encoding="utf-8")
    run = subprocess.run(
        [_console_script("xdsl-run"), str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert run.returncode != 0
    assert "Could not find interpretation function for op arith.sitofp" in run.stderr
