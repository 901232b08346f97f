"""Random ``batch`` forests for property tests (hypothesis strategies)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hypothesis import strategies as st
from xdsl.context import Context
from xdsl.dialects.builtin import Builtin, ModuleOp
from xdsl.ir import Block, Operation, Region

from axisflow import Index
from axisflow.dialects.batch import (
    Batch,
    FactorAttr,
    ForestOp,
    LoopOp,
    SpaceOp,
    TreeOp,
    UseOp,
    ValueOp,
)

SPACES = ("i", "a", "Κ")


def context() -> Context:
    """A context with the builtin and batch dialects loaded."""
    ctx = Context()
    ctx.load_dialect(Builtin)
    ctx.load_dialect(Batch)
    return ctx


@dataclass
class _Node:
    value: str
    labels: tuple[Index, ...]
    children: list[_Node] = field(default_factory=list["_Node"])
    loops: list[tuple[Index, int | None]] = field(
        default_factory=list[tuple[Index, int | None]]
    )


@st.composite
def forests(draw: st.DrawFn, max_trees: int = 3) -> ModuleOp:
    """A verified forest: random binary trees over shared leaves, with loops."""
    leaves: dict[str, tuple[Index, ...]] = {}
    for number in range(draw(st.integers(1, 4))):
        keys = draw(st.lists(st.sampled_from(SPACES), min_size=1, max_size=3))
        leaves[f"L{number}"] = tuple(Index(k, p + 1) for p, k in enumerate(keys))
    values: list[ValueOp] = [
        ValueOp(name, labels, tensor=name) for name, labels in leaves.items()
    ]
    trees: list[TreeOp] = []
    counter = 0

    def build(depth: int, tree_number: int) -> _Node:
        nonlocal counter
        if depth == 0 or draw(st.booleans()):
            name = draw(st.sampled_from(sorted(leaves)))
            labels = tuple(
                Index(index.base_key, draw(st.integers(1, 3))) for index in leaves[name]
            )
            if len(set(labels)) != len(labels):
                labels = tuple(
                    Index(index.base_key, 10 + position)
                    for position, index in enumerate(labels)
                )
            return _Node(name, labels)
        left = build(depth - 1, tree_number)
        right = build(depth - 1, tree_number)
        union = list(dict.fromkeys(left.labels + right.labels))
        common = [index for index in left.labels if index in right.labels]
        dropped = (
            set(draw(st.lists(st.sampled_from(common), unique=True)))
            if common
            else set()
        )
        result = tuple(index for index in union if index not in dropped)
        contracted = tuple(index for index in common if index in dropped)
        name = f"V{tree_number}_{counter}"
        counter += 1
        values.append(
            ValueOp(
                name,
                result,
                contracted,
                factors=[
                    FactorAttr(left.value, left.labels),
                    FactorAttr(right.value, right.labels),
                ],
            )
        )
        return _Node(name, result, [left, right])

    def add_loops(node: _Node) -> None:
        labels = sorted({*node.labels, *(i for c in node.children for i in c.labels)})
        if labels and draw(st.integers(0, 3)) == 0:
            index = draw(st.sampled_from(labels))
            node.loops.append((index, draw(st.one_of(st.none(), st.integers(0, 1)))))
        for child in node.children:
            add_loops(child)

    def emit(node: _Node) -> Operation:
        children = [emit(child) for child in node.children]
        op: Operation = UseOp(
            node.value, node.labels, Region(Block(children)) if children else None
        )
        for index, slot in reversed(node.loops):
            op = LoopOp(index, slot, Region(Block([op])))
        return op

    for tree_number in range(draw(st.integers(1, max_trees))):
        root = build(draw(st.integers(0, 3)), tree_number)
        add_loops(root)
        trees.append(
            TreeOp(
                f"T{tree_number}",
                draw(st.sampled_from([1, -1, 2])),
                Region(Block([emit(root)])),
            )
        )
    spaces = [SpaceOp(key, draw(st.integers(2, 9))) for key in SPACES]
    forest = ForestOp([*spaces, *values, *trees], "random")
    module = ModuleOp([forest])
    module.verify()
    return module
