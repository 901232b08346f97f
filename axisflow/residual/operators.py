"""SeQuant's reserved operators Ŝ, Â and P̂, applied to a dense residual.

Pure NumPy, no xDSL. The definitions follow SeQuant exactly (see
``docs/residual.md`` for the source functions):

* ``Ŝ{b_1..b_n;k_1..k_n}``, the particle (column) symmetrizer: the average
  over the ``n!`` permutations σ of the columns ``(b_j, k_j)``, each column
  moved as a whole (``b_j -> b_σ(j)`` and ``k_j -> k_σ(j)`` together), no
  sign. Bra and ket must have the same length.
* ``Â{b_1..b_m;k_1..k_n}``, the antisymmetrizer: the sum over every
  permutation σ of the bra and every permutation τ of the ket, independently,
  with the sign ``sgn(σ)·sgn(τ)``, divided by ``m!·n!``.
* ``P̂{x_1,x_2,x_3,x_4,...}`` (bra and ket of even length), the transposition:
  one relabelling that swaps the indices in consecutive pairs of the
  bra-then-ket list (``x_1<->x_2``, ``x_3<->x_4``, ...), coefficient 1; with
  one bra and one ket index it is the identity.

An operator acts on a residual array by relabelling: the permuted residual
at labels ``(m_1..m_r)`` is the residual at ``(g(m_1)..g(m_r))``, where ``g``
is SeQuant's ``Index::transform`` (the whole index is looked up first, else
its proto indices are relabelled). So a composite ``a_1<i_1,i_2>`` and the
proto modes ``i_1``, ``i_2`` of the dense model move together.
"""

from __future__ import annotations

import itertools
import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from axisflow.roles.index import Index

if TYPE_CHECKING:
    # numpy only for the annotation: the passes and ``axisflow plan`` import
    # this module for the operators' names and memory, and every
    # ``axisflow-opt`` run would pay numpy's import (about 80 ms) for
    # ``apply_operator`` alone, which imports it when called.
    import numpy as np
    from numpy.typing import NDArray

    Array = NDArray[np.float64]

OperatorKind = Literal["symmetrizer", "antisymmetrizer", "transposition"]

LABELS: dict[str, OperatorKind] = {
    unicodedata.normalize("NFC", "Ŝ"): "symmetrizer",
    unicodedata.normalize("NFC", "Â"): "antisymmetrizer",
    unicodedata.normalize("NFC", "P̂"): "transposition",
}
"""SeQuant's reserved operator labels (NFC) and what they stand for."""

_SYMBOL = {kind: label for label, kind in LABELS.items()}


class OperatorError(ValueError):
    """An operator that SeQuant's definition does not allow, or one that does
    not map a residual onto itself; the message names the operator."""


Relabelling = dict[Index, Index]


@dataclass(frozen=True)
class Operator:
    """One reserved operator with its bra and ket index lists."""

    kind: OperatorKind
    bra: tuple[Index, ...]
    ket: tuple[Index, ...]

    @staticmethod
    def make(label: str, bra: Sequence[Index], ket: Sequence[Index]) -> Operator:
        """The operator written ``label{bra;ket}``; ``OperatorError`` if the
        label is not reserved or the index lists do not fit its definition."""
        kind = LABELS.get(unicodedata.normalize("NFC", label))
        if kind is None:
            raise OperatorError(f"{label} is not one of Ŝ, Â, P̂")
        operator = Operator(kind, tuple(bra), tuple(ket))
        operator.check()
        return operator

    @staticmethod
    def parse(text: str) -> Operator:
        """``Ŝ{a_1,a_2;i_1,i_2}`` (the printed form) back into an operator;
        ``OperatorError`` naming the text if it is malformed."""
        label, brace, rest = text.strip().partition("{")
        if not brace or not rest.endswith("}"):
            raise OperatorError(
                f"malformed operator {text!r}: expected LABEL{{bra;ket}}"
            )
        groups = _split(rest[:-1], ";")
        if len(groups) != 2:
            raise OperatorError(f"malformed operator {text!r}: expected bra;ket")
        try:
            bra, ket = (
                [Index.parse(part) for part in _split(group, ",") if part.strip()]
                for group in groups
            )
        except ValueError as error:
            raise OperatorError(f"malformed operator {text!r}: {error}") from None
        return Operator.make(label, bra, ket)

    @property
    def indices(self) -> tuple[Index, ...]:
        """Bra then ket."""
        return self.bra + self.ket

    def check(self) -> None:
        """Raise ``OperatorError`` unless the lists fit SeQuant's definition."""
        if len(set(self.indices)) != len(self.indices):
            raise OperatorError(f"{self}: an index is listed twice")
        if self.kind == "symmetrizer" and len(self.bra) != len(self.ket):
            raise OperatorError(
                f"{self}: the particle symmetrizer needs as many bra as ket "
                f"indices (columns), got {len(self.bra)} and {len(self.ket)}"
            )
        if self.kind == "transposition" and (len(self.bra) % 2 or len(self.ket) % 2):
            if len(self.bra) == 1 and len(self.ket) == 1:
                return  # SeQuant removes P̂{p;q}: the identity
            raise OperatorError(
                f"{self}: the transposition needs an even number of bra and of "
                "ket indices (it swaps consecutive pairs)"
            )

    def relabellings(self) -> tuple[tuple[Fraction, Relabelling], ...]:
        """The weighted relabellings whose sum is the operator.

        Ŝ: ``1/n!`` per column permutation; Â: ``sgn(σ)sgn(τ)/(m!n!)`` per
        pair of bra and ket permutations; P̂: one pairwise swap, weight 1.
        """
        if self.kind == "symmetrizer":
            n = len(self.bra)
            weight = Fraction(1, math.factorial(n))
            result: list[tuple[Fraction, Relabelling]] = []
            for perm in itertools.permutations(range(n)):
                mapping: Relabelling = {}
                for j, k in enumerate(perm):
                    mapping[self.bra[j]] = self.bra[k]
                    mapping[self.ket[j]] = self.ket[k]
                result.append((weight, mapping))
            return tuple(result)
        if self.kind == "antisymmetrizer":
            m, n = len(self.bra), len(self.ket)
            weight = Fraction(1, math.factorial(m) * math.factorial(n))
            result = []
            for bra_perm in itertools.permutations(range(m)):
                for ket_perm in itertools.permutations(range(n)):
                    sign = _parity(bra_perm) * _parity(ket_perm)
                    mapping = {self.bra[j]: self.bra[k] for j, k in enumerate(bra_perm)}
                    mapping.update(
                        {self.ket[j]: self.ket[k] for j, k in enumerate(ket_perm)}
                    )
                    result.append((sign * weight, mapping))
            return tuple(result)
        if len(self.bra) == 1 and len(self.ket) == 1:
            return ((Fraction(1), {}),)
        swap: Relabelling = {}
        for group in (self.bra, self.ket):
            for first, second in zip(group[::2], group[1::2], strict=True):
                swap[first] = second
                swap[second] = first
        return ((Fraction(1), swap),)

    def __str__(self) -> str:
        bra = ",".join(i.full_label for i in self.bra)
        ket = ",".join(i.full_label for i in self.ket)
        return f"{_SYMBOL[self.kind]}{{{bra};{ket}}}"


