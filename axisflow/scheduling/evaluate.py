"""The reference evaluator: run a forest and its schedule on random tensors.

Two independent evaluations with NumPy (``numpy.einsum``):

* ``evaluate_forest``: the unbatched forest, each value computed once from
  its factors, in its own frame (tensors with one axis per mode, see
  ``axisflow.forest.model``);
* ``run_schedule``: the schedule as written. Every ``LoopPass`` iterates over
  blocks of its space; a build reads only the blocks its binds name
  (inputs and full buffers are sliced, pieces must already be that block),
  partial sums are added into buffers, slices are scattered into buffers,
  and a buffer is only readable once the pass writing it has closed (the
  schedule walker's rules, ``axisflow.scheduling.walker``: the runner is
  its client that visits each loop body once per block). Any read the
  schedule does not make available raises ``ScheduleRunError``.

The run holds what the memory model counts (``scheduling.memory``,
``docs/pipeline.md`` section 3.4), so that the model's peak is what it
allocates (``tests/pipeline/test_measured_memory.py`` measures it): each
piece and buffer is dropped after the item the model ends its life at
(``memory.releases``); a residual buffer is allocated where the model
starts its life (its first write, or the start of the loop pass around it
``memory.storage_events`` names);
pieces and roots are added into it scaled without a copy
(``contraction.add_scaled``); an operator step holds one residual more; a
contraction allocates its result only (``scheduling.contraction``). A
tree's result of its own (``coeff * root``, not added into the residual) is
the caller's, as in the model; ``compare`` also keeps those of the trees
added into the residual, to check them one by one.

``compare`` runs both on the same random inputs and reports, per tree, the
relative difference of the results (``coeff * root``); the schedule is
correct when every tree agrees within ``TOLERANCE``.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from axisflow.forest.model import Forest, Value
from axisflow.gc_pause import gc_paused
from axisflow.residual import apply_operator
from axisflow.roles.index import Index
from axisflow.scheduling import pages
from axisflow.scheduling.assemble import assemble_residual, root_axes, schedule_layout
from axisflow.scheduling.contraction import (
    COPIES_SCALED_CHUNK,
    DEFAULT_MEMORY_LIMIT,
    SCALED_CHUNK,
    Contraction,
    EvaluationMemoryError,
    MatrixProduct,
    MemoryGuard,
    add_scaled,
)
from axisflow.scheduling.memory import Sizing, storage_events
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
    reader,
)

Array = NDArray[np.float64]

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "RESIDUAL",
    "TOLERANCE",
    "Comparison",
    "Contribution",
    "EvaluationMemoryError",
    "PartResult",
    "ScheduleRun",
    "ScheduleRunError",
    "check_memory",
    "compare",
    "evaluate_forest",
    "measured_peak",
    "random_inputs",
    "relative_difference",
    "residual_target",
    "run_part",
    "run_residual",
    "run_schedule",
]

UFUNC_BUFSIZE = 1024
"""Elements of NumPy's ufunc buffers while a schedule runs (8 KiB each)."""

TOLERANCE = 1e-10
"""Largest relative difference accepted between the two evaluations."""


class ScheduleRunError(RuntimeError):
    """The schedule reads something it has not made available."""


def random_inputs(forest: Forest, sizing: Sizing, seed: int = 0) -> dict[str, Array]:
    """A standard-normal tensor for every input value that is used."""
    rng = np.random.default_rng(seed)
    used = {site.value for site in forest.sites}
    inputs: dict[str, Array] = {}
    for name, value in forest.values.items():
        if value.is_input and name in used:
            shape = tuple(sizing.mode_extent(m) for m in value.modes)
            inputs[name] = rng.standard_normal(shape)
    return inputs


class _Contractions:
    """Each value's compiled einsum (``scheduling.contraction``), made once."""

    def __init__(
        self, copies: bool = False, layouts: Mapping[str, tuple[int, ...]] | None = None
    ) -> None:
        self.compiled: dict[str, Contraction] = {}
        self.copies = copies
        self.layouts = layouts or {}
        """Value -> the axes its reader merges (``result_layouts``)."""

    def compile(self, value: Value) -> Contraction:
        """``value``'s contraction, compiled at its first use."""
        contraction = self.compiled.get(value.name)
        if contraction is None:
            contraction = self.compiled[value.name] = Contraction(
                value.name,
                value.node_modes,
                [list(mapping.values()) for mapping in value.factor_maps],
                value.modes,
                copies=self.copies,
                merged=self.layouts.get(value.name),
            )
        return contraction

    def __call__(self, value: Value, operands: Sequence[Array]) -> Array:
        return self.compile(value)(operands)


