"""Never worse than not batching: drop the loops that would raise the peak.

Batching trades recomputation and buffers for smaller pieces; on some
forests a loop makes the scheduled peak larger than evaluating without any
loop (a LoopCarried value needs a full buffer *and* its pieces, a fused loop
keeps every tree's buffers live side by side). ``schedule_never_worse``
schedules the forest as classified; while the scheduled peak exceeds the
unbatched peak it drops loops, one group over one space at a time. A group
is either

* a **tree's** loops over the space: removed from every use-site of that
  tree (the tree runs without them), or
* a **value's** loops over the space: removed from every use-site of that
  value and from the use-sites below them (what it is built from), so the
  value is computed whole, outside those loops, while its readers keep
  theirs and read the blocks they need of the whole value, as they read an
  input or a hoisted LoopInvariant value. Its factors go with it: kept in
  the loop they would only add their pieces to the full buffers the whole
  value is built from.

1. the candidates are the values live at the peak that are built inside a
   loop, largest objects first, with each space of those loops (at most
   ``CANDIDATES``), then the (tree, space) pairs whose loops enclose the
   builds of what is live at the peak (at most ``CANDIDATES`` more);
2. each candidate is tried (loops removed, roles recomputed by
   ``axisflow.forest.roles.classify``, forest rescheduled) and the one
   giving the smallest peak is kept (a value's on a tie: it keeps more
   loops), with both figures (the peak with the loops and without them);
3. after ``MAX_DROPS`` drops, or when no candidate lowers the peak, every
   remaining loop is dropped: the forest is evaluated without batching and
   the peak is the unbatched one.

The drops are greedy and stop as soon as the peak is not above the unbatched
one, so a finer first step can end higher than coarser ones would have: the
guard runs the steps twice, with trees' loops only and with both kinds, and
keeps the smaller final peak (then the fewer dropped groups; both kinds on a
tie). A set of drops is scheduled once for both runs.

So the returned schedule's peak is never above the unbatched peak, and the
report lists every dropped group, whose it was, and the reason.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from axisflow.forest.model import Forest, ModelError
from axisflow.forest.roles import classify
from axisflow.notes import LoopsDroppedNote
from axisflow.residual import ResidualLayout
from axisflow.roles.decision import LoopRole
from axisflow.scheduling.check import check_schedule
from axisflow.scheduling.memory import (
    Peak,
    Sizing,
    lifetimes,
    peak,
    unbatched_schedule,
)
from axisflow.scheduling.scheduler import (
    Decisions,
    ScheduleResult,
    SchedulingError,
    schedule_forest,
)

CANDIDATES = 4
"""(value, space) and (tree, space) candidates tried per drop, of each kind."""
MAX_DROPS = 12
"""Drops tried one by one before every remaining loop is dropped."""


DropKind = Literal["tree", "value"]


@dataclass(frozen=True)
class Cut:
    """A group of loops the guard may drop: a tree's (``tree``, its number)
    or a value's (``value``, its name) loops over ``space``."""

    space: str
    tree: int | None = None
    value: str | None = None

    @property
    def kind(self) -> DropKind:
        """``tree`` or ``value``: whose loops."""
        return "tree" if self.value is None else "value"


