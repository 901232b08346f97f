"""The text form of a scheme, line kind by line kind (``scheme/text.py``).

Every kind of line the module docstring lists is printed from a scheme made
by hand (so that each item, including those a traced body rarely makes, is
there), compared with the exact expected lines, parsed back and compared
item by item. Malformed lines are refused at the offending token with the
exact message, including wrong punctuation where other punctuation is
expected (a parser that accepted any would misread the next item).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import axisflow.shapes.scheme.text as text_module
from axisflow.shapes import (
    DimAtLeast,
    DimIneq,
    DimVar,
    Kind,
    Mark,
    Origin,
    Row,
    RowIneq,
    RowVar,
    Session,
    ShapeError,
    Side,
    Size,
    Terminal,
    TotalElems,
)
from axisflow.shapes.constraints import DimLinear, LinearKind, RowPrefix
from axisflow.shapes.scheme.data import (
    Anchor,
    CaptureInput,
    Fact,
    InternalRows,
    LooseVariable,
    Padding,
    Rows,
)
from axisflow.shapes.scheme.text import (
    SchemeText,
    SchemeTextError,
    VarName,
    parse_scheme_text,
    scheme_lines,
)


@dataclass
class Parts:
    """A scheme's printed parts, written by hand (``SchemeParts``)."""

    generalized: tuple[DimVar | RowVar, ...] = ()
    fixed: tuple[DimVar | RowVar, ...] = ()
    args: tuple[Rows, ...] = ()
    arg_names: tuple[str, ...] = ()
    results: tuple[Rows, ...] = ()
    result_names: tuple[str, ...] = ()
    anchors: tuple[Anchor, ...] = ()
    internal: tuple[InternalRows, ...] = ()
    facts: tuple[Fact, ...] = ()
    marks: tuple[tuple[RowVar, Mark], ...] = ()
    gens: tuple[tuple[RowVar, int], ...] = ()
    captures: tuple[CaptureInput, ...] = ()
    loose: tuple[LooseVariable, ...] = field(default_factory=tuple)
    paddings: tuple[Padding, ...] = ()


EMPTY = Row(())
PLAIN = Origin("op", "t")
SIDED = Origin("op", "t", ("u",), Side("x"), Side("y", Kind.INPUT))


def every_item() -> tuple[Parts, list[str]]:
    """A scheme with one item of every kind, and its exact text form."""
    s = Session()
    d1, d2 = s.fresh_dim_var(), s.fresh_dim_var()
    r1, r2, r3 = s.fresh_row_var(), s.fresh_row_var(), s.fresh_row_var()
    old_dim, old_row = s.fresh_dim_var(), s.fresh_row_var()
    x = s.leaf("x", "2")
    parts = Parts(
        generalized=(d1, r1, r2),
        fixed=(d2, r3),
        args=((Row((), r1), EMPTY, Row((d1,), r2)),),
        arg_names=("a",),
        results=((EMPTY, EMPTY, Row((Size(4), d2))),),
        result_names=("b",),
        anchors=(Anchor(x.shape, (EMPTY, EMPTY, Row((Size(2),)))),),
        internal=(InternalRows("h", (Row((), r3), EMPTY, EMPTY)),),
        facts=(
            TotalElems((Row((), r1), Row((d1, Size(3)), r2)), 12, PLAIN),
            Terminal(Row((), r1), False, SIDED),
            Terminal(Row((d1,), r2), True, PLAIN),
            DimAtLeast(d2, 3, Origin("op", "t", scheme="sc")),
            DimIneq(Size(2), d1, Origin("op", "t", application="site")),
            RowIneq(Row((), r1), Row((), r2), Origin("op", "t", ("u", "v"))),
        ),
        marks=((r2, Mark.SAFE_TO_GUESS),),
        gens=((r2, 2),),
        captures=(CaptureInput(s.dim_ref("j"), d1, PLAIN),),
        loose=(LooseVariable(old_dim, d2), LooseVariable(old_row, Row((d1,), r3))),
    )
    lines = [
        "generalized d1, r1, r2",
        "fixed d2, r3",
        "arg 0 'a' [...r1] | [] -> [...r2, d1]",
        "result 0 'b' [] | [] -> [4, d2]",
        "anchor 0 'x' [] | [] -> [2]",
        "internal 0 'h' [...r3] | [] -> []",
        "total [...r1], [...r2, d1, 3] = 12 ('op' 't')",
        "leaf [...r1] ('op' 't' of 'u' lhs 'x' rhs 'y'.input)",
        "param [...r2, d1] ('op' 't')",
        "at_least d2 3 ('op' 't' scheme 'sc')",
        "dim_ineq 2 <= d1 ('op' 't' at 'site')",
        "ineq [...r1] <= [...r2] ('op' 't' of 'u', 'v')",
        "mark safe_to_guess r2",
        "gen r2 2",
        "capture 'j' d1 ('op' 't')",
        f"loose d2 = old {old_dim!r}",
        f"loose [...r3, d1] = old {old_row!r}",
    ]
    return parts, lines


