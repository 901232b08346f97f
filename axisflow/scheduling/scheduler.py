"""From a classified forest to an ordered batch schedule (pure logic).

Rules (``docs/pipeline.md`` explains them with examples):

1. **Home.** Each value that is not an input is built once (common
   subexpressions included), at its first use-site. For every loop enclosing
   that site, the loop *binds* the mode of the value carrying the loop's label
   there (a result mode or a mode summed at the node), and the value's role
   for the loop's space gives its *disposition*:

   ============  ================  ========================================
   role          bound mode        disposition
   ============  ================  ========================================
   LoopLocal     result mode       ``slice``: one block per iteration, read
                                   in the same iteration
   LoopCarried   result mode       ``scatter``: each block scattered into a
                                   full buffer outside the loop
   any           summed mode       ``accumulate``: partial sums added into a
                                   buffer outside the loop
   LoopInvariant or nothing bound  hoisted above the loop, or ``rebuild``
   ============  ================  ========================================

   A value is hoisted above every loop that binds none of its modes. With
   ``rebuild="fused"`` (not the default) one exception keeps it fused: a
   loop that also encloses its consumer's home and a deeper loop of that
   home binding the value; there it is rebuilt every iteration, so that its
   slice of the deeper loop stays with the consumer (multiply-adds traded
   for memory, counted by ``memory.schedule_flops``). ``rebuild_at`` asks
   the same for one value and one loop (the planner's priced rebuilds).
2. **Order and split.** Within a block, items go in stages: an edge whose
   producer leaves a loop (``accumulate``, ``scatter``, or a reader outside
   that loop) starts a new stage; each stage holds the block's own builds,
   then one pass per loop instance. A loop whose nodes fall in several stages
   is split into passes, so every reader of a carried value runs after the
   pass producing it has closed. A sliced value is placed in the pass of its
   readers when they all share one.
3. **Fixpoint.** A sliced value read outside its pass (by a later pass of a
   split loop, another loop, or a tree output), or read without its slice,
   is demoted to ``scatter`` (LoopLocal to LoopCarried); a rebuilt value that
   must leave its loop is hoisted above it. Both only grow, and the schedule
   is rebuilt until a round changes nothing, within ``max_rounds``.
4. **Buffers.** A value read outside the loop passes it is built in gets a
   buffer just before the outermost pass it leaves, full size except for the
   slices of the loops it stays in, zeroed when it accumulates.
5. **Residual.** Given a residual layout, one zeroed residual buffer per
   operator group comes first; every tree output adds its result into its
   group's buffer. A tree root read by nothing but tree outputs, that would
   need a buffer, gets none: its pieces are added straight into the
   residual, once per tree that reads it (so no term result stays live
   beside another, even when several terms share one). Operator steps
   close the schedule: group 0's operators in place, then every other
   group's operators with the result added into group 0.
"""

from __future__ import annotations

import heapq
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from axisflow.forest.model import (
    Forest,
    ModelError,
    Node,
    Site,
    Value,
    dependencies,
    readers_of,
    topological_order,
)
from axisflow.residual import ResidualLayout
from axisflow.roles.decision import LoopRole
from axisflow.roles.index import Index
from axisflow.scheduling.check import check_schedule
from axisflow.scheduling.memory import Sizing
from axisflow.scheduling.options import Rebuild
from axisflow.scheduling.schedule import (
    Apply,
    Bind,
    Buffer,
    Build,
    Item,
    LoopPass,
    Output,
    Residual,
    Schedule,
    Write,
)

DEFAULT_MAX_ROUNDS = 16
"""Bound on scheduling rounds (each round after the first follows a demotion)."""


class SchedulingError(ValueError):
    """The forest cannot be scheduled (or the fixpoint bound was hit)."""


class Disposition(StrEnum):
    """What one loop does to one value built inside it."""

    SLICE = "slice"
    SCATTER = "scatter"
    ACCUMULATE = "accumulate"
    REBUILD = "rebuild"


