"""A factor order that does not depend on how a term was written.

The frontend reads a product in the order written: the order decides ties
between equally cheap contraction trees, the nesting of the batch loops and
the labels a tree shows. That is fine for a forest the user reads, but a plan
(``axisflow.scheduling.planner``) should not change its peak or its
multiply-adds because two factors were swapped or an index renamed.
``canonical_factor_order`` sorts each term's tensors by colours found by
colour refinement (Weisfeiler-Lehman) of the term's tensor-index graph:

* a tensor starts from its label, symmetry and bra/ket/aux sizes; an index
  from its space key and its number of protos (never its name);
* each round, a tensor's colour takes in the colours of its indices with
  their slot (group and position), and an index's the colours of the
  tensors carrying it (with the slot) and of its protos and composites;
* after the rounds, tensors are sorted by label, then colour; ties keep
  their written order (SeQuant writes a term canonically, and the
  frontend's contraction order breaks its own ties in that order, which is
  what keeps equal sub-products equal across terms).

Pure Python, no xDSL. A term with parenthesized groups keeps its order (its
groups name operands by position).
"""

from __future__ import annotations

import hashlib
import itertools
import math
from collections.abc import Iterable

from axisflow.roles.index import Index
from axisflow.sequant.syntax import Expression, Tensor, Term

ROUNDS = 1
"""Refinement rounds. One: a tensor's colour is its own and the spaces and
proto counts of its slots. More rounds tell more tensors apart, but by
context, which orders the same sub-product differently in different terms
and loses the sharing the frontend finds between them (measured on the
bundled equations: one round keeps the written order's multiply-adds, two
or four cost up to 36% more on the singles)."""


def _digest(parts: Iterable[object]) -> str:
    return hashlib.sha1(repr(tuple(parts)).encode("utf-8")).hexdigest()[:16]


def _all_indices(tensors: Iterable[Tensor]) -> list[Index]:
    found: dict[Index, None] = {}
    stack = [index for tensor in tensors for index in tensor.indices]
    while stack:
        index = stack.pop()
        if index in found:
            continue
        found[index] = None
        stack.extend(index.protos)
    return list(found)


def tensor_colours(term: Term) -> list[str]:
    """Each tensor's colour after refinement (equal for tensors the term's
    structure does not tell apart)."""
    tensors = term.tensors
    indices = _all_indices(tensors)
    slots: list[list[tuple[str, int, Index]]] = []
    for tensor in tensors:
        found: list[tuple[str, int, Index]] = []
        for group, members in (
            ("bra", tensor.bra),
            ("ket", tensor.ket),
            ("aux", tensor.aux),
        ):
            found.extend(
                (group, position, index) for position, index in enumerate(members)
            )
        slots.append(found)
    carriers: dict[Index, list[tuple[int, str, int]]] = {index: [] for index in indices}
    for number, found in enumerate(slots):
        for group, position, index in found:
            carriers[index].append((number, group, position))
    composites: dict[Index, list[Index]] = {index: [] for index in indices}
    for index in indices:
        for proto in index.protos:
            composites[proto].append(index)
    tensor_colour = [
        _digest((t.label, t.symmetry, len(t.bra), len(t.ket), len(t.aux)))
        for t in tensors
    ]
    index_colour = {i: _digest((i.base_key, len(i.protos))) for i in indices}
    for _ in range(ROUNDS):
        tensor_colour = [
            _digest(
                (
                    tensor_colour[n],
                    tuple(
                        (group, position, index_colour[index])
                        for group, position, index in slots[n]
                    ),
                )
            )
            for n in range(len(tensors))
        ]
        index_colour = {
            index: _digest(
                (
                    index_colour[index],
                    tuple(
                        sorted(
                            (group, position, tensor_colour[n])
                            for n, group, position in carriers[index]
                        )
                    ),
                    tuple(index_colour[p] for p in index.protos),
                    tuple(sorted(index_colour[c] for c in composites[index])),
                )
            )
            for index in indices
        }
    return tensor_colour


