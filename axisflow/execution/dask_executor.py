"""Run a planned residual on Dask: one task per block of the outer loops.

Pure Python, NumPy and ``dask.distributed``, no xDSL. ``execute_expression``
plans the expression as ``evaluate_expression`` does (``plan_evaluation``:
inputs checked, forest built, schedule classified, scheduled and guarded),
refuses a plan that does not fit the budget before any work, and maps the
schedule onto tasks with a client of the schedule walker
(``axisflow.scheduling.walker``) that visits the schedule's root items:

* a root **loop pass** becomes one task per block of its loop; each task
  runs the body for its block, inner loops included, with the NumPy
  evaluator's contractions (``scheduling.evaluate.run_part``: BLAS
  ``matmul`` for pairwise products, one ``einsum`` otherwise);
* a root **build** (a LoopInvariant or hoisted value, built once) is one
  task; its result is a future every task that reads it depends on, so it
  is computed once and moved to the workers that need it;
* what a block writes into a root **buffer** (a LoopCarried value's slice,
  a Reduction's partial sum) and adds into the **residual** comes back as
  its task's result, by target; the blocks dealt to one worker form a
  lane, each adding into the partial sums and residuals of the one before
  it (``run_part``'s carry), so a worker holds one set however many
  blocks it runs; when the pass closes each buffer is assembled from its
  lanes' contributions (partial sums over one region added, slices
  written; merged in a tree ``FAN_IN`` at a time first when more lanes
  wrote it), and the later tasks read it: a large one on each worker
  whose blocks read it (``ASSEMBLED_ON_EACH_BYTES``);
* an **operator step** (``Ŝ``/``Â``/``P̂``) runs on the assembled residual
  of its group, as one task.

Each input (and the plan) is the result of a task of its own, moved to
the workers that read it; a worker lost mid-run is replaced by its nanny
and Dask recomputes what it held, inputs included (from the task, which
the scheduler keeps: scattered data would be lost with the last worker
holding it). The residual is gathered and written to a temporary name
next to the output, then renamed: a failed run never
leaves a half-written output under the final name.

The embedded default cluster is a ``LocalCluster`` on loopback: ``workers``
processes (default: the cores), one thread each (each task's BLAS on one
core), each limited to ``budget / workers`` bytes when a budget is given.
``scheduler`` connects to an existing cluster instead (an address or a
``Client``). See ``docs/execution.md``.
"""

from __future__ import annotations

import contextlib
import copy
import math
import os
import shutil
import sys
import tempfile
import time
import uuid
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from axisflow.execution.aligned import Aligned
from axisflow.execution.evaluation import plan_evaluation
from axisflow.execution.inputs import InputSource
from axisflow.forest.model import Forest
from axisflow.numerals import check_count
from axisflow.order import Order
from axisflow.residual import Operator, apply_operators
from axisflow.roles.index import Index
from axisflow.scheduling import pages
from axisflow.scheduling.evaluate import (
    Contribution,
    PartResult,
    Region,
    ScheduleRun,
    built_values,
    input_bytes,
    input_layouts,
    laid_out_zeros,
    region,
    residual_order,
    residual_target,
    run_part,
)
from axisflow.scheduling.memory import (
    Sizing,
    format_bytes,
    pass_writes,
    peak,
    releases,
    schedule_flops,
    task_lifetimes,
)
from axisflow.scheduling.options import parse_budget
from axisflow.scheduling.schedule import (
    Apply,
    Buffer,
    Build,
    Item,
    LoopPass,
    Output,
    Residual,
    Schedule,
    Write,
    loop_extents,
)
from axisflow.scheduling.walker import BufferState, Piece, ScheduleWalker
from axisflow.sequant import Expression, Share

Array = NDArray[np.float64]
_ITEM_BYTES = np.dtype(np.float64).itemsize


ASSEMBLED_ON_EACH_BYTES = 1024**2
"""A root buffer of this many bytes or more that blocks on several
workers read is assembled on each of them when its blocks write slices of
it, or when two workers read it (its contributions move, not the whole);
otherwise once, on one of them: a smaller one (a task fewer per worker,
the move negligible), or one that blocks sum into, read on more than two
workers (each worker would receive every other block's partial sum, each
as large as the whole: more than the whole sent to each)."""

MONITOR_INTERVAL = "20ms"
"""How often the embedded cluster's workers sample their memory (Dask's
system monitor; its default, 500 ms, misses the peak of a short task)."""

OUTPUT_SUFFIXES = (".npy", ".zarr")

MALLOC_MMAP_BYTES = 32 * 1024 * 1024
"""The embedded workers allocate arrays above this many bytes by mapping
them apart (glibc's ``MALLOC_MMAP_THRESHOLD_``), so that freeing one
returns its memory to the system. glibc's largest threshold (32 MiB on
64-bit): the blocks below it are reused from the heap instead of mapped
afresh, and the kernel's zeroing of fresh pages cost a quarter of a
worker's time at 1 MiB (docs/benchmarks-executor.md), while the measured
peak stays within 5% of the predicted one."""


NUMPY_MADVISE_HUGEPAGE = "0"
"""The embedded workers' ``NUMPY_MADVISE_HUGEPAGE``: NumPy does not ask
the kernel for transparent huge pages on its arrays. Where the kernel
compacts memory to grant such a request (``defrag`` set to ``madvise``,
this machine's setting), the first touch of each fresh array stalls on it:
a product writing a fresh 1.8 GiB result took 5.1 to 7.9 s with the
request, 3.3 to 3.7 s in three runs of four without it (6.0 s in the
fourth; docs/benchmarks-executor.md)."""


class BudgetError(MemoryError):
    """A plan that does not fit the memory budget, refused before any work;
    the message names what does not fit."""


WORKER_WAIT_SECONDS = 120.0
"""How long a run waits for a cluster with no worker to get one (a
cluster scaling up from none, as dask-jobqueue's do, or whose only worker
is restarting after a loss) before it gives up with ``ExecutionError``."""


class ExecutionError(RuntimeError):
    """The cluster could not run the plan (a task failed beyond Dask's
    retries, the scheduler is unreachable)."""


# --------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------


