"""Scheme details a mutation review found unchecked: each test pins one exact
outcome (a text that must survive a round trip, an error message and its
position, where a traced shape stands in the scheme)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from axisflow.shapes import Kind, Scheme, Session, Size, Tensor, scheme
from axisflow.shapes.scheme.read import build_scheme
from axisflow.shapes.scheme.text import SchemeTextError, parse_scheme_text
from tests.shapes.test_schemes import mlp_layer, traced


def layer_lines() -> list[str]:
    s = Session()
    _, layer = mlp_layer(s)
    return list(layer.to_lines())


def rebuilt_lines(sc: Scheme) -> list[str]:
    """The text form of the scheme rebuilt from its own text form."""
    s = sc.session
    rebuilt = build_scheme(
        parse_scheme_text(sc.to_lines()),
        session=s,
        label=sc.label,
        anchors=[a.shape for a in sc.anchors],
        ref=s.dim_ref,
    )
    return rebuilt.to_lines()


# ----------------------------------------------------------- round trips


def test_sizes_with_a_basis_dim_facts_and_dim_variables_round_trip() -> None:
    s = Session()
    w = s.param("w", "3->4@hid")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        h = s.einsum("h", "...i=>...i", xs[0])
        return [s.pointwise("y", s.compose("z", w, h), s.leaf("c", "4@hid"))]

    sc = traced(s, body, label="lay")
    lines = sc.to_lines()
    assert "anchor 0 'w' [] | [3] -> [4@hid]" in lines
    assert "arg 0 'a0' [] | [] -> [d1]" in lines
    assert (
        "dim_ineq 3 <= d1 ('compose' 'z' of 'w', 'h' lhs 'w'.input rhs 'h'.output)"
        in lines
    )
    assert rebuilt_lines(sc) == lines


def test_origins_with_a_scheme_and_an_application_round_trip() -> None:
    s = Session()
    _, layer = mlp_layer(s)

    def two_layers(xs: Sequence[Tensor]) -> list[Tensor]:
        hidden = s.fresh("hidden")
        scheme.instantiate(layer, application="inner", args=[xs[0]], results=[hidden])
        return [s.pointwise("out", hidden)]

    outer = traced(s, two_layers, label="outer")
    lines = outer.to_lines()
    assert (
        "ineq [...r10] <= [...r1] ('compose' 'h' of 'w', 'a0' lhs 'h'.batch rhs "
        "'a0'.batch scheme 'layer' at 'inner')"
    ) in lines
    assert rebuilt_lines(outer) == lines


def test_details_minima_and_totals_round_trip() -> None:
    s = Session()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        s.total_elems(xs[0], 12, kinds=[Kind.OUTPUT])
        return [s.einsum("y", "...,i,2=>...,i", xs[0])]

    sc = traced(s, body, label="lay")
    lines = sc.to_lines()
    assert (
        "at_least d2 3 ('einsum' 'y' of 'a0' detail 'spec ''...,i,2=>...,i''')" in lines
    )
    assert (
        "total [...r1, d1, d2] = 12 ('total_elems' 'a0' detail '12 elements')" in lines
    )
    assert rebuilt_lines(sc) == lines


def test_the_parsed_text_holds_every_part_of_an_origin() -> None:
    text = parse_scheme_text(
        [
            "generalized r1, r2",
            "fixed (none)",
            "ineq [...r1] <= [...r2, 2@b, 1] ('op' 't' of 'u', 'v' lhs 'l' rhs "
            "'r'.input detail 'it''s' scheme 'sc' at 'site')",
        ]
    )
    ((kind, payload, origin),) = text.facts
    first, second = text.generalized
    assert kind == "ineq"
    assert payload == (((), first), ((Size(2, "b"), Size(1)), second))
    assert origin.operation == "op" and origin.tensor == "t"
    assert origin.operands == ("u", "v")
    assert str(origin.lhs) == "l" and origin.lhs is not None and origin.lhs.kind is None
    assert str(origin.rhs) == "r.input"
    assert origin.detail == "it's"
    assert origin.scheme == "sc" and origin.application == "site"


# ----------------------------------------------------------- parse errors


def test_a_malformed_scheme_line_names_its_number_and_column() -> None:
    lines = layer_lines()
    lines[2] = lines[2] + " ?"
    with pytest.raises(SchemeTextError) as info:
        parse_scheme_text(lines)
    column = len(lines[2]) - 1
    assert str(info.value) == (
        f"malformed shape scheme line 3 at column {column}: unexpected character "
        f"in {lines[2]!r}"
    )


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (
            "ineq [...r1] <= [0] ('a' 'b')",
            "at column 17: a size must be positive",
        ),
        (
            "ineq [...r1] <= [...r2] ('a' 'b' lhs 'x'.sideways)",
            "at column 41: expected an axis kind (batch, input, output), got 'sideways'",
        ),
        ("arg 1 'x' [] | [] -> []", "at column 4: expected arg 0, got arg 1"),
        ("fixed (all)", "at column 7: expected '(none)'"),
        (
            "ineq [...d1] <= [] ('a' 'b')",
            "at column 9: expected a row variable, got 'd1'",
        ),
        ("ineq [r1] <= [] ('a' 'b')", "at column 6: expected a dim variable, got 'r1'"),
        (
            "ineq [...r1] <= [...r2] ('a' 'b'",
            "at column 32: expected ')', got the end of the line",
        ),
        (
            "ineq [...r1] <= [...r2] ('a' 'b') x",
            "at column 34: unexpected text at the end of the line",
        ),
        ("frobnicate r1", "at column 0: unknown item 'frobnicate'"),
        ("mark shiny r1", "at column 5: no policy mark 'shiny'"),
    ],
)
def test_a_malformed_item_is_refused_at_the_offending_token(
    line: str, message: str
) -> None:
    with pytest.raises(SchemeTextError) as info:
        parse_scheme_text(["generalized r1, r2, d1", "fixed (none)", line])
    assert str(info.value) == (f"malformed shape scheme line 3 {message} in {line!r}")


# ---------------------------------------------------------------- locate


def test_a_traced_shape_is_located_by_its_place_in_the_scheme() -> None:
    s = Session()
    w = s.param("w", "...->4")
    b = s.param("b", "4")
    seen: dict[str, Tensor] = {}

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        seen["h"] = s.compose("h", w, xs[0])
        seen["y"] = s.pointwise("y", seen["h"], b)
        seen["x"] = xs[0]
        return [seen["y"]]

    sc = traced(s, body, label="layer")
    assert sc.locate(seen["x"].shape) == ("arg", 0)
    assert sc.locate(seen["h"].shape) == ("internal", 0)
    # y is both the result and an internal shape: the first place that
    # applies in the order arg, internal, anchor, result wins.
    assert sc.locate(seen["y"].shape) == ("internal", 1)
    assert sc.locate(w.shape) == ("anchor", 0)
    assert sc.locate(b.shape) == ("anchor", 1)
    assert sc.locate(s.leaf("other", "2").shape) is None
    # Asking again reads the same table.
    assert sc.locate(seen["h"].shape) == ("internal", 0)


def test_an_application_s_internal_shapes_name_their_rows_as_the_body_s_did() -> None:
    """Re-running the body would make its tensors under the same names: the
    application's copies name their rows (in origins) as the traced shapes."""
    s = Session()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        hidden = s.einsum("h", "...|i=>...|i", xs[0])
        return [s.pointwise("z", hidden, s.leaf("c", "1"))]

    sc = traced(s, body)
    applied = scheme.instantiate(
        sc, application="site", args=[s.leaf("x", "2|3")], results=[s.fresh("y")]
    )
    assert [shape.name for shape in applied.internal] == ["h", "c", "z"]
    assert [[shape.side(kind) for kind in Kind] for shape in applied.internal] == [
        [shape.side(kind) for kind in Kind] for shape in sc.traced_internal
    ]


