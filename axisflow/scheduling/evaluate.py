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

``compare`` runs both on the same random inputs and reports, per tree, the
relative difference of the results (``coeff * root``); the schedule is
correct when every tree agrees within ``TOLERANCE``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from axisflow.forest.model import Forest, Value
from axisflow.residual import apply_operators
from axisflow.roles.index import Index
from axisflow.scheduling.assemble import assemble_residual, root_axes, schedule_layout
from axisflow.scheduling.contraction import (
    DEFAULT_MEMORY_LIMIT,
    Contraction,
    EvaluationMemoryError,
    MemoryGuard,
)
from axisflow.scheduling.memory import Sizing
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
from axisflow.scheduling.walker import BufferState, Piece, ScheduleWalker, reader

Array = NDArray[np.float64]

__all__ = [
    "DEFAULT_MEMORY_LIMIT",
    "RESIDUAL",
    "TOLERANCE",
    "Comparison",
    "EvaluationMemoryError",
    "ScheduleRunError",
    "check_memory",
    "compare",
    "evaluate_forest",
    "random_inputs",
    "relative_difference",
    "run_residual",
    "run_schedule",
]

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

    def __init__(self) -> None:
        self.compiled: dict[str, Contraction] = {}

    def __call__(self, value: Value, operands: Sequence[Array]) -> Array:
        contraction = self.compiled.get(value.name)
        if contraction is None:
            contraction = self.compiled[value.name] = Contraction(
                value.name,
                value.node_modes,
                [list(mapping.values()) for mapping in value.factor_maps],
                value.modes,
            )
        return contraction(operands)


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


@dataclass
class _Stored:
    """An array covering ``ranges`` of the sliced modes (others in full)."""

    array: Array
    ranges: dict[Index, Range]


class _Runner(ScheduleWalker[_Stored, _Stored]):
    """The walker's client that runs every loop body once per block."""

    def __init__(
        self, forest: Forest, sizing: Sizing, inputs: Mapping[str, Array]
    ) -> None:
        super().__init__()
        self.forest = forest
        self.sizing = sizing
        self.inputs = {name: _Stored(array, {}) for name, array in inputs.items()}
        self.current: dict[int, Range] = {}
        """The current block of each open loop instance."""
        self.results: dict[str, Array] = {}
        self.mode_extents: dict[Index, int] = {}
        self.residuals: dict[int, Array] = {}
        self.residual_modes: tuple[Index, ...] = ()
        self.tree_number: dict[str, int] = {}
        for number, tree in enumerate(forest.trees):
            self.tree_number.setdefault(tree.name, number)
        self.contract = _Contractions()
        self.loop_extents: dict[int, int] = {}

    def start(self, schedule: Schedule) -> None:
        """Run ``schedule``; each loop over the extent of the modes it binds
        (``loop_extents``: a composite kind's own extent included)."""
        try:
            self.loop_extents = loop_extents(
                schedule, self.sizing.mode_extent, self.sizing.extent
            )
        except LoopExtentError as error:
            raise ScheduleRunError(str(error)) from None
        self.walk(schedule.items)

    def extent(self, mode: Index) -> int:
        extent = self.mode_extents.get(mode)
        if extent is None:
            extent = self.mode_extents[mode] = self.sizing.mode_extent(mode)
        return extent

    def loop(self, loop: LoopPass) -> None:
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
        self.keep_buffer(buffer, _Stored(np.zeros(shape), ranges))

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
        if write.accumulate:
            buffer.data.array[tuple(index)] += piece.data.array
        else:
            buffer.data.array[tuple(index)] = piece.data.array
        self.fill(piece, buffer)

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
        self.residuals[write.into][index] += coeff * np.transpose(
            piece.data.array, axes
        )

    def residual(self, residual: Residual) -> None:
        self.residual_modes = residual.modes
        shape = tuple(self.extent(m) for m in residual.modes)
        self.residuals[residual.group] = np.zeros(shape)

    def apply(self, apply: Apply) -> None:
        applied = apply_operators(
            self.residuals[apply.group], self.residual_modes, apply.operators
        )
        if apply.group == 0:
            self.residuals[0] = applied
        else:
            self.residuals[0] += applied
            del self.residuals[apply.group]
        self.close_group(apply.group)

    def output(self, output: Output) -> None:
        number = self.tree_number[output.tree]
        coeff = float(self.forest.trees[number].coeff)
        if output.direct:
            return  # already added into the residual piece by piece
        if output.value is None:
            result = np.asarray(coeff, dtype=np.float64)
        else:
            stored = self.lookup(output, output.value)
            modes = self.forest.values[output.value].modes
            full = self.cut(stored, modes, {}, f"output of @{output.tree}")
            result = coeff * full
        self.results[output.tree] = result
        if output.into is not None:
            axes = root_axes(self.forest, number, self.residual_modes)
            self.residuals[output.into] += np.transpose(result, axes)


def run_schedule(
    forest: Forest,
    schedule: Schedule,
    inputs: Mapping[str, Array],
    sizing: Sizing,
) -> dict[str, Array]:
    """Each tree's result computed by running ``schedule`` block by block
    (trees added straight into the residual have none: see
    ``run_residual``)."""
    runner = _Runner(forest, sizing, inputs)
    runner.start(schedule)
    return runner.results


def run_residual(
    forest: Forest,
    schedule: Schedule,
    inputs: Mapping[str, Array],
    sizing: Sizing,
) -> tuple[dict[str, Array], Array | None]:
    """The trees' results and the residual the schedule accumulates (its
    operator steps applied; ``None`` if it accumulates none)."""
    runner = _Runner(forest, sizing, inputs)
    runner.start(schedule)
    return runner.results, runner.residuals.get(0)


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
    scheduled, residual = run_residual(forest, schedule, inputs, sizing)
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
