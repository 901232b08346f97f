"""The evaluator's residual, both ways (unbatched forest, schedule), against
the einsum oracle, on every bundled equation and on random expressions."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from axisflow.execution import read_inputs
from axisflow.pipeline import schedule_expression
from axisflow.residual import residual_layout
from axisflow.scheduling.assemble import assemble_residual
from axisflow.scheduling.evaluate import (
    TOLERANCE,
    evaluate_forest,
    relative_difference,
    run_residual,
)
from axisflow.scheduling.memory import Sizing
from axisflow.scheduling.options import ShareChoice
from axisflow.sequant import Expression, parse
from tests.einsum_oracle import oracle_inputs, oracle_residual, term_operators

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sequant"
Array = np.ndarray


def check_both_ways(
    expression: Expression,
    batch: str,
    extents: Mapping[str, int],
    seed: int = 0,
    share: ShareChoice = "forest",
) -> float:
    """Worst relative difference of the two evaluator residuals to the oracle."""
    text_extents = ",".join(f"{k}={n}" for k, n in extents.items())
    planned = schedule_expression(
        expression, batch, extents=text_extents, elem=8, share=share
    )
    forest = planned.model
    layout = residual_layout(
        [t.externals() for t in expression.terms],
        [term_operators(t.operators) for t in expression.terms],
    )
    inputs = read_inputs(
        expression, oracle_inputs(expression, extents, seed), extents=extents
    ).leaf_arrays(forest)
    unbatched = assemble_residual(forest, evaluate_forest(forest, inputs), layout)
    _, scheduled = run_residual(
        forest, planned.schedule, inputs, Sizing(forest, extents)
    )
    assert scheduled is not None  # the schedule accumulates the residual
    modes, reference = oracle_residual(expression, extents, seed)
    assert modes == layout.modes
    return max(
        relative_difference(unbatched, reference),
        relative_difference(scheduled, reference),
    )


def bundled(name: str, operator: str | None = None) -> Expression:
    text = (EXAMPLES / f"{name}.txt").read_text(encoding="utf-8")
    if operator is None:
        return parse(text)
    terms = parse(text).terms
    pieces = []
    for k, term in enumerate(terms):
        sign = "-" if term.coefficient < 0 else ("" if k == 0 else "+")
        body = " * ".join(str(t) for t in term.tensors)
        pieces.append(f"{sign} {abs(term.coefficient)} {operator} * {body}")
    return parse(" ".join(pieces))


BUNDLED = [
    ("csv_ccsd_energy_df", "Κ"),
    ("csv_ccsd_energy_df", "i,Κ"),
    ("csv_ccsd_singles_residual_df", "i"),
    ("csv_ccsd_singles_residual_df", "Κ"),
    ("csv_ccsd_doubles_residual_df", "i"),
    ("legality_cross_iteration", "i"),
    ("ccsd_doubles_residual_sf", "i"),
]


def test_every_bundled_equation_is_checked() -> None:
    assert {name for name, _ in BUNDLED} == {p.stem for p in EXAMPLES.glob("*.txt")}


@pytest.mark.parametrize(("name", "batch"), BUNDLED)
def test_bundled_equations_agree_with_the_oracle(name: str, batch: str) -> None:
    expression = bundled(name)
    extents = {key: 2 for key in expression.space_keys()}
    assert check_both_ways(expression, batch, extents) <= TOLERANCE


@pytest.mark.parametrize(
    ("name", "batch"),
    [
        ("csv_ccsd_energy_df", "i,Κ"),
        ("csv_ccsd_singles_residual_df", "i,μ̃"),
        ("csv_ccsd_doubles_residual_df", "i,μ̃"),
        ("csv_ccsd_doubles_residual_df", "Κ"),
    ],
)
def test_values_rebuilt_per_tree_agree_with_the_oracle(name: str, batch: str) -> None:
    # share="tree": every tree rebuilds the values it shares, in its own loops
    expression = bundled(name)
    extents = {key: 2 for key in expression.space_keys()}
    assert check_both_ways(expression, batch, extents, share="tree") <= TOLERANCE


@pytest.mark.parametrize(
    ("name", "operator"),
    [
        ("csv_ccsd_doubles_residual_df", "Ŝ{a_1<i_1,i_2>,a_2<i_1,i_2>;i_1,i_2}"),
        ("csv_ccsd_singles_residual_df", "Ŝ{a_1<i_1>;i_1}"),
    ],
)
def test_symmetrized_residuals_agree_with_the_oracle(name: str, operator: str) -> None:
    expression = bundled(name, operator)
    extents = {key: 2 for key in expression.space_keys()}
    assert check_both_ways(expression, "Κ", extents) <= TOLERANCE


EXTERNALS = ("a_1", "a_2", "i_1", "i_2")
DUMMIES = ("a_3", "a_4", "i_3", "i_4", "Κ_1")
OPERATORS = (
    "",
    "Ŝ{a_1,a_2;i_1,i_2} * ",
    "Â{a_1,a_2;i_1,i_2} * ",
    "P̂{a_1,a_2;i_1,i_2} * ",
)


@st.composite
def residuals(draw: st.DrawFn) -> str:
    """Terms over the externals a_1 a_2 i_1 i_2: each external on one tensor,
    each dummy on two, some terms under Ŝ, Â or P̂."""
    terms: list[str] = []
    for k in range(draw(st.integers(1, 4))):
        size = draw(st.integers(2, 4))
        slots: list[list[str]] = [[] for _ in range(size)]
        for external in EXTERNALS:
            slots[draw(st.integers(0, size - 1))].append(external)
        for dummy in draw(st.lists(st.sampled_from(DUMMIES), max_size=3, unique=True)):
            first, second = draw(
                st.lists(st.integers(0, size - 1), min_size=2, max_size=2, unique=True)
            )
            slots[first].append(dummy)
            slots[second].append(dummy)
        tensors = [
            f"T{n}{{{','.join(s[: len(s) // 2])};{','.join(s[len(s) // 2 :])}}}"
            for n, s in enumerate(slots)
            if s
        ]
        coefficient = draw(st.sampled_from(["", "2 ", "1/2 ", "3 "]))
        sign = draw(st.sampled_from(["- ", "" if k == 0 else " + "]))
        operator = draw(st.sampled_from(OPERATORS))
        terms.append(f"{sign}{coefficient}{operator}{' * '.join(tensors)}")
    return "".join(terms)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    residuals(),
    st.sampled_from(["i", "a", "Κ", "i,Κ"]),
    st.integers(0, 9),
    st.sampled_from(["forest", "tree", "auto"]),
)
def test_random_residuals_agree_with_the_oracle(
    text: str, batch: str, seed: int, share: ShareChoice
) -> None:
    expression = parse(text)
    keys = expression.space_keys()
    spaces = [s for s in batch.split(",") if s in keys] or ["i"]
    extents = {"a": 2, "i": 3, "Κ": 2}
    extents = {k: extents[k] for k in keys}
    worst = check_both_ways(expression, ",".join(spaces), extents, seed, share)
    assert worst <= TOLERANCE