LEAVES = (Disposition.SCATTER, Disposition.ACCUMULATE)
"""Dispositions whose readers run after the loop pass closes."""


@dataclass(frozen=True)
class Binding:
    """A loop's disposition for a value and the mode it binds (if any)."""

    disposition: Disposition
    mode: Index | None


_REBUILD = Binding(Disposition.REBUILD, None)
"""The binding of a loop that binds none of a value's modes (immutable:
one shared by all)."""


@dataclass
class Placement:
    """Where a value is built: the loop instances around it, outermost first."""

    home: tuple[int, ...]
    bindings: dict[int, Binding]


@dataclass
class Decisions:
    """What the fixpoint has decided so far, with the reasons."""

    demoted: dict[tuple[str, int], str] = field(
        default_factory=dict[tuple[str, int], str]
    )
    """(value, loop instance) demoted from slice to scatter."""
    hoisted: dict[tuple[str, int], str] = field(
        default_factory=dict[tuple[str, int], str]
    )
    """(value, loop instance) hoisted above a loop it was rebuilt in."""


@dataclass
class ScheduleResult:
    """A schedule with the decisions behind it."""

    schedule: Schedule
    placements: dict[str, Placement]
    decisions: Decisions


# --------------------------------------------------------------------------
# Dependency structure
# --------------------------------------------------------------------------

# --------------------------------------------------------------------------
# Placement
# --------------------------------------------------------------------------


def place(
    forest: Forest,
    decisions: Decisions,
    rebuild: Rebuild = "never",
    previous: Mapping[str, Placement] | None = None,
    decided: Collection[str] = (),
    rebuild_at: Mapping[str, int] | None = None,
) -> dict[str, Placement]:
    """The home and loop bindings of every built value (rule 1).

    ``rebuild_at``: value -> the one loop instance it is rebuilt in (as
    ``rebuild="fused"`` would, for that loop only; the planner's priced
    rebuilds).

    ``previous``: the placements of an earlier round, after which only the
    values ``decided`` got new decisions: a value placed from the same
    decisions under a consumer placed the same keeps its placement (placing
    reads nothing else that changes between rounds)."""
    placements: dict[str, Placement] = {}
    # label -> mode per mode-label map (sites with the same value and maps
    # share one; keyed by identity, the sites keep them alive)
    inverses: dict[int, dict[Index, Index]] = {}
    for site in forest.sites:  # pre-order: a consumer before its factors
        value = forest.values[site.value]
        if value.is_input or value.name in placements:
            continue
        consumer_home: tuple[int, ...] = ()
        consumer: str | None = None
        if site.parent is not None:
            consumer = forest.sites[site.parent].value
            consumer_home = placements[consumer].home
        if (
            previous is not None
            and value.name not in decided
            # its consumer's placement the very object it was placed under
            and (consumer is None or placements[consumer] is previous[consumer])
        ):
            placements[value.name] = previous[value.name]
            continue
        mode_of_label = inverses.get(id(site.mode_labels))
        if mode_of_label is None:
            mode_of_label = inverses[id(site.mode_labels)] = {
                label: mode for mode, label in site.mode_labels.items()
            }
        placements[value.name] = _place_at(
            forest,
            value,
            site,
            consumer_home,
            decisions,
            rebuild,
            mode_of_label,
            None if rebuild_at is None else rebuild_at.get(value.name),
        )
    return placements


