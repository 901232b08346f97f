"""Every order computes the same numbers: the NumPy evaluator of the forest
against one direct ``numpy.einsum`` per term of the parsed text (in the
term's canonical labels, as the frontend reads it), on plain random inputs:
the explicit proto pairings of the forest model need no symmetrized inputs.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from axisflow.forest.frames import canonical_renaming, expand_modes
from axisflow.order import ORDERS, Order
from axisflow.roles.index import Index
from axisflow.scheduling.evaluate import evaluate_forest, random_inputs
from axisflow.scheduling.memory import Sizing
from axisflow.sequant import build_forest, parse
from axisflow.sequant.forest import canonical_term

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sequant"
SMALL = {"i": 2, "a": 3, "μ̃": 3, "Κ": 2}
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize(
    "path", sorted(EXAMPLES.glob("csv_ccsd_*.txt")), ids=lambda p: p.stem
)
def test_every_tree_equals_a_direct_einsum_of_its_term(
    path: Path, order: Order
) -> None:
    expression = parse(path.read_text("utf-8"))
    forest = build_forest(expression, order=order)
    sizing = Sizing(forest, SMALL)
    inputs = random_inputs(forest, sizing, seed=3)
    results = evaluate_forest(forest, inputs)
    leaves = {
        (v.tensor, v.symmetry, v.layout, v.result): name
        for name, v in forest.values.items()
        if v.tensor is not None
    }
    for tree, term in zip(forest.trees, expression.terms, strict=True):
        tensors, renaming = canonical_term(term.tensors)
        letters: dict[Index, str] = {}

        def letter(mode: Index, letters: dict[Index, str] = letters) -> str:
            return letters.setdefault(mode, _LETTERS[len(letters)])

        arrays: list[np.ndarray] = []
        subscripts: list[str] = []
        for tensor in tensors:
            frame_of = canonical_renaming((tensor.indices,))
            frame = tuple(frame_of[i] for i in tensor.indices)
            name = leaves[(tensor.label, tensor.symmetry, tensor.layout, frame)]
            back = {frame_of[m]: m for m in expand_modes(tensor.indices)}
            subscripts.append(
                "".join(letter(back[m]) for m in forest.values[name].modes)
            )
            arrays.append(inputs[name])
        assert tree.root is not None
        root = forest.sites[tree.root]
        output = [renaming[root.mode_map[m]] for m in forest.values[root.value].modes]
        externals = [renaming[i] for i in term.externals()]
        assert set(output) == set(expand_modes(externals))
        equation = ",".join(subscripts) + "->" + "".join(map(letter, output))
        direct = float(tree.coeff) * np.einsum(equation, *arrays, optimize="greedy")
        scale = max(float(np.max(np.abs(direct))), 1.0)
        assert np.max(np.abs(results[tree.name] - direct)) <= 1e-10 * scale
