"""The forest model: one pure description of a forest of contractions.

No xDSL. The SeQuant frontend builds it directly; ``classify-axes`` and the
scheduler read it; the ``batch`` dialect is one text form of it
(``axisflow.dialects.batch_model`` is the only bridge, both ways). Roles are
computed on it in one place (``axisflow.forest.roles``); every relabelling
goes through ``axisflow.forest.frames``.

Modes. A tensor's *modes* are its carried indices followed by the proto
indices of its composite indices (at any depth), each once: a value carrying
``a_1<i_1,i_2>`` depends on the pair ``(i_1, i_2)`` as well, so ``i_1`` and
``i_2`` are modes of it (dense model of a pair-dependent index). A composite
index is a mode of its own, of its base key's space (``a_1<i_1>`` has the
extent of ``a``). At a contraction node, the *node modes* are the value's
modes followed by the modes summed there (modes of a factor that are not
modes of the result).

Frames. A value lives in its own index frame. A factor names the factor
value's modes in the consumer's frame, a use-site names the value's modes in
its tree's labels: positionally for the carried indices (``labels``) and
explicitly for the proto modes (``protos``), so that no pairing of symmetric
proto lists is ever re-guessed (``frames.mode_map`` derives only forced
ones).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from itertools import chain
from typing import TypeVar

from axisflow.forest.frames import (
    FrameError,
    ProtoPairs,
    expand_modes,
    mode_map,
    node_labels,
)
from axisflow.roles.decision import LoopRole
from axisflow.roles.index import Index


class ModelError(ValueError):
    """A forest the pipeline cannot model; the message names the place."""


# --------------------------------------------------------------------------
# The forest
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Space:
    """An index space; ``extent`` and ``elem`` (bytes) are optional."""

    key: str
    extent: int | None = None
    elem: int | None = None
    composites: tuple[tuple[int, int], ...] = ()
    """Extents of composite kinds: (number of protos, extent), sorted."""


@dataclass(frozen=True, slots=True)
class Factor:
    """One factor of a contraction: a value and its modes in the consumer's
    frame (``labels`` for its carried indices, ``protos`` for proto modes)."""

    value: str
    labels: tuple[Index, ...]
    protos: ProtoPairs = ()
    """Explicit pairings: factor-frame proto mode -> consumer-frame label."""


@dataclass(slots=True)
class Value:
    """A value in its own frame. Inputs (leaves and opaque values) have no
    factors; the pipeline never builds them, it reads them."""

    name: str
    result: tuple[Index, ...]
    contracted: tuple[Index, ...] = ()
    factors: tuple[Factor, ...] = ()
    tensor: str | None = None
    """The tensor label of a leaf."""
    symmetry: str | None = None
    """A leaf's SeQuant symmetry (``N-N-S``), kept for the IR."""
    layout: tuple[int, int, int] | None = None
    """Sizes of a leaf's bra, ket and aux index groups, kept for the IR."""
    modes: tuple[Index, ...] = ()
    """Expanded result modes (filled by ``Forest.finish``)."""
    node_modes: tuple[Index, ...] = ()
    """Result modes then the modes summed at this node."""
    factor_maps: tuple[dict[Index, Index], ...] = ()
    """Per factor: the factor's modes -> this node's modes."""

    @property
    def is_input(self) -> bool:
        """Whether the value is an input (no factors: a leaf or opaque)."""
        return not self.factors

    @property
    def summed_modes(self) -> tuple[Index, ...]:
        """Modes summed at this node."""
        return self.node_modes[len(self.modes) :]


@dataclass(frozen=True, slots=True)
class Loop:
    """A batch loop of one tree: its physical instance and tree-frame label.

    Loops sharing a fusion ``slot`` are one instance (numbered by the slot);
    a loop without a slot is an instance of its own (numbered after the
    largest slot)."""

    instance: int
    label: Index
    slot: int | None = None

    @property
    def space(self) -> str:
        """The index space iterated."""
        return self.label.base_key


def _no_modes() -> dict[Index, Index]:
    """An empty mode map: a site's default before ``Forest.finish`` (a plain
    function: calling the alias ``dict[Index, Index]`` costs several times
    more, once per site)."""
    return {}


