"""``axisflow run``: evaluate an equation's residual on the user's tensors, on Dask.

::

    axisflow run EQ.txt --extents i=8,a=48 --batch i,a --inputs DATA.npz \\
        --output R.npy [--budget 8GiB] [--scheduler tcp://host:8786] [--workers N]

Reads the equation and the inputs (``.npz`` file or Zarr store, one array
per input key: ``axisflow.execution.read_inputs``), plans the batched
schedule as ``axisflow plan`` does and runs it with the Dask executor
(``axisflow.execution.execute_expression``): an embedded cluster of
``--workers`` processes on this machine, or the running cluster at
``--scheduler``. The residual is written to ``--output`` (``.npy`` or
``.zarr``, under a temporary name, then renamed). Dask's progress bar shows
on a terminal (standard error), not under ``--quiet`` or into a pipe; the
report (wall time, GFLOP/s, peak per worker predicted and measured, tasks,
bytes moved) ends the run on standard output unless ``--quiet``.

Bad command-line usage (an unknown option, a malformed ``--extents``,
``--budget`` or ``--workers``, an output that is no ``.npy``/``.zarr``) is
one line on standard error and exit status 2; bad data (unreadable files,
inputs that do not fit, a plan above the budget, a failed run) exit status
1. Never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from axisflow.order import ORDERS

SHARES = ("forest", "tree")


def add_run_parser(commands: Any) -> None:  # argparse's subparsers
    """The ``run`` subcommand's options."""
    run = commands.add_parser(
        "run", help="evaluate the residual on your tensors, on Dask"
    )
    run.add_argument("equation", help="SeQuant expression text file")
    run.add_argument(
        "--inputs", required=True, help="the tensors: a .npz file or a Zarr store"
    )
    run.add_argument(
        "--output", required=True, help="where the residual goes: R.npy or R.zarr"
    )
    run.add_argument(
        "--extents", help='space extents, e.g. "i=8,a=48" (default: the inputs\')'
    )
    run.add_argument(
        "--batch", default="", help="spaces to batch, outermost first (i,a)"
    )
    run.add_argument("--block", default="1", help="block size: N, or per space i=2,a=8")
    run.add_argument("--budget", help="memory of all workers together (8GiB)")
    run.add_argument("--scheduler", help="address of a running Dask scheduler")
    run.add_argument("--workers", help="worker processes of the embedded cluster")
    run.add_argument("--order", choices=ORDERS, default="flops")
    run.add_argument("--share", choices=SHARES, default="forest")
    run.add_argument(
        "--every-loop",
        action="store_true",
        help="keep every loop of the policy (no never-worse guard)",
    )
    run.add_argument(
        "--assume-symmetric",
        action="store_true",
        help="skip the symmetry check of the inputs",
    )
    run.add_argument("--quiet", action="store_true", help="no progress, no report")


class UsageError(ValueError):
    """A command-line option that is malformed (exit status 2)."""


def _positive(text: str, option: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise UsageError(f"{option}: expected a positive integer, got {text!r}")
    return int(text)


def _blocks(text: str) -> int | dict[str, int]:
    if "=" not in text:
        return _positive(text, "--block")
    blocks: dict[str, int] = {}
    for entry in text.split(","):
        key, _, size = entry.partition("=")
        if not key.strip():
            raise UsageError(f"--block: an entry without a space in {text!r}")
        blocks[key.strip()] = _positive(size.strip(), "--block")
    return blocks


def run_command(args: argparse.Namespace) -> int:
    """Run ``axisflow run`` with parsed ``args``; the exit status."""
    from pathlib import Path

    from axisflow.execution import BudgetError, ExecutionError, InputError
    from axisflow.execution.dask_executor import OUTPUT_SUFFIXES, execute_expression
    from axisflow.scheduling.options import parse_budget
    from axisflow.sequant.forest import PolicyError
    from axisflow.sequant.syntax import SequantError, decode

    def fail(message: str, status: int) -> int:
        print(f"axisflow run: error: {message}", file=sys.stderr)
        return status

    try:
        workers = None if args.workers is None else _positive(args.workers, "--workers")
        block = _blocks(args.block)
        budget = parse_budget(args.budget, "--budget")
        if Path(args.output).suffix.lower() not in OUTPUT_SUFFIXES:
            raise UsageError(f"--output: {args.output} must end in .npy or .zarr")
        if args.scheduler is not None and workers is not None:
            raise UsageError("--workers: the cluster at --scheduler has its own")
    except ValueError as error:
        return fail(str(error), 2)
    if not Path(args.output).parent.is_dir():
        return fail(f"--output: {Path(args.output).parent}: no such directory", 1)
    try:
        path = Path(args.equation)
        text = decode(path.read_bytes(), str(path))
        run = execute_expression(
            text,
            args.inputs,
            extents=args.extents,
            batch=args.batch,
            block=block,
            order=args.order,
            share=args.share,
            assume_symmetric=args.assume_symmetric,
            never_worse=not args.every_loop,
            budget=budget,
            scheduler=args.scheduler,
            workers=workers,
            output=args.output,
            progress=not args.quiet and sys.stderr.isatty(),
        )
    except OSError as error:
        where = f"{error.filename}: " if error.filename else ""
        return fail(f"{where}{error.strerror or error}", 1)
    except PolicyError as error:  # --batch or --block naming no space of it
        return fail(str(error), 2)
    except (InputError, SequantError, BudgetError, ExecutionError) as error:
        return fail(str(error), 1)
    except (ValueError, TypeError) as error:
        return fail(str(error), 2)
    if not args.quiet:
        sys.stdout.write(
            f"residual ({', '.join(run.labels)}) written to {run.output}\n"
        )
        sys.stdout.write(run.report.table())
    return 0
