"""The lowering plan: a schedule spelled as buffers, loops and contractions.

``lower-schedule`` reads a scheduled forest only through this plan, built
from the pipeline's forest model and schedule (``build_plan``); the MLIR it
prints is a direct spelling of the plan's steps. Everything the emitter needs
is decided here, with plain integers:

* every storage object (input, tree output, transient piece, buffer, whole
  value built outside loops) is a ``Tensor`` with a static shape, one
  dimension per mode of its value (``axisflow.forest.model``: carried
  indices, then the protos of composites; a composite is a mode of its own,
  with its kind's extent if it has one, else its base space's: the memory
  model's ``Sizing``), restricted to one block on sliced modes;
* ``Loop`` is one pass of a batch loop, ``0 .. extent`` in steps of the
  block, the extent being that of the modes it binds (a composite kind's
  own extent when it has one: ``loop_extents``); a block that does not
  divide the extent leaves a last, smaller block: a second loop with its own
  static shapes. A ``Window`` names, per dimension, the loop whose current
  block start is the offset (or none: from 0) and the size;
* ``Contract`` is one pairwise contraction into a zeroed piece: loop
  dimensions are the node's modes (result modes ``parallel``, summed modes
  ``reduction``), each operand indexed by the positions of its modes;
* ``Write`` scatters (LoopCarried) or adds (Reduction) a piece into its
  buffer; ``Emit`` writes ``coeff * value`` into a tree's output;
* the residual (``docs/residual.md``): one zeroed ``residual`` tensor per
  operator group (group 0 is the function's result argument), every tree
  adding ``coeff * root`` into it (``AddScaled``, the root's modes permuted
  to the residual's, onto the current block when the root's pieces go
  straight in), and the operator step: per operator, the residual copied
  into an ``operand`` tensor and rebuilt as one ``AddScaled`` per weighted
  relabelling (the permuted indexing map, sign and normalization in the
  weight); a group other than 0 is then added into group 0 and freed;
* ``Alloc``/``Zero``/``Free`` sit where the schedule allocates, zeroes and
  last reads each storage object (a piece or buffer is freed right after the
  last item of its own body that mentions it).

The planner is a client of the schedule walker (``axisflow.scheduling.walker``):
where a piece or buffer lives and which buffer a write fills are the
walker's rules, the same the checker, the memory accounting and the
evaluator follow; the planner visits each loop body once per static block
size.

Pure (no xDSL). ``LoweringError`` names what cannot be lowered: a space
without extent, a tensor larger than a memref can index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from axisflow.forest.model import Forest, Value
from axisflow.residual import OperatorError
from axisflow.residual.operators import axis_permutation
from axisflow.roles.index import Index
from axisflow.scheduling.assemble import AssemblyError, root_axes
from axisflow.scheduling.memory import Sizing, format_count, residual_name
from axisflow.scheduling.schedule import (
    Apply,
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
from axisflow.scheduling.walker import BufferState, Piece, ScheduleWalker


class LoweringError(ValueError):
    """A scheduled forest that cannot be lowered; the message says why."""


MAX_ELEMENTS = 2**63 - 1
"""MLIR computes memref strides in signed 64 bits."""

TensorKind = Literal[
    "input", "output", "piece", "buffer", "value", "residual", "operand"
]


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a dense row-major array of ``shape`` (the layout of
    every allocated tensor and argument)."""
    strides: list[int] = []
    step = 1
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


@dataclass(frozen=True)
class Tensor:
    """One storage object: a ``memref<shape x f64>``."""

    number: int
    value: str
    """The forest value it holds (the tree name for an output; the residual
    group's name for a residual and its operand copy)."""
    kind: TensorKind
    shape: tuple[int, ...]
    modes: tuple[str, ...]
    """The label of each dimension (the value's modes)."""


@dataclass(frozen=True)
class Window:
    """A rectangular part of a tensor: per dimension, the loop instance whose
    current block start is the offset (``None``: offset 0) and the size."""

    tensor: int
    offsets: tuple[int | None, ...]
    sizes: tuple[int, ...]

    @property
    def is_whole(self) -> bool:
        """Whether the window is the tensor itself (no subview needed)."""
        return all(offset is None for offset in self.offsets)


@dataclass(frozen=True)
class Alloc:
    """``memref.alloc`` of a piece, buffer or whole value."""

    tensor: int


