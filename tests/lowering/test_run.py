"""The lowered schedule runs: real MLIR (mlir-opt + mlir-runner) and xDSL's
interpreter both print the NumPy evaluator's numbers (1e-10 relative).

The mlir-runner tests need Debian's ``mlir-22-tools`` (installed by the
Makefile and ``.ci/run``); without them they fail, saying how to install,
rather than skipping: the real-MLIR check is the point of the feature.
"""

from __future__ import annotations

import pytest
from xdsl.dialects.builtin import ModuleOp

from axisflow.interpret import parse_lowered, run_main
from axisflow.lowering.harness import decode_printed
from axisflow.lowering.toolchain import compile_and_run
from tests.lowering.cases import (
    assert_agrees,
    lowered,
    output_shapes,
    reference,
    scheduled_example,
    scheduled_examples,
    scheduled_sequant,
)

SMALL = "i=2,a=2,μ̃=2,Κ=2"
"""Small extents for the CSV-CCSD equations (dense evaluation)."""

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
    "singles-i": lambda: scheduled_sequant(
        "csv_ccsd_singles_residual_df.txt", "i", SMALL
    ),
    "singles-kappa": lambda: scheduled_sequant(
        "csv_ccsd_singles_residual_df.txt", "Κ", SMALL
    ),
}

_MODULES: dict[str, tuple[ModuleOp, ModuleOp, list[tuple[int, ...]]]] = {}


def case(name: str) -> tuple[ModuleOp, ModuleOp, list[tuple[int, ...]]]:
    """(scheduled module, lowered module, output shapes), built once."""
    if name not in _MODULES:
        scheduled = CASES[name]()
        module, plans = lowered(scheduled)
        _MODULES[name] = (scheduled, module, output_shapes(plans))
    return _MODULES[name]


@pytest.mark.parametrize("name", list(CASES))
def test_mlir_runner_agrees_with_numpy(name: str) -> None:
    scheduled, module, shapes = case(name)
    printed = compile_and_run(str(module))
    assert_agrees(decode_printed(printed, shapes), reference(scheduled))


INTERPRETED = [
    "four-tensor",
    "cross-iteration",
    "sibling-nests",
    "sibling-nests-block-2",
    "four-tensor-block-3",
    "sibling-nests-block-3",
    "demotion",
    "two-forests",
    "energy-i",
    "energy-kappa",
    "energy-i-kappa",
    "singles-i",
    "singles-kappa",
]


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


def test_the_energy_is_a_nonzero_scalar() -> None:
    # Guards against vacuous agreement: all five terms are scalars and their
    # sum is not zero on main's inputs.
    _, module, shapes = case("energy-i")
    results = decode_printed(run_main(module), shapes)
    assert [r.shape for r in results] == [()] * 5
    assert abs(float(sum(results))) > 0