def test_every_kind_of_line_prints_exactly() -> None:
    parts, lines = every_item()
    assert scheme_lines(parts) == lines


def test_every_kind_of_line_parses_back_item_by_item() -> None:
    _, lines = every_item()
    text = parse_scheme_text(lines)
    d1, d2 = VarName("d", 1), VarName("d", 2)
    r1, r2, r3 = VarName("r", 1), VarName("r", 2), VarName("r", 3)
    none: tuple[tuple[()], None] = ((), None)
    assert text.generalized == [d1, r1, r2]
    assert text.fixed == [d2, r3]
    assert text.args == [("a", (((), r1), none, ((d1,), r2)))]
    assert text.results == [("b", (none, none, ((Size(4), d2), None)))]
    assert text.anchors == [("x", (none, none, ((Size(2),), None)))]
    assert text.internal == [("h", (((), r3), none, none))]
    kinds = [kind for kind, _, _ in text.facts]
    assert kinds == ["total", "leaf", "param", "at_least", "dim_ineq", "ineq"]
    payloads = [payload for _, payload, _ in text.facts]
    assert payloads == [
        ((((), r1), ((d1, Size(3)), r2)), 12),
        (((), r1),),
        (((d1,), r2),),
        (d2, 3),
        (Size(2), d1),
        (((), r1), ((), r2)),
    ]
    origins = [origin for _, _, origin in text.facts]
    assert [o.operands for o in origins] == [(), ("u",), (), (), (), ("u", "v")]
    leaf = origins[1]
    assert leaf.lhs is not None and leaf.lhs.tensor == "x" and leaf.lhs.kind is None
    assert leaf.rhs is not None and leaf.rhs.tensor == "y"
    assert leaf.rhs.kind is Kind.INPUT
    assert [(o.scheme, o.application) for o in origins] == [
        (None, None),
        (None, None),
        (None, None),
        ("sc", None),
        (None, "site"),
        (None, None),
    ]
    assert text.marks == [(r2, Mark.SAFE_TO_GUESS)]
    assert text.gens == [(r2, 2)]
    ((label, dim, origin, before),) = text.captures
    assert (label, dim, origin.operation, origin.tensor) == ("j", d1, "op", "t")
    assert before is None
    old_dim, old_row = (int(line.rsplit(" ", 1)[1][1:]) for line in lines[-2:])
    assert text.loose == [
        (d2, VarName("d", old_dim)),
        (((d1,), r3), VarName("r", old_row)),
    ]


