"""Whole-forest planning: which use-sites share a value, how every tree nests
its loops, which trees run fused, priced against memory (pure logic).

The frontend shares every contraction that several terms build (CSE across
the forest) and gives each tree all its loops in order of first appearance,
fused across trees by depth. Neither is what a budget asks for: a value two
trees share is sliced by a loop only when both readers run under that loop
in the same pass, and a loop that binds none of a value's modes either
hoists the value (whole) or rebuilds it every iteration (multiply-adds). The
planner treats it as one search over plans that never rebuild a value inside
a loop (the scheduler's ``rebuild="never"``), so that the multiply-adds are
the forest's own and every saving is a share; then, where that is not
enough, it prices rebuilds inside one loop (step 4):

1. **Nests.** Every tree, every use-site its own value, gets the loop order
   that keeps its storage smallest: a few orders are proposed by
   ``nesting.candidate_orders`` and the one whose tree, scheduled on its own,
   stores the least is kept. The tree's loops are its own instances.
2. **Shares, priced.** From there (the most multiply-adds, the smallest
   peak) the use-sites of each value are shared back, largest saving first.
   A share is *fused* when its two subtrees' loops can be one instance each
   (``nesting.LoopClasses``): the value is then built once per block for
   both readers. Otherwise it is *whole*: built once, kept whole (a buffer)
   until its last reader. Either way the two trees join one *cluster*,
   whose trees run next to each other. With a memory budget, a share is kept
   only when its cluster, scheduled on its own with the residual counted
   live, stays within it; the whole plan is checked at the end and the
   shares whose values are live at a peak above the budget are given up (a
   few rounds). A budget out of reach (the plan stays above it) is run
   again at the peak reached: the shares given up chasing it are priced
   anew, so the smallest peak comes at its own price.
3. **Points and the front.** Each run is a plan with its peak and
   multiply-adds (``memory.schedule_flops``: what the schedule performs).
   Besides the runs for the budgets asked for, the search adds the frontend's
   own two schedules (values shared, and rebuilt per tree, the scheduler's
   default rules, recomputation counted) so that the front is never worse
   than what the pipeline did before. The non-dominated points are the
   Pareto front; the objective picks one of them.
4. **Rebuilds inside a loop, priced** (``_Search.refine``). When no plan
   reaches the budget (without one: as far as the multiply-add limit
   allows), the point chosen is lowered further: a value stored whole
   where the plan is above the budget is sliced by a loop of its own moved
   outermost in the trees that run that loop, in ``REBUILD_BLOCKS``
   blocks, and every value that loop does not bind is rebuilt in each
   block (the scheduler's ``rebuild_at`` and ``loop_blocks``): the
   cheapest such move, estimated by the rebuilds' multiply-adds, that
   leaves fewer program positions above the budget. On the doubles at
   full extents this takes the smallest peak from 77.05 GiB (1.040x, one
   whole 38.28 GiB value beside the residual in three places) to 76.88
   GiB (1.046x).
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import dataclasses
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

from axisflow.forest.model import Forest, Loop, Site
from axisflow.forest.roles import classify
from axisflow.forest.sharing import rebuild_per_tree, regroup
from axisflow.residual import OperatorGroup, ResidualLayout
from axisflow.roles.index import Index
from axisflow.scheduling.memory import (
    Lifetime,
    Sizing,
    forest_flops,
    lifetimes,
    live_curve,
    peak,
    schedule_flops,
)
from axisflow.scheduling.nesting import (
    LoopClasses,
    TreeLabel,
    tree_orders,
    tree_shape,
    with_nests,
)
from axisflow.scheduling.options import Rebuild, ShareChoice
from axisflow.scheduling.schedule import Item, LoopPass, Schedule, loop_extents
from axisflow.scheduling.scheduler import (
    ScheduleResult,
    SchedulingError,
    schedule_forest,
)

PointKind = Literal["planned", "shared", "per-tree"]

TINY_SHARE = 10_000
"""Shares saving at most this fraction (1/N) of the shared forest's
multiply-adds are not checked one by one (a schedule each costs more than
they save): they are taken whole when their value is small, and the whole
plan is checked."""
MAX_EVALUATIONS = 1500
"""Forests the search schedules before it checks nothing more one by one
(``plan_shared_forest``; a count, where a time made the plan depend on the
machine's load). The searches of ``benchmarks/bench_planner.py`` (the
bundled equations at full extents) schedule at most 918; at the small
default extents, where every share saves enough to be checked one by one,
the doubles' search over ``i`` scheduled 2,075 and its front more than
1,893 (cut by the minute the search had then)."""
SMALL_BESIDE_BUDGET = 1000
"""A share not checked one by one is taken (whole) only when its value is
at most this fraction (1/N) of the budget."""


class PlanningError(ValueError):
    """A budget or option the planner cannot read."""


@dataclass(frozen=True)
class Share:
    """Two use-sites of one value of the shared forest made one build."""

    saving: int
    """Multiply-adds the share saves (the subtree built once less)."""
    first: int
    other: int


@dataclass
class PlanPoint:
    """One plan: its forest (classified), schedule and figures."""

    kind: PointKind
    """``planned`` (a run of the search), ``shared`` or ``per-tree`` (the
    frontend's forest, values shared or rebuilt per tree, scheduled by the
    default rules)."""
    forest: Forest
    residual: ResidualLayout | None
    result: ScheduleResult
    peak: int
    flops: int
    shares: int = 0
    budget: int | None = None
    """The memory budget the run searched for (``None``: none)."""
    rebuild_at: dict[str, int] = field(default_factory=dict[str, int])
    """Values rebuilt every iteration of one loop instance (``refine``)."""
    loop_blocks: dict[int, int] = field(default_factory=dict[int, int])
    """Blocks of the loops values are rebuilt in (``refine``)."""


@dataclass
class SearchResult:
    """The plans found, the Pareto front and the chosen one."""

    chosen: PlanPoint
    points: list[PlanPoint]
    front: list[PlanPoint]
    shared_flops: int
    """Multiply-adds of the shared forest, each value once: the reference
    of ``max_extra_flops``."""
    seconds: float = 0.0
    evaluations: int = 0
    notes: list[str] = field(default_factory=list[str])


def permute_layout(
    layout: ResidualLayout | None, position: Mapping[int, int]
) -> ResidualLayout | None:
    """``layout`` with its terms renumbered (``position[old] = new``) for a
    forest whose trees were reordered or restricted; terms missing from
    ``position`` leave their groups."""
    if layout is None:
        return None
    groups = tuple(
        OperatorGroup(
            group.operators,
            tuple(sorted(position[t] for t in group.terms if t in position)),
        )
        for group in layout.groups
    )
    return ResidualLayout(layout.indices, layout.modes, groups)


@dataclass(frozen=True)
class _Part:
    """A forest restricted to some trees, and how its numbers map back."""

    forest: Forest
    origin: tuple[int, ...]
    """Site number here -> site number in the whole forest."""
    trees: tuple[int, ...]
    """Tree number here -> tree number in the whole forest."""


def _own_instances(order: Sequence[Index]) -> Callable[[int, Index], int]:
    """Loop instances numbered by their position in ``order`` (one tree)."""
    position = {label: k for k, label in enumerate(order)}
    return lambda _tree, label: position[label]


class _Trees:
    """A union-find over trees: the clusters that run next to each other."""

    def __init__(self, count: int) -> None:
        self.parent = list(range(count))

    def root(self, tree: int) -> int:
        """The first tree of ``tree``'s cluster."""
        while self.parent[tree] != tree:
            tree = self.parent[tree]
        return tree

    def join(self, first: int, other: int) -> None:
        """One cluster of two roots."""
        if first != other:
            self.parent[max(first, other)] = min(first, other)


