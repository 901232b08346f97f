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
from fractions import Fraction
from functools import partial
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
from axisflow.notes import UnusedOptionNote, say
from axisflow.numerals import check_count
from axisflow.order import Order
from axisflow.residual import ResidualError, ResidualLayout
from axisflow.scheduling.assemble import forest_layout
from axisflow.scheduling.guard import (
    DroppedLoop,
    GuardedSchedule,
    dropped_note,
    schedule_never_worse,
)
from axisflow.scheduling.memory import (
    MemoryReport,
    Sizing,
    forest_flops,
    lifetimes,
    memory_report,
    peak,
    unbatched_schedule,
)
from axisflow.scheduling.options import (
    REBUILDS,
    SHARE_CHOICES,
    Blocks,
    OptionError,
    Rebuild,
    ShareChoice,
    parse_budget,
    parse_fraction,
)
from axisflow.scheduling.planner import (
    BLOCK_SLACK,
    Planned,
    choose_blocks,
    plan_sharing,
)
from axisflow.scheduling.schedule import Schedule
from axisflow.scheduling.scheduler import (
    DEFAULT_MAX_ROUNDS,
    Decisions,
    SchedulingError,
    schedule_forest,
)
from axisflow.sequant.forest import expression_layout

if TYPE_CHECKING:
    from axisflow.sequant import Expression


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
    """Where values are shared: ``forest``, ``tree`` (rebuilt per tree) or
    ``planned`` (the planner's choice, ``share="auto"``)."""


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
    block: Blocks = 1,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    extents: Mapping[str, int] | None = None,
    model: Forest | None = None,
    residual: ResidualLayout | None = None,
    accumulate: bool = True,
    never_worse: bool = True,
    rebuild: Rebuild = "never",
    rebuild_at: Mapping[str, int] | None = None,
    loop_blocks: Mapping[int, int] | None = None,
    budget: int | None = None,
    quiet: bool = False,
) -> ForestSchedule:
    """Schedule one classified forest without changing it.

    The returned ``schedule_op`` is not attached; ``extents`` overrides the
    forest's extents for the byte sizes; ``model``: the forest's model with
    its roles, if already read. The trees accumulate into ``residual`` (by
    default the one their externals form, when all trees share them; none
    with ``accumulate=False``); loops that would raise the peak above the
    unbatched one are dropped (``scheduling.guard``; not with
    ``never_worse=False``, the scheduler alone), and said in a
    ``LoopsDroppedNote`` unless ``quiet`` (``plan_model``). ``rebuild``: the
    scheduler's rule for a value a loop does not bind (``never``: hoisted;
    ``fused``: rebuilt inside, multiply-adds for memory). ``block="auto"``:
    blocks as large as ``budget`` bytes allow (``planner.choose_blocks``;
    without a budget, within ``planner.BLOCK_SLACK`` of the peak at blocks
    of one). Raises ``PipelineError``.
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
            rebuild=rebuild,
            rebuild_at=rebuild_at,
            loop_blocks=loop_blocks,
            budget=budget,
            quiet=quiet,
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
    block: Blocks = 1,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    extents: Mapping[str, int] | None = None,
    residual: ResidualLayout | None = None,
    accumulate: bool = True,
    never_worse: bool = True,
    rebuild: Rebuild = "never",
    rebuild_at: Mapping[str, int] | None = None,
    loop_blocks: Mapping[int, int] | None = None,
    budget: int | None = None,
    quiet: bool = False,
) -> ModelPlan:
    """What ``plan_forest`` computes, on a classified forest model (no IR):
    the guarded schedule and its report. Unless ``quiet`` it says
    (``axisflow.notes``) when the guard dropped loops (``LoopsDroppedNote``)
    and when ``block`` names a space the forest lacks (``UnusedOptionNote``:
    ignored). Raises ``ModelError``, ``SchedulingError`` or
    ``ResidualError``."""
    if not accumulate:
        residual = None
    elif residual is None:
        residual = forest_layout(model)

    def guard(blocks: int | Mapping[str, int]) -> GuardedSchedule:
        return schedule_never_worse(
            model,
            block=blocks,
            max_rounds=max_rounds,
            extents=extents,
            residual=residual,
            enabled=never_worse,
            schedule=partial(
                schedule_forest,
                rebuild=rebuild,
                rebuild_at=rebuild_at,
                loop_blocks=loop_blocks,
            ),
        )

    if block == "auto":
        first = guard(1)
        target = budget
        if target is None:
            target = first.scheduled_peak + int(first.scheduled_peak * BLOCK_SLACK)
        chosen = choose_blocks(
            first.forest, first.result.schedule, target, extents, loop_blocks or ()
        )
        guarded = first if all(b == 1 for b in chosen.values()) else guard(chosen)
    else:
        guarded = guard(block)
    result, scheduled = guarded.result, guarded.forest
    sizing = Sizing(scheduled, extents)
    report = memory_report(scheduled, result.schedule, sizing, residual)
    report.dropped = [d.to_json() for d in guarded.dropped]
    report.first_peak = guarded.first_peak
    report.budget = budget
    planned = ModelPlan(
        scheduled,
        result.schedule,
        result.decisions,
        report,
        guarded.dropped,
        residual,
    )
    if not quiet:
        announce(model, planned, block)
    return planned


def announce(
    model: Forest, planned: ModelPlan | ForestSchedule, block: object = 1
) -> None:
    """The notes of a planned forest (``plan_model``): ``block`` entries
    naming no space of ``model``, and the loops the guard dropped."""
    label = f"batch.forest @{model.name}" if model.name else "batch.forest (unnamed)"
    if isinstance(block, Mapping):
        for key in block:
            if key not in model.spaces:
                known = ", ".join(sorted(model.spaces)) or "none"
                say(
                    UnusedOptionNote(
                        f"block names {key!r}, which is no index space of {label} "
                        f"(its spaces: {known}); ignored"
                    )
                )
    if planned.dropped:
        report = planned.report
        every_loop = not any(site.loops for site in planned.model.sites)
        say(
            dropped_note(
                label,
                planned.dropped,
                report.first_peak or report.scheduled_peak,
                report.scheduled_peak,
                every_loop,
            )
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
    """The boundary check of the scheduling options: ``block`` a positive
    int, a mapping of space key to one, or ``"auto"``; ``max_rounds`` a
    positive int."""
    if block == "auto":
        pass
    elif isinstance(block, Mapping):
        for key, size in block.items():
            if not isinstance(key, str):
                raise TypeError(f"block keys must be space keys (str), got {key!r}")
            check_count(f"block[{key!r}]", size)
    else:
        check_count("block", block)
    check_count("max_rounds", max_rounds)


def check_rebuild(rebuild: object) -> None:
    """``rebuild`` is one of ``REBUILDS``."""
    if rebuild not in REBUILDS:
        raise ValueError(
            f"rebuild must be one of {', '.join(REBUILDS)}, got {rebuild!r}"
        )


def schedule_module(
    module: ModuleOp,
    *,
    block: Blocks = 1,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    classify: bool = True,
    verify: bool = True,
    residual: ResidualLayout | None = None,
    accumulate: bool = True,
    never_worse: bool = True,
    rebuild: Rebuild = "never",
    rebuild_at: Mapping[str, int] | None = None,
    loop_blocks: Mapping[int, int] | None = None,
    budget: int | str | None = None,
    quiet: bool = False,
) -> PipelineResult:
    """Classify (unless ``classify=False``: roles already attached) and
    schedule every ``batch.forest`` of ``module``, attaching the schedules.

    ``block``: elements per block (one size, or per space key);
    ``max_rounds``: bound on the demotion fixpoint; ``verify``: verify each
    forest first (skip only for IR verified already, as ``xdsl-opt`` does
    between passes); ``residual``/``accumulate``/``never_worse`` as for
    ``plan_forest`` (a
    given ``residual`` is for a module of one forest); ``rebuild``,
    ``budget`` (bytes, or text such as ``"100GiB"``) and ``block="auto"`` as
    for ``plan_forest``; ``quiet``: no notes (``plan_model``). Raises
    ``PipelineError`` and leaves the module
    unchanged if any forest fails.
    """
    if not isinstance(module, ModuleOp):
        raise TypeError(
            f"module must be a builtin.module (ModuleOp), got {type(module).__name__}"
        )
    check_schedule_options(block, max_rounds)
    check_rebuild(rebuild)
    budget = parse_budget(budget)
    for parameter, flag in (
        ("classify", classify),
        ("verify", verify),
        ("quiet", quiet),
    ):
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
                    rebuild=rebuild,
                    rebuild_at=rebuild_at,
                    loop_blocks=loop_blocks,
                    budget=budget,
                    quiet=quiet,
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
    block: Blocks | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    order: Order = "flops",
    accumulate: bool = True,
    never_worse: bool = True,
    share: ShareChoice | None = None,
    budget: int | str | None = None,
    max_extra_flops: str | float | Fraction | None = None,
    quiet: bool = False,
) -> ForestSchedule:
    """The pipeline on a SeQuant equation: text (or ``axisflow.sequant.parse``
    output) and a batching policy, as ``axisflow.sequant.to_module`` takes
    them (``batch="Κ"``, ``"Κ,i"``, ...; ``extents="i=80,Κ=1682,a<2>=40"``;
    ``order="file|flops|memory"``), then classification and scheduling. The
    terms accumulate into the expression's residual, its ``Ŝ``/``Â``/``P̂``
    applied (``expression_layout``; not with ``accumulate=False``). Raises the
    frontend's ``SequantError`` /
    ``PolicyError`` for bad input and ``PipelineError`` if scheduling fails.

    ``share``: ``forest`` (values several trees build are shared, the
    default without an objective), ``tree`` (each tree rebuilds them, in
    loops of its own) or ``auto`` (``scheduling.planner``: which use-sites
    share a value, every tree's loop order and which trees run fused, for
    the objective; the default with one). The objective: ``budget`` (bytes,
    or text such as ``"100GiB"``: the fewest multiply-adds within it) or
    ``max_extra_flops`` (``"5%"``, ``0.05``: the smallest peak within that
    much more than the shared forest's multiply-adds). ``block``: one size,
    per space, or ``"auto"`` (as large as the budget allows); by default
    ``"auto"`` when the planner runs, else 1. The report counts the
    multiply-adds the schedule performs against the shared forest's
    (``extra_flops``), the lower bound and, with ``auto``, the Pareto front
    the search found; its unbatched peak is the shared forest's. ``quiet``:
    no notes (``plan_model``; said of the forest kept, once).
    """
    objective = _objective(share, block, max_rounds, budget, max_extra_flops)

    def run(planned: Planned, blocks: Blocks) -> ForestSchedule:
        result = schedule_module(
            forest_module(planned.forest),
            block=blocks,
            max_rounds=max_rounds,
            residual=planned.residual,
            accumulate=accumulate,
            never_worse=never_worse,
            rebuild=planned.rebuild,
            rebuild_at=planned.rebuild_at,
            loop_blocks=planned.loop_blocks,
            budget=objective.budget,
            quiet=True,  # said of the forest kept, below
        )
        return result.forests[0]

    shared_model, layout = _expression_model(
        expression,
        batch,
        extents=extents,
        elem=elem,
        separate_instances=separate_instances,
        name=name,
        order=order,
        share=objective.share,
    )
    chosen = _plan(shared_model, layout, objective, max_rounds, run)
    if not quiet:
        announce(chosen.model, chosen, objective.block)
    return chosen


def plan_expression(
    expression: Expression | str,
    batch: str | Iterable[str] = (),
    *,
    extents: str | Mapping[str, int] | None = None,
    elem: int | None = None,
    separate_instances: bool = False,
    name: str = "sequant",
    block: Blocks | None = None,
    max_rounds: int = DEFAULT_MAX_ROUNDS,
    order: Order = "flops",
    accumulate: bool = True,
    never_worse: bool = True,
    share: ShareChoice | None = None,
    budget: int | str | None = None,
    max_extra_flops: str | float | Fraction | None = None,
    front: bool = False,
    quiet: bool = False,
) -> ModelPlan:
    """``schedule_expression`` without IR: the same arguments, errors,
    models, schedules and reports, with no ``batch.forest`` printed, verified
    and read back, and no ``sched.schedule`` op made (what ``axisflow plan``
    needs). ``front=True`` searches the whole Pareto front (``auto``)."""
    objective = _objective(share, block, max_rounds, budget, max_extra_flops)
    objective.front = front

    def run(planned: Planned, blocks: Blocks) -> ModelPlan:
        try:
            return plan_model(
                planned.forest,
                block=blocks,
                max_rounds=max_rounds,
                residual=planned.residual,
                accumulate=accumulate,
                never_worse=never_worse,
                rebuild=planned.rebuild,
                rebuild_at=planned.rebuild_at,
                loop_blocks=planned.loop_blocks,
                budget=objective.budget,
                quiet=True,  # said of the forest kept, below
            )
        except (ModelError, SchedulingError, ResidualError) as error:
            raise PipelineError(
                f"batch.forest @{planned.forest.name}: {error}"
            ) from None

    shared_model, layout = _expression_model(
        expression,
        batch,
        extents=extents,
        elem=elem,
        separate_instances=separate_instances,
        name=name,
        order=order,
        share=objective.share,
    )
    chosen = _plan(shared_model, layout, objective, max_rounds, run)
    if not quiet:
        announce(chosen.model, chosen, objective.block)
    return chosen


@dataclass
class _Objective:
    """The sharing choice and objective of an expression's plan."""

    share: ShareChoice
    block: Blocks
    budget: int | None
    max_extra_flops: Fraction | None
    front: bool = False


def _objective(
    share: ShareChoice | None,
    block: Blocks | None,
    max_rounds: int,
    budget: int | str | None,
    max_extra_flops: str | float | Fraction | None,
) -> _Objective:
    """The arguments of ``schedule_expression`` checked, defaults filled:
    the planner (``auto``) when an objective is given, blocks ``auto`` when
    the planner runs."""
    from axisflow.sequant import PolicyError

    try:
        size = parse_budget(budget)
        fraction = parse_fraction(max_extra_flops)
    except OptionError as error:
        raise PolicyError(str(error)) from None
    if size is not None and fraction is not None:
        raise PolicyError(
            "give either budget (the fewest multiply-adds within it) or "
            "max_extra_flops (the smallest peak within it), not both"
        )
    if share is None:
        share = "auto" if size is not None or fraction is not None else "forest"
    if share not in SHARE_CHOICES:
        raise PolicyError(
            f"share must be one of {', '.join(SHARE_CHOICES)}, got {share!r}"
        )
    if block is None:
        block = "auto" if share == "auto" else 1
    check_schedule_options(block, max_rounds)
    return _Objective(share, block, size, fraction)


_Planned = TypeVar("_Planned", ForestSchedule, ModelPlan)


def _plan(
    shared_model: Forest,
    layout: ResidualLayout | None,
    objective: _Objective,
    max_rounds: int,
    run: Callable[[Planned, Blocks], _Planned],
) -> _Planned:
    """The forest ``objective.share`` asks for (``planner.plan_sharing``),
    scheduled by ``run``; the report compared with the shared forest (its
    multiply-adds, each value once, and its unbatched peak) and given the
    front of the search."""
    try:
        planned = plan_sharing(
            shared_model,
            layout,
            objective.share,
            block=1 if objective.block == "auto" else objective.block,
            max_rounds=max_rounds,
            budget=objective.budget,
            max_extra_flops=objective.max_extra_flops,
            front=objective.front,
            choose_loop_blocks=objective.block == "auto",
        )
    except (ModelError, SchedulingError, ResidualError) as error:
        raise PipelineError(f"batch.forest @{shared_model.name}: {error}") from None
    result = run(planned, objective.block)
    sizing = Sizing(shared_model)
    shared_flops = forest_flops(shared_model, sizing)
    if planned.share == "planned":
        # never worse than the plain evaluation the plan is compared with
        # (the shared forest unbatched): a plan above it gives way to the
        # shared forest under the never-worse guard
        plain = peak(
            lifetimes(
                shared_model,
                unbatched_schedule(shared_model, sizing, layout),
                sizing,
            )
        )
        if result.report.scheduled_peak > plain.bytes:
            search = planned.search
            planned = plan_sharing(shared_model, layout, "forest")
            planned.search = search
            result = run(planned, objective.block)
        else:
            result.report.unbatched_peak = plain.bytes
            result.report.unbatched_live = [
                f"@{life.value} {life.kind}" for life in plain.live
            ]
    report = result.report
    report.share = planned.share
    report.extra_flops = report.flops - shared_flops
    if planned.search is not None:
        chosen = planned.search.chosen
        report.front = [
            {
                "peak_bytes": point.peak,
                "flops": point.flops,
                "kind": point.kind,
                "shares": point.shares,
                "rebuilt_in_loops": len(set(point.rebuild_at.values())),
                "chosen": point is chosen,
            }
            for point in planned.search.front
        ]
    result.share = planned.share
    return result


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
        # a plan must not depend on how the terms were written (unless the
        # written order is the order asked for)
        canonical=share == "auto" and order != "file",
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


def _term_offset(expression: Expression, error: ResidualError) -> int:
    if 0 <= error.term < len(expression.terms):
        return expression.terms[error.term].offset
    return -1
