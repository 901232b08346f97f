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
from axisflow.numerals import check_count
from axisflow.order import Order
from axisflow.sequant.forest import (
    BatchPolicy,
    Pairing,
    PolicyError,
    Share,
    ascii_alias,
    binarize,
    build_forest,
    expression_layout,
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


def check_options(
    expression: object,
    batch: object = (),
    extents: object = None,
    elem: object = None,
    separate_instances: object = False,
    name: object = "sequant",
    share: object = "forest",
) -> None:
    """The boundary check of ``to_module``: a ``TypeError`` or ``ValueError``
    naming the parameter and what it expected."""
    if not isinstance(expression, Expression):
        hint = " (parse it first: axisflow.sequant.parse(text))"
        raise TypeError(
            f"expression must be a parsed Expression{hint if isinstance(expression, str) else ''}, "
            f"got {type(expression).__name__}"
        )
    if not isinstance(batch, str) and not (
        isinstance(batch, Iterable) and all(isinstance(key, str) for key in batch)
    ):
        raise TypeError(f"batch must be a str or an iterable of str, got {batch!r}")
    if isinstance(extents, Mapping):
        for key, extent in extents.items():
            if not isinstance(key, str):
                raise TypeError(f"extents keys must be space keys (str), got {key!r}")
            check_count(f"extents[{key!r}]", extent)
    elif extents is not None and not isinstance(extents, str):
        raise TypeError(
            'extents must be a mapping, a string such as "i=80,a=896" or None, '
            f"got {type(extents).__name__}"
        )
    if elem is not None:
        check_count("elem", elem)
    if not isinstance(separate_instances, bool):
        raise TypeError(
            f"separate_instances must be True or False, got {separate_instances!r}"
        )
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    if not isinstance(share, str):
        raise TypeError(f"share must be 'forest' or 'tree', got {share!r}")


def to_module(
    expression: Expression,
    batch: str | Iterable[str] = (),
    *,
    extents: str | Mapping[str, int] | None = None,
    elem: int | None = None,
    separate_instances: bool = False,
    name: str = "sequant",
    order: Order = "flops",
    share: Share = "forest",
) -> ModuleOp:
    """The ``batch``-dialect module of ``expression``.

    ``batch``: index spaces to batch, outermost loop first (a key, a
    comma-separated string, or an iterable; ASCII aliases such as ``Kappa``
    for ``Κ`` are accepted). ``extents``: space sizes, a mapping or
    ``"i=80,a=896,Κ=1682"``. ``elem``: element size in bytes for every space.
    ``separate_instances``: one fusion slot per loop instead of sharing a slot
    across trees. ``name``: the forest's symbol name. ``order``: ``file``,
    ``flops`` (default) or ``memory``, how each product is binarized (see
    ``build_forest``). ``share``: ``forest`` (default: a value built by
    several trees is shared) or ``tree`` (each tree rebuilds it, in loops of
    its own; see ``axisflow.sequant.forest``). Raises ``SequantError`` for a
    term that cannot be a tree and ``PolicyError`` for bad options.
    """
    from axisflow.dialects.batch_model import forest_module

    return forest_module(
        to_model(
            expression,
            batch,
            extents=extents,
            elem=elem,
            separate_instances=separate_instances,
            name=name,
            order=order,
            share=share,
        )
    )


def to_model(
    expression: Expression,
    batch: str | Iterable[str] = (),
    *,
    extents: str | Mapping[str, int] | None = None,
    elem: int | None = None,
    separate_instances: bool = False,
    name: str = "sequant",
    order: Order = "flops",
    share: Share = "forest",
    canonical: bool = False,
) -> Forest:
    """The forest model ``to_module`` prints: the options checked, the policy
    made and the forest built (same arguments, same errors). ``canonical``:
    every term's factors in the canonical order that adds the fewest
    multiply-adds (``forest.build_forest``)."""
    if isinstance(batch, Iterable) and not isinstance(batch, str):
        batch = tuple(batch)  # a generator is read once, by the check and after
    check_options(expression, batch, extents, elem, separate_instances, name, share)
    policy = BatchPolicy.make(batch, extents, elem, separate_instances, share)
    return build_forest(expression, policy, name, order, canonical)


__all__ = [
    "BatchPolicy",
    "Expression",
    "Forest",
    "Pairing",
    "PolicyError",
    "SequantError",
    "SequantSyntaxError",
    "Share",
    "Tensor",
    "Term",
    "ascii_alias",
    "binarize",
    "build_forest",
    "deparse",
    "expression_layout",
    "parse",
    "to_model",
    "to_module",
]