def canonical_term(term: Term) -> Term:
    """``term`` with its tensors sorted by ``tensor_colours`` (unchanged when
    it has parenthesized groups)."""
    if term.groups or len(term.tensors) < 2:
        return term
    colours = tensor_colours(term)
    tensors = term.tensors
    order = sorted(range(len(tensors)), key=lambda n: (tensors[n].label, colours[n], n))
    if order == list(range(len(term.tensors))):
        return term
    return Term(
        term.coefficient,
        tuple(term.tensors[n] for n in order),
        term.operators,
        term.offset,
        term.groups,
        term.declared,
    )


def canonical_factor_order(expression: Expression) -> Expression:
    """``expression`` with every term's tensors in ``canonical_term`` order
    (terms, result and source kept)."""
    terms = tuple(canonical_term(term) for term in expression.terms)
    if all(new is old for new, old in zip(terms, expression.terms, strict=True)):
        return expression
    return Expression(
        terms, expression.source, expression.line_starts, expression.result
    )


CANDIDATE_LIMIT = 720
"""Orderings of a term's tensors tried at most (the product of the
factorials of its classes of tensors of one colour); a term with more keeps
``canonical_term``'s order."""


def certificate(tensors: Iterable[Tensor]) -> str:
    """The tensors in order, every index named by its space and the order of
    its first appearance (protos inside their composites): equal for two
    orders of one term exactly when they read the same up to renaming."""
    names: dict[Index, object] = {}
    counts: dict[str, int] = {}

    def name(index: Index) -> object:
        found = names.get(index)
        if found is None:
            key = index.base_key
            counts[key] = counts.get(key, 0) + 1
            found = names[index] = (key, counts[key], tuple(map(name, index.protos)))
        return found

    return repr(
        [
            (
                t.label,
                t.symmetry,
                tuple(map(name, t.bra)),
                tuple(map(name, t.ket)),
                tuple(map(name, t.aux)),
            )
            for t in tensors
        ]
    )


def tie_classes(term: Term) -> tuple[Term, list[list[int]]]:
    """``term`` in its first canonical order (the smallest certificate of
    the orders ``canonical_term``'s sort allows: tensors of one colour in
    any order) and the positions of its classes of tensors of one colour:
    the same whatever order the term was written in or its indices named.
    A term with parenthesized groups, or more than ``CANDIDATE_LIMIT``
    such orders, keeps ``canonical_term``'s order."""
    first = canonical_term(term)
    if term.groups or len(term.tensors) < 2:
        return first, []
    tensors = first.tensors
    colours = tensor_colours(first)
    classes = [
        list(members)
        for _, members in itertools.groupby(
            range(len(tensors)), key=lambda n: (tensors[n].label, colours[n])
        )
    ]
    if math.prod(math.factorial(len(c)) for c in classes) > CANDIDATE_LIMIT:
        return first, []
    best = min(
        (
            tuple(tensors[n] for part in choice for n in part)
            for choice in itertools.product(
                *(itertools.permutations(c) for c in classes)
            )
        ),
        key=certificate,
    )
    return with_tensors(first, best), [c for c in classes if len(c) > 1]


def class_orders(term: Term, members: list[int]) -> list[Term]:
    """``term`` with the tensors at ``members`` (one class of tensors of one
    colour) in every order, one per certificate, by increasing
    certificate."""
    found: dict[str, tuple[Tensor, ...]] = {}
    for order in itertools.permutations(members):
        tensors = list(term.tensors)
        for position, source in zip(members, order, strict=True):
            tensors[position] = term.tensors[source]
        found.setdefault(certificate(tensors), tuple(tensors))
    return [with_tensors(term, found[key]) for key in sorted(found)]


def with_tensors(term: Term, tensors: tuple[Tensor, ...]) -> Term:
    """``term`` with its tensors in another order."""
    return Term(
        term.coefficient,
        tensors,
        term.operators,
        term.offset,
        term.groups,
        term.declared,
    )
