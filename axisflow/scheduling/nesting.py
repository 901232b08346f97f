"""Loop nests of the trees: the order of each tree's batch loops, and which
loops of different trees are one physical loop (pure logic, no xDSL).

The frontend gives a tree one batch loop per index of a batched space, all
around its root, nested in order of first appearance, and fuses the k-th
loop of a space across all trees. Both are decisions, and both decide the
memory of a schedule:

* **Order.** A value is built once per block of the loops that enclose it
  and bind one of its modes; a loop that binds none of them is hoisted above
  it (never rebuilt per iteration: that recomputation is not free). A value
  is therefore sliced only by the loops its consumer shares with it *as a
  prefix of both nests*: the loops before the first one that only one of the
  two needs. ``best_order`` chooses, per tree, the order whose largest stored
  value is smallest (then the smallest total), by local search over
  insertions from a sensible start (the tree's externals first, then the
  indices summed nearer the root). Trees that are the same up to renaming get
  the same answer once (``TreeShape.key``).
* **Fusion.** Loops of different trees that are one instance run in the same
  passes, trees interleaved. That is what lets one value serve several trees
  a block at a time (its modes bound by the same instances at every
  reader), and it is also what keeps the buffers of unrelated trees live side
  by side. ``LoopClasses`` makes loops one instance only when asked to (a
  shared value's modes at two readers), keeping one label per tree in each
  instance and an order of instances that every tree's nest agrees with.
"""

from __future__ import annotations

import functools
import heapq
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from axisflow.forest.model import Forest, Loop, Site
from axisflow.roles.index import Index

TreeLabel = tuple[int, Index]
"""A batch loop of a tree: (tree number, its label there)."""


# --------------------------------------------------------------------------
# One tree's nest
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Edge:
    """A stored value and its consumer, in bit masks over the tree's labels."""

    producer: int
    """Labels of the producer's node (its modes and the modes summed there)."""
    consumer: int
    """Labels of the consumer's node (all of the tree's externals for a root)."""
    sizes: tuple[tuple[int, int], ...]
    """(label bit or 0, extent) per mode of the producer: the bit of a mode
    bound by a batch label, 0 for a mode no loop can bind."""
    elem: int