def _restrict(forest: Forest, trees: set[int]) -> _Part:
    """The sub-forest of ``trees``: their use-sites renumbered, the values
    they use. Not finished: every caller regroups it, which reads only the
    sites' values and children, and finishes the forest it makes."""
    keep = [site for site in forest.sites if site.tree in trees]
    number = {site.number: k for k, site in enumerate(keep)}
    tree_list = tuple(sorted(trees))
    tree_number = {t: k for k, t in enumerate(tree_list)}
    sites: list[Site] = []
    for site in keep:
        clone = site.clone()
        clone.number = number[site.number]
        clone.tree = tree_number[site.tree]
        clone.parent = None if site.parent is None else number[site.parent]
        clone.children = tuple(number[c] for c in site.children)
        clone.mode_labels = {}
        sites.append(clone)
    trees_out = []
    for t in tree_list:
        tree = copy.copy(forest.trees[t])
        tree.root = None if tree.root is None else number[tree.root]
        trees_out.append(tree)
    used = {site.value for site in keep}
    restricted = Forest(
        forest.name,
        dict(forest.spaces),
        {n: v for n, v in forest.values.items() if n in used},
        trees_out,
        sites,
        has_slots=forest.has_slots,
    )
    return _Part(restricted, tuple(site.number for site in keep), tree_list)


