"""Evaluate a SeQuant expression's residual on the user's tensors.

Pure Python and NumPy, no xDSL. ``evaluate_expression`` reads and checks
the inputs (``axisflow.execution.inputs``), builds the forest with the
frontend (``axisflow.sequant.to_model``) at the extents the inputs give,
and computes the residual with the NumPy reference evaluator
(``axisflow.scheduling.evaluate``): unbatched (every value once, whole), or,
with ``batch``, through the schedule of that policy (classified, scheduled
and guarded as ``axisflow plan`` does), block by block. Either way the
terms are assembled into the expression's residual and its ``Ŝ``/``Â``/
``P̂`` applied (``docs/residual.md``).

The evaluator is dense and in-process: above ``memory_limit`` bytes
(2 GiB by default) it refuses before allocating. See ``docs/execution.md``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from axisflow.execution.inputs import Inputs, InputSource, read_inputs
from axisflow.forest.model import Forest
from axisflow.forest.roles import classify
from axisflow.numerals import check_count
from axisflow.order import ORDERS, Order
from axisflow.residual import ResidualError, ResidualLayout
from axisflow.roles.index import Index
from axisflow.scheduling.assemble import assemble_residual
from axisflow.scheduling.contraction import MemoryGuard
from axisflow.scheduling.evaluate import (
    check_memory,
    evaluate_forest,
    input_bytes,
    run_residual,
)
from axisflow.scheduling.guard import (
    DroppedLoop,
    GuardedSchedule,
    schedule_never_worse,
)
from axisflow.scheduling.memory import Sizing
from axisflow.scheduling.schedule import LoopPass, Schedule
from axisflow.scheduling.scheduler import DEFAULT_MAX_ROUNDS
from axisflow.sequant import Expression, Share, expression_layout, parse, to_model
from axisflow.sequant.forest import SHARES

Array = NDArray[np.float64]


@dataclass
class Evaluation:
    """The residual of an expression evaluated on the user's tensors."""

    residual: Array
    """The residual, axes in ``modes`` order."""
    modes: tuple[Index, ...]
    """The residual's axes: its indices (an operator's bra then ket, the
    result tensor's, or the sorted externals; ``docs/residual.md``), then
    the protos of its composites."""
    extents: dict[str, int]
    """The extents used, given or inferred from the inputs."""
    forest: Forest
    """The forest evaluated (the scheduled one when batched)."""
    schedule: Schedule | None = None
    """The schedule run, when batched."""
    dropped: tuple[DroppedLoop, ...] = ()
    """Loops the never-worse guard left out (``docs/planning.md``)."""

    @property
    def loop_passes(self) -> int:
        """The loop passes of the schedule run (0 when unbatched)."""
        if self.schedule is None:
            return 0
        return sum(1 for item, _ in self.schedule.walk() if isinstance(item, LoopPass))

    @property
    def labels(self) -> tuple[str, ...]:
        """The residual's axes as text (``("i_1", "i_2", "a_1", "a_2")``)."""
        return tuple(str(mode) for mode in self.modes)


def _check_arguments(
    batch: object,
    block: object,
    order: object,
    share: object,
    flags: Mapping[str, object],
    memory_limit: object,
) -> None:
    if not isinstance(batch, str) and not (
        isinstance(batch, Iterable) and all(isinstance(key, str) for key in batch)
    ):
        raise TypeError(f"batch must be a str or an iterable of str, got {batch!r}")
    if isinstance(block, Mapping):
        for key, size in block.items():
            if not isinstance(key, str):
                raise TypeError(f"block keys must be space keys (str), got {key!r}")
            check_count(f"block[{key!r}]", size)
    else:
        check_count("block", block)
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    if share not in SHARES:
        raise ValueError(f"share must be one of {', '.join(SHARES)}, got {share!r}")
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise TypeError(f"{name} must be True or False, got {flag!r}")
    if memory_limit is not None:
        check_count("memory_limit", memory_limit)


@dataclass
class PlannedEvaluation:
    """An expression read, its inputs checked and its forest scheduled:
    everything an evaluator needs before it computes."""

    expression: Expression
    layout: ResidualLayout
    inputs: Inputs
    forest: Forest
    """The forest to run (the scheduled one when batched)."""
    sizing: Sizing
    guarded: GuardedSchedule | None
    """The schedule kept and what was dropped (``None``: unbatched)."""
    what: str
    """How messages name the evaluation (``evaluating 3 terms``)."""

    @property
    def schedule(self) -> Schedule | None:
        """The schedule to run (``None``: unbatched)."""
        return None if self.guarded is None else self.guarded.result.schedule