def result_layouts(
    forest: Forest, built: Sequence[str], sizing: Sizing
) -> dict[str, tuple[int, ...]]:
    """For each value of ``built`` that a matrix product of ``built``
    reads: the axes that product merges into one (the summed axes, in the
    order they lie in the other operand, taken as laid out in its axes'
    order), so that the value is built with them lying together
    (``Contraction``'s ``merged``) and read without a copy. A value read
    by several products takes the axes of the one with the most node
    elements."""
    names = set(built)
    layouts: dict[str, tuple[int, ...]] = {}
    for matrix, side, factor in _heaviest_readers(forest, built, sizing):
        if factor in names:
            pairs = sorted(matrix.summed, key=lambda pair: pair[1 - side])
            layouts[factor] = tuple(pair[side] for pair in pairs)
    return layouts


def _heaviest_readers(
    forest: Forest, built: Sequence[str], sizing: Sizing
) -> list[tuple[MatrixProduct, int, str]]:
    """For each factor that a matrix product of ``built`` reads, that of
    its readers with the most node elements (on a tie, the first built):
    the product, the factor's side in it and the factor's name."""
    heaviest: dict[str, tuple[int, MatrixProduct, int]] = {}
    contract = _Contractions()
    for name in built:
        reader = forest.values[name]
        matrix = contract.compile(reader).matrix
        if matrix is None:
            continue
        weight = 1
        for mode in reader.node_modes:
            weight *= sizing.mode_extent(mode)
        for side, factor in enumerate(reader.factors):
            known = heaviest.get(factor.value)
            if known is None or known[0] < weight:
                heaviest[factor.value] = (weight, matrix, side)
    return [(matrix, side, factor) for factor, (_, matrix, side) in heaviest.items()]


def tree_numbers(forest: Forest) -> dict[str, int]:
    """Each tree's name -> the position of the first tree of that name."""
    numbers: dict[str, int] = {}
    for number, tree in enumerate(forest.trees):
        numbers.setdefault(tree.name, number)
    return numbers


def residual_order(forest: Forest, schedule: Schedule) -> tuple[int, ...]:
    """The order in which to lay the residual's axes out in memory
    (outermost first): the axes the pieces added into it are sliced along
    (the modes their builds slice), then the others, each group in the
    residual's order. A block's piece then adds into whole inner matrices
    of the residual instead of across it: the CSV doubles' pieces (blocks
    of 4x4 pairs of ``i``, the residual's innermost axes) were added 512
    bytes apart, and the schedule's run in one process took 8.66 to 8.71 s
    against 7.84 to 8.02 s so (``docs/benchmarks-executor.md``). The
    axes' own order when nothing is sliced; empty without a residual."""
    modes = schedule.residual_modes()
    if not modes:
        return ()
    sliced: dict[str, set[Index]] = {}
    writes: list[Write] = []
    for item, _ in schedule.walk():
        if isinstance(item, Build):
            sliced.setdefault(item.value, set()).update(b.mode for b in item.slices)
        elif isinstance(item, Write) and item.into is not None:
            writes.append(item)
    tree_number = tree_numbers(forest)
    outer: set[int] = set()
    for write in writes:
        if write.tree is None or write.value not in forest.values:
            continue
        value_modes = forest.values[write.value].modes
        axes = root_axes(forest, tree_number[write.tree], modes)
        cut = sliced.get(write.value, set())
        outer.update(k for k, a in enumerate(axes) if value_modes[a] in cut)
    return (
        *sorted(outer),
        *(k for k in range(len(modes)) if k not in outer),
    )


def built_values(forest: Forest, schedule: Schedule) -> list[str]:
    """The values of ``forest`` that ``schedule`` builds, in walk order
    (a value built in several places once per build)."""
    return [
        item.value
        for item, _ in schedule.walk()
        if isinstance(item, Build) and item.value in forest.values
    ]


