"""The independent numerical oracle of the tests, for SeQuant expressions.

Nothing here computes with the forest, the schedule or the evaluator: each
term of the parsed text is evaluated with one ``numpy.einsum`` over its
tensors and scaled by its coefficient (``term_by_einsum``: one term onto any
output order, for per-tree checks); the residual (``oracle_residual``) sums
them and applies the terms' reserved operators
(``axisflow.residual.operators``, which states SeQuant's definitions).
``oracle_inputs`` hands the same numbers to the evaluator the way a user
does: one array per input, by key (``axisflow.execution``, which builds the
leaves' frames from them), so the public input layer is under test too.

Dense model (the forest model's convention): a tensor carrying
``a_1<i_1,i_2>`` has the composite as a mode of the extent of ``a`` and its
protos ``i_1``, ``i_2`` as modes too; a term's einsum sums every mode that is
not a mode of the residual.

Inputs (``tensor_array``) are deterministic random arrays that depend only on
the tensor's label, symmetry, layout and index *structure*, never on its
index names: two occurrences equal up to a renaming get the same numbers, so
any forest that shares values by canonical frames sees the same inputs. They
respect the symmetries the text declares (``:P-B-C`` after the tensor):

* ``P`` (``S`` or ``A``): symmetric, or antisymmetric, under permutations of
  the bra and of the ket slots;
* ``B`` (``S`` or ``C``, real data): ``T{bra;ket} = T{ket;bra}``;
* ``C`` (``S``): symmetric under permutations of the columns (bra_k, ket_k).

A symmetry is imposed only where the slot permutation maps the tensor's index
structure onto itself without moving proto-only indices (those that occur
only inside composite labels); proto-only indices occurring in exactly the
same places (``C{a_1<i_1,i_2>;μ̃_1}``) are interchangeable, so the array is
symmetrized over them (whatever pairing a forest chooses reads the same
numbers).
"""

from __future__ import annotations

import itertools
import unicodedata
import zlib
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from axisflow.execution import signature_of
from axisflow.residual import Operator, apply_operators, residual_layout
from axisflow.roles.index import Index
from axisflow.sequant import Expression, Tensor, Term

Array = NDArray[np.float64]


def modes_of(indices: Sequence[Index]) -> tuple[Index, ...]:
    """Carried indices, then proto indices at any depth, each once."""
    found: dict[Index, None] = dict.fromkeys(indices)
    for index in indices:
        for proto in index.all_protos():
            found.setdefault(proto, None)
    return tuple(found)


# --------------------------------------------------------------------------
# Structure-only inputs
# --------------------------------------------------------------------------


class _Canonical:
    """One orientation of a tensor occurrence renamed by structure."""

    def __init__(self, label: str, symmetry: str, groups: Sequence[Sequence[Index]]):
        self.layout = tuple(len(g) for g in groups)
        slots = [index for group in groups for index in group]
        ordinal: dict[Index, int] = {}
        counter: dict[str, int] = {}

        def number(index: Index) -> None:
            counter[index.base_key] = counter.get(index.base_key, 0) + 1
            ordinal[index] = counter[index.base_key]

        for index in slots:
            number(index)
        places: dict[Index, list[tuple[int, int]]] = {}
        for slot, index in enumerate(slots):
            stack = [(p, 1) for p in index.protos]
            while stack:
                proto, depth = stack.pop()
                if proto not in ordinal:
                    places.setdefault(proto, []).append((slot, depth))
                stack.extend((p, depth + 1) for p in proto.protos)
        proto_only = sorted(places, key=lambda p: (p.base_key, sorted(places[p])))
        self.ties: list[list[Index]] = []
        for _, members in itertools.groupby(
            proto_only, key=lambda p: (p.base_key, sorted(places[p]))
        ):
            group = list(members)
            for proto in group:
                number(proto)
            if len(group) > 1:
                self.ties.append(group)
        self.ordinal = ordinal
        self.slots = tuple(self.rename(i) for i in slots)
        self.signature = (
            unicodedata.normalize("NFC", label),
            symmetry,
            self.layout,
            tuple(i.full_label for i in self.slots),
        )
        self.ties = [[self.rename(p) for p in group] for group in self.ties]

    def rename(self, index: Index) -> Index:
        return Index(
            index.base_key,
            self.ordinal[index],
            (self.rename(p) for p in index.protos),
        )


