"""The ``soak`` hypothesis profile (``make soak``) multiplies every
property's own example count once; ``make test`` leaves the counts alone."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import SOAK_FACTOR, pytest_collection_modifyitems


def collect(profile: str) -> tuple[Any, Any]:
    @settings(max_examples=7)
    @given(st.integers())
    def own_count(x: int) -> None: ...

    @given(st.integers())
    def default_count(x: int) -> None: ...

    config = SimpleNamespace(getoption=lambda name, default=None: profile)
    # Two items of one function, as a parametrized test has.
    items = [
        SimpleNamespace(obj=f, nodeid=f"tests/t.py::{f.__name__}")
        for f in (own_count, own_count, default_count)
    ]
    # not a hypothesis test
    items.append(SimpleNamespace(obj=lambda: None, nodeid="tests/t.py::plain"))
    pytest_collection_modifyitems(cast(pytest.Config, config), cast(list, items))
    return own_count, default_count


def examples(test: Any) -> int:
    return test._hypothesis_internal_use_settings.max_examples


def test_the_soak_profile_multiplies_each_count_once() -> None:
    own, default = collect("soak")
    assert examples(own) == 7 * SOAK_FACTOR
    assert examples(default) == settings.default.max_examples * SOAK_FACTOR  # type: ignore[union-attr]


def test_other_profiles_keep_the_counts_as_written() -> None:
    own, default = collect("default")
    assert examples(own) == 7
    assert examples(default) == settings.default.max_examples  # type: ignore[union-attr]
