"""Rebuilding a scheme from its text form (``scheme/read.py``), item by item.

Round trips through ``build_scheme`` for the items the first round-trip tests
did not have (leaf and param facts, loose dims and rows, capture inputs),
the rebuilt scheme's label and closing count, and every refusal with its
exact message.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from axisflow.shapes import (
    DimEq,
    DimVar,
    Origin,
    Row,
    RowEq,
    RowVar,
    Scheme,
    Session,
    Tensor,
    Terminal,
)
from axisflow.shapes.scheme.read import build_scheme
from axisflow.shapes.scheme.text import SchemeTextError, parse_scheme_text
from tests.shapes.test_schemes import traced


def rebuilt(sc: Scheme, *, old: bool = False) -> Scheme:
    s = sc.session
    return build_scheme(
        parse_scheme_text(sc.to_lines()),
        session=s,
        label=sc.label,
        anchors=[a.shape for a in sc.anchors],
        ref=s.dim_ref,
        old_dim=DimVar if old else None,
        old_row=RowVar if old else None,
    )


def test_leaf_and_param_facts_round_trip() -> None:
    s = Session()
    sc = traced(s, lambda xs: [s.pointwise("y", xs[0], s.leaf("c"), s.param("p"))])
    lines = sc.to_lines()
    words = [line.split(" ")[0] for line in lines]
    assert words.count("leaf") >= 1 and words.count("param") >= 1
    again = rebuilt(sc)
    assert again.to_lines() == lines
    terminals = [f for f in again.facts if isinstance(f, Terminal)]
    assert [t.is_param for t in terminals] == [
        word == "param" for word in words if word in ("leaf", "param")
    ]
    assert {t.origin.tensor for t in terminals} == {"c", "p"}


def test_loose_dims_and_rows_round_trip_in_their_session() -> None:
    s = Session()
    first, second = s.fresh_dim_var(), s.fresh_dim_var()
    row_a, row_b = s.fresh_row_var(), s.fresh_row_var()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        s.add(DimEq(first, second, Origin("olds", "ab")))
        s.add(RowEq(Row((), row_a), Row((), row_b), Origin("olds", "rows")))
        return [xs[0]]

    sc = traced(s, body)
    lines = sc.to_lines()
    assert sum(line.startswith("loose") for line in lines) == 4
    again = rebuilt(sc, old=True)
    assert again.to_lines() == lines
    assert [item.old for item in again.loose] == [item.old for item in sc.loose]


def test_a_capture_input_round_trips() -> None:
    s = Session()
    ref = s.dim_ref("h")
    sc = traced(s, lambda xs: [s.einsum("y", "h=>h", xs[0], capture_dims=[ref])])
    again = rebuilt(sc)
    assert again.to_lines() == sc.to_lines()
    ((capture,),) = [again.captures]
    assert capture.ref.label == "h"
    assert capture.origin.operation == "einsum"


def test_a_capture_bound_before_a_pending_total_round_trips_its_place() -> None:
    """The body binds the row capture, then adds a total: the capture input
    is bound before that pending fact (``before 0``), in the rebuilt scheme
    too."""
    s = Session()
    ref = s.dim_ref("r")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        y = s.einsum("y", "..r..|j=>..r..|j", xs[0], capture_dims=[ref])
        s.total_elems(y, 12)
        return [y]

    sc = traced(s, body)
    assert [capture.before for capture in sc.captures] == [0]
    again = rebuilt(sc)
    assert [capture.before for capture in again.captures] == [0]
    assert again.to_lines() == sc.to_lines()


def test_the_rebuilt_scheme_has_its_label_and_the_sessions_closing_count() -> None:
    s = Session()
    s.leaf("x", "2")
    s.close()
    sc = traced(s, lambda xs: [s.pointwise("y", xs[0])], label="lay")
    again = rebuilt(sc)
    assert (again.label, again.closings) == ("lay", 1)


def test_loose_variables_need_the_session_they_were_traced_in() -> None:
    s = Session()
    first, second = s.fresh_dim_var(), s.fresh_dim_var()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        s.add(DimEq(first, second, Origin("olds", "ab")))
        return [xs[0]]

    sc = traced(s, body, label="lay")
    with pytest.raises(SchemeTextError) as info:
        rebuilt(sc)
    assert str(info.value) == (
        f"the shape scheme lay depends on the open variable d{first.id} of the "
        f"session it was traced in; it cannot be rebuilt in another session"
    )


def test_the_anchors_given_must_match_the_scheme() -> None:
    s = Session()
    w = s.param("w", "3")
    sc = traced(s, lambda xs: [s.pointwise("y", xs[0], w)], label="lay")
    with pytest.raises(SchemeTextError) as info:
        build_scheme(
            parse_scheme_text(sc.to_lines()),
            session=s,
            label="lay",
            anchors=[],
            ref=s.dim_ref,
        )
    assert str(info.value) == (
        "the shape scheme lay has 1 anchor(s) but 0 shape(s) were given for them"
    )


def test_an_undeclared_variable_is_refused() -> None:
    s = Session()
    with pytest.raises(SchemeTextError) as info:
        build_scheme(
            parse_scheme_text(
                ["generalized r1", "fixed (none)", "arg 0 'a' [...r1] | [] -> [d4]"]
            ),
            session=s,
            label="lay",
            anchors=[],
            ref=s.dim_ref,
        )
    assert str(info.value) == "the shape scheme lay uses d4, which it does not declare"


def test_loose_variables_need_both_lookups_of_the_old_session() -> None:
    s = Session()
    first, second = s.fresh_dim_var(), s.fresh_dim_var()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        s.add(DimEq(first, second, Origin("olds", "ab")))
        return [xs[0]]

    sc = traced(s, body, label="lay")
    with pytest.raises(SchemeTextError, match="depends on the open variable"):
        build_scheme(
            parse_scheme_text(sc.to_lines()),
            session=s,
            label="lay",
            anchors=[],
            ref=s.dim_ref,
            old_dim=DimVar,
        )