def _orientations(tensor: Tensor, symmetry: str) -> list[_Canonical]:
    bra_ket = symmetry.split("-")[1] if symmetry.count("-") >= 1 else "N"
    found = [_Canonical(tensor.label, symmetry, (tensor.bra, tensor.ket, tensor.aux))]
    if bra_ket in ("S", "C"):
        found.append(
            _Canonical(tensor.label, symmetry, (tensor.ket, tensor.bra, tensor.aux))
        )
    return found


def _slot_generators(
    layout: tuple[int, ...], symmetry: str
) -> list[tuple[tuple[int, ...], int]]:
    """Slot permutations (new slot j holds old slot perm[j]) and signs."""
    letters = [*symmetry.split("-"), "N", "N"]
    permutational, bra_ket, column = letters[0], letters[1], letters[2]
    nbra, nket, naux = (*layout, 0, 0)[:3]
    size = nbra + nket + naux
    identity = list(range(size))
    generators: list[tuple[tuple[int, ...], int]] = []

    def swap(a: int, b: int) -> list[int]:
        perm = list(identity)
        perm[a], perm[b] = perm[b], perm[a]
        return perm

    if permutational in ("S", "A"):
        sign = -1 if permutational == "A" else 1
        for start, length in ((0, nbra), (nbra, nket)):
            for k in range(start, start + length - 1):
                generators.append((tuple(swap(k, k + 1)), sign))
    if column == "S":
        for k in range(min(nbra, nket) - 1):
            perm = swap(k, k + 1)
            perm[nbra + k], perm[nbra + k + 1] = nbra + k + 1, nbra + k
            generators.append((tuple(perm), 1))
    if bra_ket in ("S", "C") and nbra == nket:
        perm = (
            list(range(nbra, nbra + nket)) + list(range(nbra)) + identity[nbra + nket :]
        )
        generators.append((tuple(perm), 1))
    return generators


def _group(
    generators: list[tuple[tuple[int, ...], int]], size: int
) -> dict[tuple[int, ...], int]:
    identity = tuple(range(size))
    group = {identity: 1}
    frontier = [identity]
    while frontier:
        element = frontier.pop()
        for perm, sign in generators:
            product = tuple(element[perm[j]] for j in range(size))
            if product not in group:
                group[product] = group[element] * sign
                frontier.append(product)
    return group


def _mode_axes(
    canonical: _Canonical, modes: tuple[Index, ...], perm: tuple[int, ...]
) -> tuple[int, ...] | None:
    """Transpose axes for the relabelling slot j -> slot perm[j], or None if
    it does not map the index structure onto itself."""
    slots = canonical.slots
    atoms: dict[tuple[str, int | None], tuple[str, int | None]] = {}
    for j, source in enumerate(slots):
        target = slots[perm[j]]
        if source.base_key != target.base_key:
            return None
        atoms[(source.base_key, source.ordinal)] = (target.base_key, target.ordinal)

    def moved(index: Index) -> Index:
        key, ordinal = atoms.get(
            (index.base_key, index.ordinal), (index.base_key, index.ordinal)
        )
        return Index(key, ordinal, (moved(p) for p in index.protos))

    if any(moved(slots[j]) != slots[perm[j]] for j in range(len(slots))):
        return None
    position = {mode: k for k, mode in enumerate(modes)}
    axes = [position.get(moved(mode)) for mode in modes]
    if any(axis is None for axis in axes):
        return None
    return tuple(a for a in axes if a is not None)


def _canonical_array(
    canonical: _Canonical, extents: Mapping[str, int], seed: int
) -> tuple[tuple[Index, ...], Array]:
    modes = modes_of(canonical.slots)
    shape = tuple(extents[m.base_key] for m in modes)
    key = zlib.crc32(repr((seed, canonical.signature)).encode("utf-8"))
    array = np.random.default_rng(key).standard_normal(shape)
    position = {mode: k for k, mode in enumerate(modes)}
    for tie in canonical.ties:
        total = np.zeros_like(array)
        perms = list(itertools.permutations(tie))
        for images in perms:
            image = dict(zip(tie, images, strict=True))
            axes = [position[image.get(m, m)] for m in modes]
            total += np.transpose(array, axes)
        array = total / len(perms)
    symmetry = canonical.signature[1]
    group = _group(_slot_generators(canonical.layout, symmetry), len(canonical.slots))
    total = np.zeros_like(array)
    count = 0
    for perm, sign in group.items():
        axes = _mode_axes(canonical, modes, perm)
        if axes is not None:
            total += sign * np.transpose(array, axes)
            count += 1
    return modes, total / count