@dataclass
class ExecutionReport:
    """What a run cost: time, work, memory per worker, tasks, transfers."""

    wall_seconds: float
    """From planning to the residual written (or returned)."""
    planning_seconds: float
    """Reading the inputs, planning and building the task graph."""
    multiply_adds: int
    """The schedule's own multiply-adds (``memory.schedule_flops``)."""
    workers: int
    predicted_peak: int
    """Bytes one worker is predicted to hold at once (``predicted_peak``)."""
    measured_peak: int | None
    """The most bytes a worker held above its memory before the run (Dask's
    system monitor of each worker); ``None`` when not measured."""
    tasks: int
    bytes_moved: int
    """Bytes sent between workers, plus the inputs sent to the cluster and
    the residual gathered."""

    @property
    def gflops(self) -> float:
        """Billions of floating-point operations (2 per multiply-add) per
        second of wall time."""
        return 2 * self.multiply_adds / max(self.wall_seconds, 1e-12) / 1e9

    def table(self) -> str:
        """The report on one screen."""
        measured = (
            "not measured"
            if self.measured_peak is None
            else format_bytes(self.measured_peak)
        )
        ratio = (
            ""
            if self.measured_peak is None or self.predicted_peak == 0
            else f"  ({self.measured_peak / self.predicted_peak:.2f}x predicted)"
        )
        rows = [
            ("wall time", f"{self.wall_seconds:.3f} s"),
            (
                "planning + graph",
                f"{self.planning_seconds:.3f} s "
                f"({100 * self.planning_seconds / max(self.wall_seconds, 1e-12):.1f}%)",
            ),
            ("multiply-adds", f"{self.multiply_adds:,}"),
            ("GFLOP/s", f"{self.gflops:.2f}"),
            ("workers", str(self.workers)),
            ("peak per worker", f"predicted {format_bytes(self.predicted_peak)}"),
            ("", f"measured  {measured}{ratio}"),
            ("tasks", f"{self.tasks:,}"),
            ("bytes moved", format_bytes(self.bytes_moved)),
        ]
        width = max(len(name) for name, _ in rows)
        return "".join(f"{name:<{width}}  {text}\n" for name, text in rows)


@dataclass
class Execution:
    """The residual of a run on Dask, and its report."""

    residual: Array | None
    """The residual (``None`` when written to ``output``)."""
    modes: tuple[Index, ...]
    extents: dict[str, int]
    report: ExecutionReport
    schedule: Schedule
    forest: Forest
    output: Path | None = None

    @property
    def labels(self) -> tuple[str, ...]:
        """The residual's axes as text."""
        return tuple(str(mode) for mode in self.modes)


# --------------------------------------------------------------------------
# Tasks (run on the workers: plain functions of picklable arguments)
# --------------------------------------------------------------------------