@dataclass(frozen=True)
class Zero:
    """``linalg.fill`` with 0 (accumulators and contraction targets)."""

    tensor: int


@dataclass(frozen=True)
class Free:
    """``memref.dealloc`` after the last read."""

    tensor: int


@dataclass(frozen=True)
class Contract:
    """``target += prod(operands)`` over the node's modes (one
    ``linalg.generic``)."""

    value: str
    target: int
    operands: tuple[Window, ...]
    operand_dims: tuple[tuple[int, ...], ...]
    """Per operand: the loop dimension of each of its dimensions."""
    extents: tuple[int, ...]
    """Loop dimensions: the node's modes, restricted to blocks where bound."""
    reductions: tuple[bool, ...]
    """Per loop dimension: summed at this node (``reduction``)."""
    modes: tuple[str, ...]
    """The label of each loop dimension."""

    @property
    def rank(self) -> int:
        """Rank of the target (its dimensions are the first loop dims)."""
        return self.reductions.count(False)


@dataclass(frozen=True)
class WriteBack:
    """Copy (``accumulate=False``) or add a piece into a window of its
    buffer."""

    value: str
    piece: int
    target: Window
    accumulate: bool


@dataclass(frozen=True)
class Emit:
    """A tree's result: ``output = coeff * source`` (``source`` is ``None``
    for a bare number: the output is filled with ``coeff``)."""

    tree: str
    output: int
    source: int | None
    coeff: Fraction


@dataclass(frozen=True)
class AddScaled:
    """``target = coeff * source`` (``accumulate``: ``target += ...``) as one
    ``linalg.generic`` over the target window's dimensions: the residual
    steps. Source dimension ``k`` is loop (target) dimension
    ``source_dims[k]``, so a transpose or an operator's relabelling is the
    source's indexing map. ``source`` is ``None`` for a bare number (the
    target gets ``coeff``)."""

    what: str
    """What the step does, for messages and docs (``@term3 into residual``)."""
    source: int | None
    source_dims: tuple[int, ...]
    target: Window
    coeff: Fraction
    accumulate: bool


@dataclass(frozen=True)
class Loop:
    """One pass of a loop instance over ``start .. stop`` in steps of
    ``block`` (a pass whose block does not divide the extent is two loops:
    the full blocks, then the remainder as one smaller block)."""

    instance: int
    space: str
    start: int
    stop: int
    block: int
    body: tuple[Step, ...]


Step = Alloc | Zero | Free | Contract | WriteBack | Emit | AddScaled | Loop


@dataclass(frozen=True)
class Plan:
    """The lowering of one scheduled forest."""

    name: str
    tensors: tuple[Tensor, ...]
    inputs: tuple[int, ...]
    """Input tensors, function arguments first."""
    outputs: tuple[int, ...]
    """The output arguments after the inputs: one per tree that is a result
    of its own (not added into the residual), in tree order, then the
    residual when the schedule accumulates one."""
    steps: tuple[Step, ...]
    residual: int | None = None
    """The residual's tensor (the last output), if any."""

    def walk(self) -> list[Step]:
        """Every step in program order (loop bodies after their loop)."""
        found: list[Step] = []
        stack: list[Step] = list(reversed(self.steps))
        while stack:
            step = stack.pop()
            found.append(step)
            if isinstance(step, Loop):
                stack.extend(reversed(step.body))
        return found


# --------------------------------------------------------------------------
# Building the plan
# --------------------------------------------------------------------------


@dataclass
class _Stored:
    """A tensor read, with the loop instance each sliced mode is kept to."""

    tensor: int
    slices: dict[Index, int]


