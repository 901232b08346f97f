"""What a user waits for: one ``xdsl-opt`` run split by phase, in process.

Runs the stock ``xDSLOptMain`` (what the ``xdsl-opt`` command runs) in this
process on two inputs and charges its CPU time to the phase it is spent in:

  parse     the frontend (xDSL's parser on an ``.mlir`` file, or the SeQuant
            frontend for ``-f sequant``)
  verify    ``ModuleOp.verify``, which xdsl-opt runs before the first pass
            and after every pass (shown with the number of calls)
  <pass>    each pass of ``-p``
  print     printing the result (to ``/dev/null``)
  gc        the part of all the above spent in CPython's cyclic collector
            (measured with ``gc.callbacks``; already inside the other columns)

Inputs (the targets of issue 17):
  forest-50k   ``-p classify-axes`` on the generated ~50k-op forest of
               ``bench_classify_axes.py``
  doubles-x10  ``-f 'sequant{batch=i}' -p classify-axes,schedule-batches`` on
               the CSV-CCSD doubles residual repeated 10x with fresh labels

Each input runs ``--runs`` times (default 3); the run with the least total CPU
time is printed, so every ratio in a row comes from one run. ``--profile``
also prints the top functions of that input under cProfile.

``--gc`` also compares the total under the collector's default thresholds,
raised thresholds and the collector disabled (the ``axisflow-opt`` question).
``--parts`` prints only the parts of ``classify-axes`` on the forest (read,
roles, write, free), in process.

Run: ``.venv/bin/python benchmarks/bench_phases.py [--quick] [--runs N] [--profile] [--gc] [--parts]``
or ``... bench_phases.py --parts``
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import pstats
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench_classify_axes import generate  # benchmarks/bench_classify_axes.py
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.parser import Parser
from xdsl.xdsl_opt_main import xDSLOptMain

from axisflow.dialects.batch import Batch, ForestOp
from axisflow.dialects.batch_model import attach_roles, forest_model
from axisflow.forest.roles import classify
from axisflow.gc_pause import gc_paused
from axisflow.sequant import Expression, parse
from axisflow.sequant.syntax import deparse, repeat_with_fresh_labels

ROOT = Path(__file__).resolve().parents[1]
DOUBLES = ROOT / "examples" / "sequant" / "csv_ccsd_doubles_residual_df.txt"


class PhaseClock:
    """CPU seconds per phase; a phase inside another is charged to the inner one."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.calls: dict[str, int] = {}
        self._stack: list[tuple[str, float]] = []
        self.gc_seconds = 0.0
        self._gc_start = 0.0

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        now = time.process_time()
        if self._stack:  # pause the enclosing phase
            outer, since = self._stack[-1]
            self.seconds[outer] = self.seconds.get(outer, 0.0) + now - since
        self._stack.append((name, now))
        self.calls[name] = self.calls.get(name, 0) + 1
        try:
            yield
        finally:
            now = time.process_time()
            _, since = self._stack.pop()
            self.seconds[name] = self.seconds.get(name, 0.0) + now - since
            if self._stack:
                outer, _ = self._stack[-1]
                self._stack[-1] = (outer, now)

    def on_gc(self, stage: str, info: dict[str, int]) -> None:
        """A ``gc.callbacks`` hook: time spent inside collections."""
        if stage == "start":
            self._gc_start = time.process_time()
        else:
            self.gc_seconds += time.process_time() - self._gc_start

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


def timed(clock: PhaseClock, name: str, function: Callable[..., Any]):  # type: ignore[no-untyped-def]
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with clock.phase(name):
            return function(*args, **kwargs)

    return wrapper


