"""The einsum oracle itself: inputs that depend on structure only and respect
declared symmetries, and operators that agree with SeQuant's symbolic
expansion (the operator written out as relabelled terms, as SeQuant's
``S_maps``/``expand_A_op``/``expand_P_op`` do)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow.residual import Operator, transform
from axisflow.roles.index import Index
from axisflow.sequant import Expression, Tensor, Term, parse
from tests.einsum_oracle import modes_of, oracle_residual, tensor_array

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sequant"


def tensor(text: str) -> Tensor:
    (term,) = parse(text).terms
    (only,) = term.tensors
    return only


EXTENTS = {"a": 3, "i": 2, "μ̃": 3, "Κ": 2}


def test_inputs_depend_on_structure_not_names() -> None:
    first = tensor("t{a_3<i_1,i_4>,a_4<i_1,i_4>;i_4,i_1}:N-N-S")
    second = tensor("t{a_1<i_1,i_2>,a_2<i_1,i_2>;i_1,i_2}:N-N-S")
    np.testing.assert_array_equal(
        tensor_array(first, EXTENTS), tensor_array(second, EXTENTS)
    )
    other_label = tensor("u{a_1<i_1,i_2>,a_2<i_1,i_2>;i_1,i_2}:N-N-S")
    assert not np.allclose(
        tensor_array(other_label, EXTENTS), tensor_array(second, EXTENTS)
    )


def test_declared_symmetries_hold() -> None:
    t = tensor_array(tensor("t{a_1,a_2;i_1,i_2}:N-N-S"), EXTENTS)
    np.testing.assert_allclose(t, t.transpose(1, 0, 3, 2), atol=1e-14)
    assert not np.allclose(t, t.transpose(1, 0, 2, 3))
    g = tensor_array(tensor("g{a_1,a_2;i_1,i_2}:A-N-N"), EXTENTS)
    np.testing.assert_allclose(g, -g.transpose(1, 0, 2, 3), atol=1e-14)
    np.testing.assert_allclose(g, -g.transpose(0, 1, 3, 2), atol=1e-14)
    s = tensor_array(tensor("s{μ̃_1;μ̃_2}:N-S-S"), EXTENTS)
    np.testing.assert_allclose(s, s.T, atol=1e-14)
    c = tensor_array(tensor("C{a_1;μ̃_1}:N-S-S"), EXTENTS)
    ct = tensor_array(tensor("C{μ̃_1;a_1}:N-S-S"), EXTENTS)
    np.testing.assert_allclose(c, ct.T, atol=1e-14)
    nonsymmetric = tensor_array(tensor("C{a_1;μ̃_1}:N-N-N"), EXTENTS)
    transposed = tensor_array(tensor("C{μ̃_1;a_1}:N-N-N"), EXTENTS)
    assert not np.allclose(nonsymmetric, transposed.T)


def test_interchangeable_protos_are_symmetrized() -> None:
    c = tensor_array(tensor("C{a_1<i_1,i_2>;μ̃_1}:N-S-S"), EXTENTS)
    assert c.shape == (3, 3, 2, 2)  # a_1<i_1,i_2>, μ̃_1, i_1, i_2
    np.testing.assert_allclose(c, c.transpose(0, 1, 3, 2), atol=1e-14)


@st.composite
def renamings(draw: st.DrawFn) -> tuple[str, str, dict[str, list[int]]]:
    """A tensor text, the same tensor with every index renamed, and the
    renaming (new ordinal of ordinal k per base key)."""
    size = draw(st.integers(1, 3))
    virtual = draw(st.permutations(list(range(1, 7))))
    occupied = draw(st.permutations(list(range(1, 7))))
    protos = [
        draw(st.lists(st.integers(0, 3), max_size=2, unique=True)) for _ in range(size)
    ]

    def render(v: list[int], o: list[int]) -> str:
        bra = [
            f"a_{v[k]}" + (f"<{','.join(f'i_{o[p]}' for p in ps)}>" if ps else "")
            for k, ps in enumerate(protos)
        ]
        ket = [f"i_{o[k]}" for k in range(size)]
        return f"t{{{','.join(bra)};{','.join(ket)}}}:N-N-S"

    identity = list(range(1, 7))
    renaming = {"a": [0, *virtual], "i": [0, *occupied]}
    return render(identity, identity), render(virtual, occupied), renaming


def _renamed(index: Index, renaming: dict[str, list[int]]) -> Index:
    assert index.ordinal is not None
    return Index(
        index.base_key,
        renaming[index.base_key][index.ordinal],
        (_renamed(p, renaming) for p in index.protos),
    )


@settings(max_examples=40, deadline=None)
@given(renamings())
def test_renamed_tensors_get_the_same_numbers(
    case: tuple[str, str, dict[str, list[int]]],
) -> None:
    original, renamed = tensor(case[0]), tensor(case[1])
    before = tensor_array(original, EXTENTS)
    after = tensor_array(renamed, EXTENTS)
    position = {mode: k for k, mode in enumerate(modes_of(renamed.indices))}
    axes = [position[_renamed(m, case[2])] for m in modes_of(original.indices)]
    np.testing.assert_allclose(np.transpose(after, axes), before, atol=1e-14)


def test_one_term_is_one_einsum() -> None:
    expression = parse("2 f{a_1;i_2} * t{a_2;i_1}:N-N-S * g{i_2;a_2}")
    modes, value = oracle_residual(expression, EXTENTS)
    assert modes == (Index.parse("a_1"), Index.parse("i_1"))
    f, t, g = (tensor_array(x, EXTENTS) for x in expression.terms[0].tensors)
    np.testing.assert_allclose(value, 2 * np.einsum("xj,yi,jy->xi", f, t, g))


def expanded(expression: Expression) -> Expression:
    """Each term's operator written out as SeQuant's expanders do: one term
    per weighted relabelling of the tensors' indices (``transform``)."""
    terms: list[Term] = []
    for term in expression.terms:
        choices: list[tuple[Fraction, dict[Index, Index]]] = [(Fraction(1), {})]
        for label in reversed(term.operators):
            operator = Operator.make(label.label, label.bra, label.ket)
            choices = [
                (w1 * w2, {k: transform(transform(k, m2), m1) for k in _all(term)})
                for w1, m1 in operator.relabellings()
                for w2, m2 in choices
            ]
        for weight, mapping in choices:
            tensors = tuple(
                Tensor(
                    t.label,
                    tuple(transform(i, mapping) for i in t.bra),
                    tuple(transform(i, mapping) for i in t.ket),
                    tuple(transform(i, mapping) for i in t.aux),
                    t.symmetry,
                )
                for t in term.tensors
            )
            terms.append(Term(term.coefficient * weight, tensors))
    return Expression(tuple(terms))