def _place_at(
    forest: Forest,
    value: Value,
    site: Site,
    consumer_home: tuple[int, ...],
    decisions: Decisions,
    rebuild: Rebuild,
    mode_of_label: Mapping[Index, Index],
    rebuilt_in: int | None = None,
) -> Placement:
    roles = forest.roles
    name = value.name
    modes = value.modes
    demoted = decisions.demoted
    bindings: list[Binding] = []
    for loop in site.loops:
        role = roles.get((name, loop.space)) or forest.role(name, loop.space)
        mode = mode_of_label.get(loop.label)
        if mode is None or role is LoopRole.LOOP_INVARIANT:
            bindings.append(_REBUILD)
        elif mode in modes:
            local = role is LoopRole.LOOP_LOCAL and (name, loop.instance) not in demoted
            disposition = Disposition.SLICE if local else Disposition.SCATTER
            bindings.append(Binding(disposition, mode))
        else:
            bindings.append(Binding(Disposition.ACCUMULATE, mode))
    shared = set(consumer_home)
    # keep_below[k]: a deeper loop binds the value and is in the consumer's home
    keep_below = [False] * len(site.loops)
    seen_shared_bound = False
    for k in range(len(site.loops) - 1, -1, -1):
        keep_below[k] = seen_shared_bound
        if (
            bindings[k].disposition is not Disposition.REBUILD
            and site.loops[k].instance in shared
        ):
            seen_shared_bound = True
    home: list[int] = []
    placed: dict[int, Binding] = {}
    modes_bound: dict[Index, int] = {}
    for k, (loop, binding) in enumerate(zip(site.loops, bindings, strict=True)):
        if binding.disposition is Disposition.REBUILD and not (
            (rebuild == "fused" or loop.instance == rebuilt_in)
            and keep_below[k]
            and loop.instance in shared
            and (name, loop.instance) not in decisions.hoisted
        ):
            continue
        if binding.mode is not None:
            other = modes_bound.setdefault(binding.mode, loop.instance)
            if other != loop.instance:
                raise SchedulingError(
                    f"value @{name}: loop instances {other} and "
                    f"{loop.instance} both bind its mode {binding.mode}"
                )
        home.append(loop.instance)
        placed[loop.instance] = binding
    return Placement(tuple(home), placed)


# --------------------------------------------------------------------------
# Order and split (one round)
# --------------------------------------------------------------------------


@dataclass(eq=False)  # identity: two passes of one loop are different
class _Pass:
    instance: int
    body: list[_Pass | Node] = field(default_factory=list["_Pass | Node"])


