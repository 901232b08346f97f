"""Every term, evaluated by one ``numpy.einsum`` over the parsed text (the
tests' one oracle, ``tests/einsum_oracle.py``), agrees with its tree in the
unbatched forest and in the schedule to 1e-10 relative: on all bundled
equations and on random ones. (The whole residual, operators applied, is
checked against the same oracle in ``tests/residual/test_forest_residual.py``.)"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from axisflow.execution import read_inputs
from axisflow.pipeline import schedule_expression
from axisflow.scheduling.evaluate import (
    evaluate_forest,
    relative_difference,
    run_schedule,
)
from axisflow.scheduling.memory import Sizing
from axisflow.sequant import Expression, parse
from tests.conftest import EXAMPLES
from tests.einsum_oracle import oracle_inputs, term_by_einsum
from tests.forest.strategies import expressions

TOLERANCE = 1e-10


def check(expression: Expression, batch: str) -> None:
    keys = expression.space_keys()
    extent = dict.fromkeys(keys, 2)
    # per-tree results (accumulate=False): the residual is checked, with its
    # operators, in tests/residual/test_forest_residual.py
    result = schedule_expression(
        expression, batch, extents=extent, elem=8, accumulate=False
    )
    forest = result.model
    inputs = read_inputs(
        expression, oracle_inputs(expression, extent), extents=extent
    ).leaf_arrays(forest)
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
            expected = term_by_einsum(term, output, extent)
        for got in (unbatched[tree.name], scheduled[tree.name]):
            assert relative_difference(got, expected) <= TOLERANCE, tree.name


EQUATIONS = sorted(p.name for p in (EXAMPLES / "sequant").glob("*.txt"))


def test_the_bundled_equations_are_found() -> None:
    assert len(EQUATIONS) >= 4 and "csv_ccsd_doubles_residual_df.txt" in EQUATIONS


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
