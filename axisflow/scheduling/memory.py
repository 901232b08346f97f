"""Memory accounting: value sizes, live ranges and peaks, and the report.

Sizes come from the forest's index spaces:

* the extent of a space is its ``batch.space ... extent N``, or
  ``DEFAULT_EXTENT`` when absent; a mode's extent is its space's, except a
  composite index (``a_1<i_1,i_2>``) whose kind has an extent of its own
  (``batch.space a ... composite {2 = 40}``, ``extents="a<2>=40"``); its
  protos are modes too (see ``axisflow.forest.model``). The sizing rules
  are ``axisflow.order.extents.Extents``, the same the contraction-order
  search uses;
* the element size of a value is the largest ``elem`` among the spaces of its
  modes that declare one; otherwise the largest ``elem`` declared in the
  forest, otherwise ``DEFAULT_ELEM`` (8 bytes, a double);
* a value's full size is ``elem * prod(extent of each mode)``; restricted to
  the current block of a loop, a mode counts ``min(block, extent)`` instead
  (with blocks of one element, a slice is ``size / extent`` per sliced mode).

Live ranges follow program order, each loop body counted once (every
iteration has the same live set): a piece or value lives from its build to
its last use (a read, or its write into a buffer), a buffer from its
allocation to its last use; a use inside a loop nested in the object's own
scope keeps it to the end of that loop (every iteration needs it). What a
read finds is the schedule walker's rule (``axisflow.scheduling.walker``),
as for every reader of a schedule. ``releases`` says where a run may free
each piece and buffer, so that an executor holds what the model counts
(the NumPy evaluator does: ``tests/pipeline/test_measured_memory.py``).
Inputs (leaves, opaque values) belong to the caller and are not part of the
peak; the report lists their total. The unbatched forest is
the same accounting on the schedule with no loops, values in tree order.
"""

from __future__ import annotations

import itertools
import json
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import NamedTuple

from axisflow.forest.model import Forest, Value, topological_order
from axisflow.numerals import check_count, significant
from axisflow.order.extents import DEFAULT_EXTENT as DEFAULT_EXTENT
from axisflow.order.extents import Extents, split_kind
from axisflow.residual import ResidualLayout
from axisflow.roles.index import Index
from axisflow.scheduling.schedule import (
    Apply,
    Bind,
    Buffer,
    Build,
    Item,
    LoopExtentError,
    LoopPass,
    Output,
    Residual,
    Schedule,
    Write,
    loop_extents,
)
from axisflow.scheduling.walker import (
    BrokenScheduleError,
    BufferState,
    Piece,
    ScheduleWalker,
)

DEFAULT_ELEM = 8
"""Element size in bytes when no space declares one."""


class Sizing:
    """Extents, element sizes and byte sizes of one forest's values."""

    def __init__(self, forest: Forest, extents: Mapping[str, int] | None = None):
        """``extents`` overrides the forest's: space keys or composite kinds
        (``{"i": 80, "a<2>": 40}``)."""
        if extents is not None and not isinstance(extents, Mapping):
            raise TypeError(
                f"extents must be a mapping of space key to extent, got {extents!r}"
            )
        for key, extent in (extents or {}).items():
            check_count(f"extents[{key!r}]", extent)
        self.forest = forest
        spaces = {k: s.extent for k, s in forest.spaces.items() if s.extent is not None}
        composites = {
            (key, protos): extent
            for key, space in forest.spaces.items()
            for protos, extent in space.composites
        }
        for key, extent in (extents or {}).items():
            base, protos = split_kind(key)
            if protos is None:
                spaces[base] = extent
            else:
                composites[(base, protos)] = extent
        self.extents = Extents(spaces, composites)
        declared = [s.elem for s in forest.spaces.values() if s.elem is not None]
        self.default_elem = max(declared, default=DEFAULT_ELEM)
        # bytes per element per modes tuple (``elem`` depends on nothing
        # else; the memory model asks it for every build and buffer)
        self._elem_of: dict[tuple[Index, ...], int] = {}

    def extent(self, key: str) -> int:
        """The extent of index space ``key``."""
        return self.extents.space(key)

    def mode_extent(self, mode: Index) -> int:
        """The extent of one mode (a composite's kind's, if it has one)."""
        return self.extents.extent(mode)

    def is_default(self, key: str) -> bool:
        """Whether ``key``'s extent is the default."""
        return self.extents.is_default(key)

    def flops(self, value: Value) -> int:
        """Multiply-adds of building ``value``: the product of the extents of
        its node modes (result and summed); 0 for an input."""
        return self.extents.elements(value.node_modes) if value.factors else 0

    def elem(self, value: Value) -> int:
        """Bytes per element of ``value``."""
        found = self._elem_of.get(value.modes)
        if found is None:
            sizes = [
                space.elem
                for mode in value.modes
                if (space := self.forest.spaces.get(mode.base_key)) is not None
                and space.elem is not None
            ]
            found = self._elem_of[value.modes] = max(sizes, default=self.default_elem)
        return found

    def elements(
        self,
        value: Value,
        slices: Iterable[Bind] = (),
        blocks: Mapping[int, int] | None = None,
    ) -> int:
        """Elements of ``value`` with the sliced modes restricted to a block."""
        restricted = {b.mode: (blocks or {}).get(b.instance, 1) for b in slices}
        if not restricted:
            return self.extents.elements(value.modes)
        extent_of = self.extents.extent
        count = 1
        for mode in value.modes:
            extent = extent_of(mode)
            block = restricted.get(mode)
            count *= extent if block is None else min(block, extent)
        return count

    def bytes(
        self,
        value: Value,
        slices: Iterable[Bind] = (),
        blocks: Mapping[int, int] | None = None,
    ) -> int:
        """Bytes of ``value`` with the sliced modes restricted to a block."""
        return self.elem(value) * self.elements(value, slices, blocks)

    def full_bytes(self, value: Value) -> int:
        """Bytes of the whole value."""
        return self.bytes(value)

    def mode_bytes(self, modes: Iterable[Index]) -> int:
        """Bytes of a dense tensor over ``modes`` (the residual): the element
        size rule of a value with those modes."""
        modes = tuple(modes)
        sizes = [
            space.elem
            for mode in modes
            if (space := self.forest.spaces.get(mode.base_key)) is not None
            and space.elem is not None
        ]
        # the extents of the modes as ``Extents`` sizes them: a composite
        # mode of a kind with an extent of its own counts that extent
        return max(sizes, default=self.default_elem) * self.extents.elements(modes)