def plan_evaluation(
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
    memory_limit: int | None = None,
    scheduled: bool = False,
) -> PlannedEvaluation:
    """Read and check the arguments and inputs of ``evaluate_expression``
    (which documents them) and plan the evaluation: the forest, and with
    ``batch`` (or ``scheduled``: also unbatched) the schedule of that
    policy, classified, scheduled and guarded as ``axisflow plan`` does.
    Computes nothing; raises what ``evaluate_expression`` raises before it
    computes."""
    if isinstance(batch, Iterable) and not isinstance(batch, str):
        batch = tuple(batch)  # a generator is read once, by the check and after
    flags = {"assume_symmetric": assume_symmetric, "never_worse": never_worse}
    _check_arguments(batch, block, order, share, flags, memory_limit)
    if isinstance(expression, str):
        expression = parse(expression)
    elif not isinstance(expression, Expression):
        raise TypeError(
            "expression must be SeQuant text (str) or a parsed Expression, "
            f"got {type(expression).__name__}"
        )
    try:
        layout = expression_layout(expression)
    except ResidualError as error:
        term = expression.terms[error.term] if error.term >= 0 else None
        offset = term.offset if term is not None else 0
        raise expression.error(
            f"the terms form no one residual: {error.reason}", offset
        ) from None
    checked = read_inputs(
        expression, inputs, extents=extents, assume_symmetric=assume_symmetric
    )
    forest = to_model(
        expression, batch, extents=checked.extents, order=order, share=share
    )
    count = len(expression.terms)
    what = f"evaluating {count} term{'' if count == 1 else 's'}"
    if not batch and not scheduled:
        sizing = Sizing(forest, checked.extents)
        return PlannedEvaluation(
            expression, layout, checked, forest, sizing, None, what
        )
    classify(forest)
    guarded = schedule_never_worse(
        forest,
        block=block,
        max_rounds=DEFAULT_MAX_ROUNDS,
        extents=checked.extents,
        residual=layout,
        enabled=never_worse,
    )
    if batch:
        spaces = batch if isinstance(batch, str) else ",".join(batch)
        what = f"{what} batched over {spaces}"
    sizing = Sizing(guarded.forest, checked.extents)
    return PlannedEvaluation(
        expression, layout, checked, guarded.forest, sizing, guarded, what
    )


def evaluate_expression(
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
    memory_limit: int | None = None,
) -> Evaluation:
    """The residual of ``expression`` (SeQuant text or a parsed
    ``Expression``) on the arrays ``inputs`` (a mapping by input key, or the
    path of a ``.npz`` file or Zarr store; ``read_inputs`` says which keys
    and axes).

    ``extents``: sizes of spaces and composite kinds (``"i=5,a=2"`` or a
    mapping), checked against the arrays; those not given are taken from
    them. ``batch``: index spaces to batch, outermost first (``"i"``,
    ``"i,a"``; none: unbatched), evaluated through the schedule of that
    policy in blocks of ``block`` elements (one size, or per space key).
    ``order``: each product's contraction order (``flops``, ``memory`` or
    ``file``); ``share``: ``forest`` or ``tree`` (``axisflow.sequant``).
    ``assume_symmetric``: skip the proto-symmetry check of the inputs.
    ``never_worse``: drop the loops that would raise the peak above the
    unbatched evaluation (``docs/planning.md``); ``False`` runs the
    schedule of the policy as classified, every loop kept.
    ``memory_limit``: bytes the evaluation may hold (``None``: 2 GiB).

    Raises ``InputError`` for inputs that do not fit (naming the input,
    axis and sizes), ``TypeError``/``ValueError`` naming a bad argument,
    the frontend's ``SequantError`` for text that is no residual,
    ``EvaluationMemoryError`` above the memory limit.
    """
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
        memory_limit=memory_limit,
    )
    forest, sizing, checked = planned.forest, planned.sizing, planned.inputs
    guarded = planned.guarded
    if guarded is None:
        check_memory(forest, sizing, planned.what, memory_limit)
        results = evaluate_forest(forest, checked.leaf_arrays(forest))
        residual = assemble_residual(forest, results, planned.layout)
        return Evaluation(residual, planned.layout.modes, checked.extents, forest)
    needed = input_bytes(forest, sizing) + guarded.scheduled_peak
    MemoryGuard(memory_limit).check(needed, planned.what)
    schedule = guarded.result.schedule
    _, residual = run_residual(forest, schedule, checked.leaf_arrays(forest), sizing)
    assert residual is not None  # scheduled with the residual layout
    return Evaluation(
        residual,
        planned.layout.modes,
        checked.extents,
        forest,
        schedule,
        tuple(guarded.dropped),
    )


__all__ = ["Evaluation", "PlannedEvaluation", "evaluate_expression", "plan_evaluation"]
