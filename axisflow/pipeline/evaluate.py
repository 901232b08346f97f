"""The reference evaluator: run a forest and its schedule on random tensors.

Two independent evaluations with NumPy (``numpy.einsum``):

* ``evaluate_forest``: the unbatched forest, each value computed once from
  its factors, in its own frame (tensors with one axis per mode, see
  ``axisflow.forest.model``);
* ``run_schedule``: the schedule as written. Every ``LoopPass`` iterates over
  blocks of its space; a build reads only the blocks its binds name
  (inputs and full buffers are sliced, pieces must already be that block),
  partial sums are added into buffers, slices are scattered into buffers,
  and a buffer is only readable once the pass writing it has closed. Any
  read the schedule does not make available raises ``ScheduleRunError``.

``compare`` runs both on the same random inputs and reports, per tree, the
relative difference of the results (``coeff * root``); the schedule is
correct when every tree agrees within ``TOLERANCE``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from axisflow.forest.model import Forest, Value
from axisflow.pipeline.memory import Sizing
from axisflow.pipeline.schedule import (
    Bind,
    Buffer,
    Build,
    Item,
    LoopPass,
    Output,
    Schedule,
    Write,
)
from axisflow.roles.index import Index

Array = NDArray[np.float64]

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


_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _contract(value: Value, operands: Sequence[Array]) -> Array:
    """``value`` from its factors' arrays (factor axes in factor-mode order)."""
    letter = {mode: _LETTERS[k] for k, mode in enumerate(value.node_modes[:52])}
    if len(value.node_modes) > len(_LETTERS):
        raise ValueError(f"@{value.name} has more than 52 modes at its node")
    inputs = ",".join(
        "".join(letter[mode] for mode in mapping.values())
        for mapping in value.factor_maps
    )
    output = "".join(letter[mode] for mode in value.modes)
    result = np.einsum(f"{inputs}->{output}", *operands, optimize=True)
    return np.asarray(result, dtype=np.float64)


def evaluate_forest(forest: Forest, inputs: Mapping[str, Array]) -> dict[str, Array]:
    """Each tree's result, ``coeff * root``, evaluated without batching."""
    computed: dict[str, Array] = dict(inputs)
    for value in forest.built_values():
        operands = [computed[f.value] for f in value.factors]
        computed[value.name] = _contract(value, operands)
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


@dataclass
class _Buffer:
    stored: _Stored
    slices: dict[Index, int]
    depth: int
    writer: LoopPass | None = None
    complete: bool = False


@dataclass
class _Frame:
    pieces: dict[str, _Stored] = field(default_factory=dict[str, _Stored])
    buffers: dict[str, _Buffer] = field(default_factory=dict[str, _Buffer])