def input_layouts(
    forest: Forest, built: Sequence[str], sizing: Sizing
) -> dict[str, tuple[int, ...]]:
    """For each input that a matrix product of ``built`` reads and that
    its axes' order does not serve: the order
    in which to lay its axes out in memory (outermost first) so that the
    product takes it without a copy: the modes kept from both (stack
    axes), then its other kept axes, then the summed ones, each group in
    the input's axes' order (the order ``result_layouts`` lays the other
    operand's summed axes out in). Laid out in its axes' order, an input
    whose summed axes lie apart, or between its kept ones, is copied by
    every block of every product that reads it; the executor lays each
    input out once for the run instead. An input read by several products
    takes the order of the one with the most node elements (on a tie, the
    first built)."""
    names = set(built)
    layouts: dict[str, tuple[int, ...]] = {}
    for matrix, side, factor in _heaviest_readers(forest, built, sizing):
        if factor in names or not forest.values[factor].is_input:
            continue
        kept = matrix.left_kept if side == 0 else matrix.right_kept
        order = (
            *sorted(pair[side] for pair in matrix.both),
            *sorted(kept),
            *sorted(pair[side] for pair in matrix.summed),
        )
        if order != tuple(sorted(order)):  # laid out in its axes' order already
            layouts[factor] = order
    return layouts


FLOAT_BYTES = 8
"""The evaluator computes in float64."""


def _elements(sizing: Sizing, value: Value) -> int:
    count = 1
    for mode in value.modes:
        count *= sizing.mode_extent(mode)
    return count


def input_bytes(forest: Forest, sizing: Sizing) -> int:
    """Bytes of the random inputs ``random_inputs`` would allocate."""
    used = {site.value for site in forest.sites}
    return FLOAT_BYTES * sum(
        _elements(sizing, v)
        for name, v in forest.values.items()
        if v.is_input and name in used
    )


def check_memory(
    forest: Forest, sizing: Sizing, what: str, memory_limit: int | None = None
) -> None:
    """Refuse (``EvaluationMemoryError``), before allocating anything, to
    evaluate ``forest`` densely when its inputs and every built value
    together exceed ``memory_limit`` (``DEFAULT_MEMORY_LIMIT`` by default):
    the unbatched evaluation keeps them all."""
    built = sum(_elements(sizing, v) for v in forest.built_values())
    needed = input_bytes(forest, sizing) + FLOAT_BYTES * built
    MemoryGuard(memory_limit).check(needed, what)


def evaluate_forest(forest: Forest, inputs: Mapping[str, Array]) -> dict[str, Array]:
    """Each tree's result, ``coeff * root``, evaluated without batching."""
    computed: dict[str, Array] = dict(inputs)
    contract = _Contractions()
    for value in forest.built_values():
        operands = [computed[f.value] for f in value.factors]
        computed[value.name] = contract(value, operands)
    results: dict[str, Array] = {}
    for tree in forest.trees:
        coeff = float(tree.coeff)
        if tree.root is None:
            results[tree.name] = np.asarray(coeff, dtype=np.float64)
        else:
            results[tree.name] = coeff * computed[forest.sites[tree.root].value]
    return results


# --------------------------------------------------------------------------
# Running a schedule
# --------------------------------------------------------------------------

Range = tuple[int, int]


@dataclass(slots=True)
class _Stored:
    """An array covering ``ranges`` of the sliced modes (others in full)."""

    array: Array
    ranges: dict[Index, Range]


class ScheduleRun:
    """A schedule made ready to run, once: its loops' extents, where its
    storage dies (``memory.releases``) and its values' compiled
    contractions. That bookkeeping grows with the schedule, not with the
    data; ``run`` evaluates the schedule, as often as asked."""

    def __init__(
        self,
        forest: Forest,
        schedule: Schedule,
        sizing: Sizing,
        *,
        copies: bool = False,
    ) -> None:
        """``copies``: contractions may copy operands into a layout BLAS
        takes (``Contraction.copies``; the executor's choice)."""
        self.forest = forest
        self.schedule = schedule
        self.sizing = sizing
        try:
            self.loop_extents = loop_extents(
                schedule, sizing.mode_extent, sizing.extent
            )
            events = storage_events(forest, schedule, sizing)
            self.releases = events.releases
            self.openings = events.openings
        except (LoopExtentError, BrokenScheduleError) as error:
            raise ScheduleRunError(str(error)) from None
        built = built_values(forest, schedule)
        # each product lays its result out as the product reading it wants:
        # decided once per plan, not per block
        self.contract = _Contractions(copies, result_layouts(forest, built, sizing))
        for name in built:
            self.contract.compile(forest.values[name])
        self.tree_number = tree_numbers(forest)
        self.residual_order = residual_order(forest, schedule)
        """The residual's axes in memory order (``residual_order``)."""

    def run(
        self, inputs: Mapping[str, Array], *, keep_trees: bool = False
    ) -> tuple[dict[str, Array], Array | None]:
        """The trees' results and the residual (``run_residual``)."""
        runner = _Runner(self, inputs, keep_trees)
        # NumPy buffers an operand of an elementwise operation that does not
        # lie as the others do (a piece added into a buffer slice): 8192
        # elements each by default, three per ``+=``; smaller buffers keep
        # that below what a piece or buffer weighs
        previous = np.setbufsize(UFUNC_BUFSIZE)
        try:
            runner.walk(self.schedule.items)
        finally:
            np.setbufsize(previous)
        if not runner.groups:
            return runner.results, None
        return runner.results, runner.residual_buffer(0)  # zero if never written


