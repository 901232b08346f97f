"""Writing a forest model by hand (tests, generated forests, tools).

::

    forest = (
        ForestBuilder("four")
        .space("b", 4)
        .input("B", "b e f l")
        .contraction("T1", "b c d f", "B b e f l", "D c d e l")
        .tree("t", loop("b", 0, use("T1", "b c d f", use("B", ...), use("D", ...))))
        .finish()
    )

A proto pairing that is not forced is written after the labels with
``protos``: ``use("f", "a_2<i_3,i_4>", protos="i_1=i_4 i_2=i_3")`` and, for a
factor, ``"f a_1<i_1,i_2> | i_1=i_2 i_2=i_1"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from axisflow.forest.frames import ProtoPairs, expand_modes
from axisflow.forest.model import (
    Factor,
    Forest,
    Loop,
    ModelError,
    Site,
    Space,
    Tree,
    Value,
    renumber_unslotted,
)
from axisflow.forest.roles import classify
from axisflow.roles.decision import LoopRole
from axisflow.roles.index import Index


def labels(text: str) -> tuple[Index, ...]:
    """``"i_1 a_1<i_1>"`` -> indices (white-space separated labels)."""
    return tuple(Index.parse(part) for part in text.split())


def proto_pairs(text: str) -> ProtoPairs:
    """``"i_1=i_4 i_2=i_3"`` -> explicit proto pairings (mode, label)."""
    pairs: list[tuple[Index, Index]] = []
    for item in text.split():
        mode, _, label = item.partition("=")
        pairs.append((Index.parse(mode), Index.parse(label)))
    return tuple(pairs)


@dataclass(frozen=True)
class UseSpec:
    """A use-site to build: value, labels, and the factor items."""

    value: str
    labels: tuple[Index, ...]
    items: tuple[UseSpec | LoopSpec, ...] = ()
    protos: ProtoPairs = ()


@dataclass(frozen=True)
class LoopSpec:
    """A batch loop to build: label, optional slot, enclosed items."""

    label: Index
    slot: int | None
    items: tuple[UseSpec | LoopSpec, ...]


def use(
    value: str, carried: str, *items: UseSpec | LoopSpec, protos: str = ""
) -> UseSpec:
    """A use-site spec: ``use("T1", "b c d f", use("B", ...), use("D", ...))``."""
    return UseSpec(value, labels(carried), items, proto_pairs(protos))


def loop(label: str, slot: int | None, *items: UseSpec | LoopSpec) -> LoopSpec:
    """A loop spec: ``loop("b", 0, use(...))``."""
    return LoopSpec(Index.parse(label), slot, items)


class ForestBuilder:
    """Assemble a ``Forest`` in Python: spaces, values, trees.

    ``finish()`` derives modes and instances exactly as the IR path does;
    roles come from ``axisflow.forest.roles.classify`` unless given.
    """

    def __init__(self, name: str | None = None) -> None:
        self.name = name
        self.spaces: dict[str, Space] = {}
        self.values: dict[str, Value] = {}
        self.trees: list[Tree] = []
        self.sites: list[Site] = []
        self._unslotted = 0
        self._has_slots = False

    def space(
        self,
        key: str,
        extent: int | None = None,
        elem: int | None = None,
        composites: tuple[tuple[int, int], ...] = (),
    ):
        """Declare an index space (``composites``: (protos, extent) pairs)."""
        self.spaces[key] = Space(key, extent, elem, tuple(sorted(composites)))
        return self

    def input(self, name: str, carried: str, tensor: str | None = None):
        """Declare an input tensor (a leaf)."""
        self.values[name] = Value(name, labels(carried), tensor=tensor or name)
        return self

    def contraction(self, name: str, carried: str, left: str, right: str):
        """Declare ``name [carried] = left * right``; each factor is written
        ``"value label label ... | mode=label ..."`` in this value's frame.
        The contracted indices are computed (on both factors, not a mode of
        the result)."""
        factors: list[Factor] = []
        for text in (left, right):
            spec, _, pairs = text.partition("|")
            value, *rest = spec.split()
            factors.append(
                Factor(value, tuple(Index.parse(p) for p in rest), proto_pairs(pairs))
            )
        result = labels(carried)
        on_both = set(expand_modes(factors[0].labels)) & set(
            expand_modes(factors[1].labels)
        )
        plain = {*factors[0].labels, *factors[1].labels}
        contracted = tuple(sorted((on_both & plain) - set(expand_modes(result))))
        self.values[name] = Value(name, result, contracted, tuple(factors))
        return self

    def tree(
        self, name: str, *items: UseSpec | LoopSpec, coeff: Fraction | int = 1
    ) -> ForestBuilder:
        """Add a tree whose body is ``items`` (one root use, possibly in loops)."""
        number = len(self.trees)
        self.trees.append(Tree(name, Fraction(coeff), None))
        roots = self._walk(items, number, (), None)
        if len(roots) > 1:
            raise ModelError(f"tree @{name} has {len(roots)} roots")
        self.trees[number].root = roots[0] if roots else None
        return self

    def _walk(
        self,
        items: Sequence[UseSpec | LoopSpec],
        tree: int,
        loops: tuple[Loop, ...],
        parent: int | None,
    ) -> list[int]:
        found: list[int] = []
        for item in items:
            if isinstance(item, LoopSpec):
                if item.slot is None:
                    self._unslotted += 1
                    instance = -self._unslotted
                else:
                    self._has_slots = True
                    instance = item.slot
                inner = (*loops, Loop(instance, item.label, item.slot))
                found.extend(self._walk(item.items, tree, inner, parent))
                continue
            number = len(self.sites)
            site = Site(
                number, item.value, tree, item.labels, loops, parent, protos=item.protos
            )
            self.sites.append(site)
            site.children = tuple(self._walk(item.items, tree, loops, number))
            found.append(number)
        return found

    def finish(self, roles: dict[tuple[str, str], LoopRole] | None = None) -> Forest:
        """The forest (roles classified unless given)."""
        forest = Forest(
            self.name,
            dict(self.spaces),
            dict(self.values),
            list(self.trees),
            list(self.sites),
            has_slots=self._has_slots,
        )
        renumber_unslotted(forest)
        forest.finish().check_loops()
        if roles is None:
            classify(forest)
        else:
            forest.roles = dict(roles)
        return forest