class _Plan:
    """The forest, schedule and sizing shipped to the workers; each worker
    prepares the ``ScheduleRun`` once (its bookkeeping is by object
    identity, so it is made where it runs, never pickled)."""

    def __init__(
        self,
        forest: Forest,
        schedule: Schedule,
        sizing: Sizing,
        input_orders: Mapping[str, tuple[int, ...]],
    ) -> None:
        self.forest = forest
        self.schedule = schedule
        self.sizing = sizing
        self.input_orders = dict(input_orders)
        """Input -> the order of its axes in the array shipped to the
        workers (``input_layouts``; C order in that order, which Dask's
        transfers between workers keep)."""
        self._inverse = {
            name: tuple(int(axis) for axis in np.argsort(order))
            for name, order in self.input_orders.items()
        }
        self._run: ScheduleRun | None = None

    def __getstate__(self) -> dict[str, object]:
        return {
            "forest": self.forest,
            "schedule": self.schedule,
            "sizing": self.sizing,
            "input_orders": self.input_orders,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(
            state["forest"], state["schedule"], state["sizing"], state["input_orders"]
        )

    def shipped(self, name: str, array: Array) -> Array:
        """Input ``name`` as the workers get it: C-contiguous, its axes in
        ``input_orders``' order."""
        order = self.input_orders.get(name)
        if order is None:
            return np.ascontiguousarray(array)
        return np.ascontiguousarray(array.transpose(order))

    def in_frame(self, inputs: Mapping[str, Array]) -> dict[str, Array]:
        """The shipped inputs as views with their axes in the leaves'
        frames again (laid out as ``input_orders`` says)."""
        inverse = self._inverse
        return {
            name: array.transpose(inverse[name]) if name in inverse else array
            for name, array in inputs.items()
        }

    @property
    def run(self) -> ScheduleRun:
        if self._run is None:
            self._run = ScheduleRun(
                self.forest, self.schedule, self.sizing, copies=True
            )
        return self._run


FAN_IN = 4
"""Contributions one task merges at most (the tree that assembles a buffer
or folds a residual from more lanes or root outputs than this)."""


def _run_part(
    plan: _Plan,
    position: int,
    block: tuple[int, int],
    targets: tuple[str, ...],
    inputs: Mapping[str, Aligned],
    pieces: Mapping[str, Aligned],
    buffers: Mapping[str, Aligned | None],
    carry: Mapping[str, list[Contribution]] | None = None,
) -> dict[str, list[Contribution]]:
    """Block ``block`` of the loop pass at ``position``: its contributions
    to each of ``targets`` (the root buffers it writes, the residuals it
    adds into), picked in the task rather than by a task of their own.
    ``carry``: the result of the block before it in its lane (the blocks
    a worker runs, one after the other), whose partial sums and residuals
    it adds into in place and returns with its own: a lane holds one set
    however many blocks it runs. Arrays travel between the tasks as
    ``Aligned`` (``aligned.py``)."""
    earlier = [c for found in (carry or {}).values() for c in found]
    result = _run(plan, position, block, inputs, pieces, buffers, earlier)
    return _picked(result, targets)


def _run(
    plan: _Plan,
    position: int,
    block: tuple[int, int] | None,
    inputs: Mapping[str, Aligned],
    pieces: Mapping[str, Aligned],
    buffers: Mapping[str, Aligned | None],
    carry: Sequence[Contribution] = (),
) -> PartResult:
    """``run_part`` on the arrays the task's arguments hold (a buffer
    ``None``: one the part writes), carrying on from ``carry``."""
    return run_part(
        plan.run,
        position,
        block,
        plan.in_frame({name: held.array for name, held in inputs.items()}),
        {name: held.array for name, held in pieces.items()},
        {name: None if held is None else held.array for name, held in buffers.items()},
        carry,
    )


def _identity(value: object) -> object:
    """``value`` itself: the plan and each input are submitted as the
    result of this task, not scattered as data, so that Dask can recompute
    them (from the pickled argument the scheduler keeps) on a worker that
    replaces a lost one; scattered data lost with the last worker holding
    it cannot be recomputed."""
    return value


def _run_item(
    plan: _Plan,
    position: int,
    inputs: Mapping[str, Aligned],
    pieces: Mapping[str, Aligned],
    buffers: Mapping[str, Aligned | None],
) -> Aligned | list[Contribution]:
    """A root item outside the loops, as one task whose result nothing
    picks from: a build's piece, or an output's contributions to the
    residual."""
    item = plan.schedule.items[position]
    result = _run(plan, position, None, inputs, pieces, buffers)
    if isinstance(item, Build):
        return Aligned(result.pieces[item.value])
    return result.contributions


Source = list[Contribution] | Mapping[str, list[Contribution]]
"""Contributions to one target, or a block's to each of several
(``_picked``): what an assembly reads."""

AxesOrder = tuple[int, ...]
"""An array's axes in memory order, outermost first (empty: C order)."""


def _picked(
    result: PartResult, targets: tuple[str, ...]
) -> dict[str, list[Contribution]]:
    """A block's contributions to each of ``targets``: what its task
    returns (a task per target, picking from the block's result, made 44
    tasks of the two blocks of a pass that writes 22 buffers)."""
    picked: dict[str, list[Contribution]] = {target: [] for target in targets}
    for contribution in result.contributions:
        if contribution.target in picked:
            picked[contribution.target].append(contribution)
    return picked


def _of(source: Source, target: str) -> list[Contribution]:
    """The contributions of ``source`` to ``target``."""
    return source.get(target, []) if isinstance(source, Mapping) else source


def _merge(target: str, *sources: Source) -> list[Contribution]:
    """The contributions of ``sources`` to ``target`` in order, those that
    add into one region summed (a reduction's partial sums become one)."""
    merged: list[Contribution] = []
    adding: dict[Region, int] = {}
    for source in sources:
        for contribution in _of(source, target):
            key = region(contribution.index)
            at = adding.get(key)
            if contribution.accumulate and at is not None:
                previous = merged[at]
                merged[at] = Contribution(
                    previous.target,
                    previous.index,
                    previous.array + contribution.array,
                    True,
                )
                continue
            if contribution.accumulate:
                adding[key] = len(merged)
            else:
                adding.pop(key, None)
            merged.append(contribution)
    return merged


def _assemble(
    shape: tuple[int, ...], target: str, *sources: Source, order: AxesOrder = ()
) -> Aligned:
    """The array the contributions of ``sources`` to ``target`` make (a
    root buffer, a residual), as a task's result."""
    return Aligned(_assembled(shape, target, *sources, order=order))


def _assembled(
    shape: tuple[int, ...], target: str, *sources: Source, order: AxesOrder = ()
) -> Array:
    """The array the contributions of ``sources`` to ``target`` make, in
    order (a slice written, a partial sum added); ``order``: its axes'
    memory order (``laid_out_zeros``), a residual's ``residual_order``."""
    array = laid_out_zeros(shape, order)
    for source in sources:
        for contribution in _of(source, target):
            index = (*contribution.index, ...)
            if contribution.accumulate:
                array[index] += contribution.array
            else:
                array[index] = contribution.array
    return array


def _folded(
    shape: tuple[int, ...], group: int, *sources: Source, order: AxesOrder = ()
) -> list[Contribution]:
    """The contributions of ``sources`` to residual group ``group`` as one:
    the residual they make, its axes in memory in ``order``."""
    target = residual_target(group)
    summed = _assembled(shape, target, *sources, order=order)
    return [Contribution(target, (), summed, True)]


def _apply(
    residual: Aligned, modes: tuple[Index, ...], operators: tuple[Operator, ...]
) -> list[Contribution]:
    result = apply_operators(residual.array, modes, operators)
    return [Contribution(residual_target(0), (), result, True)]


_TASK_WORDS: dict[Any, str] = {
    _merge: "a merge of partial sums",
    _assemble: "the assembly of a buffer",
    _folded: "a sum of residual contributions",
    _apply: "the operator step",
    _identity: "a copy of an input or the plan",
}
"""What a task of each function computes, for a failure's message."""


def _failure(
    error: Exception, described: Mapping[Any, str], limits: Iterable[int], peak: int
) -> str:
    """The message of a run that failed with ``error``: for a task whose
    workers died (Dask's ``KilledWorker``; a nanny restarts a worker whose
    process exceeds its memory limit), what the task computes, the
    predicted peak and the workers' memory limits (``limits``, bytes; 0
    for none) at the start of the run."""
    from distributed.scheduler import KilledWorker

    if not isinstance(error, KilledWorker):
        return f"the run failed: {error}"
    what = described.get(error.task, "a task")
    deaths = error.allowed_failures + 1
    distinct = set(limits)
    limited = (
        f"the workers may hold {format_bytes(min(distinct))} each"
        if distinct and 0 not in distinct
        else "the workers have no memory limit"
    )
    return (
        f"the run failed: workers died running {what}, {deaths} in all (Dask "
        "stops at distributed.scheduler.allowed-failures + 1); a worker's nanny "
        "restarts it when its process exceeds its memory limit: the predicted "
        f"peak per worker is {format_bytes(peak)} and {limited}; batch over "
        "more spaces, use smaller blocks or give the workers more memory"
    )


def _worker_state(dask_worker: Any) -> tuple[float, int]:  # Dask's
    """A worker's clock and bytes sent so far (``client.run``), after
    giving the memory it freed back to the system and sampling its memory
    then: what it holds before a run is its baseline, not what it once
    held (a cluster's second run reused the first's freed memory without
    the process growing, and measured 0.62 of the predicted peak)."""
    _release_freed_memory()
    sample = dask_worker.monitor.update()
    return float(sample["time"]), int(dask_worker.transfer_outgoing_bytes_total)


def _release_freed_memory() -> None:
    """glibc's ``malloc_trim(0)``: the heap's free memory back to the
    system, as Dask's documentation trims a worker's unmanaged memory
    (nothing where the C library has no such call)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    if name is None:
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(name).malloc_trim(0)


@contextlib.contextmanager
def _reusing_on_workers(client: Any, allowance: int) -> Iterator[None]:
    """Inside, each worker's tasks reuse the large arrays the run's earlier
    tasks freed, within ``allowance`` bytes more than the worker holds now
    (``pages.open_run``): a block of the same loop pass on the same worker
    takes its predecessor's memory instead of mapping it again."""
    key = uuid.uuid4().hex
    client.run(_open_pool, key, allowance)
    try:
        yield
    finally:
        # a cluster that failed the run may fail this too: nothing to undo
        with contextlib.suppress(Exception):
            client.run(_close_pool, key)


def _open_pool(key: str, allowance: int, dask_worker: Any) -> None:  # Dask's
    """``pages.open_run`` on a worker, its ceiling also below the fraction
    of the worker's memory limit at which Dask spills or pauses, and a
    ``_PoolWatch`` letting the free arrays go above it: memory the pool
    keeps must not hold a worker paused (nothing would run to free it)."""
    manager = dask_worker.memory_manager
    fractions = _spill_and_pause(manager)
    most = None
    if manager.memory_limit and fractions:
        most = int(manager.memory_limit * min(fractions)[0])
    pages.open_run(key, allowance, most=most)
    _PoolWatch(key, most).start(dask_worker)


def _spill_and_pause(manager: Any) -> list[tuple[float, str]]:
    """The fractions of a worker's memory limit at which Dask spills its
    results and pauses it (``WorkerMemoryManager``), with their settings'
    names, those that are set."""
    return [
        (float(fraction), name)
        for fraction, name in (
            (manager.memory_spill_fraction, "spill"),
            (manager.memory_pause_fraction, "pause"),
        )
        if fraction
    ]


def _close_pool(key: str, dask_worker: Any) -> None:  # Dask's
    """Undo ``_open_pool(key)`` on a worker."""
    _PoolWatch.stop(key, dask_worker)
    pages.close_run(key)


POOL_WATCH_MS = 50
"""How often a worker checks its memory against the pool's ``most``
during a run (``_PoolWatch``): Dask's memory manager checks every 100 ms."""


@dataclass(frozen=True)
class _PoolWatch:
    """Lets the pool's free arrays go (``pages.let_go_free``) and the
    heap's free memory back whenever the worker's process holds more than
    ``most`` bytes during run ``key``, and lets go as many as bring it
    back within the pool's ceiling (``pages.keep_within_ceiling``) when
    it holds more than that. Without the first a worker Dask paused
    stayed paused: spilling its results to disk freed their arrays into
    the pool, which kept them (the CSV doubles at ``a=μ̃=64, Κ=128``, 164
    MiB predicted, on one worker limited to 300 or 320 MiB: paused at
    its 80% with 158 to 169 MiB of free arrays and no task running, in
    about half the runs). Without the second the pool kept free arrays
    up to the predicted peak while the other worker's lanes arrived
    beside them (two workers measured up to 1.17 of the prediction)."""

    key: str
    most: int | None

    def start(self, dask_worker: Any) -> None:
        """Watch on ``dask_worker``'s event loop, every ``POOL_WATCH_MS``."""
        from tornado.ioloop import PeriodicCallback

        most = self.most

        def check() -> None:
            resident = pages.resident()
            if resident is None:
                return
            if most is not None and resident > most:
                let_go = pages.let_go_free()
            else:
                let_go = pages.keep_within_ceiling()
            if let_go:
                _release_freed_memory()

        callback = PeriodicCallback(check, POOL_WATCH_MS)
        # Dask stops the callbacks it lists when the worker closes
        dask_worker.periodic_callbacks[self.name(self.key)] = callback
        callback.start()

    @staticmethod
    def name(key: str) -> str:
        return f"axisflow-pool-watch-{key}"

    @staticmethod
    def stop(key: str, dask_worker: Any) -> None:
        """Stop run ``key``'s watch on ``dask_worker``, if it has one."""
        callback = dask_worker.periodic_callbacks.pop(_PoolWatch.name(key), None)
        if callback is not None:
            callback.stop()


LOOSE_RESTRICTIONS_PLUGIN = "axisflow-loose-restrictions"
"""The name of the scheduler plugin ``keep_restrictions_loose`` registers."""


def keep_restrictions_loose(client: Any) -> None:
    """Register, on ``client``'s scheduler, a plugin that drops a leaving
    worker's address from the tasks that prefer it but may run elsewhere
    (``allow_other_workers``, as the executor places its blocks).

    Dask (2026.8) revives a task that became ready while no worker ran
    (Dask had paused the only one, or it was restarting) only on a worker
    its restrictions name, loose or not: a task preferring a worker that
    died then waits for good. The CSV doubles at ``a=μ̃=64, Κ=128`` on one
    worker limited to 290 MiB hung so in 3 runs of 14, three assemblies
    waiting for a worker the nanny had replaced. The plugin drops the
    address when the worker leaves, and from a task waiting for a worker
    when it names none in the cluster. It is sent by value (it needs no
    axisflow on the scheduler); registering it again does nothing (Dask's
    ``idempotent`` plugins)."""
    from distributed.diagnostics.plugin import SchedulerPlugin

    class LooseRestrictions(SchedulerPlugin):
        idempotent = True

        def __init__(self) -> None:
            self.scheduler: Any = None

        async def start(self, scheduler: Any) -> None:
            self.scheduler = scheduler

        def remove_worker(
            self, scheduler: Any, worker: str, *, stimulus_id: str, **kwargs: Any
        ) -> None:
            for task in scheduler.tasks.values():
                preferred = task.worker_restrictions
                if preferred and task.loose_restrictions and worker in preferred:
                    preferred.discard(worker)
                    if not preferred:
                        task.worker_restrictions = None

        def transition(
            self, key: Any, start: str, finish: str, *args: Any, **kwargs: Any
        ) -> None:
            if finish != "no-worker" or self.scheduler is None:
                return
            task = self.scheduler.tasks.get(key)
            if task is None or not task.loose_restrictions:
                return
            preferred = task.worker_restrictions
            if preferred:
                preferred &= self.scheduler.workers.keys()
                if not preferred:
                    task.worker_restrictions = None

    client.register_plugin(LooseRestrictions(), name=LOOSE_RESTRICTIONS_PLUGIN)


def _worker_memory(dask_worker: Any, since: float) -> tuple[float, float]:
    """A worker's memory at ``since`` and its largest sample after it, from
    its system monitor."""
    monitor = dask_worker.monitor
    times = list(monitor.quantities["time"])
    memory = list(monitor.quantities["memory"])
    before = [m for t, m in zip(times, memory, strict=True) if t <= since]
    after = [m for t, m in zip(times, memory, strict=True) if t > since]
    start = before[-1] if before else (memory[0] if memory else 0.0)
    return float(start), float(max(after, default=start))


# --------------------------------------------------------------------------
# The graph: a walker client over the root items
# --------------------------------------------------------------------------


@dataclass(eq=False)
class _RootBuffer:
    shape: tuple[int, ...]
    parts: list[Any] = field(default_factory=list[Any])
    """Futures of the contributions of each block that wrote it (``Source``)."""
    assembled: dict[str | None, Any] = field(default_factory=dict[str | None, Any])
    """The futures of the whole buffer once its pass closed, by the worker
    that assembled it (``None``: wherever Dask ran it)."""

    def on(self, worker: str | None) -> Any:
        """The future of the whole buffer to read on ``worker``."""
        found = self.assembled.get(worker)
        return found if found is not None else next(iter(self.assembled.values()))


def _mentions(loop: LoopPass) -> tuple[set[str], set[str], set[int]]:
    """The names ``loop``'s body reads, the root buffers it writes (no
    buffer of its own in between) and the residual groups it adds into,
    from one ``Schedule.walk`` of the pass: a write goes into the buffer
    of its value allocated in an enclosing scope inside the pass, if any,
    else into the root's."""
    reads: set[str] = set()
    writes: set[str] = set()
    groups: set[int] = set()
    allocated: set[tuple[str, int]] = set()
    """Buffers of the pass: (value, id of the loop whose body allocated it)."""
    for item, loops in Schedule([loop]).walk():
        if isinstance(item, Buffer) and loops:
            allocated.add((item.value, id(loops[-1])))
        elif isinstance(item, Build):
            reads.add(item.value)  # a build reads its factors: named later
        elif isinstance(item, Output):
            if item.value is not None:
                reads.add(item.value)
            if item.into is not None and not item.direct:
                groups.add(item.into)
        elif isinstance(item, Write):
            if item.into is not None:
                groups.add(item.into)
            elif not any(
                (item.value, id(enclosing)) in allocated for enclosing in loops[:-1]
            ):
                writes.add(item.value)
    return reads, writes, groups


class _Graph(ScheduleWalker[Any, _RootBuffer]):
    """Submits the tasks of a schedule's root items, in order."""

    def __init__(
        self,
        client: Any,  # distributed.Client
        plan: _Plan,
        plan_future: Any,
        inputs: Mapping[str, Any],
        workers: Iterable[str] = (),
    ) -> None:
        super().__init__()
        self.client = client
        self.plan = plan
        self.plan_future = plan_future
        self.inputs = inputs
        self.forest = plan.forest
        self.sizing = plan.sizing
        self.extents = loop_extents(
            plan.schedule, plan.sizing.mode_extent, plan.sizing.extent
        )
        self.dead = releases(plan.forest, plan.schedule, plan.sizing)
        self.positions = {id(item): k for k, item in enumerate(plan.schedule.items)}
        self.residual_parts: dict[int, list[Any]] = {}
        self.residual_modes: tuple[Index, ...] = plan.schedule.residual_modes() or ()
        self.residual_order = residual_order(plan.forest, plan.schedule)
        """The residual's axes in memory order, as the blocks lay it out."""
        self.tasks = 0
        """Tasks submitted. Their futures are not kept: a future the client
        holds keeps its result in a worker's memory, and a block's result
        is needed only until its contributions are merged."""
        self.workers = sorted(workers)
        """The workers' addresses, to which the blocks of a pass are dealt."""
        self.root_buffers = {
            item.value for item in plan.schedule.items if isinstance(item, Buffer)
        }
        self.mentioned = {
            id(item): _mentions(item)
            for item in plan.schedule.items
            if isinstance(item, LoopPass)
        }
        """Each root pass's reads, writes and residual groups (``_mentions``)."""
        self.places = self._places()
        """For each value a root item reads, the workers its readers run
        on (``None``: a task placed by Dask)."""
        self.described: dict[Any, str] = {}
        """What the task of each key computes, in the schedule's words
        (for a failure's message: a Dask key names nothing a user wrote)."""

    def submit(
        self,
        function: Any,
        *args: Any,
        what: str = "",
        worker: str | None = None,
        **keywords: Any,
    ) -> Any:
        """The future of ``function(*args, **keywords)``; ``what``
        describes it; ``worker``: the worker it should run on, if that one
        can."""
        # what merges results runs before more blocks make results: a
        # higher priority than the blocks'
        priority = 0 if function is _run_part else 1
        self.tasks += 1
        placement: dict[str, Any] = {}
        if worker is not None:
            placement = {"workers": [worker], "allow_other_workers": True}
        future = self.client.submit(
            function, *args, pure=False, priority=priority, **placement, **keywords
        )
        self.described[future.key] = what or _TASK_WORDS.get(function, "a task")
        return future

    def walk(self, items: Sequence[Item]) -> None:
        """Visit the root items, dropping each future after the item the
        memory model ends its value's life at (Dask then frees it)."""
        for item in items:
            self.visit(item)
            for name, is_buffer in self.dead.get(id(item), ()):
                scope = self.scopes[0]
                (scope.buffers if is_buffer else scope.pieces).pop(name, None)

    def _dealt(self, loop: LoopPass) -> list[str | None]:
        """The worker each block of root pass ``loop`` is dealt to, in
        order (``None`` when no workers are known)."""
        count = -(-self.extents[loop.instance] // loop.block)
        if not self.workers:
            return [None] * count
        return [self.workers[k % len(self.workers)] for k in range(count)]

    def _places(self) -> dict[str, set[str | None]]:
        """For each name a root item reads (with the factors of its
        builds), the workers its blocks are dealt to, ``None`` for a task
        Dask places (a root build or output)."""
        places: dict[str, set[str | None]] = {}
        for item in self.plan.schedule.items:
            if isinstance(item, LoopPass):
                names, where = self.mentioned[id(item)][0], set(self._dealt(item))
            elif isinstance(item, Build | Output) and item.value is not None:
                names, where = {item.value}, {None}
            else:
                continue
            for name in self._with_factors(names):
                places.setdefault(name, set()).update(where)
        return places

    def _with_factors(self, reads: Iterable[str]) -> set[str]:
        """The names ``reads`` and the factors of each (a build among the
        items read needs its factors)."""
        names = set(reads)
        for name in list(names):
            value = self.forest.values.get(name)
            if value is not None:
                names.update(factor.value for factor in value.factors)
        return names

    # -- what a part reads -------------------------------------------------

    def _operands(
        self,
        reads: Iterable[str],
        writes: Iterable[str] = (),
        worker: str | None = None,
    ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
        names = self._with_factors(reads)
        inputs = {n: self.inputs[n] for n in names if n in self.inputs}
        pieces: dict[str, Any] = {}
        buffers: dict[str, Any] = {}
        for name in names:
            found = self.find(name)
            if isinstance(found, Piece):
                pieces[name] = found.data
            elif isinstance(found, BufferState) and found.complete:
                buffers[name] = found.data.on(worker)
        for name in writes:
            buffers[name] = None
        return inputs, pieces, buffers

    def _part(
        self,
        item: Item,
        block: tuple[int, int] | None,
        reads: Iterable[str],
        writes: Iterable[str] = (),
        worker: str | None = None,
        targets: tuple[str, ...] = (),
        carry: Any = None,
    ) -> Any:
        inputs, pieces, buffers = self._operands(reads, writes, worker)
        position = self.positions[id(item)]
        if isinstance(item, Build | Output):
            what = (
                f"the build of @{item.value}"
                if isinstance(item, Build)
                else f"the output of tree {item.tree}"
            )
            return self.submit(
                _run_item,
                self.plan_future,
                position,
                inputs,
                pieces,
                buffers,
                what=what,
            )
        assert isinstance(item, LoopPass) and block is not None
        return self.submit(
            _run_part,
            self.plan_future,
            position,
            block,
            targets,
            inputs,
            pieces,
            buffers,
            carry,
            what=f"block {block[0]}:{block[1]} of a loop over {item.space}",
            worker=worker,
        )

    def _tree(self, target: str, sources: list[Any]) -> list[Any]:
        """At most ``FAN_IN`` futures of the contributions of ``sources``
        to ``target``, merged ``FAN_IN`` at a time: what reads them (an
        assembly) merges the last level itself, one task fewer between a
        pass and its readers."""
        while len(sources) > FAN_IN:
            sources = [
                self.submit(_merge, target, *sources[k : k + FAN_IN])
                for k in range(0, len(sources), FAN_IN)
            ]
        return sources

    # -- hooks -------------------------------------------------------------

    def loop(self, loop: LoopPass) -> None:
        reads, writes, groups = self.mentioned[id(loop)]
        extent = self.extents[loop.instance]
        targets = [(name, self.find(name)) for name in sorted(writes)]
        buffers = [
            (name, buffer)
            for name, buffer in targets
            if isinstance(buffer, BufferState)
        ]
        names = tuple(name for name, _ in buffers)
        names += tuple(residual_target(group) for group in sorted(groups))
        dealt = self._dealt(loop)
        summed = pass_writes(loop, self.root_buffers).summed
        lanes: dict[str | None, Any] = {}
        """The last block dealt to each worker so far."""
        for number, start in enumerate(range(0, extent, loop.block)):
            block = (start, min(start + loop.block, extent))
            # the blocks of a pass dealt to the workers in turn, as the
            # memory model shares them out (Dask would run them where the
            # data they read lies: often all on one worker, one after the
            # other, holding more than its share); each block carries on
            # from the one before it on its worker, adding into its partial
            # sums rather than holding its own until the assembly
            worker = dealt[number]
            lanes[worker] = self._part(
                loop, block, reads, writes, worker, names, lanes.get(worker)
            )
        ends = list(lanes.values())
        for _, buffer in buffers:
            buffer.data.parts.extend(ends)
        for group in groups:
            self.residual_parts.setdefault(group, []).extend(ends)
        for group in groups:  # the blocks' residuals added into one
            self.fold_residual(group)
        for name, buffer in targets:  # the pass closes: the buffers complete
            if isinstance(buffer, BufferState):
                data = buffer.data
                sources = self._tree(name, data.parts)
                # assembled on each worker that runs blocks reading it:
                # each receives the other blocks' contributions, not the
                # whole buffer after another worker assembled it (one
                # transfer and one round trip fewer between the passes);
                # a task Dask places reads any of them
                places = sorted(p for p in self.places.get(name, ()) if p is not None)
                if math.prod(data.shape) * _ITEM_BYTES < ASSEMBLED_ON_EACH_BYTES or (
                    name in summed and len(places) > 2
                ):
                    places = places[:1]
                for place in places or [None]:
                    data.assembled[place] = self.submit(
                        _assemble, data.shape, name, *sources, worker=place
                    )
                data.parts = []
                buffer.writer = loop
                buffer.complete = True

    def build(self, build: Build) -> None:
        self.keep_piece(build, self._part(build, None, [build.value]))

    def buffer(self, buffer: Buffer) -> None:
        value = self.forest.values[buffer.value]
        shape = tuple(self.sizing.mode_extent(m) for m in value.modes)
        self.keep_buffer(buffer, _RootBuffer(shape))

    def output(self, output: Output) -> None:
        if output.into is None or output.direct:
            return  # a tree's own result is not the residual's
        reads = [] if output.value is None else [output.value]
        parts = self.residual_parts.setdefault(output.into, [])
        parts.append(self._part(output, None, reads))
        if len(parts) > FAN_IN:  # a run of outputs holds FAN_IN residuals at most
            self.fold_residual(output.into)

    def residual(self, residual: Residual) -> None:
        self.residual_modes = residual.modes
        self.residual_parts.setdefault(residual.group, [])

    def fold_residual(self, group: int) -> None:
        """Add group ``group``'s contributions so far into one residual, so
        that a worker holds one residual per group, as the memory model
        counts, not one per block to the end."""
        parts = self.residual_parts.get(group, [])
        if len(parts) > 1:
            shape = tuple(self.sizing.mode_extent(m) for m in self.residual_modes)
            target = residual_target(group)
            self.residual_parts[group] = [
                self.submit(
                    _folded,
                    shape,
                    group,
                    *self._tree(target, parts),
                    order=self.residual_order,
                )
            ]

    def residual_array(self, group: int) -> Any:
        """The future of group ``group``'s assembled residual."""
        shape = tuple(self.sizing.mode_extent(m) for m in self.residual_modes)
        target = residual_target(group)
        parts = self._tree(target, self.residual_parts.pop(group, []))
        return self.submit(_assemble, shape, target, *parts, order=self.residual_order)

    def apply(self, apply: Apply) -> None:
        applied = self.submit(
            _apply,
            self.residual_array(apply.group),
            self.residual_modes,
            apply.operators,
        )
        self.residual_parts.setdefault(0, []).append(applied)
        self.close_group(apply.group)


# --------------------------------------------------------------------------
# Memory: the prediction and the budget
# --------------------------------------------------------------------------


def predicted_peak(
    forest: Forest, schedule: Schedule, sizing: Sizing, workers: int = 1
) -> int:
    """Bytes one worker is predicted to hold at once: every input (a
    worker may read them all) and the peak of what a worker running
    blocks holds (``memory.task_lifetimes``: the schedule's storage as
    one process holds it, its lane's residuals, its operand copies and
    the lanes of ``workers`` it merges where a pass closes)."""
    found = task_lifetimes(forest, schedule, sizing, workers)
    return input_bytes(forest, sizing) + peak(found).bytes


def check_budget(
    forest: Forest, schedule: Schedule, sizing: Sizing, budget: int, workers: int
) -> None:
    """Refuse (``BudgetError``) a plan whose predicted per-worker peak
    exceeds ``budget / workers``, naming the value that does not fit: the
    largest input or storage object above the share by itself, else the
    largest one live at the peak."""
    share = budget // workers
    needed = predicted_peak(forest, schedule, sizing, workers)
    if needed <= share:
        return
    where = f"the budget of {format_bytes(budget)} ({format_bytes(share)} per worker, {workers} worker{'s' if workers != 1 else ''})"
    _refuse(
        forest, schedule, sizing, workers, needed, share, where, "give a larger budget"
    )


def _refuse(
    forest: Forest,
    schedule: Schedule,
    sizing: Sizing,
    workers: int,
    needed: int,
    share: int,
    where: str,
    remedy: str,
) -> None:
    """Raise ``BudgetError`` for a plan needing ``needed`` bytes per worker
    where ``share`` is what a worker has (``where`` says it), naming the
    largest input or storage object above ``share`` by itself, else the
    largest one live at the peak."""
    found = peak(task_lifetimes(forest, schedule, sizing, workers))
    objects = [  # values: not what a pass's lanes hold, nor an operand's copy
        (life.bytes, f"@{life.value} ({life.kind})")
        for life in found.live
        if life.kind not in ("blocks", "lanes", "copy")
    ]
    used = {site.value for site in forest.sites}
    objects += [
        (sizing.full_bytes(value), f"input @{name}")
        for name, value in forest.values.items()
        if value.is_input and name in used
    ]
    size, name = max(objects, default=(needed, "the peak"))
    if size > share:
        raise BudgetError(
            f"{name} needs {format_bytes(size)} by itself, above {where}; "
            f"batch over more spaces, use smaller blocks or {remedy}"
        )
    raise BudgetError(
        f"the plan needs {format_bytes(needed)} per worker (the inputs and its peak, "
        f"where {name} is the largest value at {format_bytes(size)}), above {where}; "
        f"batch over more spaces, use smaller blocks or {remedy}"
    )


def _worker_room(dask_worker: Any) -> tuple[int, float, str, int]:  # Dask's
    """A worker's memory limit (0: none); the fraction of it up to which
    its process may grow and Dask's setting that puts it there: the lower
    of the fractions at which Dask spills its results and pauses it,
    else the one at which its nanny restarts it, else the whole limit;
    and the bytes its process holds now, after giving freed memory back
    to the system."""
    import dask.config

    _release_freed_memory()
    manager = dask_worker.memory_manager
    fractions = _spill_and_pause(manager)
    if not fractions:
        terminate = dask.config.get("distributed.worker.memory.terminate", False)
        fractions = [(float(terminate), "terminate")] if terminate else [(1.0, "")]
    fraction, name = min(fractions)
    held = int(dask_worker.monitor.update()["memory"])
    return int(manager.memory_limit or 0), fraction, name, held


ROOM_SLACK_BYTES = 32 * 2**20
"""What a worker's process holds beyond the predicted peak at small
extents, at least (``room_slack``): the code its first tasks import and
Dask's own buffers. The CSV doubles at ``a=μ̃=64, Κ=128`` (164 MiB
predicted) on one worker: 18 MiB more held after the first run than
before it, and peaks 26 to 56 MiB above the prediction."""


def room_slack(needed: int) -> int:
    """The room a worker needs beyond a predicted peak of ``needed``
    bytes: ``ROOM_SLACK_BYTES`` or a tenth of ``needed`` (the measured peak's
    tolerance), whichever is more."""
    return max(ROOM_SLACK_BYTES, needed // 10)


_ROOM_WORDS = {
    "spill": "spills its results to disk",
    "pause": "pauses it",
    "terminate": "restarts it",
}
"""What Dask does to a worker at each memory setting, for ``check_room``."""


def check_room(
    forest: Forest,
    schedule: Schedule,
    sizing: Sizing,
    needed: int,
    rooms: Mapping[str, tuple[int, float, str, int]],
) -> None:
    """Refuse (``BudgetError``) a plan whose predicted per-worker peak
    ``needed`` (``predicted_peak`` on the ``len(rooms)`` workers) and its
    ``room_slack`` do not fit on a worker of ``rooms`` (``_worker_room``'s,
    by address) below the memory at which Dask starts spilling its results
    or pauses it, less what its process holds already. Above it a run's
    working arrays, which Dask cannot spill, held the worker paused for
    good, or its nanny restarted it while spilling, with the run half
    done. Names the value that does not fit and the tightest worker."""
    limited = [
        (int(limit * fraction) - held, address, limit, fraction, name, held)
        for address, (limit, fraction, name, held) in rooms.items()
        if limit
    ]
    if not limited:
        return
    room, address, limit, fraction, name, held = min(limited)
    if needed + room_slack(needed) <= room:
        return
    bound = format_bytes(int(limit * fraction))
    where = f"the room on worker {address}: " + (
        f"Dask {_ROOM_WORDS[name]} at {fraction:.0%} of its memory limit of "
        f"{format_bytes(limit)} ({bound}; distributed.worker.memory.{name})"
        if name
        else f"its memory limit is {bound}"
    )
    where += (
        f" and its process holds {format_bytes(held)} before the run, leaving "
        f"{format_bytes(max(room, 0))}, of which a run keeps "
        f"{format_bytes(room_slack(needed))} for the process's own use"
    )
    _refuse(
        forest,
        schedule,
        sizing,
        len(rooms),
        needed,
        max(room - room_slack(needed), 0),
        where,
        "give the workers more memory",
    )


# --------------------------------------------------------------------------
# The cluster
# --------------------------------------------------------------------------


@contextlib.contextmanager
def local_cluster(
    workers: int,
    memory_limit: int | None = None,
    monitor_interval: str = MONITOR_INTERVAL,
) -> Iterator[Any]:
    """A client of the embedded cluster: a ``LocalCluster`` of ``workers``
    processes on loopback, one thread each and one BLAS thread each (the
    workers share the cores), each limited to ``memory_limit`` bytes (Dask's
    ``auto`` when ``None``), sampling its memory every ``monitor_interval``
    (a Dask duration). The samples give the measured peak of a run's
    report; a longer interval misses shorter peaks, and the default's
    sampling costs each process of the cluster (scheduler included) about
    a tenth of a core while the cluster lives."""
    import dask.config
    from dask.utils import parse_timedelta
    from distributed import Client, LocalCluster

    interval = None
    if isinstance(monitor_interval, str) and monitor_interval:
        with contextlib.suppress(KeyError, ValueError, TypeError):
            interval = parse_timedelta(monitor_interval)
    if interval is None or interval <= 0:
        raise ValueError(
            "monitor_interval must be a positive Dask duration such as '20ms',"
            f" got {monitor_interval!r}"
        )
    # Dask's own settings kept (its default trims freed memory), and ours
    # over them: one BLAS thread, and every array above MALLOC_MMAP_BYTES
    # mapped apart, returned to the system when freed (glibc otherwise
    # raises that threshold to the largest array freed and keeps the
    # memory of freed blocks below it in its heaps: the worker's memory
    # would be the most it ever held, not what it holds)
    variables = {
        **dask.config.get("distributed.nanny.pre-spawn-environ", {}),
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "MALLOC_MMAP_THRESHOLD_": str(MALLOC_MMAP_BYTES),
        "NUMPY_MADVISE_HUGEPAGE": NUMPY_MADVISE_HUGEPAGE,  # why: its docstring
    }
    with dask.config.set(
        {
            "distributed.admin.system-monitor.interval": monitor_interval,
            # at that interval, reading the host's disk counters cost more
            # CPU than a small run (nothing here reports them)
            "distributed.admin.system-monitor.disk": False,
            # Dask's statistical profiler walks the worker thread's stack
            # every 10 ms on the worker's event loop, on the cores the
            # workers compute on: 3% of a two-worker run, read by nothing
            # here (the dashboard's profile page stays empty)
            "distributed.worker.profile.enabled": False,
            "distributed.nanny.pre-spawn-environ": variables,
        }
    ):
        cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            host="127.0.0.1",
            dashboard_address=":0",
            memory_limit=memory_limit if memory_limit is not None else "auto",
            silence_logs=50,
            # each nanny's own copy of these settings: it keeps the global
            # ones by reference, which the end of this block restores, and
            # a worker it restarts (lost, or Client.restart) got Dask's
            # defaults (500 ms sampling)
            config=copy.deepcopy(dask.config.config),
        )
    # The scheduler and the nannies run in this process, on a core the
    # workers share with it: their own system monitors (nothing here reads
    # their samples) at Dask's interval, not the workers'
    default = 1000 * parse_timedelta(
        dask.config.get("distributed.admin.system-monitor.interval")
    )
    for server in (cluster.scheduler, *cluster.workers.values()):
        if server is None:  # typed optional; LocalCluster made it
            continue
        callback = server.periodic_callbacks.get("monitor")
        if callback is not None:
            callback.callback_time = default
    with cluster, Client(cluster) as client:
        yield client


@contextlib.contextmanager
def _client(
    scheduler: object, workers: int | None, memory_limit: int | None
) -> Iterator[Any]:
    """A ``distributed.Client``: the one given, one connected to the
    address given, or one of ``local_cluster``."""
    from distributed import Client

    if isinstance(scheduler, Client):
        yield scheduler
        return
    if isinstance(scheduler, str):
        try:
            client = Client(scheduler, timeout="10s")
        except OSError as error:
            raise ExecutionError(
                f"scheduler {scheduler!r}: cannot connect ({error})"
            ) from None
        with client:
            yield client
        return
    with local_cluster(workers or os.cpu_count() or 1, memory_limit) as client:
        yield client


def _workers_of(client: Any) -> dict[str, Any]:
    """The workers of ``client``'s cluster (Dask's ``scheduler_info``), at
    least one: waits up to ``WORKER_WAIT_SECONDS`` for a cluster that has
    none at the moment, then raises ``ExecutionError``."""
    found = client.scheduler_info(n_workers=-1)["workers"]
    if not found:
        with contextlib.suppress(TimeoutError):
            client.wait_for_workers(1, timeout=WORKER_WAIT_SECONDS)
        found = client.scheduler_info(n_workers=-1)["workers"]
    if not found:
        address = getattr(client.scheduler, "address", "the scheduler")
        raise ExecutionError(
            f"the cluster at {address} has no worker: none came in "
            f"{WORKER_WAIT_SECONDS:g} s"
        )
    return found


# --------------------------------------------------------------------------
# Output
# --------------------------------------------------------------------------


def _check_output(output: str | os.PathLike[str] | None) -> Path | None:
    if output is None:
        return None
    path = Path(output)
    if path.suffix.lower() not in OUTPUT_SUFFIXES:
        raise ValueError(f"output: {path} must end in .npy or .zarr")
    if not path.parent.is_dir():
        raise ValueError(f"output: {path.parent} is no directory")
    return path


def write_output(path: Path, array: Array) -> None:
    """Write ``array`` to ``path`` (``.npy`` or a Zarr store) under a
    temporary name in the same directory, then rename it: the final name
    holds a complete result or what it held before."""
    temporary = Path(
        tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".partial", dir=path.parent)
    )
    try:
        if path.suffix.lower() == ".npy":
            written = temporary / path.name
            np.save(written, array)
            os.replace(written, path)
        else:
            import zarr

            written = temporary / path.name
            zarr.save_array(str(written), cast(Any, array))  # zarr's protocol
            if path.exists():
                old = temporary / "previous"
                os.replace(path, old)
            os.replace(written, path)
    finally:
        shutil.rmtree(temporary, ignore_errors=True)


# --------------------------------------------------------------------------
# The entry point
# --------------------------------------------------------------------------


def execute_expression(
    expression: Expression | str,
    inputs: InputSource,
    *,
    extents: str | Mapping[str, int] | None = None,
    batch: str | Iterable[str] = (),
    block: int | Mapping[str, int] = 1,
    order: Order = "flops",
    share: Share = "forest",
    assume_symmetric: bool = False,
    never_worse: bool = True,
    budget: int | str | None = None,
    scheduler: object = None,
    workers: int | None = None,
    output: str | os.PathLike[str] | None = None,
    progress: bool = False,
) -> Execution:
    """The residual of ``expression`` on ``inputs``, run on Dask.

    ``extents``, ``batch``, ``block``, ``order``, ``share``,
    ``assume_symmetric`` and ``never_worse`` are ``evaluate_expression``'s
    (the plan is made the same way; unbatched, the plan is one task per
    value). ``budget``: bytes (or text: ``8GiB``) the workers may hold
    together; a plan whose predicted per-worker peak is above
    ``budget / workers`` is refused before any work (``BudgetError``,
    naming the value that does not fit), and the embedded workers are
    limited to that share. ``scheduler``: ``None`` (an embedded
    ``LocalCluster`` of ``workers`` processes, default the cores), the
    address of a running scheduler (``tcp://host:8786``) or a
    ``distributed.Client``. ``output``: a ``.npy`` file or ``.zarr`` store
    to write the residual to (written under a temporary name, then
    renamed); ``None`` returns it. ``progress``: Dask's progress bar on
    standard error.

    Raises what ``evaluate_expression`` raises for bad arguments and
    inputs, ``BudgetError``, ``ExecutionError`` when the cluster fails.
    """
    started = time.perf_counter()
    if workers is not None:
        check_count("workers", workers)
    if not isinstance(progress, bool):
        raise TypeError(f"progress must be True or False, got {progress!r}")
    limit = parse_budget(budget)
    target = _check_output(output)
    planned = plan_evaluation(
        expression,
        inputs,
        extents=extents,
        batch=batch,
        block=block,
        order=order,
        share=share,
        assume_symmetric=assume_symmetric,
        never_worse=never_worse,
        scheduled=True,
    )
    schedule = planned.schedule
    assert schedule is not None  # planned with ``scheduled``
    forest, sizing = planned.forest, planned.sizing
    embedded = scheduler is None
    count = workers or os.cpu_count() or 1
    if limit is not None:
        check_budget(forest, schedule, sizing, limit, count if embedded else 1)
    leaves = planned.inputs.leaf_arrays(forest)
    # each input laid out as the heaviest product reading it takes it
    # without a copy: once here, not in every block on the workers
    orders = input_layouts(forest, built_values(forest, schedule), sizing)
    plan = _Plan(forest, schedule, sizing, orders)
    share_limit = None if limit is None or not embedded else limit // count
    planned_at = time.perf_counter()
    with _client(scheduler, workers, share_limit) as client:
        workers_info = _workers_of(client)
        count = len(workers_info)
        limits = [int(info.get("memory_limit") or 0) for info in workers_info.values()]
        predicting = time.perf_counter()  # planning too: counted as such
        predicted = predicted_peak(forest, schedule, sizing, count)
        predicted_in = time.perf_counter() - predicting
        check_room(forest, schedule, sizing, predicted, client.run(_worker_room))
        keep_restrictions_loose(client)
        before = client.run(_worker_state)
        since = max(clock for clock, _ in before.values())
        # the workers keep the arrays a task frees for the next tasks of the run
        with _reusing_on_workers(client, predicted):
            graph_started = time.perf_counter()
            contiguous = {name: plan.shipped(name, a) for name, a in leaves.items()}
            # Each input, and the plan, is the result of a task, not scattered
            # data: Dask keeps the task (its argument) and recomputes a copy
            # lost with its worker; scattered data lost with the one worker
            # holding it is lost for good (Dask's active memory manager drops
            # the replicas of a broadcast that no task there waits for). The
            # keys are unique to the task (``pure=False``): a key reused across
            # runs on one client races its own release.
            with warnings.catch_warnings():
                # "large object in task graph, consider scattering": the above
                warnings.simplefilter("ignore", UserWarning)
                scattered = {
                    name: client.submit(
                        _identity, Aligned(array), pure=False, priority=2
                    )
                    for name, array in contiguous.items()
                }
                plan_future = client.submit(_identity, plan, pure=False, priority=2)
            graph = _Graph(client, plan, plan_future, scattered, workers_info)
            graph.walk(schedule.items)
            result = graph.residual_array(0)
            graph_built = time.perf_counter()
            if progress:
                from distributed import progress as progress_bar

                # Dask's text bar draws on standard output: the report's
                with contextlib.redirect_stdout(sys.stderr):
                    progress_bar(result, notebook=False, multi=False)  # and its deps
                sys.stderr.write("\n")
            try:
                residual = np.asarray(result.result().array)
            except Exception as error:
                message = _failure(error, graph.described, limits, predicted)
                raise ExecutionError(message) from None
        after = client.run(_worker_state)
        memory = client.run(_worker_memory, since=since)
        moved = sum(sent for _, sent in after.values()) - sum(
            sent for address, (_, sent) in before.items() if address in after
        )
        moved += sum(a.nbytes for a in contiguous.values()) + residual.nbytes
        tasks = graph.tasks + 1 + len(scattered)  # the plan's, the inputs'
        del graph, result
    if target is not None:
        write_output(target, residual)
    wall = time.perf_counter() - started
    measured = (
        max(int(top - start) for start, top in memory.values()) if memory else None
    )
    report = ExecutionReport(
        wall_seconds=wall,
        planning_seconds=(planned_at - started)
        + predicted_in
        + (graph_built - graph_started),
        multiply_adds=schedule_flops(forest, schedule, sizing),
        workers=count,
        predicted_peak=predicted,
        measured_peak=measured,
        tasks=tasks,
        bytes_moved=moved,
    )
    return Execution(
        None if target is not None else residual,
        planned.layout.modes,
        planned.inputs.extents,
        report,
        schedule,
        forest,
        target,
    )


__all__ = [
    "FAN_IN",
    "BudgetError",
    "Execution",
    "ExecutionError",
    "ExecutionReport",
    "check_budget",
    "check_room",
    "execute_expression",
    "keep_restrictions_loose",
    "local_cluster",
    "predicted_peak",
    "write_output",
]
