"""Index labels at the edges: deep protos, odd numbers, wrong argument types."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from hypothesis import given

from axisflow import Index
from axisflow.numerals import MAX_DIGITS
from axisflow.roles.index import IndexSyntaxError

from .test_index import indices


def nested_label(depth: int) -> str:
    return "a_1<" * depth + "i_1" + ">" * depth


@pytest.mark.parametrize("depth", [250, 3 * sys.getrecursionlimit()])
def test_deep_protos_parse_print_compare_and_rename(depth: int) -> None:
    text = nested_label(depth)
    index = Index.parse(text)
    assert index.full_label == text
    assert Index.parse(text) == index
    assert len(list(index.all_protos())) == depth
    assert index.sort_key() == Index.parse(text).sort_key()
    renamed = index.renamed({Index.parse("i_1"): Index.parse("i_2")})
    assert renamed.full_label == nested_label(depth).replace("i_1", "i_2")
    assert renamed != index
    assert sorted([renamed, index]) == [index, renamed]


def nested_sort_key(index: Index) -> tuple[object, ...]:
    """The order the flat sort key must reproduce: (key, ordinal, protos)."""
    ordinal = -1 if index.ordinal is None else index.ordinal
    return (index.base_key, ordinal, tuple(nested_sort_key(p) for p in index.protos))


@given(indices, indices)
def test_flat_sort_key_orders_like_the_nested_key(a: Index, b: Index) -> None:
    flat = (a.sort_key() > b.sort_key()) - (a.sort_key() < b.sort_key())
    nested = (nested_sort_key(a) > nested_sort_key(b)) - (
        nested_sort_key(a) < nested_sort_key(b)
    )
    assert flat == nested
    assert (flat == 0) == (a == b)


@pytest.mark.parametrize(
    ("text", "position", "expected"),
    [
        ("i_²", 2, "an ordinal (digits) after '_'"),
        ("i²", 1, "end of label"),
        ("i_" + "9" * (MAX_DIGITS + 1), 2, f"an ordinal of at most {MAX_DIGITS}"),
    ],
)
def test_odd_ordinals_are_located(text: str, position: int, expected: str) -> None:
    with pytest.raises(IndexSyntaxError) as caught:
        Index.parse(text)
    assert caught.value.position == position
    assert expected in caught.value.expected


def test_longest_ordinal_is_read() -> None:
    assert Index.parse("i_" + "9" * MAX_DIGITS).ordinal == int("9" * MAX_DIGITS)


# The API as a caller without a type checker sees it.
UntypedIndex: Any = Index


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: UntypedIndex("i", 1.5), "ordinal must be an int or None, got 1.5"),
        (lambda: UntypedIndex("i", True), "ordinal must be an int or None, got True"),
        (lambda: UntypedIndex(7), "base_key must be a str, got int"),
        (lambda: UntypedIndex("a", 1, "i_1"), "protos must be an iterable of Index"),
        (lambda: UntypedIndex("a", 1, [1]), "protos must be Index objects, got int"),
        (
            lambda: UntypedIndex.parse(None),
            "Index.parse: text must be a str, got NoneType",
        ),
        (lambda: UntypedIndex.parse(b"i_1"), "text must be a str, got bytes"),
    ],
)
def test_wrong_argument_types_are_refused(make, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TypeError, match=message.replace("(", r"\(")):
        make()
