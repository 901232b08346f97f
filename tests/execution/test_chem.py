"""Physics against an oracle nobody here wrote: SeQuant's own closed-shell
spin-free CCSD doubles residual (``examples/sequant/ccsd_doubles_residual_sf.txt``)
vanishes at pyscf's converged RCCSD amplitudes, evaluated unbatched, through
a batched schedule and through the Dask executor (on the tests' cluster of
two worker processes), and does not without the symmetrizer Ŝ.

The scale is the residual at the MP2 guess, where pyscf's CCSD starts.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from distributed import Client
from pyscf import cc, gto, lib, scf

from axisflow.execution import evaluate_expression, execute_expression
from axisflow.execution.chem import ChemError, closed_shell_inputs, pyscf_inputs
from tests.conftest import EXAMPLES
from tests.script_module import load_script

TEXT = (EXAMPLES / "sequant" / "ccsd_doubles_residual_sf.txt").read_text("utf-8")
SYMMETRIZER = "Ŝ{i_1,i_2;a_1,a_2}:N-C-S * "
MOLECULES = {
    "h2o": "O 0 0 0; H 0 -0.757 0.587; H 0 0.757 0.587",
    "nh3": "N 0 0 0; H 0 0.94 0.38; H 0.81 -0.47 0.38; H -0.81 -0.47 0.38",
}
VANISHES = 1e-8


@dataclass
class Molecule:
    ccsd: Any
    """pyscf's RCCSD, converged."""
    converged: dict[str, np.ndarray]
    scale: float
    """|R| at the MP2 guess."""


@pytest.fixture(scope="module", params=sorted(MOLECULES))
def molecule(request: pytest.FixtureRequest) -> Iterator[Molecule]:
    threads = lib.num_threads()
    lib.num_threads(1)  # tiny molecules: threads on a shared machine only cost
    try:
        mol = gto.M(atom=MOLECULES[request.param], basis="sto-3g", verbose=0)
        hartree_fock = scf.RHF(mol).run(conv_tol=1e-12)
        ccsd = cc.RCCSD(hartree_fock)
        ccsd.conv_tol = 1e-12
        ccsd.conv_tol_normt = 1e-10
        ccsd.kernel()
        assert ccsd.converged
        _, t1, t2 = ccsd.init_amps()
        guess = pyscf_inputs(TEXT, ccsd, np.asarray(t1), np.asarray(t2))
        scale = float(np.linalg.norm(evaluate_expression(TEXT, guess).residual))
        yield Molecule(ccsd, pyscf_inputs(TEXT, ccsd), scale)
    finally:
        lib.num_threads(threads)


def relative(residual: np.ndarray, molecule: Molecule) -> float:
    return float(np.linalg.norm(residual)) / molecule.scale


def test_the_residual_is_not_small_at_the_mp2_guess(molecule: Molecule) -> None:
    assert molecule.scale > 0.1


def test_the_residual_vanishes_at_the_converged_amplitudes(molecule: Molecule) -> None:
    result = evaluate_expression(TEXT, molecule.converged)
    nocc, nvir = molecule.ccsd.nocc, molecule.ccsd.nmo - molecule.ccsd.nocc
    assert result.labels == ("i_1", "i_2", "a_1", "a_2")
    assert result.residual.shape == (nocc, nocc, nvir, nvir)
    assert relative(result.residual, molecule) < VANISHES


@pytest.mark.parametrize(("batch", "block"), [("i", 2), ("a", 1)])
def test_the_residual_vanishes_through_a_batched_schedule(
    molecule: Molecule, batch: str, block: int
) -> None:
    result = evaluate_expression(
        TEXT, molecule.converged, batch=batch, block=block, never_worse=False
    )
    assert result.loop_passes > 0 and result.dropped == ()
    assert relative(result.residual, molecule) < VANISHES


def test_without_the_symmetrizer_it_does_not_vanish(molecule: Molecule) -> None:
    without = TEXT.replace(SYMMETRIZER, "")
    assert "Ŝ" not in without and without.count(" * ") == TEXT.count(" * ") - 113
    result = evaluate_expression(without, molecule.converged)
    assert relative(result.residual, molecule) > 0.5


@pytest.mark.parametrize("symmetrizer", [True, False])
def test_through_the_dask_executor_it_vanishes_only_with_the_symmetrizer(
    molecule: Molecule, dask_client: Client, symmetrizer: bool
) -> None:
    text = TEXT if symmetrizer else TEXT.replace(SYMMETRIZER, "")
    run = execute_expression(
        text,
        molecule.converged,
        batch="i",
        block=2,
        never_worse=False,
        scheduler=dask_client,
    )
    assert run.residual is not None and run.report.workers == 2
    if symmetrizer:
        assert relative(run.residual, molecule) < VANISHES
    else:
        assert relative(run.residual, molecule) > 0.5


