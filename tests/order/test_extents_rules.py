"""Extents rule by rule: every refusal with its exact message, the edges of
the accepted syntax, and equality of extent tables."""

from __future__ import annotations

import pytest

from axisflow.order import (
    DEFAULT_EXTENT,
    ExtentError,
    Extents,
    parse_extents,
    split_kind,
)

SYNTAX = "expected KEY=POSITIVE_INTEGER or KEY<PROTOS>=POSITIVE_INTEGER"
I64_MAX = 2**63 - 1


def test_empty_items_are_skipped_anywhere() -> None:
    assert parse_extents("i=3,,a=4, ,") == {"i": 3, "a": 4}
    assert parse_extents("") == {}
    assert parse_extents("i=1") == {"i": 1}  # 1 is positive
    assert parse_extents(f"i={I64_MAX}") == {"i": I64_MAX}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("i=3=4", f"malformed extent 'i=3=4': {SYNTAX}"),
        ("=3", f"malformed extent '=3': {SYNTAX}"),
        ("i=", f"malformed extent 'i=': {SYNTAX}"),
        ("i 3", f"malformed extent 'i 3': {SYNTAX}"),
        ("i=x", f"malformed extent 'i=x': {SYNTAX}"),
        (" i=0 ", "extent of space 'i' must be positive, got 0"),
        ("a<1>=00", "extent of composite kind 'a<1>' must be positive, got 0"),
        (
            f"i={I64_MAX + 1}",
            f"malformed extent 'i={I64_MAX + 1}': extent of space 'i' "
            f"'{I64_MAX + 1}' exceeds the maximum {I64_MAX}",
        ),
        (
            f"a<2>={I64_MAX + 1}",
            f"malformed extent 'a<2>={I64_MAX + 1}': extent of composite kind "
            f"'a<2>' '{I64_MAX + 1}' exceeds the maximum {I64_MAX}",
        ),
    ],
)
def test_malformed_extents_are_refused_with_the_exact_reason(
    text: str, message: str
) -> None:
    with pytest.raises(ExtentError) as caught:
        parse_extents(text)
    assert str(caught.value) == message


def test_a_long_numeral_is_shown_cut() -> None:
    with pytest.raises(ExtentError) as caught:
        parse_extents("i=" + "9" * 50)
    # The item cut at 40 characters, the numeral at 24 digits.
    assert str(caught.value) == (
        "malformed extent 'i="
        + "9" * 38
        + "': extent of space 'i' '"
        + "9" * 24
        + f"…' exceeds the maximum {I64_MAX}"
    )


def test_composite_kinds() -> None:
    assert split_kind("a") == ("a", None)
    assert split_kind("a<2>") == ("a", 2)
    assert split_kind("μ̃ < 12 >") == ("μ̃", 12)
    for key in ("a<2", "a2>", "<2>", "a<>", "a<-1>", "a<x>"):
        with pytest.raises(ExtentError) as caught:
            split_kind(key)
        assert str(caught.value) == (
            f"malformed composite kind {key!r}: expected KEY<NUMBER OF PROTOS>"
        )
    with pytest.raises(ExtentError) as caught:
        split_kind("a<0>")
    assert str(caught.value) == (
        "composite kind 'a<0>' has no protos: a composite has at least one"
    )


def test_extent_tables_compare_by_content() -> None:
    base = Extents.make({"i": 2, "a<1>": 3})
    assert base == Extents({"i": 2}, {("a", 1): 3})
    assert hash(base) == hash(Extents({"i": 2}, {("a", 1): 3}))
    assert base != Extents({"i": 3}, {("a", 1): 3})
    assert base != Extents({"i": 2}, {("a", 1): 4})
    assert base != Extents({"i": 2}, {("a", 1): 3}, default=5)
    assert base != {"i": 2}
    assert Extents.make({}, default=7).space("q") == 7
    assert Extents().space("q") == DEFAULT_EXTENT
    assert base.is_default("a") and not base.is_default("i")
    assert base.composite("a", 1) == 3 and base.composite("a", 2) is None
    assert repr(base) == "Extents({'i': 2}, {('a', 1): 3}, 4)"
