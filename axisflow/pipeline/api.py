"""Embedding: the fusion pipeline for a host, in memory, no text round trip.

::

    from axisflow.pipeline import schedule_module

    result = schedule_module(module, block=1)      # classify + schedule
    for forest in result.forests:
        print(forest.report.table())                # or forest.report.to_json()
        forest.schedule_op                          # the sched.schedule op

``schedule_module`` runs ``classify-axes`` on every ``batch.forest`` of the
module, schedules each, and attaches the ``sched.schedule`` op at the end of
the forest (replacing an earlier one). All forests are scheduled before any
is changed: on error nothing is written (roles included) and
``PipelineError`` says which forest failed and why.

``schedule_expression`` starts from SeQuant text (or a parsed expression) and
a batching policy: the frontend builds the module, then ``schedule_module``.
``plan_expression`` computes the same on the frontend's forest model, without
the IR (what ``axisflow plan`` needs: no ops printed, verified or read back).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Attribute
from xdsl.utils.exceptions import DiagnosticException

from axisflow.dialects.batch import ForestOp, ValueOp
from axisflow.dialects.batch_model import attach_roles, forest_model, forest_module
from axisflow.dialects.sched import ScheduleOp
from axisflow.dialects.sched_model import schedule_to_op
from axisflow.forest.model import Forest, ModelError
from axisflow.forest.roles import classify
from axisflow.forest.sharing import rebuild_per_tree
from axisflow.numerals import check_count
from axisflow.order import Order
from axisflow.residual import ResidualError, ResidualLayout, residual_layout
from axisflow.scheduling.assemble import forest_layout
from axisflow.scheduling.guard import DroppedLoop, schedule_never_worse
from axisflow.scheduling.memory import MemoryReport, Sizing, forest_flops, memory_report
from axisflow.scheduling.options import SHARE_CHOICES, ShareChoice
from axisflow.scheduling.schedule import Schedule
from axisflow.scheduling.scheduler import (
    DEFAULT_MAX_ROUNDS,
    Decisions,
    SchedulingError,
)

if TYPE_CHECKING:
    from axisflow.sequant import Expression, Share


class PipelineError(ValueError):
    """A forest that could not be scheduled; the message names it."""


@dataclass
class ForestSchedule:
    """The pipeline's result for one forest."""

    forest: ForestOp
    schedule_op: ScheduleOp
    model: Forest
    """The forest as scheduled, with its roles (without the loops the
    never-worse guard dropped)."""
    schedule: Schedule
    decisions: Decisions
    """Demotions and hoists, with reasons."""
    report: MemoryReport
    dropped: list[DroppedLoop] = field(default_factory=list[DroppedLoop])
    """Loops left out because they raised the peak (``scheduling.guard``)."""
    residual: ResidualLayout | None = None
    """The residual the schedule accumulates into, if any."""
    share: str = "forest"
    """Where values are shared (``forest``, or ``tree``: rebuilt per tree)."""


@dataclass
class ModelPlan:
    """The pipeline's result for one forest model, without IR
    (``plan_expression``): ``ForestSchedule`` without the ops."""

    model: Forest
    """The forest as scheduled, with its roles."""
    schedule: Schedule
    decisions: Decisions
    report: MemoryReport
    dropped: list[DroppedLoop]
    residual: ResidualLayout | None
    share: str = "forest"


@dataclass
class PipelineResult:
    """Every forest of a module, scheduled."""

    module: ModuleOp
    forests: list[ForestSchedule]

    def tables(self) -> str:
        """All memory reports as tables."""
        return "".join(f.report.table() for f in self.forests)


def forest_label(forest: ForestOp) -> str:
    """``batch.forest @name`` (or ``batch.forest #k`` when unnamed)."""
    if forest.sym_name is not None:
        return f"batch.forest @{forest.sym_name.data}"
    return "batch.forest (unnamed)"


