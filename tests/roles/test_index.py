"""Index labels: parsing, printing, identity, errors."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from axisflow import Index
from axisflow.roles.index import IndexSyntaxError


@pytest.mark.parametrize(
    ("text", "key", "ordinal", "label"),
    [
        ("i_1", "i", 1, "i_1"),
        ("i", "i", None, "i"),
        ("Κ_2", "Κ", 2, "Κ_2"),
        ("μ̃_1152", "μ̃", 1152, "μ̃_1152"),
        ("i↑_1", "i↑", 1, "i↑_1"),
        ("a_10", "a", 10, "a_10"),
    ],
)
def test_plain_labels(text: str, key: str, ordinal: int | None, label: str) -> None:
    index = Index.parse(text)
    assert index.base_key == key
    assert index.ordinal == ordinal
    assert index.protos == ()
    assert index.label == label
    assert index.full_label == label
    assert str(index) == label


def test_proto_labels_are_sorted_and_printed() -> None:
    index = Index.parse("a_1<i_2,i_1>")
    assert index.base_key == "a"
    assert index.ordinal == 1
    assert index.protos == (Index.parse("i_1"), Index.parse("i_2"))
    assert index.label == "a_1"
    assert index.full_label == "a_1<i_1,i_2>"
    assert index == Index.parse("a_1<i_1,i_2>")


def test_nested_protos() -> None:
    index = Index.parse("i_6<i_1,i_5<i_2,i_1>>")
    assert index.full_label == "i_6<i_1,i_5<i_1,i_2>>"
    inner = index.protos[1]
    assert inner.label == "i_5"
    assert inner.protos == (Index.parse("i_1"), Index.parse("i_2"))
    assert list(index.all_protos()) == [
        Index.parse("i_1"),
        inner,
        Index.parse("i_1"),
        Index.parse("i_2"),
    ]


def test_ordinals_sort_numerically_in_protos() -> None:
    assert Index.parse("a_1<i_10,i_2>").full_label == "a_1<i_2,i_10>"


def test_digit_ordinal_without_underscore_is_canonicalised() -> None:
    assert Index.parse("i1") == Index.parse("i_1")
    assert str(Index.parse("i1")) == "i_1"


def test_identity_equality_and_hash() -> None:
    assert Index.parse("a_1") != Index.parse("a_1<i_1>")
    assert Index.parse("a_1<i_1,i_2>") != Index.parse("a_1<i_1,i_3>")
    assert Index.parse("i_1") != Index.parse("i_2")
    assert Index.parse("i_1") != Index.parse("i")
    assert Index.parse("i↑_1") != Index.parse("i↓_1")
    assert len({Index.parse("a_1<i_2,i_1>"), Index.parse("a_1<i_1,i_2>")}) == 1


def test_same_type_compares_base_keys_only() -> None:
    assert Index.parse("i_1").same_type(Index.parse("i_7<a_1>"))
    assert not Index.parse("i↑_1").same_type(Index.parse("i↓_1"))
    assert not Index.parse("a_1<i_1>").same_type(Index.parse("i_1"))


@pytest.mark.parametrize(
    ("text", "position", "expected"),
    [
        ("", 0, "an index base key"),
        ("_1", 0, "an index base key"),
        ("i_", 2, "an ordinal"),
        ("i_x", 2, "an ordinal"),
        ("a_1<i_1", 7, "',' or '>'"),
        ("a_1<>", 4, "an index base key"),
        ("a_1<i_1,>", 8, "an index base key"),
        ("i_1 j", 4, "end of label"),
        ("i_1>", 3, "end of label"),
    ],
)
def test_malformed_labels_name_text_and_position(
    text: str, position: int, expected: str
) -> None:
    with pytest.raises(ValueError, match="malformed index label") as caught:
        Index.parse(text)
    error = caught.value
    assert isinstance(error, IndexSyntaxError)
    assert error.position == position
    assert expected in error.expected
    assert repr(text) in str(error)
    assert f"position {position}" in str(error)


keys = st.sampled_from(["i", "a", "p", "Κ", "μ̃", "i↑", "x"])
ordinals = st.one_of(st.none(), st.integers(min_value=0, max_value=2000))
indices = st.recursive(
    st.builds(Index, keys, ordinals),
    lambda children: st.builds(
        Index,
        keys,
        st.integers(min_value=0, max_value=99),
        st.lists(children, max_size=3, unique=True),  # a proto is listed once
    ),
    max_leaves=8,
)


@given(indices)
def test_print_parse_round_trip(index: Index) -> None:
    again = Index.parse(str(index))
    assert again == index
    assert hash(again) == hash(index)
    assert again.full_label == index.full_label


@given(indices, st.randoms())
def test_proto_order_does_not_matter(index: Index, random) -> None:  # type: ignore[no-untyped-def]
    shuffled = list(index.protos)
    random.shuffle(shuffled)
    assert Index(index.base_key, index.ordinal, shuffled) == index
