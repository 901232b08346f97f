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

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from axisflow.pipeline.model import Forest
from axisflow.residual import ResidualLayout, apply_operators

Array = NDArray[np.float64]


class AssemblyError(ValueError):
    """Trees that do not fit the residual layout; the message names the tree."""


def root_axes(forest: Forest, tree: int, layout: ResidualLayout) -> tuple[int, ...]:
    """``numpy.transpose`` axes taking tree ``tree``'s root array (value
    modes) to the residual's modes."""
    name = forest.trees[tree].name
    root = forest.trees[tree].root
    if root is None:
        if layout.modes:
            raise AssemblyError(f"tree @{name} is a number, the residual is not")
        return ()
    site = forest.sites[root]
    value = forest.values[site.value]
    label_of = {mode: site.mode_labels[mode] for mode in value.modes}
    position = {label: k for k, label in enumerate(label_of[m] for m in value.modes)}
    if set(position) != set(layout.modes):
        raise AssemblyError(
            f"tree @{name} computes ({', '.join(map(str, position))}), the "
            f"residual has modes ({', '.join(map(str, layout.modes))})"
        )
    return tuple(position[mode] for mode in layout.modes)


def assemble_residual(
    forest: Forest, results: Mapping[str, Array], layout: ResidualLayout
) -> Array:
    """The residual from per-tree results (``coeff * root``, value frame)."""
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
            result = np.transpose(results[tree.name], root_axes(forest, term, layout))
            partial = result.copy() if partial is None else partial + result
        assert partial is not None
        applied = apply_operators(partial, layout.modes, group.operators)
        residual = applied if residual is None else residual + applied
    if residual is None:
        raise AssemblyError("a residual without terms")
    return residual