def plan_forest(
    forest: ForestOp,
    *,
    block: int | Mapping[str, int] = 1,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    extents: Mapping[str, int] | None = None,
    model: Forest | None = None,
    residual: ResidualLayout | None = None,
    accumulate: bool = True,
    never_worse: bool = True,
) -> ForestSchedule:
    """Schedule one classified forest without changing it.

    The returned ``schedule_op`` is not attached; ``extents`` overrides the
    forest's extents for the byte sizes; ``model``: the forest's model with
    its roles, if already read. The trees accumulate into ``residual`` (by
    default the one their externals form, when all trees share them; none
    with ``accumulate=False``); loops that would raise the peak above the
    unbatched one are dropped (``scheduling.guard``; not with
    ``never_worse=False``, the scheduler alone). Raises ``PipelineError``.
    """
    try:
        if model is None:
            model = forest_model(forest)
        plan = plan_model(
            model,
            block=block,
            max_rounds=max_rounds,
            extents=extents,
            residual=residual,
            accumulate=accumulate,
            never_worse=never_worse,
        )
    except (ModelError, SchedulingError, ResidualError) as error:
        raise PipelineError(f"{forest_label(forest)}: {error}") from None
    return ForestSchedule(
        forest,
        schedule_to_op(plan.schedule),
        plan.model,
        plan.schedule,
        plan.decisions,
        plan.report,
        plan.dropped,
        plan.residual,
    )


def plan_model(
    model: Forest,
    *,
    block: int | Mapping[str, int] = 1,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    extents: Mapping[str, int] | None = None,
    residual: ResidualLayout | None = None,
    accumulate: bool = True,
    never_worse: bool = True,
) -> ModelPlan:
    """What ``plan_forest`` computes, on a classified forest model (no IR):
    the guarded schedule and its report. Raises ``ModelError``,
    ``SchedulingError`` or ``ResidualError``."""
    if not accumulate:
        residual = None
    elif residual is None:
        residual = forest_layout(model)
    guarded = schedule_never_worse(
        model,
        block=block,
        max_rounds=max_rounds,
        extents=extents,
        residual=residual,
        enabled=never_worse,
    )
    result, scheduled = guarded.result, guarded.forest
    sizing = Sizing(scheduled, extents)
    report = memory_report(scheduled, result.schedule, sizing, residual)
    report.dropped = [d.to_json() for d in guarded.dropped]
    report.first_peak = guarded.first_peak
    return ModelPlan(
        scheduled,
        result.schedule,
        result.decisions,
        report,
        guarded.dropped,
        residual,
    )


def attach(forest: ForestOp, schedule_op: ScheduleOp) -> None:
    """Put ``schedule_op`` at the end of ``forest``, replacing any schedule."""
    for op in list(forest.body.block.ops):
        if isinstance(op, ScheduleOp):
            forest.body.block.erase_op(op)
    forest.body.block.add_op(schedule_op)


def _classified(forest: ForestOp) -> Forest:
    """The model of ``forest`` with its roles, attached to the IR too."""
    try:
        model = forest_model(forest, with_roles=False)
    except ModelError as error:
        raise PipelineError(f"{forest_label(forest)}: {error}") from None
    attach_roles(forest, classify(model))
    return model


def check_schedule_options(block: object, max_rounds: object) -> None:
    """The boundary check of the scheduling options: ``block`` a positive int
    or a mapping of space key to one, ``max_rounds`` a positive int."""
    if isinstance(block, Mapping):
        for key, size in block.items():
            if not isinstance(key, str):
                raise TypeError(f"block keys must be space keys (str), got {key!r}")
            check_count(f"block[{key!r}]", size)
    else:
        check_count("block", block)
    check_count("max_rounds", max_rounds)


