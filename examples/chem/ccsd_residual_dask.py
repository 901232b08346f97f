"""The spin-free CCSD doubles residual of SeQuant on a molecule, run on Dask.

As ``ccsd_residual.py``, but the residual is evaluated by axisflow's Dask
executor (``axisflow.execution.execute_expression``): the batched schedule
becomes one task per block of its outer loops, on an embedded cluster of
worker processes (``--workers``) or on a running one (``--scheduler
tcp://host:8786``). At pyscf's converged amplitudes the residual vanishes;
without the symmetrizer Ŝ it does not. See README.md beside this file.

    .venv/bin/python examples/chem/ccsd_residual_dask.py [--molecule h2o|nh3|lih]
        [--basis sto-3g] [--batch i] [--block 2] [--workers 2] [--scheduler ADDRESS]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccsd_residual import (  # the example beside this one
    EQUATION,
    MOLECULES,
    SYMMETRIZER,
    check_batch,
    positive,
    problem,
)

from axisflow.execution import execute_expression

DESCRIPTION = "The spin-free CCSD doubles residual of SeQuant on a molecule, on Dask."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("--molecule", choices=sorted(MOLECULES), default="h2o")
    parser.add_argument("--basis", default="sto-3g", help="a pyscf basis name")
    parser.add_argument("--batch", default="i", help="index spaces to batch: i, a, i,a")
    parser.add_argument("--block", type=positive, default=2, help="elements per block")
    parser.add_argument("--workers", type=positive, default=2, help="worker processes")
    parser.add_argument("--scheduler", help="address of a running Dask scheduler")
    options = parser.parse_args(argv)
    try:
        run_on_dask(options)
    except (ValueError, RuntimeError) as error:  # a bad basis or batch: no traceback
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    return 0


def run_on_dask(options: argparse.Namespace) -> None:
    """Print the residual's norms run on Dask (README.md shows them)."""
    check_batch(EQUATION.read_text(encoding="utf-8"), options.batch)
    chem = problem(options.molecule, options.basis)
    print(
        f"{options.molecule} in {options.basis}: {chem.ccsd.nocc} occupied, "
        f"{chem.ccsd.nmo - chem.ccsd.nocc} virtual orbitals"
    )
    for what, equation in (
        ("converged, on Dask", chem.text),
        ("converged, on Dask, without Ŝ", chem.text.replace(SYMMETRIZER, "")),
    ):
        run = execute_expression(
            equation,
            chem.converged,
            batch=options.batch,
            block=options.block,
            never_worse=False,
            workers=options.workers,
            scheduler=options.scheduler,
        )
        assert run.residual is not None
        print(chem.line(what, run.residual))
        print(
            f"  {run.report.tasks} tasks on {run.report.workers} workers, "
            f"{run.report.multiply_adds:,} multiply-adds"
        )


if __name__ == "__main__":
    sys.exit(main())
