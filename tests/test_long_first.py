"""``LONG_FIRST`` (tests/conftest.py) names tests that exist, and the
reordering puts them first without losing or repeating a test."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import LONG_FIRST, long_first_key

ROOT = Path(__file__).resolve().parent.parent


def test_every_long_test_named_is_defined_in_its_file() -> None:
    missing = []
    for name in LONG_FIRST:
        path, _, function = name.partition("::")
        tree = ast.parse((ROOT / path).read_text(encoding="utf-8"))
        defined = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}
        if function not in defined:
            missing.append(name)
    assert missing == []
    assert len(set(LONG_FIRST)) == len(LONG_FIRST)


def test_long_tests_come_first_in_their_order_and_the_rest_keep_theirs() -> None:
    first, second = LONG_FIRST[0], LONG_FIRST[1]
    names = [
        "tests/a.py::test_x",
        f"{second}[p1]",
        "tests/b.py::test_y",
        first,
        f"{second}[p0]",
        "tests/a.py::test_z",
    ]
    assert sorted(names, key=long_first_key) == [
        first,
        f"{second}[p1]",
        f"{second}[p0]",
        "tests/a.py::test_x",
        "tests/b.py::test_y",
        "tests/a.py::test_z",
    ]