class _Runner(ScheduleWalker[_Stored, _Stored]):
    """The walker's client that runs every loop body once per block."""

    def __init__(
        self, run: ScheduleRun, inputs: Mapping[str, Array], keep_trees: bool
    ) -> None:
        super().__init__()
        self.forest = run.forest
        self.sizing = run.sizing
        self.inputs = {name: _Stored(array, {}) for name, array in inputs.items()}
        self.keep_trees = keep_trees
        """Keep the result of a tree added into the residual too."""
        self.current: dict[int, Range] = {}
        """The current block of each open loop instance."""
        self.results: dict[str, Array] = {}
        self.mode_extents: dict[Index, int] = {}
        self.residuals: dict[int, Array] = {}
        """Residual group -> its buffer, from where the model starts it."""
        self.residual_modes: tuple[Index, ...] = ()
        self.releases = run.releases
        self.openings: Mapping[int, list[int]] = run.openings
        """Loop pass (``id``) -> residual groups allocated at its start."""
        self.tree_number = run.tree_number
        self.residual_order = run.residual_order
        self.contract = run.contract
        self.loop_extents = run.loop_extents

    def walk(self, items: Sequence[Item]) -> None:
        """Visit ``items``, dropping after each what nothing uses later
        (``memory.releases``: where the model ends its life)."""
        visit, dead_after = self.visit, self.releases
        root = len(self.scopes) == 1
        for item in items:
            if root:
                # a root pass's blocks build arrays of the sizes its earlier
                # blocks freed: each takes a freed one's memory; the freed
                # ones go when the item ends (``pages.reusing``), before
                # what runs next allocates apart from the pool (the
                # operator step, an output's sums)
                with pages.reusing():
                    visit(item)
            else:
                visit(item)
            dead = dead_after.get(id(item))
            if dead is not None:
                scope = self.scopes[-1]
                for name, is_buffer in dead:
                    (scope.buffers if is_buffer else scope.pieces).pop(name, None)

    def extent(self, mode: Index) -> int:
        extent = self.mode_extents.get(mode)
        if extent is None:
            extent = self.mode_extents[mode] = self.sizing.mode_extent(mode)
        return extent

    def loop(self, loop: LoopPass) -> None:
        for group in self.openings.get(id(loop), ()):
            self.residual_buffer(group)  # live from here, as the model counts
        extent = self.loop_extents[loop.instance]
        for start in range(0, extent, loop.block):
            self.current[loop.instance] = (start, min(start + loop.block, extent))
            self.visit_body(loop)
        del self.current[loop.instance]

    def block_of(self, bind: Bind) -> Range:
        block = self.current.get(bind.instance)
        if block is None:
            raise ScheduleRunError(f"loop instance {bind.instance} is not open")
        return block

    def unreadable(
        self, item: Item, name: str, buffer: BufferState[_Stored] | None
    ) -> None:
        if buffer is None:
            raise ScheduleRunError(
                f"{reader(item)} reads @{name}, which is not available"
            )
        raise ScheduleRunError(
            f"{reader(item)} reads @{name} before its buffer is complete"
        )

    def lookup(self, item: Item, name: str) -> _Stored:
        """What ``item`` reads of ``name``: an input, or the piece or
        complete buffer the schedule made available."""
        stored = self.inputs.get(name)
        if stored is not None:
            return stored
        found = self.read(item, name)
        assert found is not None  # ``unreadable`` raised otherwise
        return found.data

    def cut(
        self,
        stored: _Stored,
        modes: Sequence[Index],
        wanted: Mapping[Index, Range],
        what: str,
    ) -> Array:
        """The part of ``stored`` where each mode in ``wanted`` is that range."""
        index: list[slice] = []
        for mode in modes:
            have = stored.ranges.get(mode, (0, self.extent(mode)))
            want = wanted.get(mode, (0, self.extent(mode)))
            if not (have[0] <= want[0] and want[1] <= have[1]):
                raise ScheduleRunError(
                    f"{what}: needs {mode} in {want}, but only {have} is stored"
                )
            index.append(slice(want[0] - have[0], want[1] - have[0]))
        return stored.array[tuple(index)]

    def build(self, build: Build) -> None:
        value = self.forest.values[build.value]
        bound = {b.mode: self.block_of(b) for b in (*build.slices, *build.sums)}
        operands: list[Array] = []
        for factor, mapping in zip(value.factors, value.factor_maps, strict=True):
            stored = self.lookup(build, factor.value)
            factor_modes = self.forest.values[factor.value].modes
            wanted = {m: bound[mapping[m]] for m in factor_modes if mapping[m] in bound}
            operands.append(
                self.cut(
                    stored,
                    factor_modes,
                    wanted,
                    f"build of @{value.name}, @{factor.value}",
                )
            )
        array = self.contract(value, operands)
        ranges = {b.mode: self.block_of(b) for b in build.slices}
        self.keep_piece(build, _Stored(array, ranges))

    def buffer(self, buffer: Buffer) -> None:
        value = self.forest.values[buffer.value]
        ranges = {b.mode: self.block_of(b) for b in buffer.slices}
        shape = tuple(
            (ranges[m][1] - ranges[m][0]) if m in ranges else self.extent(m)
            for m in value.modes
        )
        self.keep_buffer(buffer, _Stored(pages.zeros(shape), ranges))

    def write(
        self,
        write: Write,
        piece: Piece[_Stored] | None,
        buffer: BufferState[_Stored] | None,
    ) -> None:
        if piece is None:
            raise ScheduleRunError(f"write of @{write.value}: nothing built to write")
        if buffer is None:
            raise ScheduleRunError(f"write of @{write.value}: no buffer")
        value = self.forest.values[write.value]
        have_ranges = buffer.data.ranges
        piece_ranges = piece.data.ranges
        index: list[slice] = []
        for mode in value.modes:
            have = have_ranges.get(mode, (0, self.extent(mode)))
            piece_range = piece_ranges.get(mode, (0, self.extent(mode)))
            index.append(slice(piece_range[0] - have[0], piece_range[1] - have[0]))
        self.store(buffer, tuple(index), piece.data.array, write.accumulate)
        self.fill(piece, buffer)

    def store(
        self,
        buffer: BufferState[_Stored],
        index: tuple[slice, ...],
        array: Array,
        accumulate: bool,
    ) -> None:
        """Scatter (or add) ``array`` into ``buffer`` at ``index``."""
        if accumulate:
            buffer.data.array[index] += array
        else:
            buffer.data.array[index] = array

    def residual_write(self, write: Write, piece: Piece[_Stored] | None) -> None:
        assert write.into is not None and write.tree is not None
        if piece is None:
            raise ScheduleRunError(f"write of @{write.value}: nothing built to write")
        self.add(piece)
        number = self.tree_number[write.tree]
        axes = root_axes(self.forest, number, self.residual_modes)
        modes = self.forest.values[write.value].modes
        ranges = piece.data.ranges
        index = tuple(
            slice(*ranges.get(modes[a], (0, self.extent(modes[a])))) for a in axes
        )
        coeff = float(self.forest.trees[number].coeff)
        self.add_into_residual(
            write.into, index, np.transpose(piece.data.array, axes), coeff
        )

    def add_into_residual(
        self, group: int, index: tuple[slice, ...], array: Array, coeff: float
    ) -> None:
        """Add ``coeff * array`` into residual ``group`` at ``index``."""
        add_scaled(
            self.residual_buffer(group)[(*index, ...)],  # a view, 0-d too
            array,
            coeff,
            COPIES_SCALED_CHUNK if self.contract.copies else SCALED_CHUNK,
        )

    def residual(self, residual: Residual) -> None:
        self.residual_modes = residual.modes

    def residual_buffer(self, group: int) -> Array:
        """Group ``group``'s residual, allocated (zero) where the model
        starts its life: at its first write, or at the start of the loop
        pass around it the model says (``openings``)."""
        array = self.residuals.get(group)
        if array is None:
            shape = tuple(self.extent(m) for m in self.residual_modes)
            array = self.residuals[group] = laid_out_zeros(shape, self.residual_order)
        return array

    def apply(self, apply: Apply) -> None:
        array = self.residual_buffer(apply.group)
        if apply.group != 0:
            self.residual_buffer(0)
        # one operator at a time, the last first (``apply_operators``), each
        # result replacing its operand: one residual more, as the model says
        for operator in reversed(apply.operators):
            array = self.residuals[apply.group] = apply_operator(
                array, self.residual_modes, operator
            )
        if apply.group != 0:  # added into group 0, then released
            self.residuals[0] += self.residuals.pop(apply.group)
        self.close_group(apply.group)

    def output(self, output: Output) -> None:
        number = self.tree_number[output.tree]
        coeff = float(self.forest.trees[number].coeff)
        if output.direct:
            return  # already added into the residual piece by piece
        if output.value is None:
            full = np.asarray(1.0, dtype=np.float64)
        else:
            stored = self.lookup(output, output.value)
            modes = self.forest.values[output.value].modes
            full = self.cut(stored, modes, {}, f"output of @{output.tree}")
        if output.into is None or self.keep_trees:
            self.results[output.tree] = coeff * full  # the caller's
        if output.into is not None:
            axes = root_axes(self.forest, number, self.residual_modes)
            self.add_into_residual(output.into, (), np.transpose(full, axes), coeff)


