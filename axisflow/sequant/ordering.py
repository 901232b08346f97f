"""Contraction orders of SeQuant terms: from a ``Term`` to the pairs its tree
contracts, with the labels each pair's value carries.

Pure Python, no xDSL; the search itself is ``axisflow.order``.

* ``plan_term``: the plan of a term under ``order=file|flops|memory``, its
  parentheses kept as written.
* ``step_labels``: per step, the indices the new value carries (``result``)
  and those summed at it (``contracted``), by the frontend's rule: an index
  stays on the value if it is external or a tensor outside the value still
  carries it, in order of first appearance (left operand, then right);
  ``contracted`` lists the indices on both operands that do not stay. A mode
  the value must keep although no tensor outside carries it as an index
  (``i_1`` when only a composite ``a_1<i_1>`` outside still depends on it,
  or the proto of a composite summed here) is appended as an index of its
  own, so the value's modes are exactly the modes the plan keeps.
* ``batched_size``: the size hook for ``batch=``: the size a value will have
  under the term's batch loops.
"""

from __future__ import annotations

from collections.abc import Sequence

from axisflow.forest.frames import expand_modes
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


def step_labels(
    term: Term, plan: Plan
) -> list[tuple[tuple[Index, ...], tuple[Index, ...]]]:
    """``(result, contracted)`` of every step of ``plan`` (see module doc).

    Linear in the size of the carried lists: each node keeps, for each index
    it carries, how many of its tensors carry it.
    """
    externals = set(term.externals())
    carriers: dict[Index, int] = {}
    for tensor in term.tensors:
        for index in tensor.indices:
            carriers[index] = carriers.get(index, 0) + 1
    carried: list[tuple[Index, ...]] = [tensor.indices for tensor in term.tensors]
    counts: list[dict[Index, int]] = [
        dict.fromkeys(tensor.indices, 1) for tensor in term.tensors
    ]
    found: list[tuple[tuple[Index, ...], tuple[Index, ...]]] = []
    for (left, right), kept in zip(plan.steps, plan.kept, strict=True):
        on_left, on_right = counts[left], counts[right]
        operands = carried[left] + tuple(i for i in carried[right] if i not in on_left)
        here: dict[Index, int] = {}
        result: list[Index] = []
        for index in operands:
            inside = on_left.get(index, 0) + on_right.get(index, 0)
            if index in externals or inside < carriers.get(index, 0):
                result.append(index)
                here[index] = inside
        covered = set(expand_modes(result))
        result.extend(mode for mode in _ordered(kept) if mode not in covered)
        stays = set(result)
        contracted = tuple(i for i in carried[left] if i in on_right and i not in stays)
        carried.append(tuple(result))
        counts.append(here)
        found.append((tuple(result), contracted))
    return found


def _ordered(modes: frozenset[Index]) -> list[Index]:
    return sorted(modes, key=Index.sort_key)


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


def term_modes(term: Term) -> frozenset[Index]:
    """Every mode of the term's tensors (indices and protos at any depth)."""
    found: set[Index] = set()
    for tensor in term.tensors:
        found.update(expand_modes(tensor.indices))
    return frozenset(found)
