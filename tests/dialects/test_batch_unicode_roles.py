"""Regression: ``classify-axes`` output with Unicode loop labels re-parses.

xDSL prints a non-identifier dictionary key as escaped UTF-8 bytes
(``"\\CE\\9A_1"`` for ``Κ_1``) and its parser rejects such a key, so a forest
batched over ``Κ`` or ``μ̃`` used to print ``roles``/``why`` that could not be
read back.
"""

from __future__ import annotations

from io import StringIO

from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, DictionaryAttr, ModuleOp, StringAttr
from xdsl.parser import Parser
from xdsl.printer import Printer

from axisflow.dialects.batch import Batch, ForestOp, RoleAttr, ValueOp
from axisflow.passes.classify_axes import classify_forest
from axisflow.roles import LoopRole

FOREST = """
batch.forest @df {
  batch.value @W [Κ_1, a_1] leaf "W"
  batch.value @V [Κ_1] leaf "V"
  batch.value @X [a_1] contracted [Κ_1] = @W [Κ_1, a_1] * @V [Κ_1]
  batch.tree @t {
    batch.loop Κ_1 slot 0 {
      batch.use @X [a_1] {
        batch.use @W [Κ_1, a_1]
        batch.use @V [Κ_1]
      }
    }
  }
}
"""


def parse(text: str) -> ModuleOp:
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Batch)
    module = Parser(ctx, text).parse_module()
    module.verify()
    return module


def printed(module: ModuleOp) -> str:
    stream = StringIO()
    Printer(stream=stream).print_op(module)
    return stream.getvalue()


def classified(text: str) -> ModuleOp:
    module = parse(text)
    for op in module.walk():
        if isinstance(op, ForestOp):
            classify_forest(op, explain=True)
    return module


def test_roles_keyed_by_unicode_labels_round_trip() -> None:
    text = printed(classified(FOREST))
    assert '{roles = {"Κ_1" = #batch.role<reduction>}' in text
    assert 'why = {"Κ_1" = "contracts Κ_1 at its own node"}' in text
    again = parse(text)
    assert printed(again) == text
    x = next(
        op for op in again.walk() if isinstance(op, ValueOp) and op.value_name == "X"
    )
    roles = x.attributes["roles"]
    why = x.attributes["why"]
    assert isinstance(roles, DictionaryAttr) and isinstance(why, DictionaryAttr)
    role = roles.data["Κ_1"]
    assert isinstance(role, RoleAttr) and role.data is LoopRole.REDUCTION
    assert why.data["Κ_1"] == StringAttr("contracts Κ_1 at its own node")


def test_ascii_labels_still_print_bare() -> None:
    text = printed(classified(FOREST.replace("Κ", "k")))
    assert "{roles = {k_1 = #batch.role<reduction>}, why = {k_1 = " in text