# --------------------------------------------------------------------------
# Running one part of a schedule (a task of a distributed executor)
# --------------------------------------------------------------------------


def laid_out_zeros(shape: Sequence[int], order: Sequence[int]) -> Array:
    """A zero array of ``shape`` whose axes lie in memory in ``order``
    (outermost first; empty: C order), its pages mapped (``pages.zeros``)."""
    if not order or list(order) == list(range(len(shape))):
        return pages.zeros(tuple(shape))
    laid = pages.zeros(tuple(shape[k] for k in order))
    return laid.transpose(np.argsort(order))


def residual_target(group: int) -> str:
    """How a ``Contribution`` names residual group ``group`` (no value can
    have this name)."""
    return f"(residual {group})"


Region = tuple[tuple[int | None, int | None], ...]
"""A contribution's index as bounds (``region``)."""


def region(index: Sequence[slice]) -> Region:
    """The bounds of ``index``, hashable: what tells two contributions to
    the same target that add into one region."""
    return tuple((part.start, part.stop) for part in index)


@dataclass(slots=True)
class Contribution:
    """What a part adds to storage outside it: ``array`` scattered
    (``accumulate=False``) or added into ``target`` (a root buffer's value,
    or a residual group: ``residual_target``) at ``index``."""

    target: str
    index: tuple[slice, ...]
    array: Array
    accumulate: bool

    def __sizeof__(self) -> int:
        # Dask sizes a task's result it does not know by sys.getsizeof:
        # what places tasks near their data, spills and counts bytes moved
        return object.__sizeof__(self) + self.array.nbytes


