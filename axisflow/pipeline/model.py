"""A small, IR-free model of a classified forest: what the pipeline works on.

The scheduler, the memory accounting and the reference evaluator all read
this model; ``axisflow.pipeline.ir`` builds it from a ``batch.forest`` and
``ForestBuilder`` builds it by hand (tests, generated forests).

Modes. A tensor's *modes* are its carried indices followed by the proto
indices of its composite indices (at any depth), each once: a value carrying
``a_1<i_1,i_2>`` depends on the pair ``(i_1, i_2)`` as well, so ``i_1`` and
``i_2`` are modes of it (dense model of a pair-dependent index). A composite
index is a mode of its own, of its base key's space (``a_1<i_1>`` has the
extent of ``a``). At a contraction node, the *node modes* are the value's
modes followed by the modes summed there (the contracted indices and any
other factor mode absent from the result).

Frames. A value lives in its own index frame. ``Factor.labels`` name a
factor's carried indices in the consumer's frame; a use-site's labels name
the value's carried indices in the tree's frame. ``relabel`` extends such a
positional renaming to proto indices.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from axisflow.roles.decision import LoopRole, Occurrence, decide_axis
from axisflow.roles.index import Index


class ModelError(ValueError):
    """A forest the pipeline cannot model; the message names the place."""


# --------------------------------------------------------------------------
# Modes and renamings
# --------------------------------------------------------------------------


def expand_modes(indices: Iterable[Index]) -> tuple[Index, ...]:
    """The modes of a tensor carrying ``indices``: the indices, then their
    proto indices at any depth, each once, in order of first appearance."""
    found: dict[Index, None] = {}
    indices = tuple(indices)
    for index in indices:
        found.setdefault(index, None)
    for index in indices:
        for proto in index.all_protos():
            found.setdefault(proto, None)
    return tuple(found)


def relabel(
    frame: Sequence[Index],
    here: Sequence[Index],
    where: str,
    seed: Mapping[Index, Index] | None = None,
) -> dict[Index, Index]:
    """The renaming of every mode of ``frame`` into ``here`` (positional).

    ``seed`` holds renamings already decided (a consumer's choice). Plain
    indices map position by position; proto indices then follow: a proto
    already mapped must map into the matching composite's protos, a composite
    with one unmapped proto per index space pairs it with the one left, and
    only when nothing is forced do the protos of one composite pair up in
    sorted order (proto lists are symmetric, so any pairing is a valid
    reading; deciding forced ones first keeps every list consistent). Raises
    ``ModelError`` naming ``where`` if the renaming is inconsistent.
    """
    if len(frame) != len(here):
        raise ModelError(
            f"{where}: {len(here)} labels for a value with {len(frame)} indices"
        )
    mapping: dict[Index, Index] = {}
    backward: dict[Index, Index] = {}

    def bind(source: Index, target: Index) -> None:
        if not source.same_type(target):
            raise ModelError(
                f"{where}: {target} stands for {source}, which is of another "
                "index space"
            )
        seen = mapping.setdefault(source, target)
        if seen != target:
            raise ModelError(f"{where}: {source} is labelled both {seen} and {target}")
        back = backward.setdefault(target, source)
        if back != source:
            raise ModelError(f"{where}: {target} stands for both {back} and {source}")

    def resolve(source: Index, target: Index, forced_only: bool) -> bool:
        """Pair the protos of one composite; False if not forced (yet)."""
        if len(source.protos) != len(target.protos):
            raise ModelError(
                f"{where}: {target} and {source} have different proto lists"
            )
        free = list(target.protos)
        unmapped: list[Index] = []
        for proto in source.protos:
            image = mapping.get(proto)
            if image is None:
                unmapped.append(proto)
            elif image in free:
                free.remove(image)
            else:
                raise ModelError(
                    f"{where}: proto {proto} of {source} maps to {image}, which "
                    f"is not a proto of {target}"
                )
        keys = {p.base_key for p in unmapped}
        groups = {
            key: (
                [p for p in unmapped if p.base_key == key],
                [p for p in free if p.base_key == key],
            )
            for key in keys
        }
        for key, (sources, targets) in groups.items():
            if len(sources) != len(targets):
                raise ModelError(f"{where}: no proto of {target} for {key} in {source}")
        if forced_only and any(len(sources) > 1 for sources, _ in groups.values()):
            return False
        for sources, targets in groups.values():
            for proto, image in zip(sources, targets, strict=True):
                bind(proto, image)
        return True

    for source, target in (seed or {}).items():
        bind(source, target)
    for source, target in zip(frame, here, strict=True):
        bind(source, target)
    pending = [(s, t) for s, t in zip(frame, here, strict=True) if s.protos or t.protos]
    while pending:
        waiting: list[tuple[Index, Index]] = []
        for source, target in pending:
            if resolve(source, target, forced_only=True):
                waiting.extend(
                    (p, mapping[p])
                    for p in source.protos
                    if p.protos or mapping[p].protos
                )
            else:
                waiting.append((source, target))
        if len(waiting) == len(pending) and waiting == pending:
            source, target = waiting.pop(0)  # nothing forced: choose
            resolve(source, target, forced_only=False)
            waiting.extend(
                (p, mapping[p]) for p in source.protos if p.protos or mapping[p].protos
            )
        pending = waiting
    return mapping


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


@dataclass(frozen=True)
class Factor:
    """One factor of a contraction: a value and its labels in the consumer's
    frame."""

    value: str
    labels: tuple[Index, ...]


@dataclass
class Value:
    """A value in its own frame. Inputs (leaves and opaque values) have no
    factors; the pipeline never builds them, it reads them."""

    name: str
    result: tuple[Index, ...]
    contracted: tuple[Index, ...] = ()
    factors: tuple[Factor, ...] = ()
    tensor: str | None = None
    """The tensor label of a leaf."""
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


@dataclass(frozen=True)
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


@dataclass
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
    mode_labels: dict[Index, Index] = field(default_factory=dict[Index, Index])
    """Node mode of the value -> tree label here (filled by ``Forest.finish``)."""

    def consumer_loops(self, forest: Forest) -> tuple[Loop, ...]:
        """Loops enclosing the consumer (none for a root)."""
        if self.parent is None:
            return ()
        return forest.sites[self.parent].loops


@dataclass
class Tree:
    """One term: a coefficient and the root use-site (``None``: a bare number)."""

    name: str
    coeff: Fraction
    root: int | None


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
        for value in self._values_factors_first():
            self._finish_value(value)
        for site in self.sites:
            self._finish_site(site)
        return self

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

    def _finish_value(self, value: Value) -> None:
        value.modes = expand_modes(value.result)
        where = f"value @{value.name}"
        node: dict[Index, None] = dict.fromkeys(value.modes)
        maps: list[dict[Index, Index]] = []
        for factor in value.factors:
            factor_value = self.values.get(factor.value)
            if factor_value is None:
                raise ModelError(f"{where}: unknown factor @{factor.value}")
            mapping = relabel(
                factor_value.result, factor.labels, f"{where}, factor @{factor.value}"
            )
            maps.append({mode: mapping[mode] for mode in factor_value.modes})
            for mode in maps[-1].values():
                node.setdefault(mode, None)
        value.factor_maps = tuple(maps)
        if value.factors:
            on_factors = {m for mapping in maps for m in mapping.values()}
            for mode in value.modes:
                if mode not in on_factors:
                    raise ModelError(f"{where}: result mode {mode} is on no factor")
        value.node_modes = tuple(node)

    def _finish_site(self, site: Site) -> None:
        value = self.values[site.value]
        tree = self.trees[site.tree].name
        where = f"use-site of @{value.name} in tree @{tree}"
        if len(site.children) != len(value.factors):
            raise ModelError(
                f"{where}: {len(site.children)} factor use-sites for "
                f"{len(value.factors)} factors"
            )
        # One renaming for the whole node (result and factors together), seeded
        # with the consumer's labels for this value's modes: every list then
        # reads the symmetric proto pairings the same way.
        seed: dict[Index, Index] = {}
        if site.parent is not None:
            parent = self.sites[site.parent]
            position = parent.children.index(site.number)
            factor_map = self.values[parent.value].factor_maps[position]
            seed = {mode: parent.mode_labels[factor_map[mode]] for mode in value.modes}
        frame = list(value.result)
        here = list(site.labels)
        for factor, child_number in zip(value.factors, site.children, strict=True):
            frame += factor.labels
            here += self.sites[child_number].labels
        mapping = relabel(frame, here, where, seed)
        mode_labels = {mode: mapping[mode] for mode in value.node_modes}
        used: dict[Index, Index] = {}
        for mode, label in mode_labels.items():
            other = used.setdefault(label, mode)
            if other != mode:
                raise ModelError(
                    f"{where}: label {label} stands for {other} and {mode}"
                )
        site.mode_labels = mode_labels
        seen_instances: set[int] = set()
        seen_labels: set[Index] = set()
        for loop in site.loops:
            if loop.label in seen_labels:
                raise ModelError(
                    f"{where}: two enclosing loops bind {loop.label} (a loop "
                    "nested in a loop over the same label)"
                )
            seen_labels.add(loop.label)
            if loop.instance in seen_instances:
                raise ModelError(
                    f"{where}: loop instance {loop.instance} encloses itself"
                )
            seen_instances.add(loop.instance)
            space = self.instance_spaces.setdefault(loop.instance, loop.space)
            if space != loop.space:
                raise ModelError(
                    f"loop instance {loop.instance} iterates both {space} and "
                    f"{loop.space}"
                )

    # -- views -------------------------------------------------------------

    def built_values(self) -> list[Value]:
        """Non-input values that have at least one use-site, factors first."""
        used = {site.value for site in self.sites}
        return [
            v for v in self._values_factors_first() if not v.is_input and v.name in used
        ]

    def sites_of(self) -> dict[str, list[Site]]:
        """Use-sites per value, in walk order."""
        found: dict[str, list[Site]] = {name: [] for name in self.values}
        for site in self.sites:
            found[site.value].append(site)
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


def classify_model(forest: Forest) -> None:
    """Fill ``forest.roles`` with the decision tree, as ``classify-axes`` does
    on IR (occurrence context = the consumer's loops; instance-aware when any
    loop instance is shared). For forests built without IR."""
    shared = forest.has_slots
    for name, sites in forest.sites_of().items():
        if not sites:
            continue
        value = forest.values[name]
        occurrences = [
            Occurrence(
                site.labels,
                (loop.label for loop in site.consumer_loops(forest)),
                (
                    -1 if loop.slot is None else loop.slot
                    for loop in site.consumer_loops(forest)
                ),
            )
            for site in sites
        ]
        sliced = _sliced(occurrences)
        for site in sites:
            for loop in site.loops:
                key = (name, loop.space)
                if key in forest.roles:
                    continue
                verdict = decide_axis(
                    value.result,
                    value.contracted,
                    loop.label,
                    occurrences,
                    sliced,
                    (lambda o, i: o.slot_of(i)) if shared else None,
                )
                forest.roles[key] = verdict.role


def _sliced(occurrences: Sequence[Occurrence]) -> frozenset[Index]:
    common: set[Index] | None = None
    for occurrence in occurrences:
        modes: set[Index] = set()
        for loop_index in occurrence.ectx:
            modes.add(loop_index)
            modes.update(loop_index.all_protos())
        common = modes if common is None else common & modes
    return frozenset(common or ())


# --------------------------------------------------------------------------
# Building a forest by hand
# --------------------------------------------------------------------------


def labels(text: str) -> tuple[Index, ...]:
    """``"i_1 a_1<i_1>"`` -> indices (white-space separated labels)."""
    return tuple(Index.parse(part) for part in text.split())


@dataclass(frozen=True)
class UseSpec:
    """A use-site to build: value, labels, and the factor items."""

    value: str
    labels: tuple[Index, ...]
    items: tuple[UseSpec | LoopSpec, ...] = ()


@dataclass(frozen=True)
class LoopSpec:
    """A batch loop to build: label, optional slot, enclosed items."""

    label: Index
    slot: int | None
    items: tuple[UseSpec | LoopSpec, ...]


def use(value: str, carried: str, *items: UseSpec | LoopSpec) -> UseSpec:
    """A use-site spec: ``use("T1", "b c d f", use("B", ...), use("D", ...))``."""
    return UseSpec(value, labels(carried), items)


def loop(label: str, slot: int | None, *items: UseSpec | LoopSpec) -> LoopSpec:
    """A loop spec: ``loop("b", 0, use(...))``."""
    return LoopSpec(Index.parse(label), slot, items)


class ForestBuilder:
    """Assemble a ``Forest`` in Python: spaces, values, trees.

    ``finish()`` derives modes and instances exactly as the IR path does;
    roles come from ``classify_model`` unless given.
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
        ``"value label label ..."`` in this value's frame. The contracted
        indices are computed (on both factors, not in the result)."""
        factors: list[Factor] = []
        for text in (left, right):
            value, *rest = text.split()
            factors.append(Factor(value, tuple(Index.parse(p) for p in rest)))
        result = labels(carried)
        on_both = set(factors[0].labels) & set(factors[1].labels)
        contracted = tuple(sorted(on_both - set(result)))
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
            site = Site(number, item.value, tree, item.labels, loops, parent)
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
        forest.finish()
        if roles is None:
            classify_model(forest)
        else:
            forest.roles = dict(roles)
        return forest


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