class _Search:
    """What every run over one shared forest has in common."""

    def __init__(
        self,
        shared: Forest,
        residual: ResidualLayout | None,
        extents: Mapping[str, int] | None,
        block: int | Mapping[str, int],
        max_rounds: int,
        choose_loop_blocks: bool = True,
    ) -> None:
        self.shared = shared
        self.choose_loop_blocks = choose_loop_blocks
        """Whether ``refine`` sets the block of a loop it rebuilds values in
        (else ``block`` prices them)."""
        self.residual = residual
        self.extents = extents
        self.block = block
        self.max_rounds = max_rounds
        self.sizing = Sizing(shared, extents)
        self.residual_bytes = (
            0 if residual is None else self.sizing.mode_bytes(residual.modes)
        )
        self.cluster_peaks: dict[object, int] = {}
        self.evaluations = 0
        self._everything: PlanPoint | None = None
        self.spaces = sorted(
            {loop.space for site in shared.sites for loop in site.loops}
        )
        self.shapes = {
            tree: tree_shape(
                shared,
                tree,
                self.spaces,
                self.sizing.mode_extent,
                lambda name: self.sizing.elem(shared.values[name]),
            )
            for tree in range(len(shared.trees))
        }
        self.orders, self.first_factor = tree_orders(
            shared,
            self.spaces,
            self.sizing.mode_extent,
            lambda name: self.sizing.elem(shared.values[name]),
            self._choose_order,
        )
        self.shares = self._shares()
        self.tiny = forest_flops(shared, self.sizing) // TINY_SHARE

    # -- scheduling ----------------------------------------------------------

    def schedule(
        self,
        forest: Forest,
        residual: ResidualLayout | None,
        rebuild: Literal["fused", "never"] = "never",
        check: bool = True,
        rebuild_at: Mapping[str, int] | None = None,
        loop_blocks: Mapping[int, int] | None = None,
    ) -> ScheduleResult:
        """Schedule a classified forest (``SchedulingError`` if it cannot);
        ``check=False`` for a trial the search does not keep."""
        self.evaluations += 1
        return schedule_forest(
            forest,
            block=self.block,
            max_rounds=self.max_rounds,
            sizes=Sizing(forest, self.extents),
            residual=residual,
            rebuild=rebuild,
            check=check,
            rebuild_at=rebuild_at,
            loop_blocks=loop_blocks,
        )

    def objects_peak(
        self, forest: Forest, residual: ResidualLayout | None
    ) -> int | None:
        """The peak of a forest's own objects (the residual left out), or
        ``None`` if it cannot be scheduled."""
        try:
            result = self.schedule(forest, residual, check=False)
        except SchedulingError:
            return None
        objects = [
            life
            for life in lifetimes(forest, result.schedule, Sizing(forest, self.extents))
            if life.kind not in ("residual", "operator")
        ]
        return peak(objects).bytes

    def _no_worse(self, tree: int, order: tuple[Index, ...]) -> bool:
        """Whether ``order`` stores no more than the tree's chosen order (its
        largest stored value, then the total, by ``TreeShape.cost``)."""
        shape = self.shapes[tree]
        position = {label: k for k, label in enumerate(shape.labels)}
        chosen = [position[label] for label in self.orders[tree]]
        trial = [position[label] for label in order]
        return shape.cost(trial) <= shape.cost(chosen)

    def _choose_order(
        self, tree: int, candidates: Sequence[tuple[Index, ...]]
    ) -> tuple[Index, ...]:
        """The candidate loop order whose tree, every use-site its own value,
        scheduled on its own (adding into the residual), stores the least."""
        part = _restrict(self.shared, {tree})
        one = regroup(part.forest, lambda site: site.number)
        residual = permute_layout(self.residual, {tree: 0})
        best: tuple[int, tuple[Index, ...]] | None = None
        for order in candidates:
            nested = with_nests(one, {0: order}, _own_instances(order))
            classify(nested)
            found = self.objects_peak(nested, residual)
            if found is not None and (best is None or found < best[0]):
                best = (found, order)
        return candidates[0] if best is None else best[1]

    # -- shares --------------------------------------------------------------

    def _shares(self) -> list[Share]:
        """Every pair (first use-site, another) of each built value's
        use-sites, largest saving first; shares saving less than a millionth
        of the forest are left out of the priced search (they cost nothing
        worth a schedule and are taken whole at the end when the budget
        allows)."""
        forest = self.shared
        subtree: dict[int, int] = {}
        for site in reversed(forest.sites):
            subtree[site.number] = self.sizing.flops(forest.values[site.value]) + sum(
                subtree[child] for child in site.children
            )
        by_value: dict[str, list[int]] = {}
        for site in forest.sites:
            if not forest.values[site.value].is_input:
                by_value.setdefault(site.value, []).append(site.number)
        shares = [
            Share(subtree[other], sites[0], other)
            for sites in by_value.values()
            for other in sites[1:]
        ]
        shares.sort(key=lambda s: (-s.saving, s.first, s.other))
        return shares

    def pairs(
        self, share: Share
    ) -> tuple[list[tuple[TreeLabel, TreeLabel]], list[tuple[int, int]]]:
        """The loops a share makes one instance (pairs of tree loops) and the
        use-site pairs it makes one build (the two subtrees)."""
        forest = self.shared
        labels: list[tuple[TreeLabel, TreeLabel]] = []
        sites: list[tuple[int, int]] = []
        stack = [(share.first, share.other)]
        while stack:
            a, b = stack.pop()
            first, other = forest.sites[a], forest.sites[b]
            value = forest.values[first.value]
            if value.is_input:
                continue
            sites.append((a, b))
            for mode in value.node_modes:
                la, lb = first.mode_labels[mode], other.mode_labels[mode]
                if la.base_key in self.spaces:
                    labels.append(((first.tree, la), (other.tree, lb)))
            stack.extend(zip(first.children, other.children, strict=True))
        return labels, sites

    # -- building a plan -------------------------------------------------------

    def build(
        self,
        classes: LoopClasses,
        site_pairs: Sequence[tuple[int, int]],
        cluster: Mapping[int, int] | Sequence[int],
        trees: set[int] | None = None,
    ) -> tuple[Forest, ResidualLayout | None]:
        """The planned forest of ``trees`` (default all): shared use-sites
        one value, each tree's loops in its order, fused loops one
        instance, a cluster's trees (``cluster[t]``: its first tree) next to
        each other; classified, with its residual."""
        parent: dict[int, int] = {}

        def find(site: int) -> int:
            while parent.get(site, site) != site:
                site = parent[site]
            return site

        for a, b in site_pairs:
            ra, rb = find(a), find(b)
            if ra != rb:
                parent[max(ra, rb)] = min(ra, rb)
        if trees is None:
            part = _Part(
                self.shared,
                tuple(range(len(self.shared.sites))),
                tuple(range(len(self.shared.trees))),
            )
        else:
            part = _restrict(self.shared, trees)
        origin = part.origin
        grouped = regroup(
            part.forest, lambda site: find(origin[site.number]), finish=False
        )
        instance = classes.instances()
        order = sorted(
            range(len(grouped.trees)),
            key=lambda t: (cluster[part.trees[t]], part.trees[t]),
        )
        planned = with_nests(
            grouped,
            {t: classes.orders[part.trees[t]] for t in range(len(grouped.trees))},
            lambda t, label: instance[(part.trees[t], label)],
            order,
            finish=False,
        )
        planned = self._factors_first(planned, origin).finish()
        classify(planned)
        position = {part.trees[old]: new for new, old in enumerate(order)}
        return planned, permute_layout(self.residual, position)

    def _factors_first(self, forest: Forest, origin: Sequence[int]) -> Forest:
        """``forest`` with each value's factors in the order that keeps its
        tree's storage smallest (``nesting.tree_orders``' choice for its
        first use-site; a contraction does not depend on the order of its
        two factors), so that the scheduler, which evaluates factors in
        order, follows it. ``forest``: as ``with_nests(..., finish=False)``
        makes it (use-sites of its own, not finished), changed in place
        (copying its use-sites again cost a tenth of a build)."""
        swap: set[str] = set()
        decided: set[str] = set()
        for site in forest.sites:
            if site.value in decided or len(site.children) != 2:
                continue
            decided.add(site.value)
            first = self.first_factor.get(origin[site.number])
            if first is not None and first == origin[site.children[1]]:
                swap.add(site.value)
        if not swap:
            return forest
        values = dict(forest.values)
        for name in swap:
            value = values[name]
            values[name] = dataclasses.replace(
                value,
                factors=value.factors[::-1],
                modes=(),
                node_modes=(),
                factor_maps=(),
            )
        for site in forest.sites:
            if site.value in swap:
                site.children = site.children[::-1]
        forest.values = values  # the dict with_nests shares stays as it was
        return forest

    def cluster_peak(
        self,
        classes: LoopClasses,
        site_pairs: Sequence[tuple[int, int]],
        trees: Sequence[int],
    ) -> int:
        """The peak of ``trees`` run on their own, the residual live all
        along (as it is for every cluster but the first)."""
        inside = set(trees)
        key = (
            tuple(sorted(inside)),
            tuple(
                sorted(p for p in site_pairs if self.shared.sites[p[0]].tree in inside)
            ),
            classes.signature(inside),
        )
        found = self.cluster_peaks.get(key)
        if found is None:
            cluster = dict.fromkeys(inside, min(inside))
            forest, residual = self.build(classes, site_pairs, cluster, inside)
            objects = self.objects_peak(forest, residual)
            found = 1 << 400 if objects is None else objects + self.residual_bytes
            self.cluster_peaks[key] = found
        return found

    # -- one run -------------------------------------------------------------

    def run(self, budget: int | None, until: int) -> PlanPoint:
        """Share what keeps the plan within ``budget`` (everything when
        ``None``), largest saving first; then check the whole plan and, while
        it is above the budget, give up the shares live at its peak (those
        not checked one by one first, then the smallest savings)."""
        if budget is not None:
            # the plan sharing everything it can costs one schedule: when it
            # fits, nothing is left to price
            everything = self.everything()
            if everything.peak <= budget:
                return dataclasses.replace(everything, budget=budget)
        rejected: set[Share] = set()
        point: PlanPoint | None = None
        count = len(self.shared.trees)
        for _ in range(6):
            classes = LoopClasses(self.orders)
            joined = _Trees(count)
            root = joined.root
            site_pairs: list[tuple[int, int]] = []
            accepted: list[Share] = []
            unchecked: set[Share] = set()
            for share in self.shares:
                if share in rejected:
                    continue
                labels, sites = self.pairs(share)
                first = root(self.shared.sites[share.first].tree)
                other = root(self.shared.sites[share.other].tree)
                if budget is not None and (
                    share.saving <= self.tiny or self.evaluations >= until
                ):
                    # not worth a schedule: taken whole (no loops fused:
                    # fusing would interleave whole trees) when its value is
                    # small beside the budget
                    value = self.shared.values[self.shared.sites[share.first].value]
                    if self.sizing.full_bytes(value) * SMALL_BESIDE_BUDGET > budget:
                        continue
                    unchecked.add(share)
                else:
                    state = classes.mark()
                    fused = classes.union_aligning(labels, self._no_worse)
                    if budget is not None:
                        cluster = [t for t in range(count) if root(t) in (first, other)]
                        trial = [*site_pairs, *sites]
                        if self.cluster_peak(classes, trial, cluster) > budget:
                            if not fused:
                                continue
                            classes.undo(state)  # try it whole: the value
                            # is then stored whole beside the residual
                            whole = self.residual_bytes + self.sizing.full_bytes(
                                self.shared.values[self.shared.sites[share.first].value]
                            )
                            if whole > budget or (
                                self.cluster_peak(classes, trial, cluster) > budget
                            ):
                                continue
                joined.join(first, other)
                site_pairs.extend(sites)
                accepted.append(share)
            cluster = [root(t) for t in range(count)]
            forest, residual = self.build(classes, site_pairs, cluster)
            result = self.schedule(forest, residual)
            sizing = Sizing(forest, self.extents)
            found = lifetimes(forest, result.schedule, sizing)
            top = peak(found)
            point = PlanPoint(
                "planned",
                forest,
                residual,
                result,
                top.bytes,
                schedule_flops(forest, result.schedule, sizing),
                len(accepted),
                budget,
            )
            if budget is None or top.bytes <= budget:
                return point
            live = {life.value for life in top.live}
            culprits = [
                share for share in accepted if forest.sites[share.first].value in live
            ]
            if not culprits:
                return point
            first_unchecked = [share for share in culprits if share in unchecked]
            if first_unchecked:
                rejected.update(first_unchecked)
            else:
                rejected.add(min(culprits, key=lambda share: share.saving))
        assert point is not None
        return point

    def run_tight(self, budget: int, until: int) -> list[PlanPoint]:
        """``run(budget)``, and when its plan is above ``budget`` (nothing
        fits), ``run`` again at that plan's peak: the shares given up to
        chase a budget out of reach are priced again against the peak
        reached, so the smallest peak comes at the fewest multiply-adds
        found for it (on the doubles at full extents, 77.05 GiB at 1.040x
        the shared forest's multiply-adds instead of 1.097x). Both points,
        the better last."""
        first = self.run(budget, until)
        if first.peak <= budget or self.evaluations >= until:
            return [first]
        again = self.run(first.peak, until)
        if (again.peak, again.flops) < (first.peak, first.flops):
            return [first, again]
        return [again, first]

    # -- rebuilds inside a loop, priced ------------------------------------

    def refine(
        self,
        point: PlanPoint,
        budget: int | None,
        limit: int,
        until: int,
    ) -> PlanPoint:
        """``point`` with its peak lowered by rebuilds inside loops: while it
        is above ``budget`` (without one: for as long as its peak goes
        down), a value stored whole at the over-budget positions is sliced
        by one loop of its own moved outermost in the trees that run it,
        every value that loop does not bind rebuilt in each of its
        ``REBUILD_BLOCKS`` blocks (``rebuild_at``), the cheapest such move
        that makes fewer positions exceed the level taken first, within
        ``limit`` multiply-adds. ``point`` itself when nothing helps."""
        current = point
        for _ in range(MAX_REFINEMENTS):
            if budget is not None and current.peak <= budget:
                break
            if self.evaluations >= until:
                break
            level = current.peak - 1 if budget is None else budget
            better = self._refine_once(current, level, limit, until)
            if better is None:
                break
            current = better
        return current

    def _refine_once(
        self, point: PlanPoint, level: int, limit: int, until: int
    ) -> PlanPoint | None:
        forest = point.forest
        sizing = Sizing(forest, self.extents)
        found = lifetimes(forest, point.result.schedule, sizing)
        above = _positions_above(found, level)
        if not above:
            return None
        whole = sorted(
            (
                life
                for life in found
                if life.kind in ("value", "buffer")
                and life.depth == 0
                and life.value in forest.values
                and _overlaps(above, life.start, life.end)
            ),
            key=lambda life: (-life.bytes, life.value),
        )
        users: dict[int, set[int]] = {}
        for site in forest.sites:
            for loop in site.loops:
                users.setdefault(loop.instance, set()).add(site.tree)
        extents = loop_extents(point.result.schedule, sizing.mode_extent, sizing.extent)
        tried: set[str] = set()
        for life in whole[:REFINED_VALUES]:
            if life.value in tried:
                continue
            tried.add(life.value)
            candidates = sorted(
                self._rebuild_moves(forest, life.value, users, extents, sizing),
                key=lambda move: (move[0], move[1]),
            )
            for cost, instance, trees, rebuilt, block in candidates[:REFINED_MOVES]:
                if point.flops + cost > limit or self.evaluations >= until:
                    break
                trial = _loop_first(forest, trees, instance)
                rebuild_at = {**point.rebuild_at, **dict.fromkeys(rebuilt, instance)}
                loop_blocks = {**point.loop_blocks, instance: block}
                try:
                    result = self.schedule(
                        trial,
                        point.residual,
                        check=False,
                        rebuild_at=rebuild_at,
                        loop_blocks=loop_blocks,
                    )
                except SchedulingError:
                    continue
                trial_sizing = Sizing(trial, self.extents)
                trial_found = lifetimes(trial, result.schedule, trial_sizing)
                top = peak(trial_found)
                flops = schedule_flops(trial, result.schedule, trial_sizing)
                if (
                    flops > limit
                    or top.bytes > point.peak
                    or len(_positions_above(trial_found, level)) >= len(above)
                ):
                    continue
                return dataclasses.replace(
                    point,
                    forest=trial,
                    result=result,
                    peak=top.bytes,
                    flops=flops,
                    rebuild_at=rebuild_at,
                    loop_blocks=loop_blocks,
                )
        return None

    def _rebuild_moves(
        self,
        forest: Forest,
        value: str,
        users: Mapping[int, set[int]],
        extents: Mapping[int, int],
        sizing: Sizing,
    ) -> list[tuple[int, int, frozenset[int], tuple[str, ...], int]]:
        """The moves that slice ``value`` by a loop of its own: (estimated
        multiply-adds added, loop instance, the trees it moves outermost
        in, the values rebuilt in it, its block). A move is left out when a
        loop enclosing it is shared with a tree it does not enclose (the
        nests would disagree) or a value to rebuild is read outside them."""
        moves: list[tuple[int, int, frozenset[int], tuple[str, ...], int]] = []
        sites_of = forest.sites_of()
        sites = sites_of.get(value, [])
        if not sites:
            return moves
        site = sites[0]
        modes = set(forest.values[value].modes)
        bound = {label for mode, label in site.mode_labels.items() if mode in modes}
        for loop in site.loops:
            if extents.get(loop.instance, REBUILD_BLOCKS) < REBUILD_BLOCKS:
                continue  # one element: no block to halve
            if loop.label not in bound:
                continue
            instance = loop.instance
            trees = frozenset(users.get(instance, ()))
            if not self._nests_agree(forest, trees, instance, users):
                continue
            rebuilt: dict[str, None] = {}
            outside = False
            for other in forest.sites:
                if other.tree not in trees:
                    continue
                built = forest.values[other.value]
                if built.is_input:
                    continue
                mine = next((lp for lp in other.loops if lp.instance == instance), None)
                if mine is None or mine.label in other.mode_labels.values():
                    continue
                rebuilt[other.value] = None
            for name in rebuilt:
                if any(s.tree not in trees for s in sites_of[name]):
                    outside = True
                    break
            if outside:
                continue
            extent = extents.get(instance, sizing.extent(loop.space))
            if self.choose_loop_blocks:
                block = -(-extent // REBUILD_BLOCKS)
            elif isinstance(self.block, int):
                block = self.block
            else:
                block = self.block.get(loop.space, 1)
            count = -(-extent // block)
            cost = sum(sizing.flops(forest.values[n]) for n in rebuilt) * (count - 1)
            moves.append((cost, instance, trees, tuple(rebuilt), block))
        return moves

    def _nests_agree(
        self,
        forest: Forest,
        trees: frozenset[int],
        instance: int,
        users: Mapping[int, set[int]],
    ) -> bool:
        """Whether every loop enclosing ``instance`` in ``trees`` runs in
        those trees only (moving ``instance`` outermost there then keeps
        one nest per loop)."""
        for tree in trees:
            root = forest.trees[tree].root
            if root is None:
                continue
            for loop in forest.sites[root].loops:
                if loop.instance == instance:
                    break
                if not users.get(loop.instance, set()) <= trees:
                    return False
        return True

    def everything(self) -> PlanPoint:
        """The plan that takes every share (``run(None)``), made once."""
        if self._everything is None:
            self._everything = self.run(None, 0)
        return self._everything

    def frontend_point(self, kind: Literal["shared", "per-tree"]) -> PlanPoint:
        """The frontend's forest (values shared, or rebuilt per tree) under
        the scheduler's default rules, its recomputation counted."""
        forest = self.shared if kind == "shared" else rebuild_per_tree(self.shared)
        forest = copy.copy(forest)
        forest.roles = {}
        classify(forest)
        result = self.schedule(forest, self.residual, rebuild="fused")
        sizing = Sizing(forest, self.extents)
        return PlanPoint(
            kind,
            forest,
            self.residual,
            result,
            peak(lifetimes(forest, result.schedule, sizing)).bytes,
            schedule_flops(forest, result.schedule, sizing),
        )


def plan_shared_forest(
    shared: Forest,
    residual: ResidualLayout | None,
    *,
    extents: Mapping[str, int] | None = None,
    block: int | Mapping[str, int] = 1,
    max_rounds: int = 16,
    budget: int | None = None,
    max_extra_flops: Fraction | float | None = None,
    front: bool = False,
    max_evaluations: int = MAX_EVALUATIONS,
    rebuild_in_loops: bool = True,
    choose_loop_blocks: bool = True,
) -> SearchResult:
    """Plan ``shared`` (the frontend's forest, values shared): the fewest
    multiply-adds within ``budget`` bytes, or the smallest peak within
    ``max_extra_flops`` (a fraction: 0.05 for 5%) of the shared forest's
    multiply-adds (each value once), or, with neither, the smallest peak
    within ``DEFAULT_EXTRA_FLOPS``. ``front``: also search the Pareto front
    (runs for budgets from the smallest peak up). Once the search has
    scheduled ``max_evaluations`` forests, it checks nothing more one by
    one (the result stays valid): a count, not a time, so that the plan is
    the same on any machine under any load.
    ``rebuild_in_loops=False`` leaves out the frontend's schedules (values
    rebuilt inside loops) and the priced rebuilds inside a loop
    (``_Search.refine``): every point then schedules under the scheduler's
    default rules, as ``schedule-batches`` does for the forest printed.
    ``choose_loop_blocks``: a loop values are rebuilt in runs
    ``REBUILD_BLOCKS`` blocks (else ``block``'s, which the user set)."""
    started = time.monotonic()
    if (
        isinstance(max_evaluations, bool)
        or not isinstance(max_evaluations, int)
        or max_evaluations < 0
    ):
        raise PlanningError(
            f"max_evaluations must be a non-negative integer, got {max_evaluations!r}"
        )
    search = _Search(shared, residual, extents, block, max_rounds, choose_loop_blocks)
    shared_flops = forest_flops(shared, search.sizing)
    points: list[PlanPoint] = []
    if budget is not None:
        found = search.run_tight(budget, max_evaluations)
        points.extend(found)
        within = found[-1]
        if within.peak <= budget and not front:
            chosen = choose(points, shared_flops, budget, max_extra_flops)
            return SearchResult(
                chosen,
                points,
                pareto(points),
                shared_flops,
                time.monotonic() - started,
                search.evaluations,
            )
    for kind in ("shared", "per-tree") if rebuild_in_loops else ():
        with contextlib.suppress(SchedulingError):
            points.append(search.frontend_point(kind))
    found = search.run_tight(search.residual_bytes or 1, max_evaluations)
    points.extend(found)
    least = found[-1]
    if front or budget is None:
        everything = search.everything()
        points.append(everything)
        extra = (
            DEFAULT_EXTRA_FLOPS
            if max_extra_flops is None
            else Fraction(max_extra_flops)
        )
        limit = shared_flops * (1 + extra)
        level = low = least.peak
        high: int | None = None  # the smallest level found within the limit
        while level < everything.peak and search.evaluations < max_evaluations:
            level = min(level * 3 // 2 + 1, everything.peak)
            found = search.run(level, max_evaluations)
            points.append(found)
            if found.flops <= limit:
                high = level
                if not front:
                    break
            elif high is None:
                low = level
        if budget is None and least.flops > limit:
            # narrow the smallest peak within the limit down (bisecting the
            # budgets between the last level above it and the first within)
            top = everything.peak if high is None else high
            for _ in range(BISECTIONS):
                if top - low <= low // 100 or search.evaluations >= max_evaluations:
                    break
                middle = (low + top) // 2
                found = search.run(middle, max_evaluations)
                points.append(found)
                if found.flops <= limit:
                    top = middle
                else:
                    low = middle
    if rebuild_in_loops:
        refined = _refined(search, points, budget, max_extra_flops, max_evaluations)
        if refined is not None:
            points.append(refined)
    chosen = choose(points, shared_flops, budget, max_extra_flops)
    return SearchResult(
        chosen,
        points,
        pareto(points),
        shared_flops,
        time.monotonic() - started,
        search.evaluations,
    )


def _refined(
    search: _Search,
    points: Sequence[PlanPoint],
    budget: int | None,
    max_extra_flops: Fraction | float | None,
    until: int,
) -> PlanPoint | None:
    """The point the objective would choose, its peak lowered by rebuilds
    inside loops (``_Search.refine``) when no point fits ``budget`` (or,
    without one, as far as ``max_extra_flops`` allows); ``None`` when
    nothing is lowered."""
    shared_flops = forest_flops(search.shared, search.sizing)
    extra = (
        DEFAULT_EXTRA_FLOPS if max_extra_flops is None else Fraction(max_extra_flops)
    )
    limit = int(shared_flops * (1 + extra))
    if budget is not None and any(p.peak <= budget for p in points):
        return None
    start = choose(points, shared_flops, budget, max_extra_flops)
    if start.kind != "planned" or start.flops > limit:
        return None
    refined = search.refine(start, budget, limit, until)
    return None if refined is start else refined


MAX_REFINEMENTS = 12
"""Rebuild moves ``_Search.refine`` makes at most (one per stored value it
slices)."""
REFINED_VALUES = 4
"""Values stored whole at the over-budget positions tried per move, largest
first."""
REFINED_MOVES = 3
"""Moves tried per value, cheapest estimate first."""
REBUILD_BLOCKS = 2
"""Blocks of a loop values are rebuilt in, when the planner chooses blocks:
each block rebuilds them once more, and two already halve what that loop
slices."""


def _positions_above(found: Sequence[Lifetime], level: int) -> list[int]:
    """The program positions where more than ``level`` bytes are live."""
    return [p for p, live in enumerate(live_curve(found)) if live > level]


def _overlaps(positions: Sequence[int], start: int, end: int) -> bool:
    """Whether the sorted ``positions`` hold one in ``[start, end]``."""
    index = bisect.bisect_left(positions, start)
    return index < len(positions) and positions[index] <= end


def _loop_first(forest: Forest, trees: frozenset[int], instance: int) -> Forest:
    """``forest`` with loop ``instance`` moved outermost at every use-site of
    ``trees`` it encloses, classified anew (the forest is not changed)."""
    moved = copy.copy(forest)
    moved.sites = list(forest.sites)
    reordered: dict[int, tuple[Loop, ...]] = {}
    for number, site in enumerate(forest.sites):
        if site.tree not in trees:
            continue
        loops = reordered.get(id(site.loops))
        if loops is None:
            first = [loop for loop in site.loops if loop.instance == instance]
            if not first:
                continue
            loops = (
                *first,
                *(loop for loop in site.loops if loop.instance != instance),
            )
            reordered[id(site.loops)] = loops
        clone = site.clone()
        clone.loops = loops
        moved.sites[number] = clone
    moved.roles = {}
    classify(moved)
    return moved


BISECTIONS = 5
"""Runs spent narrowing the smallest peak within a multiply-add limit down
(to within 1% of the budget levels)."""

DEFAULT_EXTRA_FLOPS = Fraction(1, 10)
"""With no objective given: the smallest peak within 10% more multiply-adds
than the shared forest."""


def choose(
    points: Sequence[PlanPoint],
    shared_flops: int,
    budget: int | None,
    max_extra_flops: Fraction | float | None,
) -> PlanPoint:
    """The point the objective asks for: the fewest multiply-adds within
    ``budget`` (the smallest peak when none fits), else the smallest peak
    within ``max_extra_flops`` (default ``DEFAULT_EXTRA_FLOPS``; the fewest
    multiply-adds when none fits)."""
    if budget is not None:
        fitting = [p for p in points if p.peak <= budget]
        if fitting:
            return min(fitting, key=lambda p: (p.flops, p.peak))
        return min(points, key=lambda p: (p.peak, p.flops))
    extra = (
        DEFAULT_EXTRA_FLOPS if max_extra_flops is None else Fraction(max_extra_flops)
    )
    limit = shared_flops * (1 + extra)
    fitting = [p for p in points if p.flops <= limit]
    if fitting:
        return min(fitting, key=lambda p: (p.peak, p.flops))
    return min(points, key=lambda p: (p.flops, p.peak))


def pareto(points: Sequence[PlanPoint]) -> list[PlanPoint]:
    """The points no other point beats in both peak and multiply-adds,
    by increasing peak (one per (peak, multiply-adds))."""
    front: list[PlanPoint] = []
    for point in sorted(points, key=lambda p: (p.peak, p.flops)):
        if not front or point.flops < front[-1].flops:
            if front and point.peak == front[-1].peak:
                continue
            front.append(point)
    return front


# --------------------------------------------------------------------------
# Blocks
# --------------------------------------------------------------------------

BLOCK_SLACK = Fraction(1, 10)
"""Without a memory budget, blocks grow while the peak stays within this
fraction above the plan's peak at blocks of one element."""


def _with_blocks(
    items: Sequence[Item], blocks: Mapping[str, int], keep: Collection[int] = ()
) -> list[Item]:
    """``items`` with every loop pass running blocks of ``blocks[space]``,
    but the loop instances in ``keep``."""
    out: list[Item] = []
    for item in items:
        if isinstance(item, LoopPass):
            out.append(
                LoopPass(
                    item.instance,
                    item.space,
                    item.number,
                    item.block
                    if item.instance in keep
                    else blocks.get(item.space, item.block),
                    _with_blocks(item.body, blocks, keep),
                )
            )
        else:
            out.append(item)
    return out


def choose_blocks(
    forest: Forest,
    schedule: Schedule,
    target: int,
    extents: Mapping[str, int] | None = None,
    keep: Collection[int] = (),
) -> dict[str, int]:
    """The largest block per loop space (round robin, doubling then
    bisecting) that keeps the schedule's peak at most ``target`` bytes; a
    space whose single-element blocks already exceed it keeps blocks of 1.
    The loop instances in ``keep`` keep their blocks (``loop_blocks``)."""
    sizing = Sizing(forest, extents)
    loops = loop_extents(schedule, sizing.mode_extent, sizing.extent)
    spaces: dict[str, int] = {}
    for item, _ in schedule.walk():
        if isinstance(item, LoopPass):
            spaces[item.space] = max(spaces.get(item.space, 1), loops[item.instance])
    blocks = dict.fromkeys(spaces, 1)

    def fits(trial: Mapping[str, int]) -> bool:
        resized = Schedule(_with_blocks(schedule.items, trial, keep), schedule.rounds)
        return peak(lifetimes(forest, resized, sizing)).bytes <= target

    if not spaces or not fits(blocks):
        return blocks
    for _ in range(2):
        for space in sorted(spaces):
            largest = spaces[space]
            low = blocks[space]
            high = low
            while high < largest and fits({**blocks, space: min(high * 2, largest)}):
                high = min(high * 2, largest)
            low, top = high, min(high * 2, largest)
            while top - low > max(1, low // 8):  # within an eighth
                middle = (low + top) // 2
                if fits({**blocks, space: middle}):
                    low = middle
                else:
                    top = middle
            blocks[space] = low
    return blocks


# --------------------------------------------------------------------------
# From a sharing choice to the forest to schedule
# --------------------------------------------------------------------------


@dataclass
class Planned:
    """The forest a sharing choice schedules, and how."""

    forest: Forest
    """Classified."""
    residual: ResidualLayout | None
    """Its residual layout (terms numbered as its trees)."""
    rebuild: Rebuild
    share: Literal["forest", "tree", "planned"]
    search: SearchResult | None = None
    """The search behind ``share="auto"``."""
    rebuild_at: dict[str, int] = field(default_factory=dict[str, int])
    """Values rebuilt in every block of one loop instance (the scheduler's
    ``rebuild_at``)."""
    loop_blocks: dict[int, int] = field(default_factory=dict[int, int])
    """Blocks of those loops (the scheduler's ``loop_blocks``)."""


def plan_sharing(
    shared: Forest,
    residual: ResidualLayout | None,
    share: ShareChoice,
    *,
    extents: Mapping[str, int] | None = None,
    block: int | Mapping[str, int] = 1,
    max_rounds: int = 16,
    budget: int | None = None,
    max_extra_flops: Fraction | None = None,
    front: bool = False,
    rebuild_in_loops: bool = True,
    choose_loop_blocks: bool = True,
) -> Planned:
    """The forest ``share`` asks for: the frontend's (``forest``), rebuilt
    per tree (``tree``), or the search's choice for the objective (``auto``,
    ``plan_shared_forest``). The shared forest is not changed."""
    if share == "forest":
        forest = copy.copy(shared)
        forest.roles = {}
        classify(forest)
        return Planned(forest, residual, "never", "forest")
    if share == "tree":
        forest = rebuild_per_tree(shared)
        classify(forest)
        return Planned(forest, residual, "never", "tree")
    search = plan_shared_forest(
        shared,
        residual,
        extents=extents,
        block=block,
        max_rounds=max_rounds,
        budget=budget,
        max_extra_flops=max_extra_flops,
        front=front,
        rebuild_in_loops=rebuild_in_loops,
        choose_loop_blocks=choose_loop_blocks,
    )
    chosen = search.chosen
    if chosen.kind == "planned":
        return Planned(
            chosen.forest,
            chosen.residual,
            "never",
            "planned",
            search,
            dict(chosen.rebuild_at),
            dict(chosen.loop_blocks),
        )
    how: Literal["forest", "tree"] = "forest" if chosen.kind == "shared" else "tree"
    return Planned(chosen.forest, chosen.residual, "fused", how, search)