@dataclass(frozen=True)
class TreeShape:
    """What the order of one tree's loops decides: its labels and edges."""

    labels: tuple[Index, ...]
    edges: tuple[_Edge, ...]
    key: tuple[object, ...]
    """Equal for trees equal up to renaming (same answer)."""
    start: tuple[int, ...]
    """The starting order (positions into ``labels``)."""
    children: tuple[tuple[int, ...], ...] = ()
    """Per edge (built value), the edges of its built factors."""
    sites: tuple[int, ...] = ()
    """Per edge, its use-site's number."""

    def peak(self, stored: Sequence[int], hoisted: Sequence[bool] = ()) -> int:
        """The smallest peak of evaluating the tree depth-first, each value
        stored at ``stored[edge]`` bytes: a value's factors one after the
        other (the better order, unless one is ``hoisted``: built outside a
        loop of its consumer, it comes first), the first one's storage live
        while the second is evaluated, both with the value's own while it
        is built. (Edge 0 is the root.)"""
        return _subtree_peak(self.children, stored, 0, hoisted) if self.edges else 0

    def cost(self, order: Sequence[int]) -> tuple[int, int]:
        """(largest stored value, total stored) in bytes under ``order``."""
        place = self.places(order)
        worst = total = 0
        for number in range(len(self.edges)):
            size = self.stored(number, place.__getitem__, len(order))
            if size > worst:
                worst = size
            total += size
        return worst, total

    def places(self, order: Sequence[int]) -> list[int]:
        """Each label's position in ``order`` (``len(order)`` for a label
        not in it: it is never first)."""
        place = [len(order)] * len(self.labels)
        for position, label in enumerate(order):
            place[label] = position
        return place

    def stored(self, number: int, place: Callable[[int], int], end: int) -> int:
        """The stored bytes of edge ``number``'s value when each label stands
        at ``place(label)`` (``end``: not in the order). A value is sliced by
        the labels it shares with its consumer that come before the first
        label only one of the two has: one look per label of the value, not
        a walk of the order (the local search asks this for every move)."""
        both, one_side = self._sides[number]
        first = end
        for label in one_side:
            where = place(label)
            if where < first:
                first = where
        common = 0
        for label in both:
            if place(label) < first:
                common |= 1 << label
        key = (number, common)
        size = self._sizes.get(key)
        if size is None:
            size = self._sizes[key] = _stored(self.edges[number], common)
        return size

    @functools.cached_property
    def _sides(self) -> tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]:
        """Per edge, the labels both sides have and those only its producer
        or only its consumer has (their numbers)."""
        labels = range(len(self.labels))
        return tuple(
            (
                tuple(
                    label
                    for label in labels
                    if (edge.producer & edge.consumer) >> label & 1
                ),
                tuple(
                    label
                    for label in labels
                    if (edge.producer ^ edge.consumer) >> label & 1
                ),
            )
            for edge in self.edges
        )

    @functools.cached_property
    def _sizes(self) -> dict[tuple[int, int], int]:
        """Stored bytes per (edge, labels slicing it), as ``stored`` meets them."""
        return {}

    @functools.cached_property
    def fixed_by(self) -> tuple[tuple[int, ...], ...]:
        """Per label, the edges whose stored size placing it fixes: one of
        the edge's nodes has it, the other not."""
        found: list[list[int]] = [[] for _ in self.labels]
        for number, (_, one_side) in enumerate(self._sides):
            for label in one_side:
                found[label].append(number)
        return tuple(tuple(edges) for edges in found)

    @functools.cached_property
    def edges_of(self) -> tuple[tuple[int, ...], ...]:
        """Per label, the edges whose value has it (on either side)."""
        found: list[list[int]] = [[] for _ in self.labels]
        for number, (both, one_side) in enumerate(self._sides):
            for label in (*both, *one_side):
                found[label].append(number)
        return tuple(tuple(edges) for edges in found)


def tree_shape(
    forest: Forest,
    tree: int,
    spaces: Iterable[str],
    extent: Callable[[Index], int],
    elem: Callable[[str], int],
) -> TreeShape:
    """The shape of ``tree``'s nest problem: its batch labels (of
    ``spaces``) and, per built value, its modes and its consumer's labels.
    ``extent(mode)`` sizes a mode, ``elem(value)`` gives bytes per element.
    A root's consumer is the residual: its piece is added where it is built,
    so only its result labels count there."""
    spaces = set(spaces)
    root = forest.trees[tree].root
    if root is None:
        return TreeShape((), (), (), (), (), ())
    sites: list[Site] = []
    stack = [root]
    while stack:
        site = forest.sites[stack.pop()]
        if forest.values[site.value].is_input:
            continue
        sites.append(site)
        stack.extend(reversed(site.children))
    # labels in canonical order: first appearance in pre-order (the key
    # then does not depend on how the term was written)
    labels: dict[Index, int] = {}
    summed_depth: dict[Index, int] = {}
    depth: dict[int, int] = {}
    for site in sites:
        depth[site.number] = 0 if site.parent is None else depth[site.parent] + 1
        value = forest.values[site.value]
        for mode in value.node_modes:
            label = site.mode_labels[mode]
            if label.base_key in spaces:
                labels.setdefault(label, len(labels))
        for mode in value.summed_modes:
            label = site.mode_labels[mode]
            summed_depth.setdefault(label, depth[site.number])
    edges: list[_Edge] = []
    key: list[object] = []
    position_of = {site.number: k for k, site in enumerate(sites)}
    children = tuple(
        tuple(position_of[c] for c in site.children if c in position_of)
        for site in sites
    )

    def mask(values: Iterable[Index]) -> int:
        bits = 0
        for label in values:
            position = labels.get(label)
            if position is not None:
                bits |= 1 << position
        return bits

    for site in sites:
        value = forest.values[site.value]
        node = mask(site.mode_labels[m] for m in value.node_modes)
        if site.parent is None:
            consumer = node  # added into the residual block by block
        else:
            parent = forest.sites[site.parent]
            parent_value = forest.values[parent.value]
            consumer = mask(parent.mode_labels[m] for m in parent_value.node_modes)
        sizes = tuple((mask([site.mode_labels[m]]), extent(m)) for m in value.modes)
        edge = _Edge(node, consumer, sizes, elem(value.name))
        edges.append(edge)
        key.append(
            (node, consumer, tuple(sorted(sizes)), edge.elem, children[len(edges) - 1])
        )
    ordered = tuple(sorted(labels, key=labels.__getitem__))
    externals = mask(
        forest.sites[root].mode_labels[m]
        for m in forest.values[forest.sites[root].value].modes
    )
    start = tuple(
        sorted(
            range(len(ordered)),
            key=lambda p: (
                0 if externals >> p & 1 else 1,
                summed_depth.get(ordered[p], 0),
                p,
            ),
        )
    )
    return TreeShape(
        ordered,
        tuple(edges),
        tuple(key),
        start,
        children,
        tuple(s.number for s in sites),
    )