def test_pending_equations_paddings_and_row_captures_print_and_parse_back() -> None:
    """The lines schemes gained for what they carry: a linear equation (with
    its kind), a row prefix, a total counted by a dim, a padded axis and a
    row variable's capture input."""
    s = Session()
    d1, d2 = s.fresh_dim_var(), s.fresh_dim_var()
    r1, r2 = s.fresh_row_var(), s.fresh_row_var()
    parts = Parts(
        generalized=(d1, d2, r1, r2),
        facts=(
            DimLinear(
                ((2, d1), (-1, d2)), 0, ("o", "2*o"), "2*o", PLAIN, LinearKind.STRIDE
            ),
            RowPrefix(Row((), r1), (d1, Size(3)), Row((), r2), PLAIN),
            TotalElems((Row((), r2),), d2, PLAIN),
        ),
        captures=(CaptureInput(s.dim_ref("rows"), Row((), r1), PLAIN),),
        paddings=(Padding("internal", 0, Kind.OUTPUT, -1, Size(3), PLAIN),),
    )
    lines = [
        "generalized d1, d2, r1, r2",
        "fixed (none)",
        "linear stride [2 d1 'o', -1 d2 '2*o'] 0 '2*o' ('op' 't')",
        "prefix [...r1] begins [d1, 3] rest [...r2] ('op' 't')",
        "total [...r2] = d2 ('op' 't')",
        "pad internal 0 output -1 3 ('op' 't')",
        "capture 'rows' [...r1] ('op' 't')",
    ]
    assert scheme_lines(parts) == lines
    text = parse_scheme_text(lines)
    v1, v2 = VarName("d", 1), VarName("d", 2)
    w1, w2 = VarName("r", 1), VarName("r", 2)
    assert [(kind, payload) for kind, payload, _ in text.facts] == [
        ("linear", (LinearKind.STRIDE, ((2, v1, "o"), (-1, v2, "2*o")), 0, "2*o")),
        ("prefix", (((), w1), (v1, Size(3)), ((), w2))),
        ("total", ((((), w2),), v2)),
    ]
    assert [(w, i, k, a, d) for w, i, k, a, d, _ in text.paddings] == [
        ("internal", 0, Kind.OUTPUT, -1, Size(3))
    ]
    assert [(label, term) for label, term, _, _ in text.captures] == [
        ("rows", ((), w1))
    ]


def test_a_capture_bound_before_a_pending_fact_prints_and_parses_its_place() -> None:
    """``before N``: the function bound the input after N of its pending
    facts and before the others (an application binds it there)."""
    s = Session()
    d1, r1 = s.fresh_dim_var(), s.fresh_row_var()
    parts = Parts(
        generalized=(d1, r1),
        facts=(
            TotalElems((Row((), r1),), 3, PLAIN),
            TotalElems((Row((), r1),), d1, PLAIN),
        ),
        captures=(CaptureInput(s.dim_ref("i"), Row((), r1), PLAIN, before=1),),
    )
    lines = scheme_lines(parts)
    assert lines[-1] == "capture 'i' [...r1] before 1 ('op' 't')"
    text = parse_scheme_text(lines)
    assert [before for _, _, _, before in text.captures] == [1]


@pytest.mark.parametrize(
    ("pending", "before"),
    [
        ("total [...r1] = 3 ('op' 't')", 0),
        ("prefix [...r1] begins [3] rest [...r2] ('op' 't')", 1),
    ],
)
def test_a_capture_bound_before_any_pending_fact_or_a_prefix_parses(
    pending: str, before: int
) -> None:
    """``before 0`` (bound before every pending fact) is a place, and a row
    prefix counts among the pending facts ``before`` numbers."""
    text = parse_scheme_text(
        [
            "generalized r1",
            "fixed (none)",
            "total [...r1] = 3 ('op' 't')",
            pending,
            f"capture 'i' [...r1] before {before} ('op' 't')",
        ]
    )
    assert [place for _, _, _, place in text.captures] == [before]


@pytest.mark.parametrize("before", [2, -1])
def test_a_capture_bound_before_a_pending_fact_the_scheme_lacks_is_refused(
    before: int,
) -> None:
    lines = [
        "generalized r1",
        "fixed (none)",
        "total [...r1] = 3 ('op' 't')",
        "linear stride [2 d1 'o'] 0 'o' ('op' 't')",
        f"capture 'i' [...r1] before {before} ('op' 't')",
    ]
    with pytest.raises(SchemeTextError) as info:
        parse_scheme_text(lines)
    column = 27  # the number
    assert str(info.value) == (
        f"malformed shape scheme line 5 at column {column}: a capture bound before "
        f"pending fact {before}: the scheme has 2 pending fact(s) (totals, linear "
        f'equations, row prefixes), counted from 0 in "{lines[-1]}"'
    )


