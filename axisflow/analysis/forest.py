"""Occurrences of every value of a ``batch.forest``, collected in one walk.

Each ``batch.use`` is one occurrence of its value: the indices it carries
there and the enclosing ``batch.loop`` ops (outermost first) with their fusion
slots. The role analysis, the scheduler and the evaluator all start here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.ir import Operation

from axisflow.dialects.batch import ForestOp, LoopOp, TreeOp, UseOp, ValueOp
from axisflow.roles.decision import Occurrence
from axisflow.roles.index import Index


@dataclass
class UseSite:
    """Where one occurrence sits in the IR."""

    use: UseOp
    tree: TreeOp
    loops: tuple[LoopOp, ...]
    """Batch loops enclosing the use-site (where the value is built), outermost
    first."""
    consumer_loops: tuple[LoopOp, ...]
    """Batch loops enclosing the consumer (the parent use-site): the
    occurrence's ``ectx``. Empty for a tree root."""
    number: int
    """Position among the value's occurrences (walk order)."""


@dataclass
class ValueInfo:
    """A value with all its occurrences and the loop axes enclosing them."""

    op: ValueOp
    occurrences: list[Occurrence] = field(default_factory=list[Occurrence])
    sites: list[UseSite] = field(default_factory=list[UseSite])
    axes: dict[Index, None] = field(default_factory=dict[Index, None])
    """Indices of loops enclosing any use-site of the value, first-seen order."""

    @property
    def name(self) -> str:
        """The value's symbol name."""
        return self.op.value_name

    def sliced(self) -> frozenset[Index]:
        """Modes sliced at every occurrence: the meet of the enclosing loops'
        indices over all occurrences, expanded through proto indices."""
        common: set[Index] | None = None
        for occurrence in self.occurrences:
            modes: set[Index] = set()
            for loop_index in occurrence.ectx:
                modes.add(loop_index)
                modes.update(loop_index.all_protos())
            common = modes if common is None else common & modes
            if not common:
                return frozenset()
        return frozenset() if common is None else frozenset(common)


@dataclass
class ForestInfo:
    """Occurrences of every value of one forest."""

    forest: ForestOp
    values: dict[str, ValueInfo]
    has_slots: bool
    """Whether any loop declares a fusion slot (instance-aware binding)."""


_Loops = tuple[LoopOp, ...]
_Context = tuple[tuple[Index, ...], tuple[int, ...]]
"""The indices and slots of a sequence of loops (an occurrence's ``ectx``)."""
_Frame = tuple[Operation, _Loops, _Context, _Loops, _Context]
"""Walk frame: an item; the loops around it and their context; the loops
around its consumer and their context. Contexts are built once per loop and
shared by every use-site inside it."""

_NO_CONTEXT: _Context = ((), ())


def collect_forest(forest: ForestOp) -> ForestInfo:
    """Walk every tree once and record each use-site as an occurrence.

    A ``batch.use`` is both where its value is built in that tree and where
    its consumer reads it. The occurrence's enclosing context is the consumer
    side: the loops enclosing the parent use-site (none for a tree root, which
    the forest's output reads). The value's axes are the loops enclosing the
    use-site itself, which also covers loops placed between a node and its
    parent. Assumes a verified forest (every used value is defined).
    """
    values = {op.value_name: ValueInfo(op) for op in forest.values()}
    has_slots = False
    for tree in forest.trees():
        stack: list[_Frame] = [
            (item, (), _NO_CONTEXT, (), _NO_CONTEXT)
            for item in reversed(list(tree.items()))
        ]
        while stack:
            item, loops, context, consumer_loops, consumer_context = stack.pop()
            if isinstance(item, UseOp):
                info = values[item.value_name]
                info.sites.append(
                    UseSite(item, tree, loops, consumer_loops, len(info.occurrences))
                )
                info.occurrences.append(
                    Occurrence.trusted(item.carried_indices, *consumer_context)
                )
                axes = info.axes
                for loop_index in context[0]:
                    axes.setdefault(loop_index, None)
                children = list(item.items())
                children.reverse()
                stack.extend(
                    (child, loops, context, loops, context) for child in children
                )
            elif isinstance(item, LoopOp):
                slot = item.slot_value
                has_slots = has_slots or slot is not None
                inner = (*loops, item)
                inner_context = (
                    (*context[0], item.loop_index),
                    (*context[1], -1 if slot is None else slot),
                )
                children = list(item.items())
                children.reverse()
                stack.extend(
                    (child, inner, inner_context, consumer_loops, consumer_context)
                    for child in children
                )
    return ForestInfo(forest, values, has_slots)
