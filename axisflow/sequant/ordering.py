"""Contraction orders of SeQuant terms: the bridge from a ``Term`` to the
search of ``axisflow.order``.

Pure Python, no xDSL.

* ``plan_term``: the plan of a term under ``order=file|flops|memory``, its
  parentheses kept as written (``build_forest`` computes the same plan on the
  term's canonical labels and builds its values along it).
* ``batched_size``: the size hook for ``batch=``: the size a value will have
  under the term's batch loops.
"""

from __future__ import annotations

from collections.abc import Sequence

from axisflow.order import Costs, Extents, Order, Plan, SizeHook, plan_product
from axisflow.roles.index import Index
from axisflow.sequant.syntax import Term


def plan_term(term: Term, costs: Costs, order: Order) -> Plan:
    """The plan of ``term``'s tensors under ``order``; groups are kept."""
    return plan_product(
        [tensor.indices for tensor in term.tensors],
        term.externals(),
        costs,
        order,
        term.groups,
        term.operands(),
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
