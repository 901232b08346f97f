"""The residual from evaluated trees: scaled roots accumulated, operators applied.

``evaluate_forest`` and ``run_schedule`` give each tree's ``coeff * root`` in
the root value's own frame. ``assemble_residual`` turns those into the one
physical residual (``docs/residual.md``): each tree's result is transposed
into the residual's modes (the root use-site names every mode of the value
in the tree's labels, and a tree's labels for its externals are the
residual's), the trees of one operator group are summed, the group's
operators act once on that sum, and the groups add up.

Tree ``k`` is term ``k`` of the expression (the frontend builds one tree per
term, in order).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from axisflow.forest.model import Forest
from axisflow.residual import (
    Operator,
    OperatorError,
    OperatorGroup,
    ResidualError,
    ResidualLayout,
    apply_operators,
    residual_layout,
)
from axisflow.roles.index import Index
from axisflow.scheduling.schedule import Apply, Output, Residual, Schedule

Array = NDArray[np.float64]


class AssemblyError(ValueError):
    """Trees that do not fit the residual layout; the message names the tree."""


def root_axes(forest: Forest, tree: int, modes: Sequence[Index]) -> tuple[int, ...]:
    """``numpy.transpose`` axes taking tree ``tree``'s root array (value
    modes) to the residual's ``modes``."""
    name = forest.trees[tree].name
    root = forest.trees[tree].root
    if root is None:
        if modes:
            raise AssemblyError(f"tree @{name} is a number, the residual is not")
        return ()
    site = forest.sites[root]
    value = forest.values[site.value]
    label_of = {mode: site.mode_labels[mode] for mode in value.modes}
    position = {label: k for k, label in enumerate(label_of[m] for m in value.modes)}
    if set(position) != set(modes):
        raise AssemblyError(
            f"tree @{name} computes ({', '.join(map(str, position))}), the "
            f"residual has modes ({', '.join(map(str, modes))})"
        )
    return tuple(position[mode] for mode in modes)


def assemble_residual(
    forest: Forest, results: Mapping[str, Array], layout: ResidualLayout
) -> Array:
    """The residual from per-tree results (``coeff * root``, value frame).
    ``TypeError`` for a ``layout`` that is no ``ResidualLayout`` (a plan of
    terms whose externals differ, without an operator, has none)."""
    if not isinstance(layout, ResidualLayout):
        raise TypeError(
            "layout must be a ResidualLayout, got "
            f"{type(layout).__name__}"
            + (
                " (the plan has no residual: its terms' externals differ and no "
                "operator makes them one; evaluate its trees one by one)"
                if layout is None
                else ""
            )
        )
    if len(forest.trees) != sum(len(g.terms) for g in layout.groups):
        raise AssemblyError(
            f"{len(forest.trees)} trees for a residual of "
            f"{sum(len(g.terms) for g in layout.groups)} terms"
        )
    residual: Array | None = None
    for group in layout.groups:
        partial: Array | None = None
        for term in group.terms:
            tree = forest.trees[term]
            result = np.transpose(
                results[tree.name], root_axes(forest, term, layout.modes)
            )
            partial = result.copy() if partial is None else partial + result
        assert partial is not None
        applied = apply_operators(partial, layout.modes, group.operators)
        residual = applied if residual is None else residual + applied
    if residual is None:
        raise AssemblyError("a residual without terms")
    return residual


def schedule_layout(forest: Forest, schedule: Schedule) -> ResidualLayout | None:
    """The residual layout a schedule accumulates into (modes from its
    residual buffers, groups from its outputs, operators from its steps);
    ``None`` if it accumulates none."""
    modes = schedule.residual_modes()
    if modes is None:
        return None
    number = {tree.name: k for k, tree in enumerate(forest.trees)}
    terms: dict[int, list[int]] = {}
    operators: dict[int, tuple[Operator, ...]] = {}
    for item, _ in schedule.walk():
        if isinstance(item, Residual):
            terms.setdefault(item.group, [])
        elif isinstance(item, Output) and item.into is not None:
            terms.setdefault(item.into, []).append(number[item.tree])
        elif isinstance(item, Apply):
            operators[item.group] = item.operators
    groups = tuple(
        OperatorGroup(operators.get(g, ()), tuple(terms[g])) for g in sorted(terms)
    )
    # the carried indices are not in the schedule; assembly needs the modes
    return ResidualLayout(modes, modes, groups)


def forest_layout(forest: Forest) -> ResidualLayout | None:
    """The residual a forest's trees form: when every tree's root carries
    the same labels (as a set), those labels, with the trees' operators
    (``Tree.operators``); ``None`` when the trees are separate results (their
    labels differ and no tree has an operator). ``ResidualError`` when trees
    with operators do not form one residual."""
    externals: list[tuple[Index, ...]] = []
    operators: list[tuple[Operator, ...]] = []
    for number, tree in enumerate(forest.trees):
        labels = () if tree.root is None else forest.sites[tree.root].labels
        externals.append(tuple(labels))
        try:
            operators.append(tuple(Operator.parse(t) for t in tree.operators))
        except OperatorError as error:
            raise ResidualError(f"tree @{tree.name}: {error}", number) from None
    if not externals:
        return None
    if not any(operators) and len({frozenset(e) for e in externals}) != 1:
        return None
    return residual_layout(externals, operators)
