"""Contraction orders of SeQuant terms: the bridge from a ``Term`` to the
search of ``axisflow.order``.

Pure Python, no xDSL.

* ``plan_term``: the plan of a term under ``order=file|flops|memory``, its
  parentheses kept as written (``build_forest`` computes the same plan on the
  term's canonical labels and builds its values along it).
* ``batched_size``: the size hook for ``batch=``: the size a value will have
  under the term's batch loops.
* ``parenthesize`` / ``ordered_expression``: a plan as parentheses, so that
  ``deparse`` prints the built trees (and reading them back keeps them).
"""

from __future__ import annotations

from collections.abc import Sequence

from axisflow.order import (
    Costs,
    Extents,
    Order,
    Plan,
    PlanCache,
    SizeHook,
    plan_product,
)
from axisflow.roles.index import Index
from axisflow.sequant.syntax import Expression, Operand, Term


def plan_term(
    term: Term, costs: Costs, order: Order, cache: PlanCache | None = None
) -> Plan:
    """The plan of ``term``'s tensors under ``order``; groups are kept.
    ``cache``: shared by the terms of one expression (``PlanCache``)."""
    return plan_product(
        [tensor.indices for tensor in term.tensors],
        term.externals(),
        costs,
        order,
        term.groups,
        term.operands(),
        cache,
    )


def batched_size(
    extents: Extents,
    loops: Sequence[Index],
    term_modes: frozenset[Index],
    root_modes: frozenset[Index],
) -> SizeHook:
    """The size of a value under batch loops over ``loops`` (outermost
    first), in a term whose modes are ``term_modes`` and whose result keeps
    ``root_modes``.

    Loops enclose the whole tree, blocks are one element. A value counts the
    slice of every looped mode it keeps (it is LoopLocal on it), except that
    once a looped mode has been summed below it (a Reduction over that loop
    completes only after the loop), the modes of loops nested inside that
    one count in full (the value outlives their iterations). The term's
    root, which the loops write into the result, counts its full buffer (a
    value keeping exactly the result's modes from leaves covering every mode
    of the term is taken for the root).
    """
    position = {index: number for number, index in enumerate(loops)}

    def size(kept: frozenset[Index], span: frozenset[Index]) -> int:
        if kept == root_modes and span >= term_modes:
            return extents.elements(kept)
        outermost = min(
            (position[m] for m in span - kept if m in position), default=len(loops)
        )
        count = 1
        for mode in kept:
            looped = position.get(mode)
            if looped is None or looped > outermost:
                count *= extents.extent(mode)
        return count

    return size


def parenthesize(term: Term, plan: Plan) -> Term:
    """``term`` with its tensors in the order of ``plan``'s tree and one pair
    of parentheses per inner node (the root's two operands stay the term's
    own product): ``deparse`` then prints the built tree, as SeQuant prints
    an optimized product, and reading that text back builds the same tree
    whatever the order. An explicit stack; the product is unchanged."""
    count = plan.leaves
    if not plan.steps:
        return term
    children = {count + step: pair for step, pair in enumerate(plan.steps)}
    tensors: list[int] = []
    groups: list[tuple[Operand, ...]] = []
    ref: dict[int, Operand] = {}
    stack: list[tuple[int, bool]] = [(plan.root, False)]
    while stack:
        node, done = stack.pop()
        if node < count:
            ref[node] = len(tensors)
            tensors.append(node)
            continue
        left, right = children[node]
        if not done:
            stack.extend(((node, True), (right, False), (left, False)))
            continue
        groups.append((ref[left], ref[right]))
        ref[node] = ~(len(groups) - 1)
    groups.pop()  # the root: the term's own product
    return Term(
        term.coefficient,
        tuple(term.tensors[k] for k in tensors),
        term.operators,
        term.offset,
        tuple(groups),
        term.declared,
    )


def ordered_expression(
    expression: Expression, costs: Costs, order: Order
) -> Expression:
    """Every term of ``expression`` parenthesized by its plan under ``order``
    (``parenthesize``); ``deparse`` prints it with the chosen trees."""
    cache = PlanCache()
    return Expression(
        tuple(
            parenthesize(term, plan_term(term, costs, order, cache))
            for term in expression.terms
        ),
        expression.source,
        expression.line_starts,
        expression.result,
    )