@dataclass(frozen=True)
class DroppedLoop:
    """A tree's or a value's loops over one space, left out because they
    raised the peak."""

    tree: str
    """The tree (for a value: the tree where it is built)."""
    space: str
    labels: tuple[str, ...]
    peak_with: int
    """Scheduled peak (bytes) with these loops."""
    peak_without: int
    """Scheduled peak (bytes) once they are dropped."""
    unbatched_peak: int
    kind: DropKind = "tree"
    """Whose loops: a tree's or a value's (module docstring)."""
    value: str | None = None
    """The value computed whole (``kind == "value"``)."""

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dictionary (sizes in bytes)."""
        return {
            "kind": self.kind,
            "tree": self.tree,
            "value": self.value,
            "space": self.space,
            "loops": list(self.labels),
            "peak_with_bytes": self.peak_with,
            "peak_without_bytes": self.peak_without,
            "unbatched_peak_bytes": self.unbatched_peak,
            "reason": str(self),
        }

    def __str__(self) -> str:
        from axisflow.scheduling.memory import format_bytes

        loops = ", ".join(self.labels)
        whose = (
            f"tree @{self.tree}"
            if self.kind == "tree"
            else f"value @{self.value} (tree @{self.tree}, computed whole)"
        )
        return (
            f"{whose}: loop over {loops} ({self.space}) dropped: peak "
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


def dropped_note(
    label: str,
    dropped: Sequence[DroppedLoop],
    first_peak: int,
    scheduled_peak: int,
    every_loop: bool,
) -> LoopsDroppedNote:
    """The one line that says the guard dropped loops of the forest
    ``label``: how many groups, the peak with them and without them (and
    that nothing is batched any more when ``every_loop`` went)."""
    from axisflow.scheduling.memory import format_bytes

    groups = f"{len(dropped)} loop group{'' if len(dropped) == 1 else 's'}"
    what = f"every batch loop ({groups}): nothing is batched" if every_loop else groups
    return LoopsDroppedNote(
        f"{label}: the never-worse guard dropped {what}; peak "
        f"{format_bytes(first_peak)} with them, {format_bytes(scheduled_peak)} "
        "without (report=table says which)"
    )


def without_loops(
    forest: Forest,
    drops: Collection[tuple[int, str] | Cut],
    fresh_roles: Mapping[tuple[str, str], LoopRole] | None = None,
) -> Forest:
    """A copy of ``forest`` without the loops of ``drops``: (tree number,
    space) pairs or ``Cut``s (a tree's loops over the space from all its
    use-sites; a value's from its use-sites and those below them); roles
    recomputed. Values are shared (scheduling does not change them), and so
    are the use-sites that keep all their loops (nothing changes a site once
    the model is finished; a trial then costs the sites it changes, not a
    copy of the forest). ``fresh_roles``: the roles ``classify`` gives
    ``forest`` (not necessarily those it holds); the values whose roles
    cannot change keep them instead of being classified again."""
    trees: set[tuple[int, str]] = set()
    values: list[Cut] = []
    for drop in drops:
        if isinstance(drop, Cut):
            if drop.value is None:
                assert drop.tree is not None
                trees.add((drop.tree, drop.space))
            else:
                values.append(drop)
        else:
            trees.add(drop)
    stripped = _below_values(forest, values)
    new = copy.copy(forest)
    new.sites = []
    # the values whose roles can change: those of the sites losing loops
    # and of their factors' sites (a role reads the consumer's loops)
    changed: set[str] = set()
    for number, site in enumerate(forest.sites):
        spaces = stripped.get(number, ())
        kept = tuple(
            loop
            for loop in site.loops
            if (site.tree, loop.space) not in trees and loop.space not in spaces
        )
        if len(kept) == len(site.loops):
            new.sites.append(site)
            continue
        clone = site.clone()
        clone.loops = kept
        new.sites.append(clone)
        changed.add(site.value)
        changed.update(forest.sites[child].value for child in site.children)
    new.roles = {}
    instances = {loop.instance for site in new.sites for loop in site.loops}
    new.instance_spaces = {
        i: s for i, s in forest.instance_spaces.items() if i in instances
    }
    if fresh_roles is None:
        classify(new)
    else:
        classify(new, previous=fresh_roles, changed=changed)
    return new


def _below_values(forest: Forest, cuts: Iterable[Cut]) -> dict[int, set[str]]:
    """Site number -> the spaces whose loops leave it: every use-site of each
    cut's value and every use-site below one."""
    stripped: dict[int, set[str]] = {}
    sites_of: dict[str, list[int]] | None = None
    for cut in cuts:
        if sites_of is None:
            sites_of = {}
            for number, site in enumerate(forest.sites):
                sites_of.setdefault(site.value, []).append(number)
        stack = list(sites_of.get(cut.value or "", []))
        while stack:
            number = stack.pop()
            spaces = stripped.setdefault(number, set())
            if cut.space in spaces:
                continue
            spaces.add(cut.space)
            stack.extend(forest.sites[number].children)
    return stripped


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
    value_drops: bool = True,
) -> GuardedSchedule:
    """Schedule ``forest``, dropping loops until the peak is not above the
    unbatched one (module docstring); ``residual``: accumulate the trees into
    it (both peaks count the residual). With ``enabled=False`` nothing is
    dropped (the scheduler's schedule, its peak); with ``value_drops=False``
    only trees' loops are candidates. Raises what ``schedule`` raises on the
    forest as given (a candidate that cannot be scheduled is skipped)."""

    def attempt(
        model: Forest, check: bool = True
    ) -> tuple[ScheduleResult, int, Sizing]:
        sizing = Sizing(model, extents)
        result = schedule(
            model,
            block=block,
            max_rounds=max_rounds,
            sizes=sizing,
            residual=residual,
            check=check,
        )
        return result, scheduled_peak(model, result, sizing), sizing

    result, current, sizing = attempt(forest)
    unbatched = peak(
        lifetimes(forest, unbatched_schedule(forest, sizing, residual), sizing)
    ).bytes
    first = GuardedSchedule(forest, result, current, unbatched, current)
    if not enabled or current <= unbatched:
        return first
    tried: dict[frozenset[Cut], tuple[Forest, ScheduleResult, int] | None] = {}
    checked: set[frozenset[Cut]] = set()
    # the roles a fresh classification gives the forest, made once: each
    # trial then classifies only the values whose loops it changes
    fresh = copy.copy(forest)
    fresh.roles = {}
    fresh_roles: dict[tuple[str, str], LoopRole] | None = fresh.roles
    try:
        classify(fresh)
    except ModelError:  # each trial classifies its own forest whole
        fresh_roles = None

    def trial(drops: list[Cut]) -> tuple[Forest, ScheduleResult, int] | None:
        """The forest without ``drops``, scheduled, and its peak (``None``
        if it cannot be scheduled); each set of drops is tried once. Not
        checked against ``check_schedule`` yet: most trials are not kept,
        and ``sound`` checks one before it is (a tenth of a guard's time)."""
        key = frozenset(drops)
        if key not in tried:
            model = without_loops(forest, drops, fresh_roles)
            try:
                result, trial_peak, _ = attempt(model, check=False)
            except (SchedulingError, ModelError):
                tried[key] = None  # this group cannot leave its loops alone
            else:
                tried[key] = (model, result, trial_peak)
        return tried[key]

    def sound(drops: list[Cut]) -> bool:
        """Whether the trial of ``drops`` keeps the scheduler's rules
        (checked once): one that breaks them is no candidate, as when the
        scheduler refuses it (``schedule_forest``'s own check)."""
        key = frozenset(drops)
        found = tried[key]
        if found is not None and key not in checked:
            checked.add(key)
            if check_schedule(found[0], found[1].schedule):
                tried[key] = found = None
        return found is not None

    def drop_greedily(values: bool) -> GuardedSchedule:
        guarded = GuardedSchedule(forest, result, current, unbatched, current)
        drops: list[Cut] = []
        model = forest
        while guarded.scheduled_peak > unbatched:
            remaining = _loops(model)
            if not remaining:
                break
            best: tuple[int, Forest, ScheduleResult, Cut] | None = None
            if len(guarded.dropped) < MAX_DROPS:
                top = peak(lifetimes(model, guarded.result.schedule, sizing))
                candidates = _tree_candidates(model, top)[:CANDIDATES]
                if values:
                    candidates = _value_candidates(model, top)[:CANDIDATES] + candidates
                for candidate in candidates:
                    found = trial([*drops, candidate])
                    if (
                        found is not None
                        and (best is None or found[2] < best[0])
                        and sound([*drops, candidate])
                    ):
                        best = (found[2], found[0], found[1], candidate)
            if best is None or best[0] >= guarded.scheduled_peak:
                # nothing local helps: drop every remaining loop and evaluate
                # as the unbatched forest does (its schedule, its peak)
                plain_forest = without_loops(forest, [*drops, *remaining], fresh_roles)
                plain = ScheduleResult(
                    unbatched_schedule(plain_forest, sizing, residual), {}, Decisions()
                )
                for tree, space in sorted(remaining):
                    guarded.dropped.append(
                        _dropped(
                            model,
                            Cut(space, tree=tree),
                            guarded.scheduled_peak,
                            unbatched,
                            unbatched,
                        )
                    )
                model, guarded.result = plain_forest, plain
                guarded.scheduled_peak = unbatched
                break
            trial_peak, model_after, trial_result, candidate = best
            guarded.dropped.append(
                _dropped(
                    model, candidate, guarded.scheduled_peak, trial_peak, unbatched
                )
            )
            drops.append(candidate)
            model, guarded.result = model_after, trial_result
            guarded.scheduled_peak = trial_peak
        guarded.forest = model
        return guarded

    trees_only = drop_greedily(values=False)
    if not value_drops:
        return trees_only
    mixed = drop_greedily(values=True)
    # the smaller peak, then fewer dropped groups; the finer drops on a tie
    if (mixed.scheduled_peak, len(mixed.dropped)) <= (
        trees_only.scheduled_peak,
        len(trees_only.dropped),
    ):
        return mixed
    return trees_only