def test_an_empty_linear_equation_and_a_padded_anchor_parse() -> None:
    text = parse_scheme_text(
        ["linear sum [] 0 'k' ('op' 't')", "pad anchor 2 batch 0 d1 ('op' 't')"]
    )
    assert [(kind, payload) for kind, payload, _ in text.facts] == [
        ("linear", (LinearKind.SUM, (), 0, "k"))
    ]
    assert [(w, i, k, a, d) for w, i, k, a, d, _ in text.paddings] == [
        ("anchor", 2, Kind.BATCH, 0, VarName("d", 1))
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "linear odd [1 d1 'a'] 0 'a' ('op' 't')",
            "malformed shape scheme line 1 at column 7: no kind of linear equation "
            "'odd' in \"linear odd [1 d1 'a'] 0 'a' ('op' 't')\"",
        ),
        (
            "prefix [...r1] begins [...r2] rest [] ('op' 't')",
            "malformed shape scheme line 1 at column 22: the axes before a row "
            'variable cannot hold a row variable in "prefix [...r1] begins [...r2] '
            "rest [] ('op' 't')\"",
        ),
        (
            "pad result 0 output -1 3 ('op' 't')",
            "malformed shape scheme line 1 at column 4: expected arg, internal or "
            "anchor, got 'result' in \"pad result 0 output -1 3 ('op' 't')\"",
        ),
        (
            "total [...r1] = r2 ('op' 't')",
            "malformed shape scheme line 1 at column 16: expected a dim variable, got "
            "'r2' in \"total [...r1] = r2 ('op' 't')\"",
        ),
        (
            "linear sum (1 d1 'a'] 0 'a' ('op' 't')",
            "malformed shape scheme line 1 at column 11: expected '[', got '(' in "
            "\"linear sum (1 d1 'a'] 0 'a' ('op' 't')\"",
        ),
        (
            "linear sum [(1 d1 'a'] 0 'a' ('op' 't')",
            "malformed shape scheme line 1 at column 12: expected int, got '(' in "
            "\"linear sum [(1 d1 'a'] 0 'a' ('op' 't')\"",
        ),
        (
            "linear sum [1 d1 'a'( 0 'a' ('op' 't')",
            "malformed shape scheme line 1 at column 20: expected ']', got '(' in "
            "\"linear sum [1 d1 'a'( 0 'a' ('op' 't')\"",
        ),
        (
            "prefix [...r1] starts [d1] rest [...r2] ('op' 't')",
            "malformed shape scheme line 1 at column 15: expected 'begins', got "
            "'starts' in \"prefix [...r1] starts [d1] rest [...r2] ('op' 't')\"",
        ),
        (
            "prefix [...r1] begins [d1] tail [...r2] ('op' 't')",
            "malformed shape scheme line 1 at column 27: expected 'rest', got 'tail' "
            "in \"prefix [...r1] begins [d1] tail [...r2] ('op' 't')\"",
        ),
        (
            "pad arg 0 middle -1 3 ('op' 't')",
            "malformed shape scheme line 1 at column 10: expected an axis kind (batch, "
            "input, output), got 'middle' in \"pad arg 0 middle -1 3 ('op' 't')\"",
        ),
    ],
)
def test_malformed_lines_of_the_new_kinds_are_refused_exactly(
    line: str, message: str
) -> None:
    with pytest.raises(SchemeTextError) as info:
        parse_scheme_text([line])
    assert str(info.value) == message


def test_a_variable_the_scheme_does_not_declare_is_refused_when_printing() -> None:
    s = Session()
    stray = s.fresh_row_var()
    parts = Parts(args=((Row((), stray), EMPTY, EMPTY),), arg_names=("a",))
    with pytest.raises(ShapeError) as info:
        scheme_lines(parts)
    assert str(info.value) == (
        f"the scheme mentions {stray!r}, which it does not declare"
    )