# ------------------------------------- old variables the body solves


def test_an_old_dim_the_body_solves_stays_open_in_the_scheme() -> None:
    # w's second output axis is open before the trace; the body's pointwise
    # with a [3, 5] constant solves it inside the window. The scheme reads it
    # as it was when the trace began: an open (fixed) variable of the anchor.
    s = Session()
    w = s.param("w")
    s.einsum("q", "i;ij=>j", s.leaf("x0", "3"), w)

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        return [s.pointwise("y", w, s.leaf("c", "3,5"), xs[0])]

    sc = traced(s, body, label="lay")
    lines = sc.to_lines()
    assert "fixed d1" in lines
    assert "anchor 0 'w' [] | [] -> [3, d1]" in lines
    y = s.fresh("y")
    scheme.instantiate(sc, application="site", args=[s.leaf("x1", "5")], results=[y])
    s.close()
    assert w.shape.dims() == ((), (), (3, 5))
    assert y.shape.dims() == ((), (), (3, 5))


def test_an_old_dim_solved_before_the_trace_is_its_size_in_the_scheme() -> None:
    s = Session()
    w = s.param("w")
    s.einsum("q", "i;ij=>j", s.leaf("x0", "3"), w)
    s.einsum("p", "ij;ij=>ij", w, s.leaf("c", "3,5"))

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        return [s.pointwise("y", w, xs[0])]

    sc = traced(s, body, label="lay")
    assert "anchor 0 'w' [] | [] -> [3, 5]" in sc.to_lines()
