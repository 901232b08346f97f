"""``classify-axes``: attach a loop role to every value for every batch loop.

For each value of each ``batch.forest`` and each batch-loop axis enclosing any
of its use-sites, the role comes from ``axisflow.roles.classify_axis`` and is
attached as ``roles = #batch.roles<LABEL = ROLE, ...>`` (a map from each loop
label to its role); with ``explain=true`` a ``why = #batch.why<LABEL =
"...">`` map gives the evidence. Re-running the pass
recomputes and replaces both attributes, so it is idempotent.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass

from axisflow.analysis.forest import ForestInfo, ValueInfo, collect_forest
from axisflow.dialects.batch import AxisReasonsAttr, AxisRolesAttr, ForestOp
from axisflow.dialects.labels import print_index_list
from axisflow.gc_pause import gc_paused
from axisflow.roles.decision import (
    LoopRole,
    Occurrence,
    Verdict,
    decide_axis,
    occurrence_slot,
)
from axisflow.roles.index import Index

ROLES_ATTR = "roles"
"""Attribute holding the roles of a ``batch.value``."""
WHY_ATTR = "why"
"""Attribute holding the explanations (``explain=true``)."""


def classify_value(info: ValueInfo, instance_aware: bool) -> dict[Index, Verdict]:
    """The verdict for every axis enclosing a use-site of the value.

    The role depends only on the axis's type, so it is decided once per type.
    """
    value = info.op
    carried = value.result_indices
    contracted = value.contracted_indices
    sliced = info.sliced()
    slot_of = occurrence_slot if instance_aware else None
    per_type: dict[str, Verdict] = {}
    verdicts: dict[Index, Verdict] = {}
    for axis in info.axes:
        verdict = per_type.get(axis.base_key)
        if verdict is None:
            verdict = decide_axis(
                carried, contracted, axis, info.occurrences, sliced, slot_of
            )
            per_type[axis.base_key] = verdict
        verdicts[axis] = verdict
    return verdicts


def _describe_sites(info: ValueInfo) -> None:
    """Name every occurrence for explanations (only done with ``explain``)."""
    named: list[Occurrence] = []
    for site, occurrence in zip(info.sites, info.occurrences, strict=True):
        place = f"use-site {site.number} of @{info.name} in tree @{site.tree.tree_name}"
        named.append(
            Occurrence(
                occurrence.carried,
                occurrence.ectx,
                occurrence.slots,
                f"{place} {print_index_list(occurrence.carried)}",
            )
        )
    info.occurrences = named


def classify_forest(forest: ForestOp, explain: bool = False) -> ForestInfo:
    """Classify every value of ``forest`` and attach the results to the IR."""
    info = collect_forest(forest)
    # Many values share one role map: build each distinct attribute once.
    role_maps: dict[tuple[tuple[Index, LoopRole], ...], AxisRolesAttr] = {}
    for value_info in info.values.values():
        if explain:
            _describe_sites(value_info)
        verdicts = classify_value(value_info, info.has_slots)
        attributes = value_info.op.attributes
        attributes.pop(ROLES_ATTR, None)
        attributes.pop(WHY_ATTR, None)
        if not verdicts:
            continue
        ordered = sorted(verdicts.items(), key=lambda item: item[0].sort_key())
        key = tuple((axis, verdict.role) for axis, verdict in ordered)
        roles = role_maps.get(key)
        if roles is None:
            roles = role_maps[key] = AxisRolesAttr(key)
        attributes[ROLES_ATTR] = roles
        if explain:
            attributes[WHY_ATTR] = AxisReasonsAttr(
                [(axis, verdict.reason) for axis, verdict in ordered]
            )
    return info


@dataclass(frozen=True)
class ClassifyAxesPass(ModulePass):
    """Decide the loop role of every value for every enclosing batch-loop axis."""

    name = "classify-axes"

    explain: bool = False
    """Also attach ``why``: the use-site and index behind each role."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with gc_paused():
            for forest in forests_in(op):
                classify_forest(forest, self.explain)


def forests_in(op: Operation) -> Iterator[ForestOp]:
    """Every ``batch.forest`` nested in ``op``, without walking into forests.

    In program order; iterative, so modules nested at any depth are fine."""
    pending: list[Operation] = [op]
    while pending:
        current = pending.pop()
        if current is not op and isinstance(current, ForestOp):
            yield current
            continue
        children = [
            child
            for region in current.regions
            for block in region.blocks
            for child in block.ops
        ]
        pending.extend(reversed(children))