def tensor_array(tensor: Tensor, extents: Mapping[str, int], seed: int = 0) -> Array:
    """The input for ``tensor``, axes in the order of ``modes_of(indices)``."""
    symmetry = tensor.symmetry or "N-N-N"
    candidates = _orientations(tensor, symmetry)
    chosen = min(candidates, key=lambda c: repr(c.signature))
    canonical_modes, array = _canonical_array(chosen, extents, seed)
    position = {mode: k for k, mode in enumerate(canonical_modes)}
    axes = [position[chosen.rename(m)] for m in modes_of(tensor.indices)]
    return np.transpose(array, axes)


def oracle_inputs(
    expression: Expression, extents: Mapping[str, int], seed: int = 0
) -> dict[str, Array]:
    """The oracle's arrays as a user gives them to ``axisflow.execution``:
    one per input of the expression, by its exact key, axes in the input's
    layout; each read from the text tensor of the input's first occurrence
    (``signature_of`` names its label on every axis)."""
    inputs: dict[str, Array] = {}
    for term in expression.terms:
        for tensor in term.tensors:
            signature, labels = signature_of(tensor)
            if signature.exact_key in inputs:
                continue
            array = tensor_array(tensor, extents, seed)
            axes = {mode: k for k, mode in enumerate(modes_of(tensor.indices))}
            inputs[signature.exact_key] = np.transpose(
                array, [axes[labels[mode]] for mode in signature.modes]
            )
    return inputs


# --------------------------------------------------------------------------
# One einsum per term, and the residual
# --------------------------------------------------------------------------


def term_by_einsum(
    term: Term,
    output: Sequence[Index],
    extents: Mapping[str, int],
    seed: int = 0,
) -> Array:
    """``coefficient * product of the term's tensors``, summed over every mode
    not in ``output``, axes in ``output`` order: one ``numpy.einsum`` over the
    parsed tensors (operators not applied: one term, for per-tree checks)."""
    return float(term.coefficient) * _term_value(
        term.tensors, tuple(output), extents, seed
    )


def term_operators(tensors: Sequence[Tensor]) -> tuple[Operator, ...]:
    """The reserved operators of a term as ``Operator`` values."""
    return tuple(Operator.make(t.label, t.bra, t.ket) for t in tensors)


def oracle_residual(
    expression: Expression,
    extents: Mapping[str, int],
    seed: int = 0,
    result: Sequence[Index] | None = None,
) -> tuple[tuple[Index, ...], Array]:
    """The residual's modes and value: per term one einsum, scaled, summed
    per operator group, operators applied, groups added."""
    operators = [term_operators(term.operators) for term in expression.terms]
    layout = residual_layout(
        [term.externals() for term in expression.terms], operators, result
    )
    out_modes = layout.modes
    shape = tuple(extents[m.base_key] for m in out_modes)
    residual = np.zeros(shape)
    for group in layout.groups:
        partial = np.zeros(shape)
        for position in group.terms:
            term = expression.terms[position]
            partial += float(term.coefficient) * _term_value(
                term.tensors, out_modes, extents, seed
            )
        residual += apply_operators(partial, out_modes, group.operators)
    return out_modes, residual


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _term_value(
    tensors: Sequence[Tensor],
    out_modes: tuple[Index, ...],
    extents: Mapping[str, int],
    seed: int,
) -> Array:
    """One term's tensors contracted by a single einsum onto ``out_modes``."""
    if not tensors:
        return np.ones(tuple(extents[m.base_key] for m in out_modes))
    letter: dict[Index, str] = {}

    def subscripts(modes: Sequence[Index]) -> str:
        for mode in modes:
            if mode not in letter:
                if len(letter) == len(_LETTERS):
                    raise ValueError("a term with more than 52 modes")
                letter[mode] = _LETTERS[len(letter)]
        return "".join(letter[m] for m in modes)

    arrays = [tensor_array(t, extents, seed) for t in tensors]
    inputs = ",".join(subscripts(modes_of(t.indices)) for t in tensors)
    output = subscripts(out_modes)
    value = np.einsum(f"{inputs}->{output}", *arrays, optimize="greedy")
    return np.asarray(value, dtype=np.float64)
