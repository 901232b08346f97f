"""``evaluate_expression``: the residual on the user's tensors, unbatched and
through a schedule, against the einsum oracle; its argument errors."""

from __future__ import annotations

import numpy as np
import pytest

from axisflow.execution import (
    Evaluation,
    evaluate_expression,
    input_keys,
    input_signatures,
)
from axisflow.scheduling.contraction import EvaluationMemoryError
from axisflow.scheduling.evaluate import relative_difference
from axisflow.sequant import PolicyError, SequantError, parse
from tests.conftest import EXAMPLES
from tests.einsum_oracle import oracle_inputs, oracle_residual

FOCK_T = "f{i_1;i_2} * t{a_1;i_2}"
INPUTS = {"f": np.arange(4.0).reshape(2, 2), "t": np.arange(6.0).reshape(3, 2)}


def equation(name: str) -> str:
    return (EXAMPLES / "sequant" / f"{name}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("name", "batch", "never_worse"),
    [
        ("csv_ccsd_singles_residual_df", "i,Κ", True),
        ("csv_ccsd_singles_residual_df", "μ̃", False),
        ("csv_ccsd_energy_df", "Kappa", False),
    ],
)
def test_unbatched_and_batched_agree_with_the_oracle(
    name: str, batch: str, never_worse: bool
) -> None:
    expression = parse(equation(name))
    extents = dict.fromkeys(expression.space_keys(), 2)
    inputs = oracle_inputs(expression, extents)
    modes, reference = oracle_residual(expression, extents)
    unbatched = evaluate_expression(expression, inputs)
    batched = evaluate_expression(
        expression, inputs, batch=batch, never_worse=never_worse
    )
    assert unbatched.modes == batched.modes == modes
    assert unbatched.schedule is None and unbatched.loop_passes == 0
    assert batched.schedule is not None
    assert relative_difference(unbatched.residual, reference) <= 1e-10
    assert relative_difference(batched.residual, reference) <= 1e-10
    if not never_worse:
        assert batched.dropped == () and batched.loop_passes > 0


def test_composite_kinds_take_their_extents_from_the_inputs() -> None:
    # a<1> = 3 and a<2> = 2 differ from each other (there is no plain a):
    # the extents come from the arrays, and the schedule agrees with the
    # unbatched evaluation.
    text = equation("csv_ccsd_energy_df")
    extents = {"i": 3, "μ̃": 4, "Κ": 5, "a<1>": 3, "a<2>": 2}
    rng = np.random.default_rng(0)
    inputs: dict[str, np.ndarray] = {}
    signatures = input_signatures(parse(text))
    keys = input_keys(signatures)
    for signature in signatures:
        shape = tuple(extents[kind] for kind in signature.axis_kinds)
        array = rng.standard_normal(shape)
        for first, second in signature.ties:  # the pairs C's protos form
            array = (array + np.swapaxes(array, first, second)) / 2
        inputs[keys[signature.exact_key]] = array
    unbatched = evaluate_expression(text, inputs)
    batched = evaluate_expression(text, inputs, batch="i,Κ", block=2, never_worse=False)
    assert unbatched.extents == extents
    assert unbatched.residual.shape == ()
    assert relative_difference(batched.residual, unbatched.residual) <= 1e-10


def test_the_evaluation_names_its_axes() -> None:
    result = evaluate_expression(FOCK_T, INPUTS, batch="i", never_worse=False)
    assert isinstance(result, Evaluation)
    assert result.labels == ("a_1", "i_1")
    assert result.extents == {"i": 2, "a": 3}
    assert np.allclose(result.residual, INPUTS["t"] @ INPUTS["f"].T)
    assert result.loop_passes == 2


def test_values_rebuilt_per_tree_give_the_same_residual() -> None:
    expression = parse(equation("csv_ccsd_singles_residual_df"))
    extents = dict.fromkeys(expression.space_keys(), 2)
    inputs = oracle_inputs(expression, extents)
    shared = evaluate_expression(expression, inputs, batch="i", never_worse=False)
    rebuilt = evaluate_expression(
        expression, inputs, batch="i", share="tree", never_worse=False
    )
    assert relative_difference(rebuilt.residual, shared.residual) <= 1e-10


@pytest.mark.parametrize(
    ("options", "kind", "message"),
    [
        ({"batch": 3}, TypeError, "batch must be a str or an iterable of str, got 3"),
        ({"batch": "i", "block": 0}, ValueError, "block must be positive, got 0"),
        (
            {"batch": "i", "block": {"i": "x"}},
            TypeError,
            "block['i'] must be a positive int, got 'x' (str)",
        ),
        (
            {"order": "fast"},
            ValueError,
            "order must be one of file, flops, memory, got 'fast'",
        ),
        ({"share": "all"}, ValueError, "share must be one of forest, tree, got 'all'"),
        (
            {"never_worse": "no"},
            TypeError,
            "never_worse must be True or False, got 'no'",
        ),
        (
            {"assume_symmetric": None},
            TypeError,
            "assume_symmetric must be True or False, got None",
        ),
        ({"memory_limit": 0}, ValueError, "memory_limit must be positive, got 0"),
        (
            {"batch": "x"},
            PolicyError,
            "index space 'x' does not occur in the expression (its spaces: a, i)",
        ),
    ],
)
def test_argument_errors_name_the_argument(
    options: dict[str, object], kind: type, message: str
) -> None:
    with pytest.raises(kind) as caught:
        evaluate_expression(FOCK_T, INPUTS, **options)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_the_expression_must_be_text_or_parsed() -> None:
    with pytest.raises(TypeError) as caught:
        evaluate_expression(3, INPUTS)  # type: ignore[arg-type]
    assert str(caught.value) == (
        "expression must be SeQuant text (str) or a parsed Expression, got int"
    )


def test_terms_that_form_no_residual_are_located() -> None:
    with pytest.raises(SequantError) as caught:
        evaluate_expression(f"{FOCK_T} + g{{a_3;i_4}}", {**INPUTS, "g": INPUTS["t"]})
    assert str(caught.value) == (
        "<input>:1:25: the terms form no one residual: term 2 has externals "
        "(a_3, i_4) but the residual carries (a_1, i_1)"
    )


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (
            "",
            "evaluating 1 term needs 128 B at once, above the evaluator's memory "
            "limit of 10 B; evaluate at smaller extents or pass a larger "
            "memory_limit",
        ),
        (
            "i",
            "evaluating 1 term batched over i needs 152 B at once, above the "
            "evaluator's memory limit of 10 B; evaluate at smaller extents or pass "
            "a larger memory_limit",
        ),
    ],
)
def test_the_memory_limit_is_checked_before_evaluating(
    batch: str, message: str
) -> None:
    with pytest.raises(EvaluationMemoryError) as caught:
        evaluate_expression(FOCK_T, INPUTS, batch=batch, memory_limit=10)
    assert str(caught.value) == message
