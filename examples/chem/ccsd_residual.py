"""The spin-free CCSD doubles residual of SeQuant, on a molecule from pyscf.

pyscf computes the integrals and the converged closed-shell CCSD amplitudes;
axisflow evaluates SeQuant's own 113-term residual
(examples/sequant/ccsd_doubles_residual_sf.txt) on them, unbatched and
through a batched schedule. At the converged amplitudes the residual
vanishes (relative to its size at the MP2 guess, where CCSD starts); without
the symmetrizer Ŝ it does not. See README.md beside this file.

Run from the top of a checkout (after `make venv`, which installs pyscf):

    .venv/bin/python examples/chem/ccsd_residual.py [--molecule h2o|nh3|lih]
        [--basis sto-3g] [--batch i] [--block 2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from axisflow.execution import InputSource, evaluate_expression
from axisflow.execution.chem import pyscf_inputs
from axisflow.sequant import parse
from axisflow.sequant.forest import resolve_space_key, space_aliases

EQUATION = (
    Path(__file__).resolve().parents[1] / "sequant" / "ccsd_doubles_residual_sf.txt"
)
MOLECULES = {
    "h2o": "O 0 0 0; H 0 -0.757 0.587; H 0 0.757 0.587",
    "nh3": "N 0 0 0; H 0 0.94 0.38; H 0.81 -0.47 0.38; H -0.81 -0.47 0.38",
    "lih": "Li 0 0 0; H 0 0 1.6",
}
SYMMETRIZER = "Ŝ{i_1,i_2;a_1,a_2}:N-C-S * "
DESCRIPTION = (
    "The spin-free CCSD doubles residual of SeQuant, on a molecule from pyscf."
)


def converged_ccsd(atoms: str, basis: str):
    """pyscf's RHF and RCCSD, converged tightly (amplitudes to 1e-10)."""
    from pyscf import cc, gto, lib, scf

    lib.num_threads(1)  # small molecules: threads only cost
    molecule = gto.M(atom=atoms, basis=basis, verbose=0)
    hartree_fock = scf.RHF(molecule).run(conv_tol=1e-12)
    ccsd = cc.RCCSD(hartree_fock)
    ccsd.conv_tol = 1e-12
    ccsd.conv_tol_normt = 1e-10
    ccsd.kernel()
    return ccsd


def positive(text: str) -> int:
    """An argparse type: a positive integer."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    parser.add_argument("--molecule", choices=sorted(MOLECULES), default="h2o")
    parser.add_argument("--basis", default="sto-3g", help="a pyscf basis name")
    parser.add_argument("--batch", default="i", help="index spaces to batch: i, a, i,a")
    parser.add_argument("--block", type=positive, default=2, help="elements per block")
    options = parser.parse_args(argv)
    try:
        report(options.molecule, options.basis, options.batch, options.block)
    except (ValueError, RuntimeError) as error:  # a bad basis or batch: no traceback
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    return 0


class Problem(NamedTuple):
    """The residual's text, pyscf's converged CCSD, its amplitudes as the
    residual's inputs, and the residual's norm at the MP2 guess (the scale
    every reported norm is relative to)."""

    text: str
    ccsd: Any
    converged: InputSource
    scale: float

    def line(self, what: str, residual: NDArray[np.float64]) -> str:
        """One line of the report: the residual's norm relative to the scale."""
        relative = float(np.linalg.norm(residual)) / self.scale
        verdict = "vanishes" if relative < 1e-8 else "does not vanish"
        return f"|R| / |R(MP2 guess)|, {what + ':':32s} {relative:.1e}  {verdict}"


def check_batch(text: str, batch: str) -> None:
    """Resolve every space of ``batch`` (``ValueError`` naming a typo), so
    that a bad option fails before pyscf runs."""
    spaces = parse(text).space_keys()
    for space in batch.split(","):
        resolve_space_key(space.strip(), spaces, space_aliases(spaces))


def problem(molecule: str, basis: str) -> Problem:
    """Converge pyscf's CCSD on ``molecule`` and build the residual's inputs
    at the converged amplitudes and at the MP2 guess CCSD starts from."""
    text = EQUATION.read_text(encoding="utf-8")
    ccsd = converged_ccsd(MOLECULES[molecule], basis)
    converged = pyscf_inputs(text, ccsd)
    _, t1_guess, t2_guess = ccsd.init_amps()
    guess = pyscf_inputs(text, ccsd, np.asarray(t1_guess), np.asarray(t2_guess))
    scale = float(np.linalg.norm(evaluate_expression(text, guess).residual))
    return Problem(text, ccsd, converged, scale)


def report(molecule: str, basis: str, batch: str, block: int) -> None:
    """Print pyscf's CCSD and the residual's norms (README.md shows them)."""
    check_batch(EQUATION.read_text(encoding="utf-8"), batch)
    chem = problem(molecule, basis)
    text, ccsd, converged, scale = chem.text, chem.ccsd, chem.converged, chem.scale
    print(
        f"{molecule} in {basis}: {ccsd.nocc} occupied, "
        f"{ccsd.nmo - ccsd.nocc} virtual orbitals; "
        f"pyscf CCSD correlation energy {ccsd.e_corr:.10f} Eh"
    )
    print(f"|R| at the MP2 guess:             {scale:.4f}")
    unbatched = evaluate_expression(text, converged)
    batched = evaluate_expression(
        text, converged, batch=batch, block=block, never_worse=False
    )
    no_symmetrizer = evaluate_expression(text.replace(SYMMETRIZER, ""), converged)
    for what, result in (
        ("converged, unbatched", unbatched),
        (f"converged, batched over {batch}", batched),
        ("converged, without Ŝ", no_symmetrizer),
    ):
        print(chem.line(what, result.residual))
    print(
        f"residual axes {', '.join(unbatched.labels)}; the batched schedule has "
        f"{batched.loop_passes} loop passes, blocks of {block}"
    )


if __name__ == "__main__":
    sys.exit(main())