class _Round:
    """One scheduling round: placements -> nested passes -> new decisions."""

    def __init__(
        self,
        forest: Forest,
        placements: dict[str, Placement],
        order: list[Node],
        readers: dict[str, list[Node]],
        dependencies: dict[Node, list[str]],
        position: dict[Node, int],
    ) -> None:
        self.forest = forest
        self.placements = placements
        self.order = order
        self.position = position
        self.readers = readers
        self.dependencies = dependencies
        self.homes = {node: self.home(node) for node in order}
        self.pass_path: dict[Node, tuple[_Pass, ...]] = {}

    def home(self, node: Node) -> tuple[int, ...]:
        return () if isinstance(node, int) else self.placements[node].home

    def disposition(self, value: str, instance: int) -> Disposition:
        return self.placements[value].bindings[instance].disposition

    def schedule(self) -> list[_Pass | Node]:
        return self.block((), self.order, ())

    def block(
        self, prefix: tuple[int, ...], nodes: list[Node], path: tuple[_Pass, ...]
    ) -> list[_Pass | Node]:
        depth = len(prefix)
        homes = self.homes
        if len(nodes) == 1:  # a third of the blocks: one unit, nothing to order
            node = nodes[0]
            home = homes[node]
            if len(home) <= depth:
                self.pass_path[node] = path
                return [node]
            single = _Pass(home[depth])
            single.body = self.block((*prefix, single.instance), nodes, (*path, single))
            return [single]
        members = set(nodes)
        # each node's loop instance at this depth (None: built here)
        group: dict[Node, int | None] = {}
        for node in nodes:
            home = homes[node]
            group[node] = home[depth] if len(home) > depth else None
        placements = self.placements
        dependencies = self.dependencies

        stage: dict[Node, int] = {}
        for node in nodes:  # topological order: earliest stages
            here = group[node]
            latest = 0
            for dep in dependencies[node]:
                if dep not in members:
                    continue
                at = stage[dep]
                produced_in = group[dep]
                if produced_in is not None and (
                    produced_in != here
                    or placements[dep].bindings[produced_in].disposition in LEAVES
                ):
                    at += 1
                if at > latest:
                    latest = at
            stage[node] = latest
        for node in reversed(nodes):  # a sliced value joins its readers' pass
            loop = group[node]
            if isinstance(node, int) or loop is None:
                continue
            if placements[node].bindings[loop].disposition in LEAVES:
                continue
            inside = [r for r in self.readers.get(node, []) if r in members]
            if inside and all(group[r] == loop for r in inside):
                stages = {stage[r] for r in inside}
                if len(stages) == 1:
                    stage[node] = stages.pop()
        # Units: each own build of the block, and one pass per (stage, loop).
        unit_key: dict[tuple[int, int], int] = {}
        unit_of: dict[Node, int] = {}
        unit_loop: list[int | None] = []
        unit_nodes: list[list[Node]] = []
        for node in nodes:
            loop = group[node]
            unit = unit_key.get((stage[node], loop)) if loop is not None else None
            if unit is None:
                unit = len(unit_nodes)
                unit_loop.append(loop)
                unit_nodes.append([])
                if loop is not None:
                    unit_key[(stage[node], loop)] = unit
            unit_of[node] = unit
            unit_nodes[unit].append(node)
        # Order the units by a topological sort that prefers the earliest node
        # in tree order, so that outputs and buffers are released early.
        successors: list[set[int]] = [set() for _ in unit_nodes]
        waiting = [0] * len(unit_nodes)
        for unit, inner in enumerate(unit_nodes):
            sources = {
                unit_of[dep]
                for node in inner
                for dep in self.dependencies[node]
                if dep in members and unit_of[dep] != unit
            }
            waiting[unit] = len(sources)
            for source in sources:
                successors[source].add(unit)
        ready = [
            (self.position[inner[0]], unit)
            for unit, inner in enumerate(unit_nodes)
            if waiting[unit] == 0
        ]
        heapq.heapify(ready)
        items: list[_Pass | Node] = []
        while ready:
            _, unit = heapq.heappop(ready)
            inner = unit_nodes[unit]
            loop = unit_loop[unit]
            if loop is None:
                items.append(inner[0])
                self.pass_path[inner[0]] = path
            else:
                new_pass = _Pass(loop)
                new_pass.body = self.block((*prefix, loop), inner, (*path, new_pass))
                items.append(new_pass)
            for successor in successors[unit]:
                waiting[successor] -= 1
                if waiting[successor] == 0:
                    first = unit_nodes[successor][0]
                    heapq.heappush(ready, (self.position[first], successor))
        if len(items) != len(unit_nodes):
            raise SchedulingError("internal error: the units of a block form a cycle")
        return items

    def validate(self, decisions: Decisions) -> bool:
        """Record demotions and hoists this round's order calls for (rule 3);
        return whether anything new was decided."""
        changed = False
        for value, readers in self.readers.items():
            produced = self.pass_path[value]
            for reader in readers:
                common = _shared_depth(produced, self.pass_path[reader])
                for left in produced[common:]:
                    changed |= self.leave(decisions, value, left.instance, reader)
                for shared in produced[:common]:
                    changed |= self.check_slice(
                        decisions, value, shared.instance, reader
                    )
        return changed

    def leave(
        self, decisions: Decisions, value: str, instance: int, reader: Node
    ) -> bool:
        disposition = self.disposition(value, instance)
        key = (value, instance)
        where = self.describe(reader)
        if disposition is Disposition.SLICE and key not in decisions.demoted:
            decisions.demoted[key] = (
                f"read by {where} outside the pass of loop instance {instance} "
                "that builds it"
            )
            return True
        if disposition is Disposition.REBUILD and key not in decisions.hoisted:
            decisions.hoisted[key] = (
                f"read by {where} outside loop instance {instance}, which binds "
                "none of its modes"
            )
            return True
        return False

    def check_slice(
        self, decisions: Decisions, value: str, instance: int, reader: Node
    ) -> bool:
        binding = self.placements[value].bindings[instance]
        if binding.disposition in LEAVES:
            raise SchedulingError(
                f"internal error: @{value} is read inside the pass it "
                f"{binding.disposition}s out of"
            )
        if binding.disposition is not Disposition.SLICE or isinstance(reader, int):
            return False
        assert binding.mode is not None
        consumer = self.forest.values[reader]
        reader_bindings = self.placements[reader].bindings
        for factor, mapping in zip(consumer.factors, consumer.factor_maps, strict=True):
            if factor.value != value:
                continue
            wanted = reader_bindings.get(instance)
            if wanted is None or wanted.mode != mapping[binding.mode]:
                key = (value, instance)
                if key in decisions.demoted:
                    return False
                decisions.demoted[key] = (
                    f"read by @{reader} without its block of loop instance {instance}"
                )
                return True
        return False

    def describe(self, node: Node) -> str:
        if isinstance(node, int):
            return f"the output of tree @{self.forest.trees[node].name}"
        return f"@{node}"