class _Planner(ScheduleWalker[int, int]):
    """The walker's client that spells the schedule as steps: each loop body
    visited once per static block size (the full blocks, then the
    remainder), a piece or buffer being its tensor's number."""

    def __init__(self, forest: Forest, schedule: Schedule, sizing: Sizing) -> None:
        super().__init__()
        self.forest = forest
        self.schedule = schedule
        self.sizing = sizing
        self.tensors: list[Tensor] = []
        self.steps: list[Step] = []
        """The steps of the body being visited."""
        self.owned: dict[str, list[int]] = {}
        """The tensors the item list being visited allocated, by value."""
        self.inputs: dict[str, int] = {}
        self.blocks: dict[int, int] = {}
        self.memo: dict[int, tuple[str, ...]] = {}
        self.outputs: dict[str, int] = {}
        self.residual_modes: tuple[Index, ...] = schedule.residual_modes() or ()
        self.residuals: dict[int, int] = {}
        """Residual group -> its tensor (group 0 is the result argument)."""
        self.tree_number = {tree.name: k for k, tree in enumerate(forest.trees)}
        try:
            self.loop_extents = loop_extents(schedule, self.extent, self.space_extent)
        except LoopExtentError as error:
            raise LoweringError(str(error)) from None

    # -- sizes -------------------------------------------------------------

    def extent(self, mode: Index) -> int:
        """A mode's extent, as the memory model sizes it (a composite whose
        kind has an extent of its own takes that one, and needs no extent of
        its space)."""
        if mode.protos:
            own = self.sizing.extents.composite(mode.base_key, len(mode.protos))
            if own is not None:
                return own
        return self.space_extent(mode.base_key)

    def space_extent(self, key: str) -> int:
        if self.sizing.is_default(key):
            raise LoweringError(
                f"index space {key} has no extent (declare `batch.space {key} "
                "extent N`; the SeQuant frontend takes extents=...)"
            )
        return self.sizing.extent(key)

    def block(self, instance: int) -> int:
        return self.blocks[instance]

    def sliced_block(self, mode: Index, instance: int) -> int:
        """The block of ``mode`` under loop ``instance`` (the loop runs over
        ``mode``'s extent: ``loop_extents``)."""
        return self.block(instance)

    def tensor(
        self, value: Value, kind: TensorKind, slices: dict[Index, int]
    ) -> Tensor:
        shape = tuple(
            self.sliced_block(m, slices[m]) if m in slices else self.extent(m)
            for m in value.modes
        )
        return self.add_tensor(value.name, kind, shape, value.modes)

    def add_tensor(
        self,
        name: str,
        kind: TensorKind,
        shape: tuple[int, ...],
        modes: Sequence[Index],
    ) -> Tensor:
        elements = 1
        for extent in shape:
            elements *= extent
        if elements > MAX_ELEMENTS:
            raise LoweringError(
                f"@{name} would be a memref of {format_count(elements)} elements "
                f"({'x'.join(map(str, shape))} over {' '.join(map(str, modes))}): "
                "more than a memref can index (2^63 - 1); lower at smaller extents"
            )
        tensor = Tensor(len(self.tensors), name, kind, shape, tuple(map(str, modes)))
        self.tensors.append(tensor)
        return tensor

    def mentions(self, item: Item) -> tuple[str, ...]:
        """Every value an item (with its body) builds, writes or reads, each
        once, in the order of first mention (the order the frees after it
        are emitted in: a set's order would change from run to run)."""
        found = self.memo.get(id(item))
        if found is not None:
            return found
        names: dict[str, None] = {}
        if isinstance(item, LoopPass):
            for child in item.body:
                names.update(dict.fromkeys(self.mentions(child)))
        elif isinstance(item, Build):
            names[item.value] = None
            names.update(
                dict.fromkeys(f.value for f in self.forest.values[item.value].factors)
            )
        elif isinstance(item, Buffer | Write | Output) and item.value is not None:
            names[item.value] = None  # a buffer, write or output
        found = self.memo[id(item)] = tuple(names)
        return found

    # -- the walk ----------------------------------------------------------

    def plan(self) -> Plan:
        used = {site.value for site in self.forest.sites}
        inputs: list[int] = []
        for name, value in self.forest.values.items():
            if value.is_input and name in used:
                tensor = self.tensor(value, "input", {})
                self.inputs[name] = tensor.number
                inputs.append(tensor.number)
        outputs = self.outputs
        into_residual = {
            item.tree
            for item, _ in self.schedule.walk()
            if isinstance(item, Output) and item.into is not None
        }
        for tree in self.forest.trees:
            if tree.name in into_residual:
                continue
            root = None if tree.root is None else self.forest.sites[tree.root].value
            if root is None:
                shape: tuple[int, ...] = ()
                modes: tuple[Index, ...] = ()
            else:
                modes = self.forest.values[root].modes
                shape = tuple(self.extent(m) for m in modes)
            tensor = self.add_tensor(tree.name, "output", shape, modes)
            outputs[tree.name] = tensor.number
        arguments = [outputs[t.name] for t in self.forest.trees if t.name in outputs]
        residual = None
        if self.schedule.residual_modes() is not None:
            residual = self.residual_tensor(0).number
            self.residuals[0] = residual
            arguments.append(residual)
        self.walk(self.schedule.items)
        return Plan(
            self.forest.name or "forest",
            tuple(self.tensors),
            tuple(inputs),
            tuple(arguments),
            tuple(self.steps),
            residual,
        )

    def residual_tensor(self, group: int) -> Tensor:
        """A residual-sized tensor (its dimensions the residual's modes)."""
        modes = self.residual_modes
        shape = tuple(self.extent(m) for m in modes)
        return self.add_tensor(residual_name(group), "residual", shape, modes)

    def walk(self, items: Sequence[Item]) -> None:
        """Visit ``items``; a tensor they allocate is freed right after the
        last item of the list that mentions its value."""
        last: dict[str, int] = {}
        for position, item in enumerate(items):
            for name in self.mentions(item):
                last[name] = position
        outer, owned = self.owned, {}
        self.owned = owned
        for position, item in enumerate(items):
            self.visit(item)
            for name in self.mentions(item):
                if last[name] == position:
                    self.steps.extend(Free(t) for t in owned.pop(name, ()))
        for tensors in owned.values():  # built, never mentioned again
            self.steps.extend(Free(t) for t in tensors)
        self.owned = outer

    def loop(self, loop: LoopPass) -> None:
        """A loop pass: the full blocks, then (when the block does not divide
        the extent) the last, smaller block as a loop of its own, so that
        every shape stays static."""
        extent = self.loop_extents[loop.instance]
        block = min(loop.block, extent)
        full = extent - extent % block
        outer = self.steps
        loops: list[Loop] = []
        for start, stop, size in ((0, full, block), (full, extent, extent - full)):
            if stop <= start:
                continue
            self.blocks[loop.instance] = size
            self.steps = []
            self.visit_body(loop)
            loops.append(
                Loop(loop.instance, loop.space, start, stop, size, tuple(self.steps))
            )
        self.steps = outer
        del self.blocks[loop.instance]
        outer.extend(loops)

    def unreadable(
        self, item: Item, name: str, buffer: BufferState[int] | None
    ) -> None:
        if buffer is None:
            raise LoweringError(f"@{name} is read where the schedule has not made it")
        raise LoweringError(f"@{name} is read before the loop pass writing it closed")

    def lookup(self, item: Item, name: str) -> _Stored:
        """What ``item`` reads of ``name``: an input, a piece or a buffer."""
        if name in self.inputs:
            return _Stored(self.inputs[name], {})
        found = self.read(item, name)
        assert found is not None  # ``unreadable`` raised otherwise
        return _Stored(found.data, found.slices)

    def window(
        self,
        stored: _Stored,
        modes: Sequence[Index],
        wanted: dict[Index, int],
        what: str,
    ) -> Window:
        """The part of ``stored`` (a tensor over ``modes``) where each mode
        in ``wanted`` is the current block of its loop instance."""
        shape = self.tensors[stored.tensor].shape
        offsets: list[int | None] = []
        sizes: list[int] = []
        for mode, size in zip(modes, shape, strict=True):
            instance = wanted.get(mode)
            have = stored.slices.get(mode)
            if have is not None and have != instance:
                raise LoweringError(
                    f"{what}: {mode} is stored for the block of loop instance "
                    f"{have} only"
                )
            if instance is None or have is not None:
                offsets.append(None)
                sizes.append(size)
            else:
                offsets.append(instance)
                sizes.append(self.block(instance))
        return Window(stored.tensor, tuple(offsets), tuple(sizes))

    def build(self, build: Build) -> None:
        value = self.forest.values[build.value]
        slices = {b.mode: b.instance for b in build.slices}
        bound = slices | {b.mode: b.instance for b in build.sums}
        kind: TensorKind = "piece" if self.in_loop else "value"
        target = self.tensor(value, kind, slices)
        operands: list[Window] = []
        operand_dims: list[tuple[int, ...]] = []
        position = {mode: k for k, mode in enumerate(value.node_modes)}
        for factor, mapping in zip(value.factors, value.factor_maps, strict=True):
            factor_value = self.forest.values[factor.value]
            stored = self.lookup(build, factor.value)
            wanted = {
                m: bound[mapping[m]] for m in factor_value.modes if mapping[m] in bound
            }
            operands.append(
                self.window(
                    stored,
                    factor_value.modes,
                    wanted,
                    f"build of @{value.name}, factor @{factor.value}",
                )
            )
            operand_dims.append(tuple(position[mapping[m]] for m in factor_value.modes))
        extents = tuple(
            self.sliced_block(m, bound[m]) if m in bound else self.extent(m)
            for m in value.node_modes
        )
        steps = self.steps
        steps.append(Alloc(target.number))
        steps.append(Zero(target.number))
        steps.append(
            Contract(
                value.name,
                target.number,
                tuple(operands),
                tuple(operand_dims),
                extents,
                tuple(k >= len(value.modes) for k in range(len(value.node_modes))),
                tuple(str(m) for m in value.node_modes),
            )
        )
        self.keep_piece(build, target.number)
        self.owned.setdefault(build.value, []).append(target.number)

    def buffer(self, buffer: Buffer) -> None:
        value = self.forest.values[buffer.value]
        slices = {b.mode: b.instance for b in buffer.slices}
        tensor = self.tensor(value, "buffer", slices)
        self.keep_buffer(buffer, tensor.number)
        self.steps.append(Alloc(tensor.number))
        if buffer.zero:
            self.steps.append(Zero(tensor.number))
        self.owned.setdefault(buffer.value, []).append(tensor.number)

    def write(
        self, write: Write, piece: Piece[int] | None, buffer: BufferState[int] | None
    ) -> None:
        if piece is None or buffer is None:
            raise LoweringError(
                f"write of @{write.value}: no piece built in this block, or no "
                "buffer outside the enclosing loop"
            )
        value = self.forest.values[write.value]
        shape = self.tensors[buffer.data].shape
        piece_slices = piece.slices
        buffer_slices = buffer.slices
        offsets: list[int | None] = []
        sizes: list[int] = []
        for mode, size in zip(value.modes, shape, strict=True):
            instance = piece_slices.get(mode)
            if instance is None or mode in buffer_slices:
                offsets.append(None)
                sizes.append(size)
            else:
                offsets.append(instance)
                sizes.append(self.block(instance))
        self.fill(piece, buffer)
        self.steps.append(
            WriteBack(
                write.value,
                piece.data,
                Window(buffer.data, tuple(offsets), tuple(sizes)),
                write.accumulate,
            )
        )

    def output(self, output: Output) -> None:
        if output.into is None:
            self.steps.append(self.emit(output))
        elif not output.direct:  # direct: added piece by piece already
            self.steps.append(self.residual_output(output))

    def emit(self, output: Output) -> Emit:
        """A tree's result written into its output argument."""
        tree = self.forest.trees[self.tree_number[output.tree]]
        source = None
        if output.value is not None:
            stored = self.lookup(output, output.value)
            if stored.slices:
                raise LoweringError(
                    f"output of @{tree.name} reads a slice of @{output.value}"
                )
            source = stored.tensor
        return Emit(tree.name, self.outputs[tree.name], source, tree.coeff)

    # -- the residual --------------------------------------------------------

    def whole(self, tensor: int) -> Window:
        shape = self.tensors[tensor].shape
        return Window(tensor, (None,) * len(shape), shape)

    def residual(self, residual: Residual) -> None:
        """Group 0 is the result argument, zeroed; another group is a
        buffer of its own, allocated and zeroed."""
        if residual.group == 0:
            self.steps.append(Zero(self.residuals[0]))
            return
        tensor = self.residual_tensor(residual.group).number
        self.residuals[residual.group] = tensor
        self.steps += [Alloc(tensor), Zero(tensor)]

    def root_dims(self, tree: str) -> tuple[int, ...]:
        """Per dimension of tree ``tree``'s root value, the residual's
        dimension it lands on."""
        try:
            axes = root_axes(self.forest, self.tree_number[tree], self.residual_modes)
        except AssemblyError as error:
            raise LoweringError(str(error)) from None
        dims = [0] * len(axes)
        for residual_dim, root_dim in enumerate(axes):
            dims[root_dim] = residual_dim
        return tuple(dims)

    def residual_write(self, write: Write, piece: Piece[int] | None) -> None:
        """A root's piece, times the tree's coefficient, added into the
        residual's block at the piece's slices (the root never gets a buffer
        of its own)."""
        assert write.into is not None and write.tree is not None
        if piece is None:
            raise LoweringError(
                f"write of @{write.value} into the residual: no piece built in "
                "this block"
            )
        self.add(piece)
        piece_slices = piece.slices
        modes = self.forest.values[write.value].modes
        dims = self.root_dims(write.tree)
        target = self.residuals[write.into]
        shape = self.tensors[target].shape
        offsets: list[int | None] = [None] * len(shape)
        sizes = list(shape)
        for mode, dim in zip(modes, dims, strict=True):
            instance = piece_slices.get(mode)
            if instance is not None:
                offsets[dim] = instance
                sizes[dim] = self.block(instance)
        tree = self.forest.trees[self.tree_number[write.tree]]
        self.steps.append(
            AddScaled(
                f"@{write.tree} into {residual_name(write.into)}",
                piece.data,
                dims,
                Window(target, tuple(offsets), tuple(sizes)),
                tree.coeff,
                True,
            )
        )

    def residual_output(self, output: Output) -> AddScaled:
        """A tree's whole result, ``coeff * root``, added into the residual
        (a bare number adds its coefficient)."""
        assert output.into is not None
        tree = self.forest.trees[self.tree_number[output.tree]]
        source: int | None = None
        dims: tuple[int, ...] = ()
        if output.value is not None:
            stored = self.lookup(output, output.value)
            if stored.slices:
                raise LoweringError(
                    f"output of @{tree.name} reads a slice of @{output.value}"
                )
            source = stored.tensor
            dims = self.root_dims(output.tree)
        return AddScaled(
            f"@{tree.name} into {residual_name(output.into)}",
            source,
            dims,
            self.whole(self.residuals[output.into]),
            tree.coeff,
            True,
        )

    def apply(self, apply: Apply) -> None:
        """The operator step: per operator (the one next to the tensors
        first) the residual is copied into an operand tensor and rebuilt as
        the sum of its weighted relabellings, one ``AddScaled`` each; the
        operand is the one extra residual-sized buffer the schedule counts.
        A group other than 0 is then added into group 0 and freed."""
        residual = self.residuals[apply.group]
        name = residual_name(apply.group)
        steps = self.steps
        if apply.operators:
            operand = self.add_tensor(
                name,
                "operand",
                self.tensors[residual].shape,
                self.residual_modes,
            ).number
            steps.append(Alloc(operand))
            identity = tuple(range(len(self.residual_modes)))
            for operator in reversed(apply.operators):
                steps.append(
                    AddScaled(
                        f"{name} operand of {operator}",
                        residual,
                        identity,
                        self.whole(operand),
                        Fraction(1),
                        False,
                    )
                )
                for term, (weight, mapping) in enumerate(operator.relabellings()):
                    try:
                        axes = axis_permutation(self.residual_modes, mapping, operator)
                    except OperatorError as error:
                        raise LoweringError(str(error)) from None
                    dims = [0] * len(axes)
                    for result_dim, operand_dim in enumerate(axes):
                        dims[operand_dim] = result_dim
                    steps.append(
                        AddScaled(
                            f"{name} = {operator}, term {term}",
                            operand,
                            tuple(dims),
                            self.whole(residual),
                            weight,
                            term > 0,
                        )
                    )
            steps.append(Free(operand))
        if apply.group != 0:
            steps.append(
                AddScaled(
                    f"{name} into {residual_name(0)}",
                    residual,
                    tuple(range(len(self.residual_modes))),
                    self.whole(self.residuals[0]),
                    Fraction(1),
                    True,
                )
            )
            steps.append(Free(residual))
            del self.residuals[apply.group]
        self.close_group(apply.group)


def build_plan(
    forest: Forest, schedule: Schedule, sizing: Sizing | None = None
) -> Plan:
    """The lowering plan of a valid schedule of ``forest``.

    ``sizing`` may override extents (``Sizing(forest, {"i": 2})``); every
    space a lowered tensor or loop uses must have an extent. Raises
    ``LoweringError``.
    """
    return _Planner(forest, schedule, sizing or Sizing(forest)).plan()
