"""An ordered batch schedule, IR-free, and the rules that make one valid.

A schedule is a list of items run in order; a ``LoopPass`` runs its body once
per block of its index space. Items:

* ``Build(v, slices, sums)``: compute value ``v`` from its factors. Each
  ``Bind(mode, instance)`` in ``slices`` restricts a result mode of ``v`` to
  the current block of that (enclosing) loop instance; in ``sums`` it
  restricts a mode summed at ``v``'s node, so the result is a partial sum.
  The built piece is *transient*: readable in the same iteration only.
* ``Buffer(v, slices, zero)``: storage for ``v`` outlasting loops; full size
  except for ``slices`` (modes kept to the block of an enclosing loop it does
  not leave). ``zero`` for an accumulator.
* ``Write(v, accumulate)``: scatter (or add) the transient just built into
  ``v``'s buffer. The buffer becomes readable when the loop pass directly
  inside the buffer's block closes.
* ``Output(tree, v)``: the tree's result is ``coeff * v`` (``v`` full).

The residual (``docs/residual.md``): with a residual layout, the schedule
accumulates every tree into one result as soon as it is computed:

* ``Residual(group, modes)``: a zeroed residual buffer for one operator
  group (group 0 is the result), allocated before everything, live to the
  end (a group other than 0 until its ``Apply``);
* ``Output(tree, v, into=g)`` adds ``coeff * v`` into residual ``g`` (its
  modes transposed to the residual's); with ``direct`` the root's pieces were
  already added by ``Write(v, ..., into=g, tree=...)``, so the root never
  needs a buffer of its own;
* ``Apply(group, operators)``: the group's operators act on its residual and
  the result is added into residual 0 (for group 0, in place); SeQuant holds
  the operand and the result at once, so the step counts one more residual.

``check_schedule`` states the rules: every rule a run depends on is checked
statically here, so the evaluator and the memory accounting can trust a
schedule that passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from axisflow.forest.model import Forest, Value
from axisflow.residual import Operator
from axisflow.roles.index import Index


@dataclass(frozen=True)
class Bind:
    """A mode of a value restricted to the current block of a loop instance."""

    mode: Index
    instance: int


@dataclass
class Build:
    """Compute a value (one piece per iteration of its enclosing loops)."""

    value: str
    slices: tuple[Bind, ...] = ()
    sums: tuple[Bind, ...] = ()
    demoted: tuple[int, ...] = ()
    """Loop instances on which the classified LoopLocal role was demoted."""
    bytes: int = 0
    """Size of one built piece."""


@dataclass
class Buffer:
    """Storage for a value that leaves the loops it is built in."""

    value: str
    slices: tuple[Bind, ...] = ()
    zero: bool = False
    bytes: int = 0


@dataclass
class Write:
    """Scatter (``accumulate=False``) or add the value's piece into its buffer
    (or, with ``into``, add ``coeff * piece`` of tree ``tree`` into that
    residual group's buffer)."""

    value: str
    accumulate: bool
    into: int | None = None
    tree: str | None = None


@dataclass
class Output:
    """A tree's result: ``coeff * value`` (``value`` is ``None`` for a bare
    number), added into residual group ``into`` when given (already, piece by
    piece, when ``direct``)."""

    tree: str
    value: str | None
    into: int | None = None
    direct: bool = False


@dataclass
class Residual:
    """The zeroed residual buffer of one operator group."""

    group: int
    modes: tuple[Index, ...]
    bytes: int = 0


@dataclass
class Apply:
    """A group's operators applied to its residual, added into group 0's."""

    group: int
    operators: tuple[Operator, ...] = ()
    bytes: int = 0
    """The extra residual-sized buffer the step holds while it runs."""


@dataclass
class LoopPass:
    """One pass of a physical loop instance over blocks of ``space``."""

    instance: int
    space: str
    number: int
    """Position among the passes of this instance, in program order."""
    block: int = 1
    body: list[Item] = field(default_factory=list["Item"])


Item = Build | Buffer | Write | Output | Residual | Apply | LoopPass


@dataclass
class Schedule:
    """The ordered schedule of one forest."""

    items: list[Item]
    rounds: int = 1
    """Scheduling rounds until the demotion fixpoint."""

    def residual_modes(self) -> tuple[Index, ...] | None:
        """The residual's modes, if the schedule accumulates one."""
        for item in self.items:
            if isinstance(item, Residual):
                return item.modes
        return None

    def walk(self) -> Iterator[tuple[Item, tuple[LoopPass, ...]]]:
        """Every item in program order with its enclosing loop passes."""
        stack: list[tuple[Iterator[Item], tuple[LoopPass, ...]]] = [
            (iter(self.items), ())
        ]
        while stack:
            items, loops = stack[-1]
            item = next(items, None)
            if item is None:
                stack.pop()
                continue
            yield item, loops
            if isinstance(item, LoopPass):
                stack.append((iter(item.body), (*loops, item)))

    def blocks(self) -> dict[int, int]:
        """Block size per loop instance."""
        return {
            item.instance: item.block
            for item, _ in self.walk()
            if isinstance(item, LoopPass)
        }


class LoopExtentError(ValueError):
    """A loop instance binding modes of different extents; the message names
    the instance, the modes and where they are bound."""


def loop_extents(
    schedule: Schedule,
    mode_extent: Callable[[Index], int],
    space_extent: Callable[[str], int],
) -> dict[int, int]:
    """The extent each loop instance runs over: that of the modes it binds.

    A loop over space ``a`` iterates the index it binds, and a mode's extent
    is its composite kind's when the kind has one (``a<2>=40``), so the loop
    runs over that extent, not ``a``'s. All modes one instance binds (in
    slices, sums and buffer slices) must have one extent: one loop cannot
    run over two ranges (``LoopExtentError``). An instance that binds
    nothing runs over its space's extent.
    """
    bound: dict[int, tuple[int, Index, str]] = {}
    spaces: dict[int, str] = {}
    for item, _ in schedule.walk():
        if isinstance(item, LoopPass):
            spaces.setdefault(item.instance, item.space)
            continue
        if isinstance(item, Build):
            binds = (*item.slices, *item.sums)
        elif isinstance(item, Buffer):
            binds = item.slices
        else:
            continue
        for bind in binds:
            extent = mode_extent(bind.mode)
            first = bound.setdefault(bind.instance, (extent, bind.mode, item.value))
            if first[0] != extent:
                raise LoopExtentError(
                    f"loop instance {bind.instance} over "
                    f"{spaces.get(bind.instance, bind.mode.base_key)} binds "
                    f"{first[1].full_label} "
                    f"of @{first[2]} (extent {first[0]}) and "
                    f"{bind.mode.full_label} of @{item.value} (extent {extent}): "
                    "one loop cannot run over two extents (composite kinds "
                    "with extents of their own are different ranges)"
                )
    return {
        instance: bound[instance][0] if instance in bound else space_extent(space)
        for instance, space in spaces.items()
    }


# --------------------------------------------------------------------------
# Validity
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """A broken rule, at the item that breaks it."""

    item: Item | None
    message: str


@dataclass
class _Stored:
    """What a read finds: a transient piece or a buffer, with its slices."""

    slices: dict[Index, int]
    buffer: _BufferState | None = None


@dataclass
class _BufferState:
    item: Buffer
    depth: int
    slices: dict[Index, int]
    writer: LoopPass | None = None
    complete: bool = False


@dataclass
class _Frame:
    loop: LoopPass | None
    transients: dict[str, _Stored] = field(default_factory=dict[str, _Stored])
    builds: dict[str, Build] = field(default_factory=dict[str, Build])
    buffers: dict[str, _BufferState] = field(default_factory=dict[str, _BufferState])
    direct: set[str] = field(default_factory=set[str])
    """Pieces added into the residual (tree roots, possibly shared)."""


class _Checker:
    def __init__(self, forest: Forest) -> None:
        self.forest = forest
        self.problems: list[Problem] = []
        self.frames: list[_Frame] = [_Frame(None)]
        self.built: set[str] = set()
        self.outputs: set[str] = set()
        self.instance_space: dict[int, str] = {}
        self.instance_block: dict[int, int] = {}
        self.passes: dict[int, int] = {}
        self.all_buffers: list[_BufferState] = []
        self.residuals: dict[int, Residual] = {}
        self.applied: set[int] = set()
        self.direct: dict[str, str] = {}
        """Tree -> the root value written straight into the residual."""

    def fail(self, item: Item | None, message: str) -> None:
        self.problems.append(Problem(item, message))

    # -- traversal ---------------------------------------------------------

    def run(self, schedule: Schedule) -> list[Problem]:
        self.visit(schedule.items)
        wanted = {site.value for site in self.forest.sites} - {
            name for name, v in self.forest.values.items() if v.is_input
        }
        for name in sorted(wanted - self.built):
            self.fail(None, f"value @{name} is used but never built")
        for tree in self.forest.trees:
            if tree.name not in self.outputs:
                self.fail(None, f"tree @{tree.name} has no output")
        for state in self.all_buffers:
            if state.writer is None:
                self.fail(state.item, f"buffer of @{state.item.value} is never written")
        return self.problems

    def open_instances(self) -> dict[int, LoopPass]:
        return {f.loop.instance: f.loop for f in self.frames if f.loop is not None}

    def visit(self, items: Sequence[Item]) -> None:
        for item in items:
            if isinstance(item, LoopPass):
                self.visit_loop(item)
            elif isinstance(item, Build):
                self.visit_build(item)
            elif isinstance(item, Buffer):
                self.visit_buffer(item)
            elif isinstance(item, Write):
                if item.into is None:
                    self.visit_write(item)
                else:
                    self.visit_residual_write(item)
            elif isinstance(item, Residual):
                self.visit_residual(item)
            elif isinstance(item, Apply):
                self.visit_apply(item)
            else:
                self.visit_output(item)

    def visit_loop(self, loop: LoopPass) -> None:
        space = self.instance_space.setdefault(loop.instance, loop.space)
        if space != loop.space:
            self.fail(
                loop,
                f"loop instance {loop.instance} iterates {space}, not {loop.space}",
            )
        known = self.forest.instance_spaces.get(loop.instance)
        if known is not None and known != loop.space:
            self.fail(
                loop,
                f"loop instance {loop.instance} of the forest iterates {known}, "
                f"not {loop.space}",
            )
        if loop.block < 1:
            self.fail(loop, f"block size must be positive, got {loop.block}")
        block = self.instance_block.setdefault(loop.instance, loop.block)
        if block != loop.block:
            self.fail(
                loop,
                f"loop instance {loop.instance} has block {block} in another pass",
            )
        expected = self.passes.get(loop.instance, 0)
        if loop.number != expected:
            self.fail(
                loop,
                f"pass {loop.number} of loop instance {loop.instance}: expected "
                f"pass {expected} (passes are numbered in program order)",
            )
        self.passes[loop.instance] = max(expected, loop.number) + 1
        if loop.instance in self.open_instances():
            self.fail(loop, f"loop instance {loop.instance} is nested in itself")
        self.frames.append(_Frame(loop))
        self.visit(loop.body)
        frame = self.frames.pop()
        for name in frame.transients:
            build = frame.builds.get(name)
            if build is not None and build.sums and name not in frame.direct:
                self.fail(
                    build,
                    f"partial sums of @{name} are never accumulated into a buffer",
                )
        for state in self.all_buffers:
            if state.writer is loop:
                state.complete = True

    def value_of(self, item: Item, name: str, what: str) -> Value | None:
        value = self.forest.values.get(name)
        if value is None:
            self.fail(item, f"{what} of unknown value @{name}")
            return None
        if value.is_input:
            self.fail(item, f"{what} of @{name}, an input (inputs are only read)")
            return None
        return value

    def binds(
        self,
        item: Item,
        value: Value,
        binds: Sequence[Bind],
        allowed: Sequence[Index],
        what: str,
    ) -> dict[Index, int] | None:
        open_loops = self.open_instances()
        found: dict[Index, int] = {}
        instances: set[int] = set()
        ok = True
        for bind in binds:
            where = f"@{value.name}: {what} {bind.mode}:{bind.instance}"
            if bind.mode not in allowed:
                self.fail(item, f"{where}: {bind.mode} is not a {what} mode")
                ok = False
            elif bind.instance not in open_loops:
                self.fail(item, f"{where}: loop instance {bind.instance} is not open")
                ok = False
            elif open_loops[bind.instance].space != bind.mode.base_key:
                space = open_loops[bind.instance].space
                self.fail(
                    item, f"{where}: loop instance {bind.instance} iterates {space}"
                )
                ok = False
            elif bind.mode in found or bind.instance in instances:
                self.fail(item, f"{where}: mode or loop instance bound twice")
                ok = False
            found[bind.mode] = bind.instance
            instances.add(bind.instance)
        return found if ok else None

    def lookup(self, item: Item, name: str, reader: str) -> _Stored | None:
        for frame in reversed(self.frames):
            stored = frame.transients.get(name)
            if stored is not None:
                return stored
            state = frame.buffers.get(name)
            if state is not None:
                if not state.complete:
                    self.fail(
                        item,
                        f"{reader} reads @{name} before the loop producing it closed",
                    )
                    return None
                return _Stored(state.slices, state)
        self.fail(item, f"{reader} reads @{name}, which is not available here")
        return None

    def visit_build(self, build: Build) -> None:
        value = self.value_of(build, build.value, "build")
        if value is None:
            return
        if build.value in self.built:
            self.fail(build, f"@{build.value} is built twice")
        self.built.add(build.value)
        slices = self.binds(build, value, build.slices, value.modes, "slice")
        sums = self.binds(build, value, build.sums, value.summed_modes, "sum")
        if slices is None or sums is None:
            return
        if set(slices.values()) & set(sums.values()):
            self.fail(build, f"@{build.value}: a loop instance both slices and sums")
            return
        bound = slices | sums
        for factor, mapping in zip(value.factors, value.factor_maps, strict=True):
            if self.forest.values[factor.value].is_input:
                continue  # inputs are read, sliced as needed
            stored = self.lookup(build, factor.value, f"build of @{build.value}")
            if stored is None:
                continue
            for mode, instance in stored.slices.items():
                if bound.get(mapping[mode]) != instance:
                    self.fail(
                        build,
                        f"build of @{build.value} reads @{factor.value} sliced on "
                        f"{mode} by loop instance {instance}, but does not restrict "
                        f"{mapping[mode]} to that block",
                    )
        frame = self.frames[-1]
        frame.transients[build.value] = _Stored(slices)
        frame.builds[build.value] = build

    def visit_buffer(self, buffer: Buffer) -> None:
        value = self.value_of(buffer, buffer.value, "buffer")
        if value is None:
            return
        if any(buffer.value in frame.buffers for frame in self.frames):
            self.fail(buffer, f"a second buffer for @{buffer.value}")
            return
        slices = self.binds(buffer, value, buffer.slices, value.modes, "slice")
        if slices is None:
            return
        state = _BufferState(buffer, len(self.frames) - 1, slices)
        self.frames[-1].buffers[buffer.value] = state
        self.all_buffers.append(state)

    def visit_write(self, write: Write) -> None:
        frame = self.frames[-1]
        stored = frame.transients.get(write.value)
        build = frame.builds.get(write.value)
        if stored is None or build is None:
            self.fail(
                write, f"write of @{write.value}: no piece built in this block to write"
            )
            return
        state = next(
            (
                f.buffers[write.value]
                for f in reversed(self.frames[:-1])
                if write.value in f.buffers
            ),
            None,
        )
        if state is None:
            self.fail(
                write, f"write of @{write.value}: no buffer outside the enclosing loop"
            )
            return
        if state.writer is not None:
            self.fail(write, f"buffer of @{write.value} is written twice")
        left = [f.loop for f in self.frames[state.depth + 1 :] if f.loop is not None]
        state.writer = left[0]
        left_instances = {loop.instance for loop in left}
        kept = {m: i for m, i in stored.slices.items() if i not in left_instances}
        if kept != state.slices:
            self.fail(
                write,
                f"write of @{write.value}: the buffer must keep exactly the slices "
                "of the loops it is inside of",
            )
        bound = set(stored.slices.values()) | {b.instance for b in build.sums}
        for loop in left:
            if loop.instance not in bound:
                self.fail(
                    write,
                    f"write of @{write.value}: loop instance {loop.instance} is left "
                    "but binds no mode of the value (every iteration would write "
                    "the same piece)",
                )
        accumulate = bool(build.sums)
        if write.accumulate != accumulate:
            kind = "accumulated (it is a partial sum)" if accumulate else "scattered"
            self.fail(write, f"@{write.value} must be {kind}")
        if state.item.zero != write.accumulate:
            self.fail(
                write,
                f"buffer of @{write.value} must be zeroed exactly when it accumulates",
            )
        del frame.transients[write.value]
        del frame.builds[write.value]

    def visit_residual(self, residual: Residual) -> None:
        if len(self.frames) > 1:
            self.fail(residual, "a residual buffer belongs outside every loop")
        if residual.group in self.residuals:
            self.fail(residual, f"a second residual buffer for group {residual.group}")
        first = next(iter(self.residuals.values()), None)
        if first is not None and first.modes != residual.modes:
            self.fail(residual, "residual groups with different modes")
        self.residuals[residual.group] = residual

    def open_residual(self, item: Item, group: int) -> Residual | None:
        residual = self.residuals.get(group)
        if residual is None:
            self.fail(item, f"residual group {group} has no buffer")
        elif group in self.applied:
            self.fail(item, f"residual group {group} is added to after its Apply")
            return None
        return residual

    def visit_residual_write(self, write: Write) -> None:
        assert write.into is not None
        if self.open_residual(write, write.into) is None:
            return
        frame = self.frames[-1]
        stored = frame.transients.get(write.value)
        build = frame.builds.get(write.value)
        tree = next((t for t in self.forest.trees if t.name == write.tree), None)
        if stored is None or build is None or tree is None or tree.root is None:
            self.fail(
                write,
                f"write of @{write.value} into the residual: no piece of a tree "
                "root built in this block",
            )
            return
        if self.forest.sites[tree.root].value != write.value:
            self.fail(write, f"@{write.value} is not the root of tree @{tree.name}")
            return
        if tree.name in self.direct:
            self.fail(write, f"tree @{tree.name} is written into the residual twice")
        self.direct[tree.name] = write.value
        left = [f.loop for f in self.frames[1:] if f.loop is not None]
        bound = set(stored.slices.values()) | {b.instance for b in build.sums}
        for loop in left:
            if loop.instance not in bound:
                self.fail(
                    write,
                    f"write of @{write.value}: loop instance {loop.instance} binds "
                    "no mode of the value (every iteration would add the same piece)",
                )
        # the piece stays for the other trees that share the root; it is
        # added into the residual, so its partial sums need no buffer
        frame.direct.add(write.value)

    def visit_apply(self, apply: Apply) -> None:
        if len(self.frames) > 1:
            self.fail(apply, "an operator step belongs outside every loop")
        residual = self.open_residual(apply, apply.group)
        if residual is None:
            return
        if apply.group != 0 and 0 not in self.residuals:
            self.fail(apply, "another group is added into group 0, which has no buffer")
        self.applied.add(apply.group)

    def visit_output(self, output: Output) -> None:
        tree = next((t for t in self.forest.trees if t.name == output.tree), None)
        if tree is None:
            self.fail(output, f"output of unknown tree @{output.tree}")
            return
        if output.tree in self.outputs:
            self.fail(output, f"tree @{output.tree} is output twice")
        self.outputs.add(output.tree)
        expected = None if tree.root is None else self.forest.sites[tree.root].value
        if output.value != expected:
            self.fail(
                output,
                f"tree @{output.tree} outputs @{expected}, not @{output.value}",
            )
            return
        if len(self.frames) > 1:
            self.fail(output, "outputs belong outside every loop")
            return
        if output.into is not None and self.open_residual(output, output.into) is None:
            return
        if output.direct:
            if self.direct.get(output.tree) != expected:
                self.fail(
                    output,
                    f"direct output of @{output.tree}: its root was not written "
                    "into the residual",
                )
            return
        if expected is None or self.forest.values[expected].is_input:
            return
        stored = self.lookup(output, expected, f"output of @{output.tree}")
        if stored is not None and stored.slices:
            self.fail(output, f"output of @{output.tree} reads a slice of @{expected}")


def check_schedule(forest: Forest, schedule: Schedule) -> list[Problem]:
    """Every broken rule of ``schedule`` for ``forest`` (empty: valid).

    Rules: loop instances keep one space and block and are not nested in
    themselves, passes are numbered in order; each used non-input value is
    built once, its binds name its own modes and open loops of their space;
    a read finds the factor's piece in the same iteration or its completed
    buffer, restricted to the blocks the piece is restricted to; partial
    sums are accumulated; a buffer is zeroed iff it accumulates, written once,
    keeps the slices of the loops around it, and every loop a write leaves
    binds a mode; each tree is output once, outside loops, from a full value.
    """
    return _Checker(forest).run(schedule)