def _shared_depth(produced: tuple[_Pass, ...], read: tuple[_Pass, ...]) -> int:
    """How many enclosing passes (the same pass objects) two nodes share."""
    depth = 0
    while depth < min(len(produced), len(read)) and produced[depth] is read[depth]:
        depth += 1
    return depth


# --------------------------------------------------------------------------
# Emission
# --------------------------------------------------------------------------


class _Emitter:
    def __init__(
        self,
        forest: Forest,
        round_: _Round,
        decisions: Decisions,
        blocks: Mapping[str, int],
        sizes: Sizing,
        residual: ResidualLayout | None = None,
        loop_blocks: Mapping[int, int] | None = None,
    ) -> None:
        self.forest = forest
        self.residual = residual
        self.loop_blocks = loop_blocks or {}
        self.group_of: dict[int, int] = {}
        if residual is not None:
            for number, group in enumerate(residual.groups):
                for term in group.terms:
                    self.group_of[term] = number
        self.round = round_
        self.decisions = decisions
        self.blocks = blocks
        self.sizes = sizes
        self.pass_numbers: dict[int, int] = {}
        self.block_of: dict[int, int] = {}
        # the values whose buffer goes just before each pass, and their depth
        self.buffers: dict[_Pass, list[str]] = {}
        self.buffered: dict[str, int] = {}
        for value, readers in round_.readers.items():
            produced = round_.pass_path[value]
            depth = len(produced)
            for reader in readers:
                depth = min(depth, _shared_depth(produced, round_.pass_path[reader]))
            if depth < len(produced):
                self.buffers.setdefault(produced[depth], []).append(value)
                self.buffered[value] = depth
        # roots added straight into the residual: no buffer of their own
        # roots read only by tree outputs: each piece is added into the
        # residual once per tree (a root several trees share needs no
        # buffer either)
        self.direct: dict[str, list[int]] = {}
        if residual is not None:
            for number, tree in enumerate(forest.trees):
                if tree.root is None:
                    continue
                value = forest.sites[tree.root].value
                readers = round_.readers.get(value, [])
                if value in self.buffered and all(isinstance(r, int) for r in readers):
                    self.direct.setdefault(value, []).append(number)
            for names in self.buffers.values():
                names[:] = [n for n in names if n not in self.direct]

    def prologue(self) -> list[Item]:
        """The residual buffers, before everything."""
        if self.residual is None:
            return []
        size = self.sizes.mode_bytes(self.residual.modes)
        return [
            Residual(g, self.residual.modes, size)
            for g in range(len(self.residual.groups))
        ]

    def epilogue(self) -> list[Item]:
        """The operator steps, after everything."""
        if self.residual is None:
            return []
        size = self.sizes.mode_bytes(self.residual.modes)
        steps: list[Item] = []
        for g, group in enumerate(self.residual.groups):
            if g or group.operators:
                steps.append(Apply(g, group.operators, size))
        return steps

    def emit(self, items: list[_Pass | Node], instances: tuple[int, ...]) -> list[Item]:
        out: list[Item] = []
        for item in items:
            if isinstance(item, _Pass):
                for value in self.buffers.get(item, []):
                    out.append(self.buffer(value, instances))
                space = self.forest.instance_spaces[item.instance]
                number = self.pass_numbers.get(item.instance, 0)
                self.pass_numbers[item.instance] = number + 1
                block = self.loop_blocks.get(item.instance) or self.blocks.get(space, 1)
                self.block_of[item.instance] = block
                body = self.emit(item.body, (*instances, item.instance))
                out.append(LoopPass(item.instance, space, number, block, body))
            elif isinstance(item, int):
                root = self.forest.trees[item].root
                value = None if root is None else self.forest.sites[root].value
                into = self.group_of.get(item)
                direct = value is not None and item in self.direct.get(value, ())
                out.append(Output(self.forest.trees[item].name, value, into, direct))
            else:
                out.extend(self.build(item))
        return out

    def build(self, name: str) -> list[Item]:
        placement = self.round.placements[name]
        slices: list[Bind] = []
        sums: list[Bind] = []
        for instance in placement.home:
            binding = placement.bindings[instance]
            if binding.mode is None:
                continue
            target = sums if binding.disposition is Disposition.ACCUMULATE else slices
            target.append(Bind(binding.mode, instance))
        demoted = tuple(
            i for i in placement.home if (name, i) in self.decisions.demoted
        )
        value = self.forest.values[name]
        build = Build(
            name,
            tuple(slices),
            tuple(sums),
            demoted,
            self.sizes.bytes(value, slices, self.block_of),
        )
        if name in self.direct:
            return [
                build,
                *(
                    Write(
                        name,
                        bool(sums),
                        self.group_of[tree],
                        self.forest.trees[tree].name,
                    )
                    for tree in self.direct[name]
                ),
            ]
        if name not in self.buffered:
            return [build]
        return [build, Write(name, bool(sums))]

    def buffer(self, name: str, instances: tuple[int, ...]) -> Buffer:
        placement = self.round.placements[name]
        kept = set(instances)
        slices = [
            Bind(b.mode, i)
            for i, b in placement.bindings.items()
            if i in kept and b.mode is not None and b.disposition is Disposition.SLICE
        ]
        accumulate = any(
            b.disposition is Disposition.ACCUMULATE
            for i, b in placement.bindings.items()
            if i not in kept
        )
        value = self.forest.values[name]
        return Buffer(
            name,
            tuple(slices),
            accumulate,
            self.sizes.bytes(value, slices, self.block_of),
        )


