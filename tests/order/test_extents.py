"""Extents per space and per composite kind."""

from __future__ import annotations

import pytest

from axisflow.order import DEFAULT_EXTENT, ExtentError, Extents, parse_extents
from axisflow.roles.index import Index


def test_composite_kinds_parse_next_to_spaces() -> None:
    parsed = parse_extents("i=80, a=896 ,a<2>=40,a<1>=60,Κ=1682")
    assert parsed == {"i": 80, "a": 896, "a<2>": 40, "a<1>": 60, "Κ": 1682}
    extents = Extents.make(parsed)
    assert extents.spaces == {"i": 80, "a": 896, "Κ": 1682}
    assert extents.composites == {("a", 2): 40, ("a", 1): 60}


def test_a_composite_takes_its_kinds_extent_or_its_spaces() -> None:
    extents = Extents.make(parse_extents("i=80,a=896,a<2>=40"))
    assert extents.extent(Index.parse("a_1<i_1,i_2>")) == 40
    assert extents.extent(Index.parse("a_1<i_1>")) == 896  # no a<1> given
    assert extents.extent(Index.parse("a_3")) == 896
    assert extents.extent(Index.parse("i_6<i_1,i_5<i_2,i_1>>")) == 80
    assert extents.extent(Index.parse("μ̃_1")) == DEFAULT_EXTENT
    modes = map(Index.parse, ["a_1<i_1,i_2>", "i_1", "i_2"])
    assert extents.elements(modes) == 40 * 80 * 80


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("i=80,a", "malformed extent 'a'"),
        ("i=0", "extent of space 'i' must be positive"),
        ("a<1>=0", "extent of composite kind 'a<1>' must be positive"),
        ("a<0>=3", "composite kind 'a<0>' has no protos"),
        ("a<x>=3", "malformed composite kind 'a<x>'"),
        ("i=-2", "malformed extent 'i=-2'"),
        ("i=²", "malformed extent 'i=²'"),
    ],
)
def test_malformed_extents_are_named(text: str, message: str) -> None:
    with pytest.raises(ExtentError, match=message.replace("<", ".").replace(">", ".")):
        parse_extents(text)
