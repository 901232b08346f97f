"""Every term, evaluated by one ``numpy.einsum`` over the parsed text
(``tests/forest/oracle.py``), agrees with the unbatched forest and with the
schedule to 1e-10 relative: on all bundled equations and on random ones."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from axisflow.forest.model import Forest
from axisflow.pipeline import schedule_expression
from axisflow.pipeline.evaluate import (
    Array,
    evaluate_forest,
    relative_difference,
    run_schedule,
)
from axisflow.pipeline.memory import Sizing
from axisflow.sequant import Expression, parse
from tests.conftest import EXAMPLES
from tests.forest import oracle
from tests.forest.strategies import expressions

TOLERANCE = 1e-10


def leaf_inputs(forest: Forest, extent: dict[str, int]) -> dict[str, Array]:
    """The oracle's generator applied to every leaf value, in its frame."""
    inputs: dict[str, Array] = {}
    for name, value in forest.values.items():
        if value.is_input:
            assert value.tensor is not None and value.layout is not None
            array, modes = oracle.tensor_array(
                value.tensor, value.symmetry, value.layout, value.result, extent
            )
            assert tuple(modes) == value.modes
            inputs[name] = array
    return inputs


def check(expression: Expression, batch: str) -> None:
    keys = expression.space_keys()
    extent = dict.fromkeys(keys, 2)
    result = schedule_expression(expression, batch, extents=extent, elem=8)
    forest = result.model
    inputs = leaf_inputs(forest, extent)
    unbatched = evaluate_forest(forest, inputs)
    scheduled = run_schedule(forest, result.schedule, inputs, Sizing(forest))
    for term, tree in zip(expression.terms, forest.trees, strict=True):
        if tree.root is None:
            expected = np.asarray(float(term.coefficient))
            output: list = []
        else:
            site = forest.sites[tree.root]
            value = forest.values[site.value]
            output = [site.mode_map[mode] for mode in value.modes]
            expected = oracle.term_by_einsum(term, output, extent)
        for got in (unbatched[tree.name], scheduled[tree.name]):
            assert relative_difference(got, expected) <= TOLERANCE, tree.name


EQUATIONS = sorted(p.name for p in (EXAMPLES / "sequant").glob("*.txt"))


@pytest.mark.parametrize("name", EQUATIONS)
def test_every_bundled_equation_agrees_with_einsum(name: str) -> None:
    expression = parse((EXAMPLES / "sequant" / name).read_text("utf-8"), name)
    batch = ",".join(k for k in ("Κ", "i") if k in expression.space_keys())
    check(expression, batch)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(expressions())
def test_random_expressions_agree_with_einsum(case: tuple[Expression, str]) -> None:
    expression, batch = case
    check(expression, batch)
