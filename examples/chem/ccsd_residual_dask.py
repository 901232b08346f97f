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

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ccsd_residual import (  # the example beside this one
    EQUATION,
    MOLECULES,
    SYMMETRIZER,
    converged_ccsd,
    positive,
)

from axisflow.execution import evaluate_expression, execute_expression
from axisflow.execution.chem import pyscf_inputs

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
    text = EQUATION.read_text(encoding="utf-8")
    ccsd = converged_ccsd(MOLECULES[options.molecule], options.basis)
    print(
        f"{options.molecule} in {options.basis}: {ccsd.nocc} occupied, "
        f"{ccsd.nmo - ccsd.nocc} virtual orbitals"
    )
    converged = pyscf_inputs(text, ccsd)
    _, t1_guess, t2_guess = ccsd.init_amps()  # the MP2 guess CCSD starts from
    guess = pyscf_inputs(text, ccsd, np.asarray(t1_guess), np.asarray(t2_guess))
    scale = float(np.linalg.norm(evaluate_expression(text, guess).residual))
    for what, equation in (
        ("converged, on Dask", text),
        ("converged, on Dask, without Ŝ", text.replace(SYMMETRIZER, "")),
    ):
        run = execute_expression(
            equation,
            converged,
            batch=options.batch,
            block=options.block,
            never_worse=False,
            workers=options.workers,
            scheduler=options.scheduler,
        )
        assert run.residual is not None
        relative = float(np.linalg.norm(run.residual)) / scale
        verdict = "vanishes" if relative < 1e-8 else "does not vanish"
        print(f"|R| / |R(MP2 guess)|, {what + ':':32s} {relative:.1e}  {verdict}")
        print(
            f"  {run.report.tasks} tasks on {run.report.workers} workers, "
            f"{run.report.multiply_adds:,} multiply-adds"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