def _subtree_peak(
    children: Sequence[Sequence[int]],
    stored: Sequence[int],
    edge: int,
    hoisted: Sequence[bool] = (),
) -> int:
    inner = children[edge]
    own = stored[edge]
    if not inner:
        return own
    if len(inner) == 1:
        (only,) = inner
        return max(_subtree_peak(children, stored, only, hoisted), stored[only] + own)
    first, second = inner[0], inner[1]
    peak_first = _subtree_peak(children, stored, first, hoisted)
    peak_second = _subtree_peak(children, stored, second, hoisted)
    both = stored[first] + stored[second] + own
    first_then = max(peak_first, stored[first] + peak_second)
    second_then = max(peak_second, stored[second] + peak_first)
    if hoisted:
        # a factor built outside some loop of the consumer exists before
        # that loop starts, so before a factor built inside it
        if hoisted[first] and not hoisted[second]:
            return max(both, first_then)
        if hoisted[second] and not hoisted[first]:
            return max(both, second_then)
    return max(both, min(first_then, second_then))


EXACT_LABELS = 14
"""Trees with at most this many batch labels get the exact order of the
largest stored value (dynamic programming over the sets of outer labels,
2^n states); larger ones a local search."""


def best_order(shape: TreeShape) -> tuple[int, ...]:
    """A loop order of ``shape`` with the smallest (largest stored value,
    total stored). Positions into ``shape.labels``.

    Exact for up to ``EXACT_LABELS`` labels: an edge's stored size is fixed
    the moment its first label that only one of its two nodes has is
    placed (the labels placed before it that both have slice it), so the
    cost of an order is a sum (and a maximum) over the steps of adding one
    label to the set of those placed; a dynamic program over those sets
    finds the smallest largest value, then the smallest total among the
    orders that keep it."""
    count = len(shape.labels)
    if count > EXACT_LABELS:
        return _local_order(shape)
    full = (1 << count) - 1
    breaking: list[list[int]] = [[] for _ in range(count)]
    fixed_worst = fixed_total = 0
    for number, edge in enumerate(shape.edges):
        differ = edge.producer ^ edge.consumer
        if not differ:
            size = _stored(edge, edge.producer & edge.consumer)
            fixed_worst = max(fixed_worst, size)
            fixed_total += size
            continue
        for label in range(count):
            if differ >> label & 1:
                breaking[label].append(number)
    memo: dict[tuple[int, int], int] = {}

    def step(placed: int, label: int) -> tuple[int, int]:
        """(largest, total) of the edges that break when ``label`` follows
        the set ``placed``."""
        worst = total = 0
        for number in breaking[label]:
            edge = shape.edges[number]
            if (edge.producer ^ edge.consumer) & placed:
                continue  # broken earlier
            common = placed & edge.producer & edge.consumer
            size = memo.get((number, common))
            if size is None:
                size = memo[(number, common)] = _stored(edge, common)
            worst = max(worst, size)
            total += size
        return worst, total

    worst_of = [0] * (full + 1)
    for placed in range(1, full + 1):
        best = None
        bits = placed
        while bits:
            low = bits & -bits
            bits ^= low
            label = low.bit_length() - 1
            before = placed ^ low
            found = max(worst_of[before], step(before, label)[0])
            if best is None or found < best:
                best = found
        worst_of[placed] = best or 0
    limit = max(worst_of[full], fixed_worst)
    total_of: list[int | None] = [None] * (full + 1)
    last: list[int] = [-1] * (full + 1)
    total_of[0] = 0
    for placed in range(1, full + 1):
        best_total: int | None = None
        bits = placed
        while bits:
            low = bits & -bits
            bits ^= low
            label = low.bit_length() - 1
            before = placed ^ low
            previous = total_of[before]
            if previous is None:
                continue
            worst, total = step(before, label)
            if worst > limit:
                continue
            candidate = previous + total
            if best_total is None or candidate < best_total:
                best_total, last[placed] = candidate, label
        total_of[placed] = best_total
    order: list[int] = []
    placed = full
    while placed:
        label = last[placed]
        order.append(label)
        placed ^= 1 << label
    return tuple(reversed(order))


