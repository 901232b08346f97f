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


def test_sequant_protos_nested_beyond_the_recursion_limit(recursion_limit: int) -> None:
    from axisflow.pipeline.api import schedule_expression

    # The limit lowered for the test: building and scheduling the nested
    # label is quadratic in its depth (each level's label text).
    depth = 3 * recursion_limit
    label = "a_1<" * depth + "i_1" + ">" * depth
    scheduled = schedule_expression(f"x{{{label};i_1}}", "i")
    assert scheduled.report.table().startswith("memory of batch.forest @sequant")
    # The frame renumbers the nested a's in order of depth.
    canonical = "".join(f"a_{k}<" for k in range(1, depth + 1)) + "i_1" + ">" * depth
    labels = [i.full_label for v in scheduled.model.values.values() for i in v.result]
    assert labels == [canonical, "i_1"]


def test_fresh_dummies_rename_protos_nested_beyond_the_recursion_limit() -> None:
    """``Term.with_fresh_dummies`` renumbers protos at any depth (iteratively)."""
    import sys

    from axisflow.sequant import parse

    depth = sys.getrecursionlimit() * 3
    label = "i_1"
    for level in range(depth):
        label = f"a_{level + 1}<{label}>"
    (term,) = parse(f"t{{{label};}} * u{{;{label}}}").terms
    shifted = term.with_fresh_dummies(10)
    index = shifted.tensors[0].bra[0]
    assert index.ordinal == depth + 10
    for _ in range(depth):
        (index,) = index.protos
    assert (index.base_key, index.ordinal) == ("i", 11)
    assert shifted.tensors[0].bra[0] == shifted.tensors[1].ket[0]