def run_once(argv: list[str]) -> PhaseClock:
    """One in-process xdsl-opt run, its CPU time split by phase."""
    clock = PhaseClock()
    main = xDSLOptMain(args=argv)
    main.parse_chunk = timed(clock, "parse", main.parse_chunk)
    main.output_resulting_program = timed(clock, "print", main.output_resulting_program)
    patched: list[tuple[type, Callable[..., Any]]] = []
    for module_pass in main.pipeline.passes:
        cls = type(module_pass)
        patched.append((cls, cls.apply))
        cls.apply = timed(clock, module_pass.name, cls.apply)  # type: ignore[method-assign]
    original_verify = ModuleOp.verify
    ModuleOp.verify = timed(clock, "verify", original_verify)  # type: ignore[method-assign]
    gc.collect()
    gc.callbacks.append(clock.on_gc)
    try:
        with clock.phase("other"):
            main.run()
    finally:
        gc.callbacks.remove(clock.on_gc)
        ModuleOp.verify = original_verify  # type: ignore[method-assign]
        for cls, apply in patched:
            cls.apply = apply  # type: ignore[method-assign]
    return clock


def report(name: str, argv: list[str], runs: int, profile: bool) -> None:
    best = min((run_once(argv) for _ in range(runs)), key=lambda c: c.total)
    phases = [p for p in best.seconds if p != "other"]
    print(f"{name}: xdsl-opt {' '.join(argv[:-2])}")
    print(
        f"  total {best.total:.3f} s CPU (best of {runs}); "
        f"gc {best.gc_seconds:.3f} s = {best.gc_seconds / best.total:.1%} of the run"
    )
    for phase in phases:
        seconds = best.seconds[phase]
        calls = best.calls[phase]
        times = f" (x{calls})" if calls > 1 else ""
        print(f"  {phase + times:<24} {seconds:>8.3f} s {seconds / best.total:>7.1%}")
    parse_time = best.seconds["parse"]
    for phase in phases:
        if phase not in ("parse", "verify", "print"):
            print(f"  {phase} / parse: {best.seconds[phase] / parse_time:.1%}")
    print()
    if profile:
        profiler = cProfile.Profile()
        profiler.enable()
        xDSLOptMain(args=argv).run()
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue())


GC_SETTINGS: list[tuple[str, tuple[int, int, int] | None]] = [
    ("default (700, 10, 10)", (700, 10, 10)),
    ("threshold (50000, 20, 100)", (50_000, 20, 100)),
    ("disabled", None),
]


def compare_gc(name: str, argv: list[str], runs: int) -> None:
    """Total CPU time of the same run under several collector settings,
    interleaved (round-robin) so that machine load hits each alike."""
    best: dict[str, float] = {}
    saved = gc.get_threshold()
    try:
        for _ in range(runs):
            for label, threshold in GC_SETTINGS:
                if threshold is None:
                    gc.disable()
                else:
                    gc.enable()
                    gc.set_threshold(*threshold)
                total = run_once(argv).total
                best[label] = min(best.get(label, float("inf")), total)
    finally:
        gc.enable()
        gc.set_threshold(*saved)
    base = best[GC_SETTINGS[0][0]]
    print(f"{name}: total CPU by collector setting (best of {runs}, interleaved)")
    for label, _ in GC_SETTINGS:
        print(f"  {label:<28} {best[label]:>8.3f} s {best[label] / base:>7.1%}")
    print()


def pass_memory(name: str, argv: list[str]) -> None:
    """Peak memory the passes of ``argv`` allocate (``tracemalloc``), per op
    of the module they run on: the module is parsed and verified first, then
    each pass runs traced in turn."""
    main = xDSLOptMain(args=argv)
    chunks, extension = main.prepare_input()
    ((chunk, _),) = chunks
    module = main.parse_chunk(chunk, extension)
    chunk.close()
    assert module is not None
    module.verify()
    ops = sum(1 for _ in module.walk())
    print(f"{name}: peak memory of each pass (tracemalloc), {ops} ops")
    for module_pass in main.pipeline.passes:
        gc.collect()
        tracemalloc.start()
        module_pass.apply(main.ctx, module)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        print(
            f"  {module_pass.name:<24} {peak / 2**20:>8.1f} MiB "
            f"{peak / ops:>8.0f} bytes per op"
        )
    print()


