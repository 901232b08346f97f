"""Spec syntax: shape specs for leaves and parameters, einsum specs."""

from __future__ import annotations

import pytest

from axisflow.shapes import Session, Size, SpecError
from axisflow.shapes.spec import (
    FixedIndex,
    Label,
    LabelRow,
    Placeholder,
    RowSpec,
    parse_einsum_spec,
    parse_shape_spec,
)


def sizes(*ns: int) -> tuple[Size, ...]:
    return tuple(Size(n) for n in ns)


@pytest.mark.parametrize(
    ("spec", "batch", "input_", "output"),
    [
        (
            "8|3,5->4",
            RowSpec(sizes(8), False),
            RowSpec(sizes(3, 5), False),
            RowSpec(sizes(4), False),
        ),
        ("->4", RowSpec((), False), RowSpec((), False), RowSpec(sizes(4), False)),
        ("4", RowSpec((), False), RowSpec((), False), RowSpec(sizes(4), False)),
        ("...|3->...", RowSpec((), True), RowSpec(sizes(3), False), RowSpec((), True)),
        ("", RowSpec((), False), RowSpec((), False), RowSpec((), False)),
        ("8|4", RowSpec(sizes(8), False), RowSpec((), False), RowSpec(sizes(4), False)),
        (
            " 8 | 3 , 5 -> 4 ",
            RowSpec(sizes(8), False),
            RowSpec(sizes(3, 5), False),
            RowSpec(sizes(4), False),
        ),
        (
            "...,2|->...,1",
            RowSpec(sizes(2), True),
            RowSpec((), False),
            RowSpec(sizes(1), True),
        ),
        (
            "3@rgb",
            RowSpec((), False),
            RowSpec((), False),
            RowSpec((Size(3, "rgb"),), False),
        ),
    ],
)
def test_shape_specs(
    spec: str, batch: RowSpec, input_: RowSpec, output: RowSpec
) -> None:
    parsed = parse_shape_spec(spec)
    assert (parsed.batch, parsed.input, parsed.output) == (batch, input_, output)


@pytest.mark.parametrize(
    ("spec", "position", "reason"),
    [
        ("8|3|4", 3, "more than one '|'"),
        ("3->4->5", 4, "more than one '->'"),
        ("4->3|2", 4, "the batch row ('|') must come before '->'"),
        ("3,,4", 2, "empty item in a row"),
        ("3,", 2, "empty item in a row"),
        (
            "8|x->4",
            2,
            "expected a size (a positive integer, optionally @basis) or '...', got 'x'",
        ),
        ("0", 0, "a size must be positive, got 0"),
        ("...,3,...", 6, "a row has at most one '...'"),
        ("-1", 0, "expected a size"),
        ("3@", 0, "expected a size"),
    ],
)
def test_malformed_shape_specs_name_spec_and_position(
    spec: str, position: int, reason: str
) -> None:
    with pytest.raises(SpecError) as info:
        parse_shape_spec(spec)
    assert info.value.position == position
    assert str(info.value).startswith(
        f"malformed shape spec {spec!r} at position {position}: "
    )
    assert reason in str(info.value)


def test_einsum_spec_rows() -> None:
    parsed = parse_einsum_spec("ij;jk=>ik")
    assert [op.output for op in parsed.operands] == [
        LabelRow((Label("i"), Label("j")), None),
        LabelRow((Label("j"), Label("k")), None),
    ]
    assert parsed.result.output == LabelRow((Label("i"), Label("k")), None)
    assert parsed.result.batch == LabelRow((), None)


def test_einsum_spec_comma_rows_and_row_variables() -> None:
    parsed = parse_einsum_spec("...|h,d->...=>...|h")
    (operand,) = parsed.operands
    assert operand.batch == LabelRow((), "")
    assert operand.input == LabelRow((Label("h"), Label("d")), None)
    assert operand.output == LabelRow((), "")
    assert parsed.result.output == LabelRow((Label("h"),), None)


def test_einsum_spec_named_row_variable_placeholder_and_fixed_index() -> None:
    parsed = parse_einsum_spec("..rest..|_2i=>i")
    (operand,) = parsed.operands
    assert operand.batch == LabelRow((), "rest")
    assert operand.output == LabelRow((Placeholder(), FixedIndex(2), Label("i")), None)
    multi = parse_einsum_spec("head, 12, dim=>dim")
    assert multi.operands[0].output == LabelRow(
        (Label("head"), FixedIndex(12), Label("dim")), None
    )


@pytest.mark.parametrize(
    ("spec", "position", "reason"),
    [
        ("ij;jk", 5, "expected '=>' before the result"),
        ("i=>j=>k", 4, "more than one '=>'"),
        ("i.j=>i", 1, "expected an axis label, got '.'"),
        ("i...j...=>i", 5, "a row has at most one row variable"),
        ("h,,d=>h", 2, "empty item in a row"),
        ("..x=>x", 0, "expected '...' or '..name..'"),
        ("i|j|k=>i", 3, "more than one '|'"),
        ("i;j=>h-d", 6, "expected an axis label, got '-'"),
    ],
)
def test_malformed_einsum_specs_name_spec_and_position(
    spec: str, position: int, reason: str
) -> None:
    with pytest.raises(SpecError) as info:
        parse_einsum_spec(spec)
    assert info.value.position == position
    assert str(info.value).startswith(
        f"malformed einsum spec {spec!r} at position {position}: "
    )
    assert reason in str(info.value)


def test_malformed_spec_in_session_is_refused_before_anything_is_written() -> None:
    s = Session()
    b = s.leaf("b", "2")
    before = s.state()
    with pytest.raises(
        SpecError, match=r"malformed shape spec '8\|x->4' at position 2"
    ):
        s.leaf("x", "8|x->4")
    with pytest.raises(SpecError, match=r"malformed einsum spec 'ij;jk' at position 5"):
        s.einsum("y", "ij;jk", b)
    assert s.state() == before
    assert not s.tainted
