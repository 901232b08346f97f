"""The cost of lowering a schedule to standard MLIR, and the compiled run.

Part 1, lowering: the CSV-CCSD doubles residual
(``examples/sequant/csv_ccsd_doubles_residual_df.txt``, extents i=20, a=40,
μ̃=40, Κ=80) built by the SeQuant frontend and classified, per batching
policy, the 55 terms accumulating into the residual (the default of
``schedule-batches``), and once more with ``Ŝ`` written into every term (the
operator step): the time of ``schedule-batches`` (forest model + scheduler +
memory report + sched ops, attached) and of ``lower-schedule`` (plan + func
ops) on the scheduled module, each the best of several runs, their ratio,
and the lowered module's size (ops, printed lines and bytes).

Part 2, running: the CSV-CCSD energy batched over i at small extents, its
terms accumulated into the (scalar) residual, lowered with ``main``: the
NumPy evaluator's time for the unbatched forest (with the residual
assembled) and for the schedule (its residual buffer; on main's inputs),
against ``mlir-opt`` (lowering to the LLVM dialect) and ``mlir-runner`` (JIT
compilation plus the run; wall time of the process) and, for scale, xDSL's
interpreter on the smallest size. The printed residual is checked against
both NumPy residuals (1e-10 relative); runner/sched is mlir-runner's wall
time over the NumPy schedule's time.

Run: .venv/bin/python benchmarks/bench_lowering.py   (or make bench)
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from functools import partial
from pathlib import Path

from timing import best_of  # benchmarks/timing.py
from xdsl.dialects.builtin import ModuleOp

from axisflow.dialects.batch import ForestOp
from axisflow.dialects.batch_model import forest_model
from axisflow.dialects.sched import ScheduleOp
from axisflow.dialects.sched_model import schedule_from_op
from axisflow.interpret import run_main
from axisflow.lowering.harness import decode_printed, fill_input
from axisflow.lowering.toolchain import require_toolchain
from axisflow.passes.classify_axes import classify_forest
from axisflow.passes.lower_schedule import lower_module
from axisflow.pipeline.api import attach, plan_forest
from axisflow.scheduling.assemble import assemble_residual, schedule_layout
from axisflow.scheduling.evaluate import (
    evaluate_forest,
    relative_difference,
    run_residual,
)
from axisflow.scheduling.memory import Sizing
from axisflow.sequant import parse, to_module

ROOT = Path(__file__).resolve().parents[1]
SEQUANT = ROOT / "examples" / "sequant"
EXTENTS = "i=20,a=40,μ̃=40,Κ=80"
"""Below the real extents (i=80, a=μ̃=896, Κ=1682): there the dense model
holds values of 1e19 elements and more, which no memref can index."""
POLICIES = ("i", "Κ", "i,Κ", "Κ,i")
SYMMETRIZER = "Ŝ{a_1<i_1,i_2>,a_2<i_1,i_2>;i_1,i_2}"
"""The doubles' particle symmetrizer, written into every term for the
operator-step row."""
RUN_EXTENTS = (
    "i=2,a=4,μ̃=4,Κ=4",
    "i=4,a=8,μ̃=8,Κ=8",
    "i=8,a=16,μ̃=16,Κ=16",
    "i=12,a=24,μ̃=24,Κ=24",
    "i=16,a=32,μ̃=32,Κ=32",
)


def with_operator(text: str, operator: str) -> str:
    """``text`` with ``operator`` written into every term."""
    pieces = []
    for k, term in enumerate(parse(text).terms):
        sign = "-" if term.coefficient < 0 else ("" if k == 0 else "+")
        body = " * ".join(str(t) for t in term.tensors)
        pieces.append(f"{sign} {abs(term.coefficient)} {operator} * {body}")
    return " ".join(pieces)


def classified(
    name: str, batch: str, extents: str, operator: str | None = None
) -> ModuleOp:
    text = (SEQUANT / name).read_text(encoding="utf-8")
    if operator is not None:
        text = with_operator(text, operator)
    # order=file: the forests docs/benchmarks-lowering.md was recorded with.
    module = to_module(
        parse(text), batch, extents=extents, name=name[:-4], order="file"
    )
    for forest in module.walk():
        if isinstance(forest, ForestOp):
            classify_forest(forest)
    return module


def only_forest(module: ModuleOp) -> ForestOp:
    return next(op for op in module.walk() if isinstance(op, ForestOp))


def schedule(module: ModuleOp) -> ModuleOp:
    forest = only_forest(module)
    # the policy's loops as the scheduler places them (the never-worse guard
    # off), the trees accumulated into the residual
    attach(forest, plan_forest(forest, never_worse=False).schedule_op)
    return module


def lower_next(copies: list[ModuleOp]) -> list[object]:
    """Lower the next fresh copy (the pass replaces the forests)."""
    return list(lower_module(copies.pop()))


def run(command: list[str]) -> subprocess.CompletedProcess[str]:
    """Run a tool; its captured output."""
    return subprocess.run(command, check=True, capture_output=True, text=True)


def lowering_table() -> None:
    print("== lowering the CSV-CCSD doubles residual (i=20, a=μ̃=40, Κ=80) ==")
    header = (
        f"{'policy':<6} {'schedule':>10} {'lower':>10} {'ratio':>6} "
        f"{'ops':>7} {'lines':>7} {'bytes':>9}"
    )
    print(header)
    rows: list[tuple[str, str, str | None]] = [(p, p, None) for p in POLICIES]
    rows.append(("i, Ŝ", "i", SYMMETRIZER))
    for label, policy, operator in rows:
        module = classified(
            "csv_ccsd_doubles_residual_df.txt", policy, EXTENTS, operator
        )
        scheduling, _ = best_of(3, lambda module=module: schedule(module))
        copies = [module.clone() for _ in range(3)]
        lowering, _ = best_of(3, partial(lower_next, copies))
        lowered = module.clone()
        lower_module(lowered)
        ops = sum(1 for _ in lowered.walk())
        text = str(lowered)
        print(
            f"{label:<6} {scheduling * 1e3:>8.1f}ms {lowering * 1e3:>8.1f}ms "
            f"{lowering / scheduling:>6.2f} {ops:>7} {text.count(chr(10)) + 1:>7} "
            f"{len(text.encode()):>9}"
        )


def numpy_reference(module: ModuleOp):
    """The NumPy evaluator on main's inputs: (unbatched time, schedule time,
    the unbatched residual, the schedule's residual)."""
    forest = only_forest(module)
    model = forest_model(forest)
    schedule_op = next(op for op in forest.body.block.ops if isinstance(op, ScheduleOp))
    sched, _ = schedule_from_op(schedule_op)
    layout = schedule_layout(model, sched)
    assert layout is not None  # the schedule accumulates the residual
    sizing = Sizing(model)
    used = {site.value for site in model.sites}
    inputs = {}
    for name, value in model.values.items():
        if value.is_input and name in used:
            shape = tuple(sizing.mode_extent(m) for m in value.modes)
            inputs[name] = fill_input(len(inputs), shape)
    plain_time, plain = best_of(
        3,
        lambda: assemble_residual(model, evaluate_forest(model, inputs), layout),
    )
    batched_time, (_, batched) = best_of(
        3, lambda: run_residual(model, sched, inputs, sizing)
    )
    assert batched is not None
    return plain_time, batched_time, plain, batched


