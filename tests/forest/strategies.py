"""Random SeQuant expressions for property tests: composites, shared and
nested protos, several index spaces; consistent renamings; factor orders."""

from __future__ import annotations

import random
from fractions import Fraction

from hypothesis import strategies as st

from axisflow.roles.index import Index
from axisflow.sequant import Expression
from axisflow.sequant.syntax import Tensor, Term

OCCUPIED = [Index("i", n) for n in range(1, 5)]
POOL = [
    *OCCUPIED,
    Index("Κ", 1),
    Index("Κ", 2),
    Index("a", 1, [OCCUPIED[0]]),
    Index("a", 2, [OCCUPIED[0], OCCUPIED[1]]),
    Index("a", 3, [OCCUPIED[1], OCCUPIED[2]]),
    Index("a", 4, [OCCUPIED[0], OCCUPIED[1]]),
    Index("a", 5, [OCCUPIED[2], Index("i", 6, [OCCUPIED[3]])]),  # a nested proto
    Index("i", 7, [OCCUPIED[0], Index("i", 8, [OCCUPIED[1], OCCUPIED[0]])]),
]


@st.composite
def terms(draw: st.DrawFn) -> Term:
    """A product of 2 to 4 tensors; every index appears at most twice."""
    count: dict[Index, int] = {}
    tensors: list[Tensor] = []
    for _ in range(draw(st.integers(2, 4))):
        free = [i for i in POOL if count.get(i, 0) < 2]
        slots = draw(
            st.lists(st.sampled_from(free), min_size=1, max_size=3, unique=True)
        )
        for index in slots:
            count[index] = count.get(index, 0) + 1
        split = draw(st.integers(0, len(slots)))
        label = draw(st.sampled_from("ABC"))
        tensors.append(Tensor(label, tuple(slots[:split]), tuple(slots[split:])))
    return Term(Fraction(draw(st.integers(-3, 3)) or 1), tuple(tensors))


@st.composite
def expressions(draw: st.DrawFn) -> tuple[Expression, str]:
    """An expression of 1 or 2 terms and a batching policy over its spaces."""
    expression = Expression(tuple(draw(st.lists(terms(), min_size=1, max_size=2))))
    keys = expression.space_keys()
    batch = draw(st.lists(st.sampled_from(keys), unique=True, max_size=2))
    return expression, ",".join(batch)


def renamed(expression: Expression, rng: random.Random) -> Expression:
    """Every index renamed consistently (plain ones, protos at any depth) to
    fresh random ordinals, a bijection per index space, in the factors and
    the operators alike."""
    atoms: dict[Index, None] = {}

    def collect(index: Index) -> None:
        stack = [index]
        while stack:
            part = stack.pop()
            atoms.setdefault(Index(part.base_key, part.ordinal), None)
            stack.extend(part.protos)

    for term in expression.terms:
        for tensor in (*term.tensors, *term.operators):
            for index in tensor.indices:
                collect(index)
    fresh = rng.sample(range(20, 10_000), len(atoms))
    ordinal = {atom: n for atom, n in zip(atoms, fresh, strict=True)}

    def rename(index: Index) -> Index:
        atom = Index(index.base_key, index.ordinal)
        return Index(index.base_key, ordinal[atom], map(rename, index.protos))

    def rename_tensor(t: Tensor) -> Tensor:
        return t.renamed(rename)

    return Expression(
        tuple(
            Term(
                term.coefficient,
                tuple(map(rename_tensor, term.tensors)),
                tuple(map(rename_tensor, term.operators)),
            )
            for term in expression.terms
        )
    )


def permuted(expression: Expression, rng: random.Random) -> Expression:
    """Each product's factors in a random order (its operators kept)."""
    out: list[Term] = []
    for term in expression.terms:
        tensors = list(term.tensors)
        rng.shuffle(tensors)
        out.append(Term(term.coefficient, tuple(tensors), term.operators))
    return Expression(tuple(out))