def candidate_orders(shape: TreeShape, count: int = 4) -> list[tuple[int, ...]]:
    """Up to ``count`` loop orders worth scheduling: the one of the
    smallest largest stored value (``best_order``), then the best by
    ``TreeShape.peak`` (``_least_peak``)."""
    start = best_order(shape)
    found = [start]
    for order in _least_peak(shape, start, count):
        if order not in found:
            found.append(order)
    return found[:count]


SEARCH_NODES = 20_000
"""Bound on the branch and bound of ``_least_peak`` per tree shape."""


def _stored_all(shape: TreeShape, order: Sequence[int]) -> list[int]:
    return _storage(shape, order)[0]


def _storage(shape: TreeShape, order: Sequence[int]) -> tuple[list[int], list[bool]]:
    """Per edge: the bytes stored under ``order`` and whether the value is
    built outside some loop of its consumer."""
    stored: list[int] = []
    hoisted: list[bool] = []
    for edge in shape.edges:
        both = edge.producer & edge.consumer
        either = edge.producer | edge.consumer
        common = 0
        for position in order:
            bit = 1 << position
            if not either & bit:
                continue
            if not both & bit:
                break
            common |= bit
        stored.append(_stored(edge, common))
        hoisted.append(common != edge.consumer)
    return stored, hoisted


