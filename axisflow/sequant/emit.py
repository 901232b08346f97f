"""A ``Forest`` as IR of the ``batch`` dialect.

One ``builtin.module`` holding one ``batch.forest``: a ``batch.space`` per
index space, a ``batch.value`` per value (leaves carry the SeQuant label, the
symmetry and a ``layout = "bra;ket;aux"`` attribute giving the group sizes),
and a ``batch.tree`` per term whose root loops (outermost first) enclose the
root ``batch.use``.
"""

from __future__ import annotations

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region

from axisflow.dialects.batch import (
    FactorAttr,
    ForestOp,
    LoopOp,
    SpaceOp,
    TreeOp,
    UseOp,
    ValueOp,
)
from axisflow.sequant.forest import Forest, LeafValue, Tree, Use, Value

LAYOUT_ATTR = "layout"
"""Attribute of a leaf ``batch.value``: sizes of its bra, ket and aux groups."""


def value_op(value: Value) -> ValueOp:
    """The ``batch.value`` defining ``value``."""
    if isinstance(value, LeafValue):
        op = ValueOp(
            value.name, value.result, tensor=value.tensor, symmetry=value.symmetry
        )
        op.attributes[LAYOUT_ATTR] = StringAttr(";".join(map(str, value.layout)))
        return op
    return ValueOp(
        value.name,
        value.result,
        value.contracted,
        factors=(
            FactorAttr(value.left.value, value.left.indices),
            FactorAttr(value.right.value, value.right.indices),
        ),
    )


def use_op(use: Use) -> UseOp:
    """The ``batch.use`` of ``use`` with its factors' use-sites nested."""
    if not use.factors:
        return UseOp(use.value, use.carried)
    body = Region(Block([use_op(factor) for factor in use.factors]))
    return UseOp(use.value, use.carried, body)


def tree_op(tree: Tree) -> TreeOp:
    """The ``batch.tree`` of ``tree``: root loops around the root use-site."""
    items: list[Operation] = [] if tree.root is None else [use_op(tree.root)]
    for loop in reversed(tree.loops):
        items = [LoopOp(loop.index, loop.slot, Region(Block(items)))]
    return TreeOp(tree.name, tree.coefficient, Region(Block(items)))


def forest_op(forest: Forest) -> ForestOp:
    """The ``batch.forest`` of ``forest``."""
    ops: list[Operation] = [
        SpaceOp(space.key, space.extent, space.elem) for space in forest.spaces
    ]
    ops.extend(value_op(value) for value in forest.values)
    ops.extend(tree_op(tree) for tree in forest.trees)
    return ForestOp(ops, forest.name)


def forest_module(forest: Forest) -> ModuleOp:
    """A module holding the ``batch.forest`` of ``forest``."""
    return ModuleOp([forest_op(forest)])