class _Runner:
    def __init__(
        self, forest: Forest, sizing: Sizing, inputs: Mapping[str, Array]
    ) -> None:
        self.forest = forest
        self.sizing = sizing
        self.inputs = inputs
        self.frames: list[_Frame] = [_Frame()]
        self.open: list[LoopPass] = []
        self.current: dict[int, Range] = {}
        self.results: dict[str, Array] = {}
        self.buffers: list[_Buffer] = []

    def extent(self, mode: Index) -> int:
        return self.sizing.mode_extent(mode)

    def run(self, items: Sequence[Item]) -> None:
        for item in items:
            if isinstance(item, LoopPass):
                self.loop(item)
            elif isinstance(item, Build):
                self.build(item)
            elif isinstance(item, Buffer):
                self.buffer(item)
            elif isinstance(item, Write):
                self.write(item)
            else:
                self.output(item)

    def loop(self, loop: LoopPass) -> None:
        extent = self.sizing.extent(loop.space)
        self.open.append(loop)
        for start in range(0, extent, loop.block):
            self.current[loop.instance] = (start, min(start + loop.block, extent))
            self.frames.append(_Frame())
            self.run(loop.body)
            self.frames.pop()
        del self.current[loop.instance]
        self.open.pop()
        for buffer in self.buffers:
            if buffer.writer is loop:
                buffer.complete = True

    def block_of(self, bind: Bind) -> Range:
        block = self.current.get(bind.instance)
        if block is None:
            raise ScheduleRunError(f"loop instance {bind.instance} is not open")
        if self.extent(bind.mode) != self.sizing.extent(bind.mode.base_key):
            raise ScheduleRunError(
                f"a loop over {bind.mode.base_key} binds {bind.mode.full_label}, "
                "whose composite kind has an extent of its own: the evaluator "
                "runs loops over a space's extent only"
            )
        return block

    def lookup(self, name: str, reader: str) -> _Stored:
        if name in self.inputs:
            return _Stored(self.inputs[name], {})
        for frame in reversed(self.frames):
            if name in frame.pieces:
                return frame.pieces[name]
            buffer = frame.buffers.get(name)
            if buffer is not None:
                if not buffer.complete:
                    raise ScheduleRunError(
                        f"{reader} reads @{name} before its buffer is complete"
                    )
                return buffer.stored
        raise ScheduleRunError(f"{reader} reads @{name}, which is not available")

    def read(
        self,
        stored: _Stored,
        modes: Sequence[Index],
        wanted: Mapping[Index, Range],
        what: str,
    ) -> Array:
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
            what = f"build of @{value.name}"
            stored = self.lookup(factor.value, what)
            factor_modes = self.forest.values[factor.value].modes
            wanted = {m: bound[mapping[m]] for m in factor_modes if mapping[m] in bound}
            operands.append(
                self.read(stored, factor_modes, wanted, f"{what}, @{factor.value}")
            )
        array = _contract(value, operands)
        ranges = {b.mode: self.block_of(b) for b in build.slices}
        self.frames[-1].pieces[build.value] = _Stored(array, ranges)

    def buffer(self, buffer: Buffer) -> None:
        value = self.forest.values[buffer.value]
        ranges = {b.mode: self.block_of(b) for b in buffer.slices}
        shape = tuple(
            (ranges[m][1] - ranges[m][0]) if m in ranges else self.extent(m)
            for m in value.modes
        )
        state = _Buffer(
            _Stored(np.zeros(shape), ranges),
            {b.mode: b.instance for b in buffer.slices},
            len(self.frames) - 1,
        )
        self.frames[-1].buffers[buffer.value] = state
        self.buffers.append(state)

    def write(self, write: Write) -> None:
        piece = self.frames[-1].pieces.pop(write.value, None)
        if piece is None:
            raise ScheduleRunError(f"write of @{write.value}: nothing built to write")
        target = next(
            (
                (depth, f.buffers[write.value])
                for depth, f in reversed(list(enumerate(self.frames[:-1])))
                if write.value in f.buffers
            ),
            None,
        )
        if target is None:
            raise ScheduleRunError(f"write of @{write.value}: no buffer")
        depth, buffer = target
        value = self.forest.values[write.value]
        index: list[slice] = []
        for mode in value.modes:
            have = buffer.stored.ranges.get(mode, (0, self.extent(mode)))
            piece_range = piece.ranges.get(mode, (0, self.extent(mode)))
            index.append(slice(piece_range[0] - have[0], piece_range[1] - have[0]))
        if write.accumulate:
            buffer.stored.array[tuple(index)] += piece.array
        else:
            buffer.stored.array[tuple(index)] = piece.array
        buffer.writer = self.open[depth]

    def output(self, output: Output) -> None:
        tree = next(t for t in self.forest.trees if t.name == output.tree)
        coeff = float(tree.coeff)
        if output.value is None:
            self.results[output.tree] = np.asarray(coeff, dtype=np.float64)
            return
        stored = self.lookup(output.value, f"output of @{output.tree}")
        modes = self.forest.values[output.value].modes
        full = self.read(stored, modes, {}, f"output of @{output.tree}")
        self.results[output.tree] = coeff * full


def run_schedule(
    forest: Forest,
    schedule: Schedule,
    inputs: Mapping[str, Array],
    sizing: Sizing,
) -> dict[str, Array]:
    """Each tree's result computed by running ``schedule`` block by block."""
    runner = _Runner(forest, sizing, inputs)
    runner.run(schedule.items)
    return runner.results


# --------------------------------------------------------------------------
# Comparison
# --------------------------------------------------------------------------


@dataclass
class Comparison:
    """Per tree, the relative difference between the two evaluations."""

    errors: dict[str, float]
    unbatched: dict[str, Array]
    scheduled: dict[str, Array]

    @property
    def worst(self) -> float:
        """The largest relative difference (0 for a forest without trees)."""
        return max(self.errors.values(), default=0.0)

    @property
    def agrees(self) -> bool:
        """Whether every tree agrees within ``TOLERANCE``."""
        return set(self.unbatched) == set(self.scheduled) and self.worst <= TOLERANCE


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
) -> Comparison:
    """Run the unbatched forest and ``schedule`` on the same random inputs.

    ``extents`` overrides the forest's extents (keep them small: the
    evaluation is dense).
    """
    sizing = Sizing(forest, extents)
    inputs = random_inputs(forest, sizing, seed)
    unbatched = evaluate_forest(forest, inputs)
    scheduled = run_schedule(forest, schedule, inputs, sizing)
    errors = {
        name: relative_difference(scheduled[name], reference)
        for name, reference in unbatched.items()
        if name in scheduled
    }
    missing = {name: float("inf") for name in unbatched if name not in scheduled}
    return Comparison(errors | missing, unbatched, scheduled)
