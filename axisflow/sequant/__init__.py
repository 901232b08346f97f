"""The SeQuant frontend: coupled-cluster equations into the ``batch`` dialect.

Python API (documented in ``docs/sequant-frontend.md``)::

    from axisflow.sequant import parse, to_module

    expression = parse(text, source="doubles.txt")      # -> Expression
    module = to_module(expression, batch="Κ", extents="i=80,a=896,Κ=1682")

* ``parse(text, source=...)`` reads SeQuant text (``syntax``), raising
  ``SequantSyntaxError`` with line, column and what was expected.
* ``build_forest(expression, policy, name)`` binarizes, shares common
  subexpressions and places batch loops (``forest``), giving the forest
  model (``axisflow.forest.model.Forest``, pure Python).
* ``to_module(expression, batch=..., ...)`` is ``build_forest`` followed by
  IR emission (``axisflow.dialects.batch_model``): a ``builtin.module`` with
  one ``batch.forest``.

Importing this package does not import xDSL; ``to_module`` does, lazily.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from axisflow.forest.model import Forest
from axisflow.order import Order
from axisflow.sequant.forest import (
    BatchPolicy,
    Pairing,
    PolicyError,
    ascii_alias,
    binarize,
    build_forest,
)
from axisflow.sequant.syntax import (
    Expression,
    SequantError,
    SequantSyntaxError,
    Tensor,
    Term,
    deparse,
    parse,
)

if TYPE_CHECKING:
    from xdsl.dialects.builtin import ModuleOp


def to_module(
    expression: Expression,
    batch: str | Iterable[str] = (),
    *,
    extents: str | Mapping[str, int] | None = None,
    elem: int | None = None,
    separate_instances: bool = False,
    name: str = "sequant",
    order: Order = "flops",
) -> ModuleOp:
    """The ``batch``-dialect module of ``expression``.

    ``batch``: index spaces to batch, outermost loop first (a key, a
    comma-separated string, or an iterable; ASCII aliases such as ``Kappa``
    for ``Κ`` are accepted). ``extents``: space sizes, a mapping or
    ``"i=80,a=896,Κ=1682"``. ``elem``: element size in bytes for every space.
    ``separate_instances``: one fusion slot per loop instead of sharing a slot
    across trees. ``name``: the forest's symbol name. ``order``: ``file``,
    ``flops`` (default) or ``memory``, how each product is binarized (see
    ``build_forest``). Raises ``SequantError`` for a term that cannot be a
    tree and ``PolicyError`` for bad options.
    """
    from axisflow.dialects.batch_model import forest_module

    policy = BatchPolicy.make(batch, extents, elem, separate_instances)
    return forest_module(build_forest(expression, policy, name, order))


__all__ = [
    "BatchPolicy",
    "Expression",
    "Forest",
    "Pairing",
    "PolicyError",
    "SequantError",
    "SequantSyntaxError",
    "Tensor",
    "Term",
    "ascii_alias",
    "binarize",
    "build_forest",
    "deparse",
    "parse",
    "to_module",
]