@dataclass(slots=True)
class Site:
    """One use-site (``batch.use``) of a value."""

    number: int
    value: str
    tree: int
    labels: tuple[Index, ...]
    """The value's carried indices here, in the tree's labels."""
    loops: tuple[Loop, ...]
    """Loops enclosing the use-site, outermost first."""
    parent: int | None
    """The consumer's site (``None`` for a tree root)."""
    children: tuple[int, ...] = ()
    """The factors' sites, in factor order."""
    protos: ProtoPairs = ()
    """Explicit pairings: the value's proto mode -> tree label here."""
    mode_map: dict[Index, Index] = field(default_factory=_no_modes)
    """Mode of the value -> tree label here (filled by ``Forest.finish``)."""
    mode_labels: dict[Index, Index] = field(default_factory=_no_modes)
    """Node mode of the value -> tree label here (filled by ``Forest.finish``;
    shared between sites with the same value and mode maps: do not change)."""

    def clone(self) -> Site:
        """A shallow copy (the planner makes hundreds of thousands:
        ``copy.copy`` of a slotted dataclass costs about four times more)."""
        return Site(
            self.number,
            self.value,
            self.tree,
            self.labels,
            self.loops,
            self.parent,
            self.children,
            self.protos,
            self.mode_map,
            self.mode_labels,
        )

    def consumer_loops(self, forest: Forest) -> tuple[Loop, ...]:
        """Loops enclosing the consumer (none for a root)."""
        if self.parent is None:
            return ()
        return forest.sites[self.parent].loops


@dataclass(slots=True)
class Tree:
    """One term: a coefficient and the root use-site (``None``: a bare number)."""

    name: str
    coeff: Fraction
    root: int | None
    operators: tuple[str, ...] = ()
    """SeQuant operators applied to the term (``Ŝ{...}``), as printed."""


_T = TypeVar("_T")
_K = TypeVar("_K")


def _derived(
    memo: dict[_K, _T],
    key: _K,
    derive: Callable[..., _T],
    arguments: tuple[object, ...],
    place: Callable[..., str],
    place_arguments: tuple[object, ...],
) -> _T:
    """``memo[key]``, else ``derive(*arguments, where)`` with a generic place,
    remembered there. If the derivation fails, it is made again with the
    place named by ``place(*place_arguments)`` for the message (a message per
    derivation costs more than a memoised result, and only an error needs
    one), raised as ``ModelError``."""
    found = memo.get(key)
    if found is not None:
        return found
    try:
        found = memo[key] = derive(*arguments, "relabelling")
        return found
    except FrameError:
        try:
            derive(*arguments, place(*place_arguments))
        except FrameError as error:
            raise ModelError(str(error)) from None
        raise AssertionError("a derivation is deterministic") from None


def _factor_place(value: str, factor: str) -> str:
    return f"value @{value}, factor @{factor}"


class _FinishMemo:
    """What ``Forest.finish`` derived per identity of the (shared, alive)
    objects it read: modes per result tuple, mode maps per (frame, labels,
    protos) tuples, node labels per (value, site map, factor sites' maps)."""

    __slots__ = ("labels", "maps", "modes")

    def __init__(self) -> None:
        self.modes: dict[int, tuple[Index, ...]] = {}
        self.maps: dict[tuple[int, int, int], dict[Index, Index]] = {}
        self.labels: dict[tuple[int, ...], dict[Index, Index]] = {}