def test_blanks_after_the_last_item_of_a_line_are_ignored() -> None:
    text = parse_scheme_text(["generalized r1, d1   ", "fixed (none) ", "gen r1 3\t"])
    assert text.generalized == [VarName("r", 1), VarName("d", 1)]
    assert text.fixed == []
    assert text.gens == [(VarName("r", 1), 3)]


def test_a_variable_declared_twice_is_refused() -> None:
    with pytest.raises(SchemeTextError) as info:
        parse_scheme_text(["generalized r1, d1", "fixed r1"])
    assert str(info.value) == "malformed shape scheme: a variable is declared twice"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        # An origin opens with '(' and separates its operands with ','.
        ("leaf [] ['op' 't')", "at column 8: expected '(', got '['"),
        ("leaf [] ('op' 't' of 'u' | 'v')", "at column 25: expected ')', got '|'"),
        # After 'detail', 'scheme' and 'at' nothing but ')' may follow.
        ("leaf [] ('op' 't' bogus 'x')", "at column 18: expected ')', got 'bogus'"),
        ("leaf [] ('op' 't' at 'x' at 'y')", "at column 25: expected ')', got 'at'"),
        # A side's kind follows a '.'.
        ("leaf [] ('op' 't' lhs 'x' | input)", "at column 26: expected ')', got '|'"),
        # Rows open with '[', close with ']', and a '|' separates three of them.
        ("leaf (] ('op' 't')", "at column 5: expected '[', got '('"),
        ("leaf [, 2] ('op' 't')", "at column 6: expected word, got ','"),
        ("leaf [2, 3) ('op' 't')", "at column 10: expected ']', got ')'"),
        ("arg 0 'a' [] , [] -> []", "at column 13: expected '|', got ','"),
        ("arg 0 a [] | [] -> []", "at column 6: expected quoted, got 'a'"),
        ("result 1 'b' [] | [] -> []", "at column 7: expected result 0, got result 1"),
        ("anchor 2 'b' [] | [] -> []", "at column 7: expected anchor 0, got anchor 2"),
        (
            "internal 1 'b' [] | [] -> []",
            "at column 9: expected internal 0, got internal 1",
        ),
        # A total's rows are separated by ',' and end at '='.
        ("total [] | [] = 2 ('op' 't')", "at column 9: expected '=', got '|'"),
        ("total [], [] , 2 ('op' 't')", "at column 15: expected '[', got '2'"),
        ("total [] ; 2 ('op' 't')", "at column 9: unexpected character"),
        # Marks and template depths belong to row variables.
        ("mark safe_to_guess d1", "at column 19: expected a row variable, got 'd1'"),
        ("gen d1 2", "at column 4: expected a row variable, got 'd1'"),
        ("gen r1 x", "at column 7: expected int, got 'x'"),
        ("capture j d1 ('op' 't')", "at column 8: expected quoted, got 'j'"),
        (
            "capture 'j' r1 ('op' 't')",
            "at column 12: expected a dim variable, got 'r1'",
        ),
        ("loose d1 old r3", "at column 9: expected '=', got 'old'"),
        ("loose d1 = new r3", "at column 11: expected 'old', got 'new'"),
        ("loose [d1] : old r3", "at column 11: unexpected character"),
        ("loose d1 = old 3", "at column 15: expected word, got '3'"),
        ("loose d1 = old x3", "at column 15: expected a  variable, got 'x3'"),
        # The variable lists.
        ("fixed r1 | r2", "at column 9: unexpected text at the end of the line"),
        ("fixed [none]", "at column 6: expected word, got '['"),
        ("fixed (none]", "at column 11: expected ')', got ']'"),
    ],
)
def test_a_malformed_line_is_refused_at_the_offending_token(
    line: str, message: str
) -> None:
    with pytest.raises(SchemeTextError) as info:
        parse_scheme_text(["generalized r1, r2, d1", line])
    assert str(info.value) == f"malformed shape scheme line 2 {message} in {line!r}"


