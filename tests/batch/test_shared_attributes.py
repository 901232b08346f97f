"""Parsed ``batch`` IR shares one attribute per distinct label list and symbol.

A forest repeats few label lists and names each value at every use-site of
it. The dialect's constructors share one attribute per distinct list
(``_index_array``) and per symbol (``_symbol_ref``), and the declarative
formats must too: the verifier's per-use-site caches are keyed by the
attributes' identity, so unshared attributes made parsing and verifying a
50k-op forest 40% and 20% slower (``docs/benchmarks-phases.md``).
"""

from __future__ import annotations

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin
from xdsl.parser import Parser

from axisflow.dialects.batch import Batch, UseOp, ValueOp

FOREST = """
batch.forest @f {
  batch.value @A [i_1, a_1] leaf "A"
  batch.value @B [a_1, i_1] leaf "B"
  batch.value @C [i_1] contracted [a_1] = @A [i_1, a_1] * @B [a_1, i_1]
  batch.value @D [i_1, a_1] leaf "D"
  batch.tree @t1 {
    batch.use @C [i_1] {
      batch.use @A [i_1, a_1]
      batch.use @B [a_1, i_1]
    }
  }
  batch.tree @t2 {
    batch.use @C [i_1] {
      batch.use @A [i_1, a_1]
      batch.use @B [a_1, i_1]
    }
  }
}
"""


def parsed() -> tuple[list[ValueOp], list[UseOp]]:
    context = Context()
    context.load_dialect(Builtin)
    context.load_dialect(Batch)
    module = Parser(context, FOREST).parse_module()
    module.verify()
    ops = list(module.walk())
    return (
        [op for op in ops if isinstance(op, ValueOp)],
        [op for op in ops if isinstance(op, UseOp)],
    )


def test_use_sites_share_their_symbol_and_label_list() -> None:
    _, uses = parsed()
    by_value: dict[str, list[UseOp]] = {}
    for use in uses:
        by_value.setdefault(use.value_name, []).append(use)
    assert sorted(by_value) == ["A", "B", "C"]
    for same in by_value.values():
        first, second = same
        assert first.properties["value"] is second.properties["value"]
        assert first.properties["carried"] is second.properties["carried"]


def test_values_share_label_lists_with_each_other_and_their_uses() -> None:
    values, uses = parsed()
    by_name = {value.value_name: value for value in values}
    # @A [i_1, a_1] and @D [i_1, a_1]: one list; a use-site of @A reads it too
    assert by_name["A"].properties["result"] is by_name["D"].properties["result"]
    use_of_a = next(use for use in uses if use.value_name == "A")
    assert use_of_a.properties["carried"] is by_name["A"].properties["result"]
    # a clause left out is the one shared empty list
    assert (
        by_name["A"].properties["contracted"] is by_name["B"].properties["contracted"]
    )
    assert by_name["A"].contracted_indices == ()