@dataclass(slots=True)
class PartResult:
    """What a part left: the pieces it built at the root (a root build's)
    and its contributions to the root's buffers and the residual."""

    pieces: dict[str, Array]
    contributions: list[Contribution]


def run_part(
    run: ScheduleRun,
    position: int,
    block: Range | None,
    inputs: Mapping[str, Array],
    pieces: Mapping[str, Array],
    buffers: Mapping[str, Array | None],
    carry: Sequence[Contribution] = (),
) -> PartResult:
    """Run root item ``position`` of ``run``'s schedule on its own: a root
    build, output or operator-free item, or, with ``block``, one block of a
    root loop pass (its body, inner loops included, with the evaluator's
    contractions). ``inputs``: the input values it reads; ``pieces``: the
    root pieces it reads; ``buffers``: the root buffers it reads (complete:
    their array) or writes (``None``). What it writes into root buffers and
    adds into the residual is returned, not stored (``PartResult``): the
    caller assembles the blocks.

    ``carry``: the contributions of earlier blocks of the same pass (one
    lane of an executor's blocks, run one after the other): the block adds
    its partial sums and residuals into theirs in place, as a whole run
    adds every block into one buffer, and returns them with its own. Their
    arrays must be the caller's to change (nothing else may read them)."""
    item = run.schedule.items[position]
    runner = _PartRunner(run, inputs)
    runner.carry_on(carry, run.schedule)
    root = runner.scopes[0]
    for name, array in pieces.items():
        root.pieces[name] = Piece(Build(name), _Stored(array, {}))
    for name, array in buffers.items():
        stored = _Stored(np.empty(0) if array is None else array, {})
        root.buffers[name] = BufferState(
            Buffer(name), 0, stored, complete=array is not None
        )
    previous = np.setbufsize(UFUNC_BUFSIZE)  # as ``ScheduleRun.run``
    try:
        # the part's blocks reuse the arrays its earlier blocks freed (and,
        # on an executor's worker, the run's earlier tasks': ``open_run``)
        with pages.reusing():
            if isinstance(item, LoopPass):
                if block is None:
                    raise ScheduleRunError(f"loop pass {item.instance}: no block given")
                runner.current[item.instance] = block
                runner.visit_body(item)
            else:
                runner.visit(item)
    finally:
        np.setbufsize(previous)
    kept = {
        name: piece.data.array
        for name, piece in root.pieces.items()
        if name not in pieces
    }
    added = [
        Contribution(residual_target(group), (), array, True)
        for group, array in runner.residuals.items()
    ]
    return PartResult(kept, runner.contributions + added)


