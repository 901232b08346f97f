"""The rules of a valid schedule, checked statically: ``check_schedule``.

A client of ``axisflow.scheduling.walker`` that visits every loop body once
(every iteration stores and reads alike) and records every broken rule at
the item that breaks it. Where storage lives and when it may be read are the
walker's rules; this module adds what a schedule must say about its forest
(values, modes, loop instances, trees, residual groups).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from axisflow.forest.model import Forest, Tree, Value
from axisflow.residual import OperatorError
from axisflow.residual.operators import axis_permutation
from axisflow.roles.index import Index
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
from axisflow.scheduling.walker import (
    BufferState,
    Piece,
    ScheduleWalker,
    reader,
)


@dataclass(frozen=True)
class Problem:
    """A broken rule, at the item that breaks it."""

    item: Item | None
    message: str


class _Checker(ScheduleWalker[None, None]):
    def __init__(self, forest: Forest) -> None:
        super().__init__()
        self.forest = forest
        self.problems: list[Problem] = []
        self.built: set[str] = set()
        self.outputs: set[str] = set()
        self.instance_space: dict[int, str] = {}
        self.instance_block: dict[int, int] = {}
        self.passes: dict[int, int] = {}
        self.all_buffers: list[BufferState[None]] = []
        self.direct: dict[str, str] = {}
        """Tree -> the root value written straight into the residual."""
        self.trees: dict[str, Tree] = {}
        for tree in forest.trees:
            self.trees.setdefault(tree.name, tree)

    def fail(self, item: Item | None, message: str) -> None:
        self.problems.append(Problem(item, message))

    def run(self, schedule: Schedule) -> list[Problem]:
        self.walk(schedule.items)
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
        return {loop.instance: loop for loop in self.open_loops()}

    # -- the walker's hooks ------------------------------------------------

    def loop(self, loop: LoopPass) -> None:
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
        scope = self.visit_body(loop)
        for name, piece in scope.pieces.items():
            if piece.build.sums and not piece.added:
                self.fail(
                    piece.build,
                    f"partial sums of @{name} are never accumulated into a buffer",
                )

    def unreadable(
        self, item: Item, name: str, buffer: BufferState[None] | None
    ) -> None:
        if buffer is None:
            self.fail(
                item, f"{reader(item)} reads @{name}, which is not available here"
            )
        else:
            self.fail(
                item,
                f"{reader(item)} reads @{name} before the loop producing it closed",
            )

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

    def build(self, build: Build) -> None:
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
            stored = self.read(build, factor.value)
            if stored is None:
                continue
            if isinstance(stored, Piece) and stored.added:
                self.fail(
                    build,
                    f"build of @{build.value} reads @{factor.value}, whose pieces "
                    "are added into the residual (a root read by its trees only)",
                )
                continue
            for mode, instance in stored.slices.items():
                if bound.get(mapping[mode]) != instance:
                    self.fail(
                        build,
                        f"build of @{build.value} reads @{factor.value} sliced on "
                        f"{mode} by loop instance {instance}, but does not restrict "
                        f"{mapping[mode]} to that block",
                    )
        self.keep_piece(build, None)

    def buffer(self, buffer: Buffer) -> None:
        value = self.value_of(buffer, buffer.value, "buffer")
        if value is None:
            return
        if self.allocated(buffer.value):
            self.fail(buffer, f"a second buffer for @{buffer.value}")
            return
        if self.binds(buffer, value, buffer.slices, value.modes, "slice") is None:
            return
        self.all_buffers.append(self.keep_buffer(buffer, None))

    def write(
        self,
        write: Write,
        piece: Piece[None] | None,
        buffer: BufferState[None] | None,
    ) -> None:
        if piece is None:
            self.fail(
                write, f"write of @{write.value}: no piece built in this block to write"
            )
            return
        if buffer is None:
            self.fail(
                write, f"write of @{write.value}: no buffer outside the enclosing loop"
            )
            return
        if buffer.writer is not None:
            self.fail(write, f"buffer of @{write.value} is written twice")
        left = self.loops_left(buffer)
        left_instances = {loop.instance for loop in left}
        slices = piece.slices
        kept = {m: i for m, i in slices.items() if i not in left_instances}
        if kept != buffer.slices:
            self.fail(
                write,
                f"write of @{write.value}: the buffer must keep exactly the slices "
                "of the loops it is inside of",
            )
        build = piece.build
        bound = set(slices.values()) | {b.instance for b in build.sums}
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
        if buffer.item.zero != write.accumulate:
            self.fail(
                write,
                f"buffer of @{write.value} must be zeroed exactly when it accumulates",
            )
        self.fill(piece, buffer)

    def residual(self, residual: Residual) -> None:
        if self.in_loop:
            self.fail(residual, "a residual buffer belongs outside every loop")
        if residual.group in self.groups:
            self.fail(residual, f"a second residual buffer for group {residual.group}")
        first = next(iter(self.groups.values()), None)
        if first is not None and first.item.modes != residual.modes:
            self.fail(residual, "residual groups with different modes")

    def open_residual(self, item: Item, group: int) -> bool:
        """Whether residual group ``group`` is open (a problem if not)."""
        state = self.groups.get(group)
        if state is None:
            self.fail(item, f"residual group {group} has no buffer")
            return False
        if state.applied:
            self.fail(item, f"residual group {group} is added to after its Apply")
            return False
        return True

    def residual_write(self, write: Write, piece: Piece[None] | None) -> None:
        assert write.into is not None
        if not self.open_residual(write, write.into):
            return
        tree = None if write.tree is None else self.trees.get(write.tree)
        if piece is None or tree is None or tree.root is None:
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
        self.check_root_fits(write, tree.name, self.groups[write.into].item)
        self.direct[tree.name] = write.value
        bound = set(piece.slices.values()) | {b.instance for b in piece.build.sums}
        for loop in self.open_loops():
            if loop.instance not in bound:
                self.fail(
                    write,
                    f"write of @{write.value}: loop instance {loop.instance} binds "
                    "no mode of the value (every iteration would add the same piece)",
                )
        self.add(piece)

    def apply(self, apply: Apply) -> None:
        if self.in_loop:
            self.fail(apply, "an operator step belongs outside every loop")
        if not self.open_residual(apply, apply.group):
            return
        if apply.group != 0 and 0 not in self.groups:
            self.fail(apply, "another group is added into group 0, which has no buffer")
        residual = self.groups[apply.group].item
        for operator in apply.operators:  # each relabelling permutes the modes
            try:
                for _, mapping in operator.relabellings():
                    axis_permutation(residual.modes, mapping, operator)
            except OperatorError as error:
                self.fail(apply, str(error))
        self.close_group(apply.group)

    def check_root_fits(self, item: Item, tree: str, residual: Residual) -> None:
        """Tree ``tree``'s root lands on the residual's modes, as the
        lowering and the evaluator map it (``assemble.root_axes``)."""
        from axisflow.scheduling.assemble import AssemblyError, root_axes

        number = next(k for k, t in enumerate(self.forest.trees) if t.name == tree)
        if self.forest.trees[number].root is None:
            return  # a bare number: added to every element
        try:
            root_axes(self.forest, number, residual.modes)
        except AssemblyError as error:
            self.fail(item, str(error))

    def output(self, output: Output) -> None:
        tree = self.trees.get(output.tree)
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
        if self.in_loop:
            self.fail(output, "outputs belong outside every loop")
            return
        if output.into is not None:
            if not self.open_residual(output, output.into):
                return
            if not output.direct:  # a direct one's root was checked at its write
                self.check_root_fits(output, output.tree, self.groups[output.into].item)
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
        stored = self.read(output, expected)
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
