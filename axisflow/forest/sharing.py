"""Recomputation: rebuild, in every tree, the values several trees share.

The frontend shares a contraction value by every tree that builds it (one
value, several use-sites). Scheduled, such a value lives whole from its
first reader tree to its last, and a loop of one reader cannot slice it for
the others. ``rebuild_per_tree`` trades multiply-adds for memory: each tree
that reads a shared value gets a copy of its own (the copy of the tree that
reads it first keeps the name; the others are named ``<value>_<tree>``),
built from the same factors, so the scheduler can place it inside that
tree's loops. Within one tree a value stays shared.

A copy's factors are the tree's copies where they exist, so what is rebuilt
must be closed upwards: a value rebuilt per tree forces the shared values
built from it to be rebuilt too (``closed_upwards``). With
``separate_loops`` every tree's loops also become instances of their own,
so that each tree runs in its own loop nest (a loop instance shared by
several trees makes the scheduler interleave their passes, keeping every
tree's buffers live side by side).
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Collection, Iterable

from axisflow.forest.model import Factor, Forest, Loop, Site, Value


def reader_trees(forest: Forest) -> dict[str, list[int]]:
    """The trees with a use-site of each built value, in tree order."""
    found: dict[str, dict[int, None]] = {}
    for site in forest.sites:
        if not forest.values[site.value].is_input:
            found.setdefault(site.value, {})[site.tree] = None
    return {name: sorted(trees) for name, trees in found.items()}


def shared_values(forest: Forest) -> list[str]:
    """Built values with use-sites in more than one tree, in forest order."""
    trees = reader_trees(forest)
    return [name for name in forest.values if len(trees.get(name, ())) > 1]


def closed_upwards(forest: Forest, values: Iterable[str]) -> set[str]:
    """``values`` and every shared value built (transitively) from one of
    them: what must be rebuilt per tree along with ``values``."""
    shared = set(shared_values(forest))
    consumers: dict[str, list[str]] = {}
    for value in forest.values.values():
        for factor in value.factors:
            consumers.setdefault(factor.value, []).append(value.name)
    chosen = {name for name in values if name in shared}
    stack = list(chosen)
    while stack:
        for consumer in consumers.get(stack.pop(), []):
            if consumer in shared and consumer not in chosen:
                chosen.add(consumer)
                stack.append(consumer)
    return chosen


def rebuild_per_tree(
    forest: Forest,
    values: Collection[str] | None = None,
    *,
    separate_loops: bool = True,
) -> Forest:
    """A new forest in which every tree reading one of ``values`` (default:
    every shared value) builds its own copy (module docstring); the original
    is not changed. ``values`` is closed upwards first. Roles are not
    computed (classify the result)."""
    chosen = closed_upwards(forest, shared_values(forest) if values is None else values)
    trees = reader_trees(forest)
    taken = set(forest.values)
    renamed: dict[tuple[str, int], str] = {}
    for name in forest.values:
        if name not in chosen:
            continue
        for tree in trees[name][1:]:
            fresh = f"{name}_{forest.trees[tree].name}"
            while fresh in taken:
                fresh += "_"
            taken.add(fresh)
            renamed[(name, tree)] = fresh

    def name_in(name: str, tree: int) -> str:
        return renamed.get((name, tree), name)

    values_out: dict[str, Value] = {}
    for value in forest.values.values():
        readers = trees.get(value.name, [])
        # a value keeps its name in its first reader tree, and reads that
        # tree's copies of its factors; its copies follow it (so values stay
        # in the order factors first)
        first = readers[0] if readers else None
        values_out[value.name] = _copy_value(value, value.name, first, name_in)
        for tree in readers[1:]:
            fresh = renamed.get((value.name, tree))
            if fresh is not None:
                values_out[fresh] = _copy_value(value, fresh, tree, name_in)
    instances: dict[tuple[int, int], int] = {}
    sites: list[Site] = []
    for site in forest.sites:
        clone = copy.copy(site)
        clone.value = name_in(site.value, site.tree)
        if separate_loops:
            clone.loops = tuple(
                _separate(loop, site.tree, instances) for loop in site.loops
            )
        clone.mode_labels = {}
        sites.append(clone)
    rebuilt = Forest(
        forest.name,
        dict(forest.spaces),
        values_out,
        list(forest.trees),
        sites,
        has_slots=forest.has_slots,
    )
    return rebuilt.finish()


def _copy_value(
    value: Value, name: str, tree: int | None, name_in: Callable[[str, int], str]
) -> Value:
    factors = tuple(
        Factor(f.value if tree is None else name_in(f.value, tree), f.labels, f.protos)
        for f in value.factors
    )
    return dataclasses.replace(
        value, name=name, factors=factors, modes=(), node_modes=(), factor_maps=()
    )


def _separate(loop: Loop, tree: int, instances: dict[tuple[int, int], int]) -> Loop:
    number = instances.setdefault((tree, loop.instance), len(instances))
    return Loop(number, loop.label, None if loop.slot is None else number)
