"""Closed-shell molecular tensors in SeQuant's conventions (pyscf optional).

SeQuant's spin-free closed-shell equations (such as the bundled
``examples/sequant/ccsd_doubles_residual_sf.txt``) read, over the occupied
orbitals ``i`` and the virtual orbitals ``a`` of a restricted Hartree-Fock
reference, in the molecular-orbital basis with real orbitals:

* ``g{p,q;r,s}`` = ``<pq|rs>``, the two-electron integrals in physicists'
  notation, ``(pr|qs)`` in chemists' notation: ``eri[p,r,q,s]`` of the
  chemists'-notation array ``eri[p,q,r,s] = (pq|rs)`` that pyscf's
  ``ao2mo`` gives, so ``g = eri.transpose(0, 2, 1, 3)``;
* ``f{p;q}`` = ``fock[p,q]``, the Fock matrix;
* ``t{a;i}`` = ``t1[i,a]`` and ``t{a_1,a_2;i_1,i_2}`` = ``t2[i_1,i_2,a_1,a_2]``:
  pyscf's restricted (spin-free) amplitudes, which store the occupied
  indices first.

A block of ``g`` or ``f`` is the slice of the full array by the index space
of each axis (``i``: the first ``nocc`` orbitals, ``a``: the rest, ``p``:
all). The residual of the doubles expression, ``R{i_1,i_2;a_1,a_2}`` (axes
``i_1, i_2, a_1, a_2``), vanishes at pyscf's converged amplitudes
(``tests/execution/test_chem.py``, ``examples/chem/``).

``closed_shell_inputs`` needs NumPy only; ``pyscf_inputs`` takes a pyscf
``RCCSD`` object (pyscf: ``pip install 'axisflow[chem]'``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from axisflow.execution.inputs import input_keys, input_signatures
from axisflow.sequant.syntax import Expression, parse

Array = NDArray[np.float64]

SPACES = ("i", "a", "p")
"""The index spaces of the closed-shell tensors: occupied, virtual, all."""


class ChemError(ValueError):
    """An expression or arrays the closed-shell conventions do not cover."""


def _space_slices(nocc: int, norb: int) -> dict[str, slice]:
    return {"i": slice(0, nocc), "a": slice(nocc, norb), "p": slice(0, norb)}


def closed_shell_inputs(
    expression: Expression | str,
    *,
    eri: Array,
    fock: Array,
    nocc: int,
    t1: Array,
    t2: Array,
) -> dict[str, Array]:
    """The arrays of every input of ``expression``, by key, from molecular
    arrays in pyscf's conventions (module docstring): ``eri[p,q,r,s] =
    (pq|rs)`` over all ``n`` orbitals, ``fock`` ``(n, n)``, ``nocc``
    occupied orbitals first, ``t1[i,a]`` and ``t2[i,j,a,b]``. Inputs other
    than ``g``, ``f`` (any blocks) and ``t{a;i}``, ``t{a,a;i,i}`` raise
    ``ChemError``."""
    if isinstance(expression, str):
        expression = parse(expression)
    norb = int(fock.shape[0])
    nvir = norb - nocc
    expected = {
        "eri": (eri.shape, (norb,) * 4),
        "fock": (fock.shape, (norb, norb)),
        "t1": (t1.shape, (nocc, nvir)),
        "t2": (t2.shape, (nocc, nocc, nvir, nvir)),
    }
    for name, (shape, wanted) in expected.items():
        if tuple(shape) != wanted:
            raise ChemError(
                f"{name} has shape {tuple(shape)}, expected {wanted} for "
                f"{nocc} occupied of {norb} orbitals"
            )
    blocks = _space_slices(nocc, norb)
    full: Mapping[str, Array] = {"g": eri.transpose(0, 2, 1, 3), "f": fock}
    signatures = input_signatures(expression)
    keys = input_keys(signatures)
    inputs: dict[str, Array] = {}
    for signature in signatures:
        key = keys[signature.exact_key]
        spaces = signature.axis_kinds
        if any(space not in SPACES for space in spaces):
            raise ChemError(
                f"input {key}: index spaces {', '.join(spaces)}; the closed-shell "
                f"tensors have {', '.join(SPACES)} only"
            )
        if signature.label in full:
            array = full[signature.label]
            if array.ndim != len(spaces):
                raise ChemError(f"input {key}: {signature.label} has {array.ndim} axes")
            inputs[key] = np.ascontiguousarray(
                array[tuple(blocks[space] for space in spaces)]
            )
        elif signature.label == "t" and spaces == ("a", "i"):
            inputs[key] = np.ascontiguousarray(t1.T)
        elif signature.label == "t" and spaces == ("a", "a", "i", "i"):
            inputs[key] = np.ascontiguousarray(t2.transpose(2, 3, 0, 1))
        else:
            raise ChemError(
                f"input {key}: not a closed-shell tensor (g, f, t{{a;i}}, t{{a,a;i,i}})"
            )
    return inputs


def pyscf_inputs(
    expression: Expression | str,
    ccsd: Any,
    t1: Array | None = None,
    t2: Array | None = None,
) -> dict[str, Array]:
    """``closed_shell_inputs`` from a pyscf ``RCCSD`` object (no frozen
    orbitals): its molecular-orbital integrals and Fock matrix, and the
    amplitudes ``t1``, ``t2`` (default: the object's own, converged after
    ``ccsd.kernel()``)."""
    from pyscf import ao2mo

    if ccsd.frozen not in (None, 0, []):
        raise ChemError(f"frozen orbitals ({ccsd.frozen!r}) are not supported")
    mo_coeff = np.asarray(ccsd.mo_coeff)
    norb = mo_coeff.shape[1]
    eri = ao2mo.restore(1, ao2mo.full(ccsd.mol, mo_coeff), norb)
    fock = mo_coeff.T @ ccsd._scf.get_fock() @ mo_coeff
    return closed_shell_inputs(
        expression,
        eri=np.asarray(eri),
        fock=np.asarray(fock),
        nocc=int(ccsd.nocc),
        t1=np.asarray(ccsd.t1 if t1 is None else t1),
        t2=np.asarray(ccsd.t2 if t2 is None else t2),
    )


__all__ = ["SPACES", "ChemError", "closed_shell_inputs", "pyscf_inputs"]
