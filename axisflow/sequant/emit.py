"""A ``Forest`` as IR of the ``batch`` dialect.

One ``builtin.module`` holding one ``batch.forest``: a ``batch.space`` per
index space, a ``batch.value`` per value (leaves carry the SeQuant label, the
symmetry and a ``layout = "bra;ket;aux"`` attribute giving the group sizes),
and a ``batch.tree`` per term whose root loops (outermost first) enclose the
root ``batch.use``.
"""

from __future__ import annotations

from collections.abc import Sequence

from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Block, Operation, Region

from axisflow.dialects.batch import (
    FactorAttr,
    ForestOp,
    IndexAttr,
    LoopOp,
    SpaceOp,
    TreeOp,
    UseOp,
    ValueOp,
)
from axisflow.roles.index import Index
from axisflow.sequant.forest import Forest, LeafValue, Tree, Use, Value

LAYOUT_ATTR = "layout"
"""Attribute of a leaf ``batch.value``: sizes of its bra, ket and aux groups."""


class _Emitter:
    """Builds the ops, sharing one ``IndexAttr`` per label (attributes are
    immutable; building and verifying one per occurrence dominated)."""

    def __init__(self) -> None:
        self.labels: dict[Index, IndexAttr] = {}

    def attrs(self, indices: Sequence[Index]) -> list[IndexAttr]:
        labels = self.labels
        found: list[IndexAttr] = []
        for index in indices:
            attr = labels.get(index)
            if attr is None:
                attr = labels[index] = IndexAttr(index)
            found.append(attr)
        return found

    def value_op(self, value: Value) -> ValueOp:
        if isinstance(value, LeafValue):
            op = ValueOp(
                value.name,
                self.attrs(value.result),
                tensor=value.tensor,
                symmetry=value.symmetry,
            )
            op.attributes[LAYOUT_ATTR] = StringAttr(";".join(map(str, value.layout)))
            return op
        return ValueOp(
            value.name,
            self.attrs(value.result),
            self.attrs(value.contracted),
            factors=(
                FactorAttr(value.left.value, self.attrs(value.left.indices)),
                FactorAttr(value.right.value, self.attrs(value.right.indices)),
            ),
        )

    def use_op(self, use: Use) -> UseOp:
        carried = self.attrs(use.carried)
        if not use.factors:
            return UseOp(use.value, carried)
        body = Region(Block([self.use_op(factor) for factor in use.factors]))
        return UseOp(use.value, carried, body)

    def tree_op(self, tree: Tree) -> TreeOp:
        items: list[Operation] = [] if tree.root is None else [self.use_op(tree.root)]
        for loop in reversed(tree.loops):
            (index,) = self.attrs((loop.index,))
            items = [LoopOp(index, loop.slot, Region(Block(items)))]
        return TreeOp(tree.name, tree.coefficient, Region(Block(items)))


def forest_op(forest: Forest) -> ForestOp:
    """The ``batch.forest`` of ``forest``: spaces, values (leaves carry
    ``layout``), then one tree per term with its root loops."""
    emitter = _Emitter()
    ops: list[Operation] = [
        SpaceOp(space.key, space.extent, space.elem, space.composites)
        for space in forest.spaces
    ]
    ops.extend(emitter.value_op(value) for value in forest.values)
    ops.extend(emitter.tree_op(tree) for tree in forest.trees)
    return ForestOp(ops, forest.name)


def forest_module(forest: Forest) -> ModuleOp:
    """A module holding the ``batch.forest`` of ``forest``."""
    return ModuleOp([forest_op(forest)])