def _split(text: str, separator: str) -> list[str]:
    """``text`` split at ``separator`` outside proto lists ``<...>``."""
    parts: list[str] = []
    depth = 0
    start = 0
    for k, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == separator and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    parts.append(text[start:])
    return parts


def _parity(perm: Sequence[int]) -> int:
    """+1 for an even permutation of ``range(len(perm))``, -1 for an odd one."""
    sign = 1
    seen = [False] * len(perm)
    for start in range(len(perm)):
        length = 0
        k = start
        while not seen[k]:
            seen[k] = True
            k = perm[k]
            length += 1
        if length and length % 2 == 0:
            sign = -sign
    return sign


def transform(index: Index, mapping: Mapping[Index, Index]) -> Index:
    """SeQuant's ``Index::transform``: the image of the whole index if the
    mapping has one; otherwise the index with its protos transformed, looked
    up once more as a whole."""
    image = mapping.get(index)
    if image is not None:
        return image
    if not index.protos:
        return index
    renamed = Index(
        index.base_key, index.ordinal, (transform(p, mapping) for p in index.protos)
    )
    return mapping.get(renamed, renamed)


def axis_permutation(
    modes: Sequence[Index], mapping: Mapping[Index, Index], operator: Operator
) -> tuple[int, ...]:
    """The ``numpy.transpose`` axes of the relabelled residual: axis ``j``
    of the result reads the residual's axis of ``mapping(modes[j])``.
    ``OperatorError`` if the relabelling does not permute ``modes``."""
    position = {mode: k for k, mode in enumerate(modes)}
    axes: list[int] = []
    for mode in modes:
        image = transform(mode, mapping)
        if not image.same_type(mode):
            raise OperatorError(
                f"{operator} maps mode {mode} to {image}, of another index space"
            )
        axis = position.get(image)
        if axis is None:
            raise OperatorError(
                f"{operator} maps mode {mode} of the residual to {image}, which "
                "is not a mode of the residual"
            )
        axes.append(axis)
    if len(set(axes)) != len(axes):
        raise OperatorError(f"{operator} maps two modes of the residual to one")
    return tuple(axes)


def check_residual(operator: Operator, modes: Sequence[Index]) -> None:
    """Raise ``OperatorError`` unless ``operator`` lists only carried modes
    of the residual and each of its relabellings permutes ``modes``."""
    missing = [i for i in operator.indices if i not in set(modes)]
    if missing:
        raise OperatorError(
            f"{operator} lists {', '.join(map(str, missing))}, which the "
            f"residual ({', '.join(map(str, modes))}) does not carry"
        )
    for _, mapping in operator.relabellings():
        axis_permutation(modes, mapping, operator)


def apply_operator(array: Array, modes: Sequence[Index], operator: Operator) -> Array:
    """``operator`` applied to a residual ``array`` whose axes are ``modes``.
    It allocates one array of the residual's size and nothing more (what
    the memory model counts for an operator step): each relabelling is added
    or subtracted in place, the weight they share applied once at the end."""
    if array.ndim != len(modes):
        raise OperatorError(
            f"{operator}: the residual has {array.ndim} axes but {len(modes)} modes"
        )
    import numpy as np

    check_residual(operator, modes)
    relabellings = operator.relabellings()
    scale = abs(relabellings[0][0])
    result = np.zeros_like(array)
    for weight, mapping in relabellings:
        view = np.transpose(array, axis_permutation(modes, mapping, operator))
        if abs(weight) != scale:  # no operator mixes weights (``relabellings``)
            result += float(weight / scale) * view
        elif weight > 0:
            result += view
        else:
            result -= view
    if scale != 1:
        result *= float(scale)
    return result


def apply_operators(
    array: Array, modes: Sequence[Index], operators: Sequence[Operator]
) -> Array:
    """``O_1 O_2 ... O_k`` applied to ``array``: the operator written next to
    the tensors (the last) acts first, as in an operator product."""
    for operator in reversed(operators):
        array = apply_operator(array, modes, operator)
    return array


def operator_cost(operator: Operator, size: int) -> int:
    """Additions the operator makes on a residual of ``size`` elements (one
    pass over the residual per relabelling)."""
    return len(operator.relabellings()) * size
