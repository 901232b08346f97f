"""Never worse than not batching: drop the loops that would raise the peak.

Batching trades recomputation and buffers for smaller pieces; on some
forests a loop makes the scheduled peak larger than evaluating without any
loop (a LoopCarried value needs a full buffer *and* its pieces, a fused loop
keeps every tree's buffers live side by side). ``schedule_never_worse``
schedules the forest as classified; while the scheduled peak exceeds the
unbatched peak it drops loops, a tree's loops over one space at a time:

1. the candidates are the (tree, space) pairs whose loops enclose the
   builds of what is live at the peak, largest objects first (at most
   ``CANDIDATES`` of them);
2. each candidate is tried (loops removed from every use-site of that tree,
   roles recomputed, forest rescheduled) and the one giving the smallest peak
   is kept, with both figures (the peak with the loop and without it);
3. after ``MAX_DROPS`` drops, or when no candidate lowers the peak, every
   remaining loop is dropped: the forest is evaluated without batching and
   the peak is the unbatched one.

So the returned schedule's peak is never above the unbatched peak, and the
report lists every dropped loop with the reason.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from axisflow.forest.model import Forest
from axisflow.forest.roles import classify
from axisflow.pipeline.memory import Sizing, lifetimes, peak, unbatched_schedule
from axisflow.pipeline.scheduler import Decisions, ScheduleResult, schedule_forest
from axisflow.residual import ResidualLayout

CANDIDATES = 4
"""(tree, space) pairs tried per drop."""
MAX_DROPS = 12
"""Drops tried one by one before every remaining loop is dropped."""


@dataclass(frozen=True)
class DroppedLoop:
    """A tree's loops over one space, left out because they raised the peak."""

    tree: str
    space: str
    labels: tuple[str, ...]
    peak_with: int
    """Scheduled peak (bytes) with these loops."""
    peak_without: int
    """Scheduled peak (bytes) once they are dropped."""
    unbatched_peak: int

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dictionary (sizes in bytes)."""
        return {
            "tree": self.tree,
            "space": self.space,
            "loops": list(self.labels),
            "peak_with_bytes": self.peak_with,
            "peak_without_bytes": self.peak_without,
            "unbatched_peak_bytes": self.unbatched_peak,
            "reason": str(self),
        }

    def __str__(self) -> str:
        from axisflow.pipeline.memory import format_bytes

        loops = ", ".join(self.labels)
        return (
            f"tree @{self.tree}: loop over {loops} ({self.space}) dropped: peak "
            f"{format_bytes(self.peak_with)} with it, {format_bytes(self.peak_without)}"
            f" without (unbatched {format_bytes(self.unbatched_peak)})"
        )


@dataclass
class GuardedSchedule:
    """The schedule kept, the forest it schedules and what was dropped."""

    forest: Forest
    result: ScheduleResult
    scheduled_peak: int
    unbatched_peak: int
    first_peak: int
    """The peak before any loop was dropped."""
    dropped: list[DroppedLoop] = field(default_factory=list[DroppedLoop])


def without_loops(forest: Forest, drops: set[tuple[int, str]]) -> Forest:
    """A copy of ``forest`` whose trees listed in ``drops`` (tree number,
    space) have no loops over those spaces; roles recomputed. Values are
    shared (scheduling does not change them), and so are the use-sites that
    keep all their loops (nothing changes a site once the model is finished;
    a trial then costs the sites it changes, not a copy of the forest)."""
    new = copy.copy(forest)
    new.sites = []
    for site in forest.sites:
        kept = tuple(
            loop for loop in site.loops if (site.tree, loop.space) not in drops
        )
        if len(kept) == len(site.loops):
            new.sites.append(site)
            continue
        clone = copy.copy(site)
        clone.loops = kept
        new.sites.append(clone)
    new.roles = {}
    instances = {loop.instance for site in new.sites for loop in site.loops}
    new.instance_spaces = {
        i: s for i, s in forest.instance_spaces.items() if i in instances
    }
    classify(new)
    return new


def scheduled_peak(forest: Forest, result: ScheduleResult, sizing: Sizing) -> int:
    """Peak live bytes of a schedule (the memory report's figure)."""
    return peak(lifetimes(forest, result.schedule, sizing)).bytes


def schedule_never_worse(
    forest: Forest,
    *,
    block: int | Mapping[str, int] = 1,
    max_rounds: int,
    extents: Mapping[str, int] | None = None,
    residual: ResidualLayout | None = None,
    schedule: Callable[..., ScheduleResult] = schedule_forest,
    enabled: bool = True,
) -> GuardedSchedule:
    """Schedule ``forest``, dropping loops until the peak is not above the
    unbatched one (module docstring); ``residual``: accumulate the trees into
    it (both peaks count the residual). With ``enabled=False`` nothing is
    dropped (the scheduler's schedule, its peak). Raises what ``schedule``
    raises."""

    def attempt(model: Forest) -> tuple[ScheduleResult, int, Sizing]:
        sizing = Sizing(model, extents)
        result = schedule(
            model, block=block, max_rounds=max_rounds, sizes=sizing, residual=residual
        )
        return result, scheduled_peak(model, result, sizing), sizing

    result, current, sizing = attempt(forest)
    unbatched = peak(
        lifetimes(forest, unbatched_schedule(forest, sizing, residual), sizing)
    ).bytes
    guarded = GuardedSchedule(forest, result, current, unbatched, current)
    drops: set[tuple[int, str]] = set()
    model = forest
    while enabled and guarded.scheduled_peak > unbatched:
        remaining = _loops(model)
        if not remaining:
            break
        candidates = _candidates(model, guarded.result, sizing)[:CANDIDATES]
        best: tuple[int, Forest, ScheduleResult, tuple[int, str]] | None = None
        if len(guarded.dropped) < MAX_DROPS:
            for candidate in candidates:
                trial = without_loops(forest, drops | {candidate})
                trial_result, trial_peak, _ = attempt(trial)
                if best is None or trial_peak < best[0]:
                    best = (trial_peak, trial, trial_result, candidate)
                # Only the best trial stays alive while the next is built.
                del trial, trial_result
        if best is None or best[0] >= guarded.scheduled_peak:
            # nothing local helps: drop every remaining loop and evaluate as
            # the unbatched forest does (its schedule, its peak)
            trial = without_loops(forest, drops | remaining)
            plain = ScheduleResult(
                unbatched_schedule(trial, sizing, residual), {}, Decisions()
            )
            for tree, space in sorted(remaining):
                guarded.dropped.append(
                    _dropped(
                        model, tree, space, guarded.scheduled_peak, unbatched, unbatched
                    )
                )
            model, guarded.result, guarded.scheduled_peak = trial, plain, unbatched
            break
        trial_peak, trial, trial_result, candidate = best
        guarded.dropped.append(
            _dropped(model, *candidate, guarded.scheduled_peak, trial_peak, unbatched)
        )
        drops.add(candidate)
        model, guarded.result, guarded.scheduled_peak = trial, trial_result, trial_peak
    guarded.forest = model
    return guarded


def _loops(forest: Forest) -> set[tuple[int, str]]:
    return {(site.tree, loop.space) for site in forest.sites for loop in site.loops}


def _candidates(
    forest: Forest, result: ScheduleResult, sizing: Sizing
) -> list[tuple[int, str]]:
    """(tree, space) pairs whose loops enclose what is live at the peak,
    the trees of the largest live objects first."""
    top = peak(lifetimes(forest, result.schedule, sizing))
    tree_of: dict[str, list[int]] = {}
    for site in forest.sites:
        tree_of.setdefault(site.value, []).append(site.tree)
    found: dict[tuple[int, str], None] = {}
    for life in sorted(top.live, key=lambda life: -life.bytes):
        for tree in tree_of.get(life.value, []):
            for site in forest.sites:
                if site.tree == tree and site.value == life.value:
                    for loop in site.loops:
                        found.setdefault((tree, loop.space), None)
    return list(found)


def _dropped(
    forest: Forest, tree: int, space: str, before: int, after: int, unbatched: int
) -> DroppedLoop:
    labels: dict[str, None] = {}
    for site in forest.sites:
        if site.tree == tree:
            for loop in site.loops:
                if loop.space == space:
                    labels.setdefault(loop.label.full_label, None)
    return DroppedLoop(
        forest.trees[tree].name, space, tuple(labels), before, after, unbatched
    )