@dataclass
class Forest:
    """Spaces, values, trees and use-sites, with the loop roles."""

    name: str | None
    spaces: dict[str, Space]
    values: dict[str, Value]
    trees: list[Tree]
    sites: list[Site]
    roles: dict[tuple[str, str], LoopRole] = field(
        default_factory=dict[tuple[str, str], LoopRole]
    )
    """``(value, space key) -> role``."""
    instance_spaces: dict[int, str] = field(default_factory=dict[int, str])
    """Loop instance -> the index space it iterates."""
    has_slots: bool = False
    """Whether any loop declares a fusion slot (instance-aware roles)."""

    def finish(self) -> Forest:
        """Derive modes, factor maps and site mode labels; check instances.

        Raises ``ModelError`` on an inconsistent forest. Returns ``self``.
        """
        # Label tuples are shared by values, factors and sites (the reader
        # keeps one per distinct list): derived once per tuple identity. The
        # model keeps the tuples alive, so no two have the same identity.
        memo = _FinishMemo()
        for value in self._values_factors_first():
            self._finish_value(value, memo)
        self._map_sites(memo)
        # Loop tuples are shared by sibling sites: each is visited once.
        seen_loops: set[int] = set()
        for site in self.sites:
            self._finish_site(site, memo)
            loops = site.loops
            if loops and id(loops) not in seen_loops:
                seen_loops.add(id(loops))
                for loop in loops:
                    self.instance_spaces.setdefault(loop.instance, loop.space)
        return self

    def site_mode_map(self, site: Site) -> dict[Index, Index]:
        """The mode map of ``site``, derived now if the forest is not
        finished (the roles read it for values with proto modes only).

        Raises ``ModelError`` for a use-site of an unknown value or one whose
        labels do not relabel its value."""
        if not site.mode_map:
            self._map_site(site, _FinishMemo())
        return site.mode_map

    def _map_sites(self, memo: _FinishMemo) -> None:
        for site in self.sites:
            if not site.mode_map:  # a builder that knows the exact map sets it
                self._map_site(site, memo)

    def _values_factors_first(self) -> list[Value]:
        """Every value, each after its factors (depth-first, linear)."""
        order: list[Value] = []
        state: dict[str, int] = {}  # 1 = on the stack, 2 = done
        for root in self.values:
            if root in state:
                continue
            state[root] = 1
            stack: list[tuple[str, int]] = [(root, 0)]
            while stack:
                name, position = stack[-1]
                value = self.values[name]
                if position == len(value.factors):
                    state[name] = 2
                    order.append(value)
                    stack.pop()
                    continue
                stack[-1] = (name, position + 1)
                child = value.factors[position].value
                if child not in self.values:
                    raise ModelError(f"value @{name}: unknown factor @{child}")
                if state.get(child) == 1:
                    raise ModelError(f"value @{child} depends on itself")
                if child not in state:
                    state[child] = 1
                    stack.append((child, 0))
        return order

    def _finish_value(self, value: Value, memo: _FinishMemo) -> None:
        modes = memo.modes.get(id(value.result))
        if modes is None:
            modes = memo.modes[id(value.result)] = expand_modes(value.result)
        value.modes = modes
        if not value.factors:
            value.factor_maps = ()
            value.node_modes = modes
            return
        maps: list[dict[Index, Index]] = []
        values = self.values
        for factor in value.factors:
            factor_value = values.get(factor.value)
            if factor_value is None:
                raise ModelError(f"value @{value.name}: unknown factor @{factor.value}")
            maps.append(
                _derived(
                    memo.maps,
                    (id(factor_value.result), id(factor.labels), id(factor.protos)),
                    mode_map,
                    (factor_value.result, factor.labels, factor.protos),
                    _factor_place,
                    (value.name, factor.value),
                )
            )
        value.factor_maps = tuple(maps)
        # The node's modes: the result's, then the others of the factors in
        # order of first appearance.
        node = dict.fromkeys(chain(modes, *[mapping.values() for mapping in maps]))
        on_factors = set(chain.from_iterable(mapping.values() for mapping in maps))
        if not on_factors.issuperset(modes):
            for mode in modes:
                if mode not in on_factors:
                    raise ModelError(
                        f"value @{value.name}: result mode {mode} is on no factor"
                    )
        value.node_modes = tuple(node)

    def _site_where(self, site: Site) -> str:
        return f"use-site of @{site.value} in tree @{self.trees[site.tree].name}"

    def _map_site(self, site: Site, memo: _FinishMemo) -> None:
        value = self.values.get(site.value)
        if value is None:
            raise ModelError(f"{self._site_where(site)}: unknown value @{site.value}")
        site.mode_map = _derived(
            memo.maps,
            (id(value.result), id(site.labels), id(site.protos)),
            mode_map,
            (value.result, site.labels, site.protos),
            self._site_where,
            (site,),
        )

    def _finish_where(self, site: Site, value: Value) -> str:
        return f"use-site of @{value.name} in tree @{self.trees[site.tree].name}"

    def _finish_site(self, site: Site, memo: _FinishMemo) -> None:
        value = self.values[site.value]
        factors = value.factors
        children = site.children
        if len(children) != len(factors):
            raise ModelError(
                f"{self._finish_where(site, value)}: {len(children)} factor use-sites "
                f"for {len(factors)} factors"
            )
        sites = self.sites
        child_maps: list[dict[Index, Index]] = []
        for factor, number in zip(factors, children, strict=True):
            child = sites[number]
            if child.value != factor.value:
                raise ModelError(
                    f"{self._finish_where(site, value)}: factor use-site names "
                    f"@{child.value}, but @{value.name} is built from @{factor.value}"
                )
            child_maps.append(child.mode_map)
        # Sites with the same value and mode maps get the same labels (the
        # maps are shared, see ``frames.mode_map``): derived once, keyed by
        # the identities of the value and the maps (alive with the sites).
        site.mode_labels = _derived(
            memo.labels,
            (id(value), id(site.mode_map), *map(id, child_maps)),
            node_labels,
            (site.mode_map, value.factor_maps, child_maps),
            self._finish_where,
            (site, value),
        )

    def check_loops(self) -> Forest:
        """What scheduling needs of the loops: no loop nested in a loop over
        the same label or in its own instance, one space per instance.
        (Roles need none of this.) Raises ``ModelError``; returns ``self``."""
        # Loop tuples are shared by sibling sites: each is checked once (at
        # its first site, the one a failure names), the site's place made
        # only for a message.
        checked: set[int] = set()
        instance_spaces = self.instance_spaces
        for site in self.sites:
            loops = site.loops
            if not loops or id(loops) in checked:
                continue
            checked.add(id(loops))  # the site keeps the tuple alive
            seen_instances: set[int] = set()
            seen_labels: set[Index] = set()
            for loop in loops:
                if loop.label in seen_labels:
                    raise ModelError(
                        f"{self._site_where(site)}: two enclosing loops bind "
                        f"{loop.label} (a loop nested in a loop over the same label)"
                    )
                seen_labels.add(loop.label)
                if loop.instance in seen_instances:
                    raise ModelError(
                        f"{self._site_where(site)}: loop instance {loop.instance} "
                        "encloses itself"
                    )
                seen_instances.add(loop.instance)
                space = instance_spaces[loop.instance]
                if space != loop.space:
                    raise ModelError(
                        f"loop instance {loop.instance} iterates both {space} and "
                        f"{loop.space}"
                    )
        return self

    # -- views -------------------------------------------------------------

    def built_values(self) -> list[Value]:
        """Non-input values that have at least one use-site, factors first."""
        used = {site.value for site in self.sites}
        return [
            v for v in self._values_factors_first() if not v.is_input and v.name in used
        ]

    def sites_of(self) -> dict[str, list[Site]]:
        """Use-sites per value, in walk order. Raises ``ModelError`` for a
        use-site of an unknown value."""
        found: dict[str, list[Site]] = {name: [] for name in self.values}
        for site in self.sites:
            of_value = found.get(site.value)
            if of_value is None:
                raise ModelError(
                    f"{self._site_where(site)}: unknown value @{site.value}"
                )
            of_value.append(site)
        return found

    def role(self, value: str, space: str) -> LoopRole:
        """The classified role; ``ModelError`` if it is missing."""
        role = self.roles.get((value, space))
        if role is None:
            raise ModelError(
                f"value @{value} has no loop role for index space {space} "
                "(run classify-axes first)"
            )
        return role


