"""Every order computes the same numbers: the NumPy evaluator of the forest
against one direct ``numpy.einsum`` per term of the parsed text.

Proto lists are sets (``a_1<i_1,i_2>`` is ``a_1<i_2,i_1>``), so a tensor
that depends on a pair only through a composite is symmetric in the pair:
the random inputs are symmetrized accordingly (a forest may pair proto-only
modes either way; a physical tensor does not tell them apart).
"""

from __future__ import annotations

from itertools import permutations
from pathlib import Path

import numpy as np
import pytest

from axisflow.dialects.batch import ForestOp
from axisflow.order import ORDERS, Order, expand_modes
from axisflow.pipeline.evaluate import evaluate_forest, random_inputs
from axisflow.pipeline.ir import forest_model
from axisflow.pipeline.memory import Sizing
from axisflow.roles.index import Index
from axisflow.sequant import build_forest, canonical_renaming, parse
from axisflow.sequant.emit import forest_module
from axisflow.sequant.forest import LeafValue

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sequant"
SMALL = {"i": 2, "a": 3, "μ̃": 3, "Κ": 2}
_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def symmetrized(
    array: np.ndarray, carried: tuple[Index, ...], modes: tuple[Index, ...]
) -> np.ndarray:
    """``array`` (axes ``modes``) averaged over the permutations of its
    proto-only modes that map every composite's proto set onto itself."""
    only = [m for m in modes if m not in carried]
    sets = [frozenset(c.protos) for c in carried if c.protos]
    axes = [modes.index(m) for m in only]
    total = np.zeros_like(array)
    count = 0
    for image in permutations(only):
        rename = dict(zip(only, image, strict=True))
        if any(frozenset(rename.get(p, p) for p in group) != group for group in sets):
            continue
        order = list(range(array.ndim))
        for axis, target in zip(axes, image, strict=True):
            order[axis] = modes.index(target)
        total += np.transpose(array, order)
        count += 1
    return total / count


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize(
    "path", sorted(EXAMPLES.glob("csv_ccsd_*.txt")), ids=lambda p: p.stem
)
def test_every_tree_equals_a_direct_einsum_of_its_term(
    path: Path, order: Order
) -> None:
    expression = parse(path.read_text("utf-8"))
    forest = build_forest(expression, order=order)
    (op,) = [o for o in forest_module(forest).walk() if isinstance(o, ForestOp)]
    model = forest_model(op, with_roles=False)
    sizing = Sizing(model, SMALL)
    inputs = {
        name: symmetrized(array, model.values[name].result, model.values[name].modes)
        for name, array in random_inputs(model, sizing, seed=3).items()
    }
    results = evaluate_forest(model, inputs)
    leaves = {
        (v.tensor, v.symmetry, v.layout, v.result): v.name
        for v in forest.values
        if isinstance(v, LeafValue)
    }
    for tree, term in zip(model.trees, expression.terms, strict=True):
        letters: dict[Index, str] = {}

        def letter(mode: Index, letters: dict[Index, str] = letters) -> str:
            return letters.setdefault(mode, _LETTERS[len(letters)])

        arrays: list[np.ndarray] = []
        subscripts: list[str] = []
        for tensor in term.tensors:
            renaming = canonical_renaming((tensor.indices,))
            frame = tuple(renaming[i] for i in tensor.indices)
            name = leaves[(tensor.label, tensor.symmetry, tensor.layout, frame)]
            back = {renaming[m]: m for m in expand_modes(tensor.indices)}
            subscripts.append(
                "".join(letter(back[m]) for m in model.values[name].modes)
            )
            arrays.append(inputs[name])
        assert tree.root is not None
        root = model.sites[tree.root]
        output = [root.mode_labels[m] for m in model.values[root.value].modes]
        assert set(output) == set(expand_modes(term.externals()))
        equation = ",".join(subscripts) + "->" + "".join(map(letter, output))
        direct = float(term.coefficient) * np.einsum(
            equation, *arrays, optimize="greedy"
        )
        scale = max(float(np.max(np.abs(direct))), 1.0)
        assert np.max(np.abs(results[tree.name] - direct)) <= 1e-10 * scale