# --------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------


def schedule_forest(
    forest: Forest,
    *,
    block: int | Mapping[str, int] = 1,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    sizes: Sizing | None = None,
    residual: ResidualLayout | None = None,
    rebuild: Rebuild = "never",
    check: bool = True,
    rebuild_at: Mapping[str, int] | None = None,
    loop_blocks: Mapping[int, int] | None = None,
) -> ScheduleResult:
    """Schedule a classified forest (rules in the module docstring).

    ``block``: elements per block, for every space or per space key;
    ``loop_blocks`` (loop instance -> elements per block) overrides it for
    single loops. ``rebuild_at``: value -> the loop instance it is rebuilt
    in every iteration (``rebuild="fused"`` for that value and loop only).
    ``max_rounds``: bound on the demotion fixpoint; ``SchedulingError`` if a
    round still changes decisions when it is reached. ``sizes`` fills the
    byte sizes of builds and buffers (default: the forest's own).
    ``residual``: accumulate the trees into that residual (rule 5).
    ``rebuild``: ``fused`` keeps a value inside an outer loop that binds none
    of its modes when a deeper loop of its consumer binds it (rebuilt every
    iteration, rule 1; multiply-adds for memory), ``never`` (the default)
    hoists it. ``check=False`` skips checking
    the result against ``check_schedule`` (a search that checks its final
    schedule). Raises ``SchedulingError`` (or ``ModelError``) for a forest
    it cannot schedule.
    """
    if max_rounds < 1:
        raise SchedulingError(f"max-rounds must be at least 1, got {max_rounds}")
    forest.check_loops()
    blocks = _blocks(forest, block)
    _check_single_loops(forest, rebuild_at or {}, loop_blocks or {})
    decisions = Decisions()
    order = topological_order(forest)
    readers = readers_of(forest)
    # what every round reads the same
    depends = {node: dependencies(forest, node) for node in order}
    position = {node: k for k, node in enumerate(order)}
    placements: dict[str, Placement] | None = None
    decided: set[str] = set()
    for round_number in range(1, max_rounds + 1):
        placements = place(forest, decisions, rebuild, placements, decided, rebuild_at)
        current = _Round(forest, placements, order, readers, depends, position)
        nested = current.schedule()
        demoted, hoisted = len(decisions.demoted), len(decisions.hoisted)
        if not current.validate(decisions):
            emitter = _Emitter(
                forest,
                current,
                decisions,
                blocks,
                sizes or Sizing(forest),
                residual,
                loop_blocks or {},
            )
            body = emitter.emit(nested, ())
            items = [*emitter.prologue(), *body, *emitter.epilogue()]
            schedule = Schedule(items, round_number)
            problems = check_schedule(forest, schedule) if check else []
            if problems:
                raise SchedulingError(
                    "internal error: the schedule breaks a rule: "
                    + "; ".join(p.message for p in problems[:3])
                )
            return ScheduleResult(schedule, placements, decisions)
        # decisions are only ever added: the new ones are the last
        decided = {
            value
            for value, _ in (
                *list(decisions.demoted)[demoted:],
                *list(decisions.hoisted)[hoisted:],
            )
        }
    pending = sorted(
        f"@{v} on loop instance {i}"
        for (v, i) in (*decisions.demoted, *decisions.hoisted)
    )
    raise SchedulingError(
        f"the demotion fixpoint was not reached within {max_rounds} rounds "
        f"(max-rounds); decided so far: {', '.join(pending[:8])}"
        + (" ..." if len(pending) > 8 else "")
    )


