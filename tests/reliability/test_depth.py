"""axisflow's own code does not recurse on the depth of the IR."""

from __future__ import annotations

import sys

from xdsl.dialects.builtin import ModuleOp

from axisflow.dialects.batch import ForestOp
from axisflow.passes.classify_axes import forests_in


def test_forests_are_found_in_modules_nested_beyond_the_recursion_limit() -> None:
    depth = 3 * sys.getrecursionlimit()
    first, second = ForestOp(sym_name="first"), ForestOp(sym_name="second")
    inner = ModuleOp([first])
    for _ in range(depth):
        inner = ModuleOp([inner])
    outer = ModuleOp([inner, second])
    assert list(forests_in(outer)) == [first, second]