def _least_peak(
    shape: TreeShape, start: tuple[int, ...], keep: int
) -> list[tuple[int, ...]]:
    """The ``keep`` loop orders with the smallest ``shape.peak`` found by a
    branch and bound from ``start`` (within ``SEARCH_NODES`` expansions: an
    edge's size is known once a label only one of its nodes has is placed;
    unknown edges count 0, which bounds the peak from below), best first."""
    import heapq

    count = len(shape.labels)
    kept: list[tuple[int, int, tuple[int, ...]]] = []  # (-peak, tie, order)
    ties = [0]

    def offer(found: int, order: tuple[int, ...]) -> None:
        ties[0] += 1
        item = (-found, -ties[0], order)
        if len(kept) < keep:
            heapq.heappush(kept, item)
        elif item > kept[0]:
            heapq.heapreplace(kept, item)

    def bound() -> int:
        return -kept[0][0] if len(kept) >= keep else 1 << 400

    offer(shape.peak(*_storage(shape, start)), start)
    edges = shape.edges
    stored = [0] * len(edges)
    hoisted = [False] * len(edges)
    known = [False] * len(edges)
    seen: set[tuple[int, tuple[int, ...], tuple[bool, ...]]] = set()
    budget = [SEARCH_NODES]
    prefix: list[int] = []
    fixed_by = shape.fixed_by

    def search(placed: int) -> None:
        if budget[0] <= 0:
            return
        budget[0] -= 1
        if placed == (1 << count) - 1:
            final = list(stored)
            for number, edge in enumerate(edges):
                if not known[number]:
                    final[number] = _stored(edge, edge.producer & edge.consumer)
            order = tuple(prefix)
            if order != start:
                offer(shape.peak(final, hoisted), order)
            return
        state = (placed, tuple(stored), tuple(hoisted))
        if state in seen:
            return
        seen.add(state)
        if shape.peak(stored, hoisted) >= bound():
            return
        for label in range(count):
            if budget[0] <= 0:
                return  # the expansions left would return at once
            bit = 1 << label
            if placed & bit:
                continue
            fixed = []
            for number in fixed_by[label]:
                if not known[number]:
                    edge = edges[number]
                    known[number] = True
                    common = placed & edge.producer & edge.consumer
                    stored[number] = _stored(edge, common)
                    hoisted[number] = common != edge.consumer
                    fixed.append(number)
            prefix.append(label)
            search(placed | bit)
            prefix.pop()
            for number in fixed:
                known[number] = False
                stored[number] = 0
                hoisted[number] = False

    search(0)
    return [order for _, _, order in sorted(kept, reverse=True)]


def _stored(edge: _Edge, common: int) -> int:
    size = edge.elem
    for bit, extent in edge.sizes:
        if not bit & common:
            size *= extent
    return size


def _local_order(shape: TreeShape) -> tuple[int, ...]:
    """First-improvement local search over single moves (take one label
    out, insert it elsewhere) from ``shape.start``.

    A value's storage depends only on the order of its own labels, so a
    move changes only the values whose node has the moved label: each trial
    rescores those (``_Moves``) instead of the whole tree, and gives the
    same (largest, total) ``shape.cost`` would."""
    order = list(shape.start)
    moves = _Moves(shape, order)
    best = moves.cost()
    improved = True
    while improved:
        improved = False
        for source in range(len(order)):
            for target in range(len(order)):
                if source == target:
                    continue
                cost = moves.trial(source, target)
                if cost < best:
                    best, improved = cost, True
                    order.insert(target, order.pop(source))
                    moves.accept()
    return tuple(order)


class _Moves:
    """The stored bytes of each value under the current order, and the
    cost of moving one label (``_local_order``)."""

    def __init__(self, shape: TreeShape, order: list[int]) -> None:
        self.shape = shape
        self.order = order
        self.place = shape.places(order)
        self.sizes = [
            shape.stored(number, self.place.__getitem__, len(order))
            for number in range(len(shape.edges))
        ]
        self.total = sum(self.sizes)
        self.others: dict[int, int] = {}
        """Per label, the largest stored value among those without it."""
        self.last: tuple[int, list[int]] = (-1, [])
        """The label the last trial moved and the new sizes of its values."""

    def cost(self) -> tuple[int, int]:
        return max(self.sizes, default=0), self.total

    def trial(self, source: int, target: int) -> tuple[int, int]:
        """The cost of moving the label at ``source`` to ``target``."""
        moved = self.order[source]
        place = self.place
        low, high = min(source, target), max(source, target)
        shift = -1 if source < target else 1

        def moved_place(label: int) -> int:
            if label == moved:
                return target
            where = place[label]
            return where + shift if low <= where <= high else where

        touched = self.shape.edges_of[moved]
        end = len(self.order)
        sizes = [self.shape.stored(number, moved_place, end) for number in touched]
        self.last = (moved, sizes)
        total = self.total - sum(self.sizes[n] for n in touched) + sum(sizes)
        others = self.others.get(moved)
        if others is None:
            mine = set(touched)
            others = self.others[moved] = max(
                (size for n, size in enumerate(self.sizes) if n not in mine),
                default=0,
            )
        return max(others, max(sizes, default=0)), total

    def accept(self) -> None:
        """The move last tried is made: ``self.order`` (the caller's list)
        has been changed to it."""
        moved, sizes = self.last
        for number, size in zip(self.shape.edges_of[moved], sizes, strict=True):
            self.total += size - self.sizes[number]
            self.sizes[number] = size
        self.place = self.shape.places(self.order)
        self.others.clear()


