"""Ŝ, Â, P̂ on dense residuals, against hand-written NumPy formulas."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose as _assert_allclose

from axisflow.residual import (
    Operator,
    OperatorError,
    ResidualError,
    apply_operator,
    apply_operators,
    residual_layout,
    transform,
)
from axisflow.roles.index import Index


def close(actual: np.ndarray, expected: np.ndarray, atol: float = 1e-12) -> None:
    _assert_allclose(actual, expected, rtol=1e-12, atol=atol)


def idx(*labels: str) -> tuple[Index, ...]:
    return tuple(Index.parse(label) for label in labels)


A1, A2, A3, I1, I2, I3 = idx("a_1", "a_2", "a_3", "i_1", "i_2", "i_3")


def random(shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape)


def test_symmetrizer_averages_column_permutations() -> None:
    r = random((3, 3, 4, 4))
    s = Operator.make("Ŝ", (A1, A2), (I1, I2))
    expected = (r + r.transpose(1, 0, 3, 2)) / 2
    close(apply_operator(r, (A1, A2, I1, I2), s), expected)


def test_symmetrizer_three_columns_has_six_terms_each_one_sixth() -> None:
    s = Operator.make("Ŝ", (A1, A2, A3), (I1, I2, I3))
    weights = [w for w, _ in s.relabellings()]
    assert len(weights) == 6 and all(w == weights[0] for w in weights)
    assert sum(weights) == 1


def test_antisymmetrizer_signs_and_normalization() -> None:
    r = random((3, 3, 4, 4))
    a = Operator.make("Â", (A1, A2), (I1, I2))
    expected = (
        r - r.transpose(1, 0, 2, 3) - r.transpose(0, 1, 3, 2) + r.transpose(1, 0, 3, 2)
    ) / 4
    close(apply_operator(r, (A1, A2, I1, I2), a), expected)


def test_antisymmetrizer_uneven_ranks() -> None:
    r = random((3, 3, 4))
    a = Operator.make("Â", (A1, A2), (I1,))
    expected = (r - r.transpose(1, 0, 2)) / 2
    close(apply_operator(r, (A1, A2, I1), a), expected)


def test_transposition_swaps_consecutive_pairs_once() -> None:
    r = random((4, 4, 3, 3))
    both = Operator.make("P̂", (I1, I2), (A1, A2))
    close(apply_operator(r, (I1, I2, A1, A2), both), r.transpose(1, 0, 3, 2))
    bra_only = Operator.make("P̂", (I1, I2), ())
    close(apply_operator(r, (I1, I2, A1, A2), bra_only), r.transpose(1, 0, 2, 3))
    identity = Operator.make("P̂", (I1,), (A1,))
    np.testing.assert_array_equal(apply_operator(r, (I1, I2, A1, A2), identity), r)


def test_composites_and_their_protos_move_with_the_columns() -> None:
    a1, a2 = idx("a_1<i_1,i_2>", "a_2<i_1,i_2>")
    modes = (a1, a2, I1, I2)
    r = random((3, 3, 4, 4))
    s = Operator.make("Ŝ", (a1, a2), (I1, I2))
    close(apply_operator(r, modes, s), (r + r.transpose(1, 0, 3, 2)) / 2)
    # a_1<i_1> moves to a_2<i_2> because its proto moves with the column
    b1, b2 = idx("a_1<i_1>", "a_2<i_2>")
    r = random((3, 3, 4, 4), 1)
    s = Operator.make("Ŝ", (b1, b2), (I1, I2))
    close(apply_operator(r, (b1, b2, I1, I2), s), (r + r.transpose(1, 0, 3, 2)) / 2)


def test_transform_follows_sequant_index_transform() -> None:
    (composite,) = idx("a_1<i_1,i_2>")
    assert transform(composite, {I1: I3}) == Index.parse("a_1<i_2,i_3>")
    assert transform(composite, {composite: A2}) == A2
    # after the protos change, the whole index is looked up again
    renamed = Index.parse("a_1<i_2,i_3>")
    assert transform(composite, {I1: I3, renamed: A3}) == A3


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 3))
def test_symmetrizer_and_antisymmetrizer_are_projectors(seed: int, n: int) -> None:
    bra = idx(*(f"a_{k}" for k in range(1, n + 1)))
    ket = idx(*(f"i_{k}" for k in range(1, n + 1)))
    modes = bra + ket
    r = random((2,) * n + (3,) * n, seed)
    for label in ("Ŝ", "Â"):
        op = Operator.make(label, bra, ket)
        once = apply_operator(r, modes, op)
        close(apply_operator(once, modes, op), once, atol=1e-12)
    a = apply_operator(r, modes, Operator.make("Â", bra, ket))
    if n >= 2:  # antisymmetric in the bra, and in the ket
        close(np.swapaxes(a, 0, 1), -a, atol=1e-12)
        close(np.swapaxes(a, n, n + 1), -a, atol=1e-12)


def test_operator_product_applies_the_innermost_first() -> None:
    r = random((3, 3, 4, 4))
    modes = (A1, A2, I1, I2)
    p = Operator.make("P̂", (A1, A2), ())
    s = Operator.make("Ŝ", (A1, A2), (I1, I2))
    close(
        apply_operators(r, modes, (s, p)),
        apply_operator(apply_operator(r, modes, p), modes, s),
    )


@pytest.mark.parametrize(
    ("label", "bra", "ket", "message"),
    [
        ("Ŝ", (A1, A2), (I1,), "as many bra as ket"),
        ("P̂", (A1, A2, A3), (), "even number"),
        ("Â", (A1, A1), (), "listed twice"),
        ("X", (A1,), (I1,), "not one of"),
    ],
)
def test_operators_sequant_does_not_define_are_rejected(
    label: str, bra: tuple[Index, ...], ket: tuple[Index, ...], message: str
) -> None:
    with pytest.raises(OperatorError, match=message):
        Operator.make(label, bra, ket)


def test_operator_must_map_the_residual_onto_itself() -> None:
    r = random((3, 4))
    bad = Operator.make("P̂", (A1, I1), ())
    with pytest.raises(OperatorError, match="another index space"):
        apply_operator(r, (A1, I1), bad)
    with pytest.raises(OperatorError, match="does not carry"):
        apply_operator(r, (A1, I1), Operator.make("P̂", (A1, A2), ()))


def test_layout_precedence_and_mismatched_terms() -> None:
    s = Operator.make("Ŝ", (A1, A2), (I1, I2))
    layout = residual_layout([(I2, A1, A2, I1), (A2, I1, I2, A1)], [(s,), (s,)])
    assert layout.indices == (A1, A2, I1, I2)
    assert [g.terms for g in layout.groups] == [(0, 1)]
    plain = residual_layout([(I2, A1), (A1, I2)], [(), ()])
    assert plain.indices == (A1, I2)  # sorted, whatever the term order
    given_order = residual_layout([(I2, A1)], [()], result=(I2, A1))
    assert given_order.indices == (I2, A1)
    mixed = residual_layout([(A1, A2, I1, I2), (A1, A2, I1, I2)], [(s,), ()])
    assert [g.terms for g in mixed.groups] == [(0,), (1,)]
    with pytest.raises(ResidualError, match="term 2 has externals") as info:
        residual_layout([(A1, I1), (A1, I2)], [(), ()])
    assert info.value.term == 1