def schedule_module(
    module: ModuleOp,
    *,
    block: int | Mapping[str, int] = 1,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    classify: bool = True,
    verify: bool = True,
    residual: ResidualLayout | None = None,
    accumulate: bool = True,
    never_worse: bool = True,
) -> PipelineResult:
    """Classify (unless ``classify=False``: roles already attached) and
    schedule every ``batch.forest`` of ``module``, attaching the schedules.

    ``block``: elements per block (one size, or per space key);
    ``max_rounds``: bound on the demotion fixpoint; ``verify``: verify each
    forest first (skip only for IR verified already, as ``xdsl-opt`` does
    between passes); ``residual``/``accumulate``/``never_worse`` as for
    ``plan_forest`` (a
    given ``residual`` is for a module of one forest). Raises
    ``PipelineError`` and leaves the module unchanged if any forest fails.
    """
    if not isinstance(module, ModuleOp):
        raise TypeError(
            f"module must be a builtin.module (ModuleOp), got {type(module).__name__}"
        )
    check_schedule_options(block, max_rounds)
    for parameter, flag in (("classify", classify), ("verify", verify)):
        if not isinstance(flag, bool):
            raise TypeError(f"{parameter} must be True or False, got {flag!r}")
    forests = [op for op in module.walk() if isinstance(op, ForestOp)]
    saved: list[tuple[ValueOp, dict[str, Attribute]]] = []
    planned: list[ForestSchedule] = []
    try:
        for forest in forests:
            try:
                if verify:
                    forest.verify()
            except DiagnosticException as error:
                first = str(error).splitlines()[0] if str(error) else "invalid IR"
                raise PipelineError(f"{forest_label(forest)}: {first}") from None
            model = None
            if classify:
                saved.extend((v, dict(v.attributes)) for v in forest.values())
                model = _classified(forest)
            planned.append(
                plan_forest(
                    forest,
                    block=block,
                    max_rounds=max_rounds,
                    model=model,
                    residual=residual,
                    accumulate=accumulate,
                    never_worse=never_worse,
                )
            )
    except PipelineError:
        for value, before in saved:
            value.attributes.clear()
            value.attributes.update(before)
        raise
    for item in planned:
        attach(item.forest, item.schedule_op)
    return PipelineResult(module, planned)


def schedule_expression(
    expression: Expression | str,
    batch: str | Iterable[str] = (),
    *,
    extents: str | Mapping[str, int] | None = None,
    elem: int | None = None,
    separate_instances: bool = False,
    name: str = "sequant",
    block: int | Mapping[str, int] = 1,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    order: Order = "flops",
    accumulate: bool = True,
    never_worse: bool = True,
    share: ShareChoice = "forest",
) -> ForestSchedule:
    """The pipeline on a SeQuant equation: text (or ``axisflow.sequant.parse``
    output) and a batching policy, as ``axisflow.sequant.to_module`` takes
    them (``batch="Κ"``, ``"Κ,i"``, ...; ``extents="i=80,Κ=1682,a<2>=40"``;
    ``order="file|flops|memory"``), then classification and scheduling. The
    terms accumulate into the expression's residual, its ``Ŝ``/``Â``/``P̂``
    applied (``expression_layout``; not with ``accumulate=False``). Raises the
    frontend's ``SequantError`` /
    ``PolicyError`` for bad input and ``PipelineError`` if scheduling fails.

    ``share``: ``forest`` (values several trees build are shared), ``tree``
    (each tree rebuilds them, in loops of its own) or ``auto``: both are
    scheduled and the smaller scheduled peak is kept (``forest`` on a tie).
    Whenever the result rebuilds values, its report counts the extra
    multiply-adds against sharing (``extra_flops``) and, with ``auto``, its
    unbatched peak is the shared forest's (the plain evaluation it is
    compared with).
    """
    check_schedule_options(block, max_rounds)

    def run(model: Forest, how: Share) -> ForestSchedule:
        result = schedule_module(
            forest_module(model),
            block=block,
            max_rounds=max_rounds,
            residual=layout,
            accumulate=accumulate,
            never_worse=never_worse,
        )
        planned = result.forests[0]
        planned.share = planned.report.share = how
        return planned

    shared_model, layout = _expression_model(
        expression,
        batch,
        extents=extents,
        elem=elem,
        separate_instances=separate_instances,
        name=name,
        order=order,
        share=share,
    )
    return _choose_sharing(shared_model, share, run)


