"""The examples in the engine's docstrings run as written."""

from __future__ import annotations

import doctest

import axisflow.shapes
import axisflow.shapes.scheme
import axisflow.shapes.session


def test_docstring_examples() -> None:
    for module in (axisflow.shapes, axisflow.shapes.session, axisflow.shapes.scheme):
        result = doctest.testmod(module, raise_on_error=False, verbose=False)
        assert result.attempted > 0
        assert result.failed == 0, module.__name__