def _loops(forest: Forest) -> set[tuple[int, str]]:
    return {(site.tree, loop.space) for site in forest.sites for loop in site.loops}


def _largest_live(top: Peak) -> list[str]:
    """The values live at the peak, largest object first, each once."""
    found: dict[str, None] = {}
    for life in sorted(top.live, key=lambda life: -life.bytes):
        found.setdefault(life.value, None)
    return list(found)


def _tree_candidates(forest: Forest, top: Peak) -> list[Cut]:
    """(tree, space) pairs whose loops enclose what is live at the peak,
    the trees of the largest live objects first."""
    found: dict[tuple[int, str], None] = {}
    for value in _largest_live(top):
        for site in forest.sites:
            if site.value == value:
                for loop in site.loops:
                    found.setdefault((site.tree, loop.space), None)
    return [Cut(space, tree=tree) for tree, space in found]


def _value_candidates(forest: Forest, top: Peak) -> list[Cut]:
    """(value, space) pairs: the built values live at the peak, largest
    object first, with each space of the loops around their use-sites."""
    sites_of: dict[str, list[int]] = {}
    for number, site in enumerate(forest.sites):
        sites_of.setdefault(site.value, []).append(number)
    found: dict[tuple[str, str], None] = {}
    for value in _largest_live(top):
        if value not in forest.values or forest.values[value].is_input:
            continue  # the residual, or a caller's input
        for number in sites_of.get(value, []):
            for loop in forest.sites[number].loops:
                found.setdefault((value, loop.space), None)
    return [Cut(space, value=value) for value, space in found]


def _dropped(
    forest: Forest, cut: Cut, before: int, after: int, unbatched: int
) -> DroppedLoop:
    """The report's entry for ``cut``, dropped from ``forest`` (the forest
    before the drop): the loop labels it removes, both peaks."""
    if cut.value is None:
        sites = [site for site in forest.sites if site.tree == cut.tree]
        tree = cut.tree
    else:
        numbers = sorted(_below_values(forest, [cut]))
        sites = [forest.sites[number] for number in numbers]
        tree = next(s.tree for s in forest.sites if s.value == cut.value)
    labels: dict[str, None] = {}
    for site in sites:
        for loop in site.loops:
            if loop.space == cut.space:
                labels.setdefault(loop.label.full_label, None)
    assert tree is not None
    return DroppedLoop(
        forest.trees[tree].name,
        cut.space,
        tuple(labels),
        before,
        after,
        unbatched,
        cut.kind,
        cut.value,
    )