def tree_orders(
    forest: Forest,
    spaces: Iterable[str],
    extent: Callable[[Index], int],
    elem: Callable[[str], int],
    choose: Callable[[int, Sequence[tuple[Index, ...]]], tuple[Index, ...]]
    | None = None,
) -> tuple[dict[int, tuple[Index, ...]], dict[int, int]]:
    """Every tree's loop order (labels, outermost first), and, for each
    use-site with two built factors, the factor's use-site to evaluate first
    (the order ``TreeShape.peak`` assumes). ``choose(tree, candidates)``
    picks among ``candidate_orders`` (default: the first); trees equal up to
    renaming are solved once."""
    spaces = tuple(spaces)
    solved: dict[tuple[object, ...], tuple[int, ...]] = {}
    orders: dict[int, tuple[Index, ...]] = {}
    first: dict[int, int] = {}
    for tree in range(len(forest.trees)):
        shape = tree_shape(forest, tree, spaces, extent, elem)
        order = solved.get(shape.key)
        if order is None:
            candidates = candidate_orders(shape)
            if choose is not None and len(candidates) > 1:
                labelled = [tuple(shape.labels[p] for p in c) for c in candidates]
                picked = choose(tree, labelled)
                order = candidates[labelled.index(picked)]
            else:
                order = candidates[0]
            solved[shape.key] = order
        orders[tree] = tuple(shape.labels[p] for p in order)
        stored, hoisted = _storage(shape, order)
        for edge, inner in enumerate(shape.children):
            if len(inner) != 2:
                continue
            a, b = inner
            pa = _subtree_peak(shape.children, stored, a, hoisted)
            pb = _subtree_peak(shape.children, stored, b, hoisted)
            if hoisted[a] != hoisted[b]:
                a_first = hoisted[a]
            else:
                a_first = max(pa, stored[a] + pb) <= max(pb, stored[b] + pa)
            first[shape.sites[edge]] = shape.sites[a if a_first else b]
    return orders, first


# --------------------------------------------------------------------------
# Fusion across trees
# --------------------------------------------------------------------------