class _PartRunner(_Runner):
    """The runner of one part: writes into the root's buffers are recorded
    as contributions; what it adds into the residual goes into a residual
    of its own per group (allocated at its first write, as in a whole
    run: one residual, not every piece kept), its contribution."""

    def __init__(self, run: ScheduleRun, inputs: Mapping[str, Array]) -> None:
        super().__init__(run, inputs, keep_trees=False)
        # a part's residuals are its own, one per lane (``task_lifetimes``
        # counts them so): allocated at their first write
        self.openings = {}
        self.residual_modes = run.schedule.residual_modes() or ()
        self.contributions: list[Contribution] = []
        self.summing: dict[tuple[str, Region], int] = {}
        """(root buffer, region) -> the contribution adding into it."""

    def carry_on(self, carry: Sequence[Contribution], schedule: Schedule) -> None:
        """Start from ``carry``, earlier blocks' contributions: residual
        groups' (of ``schedule``) become this part's residuals, the rest its
        contributions, a region summed there summed into here (``store``)."""
        groups = {
            residual_target(item.group): item.group
            for item in schedule.items
            if isinstance(item, Residual)
        }
        for contribution in carry:
            if not contribution.array.flags.writeable:
                # arrived from another worker over read-only frames
                contribution = Contribution(
                    contribution.target,
                    contribution.index,
                    contribution.array.copy(order="K"),  # its layout kept
                    contribution.accumulate,
                )
            group = groups.get(contribution.target)
            if group is not None:
                self.residuals[group] = contribution.array
                continue
            key = (contribution.target, region(contribution.index))
            if contribution.accumulate:
                self.summing.setdefault(key, len(self.contributions))
            else:
                self.summing.pop(key, None)
            self.contributions.append(contribution)

    def store(
        self,
        buffer: BufferState[_Stored],
        index: tuple[slice, ...],
        array: Array,
        accumulate: bool,
    ) -> None:
        if buffer.depth > 0:
            super().store(buffer, index, array, accumulate)
            return
        target = buffer.item.value
        key = (target, region(index))
        at = self.summing.get(key)
        if accumulate and at is not None:
            # a partial sum of a region summed before (an inner loop's or an
            # earlier block's of its lane): added into it, as a whole run adds
            # into the buffer, so the part holds one array per region
            summed = self.contributions[at].array
            summed += array
            return
        if accumulate:
            # later partial sums are added into this piece in place: it is
            # the part's own (built here, taken out of its scope by the write)
            self.summing[key] = len(self.contributions)
        else:
            self.summing.pop(key, None)
        self.contributions.append(Contribution(target, index, array, accumulate))


def run_schedule(
    forest: Forest,
    schedule: Schedule,
    inputs: Mapping[str, Array],
    sizing: Sizing,
) -> dict[str, Array]:
    """Each tree's result computed by running ``schedule`` block by block
    (trees added straight into the residual piece by piece have none: see
    ``run_residual``)."""
    return ScheduleRun(forest, schedule, sizing).run(inputs, keep_trees=True)[0]


