"""What users of the shape passes wait for, against a baseline tree in the same run.

Four measurements, each on generated programs:

* **engine**: the shape engine's Python API on ``bench_shapes_engine.py``'s
  ``chain`` and ``wide`` programs (Stage 1 and closing), as tprog operations
  per second (a leaf or an operation is one), next to the rate at which xDSL
  parses the same program written as a ``tprog`` module.
* **close-shapes**: the pass on a module-level tprog chain (``--ops``
  operations: leaves, ``compose`` and ``pointwise``), against xDSL's parse of
  the same module.
* **generalize-shapes**: ``generalize-shapes,close-shapes`` on that chain
  with ``bench_shape_schemes.py``'s 50-operation function applied at 10 call
  sites that do not read the chain: the share of ``generalize-shapes``.
* **memory**: the peak of memory allocated (``tracemalloc``) while
  ``close-shapes`` applies ``bench_shape_schemes.py``'s function at two
  numbers of call sites (``--sites``): on the calls as users run it,
  re-evaluating every call (``calls=re-evaluate``), and after
  ``generalize-shapes``; per call site is the difference over the difference
  of sites (what one more call site costs, without the module's fixed part).

Every measurement runs in a subprocess (``--worker``) with a tree's
directory first on ``sys.path``: this tree's, and with ``--baseline PATH``
also another checkout's (e.g. ``git worktree add /tmp/shapes-baseline
4d8286e``). The two trees run in turn for ``--rounds`` rounds and each figure
is the fastest round (the machine is shared; both sides see the same load
when they alternate). The workers also print a digest of each pass's printed
output, so the run shows that both trees write the same bytes. Times are
process CPU seconds, with the cyclic garbage collector as xdsl-opt leaves it
(on; the passes pause it themselves). Run:

    .venv/bin/python benchmarks/bench_shapes_phases.py [--baseline /tmp/shapes-baseline]
        [--ops 50000] [--engine-ops 20000] [--sites 300,1000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = Path(__file__).resolve().parent

# ------------------------------------------------------------------ programs


def chain_text(n: int, prefix: str = "") -> str:
    """``bench_shapes_engine.chain(n)`` as a tprog module (``2n + 1`` operations).

    ``prefix`` starts every value name (to add the chain to another module).
    """
    p = prefix
    lines = [f'%{p}x = tprog.leaf "8|->16"']
    h = f"%{p}x"
    for i in range(n):
        if i % 2 == 0:
            lines.append(f'%{p}w{i} = tprog.leaf "16->16"')
            lines.append(f"%{p}h{i} = tprog.compose %{p}w{i}, {h}")
        else:
            lines.append(f'%{p}b{i} = tprog.leaf "16"')
            lines.append(f"%{p}h{i} = tprog.pointwise {h}, %{p}b{i}")
        h = f"%{p}h{i}"
    return "\n".join(lines)


def wide_text(n: int) -> str:
    """``bench_shapes_engine.wide(n)`` as a tprog module (``2n + 1`` operations)."""
    lines = ['%x = tprog.leaf "8|->16"']
    for i in range(n):
        lines.append(f'%w{i} = tprog.leaf "16->4"')
        lines.append(f"%y{i} = tprog.compose %w{i}, %x")
    return "\n".join(lines)


def chain_with_function_text(n: int, sites: int) -> str:
    """The chain, then the scheme benchmark's function applied at ``sites`` sites."""
    from bench_shape_schemes import module_text  # type: ignore[import-not-found]

    return chain_text(n, "c") + "\n" + module_text(sites)


# ------------------------------------------------------------------- worker


def parse(text: str) -> Any:
    """Parse a tprog module with xDSL's parser."""
    from xdsl.context import Context
    from xdsl.dialects.builtin import Builtin
    from xdsl.parser import Parser

    from axisflow.dialects.tprog import Tprog

    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Tprog)
    return Parser(ctx, text).parse_module()


def digest(module: Any) -> str:
    """A short digest of the module as xDSL prints it."""
    from xdsl.printer import Printer

    stream = io.StringIO()
    Printer(stream=stream).print_op(module)
    return hashlib.sha256(stream.getvalue().encode()).hexdigest()[:16]


