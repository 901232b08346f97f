"""Loop roles on the forest model: the one place where roles are computed.

For every value and every batch loop enclosing one of its use-sites, the
decision tree (``axisflow.roles.decide_axis``) gets:

* the value's own ``result`` and ``contracted`` indices (its frame);
* one occurrence per use-site: the labels it carries there, the loops
  enclosing its consumer (the parent use-site; none for a tree root) with
  their fusion slots, and the labels there of the value's sliced proto modes;
* ``sliced``: the proto modes of the value's frame that every use-site's
  consumer loops bind (expanded through the loop labels' protos), found
  through each use-site's mode map, so in the value's frame whatever the
  labels of the trees.

The role depends on the loop's index space only; ``classify`` returns the
verdicts keyed by loop label, as the IR shows them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from axisflow.forest.frames import expand_modes, proto_modes
from axisflow.forest.model import Forest, Loop, Site
from axisflow.roles.decision import (
    LoopRole,
    Occurrence,
    Verdict,
    decide_axis_trusted,
    occurrence_slot,
)
from axisflow.roles.index import Index

Verdicts = dict[str, dict[Index, Verdict]]
"""Value name -> loop label -> verdict."""


def describe_site(forest: Forest, site: Site, number: int) -> str:
    """``use-site K of @v in tree @t [labels]`` (for explanations)."""
    labels = ", ".join(label.full_label for label in site.labels)
    tree = forest.trees[site.tree].name
    return f"use-site {number} of @{site.value} in tree @{tree} [{labels}]"


def classify(
    forest: Forest,
    *,
    explain: bool = False,
    previous: Mapping[tuple[str, str], LoopRole] | None = None,
    changed: Collection[str] = (),
) -> Verdicts:
    """Decide every role of ``forest``; fill ``forest.roles`` and return the
    verdicts (with explanations naming the use-sites when ``explain``).

    ``previous``: the roles of a forest that differs from this one only in
    the loops of the use-sites of the values ``changed`` or of their
    consumers' use-sites (what a value's roles read): the roles of every
    other value are taken from it, in the order a full classification gives
    them, and only ``changed`` get verdicts.

    Instance-aware (fusion slots compared per slot position) as soon as any
    loop of the forest has a slot. Linear in the size of the forest. The
    forest may be finished or as read (``forest_model(..., finish=False)``):
    the only derived data read, the mode maps of the use-sites of values
    with proto modes, are derived here when missing (``ModelError`` if one
    does not derive).
    """
    slot_of = occurrence_slot if forest.has_slots else None
    verdicts: Verdicts = {}
    roles = forest.roles
    values = forest.values
    all_sites = forest.sites
    # Per tuple of loops (sites under the same loops share the tuple; keyed
    # by identity, the sites keep the tuples alive): the loop labels, their
    # slots, and the labels as the axes they make.
    loop_info: dict[int, _LoopInfo] = {}
    # One info per distinct (labels, slots): the trees repeat a few loop
    # nests, and occurrences under equal loops are then found equal below.
    distinct_info: dict[tuple[tuple[Index, ...], tuple[int, ...]], _LoopInfo] = {}
    no_loops: _LoopInfo = ((), (), {})
    # One occurrence per (labels, consumer loops) when there is nothing else
    # to tell use-sites apart (no explanation, no sliced protos): the
    # decision visits an occurrence repeated in its list once.
    shared: dict[tuple[int, int], Occurrence] = {}
    # Proto modes per result tuple (values share them; alive with the values).
    protos_of: dict[int, tuple[Index, ...]] = {}
    trusted = Occurrence.trusted
    kept: dict[str, list[tuple[tuple[str, str], LoopRole]]] | None = None
    if previous is not None:
        kept = {}
        for key, role in previous.items():
            kept.setdefault(key[0], []).append((key, role))
    for name, sites in forest.sites_of().items():
        if kept is not None and name not in changed:
            for key, role in kept.get(name, ()):
                roles[key] = role
            continue
        axes: dict[Index, None] = {}
        for site in sites:
            loops = site.loops
            if loops:
                info = _loop_info(loops, loop_info, distinct_info)
                if axes:
                    axes.update(info[2])
                else:
                    axes = info[2]  # read only (copied before an update)
                    if len(sites) > 1:
                        axes = dict(axes)
        if not axes:
            continue
        value = values[name]
        protos = protos_of.get(id(value.result))
        if protos is None:
            protos = protos_of[id(value.result)] = proto_modes(value.result)
        sliced_modes = _sliced_modes(forest, protos, sites, all_sites) if protos else ()
        occurrences: list[Occurrence] = []
        for number, site in enumerate(sites):
            parent = site.parent
            if parent is None:
                info = no_loops
            else:
                info = _loop_info(all_sites[parent].loops, loop_info, distinct_info)
            if sliced_modes:
                mode_map = forest.site_mode_map(site)
                pairs = tuple([(mode, mode_map[mode]) for mode in sliced_modes])
            elif not explain:
                key = (id(site.labels), id(info))  # both alive with the forest
                occurrence = shared.get(key)
                if occurrence is None:
                    occurrence = shared[key] = trusted(
                        site.labels, info[0], info[1], "", ()
                    )
                occurrences.append(occurrence)
                continue
            else:
                pairs = ()
            occurrences.append(
                trusted(
                    site.labels,
                    info[0],
                    info[1],
                    describe_site(forest, site, number) if explain else "",
                    pairs,
                )
            )
        per_space: dict[str, Verdict] = {}
        found: dict[Index, Verdict] = {}
        for axis in axes:
            space = axis.base_key
            verdict = per_space.get(space)
            if verdict is None:
                verdict = per_space[space] = decide_axis_trusted(
                    value.result,
                    value.contracted,
                    axis,
                    occurrences,
                    sliced_modes,
                    slot_of,
                )
                roles[(name, space)] = verdict.role
            found[axis] = verdict
        verdicts[name] = found
    return verdicts


_LoopInfo = tuple[tuple[Index, ...], tuple[int, ...], dict[Index, None]]


def _loop_info(
    loops: tuple[Loop, ...],
    by_identity: dict[int, _LoopInfo],
    distinct: dict[tuple[tuple[Index, ...], tuple[int, ...]], _LoopInfo],
) -> _LoopInfo:
    """The labels, the slots (``-1``: none) and the axes (the labels, each
    once, outermost first) of a tuple of loops: remembered per tuple in
    ``by_identity`` (the forest keeps the tuples alive), one per distinct
    labels and slots in ``distinct``."""
    found = by_identity.get(id(loops))
    if found is not None:
        return found
    labels = tuple([loop.label for loop in loops])
    slots = tuple([-1 if loop.slot is None else loop.slot for loop in loops])
    info = distinct.get((labels, slots))
    if info is None:
        info = distinct[(labels, slots)] = (labels, slots, dict.fromkeys(labels))
    by_identity[id(loops)] = info
    return info


def _sliced_modes(
    forest: Forest,
    protos: tuple[Index, ...],
    sites: list[Site],
    all_sites: list[Site],
) -> tuple[Index, ...]:
    """The proto modes (of ``protos``) that every use-site's consumer loops
    bind, read through each use-site's mode map, in mode order."""
    sliced = set(protos)
    for site in sites:
        if not sliced:
            break
        parent = site.parent
        loops = () if parent is None else all_sites[parent].loops
        bound = set(expand_modes(loop.label for loop in loops))
        mode_map = forest.site_mode_map(site)
        sliced = {mode for mode in sliced if mode_map[mode] in bound}
    return tuple(mode for mode in protos if mode in sliced)
