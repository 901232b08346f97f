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

from axisflow.forest.frames import expand_modes, proto_modes
from axisflow.forest.model import Forest, Site
from axisflow.roles.decision import (
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


def classify(forest: Forest, *, explain: bool = False) -> Verdicts:
    """Decide every role of ``forest``; fill ``forest.roles`` and return the
    verdicts (with explanations naming the use-sites when ``explain``).

    Instance-aware (fusion slots compared per slot position) as soon as any
    loop of the forest has a slot. Linear in the size of the forest.
    """
    slot_of = occurrence_slot if forest.has_slots else None
    verdicts: Verdicts = {}
    all_sites = forest.sites
    # Loop labels and slots per tuple of loops: sites under the same loops
    # share the tuple (keyed by identity; the sites keep the tuples alive).
    loop_keys: dict[int, tuple[tuple[Index, ...], tuple[int, ...]]] = {}
    no_loops: tuple[tuple[Index, ...], tuple[int, ...]] = ((), ())
    # Proto modes per result tuple (values share them; alive with the values).
    protos_of: dict[int, tuple[Index, ...]] = {}
    for name, sites in forest.sites_of().items():
        axes: dict[Index, None] = {}
        seen_loops: set[int] = set()  # loop tuples are shared by sibling sites
        for site in sites:
            loops = site.loops
            if loops and id(loops) not in seen_loops:
                seen_loops.add(id(loops))
                for loop in loops:
                    if loop.label not in axes:
                        axes[loop.label] = None
        if not axes:
            continue
        value = forest.values[name]
        protos = protos_of.get(id(value.result))
        if protos is None:
            protos = protos_of[id(value.result)] = proto_modes(value.result)
        contexts = [
            () if site.parent is None else all_sites[site.parent].loops
            for site in sites
        ]
        sliced = set(protos)
        for site, loops in zip(sites, contexts, strict=True):
            if not sliced:
                break
            bound = set(expand_modes(loop.label for loop in loops))
            sliced = {mode for mode in sliced if site.mode_map[mode] in bound}
        sliced_modes = tuple(mode for mode in protos if mode in sliced)
        occurrences: list[Occurrence] = []
        for number, (site, loops) in enumerate(zip(sites, contexts, strict=True)):
            if loops:
                keys = loop_keys.get(id(loops))
                if keys is None:
                    keys = loop_keys[id(loops)] = (
                        tuple(loop.label for loop in loops),
                        tuple(-1 if loop.slot is None else loop.slot for loop in loops),
                    )
            else:
                keys = no_loops
            if sliced_modes:
                mode_map = site.mode_map
                pairs = tuple((mode, mode_map[mode]) for mode in sliced_modes)
            else:
                pairs = ()
            occurrences.append(
                Occurrence.trusted(
                    site.labels,
                    keys[0],
                    keys[1],
                    describe_site(forest, site, number) if explain else "",
                    pairs,
                )
            )
        per_space: dict[str, Verdict] = {}
        found: dict[Index, Verdict] = {}
        for axis in axes:
            verdict = per_space.get(axis.base_key)
            if verdict is None:
                verdict = decide_axis_trusted(
                    value.result,
                    value.contracted,
                    axis,
                    occurrences,
                    sliced_modes,
                    slot_of,
                )
                per_space[axis.base_key] = verdict
                forest.roles[(name, axis.base_key)] = verdict.role
            found[axis] = verdict
        verdicts[name] = found
    return verdicts
