"""Protos that occur in one composite of a value's frame and nowhere else are
interchangeable: a use-site needs no pairing for them, any pairing given
gives the same roles and schedule, and a pairing that matters stays an error."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from axisflow.dialects.batch_model import forest_model
from axisflow.forest.frames import FrameError, mode_map
from axisflow.forest.roles import classify
from axisflow.roles.index import Index
from axisflow.scheduling.scheduler import schedule_forest
from tests.conftest import only_forest, parse

L = Index.parse


def forest_text(
    f_labels: str, g_labels: str, loop: str, f_pairing: str = "", g_pairing: str = ""
) -> str:
    return f"""
batch.forest @p {{
  batch.value @f [a_1<i_1,i_2>] leaf "f"
  batch.value @g [a_1<i_1,i_2>] leaf "g"
  batch.value @r [] contracted [a_1<i_1,i_2>] = @f [a_1<i_1,i_2>] * @g [a_1<i_1,i_2>]
  batch.tree @t {{
    batch.loop {loop} slot 0 {{
      batch.use @r [] {{
        batch.use @f [{f_labels}]{f_pairing}
        batch.use @g [{g_labels}]{g_pairing}
      }}
    }}
  }}
}}
"""


def roles_and_schedule(text: str) -> tuple[dict[str, list[str]], object]:
    model = forest_model(only_forest(parse(text)))
    found = {
        name: [verdict.role.value for verdict in roles.values()]
        for name, roles in classify(model).items()
    }
    return found, schedule_forest(model, max_rounds=4).schedule


def test_the_pairing_is_taken_in_sorted_order() -> None:
    # frame protos i_1 < i_2 to labels i_5 < i_7, whatever the spelling
    found = mode_map([L("a_1<i_1,i_2>")], [L("a_3<i_7,i_5>")])
    assert found == {
        L("a_1<i_1,i_2>"): L("a_3<i_5,i_7>"),
        L("i_1"): L("i_5"),
        L("i_2"): L("i_7"),
    }


@pytest.mark.parametrize(
    ("frame", "here", "unpaired"),
    [
        # shared with another composite
        ("a_1<i_1,i_2>,b_1<i_1,i_2>", "a_1<i_3,i_4>,b_1<i_3,i_4>", "i_1, i_2"),
        # protos of their own, sharing k_1
        ("a_1<i_1<k_1>,i_2<k_1>>", "a_1<i_3<k_2>,i_4<k_2>>", "i_1<k_1>, i_2<k_1>"),
    ],
)
def test_a_pairing_that_matters_stays_an_error(
    frame: str, here: str, unpaired: str
) -> None:
    frame_labels = [L(x) for x in _split(frame)]
    here_labels = [L(x) for x in _split(here)]
    with pytest.raises(FrameError, match=f"the pairing of the protos {unpaired} of"):
        mode_map(frame_labels, here_labels)


def _split(text: str) -> list[str]:
    """Top-level comma-separated labels."""
    parts, depth, start = [], 0, 0
    for k, char in enumerate(text):
        depth += {"<": 1, ">": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(text[start:k])
            start = k + 1
    return [*parts, text[start:]]


def test_every_spelling_gives_the_roles_of_the_decision_tree() -> None:
    plain = forest_text("a_1<i_2,i_1>", "a_1<i_2,i_1>", "a_1<i_2,i_1>")
    roles, schedule = roles_and_schedule(plain)
    assert roles == {"f": ["loop_local"], "g": ["loop_local"], "r": ["reduction"]}
    labels = ("a_1<i_1,i_2>", "a_1<i_1,i_2>", "a_1<i_1,i_2>")
    for pairing in (" protos [i_1 = i_1]", " protos [i_1 = i_2]"):
        text = forest_text(*labels, pairing, pairing)
        assert roles_and_schedule(text) == (roles, schedule)


def test_a_node_that_relates_them_otherwise_needs_the_pairing() -> None:
    # @f's pairing given swapped, @g's taken in sorted order: @r's node
    # would label its i_1 both i_2 and i_1. Said, with what to do.
    labels = ("a_1<i_1,i_2>", "a_1<i_1,i_2>", "a_1<i_1,i_2>")
    text = forest_text(*labels, " protos [i_1 = i_2]")
    with pytest.raises(
        Exception,
        match=re.escape(
            "batch.use @r: the value's index i_1 is labelled both i_2 and i_1 here "
            "(interchangeable protos without protos [...] are paired in sorted "
            "order; give the pairing where this node relates them otherwise)"
        ),
    ):
        parse(text)


@settings(max_examples=25, deadline=None)
@given(st.permutations([3, 5, 8, 13]), st.booleans())
def test_relabelling_the_use_sites_changes_no_role(
    ordinals: list[int], swap: bool
) -> None:
    # the loop, @f and @g on labels drawn from four ordinals, @g's written in
    # either order: no pairing anywhere, the same roles and schedule
    first, second = (f"i_{n}" for n in ordinals[:2])
    f_labels = f"a_{ordinals[2]}<{first},{second}>"
    g_labels = f"a_{ordinals[2]}<{second},{first}>" if swap else f_labels
    text = forest_text(f_labels, g_labels, f_labels)
    reference = forest_text("a_1<i_1,i_2>", "a_1<i_1,i_2>", "a_1<i_1,i_2>")
    assert roles_and_schedule(text)[0] == roles_and_schedule(reference)[0]