def _all(term: Term) -> set[Index]:
    found: set[Index] = set()
    for t in term.tensors:
        for index in t.indices:
            found.add(index)
            found.update(index.all_protos())
    return found


@pytest.mark.parametrize(
    ("operator", "name"),
    [
        ("Ŝ{a_1<i_1,i_2>,a_2<i_1,i_2>;i_1,i_2}", "doubles_residual"),
        ("Â{a_1<i_1,i_2>,a_2<i_1,i_2>;i_1,i_2}", "doubles_residual"),
        ("P̂{a_1<i_1,i_2>,a_2<i_1,i_2>;i_1,i_2}", "doubles_residual"),
        ("Ŝ{a_1<i_1>;i_1}", "singles_residual"),
    ],
)
def test_array_operator_equals_sequant_symbolic_expansion(
    operator: str, name: str
) -> None:
    text = (EXAMPLES / f"csv_ccsd_{name}_df.txt").read_text(encoding="utf-8")
    with_operator = parse(" ".join(_prefix_terms(text, operator)))
    extents = {key: 2 for key in with_operator.space_keys()}
    modes, applied = oracle_residual(with_operator, extents)
    result = [i for i in modes if i in set(with_operator.terms[0].externals())]
    _, written_out = oracle_residual(expanded(with_operator), extents, result=result)
    np.testing.assert_allclose(applied, written_out, rtol=1e-12, atol=1e-10)
    if operator.startswith("Ŝ") and name == "doubles_residual":
        _, bare = oracle_residual(parse(text), extents)
        assert not np.allclose(bare, applied)  # the operator does something


def _prefix_terms(text: str, operator: str) -> list[str]:
    """The expression text with ``operator *`` in front of every term."""
    expression = parse(text)
    out: list[str] = []
    for k, term in enumerate(expression.terms):
        sign = "-" if term.coefficient < 0 else "+"
        body = " * ".join(str(t) for t in term.tensors)
        coefficient = abs(term.coefficient)
        out.append(
            f"{'' if k == 0 and sign == '+' else sign} {coefficient} {operator} * {body}"
        )
    return out


def test_modes_of_expands_protos_once() -> None:
    indices = tuple(map(Index.parse, ("a_1<i_1,i_2>", "a_2<i_1,i_2>", "i_1")))
    assert [str(m) for m in modes_of(indices)] == [
        "a_1<i_1,i_2>",
        "a_2<i_1,i_2>",
        "i_1",
        "i_2",
    ]