# --------------------------------------------------------------------------
# Dependency structure
# --------------------------------------------------------------------------

Node = str | int
"""A value name, or the index of a tree (its output)."""


def topological_order(forest: Forest) -> list[Node]:
    """Built values and tree outputs, factors first: each tree in order,
    post-order over its first-seen values, its output right after its root."""
    order: list[Node] = []
    seen: set[str] = set()
    for number, tree in enumerate(forest.trees):
        if tree.root is not None:
            stack: list[tuple[Site, int]] = [(forest.sites[tree.root], 0)]
            while stack:
                site, position = stack[-1]
                if position == 0 and (
                    site.value in seen or forest.values[site.value].is_input
                ):
                    stack.pop()
                    continue
                if position == len(site.children):
                    seen.add(site.value)
                    order.append(site.value)
                    stack.pop()
                    continue
                stack[-1] = (site, position + 1)
                stack.append((forest.sites[site.children[position]], 0))
        order.append(number)
    return order


def readers_of(forest: Forest) -> dict[str, list[Node]]:
    """Who reads each built value: its consumers' values and tree outputs."""
    readers: dict[str, dict[Node, None]] = {}
    for site in forest.sites:
        if forest.values[site.value].is_input:
            continue
        reader: Node = (
            site.tree if site.parent is None else forest.sites[site.parent].value
        )
        readers.setdefault(site.value, {})[reader] = None
    return {name: list(found) for name, found in readers.items()}


def dependencies(forest: Forest, node: Node) -> list[str]:
    """The built values ``node`` reads (inputs are not dependencies)."""
    if isinstance(node, int):
        root = forest.trees[node].root
        if root is None:
            return []
        value = forest.sites[root].value
        return [] if forest.values[value].is_input else [value]
    found: dict[str, None] = {}
    for factor in forest.values[node].factors:
        if not forest.values[factor.value].is_input:
            found[factor.value] = None
    return list(found)


def renumber_unslotted(forest: Forest) -> None:
    """Unslotted loops carry negative placeholder instances; give each a fresh
    instance after the largest slot."""
    largest = max(
        (lp.instance for site in forest.sites for lp in site.loops), default=-1
    )
    renumber: dict[int, int] = {}
    for site in forest.sites:
        for lp in site.loops:
            if lp.instance < 0 and lp.instance not in renumber:
                renumber[lp.instance] = max(largest, -1) + 1 + len(renumber)
    if not renumber:
        return
    for site in forest.sites:
        site.loops = tuple(
            Loop(renumber.get(lp.instance, lp.instance), lp.label, lp.slot)
            for lp in site.loops
        )
