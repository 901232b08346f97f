"""The SeQuant parser and printer: real files, every construct, located errors."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow.roles.index import Index
from axisflow.sequant import (
    Expression,
    SequantSyntaxError,
    Tensor,
    Term,
    deparse,
    parse,
)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sequant"
FILES = sorted(EXAMPLES.glob("*.txt"))


def test_all_five_files_are_bundled() -> None:
    assert [f.name for f in FILES] == [
        "ccsd_doubles_residual_sf.txt",
        "csv_ccsd_doubles_residual_df.txt",
        "csv_ccsd_energy_df.txt",
        "csv_ccsd_singles_residual_df.txt",
        "legality_cross_iteration.txt",
    ]


def _independent_counts(text: str) -> tuple[int, int]:
    """Terms and tensors counted by regular expressions, not by the parser:
    a term starts at the beginning or at a '+'/'-' surrounded by blanks (a
    sign never appears inside a tensor), a tensor is a label before '{'."""
    terms = 1 + len(re.findall(r"\s[+-]\s", text))
    tensors = len(re.findall(r"[^\s{};,*]+\{", text))
    return terms, tensors


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_real_files_parse_with_independent_counts(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    expression = parse(text, path.name)
    terms, tensors = _independent_counts(text)
    assert len(expression.terms) == terms
    # the regular expression counts operators (Ŝ{...}) as tensors too
    assert sum(len(t.tensors) + len(t.operators) for t in expression.terms) == tensors
    assert parse(deparse(expression)) == expression


def test_real_file_counts_are_the_known_ones() -> None:
    counts = {
        path.name: (
            len(e.terms),
            sum(len(t.tensors) for t in e.terms),
        )
        for path in FILES
        for e in [parse(path.read_text(encoding="utf-8"))]
    }
    assert counts == {
        "ccsd_doubles_residual_sf.txt": (113, 341),
        "csv_ccsd_doubles_residual_df.txt": (55, 558),
        "csv_ccsd_energy_df.txt": (5, 25),
        "csv_ccsd_singles_residual_df.txt": (26, 188),
        "legality_cross_iteration.txt": (1, 2),
    }


def test_energy_terms_are_scalars_with_the_file_coefficients() -> None:
    expression = parse((EXAMPLES / "csv_ccsd_energy_df.txt").read_text("utf-8"))
    assert [t.coefficient for t in expression.terms] == [2, -1, 2, -1, 2]
    assert all(t.externals() == () for t in expression.terms)
    assert expression.space_keys() == ["a", "i", "Κ", "μ̃"]


def test_doubles_residual_externals() -> None:
    expression = parse(
        (EXAMPLES / "csv_ccsd_doubles_residual_df.txt").read_text("utf-8")
    )
    expected = {
        Index.parse(label) for label in ("i_1", "i_2", "a_1<i_1,i_2>", "a_2<i_1,i_2>")
    }
    assert all(set(t.externals()) == expected for t in expression.terms)


def test_tensor_structure_symmetry_and_labels() -> None:
    (term,) = parse("-1/2 g{μ̃_1152;i_3;Κ_2}:N-S-S * t{a_1<i_2,i_1>;i_1}").terms
    g, t = term.tensors
    assert term.coefficient == Fraction(-1, 2)
    assert g == Tensor(
        "g",
        (Index.parse("μ̃_1152"),),
        (Index.parse("i_3"),),
        (Index.parse("Κ_2"),),
        "N-S-S",
    )
    assert g.layout == (1, 1, 1)
    assert t.bra == (Index("a", 1, (Index("i", 1), Index("i", 2))),)
    assert t.symmetry is None
    assert str(g) == "g{μ̃_1152;i_3;Κ_2}:N-S-S"


@pytest.mark.parametrize(
    ("text", "coefficient"),
    [
        ("g{;i_1}", 1),
        ("+ g{;i_1}", 1),
        ("- g{;i_1}", -1),
        ("2 g{;i_1}", 2),
        ("-1 g{;i_1}", -1),
        ("1/2 * g{;i_1}", Fraction(1, 2)),
        ("0.25 g{;i_1} 4", 1),
        ("-3/4 2 g{;i_1}", Fraction(-3, 2)),
        ("1.5e1 g{;i_1}", 15),
    ],
)
def test_coefficients(text: str, coefficient: Fraction | int) -> None:
    (term,) = parse(text).terms
    assert term.coefficient == coefficient
    assert len(term.tensors) == 1


def test_signs_separate_terms_and_star_is_optional() -> None:
    expression = parse("A{;i_1} B{i_1;} - 2 C{;} + D{a;b}\n  // comment\n - 3")
    assert [t.coefficient for t in expression.terms] == [1, -2, 1, -3]
    assert [len(t.tensors) for t in expression.terms] == [2, 1, 1, 0]
    assert expression.terms[1].tensors[0] == Tensor("C")


def test_groups_may_be_omitted_and_labels_need_no_ordinal() -> None:
    (term,) = parse("X{a, b} * Y{ ; c ; d }").terms
    x, y = term.tensors
    assert x.bra == (Index("a"), Index("b")) and x.ket == () and x.aux == ()
    assert y.layout == (0, 1, 1)


def test_reserved_operators_are_not_factors() -> None:
    text = "1/4 Ŝ{i_1,i_2;a_1,a_2} * g{a_1,a_2;i_3,i_4} * t{i_3,i_4;i_1,i_2}"
    (term,) = parse(text).terms
    assert [t.label for t in term.tensors] == ["g", "t"]
    assert [t.label for t in term.operators] == ["Ŝ"]
    assert term.externals() == tuple(
        Index.parse(x) for x in ("i_1", "i_2", "a_1", "a_2")
    )
    for label in ("Â", "P̂", "S\u0302"):
        (other,) = parse(f"{label}{{i_1;a_1}} * t{{a_1;i_1}}").terms
        assert other.tensors == (Tensor("t", (Index("a", 1),), (Index("i", 1),)),)
        assert len(other.operators) == 1
    (plain,) = parse("s{i_1;i_2} * δ{i_2;i_3}").terms
    assert [t.label for t in plain.tensors] == ["s", "δ"]


def test_proto_indices_are_not_appearances() -> None:
    (term,) = parse("C{a_1<i_1>;μ_1} * D{μ_1;a_1<i_1>} * f{i_1;i_2}").terms
    assert term.externals() == (Index("i", 1), Index("i", 2))


def test_empty_input_is_an_empty_sum() -> None:
    assert parse("  \n // nothing\n").terms == ()


ERRORS = [
    ("2 g{i_1", 1, 8, "',', ';' or '}' after an index", "end of input"),
    ("g{i_1;;;}", 1, 8, "',' or '}' (a tensor has at most 3 index groups)", "';'"),
    ("g{i_1,}", 1, 7, "an index label after ','", "'}'"),
    ("g{i_1;}\n + (a)", 2, 6, "'{' after tensor label 'a'", "')'"),
    (
        "(g{;i_1}\n * (f{;}",
        2,
        9,
        "'*', another factor or ')' (2 '(' are still open)",
        "end of input",
    ),
    (
        "(g{;i_1} - f{;})",
        1,
        10,
        "'*', another factor or ')' (one '(' is still open)",
        "'-'",
    ),
    ("g{;} * ()", 1, 9, "a number, a tensor or '(' after '('", "')'"),
    ("g{;}) * f{;}", 1, 5, "'+', '-', '*', another factor or end of input", "')'"),
    ("g{;i_1}:x", 1, 9, "an upper-case symmetry letter", "'x'"),
    ("2 *\n", 1, 4, "a number, a tensor or '(' after '*'", "end of input"),
    ("g i_1", 1, 3, "'{' after tensor label 'g'", "'i'"),
    ("1/0 g{}", 1, 3, "a non-zero denominator", "'0'"),
    ("g{i_1 i_2}", 1, 7, "',', ';' or '}' after an index", "'i'"),
    ("g{;i_1} -", 1, 10, "a number, a tensor or '('", "end of input"),
    ("a{b_}", 1, 5, "an ordinal (digits) after '_'", "'}'"),
    ("a{;b<c_1;>}", 1, 9, "',' or '>' in a proto-index list", "';'"),
    ("a{;b} }", 1, 7, "'+', '-', '*', another factor or end of input", "'}'"),
    ("t{μ̃_1;i_1}\n\n  * g{;1}", 3, 8, "an index label", "'1'"),
    ("- - g{;}", 1, 3, "a number, a tensor or '('", "'-'"),
    (
        "R{i_1;} = A{i_1;} = B{}",
        1,
        19,
        "'+', '-', '*', another factor or end of input",
        "'='",
    ),
]


@pytest.mark.parametrize(("text", "line", "column", "expected", "found"), ERRORS)
def test_errors_name_line_column_and_expectation(
    text: str, line: int, column: int, expected: str, found: str
) -> None:
    with pytest.raises(SequantSyntaxError) as info:
        parse(text, "eq.txt")
    error = info.value
    assert (error.line, error.column) == (line, column)
    assert error.expected.startswith(expected)
    assert error.found == found
    assert str(error).startswith(f"eq.txt:{line}:{column}: expected {expected}")


# --------------------------------------------------------------------------
# Round trip on generated expressions
# --------------------------------------------------------------------------

_keys = st.sampled_from(["i", "a", "Κ", "μ̃", "p", "i↑"])
_plain = st.builds(Index, _keys, st.one_of(st.none(), st.integers(0, 30)))
_index = st.one_of(
    _plain,
    st.builds(
        Index,
        _keys,
        st.integers(1, 9),
        st.lists(_plain, min_size=1, max_size=2, unique=True),
    ),
)
_group = st.lists(_index, max_size=3).map(tuple)
_tensor = st.builds(
    Tensor,
    st.sampled_from(["g", "t", "C", "s", "δ", "t2", "Ŝ"]),
    _group,
    _group,
    _group,
    st.one_of(st.none(), st.sampled_from(["N", "N-S", "N-S-S", "A-C-N"])),
)
_coefficient = st.fractions(max_denominator=12).filter(lambda f: abs(f) < 1000)


@st.composite
def _terms(draw: st.DrawFn) -> Term:
    tensors = draw(st.lists(_tensor, max_size=4))
    coefficient = draw(_coefficient)
    if not tensors and coefficient == 0:
        coefficient = Fraction(1)
    return Term(
        coefficient,
        tuple(t for t in tensors if not t.is_operator),
        tuple(t for t in tensors if t.is_operator),
    )


@settings(max_examples=150, deadline=None)
@given(st.lists(_terms(), max_size=4).map(lambda ts: Expression(tuple(ts))))
def test_deparse_then_parse_is_identity(expression: Expression) -> None:
    assert parse(deparse(expression)) == expression
