"""Scheme details a mutation review found unchecked: each test pins one exact
outcome (a text, an error message and its position, a refused input)."""

from __future__ import annotations

import pytest

from axisflow.shapes import Session
from axisflow.shapes.scheme.text import SchemeTextError, parse_scheme_text
from tests.shapes.test_schemes import mlp_layer


def layer_lines() -> list[str]:
    s = Session()
    _, layer = mlp_layer(s)
    return list(layer.to_lines())


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
