"""Indices are interned: an index equal to a live one is that very object,
so equality and hashing are the object's identity (CPython's own, no Python
call: the forest passes hash labels millions of times). Equal means what it
meant before: same base key, same ordinal, equal proto lists (recursively,
in any order)."""

from __future__ import annotations

import copy
import gc
import pickle
from enum import IntEnum

from hypothesis import given
from hypothesis import strategies as st

from axisflow.roles import index as index_module
from axisflow.roles.index import Index


def test_equal_labels_are_one_object() -> None:
    assert Index.parse("a_1<i_2,i_1>") is Index.parse("a_1<i_1,i_2>")
    assert Index("a", 1, [Index("i", 2), Index("i", 1)]) is Index.parse("a_1<i_1,i_2>")
    assert Index.parse("i1") is Index("i", 1)
    assert Index.parse("i") is Index("i")


def test_different_labels_stay_apart() -> None:
    labels = ["i", "i_1", "i_2", "a_1", "a_1<i_1>", "a_1<i_2>", "a_1<i_1,i_2>", "i↑_1"]
    indices = [Index.parse(label) for label in labels]
    assert len(set(indices)) == len(labels)
    assert len({id(index) for index in indices}) == len(labels)
    assert Index.parse("i_1") != "i_1"


def test_copies_and_pickles_are_the_interned_index() -> None:
    index = Index.parse("a_3<i_1,i_5<i_2,i_1>>")
    assert copy.copy(index) is index
    assert copy.deepcopy(index) is index
    assert pickle.loads(pickle.dumps(index)) is index
    assert copy.deepcopy({index: [index]}) == {index: [index]}


class Ordinal(IntEnum):
    THREE = 3


def test_an_int_subclass_ordinal_is_the_int_it_equals() -> None:
    index = Index("i", Ordinal.THREE)
    assert index is Index("i", 3)
    assert type(index.ordinal) is int


def test_an_index_nobody_holds_is_forgotten() -> None:
    # The table holds indices weakly: labels seen once do not accumulate.
    # a key no other test uses: its four labels are new here
    label = "qforgotten_987654321<qforgotten_1,qforgotten_2<qforgotten_3>>"
    gc.collect()  # garbage of earlier tests would leave the table below
    before = len(index_module._INTERNED)  # pyright: ignore[reportPrivateUsage]
    index = Index.parse(label)
    assert len(index_module._INTERNED) == before + 4  # pyright: ignore[reportPrivateUsage]
    del index
    gc.collect()
    assert len(index_module._INTERNED) == before  # pyright: ignore[reportPrivateUsage]


def test_deep_labels_intern_without_recursion() -> None:
    text = "i_1"
    for depth in range(2, 400):
        text = f"i_{depth}<{text}>"
    assert Index.parse(text) is Index.parse(text)


keys = st.sampled_from(["i", "a", "Κ", "μ̃"])
ordinals = st.none() | st.integers(0, 30)


@st.composite
def labels(draw: st.DrawFn, depth: int = 2) -> str:
    key = draw(keys)
    ordinal = draw(ordinals)
    text = key if ordinal is None else f"{key}_{ordinal}"
    if depth and draw(st.booleans()):
        # a proto is listed once (equal labels may be spelled differently)
        distinct = st.lists(
            labels(depth - 1), min_size=1, max_size=3, unique_by=Index.parse
        )
        protos = draw(distinct)
        text += "<" + ",".join(protos) + ">"
    return text


@given(labels(), labels())
def test_identity_is_equality_of_key_ordinal_and_protos(a: str, b: str) -> None:
    first, second = Index.parse(a), Index.parse(b)
    same = (first.base_key, first.ordinal, sorted(map(str, first.all_protos()))) == (
        second.base_key,
        second.ordinal,
        sorted(map(str, second.all_protos())),
    ) and str(first) == str(second)
    assert (first is second) == same
    assert (first == second) == same
    assert Index.parse(str(first)) is first