def test_the_conventions_are_the_documented_ones(molecule: Molecule) -> None:
    ccsd = molecule.ccsd
    inputs = molecule.converged
    nocc = ccsd.nocc
    t1, t2 = np.asarray(ccsd.t1), np.asarray(ccsd.t2)
    assert np.array_equal(inputs["t{a;i}"], t1.T)
    assert np.array_equal(inputs["t{a,a;i,i}"], t2.transpose(2, 3, 0, 1))
    eris = ccsd.ao2mo()
    # pyscf's own blocks: ovov[i,a,j,b] = (ia|jb) = <ij|ab> = g{i,i;a,a}[i,j,a,b]
    assert np.allclose(
        inputs["g{i,i;a,a}"], np.asarray(eris.ovov).transpose(0, 2, 1, 3), atol=1e-12
    )
    fock = np.asarray(eris.fock)
    assert np.allclose(inputs["f{i;i}"], fock[:nocc, :nocc], atol=1e-12)


def test_tensors_outside_the_conventions_are_refused() -> None:
    eri = np.zeros((3, 3, 3, 3))
    arrays = {"eri": eri, "fock": np.zeros((3, 3)), "nocc": 1}
    amplitudes = {"t1": np.zeros((1, 2)), "t2": np.zeros((1, 1, 2, 2))}
    with pytest.raises(ChemError) as caught:
        closed_shell_inputs("x{a_1;i_1} * t{a_1;i_1}", **arrays, **amplitudes)
    assert str(caught.value) == (
        "input x{a;i}: not a closed-shell tensor (g, f, t{a;i}, t{a,a;i,i})"
    )
    with pytest.raises(ChemError) as caught:
        closed_shell_inputs("g{μ̃_1;i_1}", **arrays, **amplitudes)
    assert str(caught.value) == (
        "input g{μ̃;i}: index spaces μ̃, i; the closed-shell tensors have i, a, p only"
    )
    with pytest.raises(ChemError) as caught:
        closed_shell_inputs(
            "f{i_1;i_2}", **arrays, t1=np.zeros((2, 1)), t2=amplitudes["t2"]
        )
    assert str(caught.value) == (
        "t1 has shape (2, 1), expected (1, 2) for 1 occupied of 3 orbitals"
    )


def load_example(name: str) -> Any:
    """The example script ``examples/chem/NAME.py`` as a module."""
    return load_script(EXAMPLES / "chem" / f"{name}.py", name)


def readme_lines(command: str, skip: int) -> list[str]:
    """What the README shows after ``$ COMMAND`` (its first ``skip`` lines
    left out), up to the next blank line."""
    readme = (EXAMPLES / "chem" / "README.md").read_text("utf-8")
    shown = readme.split(f"    $ .venv/bin/python examples/chem/{command}")[1]
    return [line[4:] for line in shown.split("\n\n")[0].splitlines()[skip:]]


def masked(lines: list[str]) -> list[str]:
    """The converged norms' last digits follow pyscf's convergence (the
    README says so): masked, everything else is compared exactly."""
    return [re.sub(r"\d\.\de-(09|10)  vanishes", "?  vanishes", x) for x in lines]


def test_the_chem_example_prints_what_its_readme_shows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    example = load_example("ccsd_residual")
    expected = readme_lines("ccsd_residual.py\n", 0)
    threads = lib.num_threads()
    try:
        assert example.main([]) == 0
    finally:
        lib.num_threads(threads)
    printed = capsys.readouterr().out.splitlines()
    assert masked(printed) == masked(expected)
    assert sum("  vanishes" in line for line in printed) == 2


def test_the_dask_example_prints_what_its_readme_shows(
    capsys: pytest.CaptureFixture[str], dask_client: Client
) -> None:
    example = load_example("ccsd_residual_dask")
    expected = readme_lines("ccsd_residual_dask.py", 1)
    threads = lib.num_threads()
    address = str(dask_client.scheduler_info()["address"])
    try:
        assert example.main(["--scheduler", address]) == 0
    finally:
        lib.num_threads(threads)
    printed = capsys.readouterr().out.splitlines()
    assert masked(printed) == masked(expected)
    assert sum("  vanishes" in line for line in printed) == 1


@pytest.mark.parametrize("name", ["ccsd_residual", "ccsd_residual_dask"])
def test_the_examples_refuse_a_misspelt_batch_before_pyscf_runs(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    example = load_example(name)

    def not_reached(*_: object) -> None:
        raise AssertionError("pyscf ran")

    monkeypatch.setattr(example, "problem", not_reached)
    monkeypatch.setattr(sys, "argv", [f"{name}.py"])  # as a user runs it
    with pytest.raises(SystemExit) as caught:
        example.main(["--batch", "i,x"])
    assert caught.value.code == 2
    assert capsys.readouterr().err == (
        f"{name}.py: error: index space 'x' does not occur in the expression "
        "(its spaces: a, i)\n"
    )
