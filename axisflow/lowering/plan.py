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

Pure (no xDSL). ``LoweringError`` names what cannot be lowered: a space
without extent, a tensor larger than a memref can index.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from axisflow.forest.model import Forest, Value
from axisflow.pipeline.assemble import AssemblyError, root_axes
from axisflow.pipeline.memory import Sizing, residual_name
from axisflow.pipeline.schedule import (
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
from axisflow.residual import OperatorError
from axisflow.residual.operators import axis_permutation
from axisflow.roles.index import Index


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
    tensor: int
    slices: dict[Index, int]


@dataclass
class _Frame:
    pieces: dict[str, _Stored] = field(default_factory=dict[str, _Stored])
    buffers: dict[str, _Stored] = field(default_factory=dict[str, _Stored])


class _Planner:
    def __init__(self, forest: Forest, schedule: Schedule, sizing: Sizing) -> None:
        self.forest = forest
        self.schedule = schedule
        self.sizing = sizing
        self.tensors: list[Tensor] = []
        self.frames: list[_Frame] = [_Frame()]
        self.inputs: dict[str, int] = {}
        self.blocks: dict[int, int] = {}
        self.memo: dict[int, frozenset[str]] = {}
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
                f"@{name} would be a memref of {elements:.3e} elements "
                f"({'x'.join(map(str, shape))} over {' '.join(map(str, modes))}): "
                "more than a memref can index (2^63 - 1); lower at smaller extents"
            )
        tensor = Tensor(len(self.tensors), name, kind, shape, tuple(map(str, modes)))
        self.tensors.append(tensor)
        return tensor

    def mentions(self, item: Item) -> frozenset[str]:
        """Every value an item (with its body) builds, writes or reads."""
        found = self.memo.get(id(item))
        if found is not None:
            return found
        names: set[str] = set()
        if isinstance(item, LoopPass):
            for child in item.body:
                names |= self.mentions(child)
        elif isinstance(item, Build):
            names.add(item.value)
            names.update(f.value for f in self.forest.values[item.value].factors)
        elif isinstance(item, Buffer | Write | Output) and item.value is not None:
            names.add(item.value)  # a buffer, write or output
        found = self.memo[id(item)] = frozenset(names)
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
        steps = self.items(self.schedule.items)
        return Plan(
            self.forest.name or "forest",
            tuple(self.tensors),
            tuple(inputs),
            tuple(arguments),
            tuple(steps),
            residual,
        )

    def residual_tensor(self, group: int) -> Tensor:
        """A residual-sized tensor (its dimensions the residual's modes)."""
        modes = self.residual_modes
        shape = tuple(self.extent(m) for m in modes)
        return self.add_tensor(residual_name(group), "residual", shape, modes)

    def items(self, items: Sequence[Item]) -> list[Step]:
        last: dict[str, int] = {}
        for position, item in enumerate(items):
            for name in self.mentions(item):
                last[name] = position
        owned: dict[str, list[int]] = {}
        steps: list[Step] = []
        for position, item in enumerate(items):
            if isinstance(item, LoopPass):
                steps.extend(self.loop(item))
            elif isinstance(item, Build):
                tensor = self.build(item, steps)
                owned.setdefault(item.value, []).append(tensor)
            elif isinstance(item, Buffer):
                value = self.forest.values[item.value]
                slices = {b.mode: b.instance for b in item.slices}
                tensor = self.tensor(value, "buffer", slices)
                self.frames[-1].buffers[item.value] = _Stored(tensor.number, slices)
                steps.append(Alloc(tensor.number))
                if item.zero:
                    steps.append(Zero(tensor.number))
                owned.setdefault(item.value, []).append(tensor.number)
            elif isinstance(item, Write):
                if item.into is None:
                    steps.append(self.write(item))
                else:
                    steps.append(self.residual_write(item))
            elif isinstance(item, Output):
                if item.into is None:
                    steps.append(self.output(item))
                elif not item.direct:  # direct: added piece by piece already
                    steps.append(self.residual_output(item))
            elif isinstance(item, Residual):
                steps.extend(self.residual(item))
            else:
                steps.extend(self.apply(item))
            for name in self.mentions(item):
                if last[name] == position:
                    steps.extend(Free(t) for t in owned.pop(name, ()))
        for tensors in owned.values():  # built, never mentioned again
            steps.extend(Free(t) for t in tensors)
        return steps

    def loop(self, item: LoopPass) -> list[Loop]:
        """A loop pass: the full blocks, then (when the block does not divide
        the extent) the last, smaller block as a loop of its own, so that
        every shape stays static."""
        extent = self.loop_extents[item.instance]
        block = min(item.block, extent)
        full = extent - extent % block
        loops: list[Loop] = []
        for start, stop, size in ((0, full, block), (full, extent, extent - full)):
            if stop <= start:
                continue
            self.blocks[item.instance] = size
            self.frames.append(_Frame())
            body = self.items(item.body)
            self.frames.pop()
            loops.append(
                Loop(item.instance, item.space, start, stop, size, tuple(body))
            )
        del self.blocks[item.instance]
        return loops

    def lookup(self, name: str) -> _Stored:
        if name in self.inputs:
            return _Stored(self.inputs[name], {})
        for frame in reversed(self.frames):
            if name in frame.pieces:
                return frame.pieces[name]
            if name in frame.buffers:
                return frame.buffers[name]
        raise LoweringError(f"@{name} is read where the schedule has not made it")

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

    def build(self, build: Build, steps: list[Step]) -> int:
        value = self.forest.values[build.value]
        slices = {b.mode: b.instance for b in build.slices}
        bound = slices | {b.mode: b.instance for b in build.sums}
        kind: TensorKind = "piece" if len(self.frames) > 1 else "value"
        target = self.tensor(value, kind, slices)
        operands: list[Window] = []
        operand_dims: list[tuple[int, ...]] = []
        position = {mode: k for k, mode in enumerate(value.node_modes)}
        for factor, mapping in zip(value.factors, value.factor_maps, strict=True):
            factor_value = self.forest.values[factor.value]
            stored = self.lookup(factor.value)
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
        self.frames[-1].pieces[value.name] = _Stored(target.number, slices)
        return target.number

    def write(self, write: Write) -> WriteBack:
        piece = self.frames[-1].pieces.pop(write.value)
        buffer = next(
            f.buffers[write.value]
            for f in reversed(self.frames[:-1])
            if write.value in f.buffers
        )
        value = self.forest.values[write.value]
        shape = self.tensors[buffer.tensor].shape
        offsets: list[int | None] = []
        sizes: list[int] = []
        for mode, size in zip(value.modes, shape, strict=True):
            instance = piece.slices.get(mode)
            if instance is None or mode in buffer.slices:
                offsets.append(None)
                sizes.append(size)
            else:
                offsets.append(instance)
                sizes.append(self.block(instance))
        return WriteBack(
            write.value,
            piece.tensor,
            Window(buffer.tensor, tuple(offsets), tuple(sizes)),
            write.accumulate,
        )

    def output(self, output: Output) -> Emit:
        tree = next(t for t in self.forest.trees if t.name == output.tree)
        source = None
        if output.value is not None:
            stored = self.lookup(output.value)
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

    def residual(self, item: Residual) -> list[Step]:
        """Group 0 is the result argument, zeroed; another group is a
        buffer of its own, allocated and zeroed."""
        if item.group == 0:
            return [Zero(self.residuals[0])]
        tensor = self.residual_tensor(item.group).number
        self.residuals[item.group] = tensor
        return [Alloc(tensor), Zero(tensor)]

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

    def residual_write(self, write: Write) -> AddScaled:
        """A root's piece, times the tree's coefficient, added into the
        residual's block at the piece's slices (the root never gets a buffer
        of its own)."""
        assert write.into is not None and write.tree is not None
        # a root several trees share is added once per tree: the piece stays
        # until the block ends
        piece = self.frames[-1].pieces[write.value]
        modes = self.forest.values[write.value].modes
        dims = self.root_dims(write.tree)
        target = self.residuals[write.into]
        shape = self.tensors[target].shape
        offsets: list[int | None] = [None] * len(shape)
        sizes = list(shape)
        for mode, dim in zip(modes, dims, strict=True):
            instance = piece.slices.get(mode)
            if instance is not None:
                offsets[dim] = instance
                sizes[dim] = self.block(instance)
        tree = self.forest.trees[self.tree_number[write.tree]]
        return AddScaled(
            f"@{write.tree} into {residual_name(write.into)}",
            piece.tensor,
            dims,
            Window(target, tuple(offsets), tuple(sizes)),
            tree.coeff,
            True,
        )

    def residual_output(self, output: Output) -> AddScaled:
        """A tree's whole result, ``coeff * root``, added into the residual
        (a bare number adds its coefficient)."""
        assert output.into is not None
        tree = self.forest.trees[self.tree_number[output.tree]]
        source: int | None = None
        dims: tuple[int, ...] = ()
        if output.value is not None:
            stored = self.lookup(output.value)
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

    def apply(self, item: Apply) -> list[Step]:
        """The operator step: per operator (the one next to the tensors
        first) the residual is copied into an operand tensor and rebuilt as
        the sum of its weighted relabellings, one ``AddScaled`` each; the
        operand is the one extra residual-sized buffer the schedule counts.
        A group other than 0 is then added into group 0 and freed."""
        residual = self.residuals[item.group]
        name = residual_name(item.group)
        steps: list[Step] = []
        if item.operators:
            operand = self.add_tensor(
                name,
                "operand",
                self.tensors[residual].shape,
                self.residual_modes,
            ).number
            steps.append(Alloc(operand))
            identity = tuple(range(len(self.residual_modes)))
            for operator in reversed(item.operators):
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
        if item.group != 0:
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
            del self.residuals[item.group]
        return steps


def build_plan(
    forest: Forest, schedule: Schedule, sizing: Sizing | None = None
) -> Plan:
    """The lowering plan of a valid schedule of ``forest``.

    ``sizing`` may override extents (``Sizing(forest, {"i": 2})``); every
    space a lowered tensor or loop uses must have an extent. Raises
    ``LoweringError``.
    """
    return _Planner(forest, schedule, sizing or Sizing(forest)).plan()
