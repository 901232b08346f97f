"""``batch=i:external``: loops only over a term's external indices of a space."""

from __future__ import annotations

import pytest

from axisflow.sequant import BatchPolicy, PolicyError, build_forest, parse


def loop_labels(text: str, batch: str) -> list[set[str]]:
    forest = build_forest(parse(text), BatchPolicy.make(batch))
    found: list[set[str]] = [set() for _ in forest.trees]
    for site in forest.sites:
        found[site.tree].update(loop.label.full_label for loop in site.loops)
    return found


def test_external_only_skips_the_contracted_indices_of_the_space() -> None:
    text = "f{a_1;i_2} * t{i_2;i_1} + g{a_1;i_3} * u{i_3;i_1}"
    assert loop_labels(text, "i") == [{"i_1", "i_2"}, {"i_1", "i_3"}]
    assert loop_labels(text, "i:external") == [{"i_1"}, {"i_1"}]
    # protos of an external composite count as external
    composite = "f{a_1<i_1>;i_2} * t{i_2;i_1}"
    assert loop_labels(composite, "i:external") == [{"i_1"}]


def test_external_and_plain_spaces_combine() -> None:
    text = "f{a_1;i_2;Κ_1} * t{i_2;i_1;Κ_1}"
    assert loop_labels(text, "i:external,Κ") == [{"i_1", "Κ_1"}]


def test_a_malformed_entry_is_refused() -> None:
    with pytest.raises(PolicyError, match="expected SPACE or SPACE:external"):
        BatchPolicy.make("i:inner")