def run_table() -> None:
    tools = require_toolchain()
    print()
    print("== the CSV-CCSD energy batched over i, compiled and run ==")
    print(
        f"{'extents':<22} {'numpy':>9} {'numpy sched':>12} {'mlir-opt':>9} "
        f"{'mlir-runner':>12} {'runner/sched':>13} {'interpreter':>12} {'agree':>6}"
    )
    for number, extents in enumerate(RUN_EXTENTS):
        module = classified("csv_ccsd_energy_df.txt", "i", extents)
        schedule(module)
        plain_time, batched_time, plain, batched = numpy_reference(module)
        lowered = module.clone()
        plans = lower_module(lowered, main=True)
        shapes = [plans[0].tensors[t].shape for t in plans[0].outputs]
        with tempfile.TemporaryDirectory() as work:
            source = os.path.join(work, "energy.mlir")
            target = os.path.join(work, "llvm.mlir")
            Path(source).write_text(str(lowered), encoding="utf-8")
            opt_time, _ = best_of(5, partial(run, tools.opt_command(source, target)))
            runner_time, done = best_of(5, partial(run, tools.runner_command(target)))
        results = decode_printed(done.stdout, shapes)
        (energy,) = results
        worst = max(
            relative_difference(energy, plain), relative_difference(energy, batched)
        )
        interpreted = "-"
        if number == 0:
            start = time.perf_counter()
            printed = run_main(lowered)
            interpreted = f"{time.perf_counter() - start:.2f}s"
            assert decode_printed(printed, shapes)[0] == results[0]
        print(
            f"{extents:<22} {plain_time * 1e3:>7.1f}ms {batched_time * 1e3:>10.1f}ms "
            f"{opt_time * 1e3:>7.0f}ms {runner_time * 1e3:>10.0f}ms "
            f"{runner_time / batched_time:>13.2f} {interpreted:>12} "
            f"{'yes' if worst <= 1e-10 else 'NO':>6}"
        )


def main() -> None:
    lowering_table()
    run_table()


if __name__ == "__main__":
    main()