def classify_parts(name: str, text: str, runs: int) -> None:
    """The parts of ``classify-axes`` on a parsed and verified forest, in
    process (best of ``runs`` by total): reading the IR into the model (not
    finished: the roles derive what they read), the roles, writing them
    back, and freeing what the pass built. The module keeps the roles of the
    previous run, so later runs also replace attributes."""
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Batch)
    module = Parser(ctx, text).parse_module()
    module.verify()
    forest = next(op for op in module.walk() if isinstance(op, ForestOp))
    best: dict[str, float] | None = None
    with gc_paused():
        for _ in range(runs):
            seconds: dict[str, float] = {}
            start = time.process_time()
            model = forest_model(forest, with_roles=False, finish=False)
            seconds["reading"] = time.process_time() - start
            start = time.process_time()
            verdicts = classify(model)
            seconds["roles"] = time.process_time() - start
            start = time.process_time()
            attach_roles(forest, verdicts)
            seconds["writing"] = time.process_time() - start
            start = time.process_time()
            del model, verdicts
            seconds["freeing"] = time.process_time() - start
            seconds["total"] = sum(seconds.values())
            if best is None or seconds["total"] < best["total"]:
                best = seconds
    assert best is not None
    print(f"{name}: parts of classify-axes (in process, best of {runs})")
    for part, value in best.items():
        print(f"  {part:<10} {value:>8.3f} s")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(
        description="One xdsl-opt run split by phase, in process (issue 17's targets)."
    )
    parser.add_argument(
        "--quick", action="store_true", help="a 5k forest and the doubles x2, one run"
    )
    parser.add_argument(
        "--runs", type=int, help="runs per input, the least total printed (default 3)"
    )
    parser.add_argument(
        "--profile", action="store_true", help="also the top functions (cProfile)"
    )
    parser.add_argument(
        "--gc", action="store_true", help="also compare the collector's settings"
    )
    parser.add_argument(
        "--parts", action="store_true", help="only the parts of classify-axes"
    )
    args = parser.parse_args()
    if args.runs is not None and args.runs < 1:
        parser.error(f"--runs must be at least 1, got {args.runs}")
    quick, profile, with_gc, parts_only = args.quick, args.profile, args.gc, args.parts
    runs = args.runs or (1 if quick else 3)
    with tempfile.TemporaryDirectory() as tmp:
        forest = Path(tmp) / "forest.mlir"
        forest.write_text(generate(5_000 if quick else 50_000), encoding="utf-8")
        if parts_only:
            classify_parts(
                "forest-5k" if quick else "forest-50k",
                forest.read_text(encoding="utf-8"),
                args.runs or (1 if quick else 5),
            )
            return
        doubles = parse(DOUBLES.read_text(encoding="utf-8"))
        times = 2 if quick else 10
        big = Path(tmp) / "doubles_x10.txt"
        big.write_text(
            deparse(Expression(repeat_with_fresh_labels(doubles.terms, times))),
            encoding="utf-8",
        )
        out = ["-o", "/dev/null"]
        inputs = [
            (
                "forest-5k" if quick else "forest-50k",
                [str(forest), "-p", "classify-axes", *out],
            ),
            (
                f"doubles-x{times}",
                [
                    "-f",
                    "sequant{batch=i}",
                    str(big),
                    "-p",
                    "classify-axes,schedule-batches",
                    *out,
                ],
            ),
        ]
        for name, argv in inputs:
            report(name, argv, runs, profile)
        for name, argv in inputs:
            pass_memory(name, argv)
        if with_gc:
            for name, argv in inputs:
                compare_gc(name, argv, runs)
    print("targets: verify <= 25% of the run; classify-axes / parse <= 8%")


if __name__ == "__main__":
    main()