def plan_expression(
    expression: Expression | str,
    batch: str | Iterable[str] = (),
    *,
    extents: str | Mapping[str, int] | None = None,
    elem: int | None = None,
    separate_instances: bool = False,
    name: str = "sequant",
    block: int | Mapping[str, int] = 1,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    order: Order = "flops",
    accumulate: bool = True,
    never_worse: bool = True,
    share: ShareChoice = "forest",
) -> ModelPlan:
    """``schedule_expression`` without IR: the same arguments, errors,
    models, schedules and reports, with no ``batch.forest`` printed, verified
    and read back, and no ``sched.schedule`` op made (what ``axisflow plan``
    needs). The frontend's model is classified directly."""
    check_schedule_options(block, max_rounds)

    def run(model: Forest, how: Share) -> ModelPlan:
        try:
            classify(model)
            planned = plan_model(
                model,
                block=block,
                max_rounds=max_rounds,
                residual=layout,
                accumulate=accumulate,
                never_worse=never_worse,
            )
        except (ModelError, SchedulingError, ResidualError) as error:
            raise PipelineError(f"batch.forest @{model.name}: {error}") from None
        planned.share = planned.report.share = how
        return planned

    shared_model, layout = _expression_model(
        expression,
        batch,
        extents=extents,
        elem=elem,
        separate_instances=separate_instances,
        name=name,
        order=order,
        share=share,
    )
    return _choose_sharing(shared_model, share, run)


def _expression_model(
    expression: Expression | str,
    batch: str | Iterable[str],
    *,
    extents: str | Mapping[str, int] | None,
    elem: int | None,
    separate_instances: bool,
    name: str,
    order: Order,
    share: ShareChoice,
) -> tuple[Forest, ResidualLayout | None]:
    """The frontend's forest (values shared) and the expression's residual
    layout (``None`` for terms that are no one residual and have no
    operator): the first steps of ``schedule_expression``."""
    from axisflow.sequant import PolicyError, parse, to_model

    if share not in SHARE_CHOICES:
        raise PolicyError(
            f"share must be one of {', '.join(SHARE_CHOICES)}, got {share!r}"
        )
    if isinstance(expression, str):
        expression = parse(expression)
    shared_model = to_model(
        expression,
        batch,
        extents=extents,
        elem=elem,
        separate_instances=separate_instances,
        name=name,
        order=order,
    )
    layout: ResidualLayout | None = None
    try:
        layout = expression_layout(expression)
    except ResidualError as error:
        # terms that are no one residual: fine unless an operator needs one
        if any(term.operators for term in expression.terms):
            raise expression.error(
                error.reason, _term_offset(expression, error)
            ) from None
    return shared_model, layout


_Planned = TypeVar("_Planned", ForestSchedule, ModelPlan)


def _choose_sharing(
    shared_model: Forest, share: ShareChoice, run: Callable[[Forest, Share], _Planned]
) -> _Planned:
    """``share``'s choice (``schedule_expression``), ``run`` scheduling a
    forest: the shared one, the one rebuilt per tree, or the smaller peak."""
    if share == "forest":
        return run(shared_model, "forest")
    rebuilt = run(rebuild_per_tree(shared_model), "tree")
    rebuilt.report.extra_flops = rebuilt.report.flops - forest_flops(shared_model)
    if share == "tree":
        return rebuilt
    shared = run(shared_model, "forest")
    if rebuilt.report.scheduled_peak >= shared.report.scheduled_peak:
        return shared
    # the plain evaluation the choice is compared with: the shared forest's
    rebuilt.report.unbatched_peak = shared.report.unbatched_peak
    rebuilt.report.unbatched_live = shared.report.unbatched_live
    return rebuilt


def expression_layout(expression: Expression) -> ResidualLayout:
    """The residual of a SeQuant expression: its terms' externals and their
    reserved operators (``axisflow.residual.residual_layout``)."""
    from axisflow.residual import Operator, OperatorError

    operators = []
    for position, term in enumerate(expression.terms):
        try:
            operators.append(
                tuple(Operator.make(o.label, o.bra, o.ket) for o in term.operators)
            )
        except OperatorError as error:
            raise ResidualError(str(error), position) from None
    return residual_layout(
        [term.externals() for term in expression.terms],
        operators,
        None if expression.result is None else expression.result.indices,
    )


def _term_offset(expression: Expression, error: ResidualError) -> int:
    if 0 <= error.term < len(expression.terms):
        return expression.terms[error.term].offset
    return -1