# Rows lines as the printer writes them, which the reader takes by one regular
# expression, and lines close to them it must leave to the tokenizer.
ROWS_LINES = [
    "arg 0 'x' [...r1] | [...r2] -> [...r3]",
    "arg 1 'it''s' [...r1, d1, 3] | [] -> [2@rgb, 1]",
    "result 0 'y' [d1, d2] | [...r2, 5@x_1] -> []",
    "anchor 0 'w' [] | [...r3] -> [16]",
    "internal 0 'a [b] | c' [...r1] | [] -> [01, d02]",
    "internal 1 '' [...r1] | [...r1] -> [...r1]",
    "internal 2 'a''' [1@b] | [] -> []",
]


def test_printed_rows_lines_read_as_the_tokenizer_reads_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The regular expression and the tokenizer read the same items."""
    fast = parse_scheme_text(ROWS_LINES)
    monkeypatch.setattr(text_module, "_fast_rows_line", lambda *_: False)
    assert fast == parse_scheme_text(ROWS_LINES)
    assert fast.internal[0] == (
        "a [b] | c",
        (((), VarName("r", 1)), ((), None), ((Size(1), VarName("d", 2)), None)),
    )
    assert fast.args[1][0] == "it's"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("arg 0 'x' [d1, ...r1] | [] -> []", "at column 15: expected word, got '...'"),
        ("arg 0 'x' [0] | [] -> []", "at column 11: a size must be positive"),
        ("arg 0 'x' [] | [0] -> []", "at column 16: a size must be positive"),
        ("arg 0 'x' [] | [] -> [0]", "at column 22: a size must be positive"),
        (
            "arg 0 'x' [r1] | [] -> []",
            "at column 11: expected a dim variable, got 'r1'",
        ),
        (
            "arg 0 'x' [...d1] | [] -> []",
            "at column 14: expected a row variable, got 'd1'",
        ),
        (
            "arg 0 'x' [d1 ] | [] -> [] x",
            "at column 27: unexpected text at the end of the line",
        ),
        (
            "arg 0 'x' [d1x] | [] -> []",
            "at column 11: expected a dim variable, got 'd1x'",
        ),
        ("arg 0 'x'' [] | [] -> []", "at column 9: unexpected character"),
    ],
)
def test_rows_lines_the_regular_expression_refuses_are_refused_by_the_tokenizer(
    line: str, message: str
) -> None:
    """Malformed rows lines close to printed ones get the tokenizer's errors
    (the messages the reader gave before it had the regular expression)."""
    with pytest.raises(SchemeTextError) as info:
        parse_scheme_text(["generalized r1, d1", line])
    assert str(info.value) == f"malformed shape scheme line 2 {message} in {line!r}"


def _read_rows_line(line: str, fast: bool) -> object:
    """The scheme text one rows line reads to, or the reader's message;
    through the regular expression where it takes the line, or through the
    tokenizer alone."""
    lines = ["generalized r1", line]
    try:
        if fast:
            return parse_scheme_text(lines)
        with mock.patch.object(text_module, "_fast_rows_line", lambda *_: False):
            return parse_scheme_text(lines)
    except SchemeTextError as error:
        return str(error)


@settings(max_examples=300, deadline=None)
@given(name=st.text(alphabet="'a [|]->", max_size=10))
def test_any_name_reads_alike_by_regular_expression_and_tokenizer(name: str) -> None:
    """Whatever the text between the first quote and ``[``, quotes unpaired
    included, the regular expression ends the name where the tokenizer
    does: both read the line alike or refuse it alike. A name the printer
    quotes is taken by the regular expression itself."""
    raw = f"arg 0 '{name}' [...r1] | [] -> [2]"
    assert _read_rows_line(raw, fast=True) == _read_rows_line(raw, fast=False)
    printed = f"arg 0 {text_module.quote(name)} [...r1] | [] -> [2]"
    read = SchemeText()
    assert text_module._fast_rows_line(printed, read, {})
    assert [item[0] for item in read.args] == [name]