def _check_single_loops(
    forest: Forest, rebuild_at: Mapping[str, int], loop_blocks: Mapping[int, int]
) -> None:
    """``rebuild_at`` names built values and loop instances of ``forest``,
    ``loop_blocks`` its loop instances with positive blocks
    (``SchedulingError`` naming the entry otherwise)."""
    instances = forest.instance_spaces
    for name, instance in rebuild_at.items():
        value = forest.values.get(name)
        if value is None or value.is_input:
            raise SchedulingError(f"rebuild_at: @{name} is no value the forest builds")
        if instance not in instances:
            raise SchedulingError(
                f"rebuild_at: @{name} names loop instance {instance!r}, which the "
                "forest does not have"
            )
    for instance, size in loop_blocks.items():
        if instance not in instances:
            raise SchedulingError(
                f"loop_blocks: loop instance {instance!r} is not in the forest"
            )
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise SchedulingError(
                f"loop_blocks: the block of loop instance {instance} must be a "
                f"positive integer, got {size!r}"
            )


def _blocks(forest: Forest, block: int | Mapping[str, int]) -> dict[str, int]:
    if isinstance(block, int):
        if block < 1:
            raise SchedulingError(f"block must be positive, got {block}")
        return dict.fromkeys(forest.instance_spaces.values(), block)
    blocks: dict[str, int] = {}
    for key, size in block.items():
        if size < 1:
            raise SchedulingError(f"block for {key} must be positive, got {size}")
        blocks[key] = size
    return blocks


__all__ = [
    "DEFAULT_MAX_ROUNDS",
    "Binding",
    "Decisions",
    "Disposition",
    "ModelError",
    "Placement",
    "ScheduleResult",
    "SchedulingError",
    "schedule_forest",
    "topological_order",
]