class LoopClasses:
    """Loops of different trees made one instance (a union-find over
    (tree, label)), keeping each tree's order.

    A class holds at most one label per tree, and the classes have an order
    that every tree's nest follows (a tree's loops in its order are classes
    in increasing order), so fused loops nest the same way in every tree.
    Unions can be undone (``mark``, ``undo``) for trial shares.
    """

    def __init__(self, orders: Mapping[int, Sequence[Index]]) -> None:
        self.orders = {tree: tuple(order) for tree, order in orders.items()}
        self.parent: dict[TreeLabel, TreeLabel] = {}
        self.members: dict[TreeLabel, dict[int, Index]] = {}
        self._next: dict[TreeLabel, TreeLabel] = {}
        for tree, order in self.orders.items():
            for position, label in enumerate(order):
                node = (tree, label)
                self.parent[node] = node
                self.members[node] = {tree: label}
                if position + 1 < len(order):
                    self._next[node] = (tree, order[position + 1])
        self._log: list[
            tuple[TreeLabel, TreeLabel, dict[int, Index]]
            | tuple[int, tuple[Index, ...]]
        ] = []

    def __contains__(self, node: TreeLabel) -> bool:
        return node in self.parent

    def find(self, node: TreeLabel) -> TreeLabel:
        """The class of a tree's loop (no path compression: unions are
        undone by resetting one parent)."""
        while self.parent[node] != node:
            node = self.parent[node]
        return node

    def signature(self, trees: set[int]) -> frozenset[frozenset[TreeLabel]]:
        """The fused classes among ``trees``' loops (members of the same
        class, within those trees), whatever their roots: equal for equal
        fusion of those trees."""
        found: dict[TreeLabel, set[TreeLabel]] = {}
        for tree in trees:
            for label in self.orders.get(tree, ()):
                node = (tree, label)
                found.setdefault(self.find(node), set()).add(node)
        return frozenset(frozenset(m) for m in found.values() if len(m) > 1)

    def mark(self) -> int:
        """A point to ``undo`` back to."""
        return len(self._log)

    def undo(self, mark: int) -> None:
        """Undo the unions and reorders made since ``mark``."""
        while len(self._log) > mark:
            entry = self._log.pop()
            if len(entry) == 2:
                tree, order = entry
                self._set_order(tree, order)
                continue
            into, other, before = entry
            self.parent[other] = other
            self.members[other] = {
                tree: label
                for tree, label in self.members[into].items()
                if before.get(tree) != label
            }
            self.members[into] = before

    def _set_order(self, tree: int, order: tuple[Index, ...]) -> None:
        self.orders[tree] = order
        for position, label in enumerate(order):
            node = (tree, label)
            if position + 1 < len(order):
                self._next[node] = (tree, order[position + 1])
            else:
                self._next.pop(node, None)

    def union_aligning(
        self,
        pairs: Sequence[tuple[TreeLabel, TreeLabel]],
        acceptable: Callable[[int, tuple[Index, ...]], bool] | None = None,
    ) -> bool:
        """``union``; when only the trees' orders stand in the way, the
        second tree of the pairs first nests their labels in the order the
        first tree does (its other loops where they were), if
        ``acceptable(tree, new_order)``, then ``union``. Nothing changes on
        failure."""
        if self.union(pairs):
            return True
        trees = {first[0] for first, _ in pairs} | {other[0] for _, other in pairs}
        if len(trees) != 2 or not pairs:
            return False
        leader = pairs[0][0][0]
        follower = next(t for t in trees if t != leader)
        position = {label: k for k, label in enumerate(self.orders[leader])}
        partner: dict[Index, int] = {}
        for first, other in pairs:
            ours, theirs = (first, other) if first[0] == leader else (other, first)
            partner[theirs[1]] = position[ours[1]]
        old = self.orders[follower]
        slots = [k for k, label in enumerate(old) if label in partner]
        moved = sorted(
            (label for label in old if label in partner), key=partner.__getitem__
        )
        new = list(old)
        for slot, label in zip(slots, moved, strict=True):
            new[slot] = label
        if tuple(new) == old or (
            acceptable is not None and not acceptable(follower, tuple(new))
        ):
            return False
        start = self.mark()
        self._log.append((follower, old))
        self._set_order(follower, tuple(new))
        if self._acyclic() and self.union(pairs):
            return True
        self.undo(start)
        return False

    def _acyclic(self) -> bool:
        """Whether the classes keep an order every tree's nest follows."""
        waiting: dict[TreeLabel, int] = dict.fromkeys(self.members, 0)
        successors = {root: self._successors(root) for root in self.members}
        for found in successors.values():
            for successor in found:
                waiting[successor] += 1
        ready = [root for root, count in waiting.items() if not count]
        seen = 0
        while ready:
            root = ready.pop()
            seen += 1
            for successor in successors[root]:
                waiting[successor] -= 1
                if not waiting[successor]:
                    ready.append(successor)
        return seen == len(self.members)

    def union(self, pairs: Iterable[tuple[TreeLabel, TreeLabel]]) -> bool:
        """Make every pair one instance, or change nothing and return
        ``False`` when that would put two labels of one tree in a class or
        leave no order of instances that every tree's nest follows."""
        start = self.mark()
        merged: set[TreeLabel] = set()
        for first, second in pairs:
            a, b = self.find(first), self.find(second)
            if a == b:
                continue
            into, other = self.members[a], self.members[b]
            if any(into.get(tree, label) != label for tree, label in other.items()):
                self.undo(start)
                return False
            self._log.append((a, b, dict(into)))
            self.parent[b] = a
            into.update(other)
            del self.members[b]
            merged.discard(b)
            merged.add(a)
        if any(self._on_cycle(root) for root in merged if self.find(root) == root):
            self.undo(start)
            return False
        return True

    def _successors(self, root: TreeLabel) -> set[TreeLabel]:
        found: set[TreeLabel] = set()
        for tree, label in self.members[root].items():
            following = self._next.get((tree, label))
            if following is not None:
                found.add(self.find(following))
        return found

    def _on_cycle(self, root: TreeLabel) -> bool:
        """Whether the class ``root`` follows itself in some tree's nest
        (through other classes)."""
        seen: set[TreeLabel] = set()
        stack = list(self._successors(root))
        while stack:
            current = stack.pop()
            if current == root:
                return True
            if current in seen:
                continue
            seen.add(current)
            stack.extend(self._successors(current))
        return False

    def instances(self) -> dict[TreeLabel, int]:
        """Each tree's loop -> its instance number (classes numbered in an
        order every tree's nest follows; ties by first appearance, trees in
        order)."""
        waiting: dict[TreeLabel, int] = dict.fromkeys(self.members, 0)
        first_seen: dict[TreeLabel, int] = {}
        successors: dict[TreeLabel, set[TreeLabel]] = {}
        for tree in sorted(self.orders):
            for label in self.orders[tree]:
                first_seen.setdefault(self.find((tree, label)), len(first_seen))
        for root in self.members:
            successors[root] = self._successors(root)
            for successor in successors[root]:
                waiting[successor] += 1
        ready = [(first_seen[r], r) for r in self.members if not waiting[r]]
        heapq.heapify(ready)
        number: dict[TreeLabel, int] = {}
        while ready:
            _, root = heapq.heappop(ready)
            number[root] = len(number)
            for successor in successors[root]:
                waiting[successor] -= 1
                if not waiting[successor]:
                    heapq.heappush(ready, (first_seen[successor], successor))
        assert len(number) == len(self.members), "the classes always keep an order"
        return {node: number[self.find(node)] for node in self.parent}


