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

import dataclasses
from collections.abc import Callable, Collection, Hashable, Iterable

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
    trees = forest.trees
    rebuilt = regroup(
        forest,
        lambda site: site.tree if site.value in chosen else None,
        name=lambda value, site: f"{value}_{trees[site.tree].name}",
    )
    if separate_loops:
        instances: dict[tuple[int, int], int] = {}
        for site in rebuilt.sites:
            site.loops = tuple(
                _separate(loop, site.tree, instances) for loop in site.loops
            )
        rebuilt.instance_spaces = {}
        rebuilt.finish()
    return rebuilt


Group = tuple[str, Hashable, tuple[object, ...]]


def regroup(
    forest: Forest,
    key: Callable[[Site], Hashable],
    *,
    name: Callable[[str, Site], str] | None = None,
    finish: bool = True,
) -> Forest:
    """A new forest whose use-sites share a built value exactly when they
    name the same value, ``key`` gives them equal keys, and their factors'
    use-sites share values in turn (so a value split between two groups
    splits every consumer that reads both copies: the choice is closed
    upwards by construction). ``key`` returning one constant keeps the
    forest's sharing; the site's number rebuilds every use-site; the
    site's tree is ``rebuild_per_tree``.

    Each value's first group (in use-site order) keeps its name; the others
    are named ``name(value, first site of the group)`` (default
    ``<value>_<k>``), made unique with trailing ``_``. Copies follow their
    value in the value order. Inputs are never copied. The original forest
    is not changed; roles are not computed (classify the result)."""
    group_of: dict[int, Group | str] = {}
    for site in reversed(forest.sites):  # factors' sites first
        if forest.values[site.value].is_input:
            group_of[site.number] = site.value
            continue
        children = tuple(group_of[child] for child in site.children)
        group_of[site.number] = (site.value, key(site), children)
    taken = set(forest.values)
    names: dict[Group | str, str] = {}
    copies: dict[str, list[tuple[str, Site]]] = {}
    counts: dict[str, int] = {}
    for site in forest.sites:
        group = group_of[site.number]
        if isinstance(group, str) or group in names:
            continue
        found = copies.setdefault(site.value, [])
        if not found:
            fresh = site.value
        else:
            counts[site.value] = counts.get(site.value, 0) + 1
            fresh = (
                name(site.value, site)
                if name is not None
                else f"{site.value}_{counts[site.value]}"
            )
            while fresh in taken:
                fresh += "_"
            taken.add(fresh)
        names[group] = fresh
        found.append((fresh, site))

    def value_at(number: int) -> str:
        group = group_of[number]
        return group if isinstance(group, str) else names[group]

    values_out: dict[str, Value] = {}
    for value in forest.values.values():
        made = copies.get(value.name)
        if not made:  # an input, or a value no use-site reads
            values_out[value.name] = _copy_value(value, value.name, None)
            continue
        for fresh, site in made:
            factors = tuple(value_at(child) for child in site.children)
            values_out[fresh] = _copy_value(value, fresh, factors)
    sites: list[Site] = []
    for site in forest.sites:
        clone = site.clone()
        clone.value = value_at(site.number)
        clone.mode_labels = {}
        sites.append(clone)
    grouped = Forest(
        forest.name,
        dict(forest.spaces),
        values_out,
        list(forest.trees),
        sites,
        has_slots=forest.has_slots,
    )
    return grouped.finish() if finish else grouped


def _copy_value(value: Value, name: str, factors: tuple[str, ...] | None) -> Value:
    """``value`` named ``name``, its factors renamed to ``factors`` (kept as
    they are when ``None``), to be finished again."""
    if factors is None:
        renamed = value.factors
    else:
        renamed = tuple(
            Factor(f, old.labels, old.protos)
            for f, old in zip(factors, value.factors, strict=True)
        )
    return dataclasses.replace(
        value, name=name, factors=renamed, modes=(), node_modes=(), factor_maps=()
    )


def _separate(loop: Loop, tree: int, instances: dict[tuple[int, int], int]) -> Loop:
    number = instances.setdefault((tree, loop.instance), len(instances))
    return Loop(number, loop.label, None if loop.slot is None else number)
