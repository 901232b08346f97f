"""Parenthesized products and result expressions in the SeQuant syntax."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow.roles.index import Index
from axisflow.sequant import Expression, SequantError, Tensor, Term, deparse, parse
from axisflow.sequant.syntax import Operand


def _labels(term: Term) -> list[str]:
    return [t.label for t in term.tensors]


def test_two_pairs_are_two_groups_of_the_written_tensors() -> None:
    (term,) = parse("(A{i_1} * B{i_1;j_1}) * (C{j_1} D{k_1})").terms
    assert _labels(term) == ["A", "B", "C", "D"]
    assert term.groups == ((0, 1), (2, 3))
    assert term.operands() == (~0, ~1)


def test_nesting_refers_to_inner_groups_first() -> None:
    (term,) = parse("((A{i} * (B{i;j} * C{j;k})) * D{k;l}) * E{l}").terms
    assert term.groups == ((1, 2), (0, ~0), (~1, 3))
    assert term.operands() == (~2, 4)


def test_numbers_and_operators_inside_parentheses_leave_the_groups() -> None:
    (term,) = parse("2 * (1/3 A{;i} * (Ŝ{;i} B{})) * (4) C{}").terms
    assert term.coefficient == Fraction(8, 3)
    assert [t.label for t in term.operators] == ["Ŝ"]
    # (Ŝ B) keeps one operand, so it is B; (4) keeps none and vanishes.
    assert term.groups == ((0, 1),)
    assert term.operands() == (~0, 2)


def test_redundant_parentheses_collapse() -> None:
    assert parse("((A{i})) * (((B{i})))") == parse("A{i} * B{i}")
    (term,) = parse("((A{i} * B{i}))").terms
    assert term.groups == ((0, 1),)
    assert term.operands() == (~0,)


def test_ungrouped_operands_keep_written_order_around_groups() -> None:
    (term,) = parse("A{i} * (B{i;j} * C{j;k}) * D{k}").terms
    assert term.operands() == (0, ~0, 3)
    assert deparse(parse("A{i} * (B{i;j} * C{j;k}) * D{k}")) == (
        "A{i;} * (B{i;j} * C{j;k}) * D{k;}"
    )


def test_deparse_prints_every_group_with_parentheses() -> None:
    text = (
        "-1/2 * Ŝ{a_1;i_1} * (g{a_1;j_1} * (t{j_1;k_1} * u{k_1;i_1})) + (A{;} * B{;})"
    )
    assert deparse(parse(text)) == text


def test_deep_nesting_parses_and_prints_without_recursion() -> None:
    depth = 20_000
    text = "(" * depth + "A{i} * B{i}" + " * C{}) " * depth
    (term,) = parse(text).terms
    assert len(term.groups) == depth
    assert term.groups[0] == (0, 1, 2)
    assert term.groups[-1] == (~(depth - 2), depth + 1)
    printed = deparse(parse(text))
    assert printed.count("(") == depth
    assert parse(printed) == parse(text)


def test_long_products_parse_and_print() -> None:
    factors = 2_000
    text = " * ".join(f"T{{i_{k};i_{k + 1}}}" for k in range(factors))
    expression = parse(text)
    assert len(expression.terms[0].tensors) == factors
    assert parse(deparse(expression)) == expression


# --------------------------------------------------------------------------
# Result expressions
# --------------------------------------------------------------------------


def test_result_names_the_residual_and_its_indices_are_the_externals() -> None:
    expression = parse(
        "R{a_1,a_2;i_1,i_2} = g{a_1,a_2;i_3,i_4} * t{i_3,i_4;i_1,i_2}"
        " + 1/2 f{a_1;i_1} * f{a_2;i_2}"
    )
    assert expression.result is not None
    assert expression.result.label == "R"
    expected = tuple(map(Index.parse, ["a_1", "a_2", "i_1", "i_2"]))
    assert [t.externals() for t in expression.terms] == [expected, expected]
    assert deparse(expression).startswith("R{a_1,a_2;i_1,i_2} = g{")
    assert parse(deparse(expression)) == expression


def test_result_externals_may_appear_twice_in_a_term() -> None:
    # A Hadamard index: i_1 is on both tensors and stays in the result.
    (term,) = parse("R{;i_1} = A{;i_1} * B{;i_1}").terms
    assert term.externals() == (Index.parse("i_1"),)


def test_without_result_an_expression_has_none() -> None:
    assert parse("A{i} B{i}").result is None


RESULT_ERRORS = [
    ("R{;i_1} = A{;i_2}", 1, 11, "index i_2 of tensor A appears once"),
    ("R{;i_1} = A{;i_1}\n + 2 B{;i_2} C{i_2;}", 2, 2, "the result lists index i_1"),
    ("R{i_1,i_1} = A{i_1}", 1, 1, "index i_1 appears twice in the result R"),
    ("Ŝ{;i_1} = A{;i_1}", 1, 1, "the result of an expression cannot be"),
    ("R{;i_1} = Ŝ{;i_2} A{;i_1}", 1, 11, "operator Ŝ lists other indices"),
]


@pytest.mark.parametrize(("text", "line", "column", "reason"), RESULT_ERRORS)
def test_result_errors_are_located(
    text: str, line: int, column: int, reason: str
) -> None:
    with pytest.raises(SequantError) as info:
        parse(text, "eq.txt")
    error = info.value
    assert (error.line, error.column) == (line, column)
    assert error.reason.startswith(reason)
    assert str(error).startswith(f"eq.txt:{line}:{column}: {reason}")


# --------------------------------------------------------------------------
# Round trips on generated groupings
# --------------------------------------------------------------------------

_index = st.builds(Index, st.sampled_from(["i", "a", "Κ"]), st.integers(1, 6))
_tensor = st.builds(
    Tensor,
    st.sampled_from(["g", "t", "C", "δ"]),
    st.lists(_index, max_size=2, unique=True).map(tuple),
    st.lists(_index, max_size=2, unique=True).map(tuple),
)


@st.composite
def _grouped(draw: st.DrawFn, tensors: tuple[Tensor, ...]) -> Term:
    """``tensors`` with random parentheses: repeatedly wrap a contiguous run
    of two or more current operands into a group (as a writer would)."""
    top: list[Operand] = list(range(len(tensors)))
    groups: list[tuple[Operand, ...]] = []
    for _ in range(draw(st.integers(0, 4))):
        if len(top) < 2:
            break
        start = draw(st.integers(0, len(top) - 2))
        stop = draw(st.integers(start + 2, len(top)))
        groups.append(tuple(top[start:stop]))
        top[start:stop] = [~(len(groups) - 1)]
    coefficient = Fraction(draw(st.integers(-20, 20)), draw(st.integers(1, 6)))
    return Term(coefficient, tensors, groups=_closing_order(groups, top))


def _closing_order(
    groups: list[tuple[Operand, ...]], top: list[Operand]
) -> tuple[tuple[Operand, ...], ...]:
    """The groups renumbered in the order their ')' is written (the parser's
    numbering), by an explicit depth-first walk."""
    number: dict[int, int] = {}
    ordered: list[tuple[Operand, ...]] = []
    stack: list[tuple[Operand, bool]] = [(op, False) for op in reversed(top)]
    while stack:
        operand, done = stack.pop()
        if operand >= 0:
            continue
        group = groups[~operand]
        if done:
            number[~operand] = len(ordered)
            ordered.append(tuple(op if op >= 0 else ~number[~op] for op in group))
            continue
        stack.append((operand, True))
        stack.extend((op, False) for op in reversed(group))
    return tuple(ordered)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_parenthesized_expressions_round_trip(data: st.DataObject) -> None:
    terms = [
        data.draw(_grouped(tuple(data.draw(st.lists(_tensor, max_size=6)))))
        for _ in range(data.draw(st.integers(0, 3)))
    ]
    expression = Expression(tuple(terms))
    text = deparse(expression)
    assert parse(text) == expression
    assert deparse(parse(text)) == text


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_expressions_with_a_result_round_trip(data: st.DataObject) -> None:
    tensors = tuple(data.draw(st.lists(_tensor, min_size=1, max_size=5)))
    externals = Term(Fraction(1), tensors).externals()
    copies = data.draw(st.integers(1, 3))
    terms = tuple(
        Term(t.coefficient, t.tensors, groups=t.groups, declared=externals)
        for t in (data.draw(_grouped(tensors)) for _ in range(copies))
    )
    result = Tensor("R", externals)
    expression = Expression(terms, result=result)
    assert parse(deparse(expression)) == expression
