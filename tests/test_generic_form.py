"""The generic form of every axisflow dialect parses and verifies in real
MLIR (``mlir-opt --allow-unregistered-dialect``): the attributes they carry
are ones MLIR can read (no ``#builtin.int``)."""

from __future__ import annotations

import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest

from axisflow.lowering.toolchain import verify_text

ROOT = Path(__file__).resolve().parent.parent
XDSL_OPT = str(Path(sys.executable).with_name("xdsl-opt"))
SMALL = 'extents="i=2,a=2,μ̃=2,Κ=2"'

# name -> (an op the generic form must hold, xdsl-opt arguments)
CASES: dict[str, tuple[str, list[str]]] = {
    "batch": (
        "batch.value",
        ["examples/four_tensor.mlir", "-p", "classify-axes{explain=true}"],
    ),
    "batch+sched": (
        "sched.build",
        [
            "examples/pipeline/four_tensor.mlir",
            "-p",
            "classify-axes,schedule-batches",
        ],
    ),
    "batch+sched, split and demotion": (
        "sched.buffer",
        [
            "examples/pipeline/demotion.mlir",
            "-p",
            "classify-axes,schedule-batches{never-worse=false accumulate=false}",
        ],
    ),
    "batch+sched, residual and operator step": (
        "sched.apply",
        [
            "-f",
            'sequant{batch=i extents="i=3,a=4" elem=8}',
            "tests/filecheck/pipeline/Inputs/symmetrized.txt",
            "-p",
            "classify-axes,schedule-batches",
        ],
    ),
    "batch+sched from SeQuant": (
        "sched.loop",
        [
            "-f",
            f'sequant{{batch=i,"Κ" {SMALL}}}',
            "examples/sequant/csv_ccsd_singles_residual_df.txt",
            "-p",
            # at these extents the never-worse guard would drop every loop
            "classify-axes,schedule-batches{never-worse=false}",
        ],
    ),
    "batch, every op": ("batch.loop", ["tests/filecheck/batch/roundtrip.mlir"]),
    "sched, every op": (
        "sched.accumulate",
        ["tests/filecheck/pipeline/roundtrip.mlir"],
    ),
    "tprog, every op": (
        "tprog.total_elems",
        ["tests/filecheck/shapes/dialect-roundtrip.mlir"],
    ),
    "tprog": ("tprog.call", ["examples/shapes/mlp.mlir"]),
    "tprog closed": ("tprog.call", ["examples/shapes/mlp.mlir", "-p", "close-shapes"]),
    "tprog.scheme": (
        "tprog.scheme",
        ["examples/shapes/mlp.mlir", "-p", "generalize-shapes"],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_generic_form_is_read_by_mlir_opt(name: str) -> None:
    op, arguments = CASES[name]
    done = subprocess.run(
        [XDSL_OPT, "--print-op-generic", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    generic = done.stdout
    assert "#builtin.int" not in generic
    printed = verify_text(generic, "--allow-unregistered-dialect")
    assert f'"{op}"' in printed


def test_byte_sizes_past_64_bits_stay_readable() -> None:
    # A dense size past 2**63 bytes widens the integer (i128 here); MLIR
    # reads it, and xDSL reads the generic form back to the same number.
    from xdsl.parser import Parser
    from xdsl.printer import Printer

    from axisflow.dialects.integers import count_attr, count_value
    from axisflow.dialects.sched import BufferOp
    from axisflow.scheduling.schedule import Buffer
    from tests.conftest import context

    size = 2**100 + 8
    op = BufferOp(Buffer("v", (), True, size))
    assert str(op.size) == f"{size} : i128"
    assert count_value(count_attr(2**63 - 1)) == 2**63 - 1
    assert str(count_attr(2**63 - 1)).endswith(": i64")
    generic = StringIO()
    Printer(generic, print_generic_format=True).print_op(op)
    text = generic.getvalue()
    assert f"bytes = {size} : i128" in text
    printed = verify_text(text, "--allow-unregistered-dialect")
    assert f"{size} : i128" in printed
    # (parsed, not verified: a buffer belongs in a schedule)
    reparsed = Parser(context(), f"builtin.module {{\n{text}\n}}").parse_module()
    (back,) = list(reparsed.body.block.ops)
    assert isinstance(back, BufferOp) and count_value(back.size) == size