def cpu(function: Any, *args: Any) -> float:
    """CPU seconds of one call."""
    start = time.process_time()
    function(*args)
    return time.process_time() - start


def apply(pass_: Any, module: Any) -> None:
    """Apply a module pass as xdsl-opt does."""
    from xdsl.context import Context

    pass_.apply(Context(), module)


def engine_figures(n: int) -> dict[str, Any]:
    """Engine and parse rates on the chain and wide programs of ``n`` operations."""
    from bench_shapes_engine import chain, wide  # type: ignore[import-not-found]

    figures: dict[str, Any] = {}
    for name, build, text in (
        ("chain", chain, chain_text(n)),
        ("wide", wide, wide_text(n)),
    ):
        ops = 2 * n + 1
        start = time.process_time()
        session = build(n)
        session.close()
        engine = time.process_time() - start
        del session
        parse_s = cpu(parse, text)
        figures[f"engine {name} s"] = engine
        figures[f"engine {name} ops/s"] = ops / engine
        figures[f"parse {name} ops/s"] = ops / parse_s
    return figures


def close_figures(n: int) -> dict[str, Any]:
    """``close-shapes`` against the parse of a module-level chain."""
    from axisflow.passes.close_shapes import CloseShapesPass

    text = chain_text(n // 2)
    start = time.process_time()
    module = parse(text)
    parse_s = time.process_time() - start
    close_s = cpu(apply, CloseShapesPass(), module)
    return {
        "chain parse s": parse_s,
        "close-shapes s": close_s,
        "close-shapes / parse": close_s / parse_s,
        "digest close-shapes": digest(module),
    }


def generalize_figures(n: int) -> dict[str, Any]:
    """``generalize-shapes,close-shapes`` on the chain plus a function applied 10 times."""
    from axisflow.passes.close_shapes import CloseShapesPass
    from axisflow.passes.generalize_shapes import GeneralizeShapesPass

    module = parse(chain_with_function_text(n // 2, 10))
    generalize_s = cpu(apply, GeneralizeShapesPass(), module)
    close_s = cpu(apply, CloseShapesPass(), module)
    return {
        "generalize-shapes s": generalize_s,
        "then close-shapes s": close_s,
        "generalize share": generalize_s / (generalize_s + close_s),
        "digest generalize": digest(module),
    }


def memory_figures(sites: list[int]) -> dict[str, Any]:
    """Peak memory ``close-shapes`` allocates at two numbers of call sites.

    Three ways: the pass as users run it on the calls (this tree shares a
    function's trace between its calls; the baseline re-evaluates them),
    ``calls=re-evaluate`` (every call runs the body; the baseline has no
    option and does that anyway), and after ``generalize-shapes``.
    """
    import dataclasses

    from bench_shape_schemes import module_text  # type: ignore[import-not-found]

    from axisflow.passes.close_shapes import CloseShapesPass
    from axisflow.passes.generalize_shapes import GeneralizeShapesPass

    has_calls_option = "calls" in {f.name for f in dataclasses.fields(CloseShapesPass)}
    re_evaluating: Any = (
        CloseShapesPass(calls="re-evaluate")  # type: ignore[call-arg]
        if has_calls_option
        else CloseShapesPass()
    )
    figures: dict[str, Any] = {}
    low, high = sites
    for how, close, generalize in (
        ("on calls", CloseShapesPass(), False),
        ("calls=re-evaluate", re_evaluating, False),
        ("after generalize", CloseShapesPass(), True),
    ):
        peaks = []
        for count in sites:
            module = parse(module_text(count))
            if generalize:
                apply(GeneralizeShapesPass(), module)
            tracemalloc.start()
            apply(close, module)
            peaks.append(tracemalloc.get_traced_memory()[1])
            tracemalloc.stop()
            del module
        figures[f"close-shapes {how}: peak MB, {low} sites"] = peaks[0] / 1e6
        figures[f"close-shapes {how}: peak MB, {high} sites"] = peaks[1] / 1e6
        figures[f"close-shapes {how}: KB per site"] = (
            (peaks[1] - peaks[0]) / (high - low) / 1e3
        )
    return figures


def worker(args: argparse.Namespace) -> None:
    """Measure in this process and print the figures as JSON."""
    sys.path.insert(0, str(BENCHMARKS))
    figures: dict[str, Any] = {}
    if "engine" in args.parts:
        figures.update(engine_figures(args.engine_ops))
    if "close" in args.parts:
        figures.update(close_figures(args.ops))
    if "generalize" in args.parts:
        figures.update(generalize_figures(args.ops))
    if "memory" in args.parts:
        figures.update(memory_figures([int(s) for s in args.sites.split(",")]))
    print(json.dumps(figures))


# --------------------------------------------------------------------- main


def run_worker(tree: Path, args: argparse.Namespace, parts: str) -> dict[str, Any]:
    """Run the worker with ``tree`` first on ``sys.path``."""
    env = dict(os.environ, PYTHONPATH=str(tree))
    command = [
        sys.executable,
        str(Path(__file__).resolve()),
        "--worker",
        "--parts",
        parts,
        "--ops",
        str(args.ops),
        "--engine-ops",
        str(args.engine_ops),
        "--sites",
        args.sites,
    ]
    done = subprocess.run(
        command, env=env, capture_output=True, text=True, check=False, cwd=tree
    )
    if done.returncode:
        sys.exit(f"worker for {tree} failed:\n{done.stderr}")
    return json.loads(done.stdout.splitlines()[-1])


LOWER_IS_BETTER = ("s", "/ parse", "share", "MB", "KB")


def best(rounds: list[dict[str, Any]], key: str) -> Any:
    """The best value of a figure over the rounds (digests must agree)."""
    values = [r[key] for r in rounds]
    if key.startswith("digest"):
        return values[0] if len(set(values)) == 1 else "differ: " + ",".join(values)
    if key.endswith("ops/s"):
        return max(values)
    return min(values)


def main() -> None:
    """Run the workers and print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--baseline", type=Path, help="a checkout to compare with")
    parser.add_argument("--ops", type=int, default=50_000)
    parser.add_argument("--engine-ops", type=int, default=20_000)
    parser.add_argument("--sites", default="300,1000")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parts", default="engine,close,generalize,memory")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return
    trees = [("this tree", ROOT)]
    if args.baseline is not None:
        trees.insert(0, ("baseline", args.baseline.resolve()))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"# shape passes: Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {load:.2f} at start; CPU seconds, best of {args.rounds} "
        f"rounds (trees in turn); {args.ops} ops for close/generalize, chain and "
        f"wide of {2 * args.engine_ops + 1} ops for the engine, sites {args.sites}"
    )
    measured: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in trees}
    timed_parts = ",".join(p for p in args.parts.split(",") if p != "memory")
    for _ in range(args.rounds):
        for name, tree in trees:
            if timed_parts:
                measured[name].append(run_worker(tree, args, timed_parts))
    if "memory" in args.parts:  # deterministic: measured once
        for name, tree in trees:
            memory = run_worker(tree, args, "memory")
            for figures in measured[name] or [{}]:
                figures.update(memory)
            if not measured[name]:
                measured[name].append(memory)
    keys = list(measured[trees[-1][0]][0])
    header = f"{'figure':<52}" + "".join(f"{name:>18}" for name, _ in trees)
    if len(trees) == 2:
        header += f"{'this / baseline':>17}"
    print(header)
    print("-" * len(header))
    for key in keys:
        values = [best(measured[name], key) for name, _ in trees]
        cells = "".join(
            f"{v:>18.3f}" if isinstance(v, float) else f"{v!s:>18}" for v in values
        )
        ratio = ""
        if len(trees) == 2 and all(isinstance(v, float) for v in values):
            ratio = f"{values[1] / values[0]:>16.2f}x"
        elif len(trees) == 2:
            ratio = f"{'same' if values[0] == values[1] else 'DIFFER':>17}"
        print(f"{key:<52}{cells}{ratio}")
    if len(trees) == 2 and "engine" in args.parts:
        speedups = [
            best(measured["baseline"], f"engine {name} s")
            / best(measured["this tree"], f"engine {name} s")
            for name in ("chain", "wide")
        ]
        print(
            f"engine speed-up (baseline s / this s): chain {speedups[0]:.2f}x, "
            f"wide {speedups[1]:.2f}x"
        )


if __name__ == "__main__":
    main()