def run_residual(
    forest: Forest,
    schedule: Schedule,
    inputs: Mapping[str, Array],
    sizing: Sizing,
    *,
    keep_trees: bool = False,
) -> tuple[dict[str, Array], Array | None]:
    """The trees' results and the residual the schedule accumulates (its
    operator steps applied; ``None`` if it accumulates none). The results
    are those of the trees output on their own; ``keep_trees`` keeps those
    of the trees added into the residual whole as well (a copy each, which
    the memory model does not count)."""
    return ScheduleRun(forest, schedule, sizing).run(inputs, keep_trees=keep_trees)


def measured_peak(
    forest: Forest,
    schedule: Schedule,
    inputs: Mapping[str, Array],
    sizing: Sizing,
) -> tuple[int, Array | None]:
    """The most bytes a run of ``schedule`` holds at once, as
    ``tracemalloc`` traces them (NumPy's arrays and buffers, and the run's
    Python objects), above what was held before it (the inputs, the
    schedule, the run's bookkeeping: ``ScheduleRun``); and the residual.
    The memory model predicts it (``memory.peak``; the test
    ``tests/pipeline/test_measured_memory.py``). The cyclic collector is
    paused during the run: where a collection falls would otherwise move
    the peak by several percent from run to run (on the doubles over
    ``i,Κ``, 1.029 to 1.088 of the prediction). No collection is forced
    before it either: one also frees what the evaluator keeps for reuse,
    which the run must then allocate again (1.092 there)."""
    run = ScheduleRun(forest, schedule, sizing)
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        with gc_paused():
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            _, residual = run.run(inputs)
            return tracemalloc.get_traced_memory()[1] - before, residual
    finally:
        if not tracing:
            tracemalloc.stop()


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------


@dataclass
class Comparison:
    """Per tree (and for the residual, under the key ``RESIDUAL``), the
    relative difference between the two evaluations."""

    errors: dict[str, float]
    unbatched: dict[str, Array]
    scheduled: dict[str, Array]

    @property
    def worst(self) -> float:
        """The largest relative difference (0 for a forest without trees)."""
        return max(self.errors.values(), default=0.0)

    @property
    def agrees(self) -> bool:
        """Whether every comparison agrees within ``TOLERANCE``."""
        return self.worst <= TOLERANCE


RESIDUAL = "(residual)"
"""The key of the residual in ``Comparison`` (no tree can have this name)."""


def relative_difference(result: Array, reference: Array) -> float:
    """``|result - reference| / |reference|`` (Frobenius norms; the absolute
    difference when the reference is zero)."""
    if result.shape != reference.shape:
        return float("inf")
    scale = float(np.linalg.norm(reference))
    difference = float(np.linalg.norm(result - reference))
    return difference / scale if scale > 0 else difference


def compare(
    forest: Forest,
    schedule: Schedule,
    *,
    seed: int = 0,
    extents: Mapping[str, int] | None = None,
    memory_limit: int | None = None,
) -> Comparison:
    """Run the unbatched forest and ``schedule`` on the same random inputs.

    Compares every tree the schedule outputs on its own and, when the
    schedule accumulates a residual, the residual (the unbatched trees
    assembled by ``assemble_residual``). ``extents`` overrides the forest's
    extents (keep them small: the evaluation is dense); above
    ``memory_limit`` bytes (``DEFAULT_MEMORY_LIMIT``) it refuses before
    allocating (``EvaluationMemoryError``).
    """
    sizing = Sizing(forest, extents)
    check_memory(forest, sizing, f"evaluating forest @{forest.name}", memory_limit)
    inputs = random_inputs(forest, sizing, seed)
    unbatched = evaluate_forest(forest, inputs)
    scheduled, residual = run_residual(
        forest, schedule, inputs, sizing, keep_trees=True
    )
    direct = {
        item.tree
        for item, _ in schedule.walk()
        if isinstance(item, Output) and item.direct
    }
    errors = {
        name: relative_difference(scheduled[name], reference)
        if name in scheduled
        else (0.0 if name in direct else float("inf"))
        for name, reference in unbatched.items()
    }
    layout = schedule_layout(forest, schedule)
    if layout is not None:
        expected = assemble_residual(forest, unbatched, layout)
        if residual is None:
            errors[RESIDUAL] = float("inf")
        else:
            errors[RESIDUAL] = relative_difference(residual, expected)
            unbatched = {**unbatched, RESIDUAL: expected}
            scheduled = {**scheduled, RESIDUAL: residual}
    return Comparison(errors, unbatched, scheduled)