# --------------------------------------------------------------------------
# Live ranges
# --------------------------------------------------------------------------


@dataclass
class Lifetime:
    """One storage object: a built piece (``piece``: inside loops), a whole
    value (``value``), a ``buffer``, a ``residual`` buffer (``value`` is
    ``residual`` or ``residual#g``) or an ``operator`` step's extra residual,
    live over ``[start, end]``."""

    value: str
    kind: str
    bytes: int
    start: int
    end: int
    depth: int = field(default=0, compare=False, repr=False)
    """The scope it lives in (0: outside every loop); pieces and buffers."""
    release: Item | None = field(default=None, compare=False, repr=False)
    """The item of its own scope's body after which nothing uses it: its
    last use, or the loop pass around its last use (``releases``); ``None``
    for residuals and operator steps."""


@dataclass
class Peak:
    """The largest live total and what is live there."""

    bytes: int
    position: int
    live: list[Lifetime]


def lifetimes(
    forest: Forest, schedule: Schedule, sizing: Sizing | None = None
) -> list[Lifetime]:
    """Every storage object of a (valid) schedule with its live range (a
    residual buffer from its first write to the end, an operator step's
    extra residual at its step)."""
    return _account(forest, schedule, sizing or Sizing(forest)).found


def _account(forest: Forest, schedule: Schedule, sizing: Sizing) -> _Lifetimes:
    """``lifetimes``' walk, done: its lifetimes, the loops' iterations and
    each loop pass's span of positions."""
    try:
        extents = loop_extents(schedule, sizing.mode_extent, sizing.extent)
    except LoopExtentError:
        extents = {}  # a loop over two ranges (refused elsewhere): many blocks
    iterations = {
        item.instance: -(-extents[item.instance] // item.block)
        for item, _ in schedule.walk()
        if isinstance(item, LoopPass) and item.instance in extents
    }
    accounting = _Lifetimes(forest, sizing, schedule.blocks(), iterations)
    accounting.walk(schedule.items)
    for life in accounting.residuals.values():  # the result stays to the end
        if life.start >= 0:
            life.end = max(life.end, accounting.position)
    return accounting


@dataclass
class StorageEvents:
    """Where a run frees and allocates what the model counts, from one
    walk."""

    releases: dict[int, list[tuple[str, bool]]]
    """``releases``."""
    openings: dict[int, list[int]]
    """For each loop pass (by ``id``), the residual groups the model counts
    from its start, before their first write: the outermost pass of more
    than one block around the first write (its second block holds the
    residual throughout). A run that allocates them there holds what the
    model counts also when the last block is smaller than the first (else
    its smaller pieces meet the residual, the first block's larger ones
    never do)."""


def storage_events(
    forest: Forest, schedule: Schedule, sizing: Sizing | None = None
) -> StorageEvents:
    """Where a run of ``schedule`` frees pieces and buffers and allocates
    residuals (``StorageEvents``), from one walk."""
    accounting = _account(forest, schedule, sizing or Sizing(forest))
    found: dict[int, list[tuple[str, bool]]] = {}
    for life in accounting.found:
        if life.release is not None:
            found.setdefault(id(life.release), []).append(
                (life.value, life.kind == "buffer")
            )
    return StorageEvents(found, accounting.openings)


def releases(
    forest: Forest, schedule: Schedule, sizing: Sizing | None = None
) -> dict[int, list[tuple[str, bool]]]:
    """Where a run frees what ``lifetimes`` says is dead: for each item (by
    ``id``), the pieces (``False``) and buffers (``True``) of the scope it
    sits in that nothing uses after it, by value name. An executor that
    drops them after visiting the item holds what the model counts."""
    return storage_events(forest, schedule, sizing).releases


class _Lifetimes(ScheduleWalker[Lifetime, Lifetime]):
    """The walker's client that counts program positions: each item one, a
    loop pass one more at its end; every body is visited once. It accounts
    any schedule, also one that breaks the rules (the tests measure such),
    so it looks storage up with ``find``, without the rule of completion."""

    def __init__(
        self,
        forest: Forest,
        sizing: Sizing,
        blocks: dict[int, int],
        iterations: Mapping[int, int],
    ):
        super().__init__()
        self.forest = forest
        self.sizing = sizing
        self.blocks = blocks
        self.iterations = iterations
        """Loop instance -> its blocks (absent: not known, taken as many)."""
        self.found: list[Lifetime] = []
        self.builds: list[tuple[Build, int]] = []
        """Every build with its position."""
        self.residuals: dict[int, Lifetime] = {}
        """Residual group -> its buffer, until an ``Apply`` adds it into 0."""
        self.loop_starts: list[int] = []
        self.openings: dict[int, list[int]] = {}
        """Loop pass (``id``) -> the residual groups live from its start."""
        self.position = 0
        self.current: Item | None = None
        """The item being visited."""
        self.used_in: dict[int, list[Lifetime]] = {}
        """Loop pass (by ``id``) -> what its body uses of outer scopes."""
        self.spans: dict[int, tuple[int, int]] = {}
        """Loop pass (by ``id``) -> its first and last positions."""

    def walk(self, items: Sequence[Item]) -> None:
        visit = self.visit
        for item in items:
            self.position += 1
            self.current = item
            visit(item)

    def use(self, life: Lifetime) -> None:
        """A read or write of a piece or buffer: it lives until the end of
        the item of its own scope that holds the use, a loop pass when the
        use is in its body (every iteration needs it, up to the last)."""
        depth = len(self.scopes) - 1
        if life.depth == depth:
            life.release = self.current
            life.end = self.position
            return
        loop = self.scopes[life.depth + 1].loop
        if life.release is not loop:
            life.release = loop
            self.used_in.setdefault(id(loop), []).append(life)

    def touch(self, group: int) -> None:
        """A residual is live from its first write, or from the start of the
        outermost loop pass around it that runs more than one block (its
        second block holds the residual throughout; loops of one block run
        once, up to the write)."""
        life = self.residuals.get(group)
        if life is None:
            return
        if life.start < 0:
            life.start = self.position
            for scope, start in zip(self.scopes[1:], self.loop_starts, strict=True):
                loop = scope.loop
                if loop is not None and self.iterations.get(loop.instance, 2) > 1:
                    life.start = start
                    self.openings.setdefault(id(loop), []).append(group)
                    break
            self.found.append(life)
        life.end = max(life.end, self.position)

    def read_until_now(self, name: str) -> None:
        """A read of ``name``: its piece or buffer lives at least until here
        (inputs, stored nowhere, are not accounted)."""
        stored = self.find(name)
        if stored is not None:
            self.use(stored.data)

    def loop(self, loop: LoopPass) -> None:
        start = self.position
        self.loop_starts.append(start)
        self.visit_body(loop)
        self.loop_starts.pop()
        self.position += 1
        self.spans[id(loop)] = (start, self.position)
        for life in self.used_in.pop(id(loop), ()):
            if life.release is loop:
                life.end = self.position

    def build(self, build: Build) -> None:
        value = self.forest.values[build.value]
        find, use = self.find, self.use
        for factor in value.factors:
            stored = find(factor.value)  # inputs are stored nowhere
            if stored is not None:
                use(stored.data)
        depth = len(self.scopes) - 1
        kind = "piece" if depth else "value"
        size = self.sizing.bytes(value, build.slices, self.blocks)
        life = Lifetime(
            build.value, kind, size, self.position, self.position, depth, build
        )
        self.keep_piece(build, life)
        self.found.append(life)
        self.builds.append((build, self.position))

    def buffer(self, buffer: Buffer) -> None:
        value = self.forest.values[buffer.value]
        size = self.sizing.bytes(value, buffer.slices, self.blocks)
        depth = len(self.scopes) - 1
        life = Lifetime(
            buffer.value, "buffer", size, self.position, self.position, depth, buffer
        )
        self.keep_buffer(buffer, life)
        self.found.append(life)

    def write(
        self,
        write: Write,
        piece: Piece[Lifetime] | None,
        buffer: BufferState[Lifetime] | None,
    ) -> None:
        if piece is None:
            raise BrokenScheduleError(
                f"write of @{write.value}: no piece built in this block to write"
            )
        self.use(piece.data)
        if buffer is not None:
            self.use(buffer.data)
            self.fill(piece, buffer)
            return
        # Not a valid write (check_schedule says so); still accounted: the
        # piece goes into whatever buffer of the value is in reach.
        self.take(piece)
        self.read_until_now(write.value)

    def residual_write(self, write: Write, piece: Piece[Lifetime] | None) -> None:
        assert write.into is not None
        if piece is None:
            raise BrokenScheduleError(
                f"write of @{write.value} into the residual: no piece built in "
                "this block"
            )
        self.use(piece.data)
        self.add(piece)
        self.touch(write.into)

    def residual(self, residual: Residual) -> None:
        self.residuals[residual.group] = Lifetime(
            residual_name(residual.group), "residual", residual.bytes, -1, -1
        )

    def apply(self, apply: Apply) -> None:
        self.touch(apply.group)
        if apply.group != 0:
            self.touch(0)
        self.found.append(
            Lifetime(
                residual_name(apply.group),
                "operator",
                apply.bytes,
                self.position,
                self.position,
            )
        )
        if apply.group != 0:  # added into group 0, then released
            life = self.residuals.pop(apply.group, None)
            if life is not None:
                life.end = self.position
        self.close_group(apply.group)

    def output(self, output: Output) -> None:
        if output.value is not None and not output.direct:
            self.read_until_now(output.value)
        if output.into is not None:
            self.touch(output.into)


def task_lifetimes(
    forest: Forest,
    schedule: Schedule,
    sizing: Sizing | None = None,
    workers: int = 1,
) -> list[Lifetime]:
    """What one worker of a task-per-block executor holds
    (``axisflow.execution.dask_executor``): ``lifetimes``, run as one
    process runs the schedule, and

    * over each root loop pass of more than one block, its residuals (a
      ``blocks`` object): a worker runs the blocks dealt to it as one lane,
      each block adding into the partial sums and residuals of the one
      before it, so that it holds one set however many blocks it runs. The
      partial sums are the root buffers' own lifetimes (one process adds
      every block into the buffer); the residuals are the worker's own,
      beside the one the passes fold into;
    * where such a pass closes, the lanes a worker merges (``lanes``): of
      ``workers`` sharing the blocks, it receives every other's lane
      (one Dask result per block task) and holds them with its own beside
      the buffers it assembles from them, until every assembly reading
      them is done: each lane's partial sums and residuals, and all the
      pass's slices;
    * at each build of two factors, a ``copy`` of the smaller operand: the
      executor's contractions copy it into a layout BLAS takes where its
      summed axes do not group as it lies (``Contraction.copies``), freed
      when the product returns. Which products copy depends on the
      operands' layouts at run time, so every one is counted: at the
      benchmark's peak a product copies a 256 MiB input.

    (Until 2026-12-06, 18:00 UTC each block held its own partial sums until
    the assembly, and the model counted ``min(k, 4)`` blocks' on a worker
    running ``k``; it counted no copy, and no lane received.)"""
    sizing = sizing or Sizing(forest)
    accounting = _account(forest, schedule, sizing)
    found = accounting.found
    found += _operand_copies(forest, sizing, accounting.builds, accounting.blocks)
    residual_bytes = {
        item.group: item.bytes for item in schedule.items if isinstance(item, Residual)
    }
    root_buffers = {item.value for item in schedule.items if isinstance(item, Buffer)}
    for item in schedule.items:
        if not isinstance(item, LoopPass):
            continue
        # a loop over two ranges (refused elsewhere) has no count: skipped
        blocks = accounting.iterations.get(item.instance, 1)
        if blocks < 2:
            continue
        start, end = accounting.spans[id(item)]
        writes = pass_writes(item, root_buffers)
        residuals = sum(residual_bytes.get(group, 0) for group in writes.groups)
        if residuals:
            found.append(
                Lifetime(f"loop {item.instance}", "blocks", residuals, start, end)
            )
        # where the pass closes, a worker merging the lanes of ``lanes``
        # workers holds them all beside what they assemble (the buffers'
        # own lifetimes): each lane's partial sums and residuals, and the
        # slices of them all
        lanes = min(blocks, workers)
        summed = sum(sizing.full_bytes(forest.values[n]) for n in writes.summed)
        sliced = sum(sizing.full_bytes(forest.values[n]) for n in writes.sliced)
        merging = lanes * (summed + residuals) + sliced - residuals
        if merging > 0:
            found.append(Lifetime(f"loop {item.instance}", "lanes", merging, end, end))
    return found


def _operand_copies(
    forest: Forest,
    sizing: Sizing,
    builds: Iterable[tuple[Build, int]],
    blocks: Mapping[int, int],
) -> list[Lifetime]:
    """For each build of two factors, its smaller operand (the factor cut
    to the blocks of the modes its build binds) as a ``copy`` live at the
    build's position."""
    copies: list[Lifetime] = []
    for build, position in builds:
        value = forest.values[build.value]
        if len(value.factors) != 2:
            continue
        bound = {
            b.mode: blocks.get(b.instance, 1) for b in (*build.slices, *build.sums)
        }
        sizes: list[int] = []
        for factor, mapping in zip(value.factors, value.factor_maps, strict=True):
            operand = forest.values[factor.value]
            count = 1
            for mode in operand.modes:
                extent = sizing.mode_extent(mode)
                block = bound.get(mapping[mode])
                count *= extent if block is None else min(block, extent)
            sizes.append(count * sizing.elem(operand))
        copies.append(Lifetime(build.value, "copy", min(sizes), position, position))
    return copies


class PassWrites(NamedTuple):
    """What a root loop pass writes outside itself (``pass_writes``)."""

    summed: set[str]
    """Root buffers it sums into over its own loop: each block adds a
    partial sum of the whole, not a slice."""
    sliced: set[str]
    """The other root buffers it writes: each block its own slices."""
    groups: set[int]
    """Residual groups it adds into."""


def pass_writes(loop: LoopPass, root_buffers: Iterable[str]) -> PassWrites:
    """The root buffers (of ``root_buffers``) and residual groups root pass
    ``loop`` writes (``PassWrites``): a write goes into the root's buffer
    unless the pass allocates one of its own for the value."""
    roots = set(root_buffers)
    summed: set[str] = set()
    written: set[str] = set()
    groups: set[int] = set()
    own: set[str] = set()  # buffers allocated inside the pass
    sliced: dict[str, bool] = {}  # value -> its last build sliced by the loop
    for inner, _ in Schedule([loop]).walk():
        if isinstance(inner, Buffer):
            own.add(inner.value)
        elif isinstance(inner, Build):
            sliced[inner.value] = any(
                bind.instance == loop.instance for bind in inner.slices
            )
        elif isinstance(inner, Output) and inner.into is not None:
            if not inner.direct:
                groups.add(inner.into)
        elif isinstance(inner, Write):
            if inner.into is not None:
                groups.add(inner.into)
            elif inner.value in roots and inner.value not in own:
                written.add(inner.value)
                if inner.accumulate and not sliced.get(inner.value, False):
                    summed.add(inner.value)
    return PassWrites(summed, written - summed, groups)


def residual_name(group: int) -> str:
    """The name of a residual buffer in lifetimes and reports."""
    return "residual" if group == 0 else f"residual#{group}"


def live_curve(found: Iterable[Lifetime]) -> list[int]:
    """Live bytes at every program position ``0..last`` (a sweep)."""
    found = list(found)
    last = max((life.end for life in found), default=0)
    change = [0] * (last + 2)
    for life in found:
        change[life.start] += life.bytes
        change[life.end + 1] -= life.bytes
    return list(itertools.accumulate(change[: last + 1]))


def peak(found: list[Lifetime]) -> Peak:
    """The peak of live bytes over program positions (a sweep, n log n), and
    the objects live there."""
    events: list[tuple[int, int, int]] = []
    for life in found:
        events.append((life.start, 1, life.bytes))
        events.append((life.end + 1, 0, -life.bytes))
    events.sort()  # at one position, releases (0) before allocations (1)
    total = best = 0
    where = 0
    for position, _, change in events:
        total += change
        if total > best:
            best, where = total, position
    live = [life for life in found if life.start <= where <= life.end]
    return Peak(best, where, live if best else [])


def unbatched_schedule(
    forest: Forest,
    sizing: Sizing | None = None,
    residual: ResidualLayout | None = None,
) -> Schedule:
    """The forest evaluated without loops: values in tree order (factors
    first, each once), each tree's output right after its root (added into
    the residual, when a layout is given, with the operator steps last)."""
    sizing = sizing or Sizing(forest)
    items: list[Item] = []
    group_of: dict[int, int] = {}
    if residual is not None:
        size = sizing.mode_bytes(residual.modes)
        for g, group in enumerate(residual.groups):
            items.append(Residual(g, residual.modes, size))
            group_of.update(dict.fromkeys(group.terms, g))
    for node in topological_order(forest):
        if isinstance(node, int):
            tree = forest.trees[node]
            value = None if tree.root is None else forest.sites[tree.root].value
            items.append(Output(tree.name, value, group_of.get(node)))
        else:
            value = forest.values[node]
            items.append(Build(node, bytes=sizing.full_bytes(value)))
    if residual is not None:
        size = sizing.mode_bytes(residual.modes)
        for g, group in enumerate(residual.groups):
            if g or group.operators:
                items.append(Apply(g, group.operators, size))
    return Schedule(items, rounds=0)


# --------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------


@dataclass
class ValueMemory:
    """One built value in the report."""

    name: str
    modes: list[str]
    full_bytes: int
    piece_bytes: int
    """One built piece (per iteration of its loops; the full size if none)."""
    buffer_bytes: int | None
    placement: list[str]
    """``"<space>#<instance>:<how>"`` per loop around its build."""
    demoted: list[int]


@dataclass
class MemoryReport:
    """Sizes and peaks of one forest, unbatched and scheduled."""

    forest: str | None
    extents: dict[str, int]
    default_extents: list[str]
    elem: int
    blocks: dict[str, int]
    rounds: int
    values: list[ValueMemory]
    input_bytes: int
    unbatched_peak: int
    scheduled_peak: int
    flops: int = 0
    """Multiply-adds the schedule performs (``schedule_flops``): each value
    once, unless it is rebuilt inside loops (``recomputed_flops``)."""
    unbatched_live: list[str] = field(default_factory=list[str])
    scheduled_live: list[str] = field(default_factory=list[str])
    first_peak: int | None = None
    """The scheduler's peak before the never-worse guard dropped loops."""
    dropped: list[dict[str, object]] = field(default_factory=list[dict[str, object]])
    """Loops the guard dropped (``DroppedLoop.to_json``)."""
    residual_bytes: int = 0
    """Size of the residual buffer the trees accumulate into (0: none)."""
    share: str | None = None
    """``forest``: values built by several trees are shared; ``tree``: each
    tree rebuilds them (``axisflow.forest.sharing``); ``None``: not known
    (a forest read from IR: ``schedule_expression`` fills it in)."""
    extra_flops: int = 0
    """Multiply-adds above the shared forest's (each value once): copies of
    values several trees share, and rebuilds inside loops."""
    recomputed_flops: int = 0
    """Multiply-adds of values rebuilt inside loops that bind none of their
    modes (``rebuild=fused``)."""
    lower_bound: int = 0
    """Bytes no plan can go below (``lower_bound``)."""
    lower_bound_reason: str = ""
    front: list[dict[str, object]] = field(default_factory=list[dict[str, object]])
    """The Pareto front of the planner's search (``share=auto``): points
    ``{"peak_bytes", "flops", "kind", "shares", "chosen"}`` by increasing
    peak; empty when no search ran."""
    budget: int | None = None
    """The memory budget asked for, if any."""

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dictionary (all sizes in bytes)."""
        return {
            "forest": self.forest,
            "extents": self.extents,
            "default_extents": self.default_extents,
            "elem": self.elem,
            "blocks": self.blocks,
            "rounds": self.rounds,
            "input_bytes": self.input_bytes,
            "flops": self.flops,
            "unbatched_peak_bytes": self.unbatched_peak,
            "scheduled_peak_bytes": self.scheduled_peak,
            "unbatched_live_at_peak": self.unbatched_live,
            "scheduled_live_at_peak": self.scheduled_live,
            "residual_bytes": self.residual_bytes,
            "share": self.share,
            "extra_flops": self.extra_flops,
            "recomputed_flops": self.recomputed_flops,
            "lower_bound_bytes": self.lower_bound,
            "lower_bound_reason": self.lower_bound_reason,
            "budget_bytes": self.budget,
            "front": self.front,
            "scheduler_peak_bytes": self.first_peak,
            "dropped_loops": self.dropped,
            "values": [
                {
                    "name": v.name,
                    "modes": v.modes,
                    "full_bytes": v.full_bytes,
                    "piece_bytes": v.piece_bytes,
                    "buffer_bytes": v.buffer_bytes,
                    "placement": v.placement,
                    "demoted_instances": v.demoted,
                }
                for v in self.values
            ],
        }

    def json_text(self) -> str:
        """``to_json`` as text (UTF-8 labels kept readable)."""
        return json.dumps(self.to_json(), ensure_ascii=False, indent=2)

    def table(self) -> str:
        """A table for people."""
        name = "@" + self.forest if self.forest else "(unnamed forest)"
        extents = ", ".join(
            f"{k}={n}{'*' if k in self.default_extents else ''}"
            for k, n in self.extents.items()
        )
        lines = [
            f"memory of batch.forest {name}",
            f"  extents: {extents or '(none)'}"
            + ("   (* = default extent)" if self.default_extents else ""),
            f"  element size: {self.elem} B (default for values without a sized space)",
            f"  blocks: {', '.join(f'{k}={b}' for k, b in self.blocks.items()) or '-'}"
            f"   scheduling rounds: {self.rounds}",
        ]
        header = ("value", "modes", "full", "per piece", "buffer", "loops")
        rows = [
            (
                "@" + v.name,
                " ".join(v.modes) or "(scalar)",
                format_bytes(v.full_bytes),
                format_bytes(v.piece_bytes),
                "-" if v.buffer_bytes is None else format_bytes(v.buffer_bytes),
                " ".join(v.placement) or "-",
            )
            for v in self.values
        ]
        widths = [
            max(display_width(r[k]) for r in [header, *rows])
            for k in range(len(header))
        ]
        for row in [header, *rows]:
            lines.append(
                "  "
                + "  ".join(
                    pad_to_width(cell, w) for cell, w in zip(row, widths, strict=True)
                ).rstrip()
            )
        saving = (
            f" ({self.scheduled_peak / self.unbatched_peak:.3g}x of unbatched)"
            if self.unbatched_peak
            else ""
        )
        rebuilt = ""
        shared = self.flops - self.extra_flops
        copies = self.extra_flops - self.recomputed_flops
        parts = []
        if copies and self.share not in (None, "forest"):
            extra = f"{copies / shared:+.1%}" if shared else "+0"
            parts.append(
                f"values shared by several trees rebuilt in each: "
                f"{format_count(copies)} more, {extra}"
            )
        if self.recomputed_flops:
            extra = f"{self.recomputed_flops / shared:+.1%}" if shared else "+0"
            parts.append(
                f"values rebuilt inside loops: "
                f"{format_count(self.recomputed_flops)} more, {extra}"
            )
        if parts:
            rebuilt = f" ({'; '.join(parts)})"
        lines += [
            f"  multiply-adds: {format_count(self.flops)}{rebuilt}",
            f"  inputs (not in the peaks): {format_bytes(self.input_bytes)}",
            f"  peak unbatched: {format_bytes(self.unbatched_peak)}"
            f"  live: {', '.join(self.unbatched_live) or '-'}",
            f"  peak scheduled: {format_bytes(self.scheduled_peak)}{saving}"
            f"  live: {', '.join(self.scheduled_live) or '-'}",
        ]
        if self.lower_bound:
            lines.append(
                f"  lower bound: {format_bytes(self.lower_bound)} "
                f"({self.lower_bound_reason}); the peak is "
                f"{self.scheduled_peak / self.lower_bound:.3g}x of it"
            )
        if self.budget is not None:
            fits = "within" if self.scheduled_peak <= self.budget else "ABOVE"
            lines.append(
                f"  budget: {format_bytes(self.budget)} (the peak is {fits} it)"
            )
        if self.residual_bytes:
            lines.append(
                f"  residual buffer: {format_bytes(self.residual_bytes)} (every tree "
                "adds into it)"
            )
        if self.dropped:
            before = format_bytes(self.first_peak or 0)
            lines.append(
                f"  loops dropped (they raised the peak; {before} before): "
                f"{len(self.dropped)}"
            )
            lines.extend(f"    {entry['reason']}" for entry in self.dropped[:8])
            if len(self.dropped) > 8:
                lines.append(f"    ... and {len(self.dropped) - 8} more")
        return "\n".join(lines) + "\n"


EXACT_COUNT_DIGITS = 24
"""Counts of up to this many digits are printed in full after their rounded
form; longer ones only rounded (a count can have thousands of digits)."""


def format_count(count: int) -> str:
    """``123456789`` -> ``"1.235e+08 (123456789)"``; exact below 10^6, the
    digits in full up to ``EXACT_COUNT_DIGITS`` of them, any size (no float:
    ``axisflow.numerals.significant``)."""
    if count < 10**6:
        return str(count)
    if count < 10**EXACT_COUNT_DIGITS:
        return f"{significant(count)} ({count})"
    return significant(count)


def format_bytes(size: int) -> str:
    """``1536`` -> ``"1.5 KiB"``; exact below 1 KiB, four significant digits
    above, any size (``axisflow.numerals.significant``)."""
    if size < 1024:
        return f"{size} B"
    units = ("KiB", "MiB", "GiB", "TiB", "PiB")
    power = next(
        (p for p in range(1, len(units)) if size < 1024 ** (p + 1)), len(units)
    )
    # No float(size): sizes beyond 1.8e308 B exist (18 modes at extent 1e18)
    # and their PiB count may overflow a float too.
    return f"{significant(Fraction(size, 1024**power))} {units[power - 1]}"


def memory_report(
    forest: Forest,
    schedule: Schedule,
    sizing: Sizing | None = None,
    residual: ResidualLayout | None = None,
) -> MemoryReport:
    """Sizes of every built value, and the unbatched and scheduled peaks
    (both accumulating into ``residual`` when a layout is given)."""
    sizing = sizing or Sizing(forest)
    blocks = schedule.blocks()
    builds: dict[str, tuple[Build, tuple[LoopPass, ...]]] = {}
    buffers: dict[str, Buffer] = {}
    direct: set[str] = set()
    for item, loops in schedule.walk():
        if isinstance(item, Build):
            builds[item.value] = (item, loops)
        elif isinstance(item, Buffer):
            buffers[item.value] = item
        elif isinstance(item, Write) and item.into is not None:
            direct.add(item.value)  # written straight into the residual
    values: list[ValueMemory] = []
    for name, (build, loops) in builds.items():
        value = forest.values[name]
        how: dict[int, str] = {}
        for bind in build.slices:
            buffer = buffers.get(name)
            kept = buffer is not None and bind in buffer.slices
            if name in direct:
                how[bind.instance] = "scatter"
            else:
                how[bind.instance] = "slice" if kept or buffer is None else "scatter"
        for bind in build.sums:
            how[bind.instance] = "accumulate"
        placement = [
            f"{loop.space}#{loop.instance}:{how.get(loop.instance, 'rebuild')}"
            for loop in loops
        ]
        buffer = buffers.get(name)
        values.append(
            ValueMemory(
                name,
                [m.full_label for m in value.modes],
                sizing.full_bytes(value),
                sizing.bytes(value, build.slices, blocks),
                None if buffer is None else sizing.bytes(value, buffer.slices, blocks),
                placement,
                list(build.demoted),
            )
        )
    inputs = {site.value for site in forest.sites if forest.values[site.value].is_input}
    input_bytes = sum(sizing.full_bytes(forest.values[n]) for n in sorted(inputs))
    unbatched = peak(
        lifetimes(forest, unbatched_schedule(forest, sizing, residual), sizing)
    )
    scheduled = peak(lifetimes(forest, schedule, sizing))
    keys = sorted(
        {m.base_key for v in forest.values.values() for m in v.modes}
        | set(forest.spaces)
    )
    space_of_instance = forest.instance_spaces
    flops = schedule_flops(forest, schedule, sizing)
    bound = lower_bound(
        forest,
        residual,
        {loop.space for site in forest.sites for loop in site.loops},
        sizing,
        rebuilt_inside_loops=flops > forest_flops(forest, sizing),
    )
    extents = {k: sizing.extent(k) for k in keys}
    for (key, protos), extent in sorted(sizing.extents.composites.items()):
        extents[f"{key}<{protos}>"] = extent
    return MemoryReport(
        forest=forest.name,
        extents=extents,
        default_extents=[k for k in keys if sizing.is_default(k)],
        elem=sizing.default_elem,
        blocks={space_of_instance.get(i, "?"): b for i, b in blocks.items()},
        rounds=schedule.rounds,
        values=values,
        input_bytes=input_bytes,
        unbatched_peak=unbatched.bytes,
        scheduled_peak=scheduled.bytes,
        flops=flops,
        recomputed_flops=max(0, flops - forest_flops(forest, sizing)),
        lower_bound=bound.bytes,
        lower_bound_reason=bound.reason,
        unbatched_live=[_describe(life) for life in unbatched.live],
        scheduled_live=[_describe(life) for life in scheduled.live],
        residual_bytes=0 if residual is None else sizing.mode_bytes(residual.modes),
    )


@dataclass(frozen=True)
class LowerBound:
    """Bytes no plan of the forest can go below, and what forces them."""

    bytes: int
    reason: str


def lower_bound(
    forest: Forest,
    residual: ResidualLayout | None,
    spaces: Iterable[str],
    sizing: Sizing | None = None,
    *,
    rebuilt_inside_loops: bool = False,
) -> LowerBound:
    """The largest of what must be live at once under any loop choice,
    blocks and sharing: the residual (twice while an operator step holds
    its operand and its result), at each contraction its piece and its
    built factors' pieces, each at one element per mode of a batched space
    (a mode no loop can slice counts its whole extent), and, for plans that
    rebuild nothing inside a loop (``rebuilt_inside_loops=False``: every
    plan of the planner), the whole values a contraction forces
    (``_whole_value_bound``)."""
    sizing = sizing or Sizing(forest)
    batched = set(spaces)
    best = LowerBound(0, "nothing to store")
    if residual is not None:
        size = sizing.mode_bytes(residual.modes)
        if residual.has_operators:
            best = LowerBound(
                2 * size, "the residual, twice while the operator step runs"
            )
        else:
            best = LowerBound(size, "the residual")

    def piece(name: str) -> int:
        value = forest.values[name]
        count = sizing.elem(value)
        for mode in value.modes:
            if mode.base_key not in batched:
                count *= sizing.mode_extent(mode)
        return count

    for value in forest.built_values():
        # a value that is both factors (``v0 v0``) is stored once
        built = {f.value for f in value.factors if not forest.values[f.value].is_input}
        total = piece(value.name) + sum(piece(name) for name in built)
        if total > best.bytes:
            best = LowerBound(
                total,
                f"@{value.name} and its built factors, one element per batched mode",
            )
    if not rebuilt_inside_loops:
        found = _whole_value_bound(forest, residual, batched, sizing)
        if found is not None and found.bytes > best.bytes:
            best = found
    return best


def _whole_value_bound(
    forest: Forest,
    residual: ResidualLayout | None,
    batched: set[str],
    sizing: Sizing,
) -> LowerBound | None:
    """What a contraction whose result and built factors share no batched
    mode forces, in a plan that rebuilds nothing inside a loop.

    A value is stored below its whole size only when a loop of two blocks
    or more encloses its build and its readers and binds one of its modes.
    Without rebuilds every loop around a build binds a label of its node,
    and the outermost loop around a build is the outermost one around
    whatever build it shares a loop with; so a value built in loops shared
    with its reader has that reader's outermost loop, and that loop binds
    one of its modes. At a contraction ``X = Y Z`` the outermost loop ``ℓ``
    around ``X`` (a label of its node, or none) therefore leaves whole every
    one of ``X`` (unless it is its tree's root, which adds into the
    residual piece by piece whatever ``ℓ`` binds), ``Y``, ``Z`` whose modes
    miss ``ℓ``: the bound is the smallest over ``ℓ`` of the largest of
    those. Beside the residual: the unsliced value ``V`` closest to the
    root on the path from a whole one to its tree's root is read in every
    block of the root's outermost loop (the values above it are sliced by
    that loop), whose first block writes into the residual, or it is the
    root's whole piece at its write; so the residual is live beside a whole
    value of that path, at least the smallest of the path."""
    sites = forest.sites
    writes = (
        set()
        if residual is None
        else {term for group in residual.groups for term in group.terms}
    )
    residual_bytes = 0 if residual is None else sizing.mode_bytes(residual.modes)
    path_least: dict[int, int] = {}

    def least_up(number: int) -> int:
        """The smallest whole value from use-site ``number`` up to its root."""
        found = path_least.get(number)
        if found is None:
            site = sites[number]
            found = sizing.full_bytes(forest.values[site.value])
            if site.parent is not None:
                found = min(found, least_up(site.parent))
            path_least[number] = found
        return found

    def batch_labels(site_number: int, modes: Iterable[Index]) -> set[Index]:
        labels = sites[site_number].mode_labels
        return {labels[m] for m in modes if labels[m].base_key in batched}

    best: LowerBound | None = None
    for site in sites:
        value = forest.values[site.value]
        if value.is_input:
            continue
        members = [
            child
            for child in site.children
            if not forest.values[sites[child].value].is_input
        ]
        if site.parent is not None:
            members.append(site.number)
        if not members:
            continue
        modes = {
            m: batch_labels(m, forest.values[sites[m].value].modes) for m in members
        }
        options: list[Index | None] = [
            None,
            *sorted(batch_labels(site.number, value.node_modes), key=str),
        ]
        into_residual = site.tree in writes
        alone = beside = None
        for label in options:
            whole = [m for m in members if label not in modes[m]]
            worst_alone = max(
                (sizing.full_bytes(forest.values[sites[m].value]) for m in whole),
                default=0,
            )
            worst_beside = max((least_up(m) for m in whole), default=0)
            alone = worst_alone if alone is None else min(alone, worst_alone)
            beside = worst_beside if beside is None else min(beside, worst_beside)
        assert alone is not None and beside is not None
        total = alone
        if into_residual and residual_bytes + beside > alone:
            total = residual_bytes + beside
        if total and (best is None or total > best.bytes):
            factors = " ".join(
                f"@{sites[m].value}" for m in members if m != site.number
            )
            which = (
                f"the built factors {factors} of @{value.name}"
                if site.parent is None
                else f"@{value.name} and its built factors {factors}"
            )
            what = (
                "the residual beside a whole value"
                if total > alone
                else "a whole value"
            )
            best = LowerBound(
                total,
                f"{what}: {which} share no batched mode (plans that rebuild "
                "nothing inside a loop)",
            )
    return best


def schedule_flops(
    forest: Forest, schedule: Schedule, sizing: Sizing | None = None
) -> int:
    """Multiply-adds ``schedule`` performs: every build's node modes in
    full (the blocks of a loop that binds a mode cover its extent), times
    the iterations of every loop around it that binds none of them (the
    value is rebuilt each iteration: ``rebuild=fused``). Without such
    rebuilds this is ``forest_flops``."""
    sizing = sizing or Sizing(forest)
    try:
        extents = loop_extents(schedule, sizing.mode_extent, sizing.extent)
    except LoopExtentError:
        extents = {}  # a loop over two ranges (refused elsewhere): its space's
    total = 0
    for item, loops in schedule.walk():
        if not isinstance(item, Build):
            continue
        value = forest.values[item.value]
        bound = {b.instance for b in (*item.slices, *item.sums)}
        count = sizing.extents.elements(value.node_modes)
        for loop in loops:
            if loop.instance not in bound:
                extent = extents.get(loop.instance)
                if extent is None:
                    extent = sizing.extent(loop.space)
                count *= -(-extent // loop.block)
        total += count
    return total


def forest_flops(forest: Forest, sizing: Sizing | None = None) -> int:
    """Multiply-adds of evaluating the forest once: every contraction value,
    shared ones once (the sizing of the memory model)."""
    sizing = sizing or Sizing(forest)
    return sum(sizing.flops(value) for value in forest.values.values())


def _describe(life: Lifetime) -> str:
    return f"@{life.value} {life.kind}"


def display_width(text: str) -> int:
    """Terminal columns ``text`` takes: combining marks (the tilde of ``μ̃``) and
    other zero-width characters take none, East Asian wide characters two."""
    width = 0
    for char in text:
        if unicodedata.combining(char) or unicodedata.category(char) in ("Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1
    return width


def pad_to_width(text: str, width: int) -> str:
    """``text`` padded with spaces on the right to ``width`` display columns
    (``str.ljust`` counts code points, which misaligns ``μ̃``)."""
    return text + " " * max(0, width - display_width(text))