def with_nests(
    forest: Forest,
    orders: Mapping[int, Sequence[Index]],
    instance: Callable[[int, Index], int],
    tree_order: Sequence[int] | None = None,
    *,
    finish: bool = True,
) -> Forest:
    """A new forest whose tree ``t`` runs the loops ``orders[t]`` (outermost
    first, all around its root, each the instance ``instance(t, label)`` and
    its fusion slot), its trees in ``tree_order`` (default: as they are).
    Values are shared with ``forest``; roles are not computed;
    ``finish=False`` leaves ``Forest.finish`` to the caller."""
    order = list(range(len(forest.trees))) if tree_order is None else list(tree_order)
    position = {tree: k for k, tree in enumerate(order)}
    nests: dict[int, tuple[Loop, ...]] = {}
    for tree in range(len(forest.trees)):
        loops = []
        for label in orders.get(tree, ()):
            number = instance(tree, label)
            loops.append(Loop(number, label, number))
        nests[tree] = tuple(loops)
    sites: list[Site] = []
    for site in forest.sites:
        clone = site.clone()
        clone.tree = position[site.tree]
        clone.loops = nests[site.tree]
        clone.mode_labels = {}
        sites.append(clone)
    nested = Forest(
        forest.name,
        dict(forest.spaces),
        forest.values,
        [forest.trees[tree] for tree in order],
        sites,
        has_slots=True,
    )
    return nested.finish() if finish else nested
