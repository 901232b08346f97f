"""The contraction order of one product: which pairs to contract, and when.

Pure Python, no xDSL. A product is a list of *leaves* (the tensors of a
term, each by the indices it carries) and its *externals* (the indices of
its result). A plan binarizes it: a sequence of pairwise contractions in SSA
form (leaf ``k`` is node ``k``; step ``s`` makes node ``len(leaves) + s``).

Cost model (the memory model's convention, see ``axisflow.order.extents``):

* the *modes* of a tensor are its indices and their protos at any depth
  (``axisflow.forest.frames.expand_modes``): a composite ``a_1<i_1,i_2>`` is a mode of its own and
  ``i_1``, ``i_2`` are modes too;
* the value of a set of leaves keeps the modes of those leaves that a leaf
  outside the set still has, or that the result has; every other mode is
  summed at the node that completes the set. A single leaf keeps all of its
  modes;
* a pairwise contraction costs the product of the extents of the union of
  its two operands' modes (multiply-adds; an outer product is the size of
  its result, a Hadamard mode counts once);
* the size of a value is the product of the extents of its modes, or what
  ``Costs.size`` says (the hook for sizes under batch loops); the *peak* of
  a plan is its largest intermediate (leaves are inputs and not counted).

Orders (``plan_product``):

* ``file``: the written order, folded left to right, ``((t1*t2)*t3)*...``.
* ``flops``: fewest multiply-adds. Exact dynamic programming over subsets of
  operands and all their two-way splits (bushy trees included, as SeQuant's
  ``opt::single_term_opt``). Up to ``EXACT_ALL_MAX`` operands every split is
  tried, outer products included, so the plan is optimal among all
  binarizations. Up to ``CONNECTED_MAX`` operands only connected subsets and
  splits into two connected halves are tried (the csg-cmp pairs of
  Moerkotte and Neumann's DPccp: SeQuant's outer-product pruning, and
  ``opt_einsum``'s default), each connected component on its own and the
  components joined by the all-splits search; this is optimal among plans
  without outer products inside a component. Above ``CONNECTED_MAX``
  operands, or when that search would try more than ``PAIR_BUDGET`` pairs,
  a greedy search takes the cheapest pair first.
* ``memory``: the smallest peak intermediate, FLOPs as the tie-break within
  ``MEMORY_TOLERANCE``: the same search keeps, per subset, the Pareto front
  of (largest intermediate, multiply-adds); at the root it takes the fewest
  multiply-adds among the points whose peak is at most ``1 +
  MEMORY_TOLERANCE`` times the smallest.

Ties keep the file order: the left operand of a node is the part holding the
earliest operand, and among equally cheap splits the one whose right part
has the fewest operands, then the latest ones, wins, so the left-to-right
fold wins every tie it takes part in.

Parenthesized groups (``groups``/``operands`` as in ``axisflow.sequant.
syntax.Term``) are kept as written: each group folds its operands left to
right, whatever the order; the order only chooses how the outermost product
combines its operands. Nothing here recurses on the input's size or depth.
"""

from __future__ import annotations

import heapq
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from axisflow.forest.frames import expand_modes
from axisflow.order.extents import Extents
from axisflow.roles.index import Index

Order = Literal["file", "flops", "memory"]
ORDERS: tuple[Order, ...] = ("file", "flops", "memory")

EXACT_ALL_MAX = 8
"""Up to this many operands, every split is tried (outer products too)."""
CONNECTED_MAX = 16
"""Up to this many operands, connected splits are tried; greedy above."""
PAIR_BUDGET = 200_000
"""Connected splits tried at most before falling back to greedy."""
MEMORY_TOLERANCE = Fraction(1, 20)
"""``memory``: peaks within this fraction of the smallest count as equal,
and the one with the fewest multiply-adds is taken."""


SizeHook = Callable[[frozenset[Index], frozenset[Index]], int]
"""Elements of a value as it will be stored, given the modes it keeps and
the modes of the leaves it covers (those not kept are summed below it)."""


@dataclass(frozen=True)
class Costs:
    """What a plan costs: mode extents, and how big a value is stored.

    ``size`` (default: the product of the extents) lets a caller size values
    as they will exist under batch loops (a slice for a sliced value, the
    full buffer for a carried one); it drives the ``memory`` order and the
    plan's ``peak``. Multiply-adds always use the full extents.
    """

    extents: Extents
    size: SizeHook | None = None


@dataclass(frozen=True)
class Plan:
    """A binarization: SSA steps, the modes each step's value keeps, its
    total multiply-adds and its largest intermediate (``Costs.size`` units),
    and how it was found (``single``, ``file``, ``exact``, ``connected``,
    ``greedy``, or ``kept`` when parentheses fixed every pair)."""

    leaves: int
    steps: tuple[tuple[int, int], ...]
    kept: tuple[frozenset[Index], ...]
    flops: int
    peak: int
    method: str

    @property
    def root(self) -> int:
        """The node of the whole product."""
        return self.leaves + len(self.steps) - 1 if self.steps else 0


# --------------------------------------------------------------------------
# Modes as bits
# --------------------------------------------------------------------------


def _bits(mask: int) -> Iterator[int]:
    """Positions of the set bits of ``mask``, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


# --------------------------------------------------------------------------
# Subsets as bits, folded by table lookups
# --------------------------------------------------------------------------


def _block_tables(values: Sequence[int], multiply: bool) -> tuple[list[int], ...]:
    """Per block of 8 positions, ``values`` folded (OR, or product when
    ``multiply``) over every subset of the block: folding over any subset is
    then one lookup per block (``_folding``)."""
    tables: list[list[int]] = []
    for base in range(0, max(len(values), 1), 8):
        block = values[base : base + 8]
        table = [1 if multiply else 0] * (1 << len(block))
        for subset in range(1, len(table)):
            low = subset & -subset
            value = block[low.bit_length() - 1]
            rest = table[subset ^ low]
            table[subset] = rest * value if multiply else rest | value
        tables.append(table)
    return tuple(tables)


def _folding(values: Sequence[int], multiply: bool) -> Callable[[int], int]:
    """``values`` folded (OR, or product) over the positions set in a mask,
    by ``_block_tables``: up to 24 positions inline (the searches have at
    most ``CONNECTED_MAX`` operands, a term rarely 24 modes)."""
    tables = _block_tables(values, multiply)
    if len(tables) == 1:
        return tables[0].__getitem__
    if len(tables) == 2:
        low, high = tables
        if multiply:
            return lambda mask: low[mask & 255] * high[mask >> 8]
        return lambda mask: low[mask & 255] | high[mask >> 8]
    if len(tables) == 3:
        low, middle, high = tables
        if multiply:
            return lambda mask: (
                low[mask & 255] * middle[mask >> 8 & 255] * high[mask >> 16]
            )
        return lambda mask: low[mask & 255] | middle[mask >> 8 & 255] | high[mask >> 16]

    def any_size(mask: int) -> int:
        found = 1 if multiply else 0
        for table in tables:
            if multiply:
                found *= table[mask & 255]
            else:
                found |= table[mask & 255]
            mask >>= 8
        return found

    return any_size


class _Context:
    """The product's modes as bit positions, with cached sizes."""

    def __init__(
        self,
        leaves: Sequence[Sequence[Index]],
        externals: Iterable[Index],
        costs: Costs,
    ) -> None:
        ids: dict[Index, int] = {}
        self.modes: list[Index] = []

        def mask_of(indices: Iterable[Index]) -> int:
            mask = 0
            for mode in expand_modes(indices):
                bit = ids.get(mode)
                if bit is None:
                    bit = ids[mode] = len(self.modes)
                    self.modes.append(mode)
                mask |= 1 << bit
            return mask

        self.leaf_masks = [mask_of(leaf) for leaf in leaves]
        self.output = mask_of(externals)
        self.extent = [costs.extents.extent(mode) for mode in self.modes]
        self.hook = costs.size
        self.elements: Callable[[int], int] = _folding(self.extent, multiply=True)
        """The product of the extents of the modes in a mask."""
        self._sizes: dict[tuple[int, int], int] = {}

    def size(self, mask: int, span: int) -> int:
        """The stored size of a value keeping the modes in ``mask``, made
        from leaves whose modes are ``span``."""
        if self.hook is None:
            return self.elements(mask)
        key = (mask, span)
        found = self._sizes.get(key)
        if found is None:
            found = self.hook(self.mode_set(mask), self.mode_set(span))
            self._sizes[key] = found
        return found

    def mode_set(self, mask: int) -> frozenset[Index]:
        """The modes in ``mask``."""
        return frozenset(self.modes[bit] for bit in _bits(mask))


# --------------------------------------------------------------------------
# Units: what the search combines
# --------------------------------------------------------------------------


@dataclass(eq=False)
class _Unit:
    """An operand of the search: a leaf or a fixed group (``node`` set: it
    exists already), or a combination the search chose (``children``)."""

    result: int
    span: int
    """The modes of the leaves it covers."""
    flops: int
    peak: int
    node: int | None = None
    children: tuple[_Unit, _Unit] | None = None


class _Emitter:
    """Builds the plan's steps; tracks, per mode, how many current nodes keep
    it, which is what decides the modes a new node keeps."""

    def __init__(self, context: _Context) -> None:
        self.context = context
        self.results: list[int] = list(context.leaf_masks)
        self.spans: list[int] = list(context.leaf_masks)
        self.live: dict[int, int] = {}
        for mask in context.leaf_masks:
            for bit in _bits(mask):
                self.live[bit] = self.live.get(bit, 0) + 1
        self.steps: list[tuple[int, int]] = []
        self.flops = 0
        self.peak = 0

    def merge(self, left: int, right: int) -> int:
        """Contract nodes ``left`` and ``right``; return the new node."""
        context = self.context
        in_left, in_right = self.results[left], self.results[right]
        union = in_left | in_right
        kept = union
        live = self.live
        output = context.output
        for bit in _bits(union):
            flag = 1 << bit
            others = live[bit] - (in_left & flag > 0) - (in_right & flag > 0)
            if others == 0 and not output & flag:
                kept ^= flag
                del live[bit]
            else:
                live[bit] = others + 1
        self.results.append(kept)
        self.steps.append((left, right))
        self.flops += context.elements(union)
        span = self.spans[left] | self.spans[right]
        self.spans.append(span)
        self.peak = max(self.peak, context.size(kept, span))
        return len(self.results) - 1

    def unit(self, node: int, flops: int = 0, peak: int = 0) -> _Unit:
        return _Unit(self.results[node], self.spans[node], flops, peak, node)

    def emit(self, unit: _Unit) -> int:
        """Emit the steps of ``unit``'s tree (post-order, left first)."""
        done: dict[int, int] = {}
        stack: list[tuple[_Unit, bool]] = [(unit, False)]
        while stack:
            item, expanded = stack.pop()
            if item.node is not None:
                done[id(item)] = item.node
                continue
            assert item.children is not None
            left, right = item.children
            if expanded:
                done[id(item)] = self.merge(done[id(left)], done[id(right)])
            else:
                stack.extend(((item, True), (right, False), (left, False)))
        return done[id(unit)]

    def fold(self, units: Sequence[_Unit]) -> _Unit:
        """Fold existing ``units`` left to right: the unit of the result,
        with its multiply-adds and peak."""
        context = self.context
        current = units[0]
        for unit in units[1:]:
            assert current.node is not None and unit.node is not None
            node = self.merge(current.node, unit.node)
            result = self.results[node]
            current = _Unit(
                result,
                self.spans[node],
                current.flops
                + unit.flops
                + context.elements(current.result | unit.result),
                max(current.peak, unit.peak, context.size(result, self.spans[node])),
                node,
            )
        return current

    def plan(self, leaves: int, method: str) -> Plan:
        context = self.context
        kept = tuple(context.mode_set(mask) for mask in self.results[leaves:])
        return Plan(leaves, tuple(self.steps), kept, self.flops, self.peak, method)


# --------------------------------------------------------------------------
# The searches
# --------------------------------------------------------------------------


_Point = tuple[int, int, int, int, int, int, int]
"""A point of a Pareto front: peak, multiply-adds, tie key, the split (left,
right) and the point of each part it extends."""


class _Kept(dict[int, int]):
    """The modes the value of a subset keeps, by subset, computed on first
    lookup (``__missing__``: a hit is one C-level dict lookup, the searches'
    inner loop)."""

    def __init__(
        self, units: Sequence[_Unit], union: Callable[[int], int], needed: int
    ) -> None:
        super().__init__(
            (1 << position, unit.result) for position, unit in enumerate(units)
        )
        self.union = union
        self.full = (1 << len(units)) - 1
        self.needed = needed

    def __missing__(self, subset: int) -> int:
        union = self.union
        found = self[subset] = union(subset) & (union(self.full ^ subset) | self.needed)
        return found


class _Search:
    """Dynamic programming over subsets of ``units`` (bit ``u`` is unit
    ``u``); ``outside`` are modes needed beyond these units."""

    def __init__(
        self, context: _Context, units: Sequence[_Unit], outside: int, order: Order
    ) -> None:
        self.context = context
        self.units = list(units)
        self.full = (1 << len(units)) - 1
        self.outside = outside
        self.needed = context.output | outside
        self.order: Order = order
        self._union: Callable[[int], int] | None = None
        self._span: Callable[[int], int] | None = None
        self._kept: _Kept | None = None

    # Table lookups, built on first use (the greedy search of long products
    # never needs them, the flops search no spans).

    def span_of(self) -> Callable[[int], int]:
        """The modes of the leaves the units of a subset cover."""
        if self._span is None:
            self._span = _folding([unit.span for unit in self.units], multiply=False)
        return self._span

    def union_of(self) -> Callable[[int], int]:
        """The modes the units of a subset keep, together."""
        if self._union is None:
            self._union = _folding([unit.result for unit in self.units], multiply=False)
        return self._union

    def span(self, subset: int) -> int:
        """The modes of the leaves the units of ``subset`` cover."""
        return self.span_of()(subset)

    def union(self, subset: int) -> int:
        """The modes the units of ``subset`` keep, together."""
        return self.union_of()(subset)

    def kept(self) -> _Kept:
        """The modes each subset's value keeps (a lazily filled mapping)."""
        if self._kept is None:
            self._kept = _Kept(self.units, self.union_of(), self.needed)
        return self._kept

    def result(self, subset: int) -> int:
        """The modes the value of ``subset`` keeps."""
        return self.kept()[subset]

    # -- flops: one best split per subset ----------------------------------

    def run(self, pairs: Iterable[tuple[int, int]]) -> _Unit:
        """Relax every (left, right) split in ``pairs`` (children before
        parents) and rebuild the best tree of the full set."""
        if self.order == "memory":
            return self._run_memory(pairs)
        elements = self.context.elements
        result = self.kept()
        full = self.full
        width = full.bit_length()
        cost: dict[int, int] = {}
        split: dict[int, tuple[int, int]] = {}
        tie: dict[int, int] = {}
        for position, unit in enumerate(self.units):
            cost[1 << position] = unit.flops
        for pair in pairs:
            left, right = pair
            total = cost[left] + cost[right] + elements(result[left] | result[right])
            subset = left | right
            best = cost.get(subset)
            if best is None or total < best:
                cost[subset] = total
                split[subset] = pair
                tie[subset] = (right.bit_count() << width) + (full - right)
            elif total == best:
                key = (right.bit_count() << width) + (full - right)
                if key < tie[subset]:
                    split[subset] = pair
                    tie[subset] = key
        return self._rebuild(split.__getitem__)

    def _rebuild(self, children: Callable[[int], tuple[int, int]]) -> _Unit:
        """The tree of the full set, following ``children`` from the top
        (an explicit stack), with its multiply-adds and peak."""
        context = self.context
        built: dict[int, _Unit] = {}
        stack: list[tuple[int, bool]] = [(self.full, False)]
        while stack:
            subset, expanded = stack.pop()
            if subset & (subset - 1) == 0:
                built[subset] = self.units[subset.bit_length() - 1]
                continue
            left, right = children(subset)
            if not expanded:
                stack.extend(((subset, True), (right, False), (left, False)))
                continue
            a, b = built[left], built[right]
            result = self.result(subset)
            span = a.span | b.span
            built[subset] = _Unit(
                result,
                span,
                a.flops + b.flops + context.elements(a.result | b.result),
                max(a.peak, b.peak, context.size(result, span)),
                None,
                (a, b),
            )
        return built[self.full]

    # -- memory: a Pareto front per subset ---------------------------------

    def _run_memory(self, pairs: Iterable[tuple[int, int]]) -> _Unit:
        context = self.context
        elements = context.elements
        result = self.kept()
        span = self.span_of()
        full = self.full
        width = full.bit_length()
        fronts: dict[int, list[_Point]] = {}
        sizes: dict[int, int] = {}
        for position, unit in enumerate(self.units):
            fronts[1 << position] = [(unit.peak, unit.flops, 0, 0, 0, 0, 0)]
        for left, right in pairs:
            subset = left | right
            front = fronts.get(subset)
            if front is None:
                front = fronts[subset] = []
                size = sizes[subset] = context.size(result[subset], span(subset))
            else:
                size = sizes[subset]
            pair = elements(result[left] | result[right])
            left_front, right_front = fronts[left], fronts[right]
            if len(left_front) == 1 and len(right_front) == 1 and len(front) < 2:
                # The common case (without a batch hook, every front has one
                # point): the general insertion below, unrolled, the tie key
                # computed only when it is needed.
                lp, rp = left_front[0], right_front[0]
                peak = lp[0] if lp[0] > size else size
                if rp[0] > peak:
                    peak = rp[0]
                flops = lp[1] + rp[1] + pair
                if front:
                    other = front[0]
                    if other[0] <= peak and other[1] <= flops:
                        if other[0] == peak and other[1] == flops:
                            key = (right.bit_count() << width) + (full - right)
                            if key < other[2]:
                                front[0] = (peak, flops, key, left, right, 0, 0)
                        continue
                    if peak <= other[0] and flops <= other[1]:
                        front.pop()
                key = (right.bit_count() << width) + (full - right)
                front.append((peak, flops, key, left, right, 0, 0))
                continue
            key = (right.bit_count() << width) + (full - right)
            for li, lp in enumerate(left_front):
                left_peak = lp[0] if lp[0] > size else size
                left_flops = lp[1] + pair
                for ri, rp in enumerate(right_front):
                    peak = rp[0] if rp[0] > left_peak else left_peak
                    flops = left_flops + rp[1]
                    # Into the Pareto front of (peak, flops): a point at least
                    # as good in both is kept (an equal one yields only to a
                    # preferred split); the points the new one covers go.
                    for position, other in enumerate(front):
                        if other[0] <= peak and other[1] <= flops:
                            if (
                                other[0] == peak
                                and other[1] == flops
                                and key < other[2]
                            ):
                                front[position] = (
                                    peak,
                                    flops,
                                    key,
                                    left,
                                    right,
                                    li,
                                    ri,
                                )
                            break
                    else:
                        front[:] = [
                            p for p in front if not (peak <= p[0] and flops <= p[1])
                        ]
                        front.append((peak, flops, key, left, right, li, ri))
        root = fronts[self.full]
        smallest = min(point[0] for point in root)
        limit = smallest * (1 + MEMORY_TOLERANCE)
        chosen = min(
            (p for p in root if p[0] <= limit), key=lambda p: (p[1], p[0], p[2])
        )
        # Rebuild, following the chosen point of every subset.
        choice: dict[int, _Point] = {self.full: chosen}

        def children(subset: int) -> tuple[int, int]:
            point = choice[subset]
            left, right = point[3], point[4]
            choice[left] = fronts[left][point[5]]
            choice[right] = fronts[right][point[6]]
            return left, right

        return self._rebuild(children)


def _all_pairs(count: int) -> Iterator[tuple[int, int]]:
    """Every split of every subset of ``count`` operands, subsets in
    increasing order (so a subset's parts come before it); the left part
    holds the subset's first operand."""
    for subset in range(1, 1 << count):
        low = subset & -subset
        rest = subset ^ low
        if not rest:
            continue
        part = rest
        while part:
            part = (part - 1) & rest
            yield low | part, rest ^ part


def _adjacency(search: _Search) -> list[int]:
    """Units sharing a summed mode are adjacent."""
    units = search.units
    summed = ~search.needed
    adjacent = [0] * len(units)
    carriers: dict[int, int] = {}
    for position, unit in enumerate(units):
        for bit in _bits(unit.result & summed):
            carriers[bit] = carriers.get(bit, 0) | (1 << position)
    for group in carriers.values():
        for position in _bits(group):
            adjacent[position] |= group & ~(1 << position)
    return adjacent


def _components(adjacent: list[int]) -> list[int]:
    """Connected components as unit masks, in order of their first unit."""
    seen = 0
    found: list[int] = []
    for start in range(len(adjacent)):
        if seen >> start & 1:
            continue
        reached = frontier = 1 << start
        while frontier:
            grown = 0
            for position in _bits(frontier):
                grown |= adjacent[position]
            frontier = grown & ~reached
            reached |= frontier
        seen |= reached
        found.append(reached)
    return found


class _BudgetExceeded(Exception):
    pass


def _connected_pairs(adjacent: list[int], budget: int) -> list[tuple[int, int]]:
    """All csg-cmp pairs (two disjoint connected sets joined by an edge) of a
    connected graph, by DPccp's enumeration, ordered so that parts come
    before the sets they form (by the size of their union, stably); the
    left part holds the lower operand (DPccp's complements only take
    operands above the first set's lowest one).

    Connected supersets are grown as DPccp's EnumerateCsgRec does, with an
    explicit stack; neighbourhoods are table lookups."""
    neighbours_of = _folding(adjacent, multiply=False)
    by_size: list[list[tuple[int, int]]] = [[] for _ in range(len(adjacent) + 1)]
    found = 0

    def grow(start: int, excluded: int) -> list[int]:
        """Connected supersets of ``start`` avoiding ``excluded``, in the
        order of EnumerateCsgRec with a stack (``start`` itself excluded)."""
        grown: list[int] = []
        stack = [(start, excluded)]
        pop, push, add = stack.pop, stack.append, grown.append
        while stack:
            subset, banned = pop()
            frontier = neighbours_of(subset) & ~(subset | banned)
            if not frontier:
                continue
            first = len(grown)
            part = frontier
            while part:
                add(subset | part)
                part = (part - 1) & frontier
            banned |= frontier
            for index in range(first, len(grown)):
                push((grown[index], banned))
        return grown

    # Complements of different first sets often grow from the same start
    # avoiding the same set (about three calls per distinct one).
    known: dict[tuple[int, int], list[int]] = {}
    for position in range(len(adjacent) - 1, -1, -1):
        start = 1 << position
        for first in (start, *grow(start, (1 << (position + 1)) - 1)):
            low = (first & -first).bit_length() - 1
            banned = ((1 << (low + 1)) - 1) | first
            frontier = neighbours_of(first) & ~banned
            size = first.bit_count()
            rest = frontier
            seconds: list[int] = []
            while rest:  # highest operand first
                top = rest.bit_length() - 1
                rest ^= 1 << top
                seconds.append(1 << top)
                key = (1 << top, banned | (frontier & ((2 << top) - 1)))
                grown = known.get(key)
                if grown is None:
                    grown = known[key] = grow(*key)
                seconds.extend(grown)
            found += len(seconds)
            if found > budget:
                raise _BudgetExceeded
            for second in seconds:
                by_size[size + second.bit_count()].append((first, second))
    return [pair for pairs in by_size for pair in pairs]


def _greedy(search: _Search) -> _Unit:
    """Cheapest pair first (multiply-adds, then the size of the result, then
    file order); pairs sharing a summed mode first, outer products last."""
    context = search.context
    nodes: list[_Unit] = list(search.units)
    order: list[int] = list(range(len(nodes)))
    alive = set(range(len(nodes)))
    needed = search.needed
    live: dict[int, int] = {}
    for unit in nodes:
        for bit in _bits(unit.result):
            live[bit] = live.get(bit, 0) + 1
    carriers: dict[int, set[int]] = {}
    for position, unit in enumerate(nodes):
        for bit in _bits(unit.result & ~needed):
            carriers.setdefault(bit, set()).add(position)

    def kept(a: int, b: int) -> int:
        in_a, in_b = nodes[a].result, nodes[b].result
        union = in_a | in_b
        result = union
        for bit in _bits(union):
            flag = 1 << bit
            if live[bit] == (in_a & flag > 0) + (in_b & flag > 0) and not needed & flag:
                result ^= flag
        return result

    heap: list[tuple[int, int, int, int, int, int]] = []

    def push(a: int, b: int) -> None:
        if order[a] > order[b]:
            a, b = b, a
        flops = context.elements(nodes[a].result | nodes[b].result)
        size = context.size(kept(a, b), nodes[a].span | nodes[b].span)
        heapq.heappush(heap, (flops, size, order[a], order[b], a, b))

    def partners(node: int) -> set[int]:
        found: set[int] = set()
        for bit in _bits(nodes[node].result & ~needed):
            found.update(carriers.get(bit, ()))
        found.discard(node)
        return found & alive

    for node in range(len(nodes)):
        for other in partners(node):
            if other > node:
                push(node, other)
    while len(alive) > 1:
        while heap and not (heap[0][4] in alive and heap[0][5] in alive):
            heapq.heappop(heap)
        if heap:
            _, _, _, _, a, b = heapq.heappop(heap)
        else:  # only outer products remain: the two smallest values
            a, b = sorted(
                sorted(
                    alive, key=lambda n: (context.elements(nodes[n].result), order[n])
                )[:2],
                key=order.__getitem__,
            )
        result = kept(a, b)
        union = nodes[a].result | nodes[b].result
        for bit in _bits(union):
            flag = 1 << bit
            live[bit] -= (nodes[a].result & flag > 0) + (nodes[b].result & flag > 0)
            if result & flag:
                live[bit] += 1
        merged = _Unit(
            result, nodes[a].span | nodes[b].span, 0, 0, None, (nodes[a], nodes[b])
        )
        nodes.append(merged)
        order.append(min(order[a], order[b]))
        alive -= {a, b}
        new = len(nodes) - 1
        alive.add(new)
        for bit in _bits(result & ~needed):
            holders = carriers.setdefault(bit, set())
            holders.difference_update((a, b))
            holders.add(new)
        for other in partners(new):
            push(new, other)
    (last,) = alive
    return nodes[last]


def _best(search: _Search, cache: PlanCache) -> tuple[_Unit, str]:
    """The best tree of all the search's units, and the method used."""
    count = len(search.units)
    if count <= EXACT_ALL_MAX:
        return search.run(cache.all_pairs(count)), "exact"
    if count > CONNECTED_MAX:
        return _greedy(search), "greedy"
    adjacent = _adjacency(search)
    parts: list[_Unit] = []
    try:
        for component in _components(adjacent):
            members = list(_bits(component))
            if len(members) == 1:
                parts.append(search.units[members[0]])
                continue
            local = {member: position for position, member in enumerate(members)}
            local_adjacent = [
                sum(1 << local[other] for other in _bits(adjacent[member]))
                for member in members
            ]
            inner = _Search(
                search.context,
                [search.units[member] for member in members],
                search.outside | search.union(search.full ^ component),
                search.order,
            )
            parts.append(inner.run(cache.connected_pairs(local_adjacent)))
    except _BudgetExceeded:
        return _greedy(search), "greedy"
    if len(parts) == 1:
        return parts[0], "connected"
    joined = _Search(search.context, parts, search.outside, search.order)
    if len(parts) <= EXACT_ALL_MAX:
        return joined.run(cache.all_pairs(len(parts))), "connected"
    return _greedy(joined), "greedy"


_PlanKey = tuple[
    tuple[int, ...],
    int,
    tuple[int, ...],
    str,
    tuple[tuple[int, ...], ...],
    tuple[int, ...],
]
_FoundPlan = tuple[tuple[tuple[int, int], ...], tuple[int, ...], int, int, str]


class PlanCache:
    """What the searches found so far, for products planned after them.

    Many terms of a residual are the same network up to index names (in the
    CSV-CCSD doubles, 55 terms are 46 networks and 34 connectivity graphs):

    * a plan depends only on the product's modes as bits (numbered by first
      appearance, leaf by leaf), their extents, the result's modes, the
      parentheses and the order, so a product equal to an earlier one in
      these gets the earlier plan, its kept modes mapped back to its own
      indices. File order is part of the key: ties, which keep the file
      order, come out the same. Only without a size hook (``Costs.size``:
      its sizes depend on the indices themselves);
    * the splits DPccp enumerates depend only on the connectivity graph, so
      they are kept per graph, whatever the sizes.

    ``plan_product`` uses a fresh one unless given one; the SeQuant frontend
    shares one over the terms of an expression. Nothing is evicted: one
    serves one expression (a few thousand pairs per graph).
    """

    def __init__(self) -> None:
        self._plans: dict[_PlanKey, _FoundPlan] = {}
        self._connected: dict[tuple[int, ...], list[tuple[int, int]] | None] = {}
        self._all: dict[int, list[tuple[int, int]]] = {}

    def known(self, key: _PlanKey) -> _FoundPlan | None:
        """The plan found for a product with ``key``, in bits."""
        return self._plans.get(key)

    def remember(self, key: _PlanKey, found: _FoundPlan) -> None:
        """Keep the plan found for a product with ``key``: its steps, the
        modes each step keeps (bits), multiply-adds, peak and method."""
        self._plans[key] = found

    def all_pairs(self, count: int) -> list[tuple[int, int]]:
        """``_all_pairs(count)``, kept."""
        found = self._all.get(count)
        if found is None:
            found = self._all[count] = list(_all_pairs(count))
        return found

    def connected_pairs(self, adjacent: list[int]) -> list[tuple[int, int]]:
        """``_connected_pairs(adjacent, PAIR_BUDGET)``, kept (a graph over
        the budget raises ``_BudgetExceeded`` again without enumerating),
        and shared with later caches (``SHARED_PAIRS``)."""
        key = tuple(adjacent)
        if key in self._connected:
            found = self._connected[key]
        else:
            found = self._connected[key] = _SHARED_PAIRS.get(key)
        if found is None:
            raise _BudgetExceeded
        return found


SHARED_PAIRS = 250_000
"""Most pairs the process keeps over all ``PlanCache``s: the pairs depend
on the connectivity graph only, so an expression planned again (every
policy of ``axisflow plan``, each run of the executor) finds its graphs'
pairs enumerated (the CSV-CCSD doubles: 34 graphs, 77,522 pairs, about a
quarter of planning them); the graphs used longest ago go first."""


class _SharedPairs:
    """``_connected_pairs`` by graph (and ``PAIR_BUDGET``), for the whole
    process, least recently used first out beyond ``SHARED_PAIRS`` pairs
    (``None``: over the budget)."""

    def __init__(self) -> None:
        self._pairs: OrderedDict[
            tuple[int, tuple[int, ...]], list[tuple[int, int]] | None
        ] = OrderedDict()
        self._count = 0

    def get(self, graph: tuple[int, ...]) -> list[tuple[int, int]] | None:
        """The pairs of ``graph`` (adjacency masks), ``None`` if more than
        ``PAIR_BUDGET``; enumerated at the first request."""
        key = (PAIR_BUDGET, graph)
        if key in self._pairs:
            self._pairs.move_to_end(key)
            return self._pairs[key]
        try:
            found = _connected_pairs(list(graph), PAIR_BUDGET)
        except _BudgetExceeded:
            found = None
        self._pairs[key] = found
        self._count += len(found or ())
        while self._count > SHARED_PAIRS and len(self._pairs) > 1:
            _, dropped = self._pairs.popitem(last=False)
            self._count -= len(dropped or ())
        return found


_SHARED_PAIRS = _SharedPairs()


def forget_shared_pairs() -> None:
    """Forget the pairs the process keeps (``SHARED_PAIRS``): the next
    search of every graph enumerates its pairs again, as a process's first
    one does (benchmarks of a first search use it)."""
    global _SHARED_PAIRS
    _SHARED_PAIRS = _SharedPairs()


# --------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------


def plan_product(
    leaves: Sequence[Sequence[Index]],
    externals: Iterable[Index],
    costs: Costs,
    order: Order = "flops",
    groups: Sequence[Sequence[int]] = (),
    operands: Sequence[int] | None = None,
    cache: PlanCache | None = None,
) -> Plan:
    """The plan of a product of ``leaves`` (each by its carried indices) with
    result ``externals``, under ``order`` (see the module doc).

    ``groups`` and ``operands`` describe parentheses as ``Term.groups`` and
    ``Term.operands()`` do (operand ``k >= 0`` is leaf ``k``, ``~j`` is group
    ``j``; groups refer to earlier groups only); without them the product's
    operands are the leaves in order. Groups keep their written order.
    ``cache``: a ``PlanCache`` shared with other products (the same plans,
    found once per network).
    """
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {order!r}")
    context = _Context(leaves, externals, costs)
    count = len(leaves)
    if operands is None:
        operands = range(count)
    if cache is None:
        cache = PlanCache()
    key: _PlanKey | None = None
    if costs.size is None and order != "file":
        key = (
            tuple(context.leaf_masks),
            context.output,
            tuple(context.extent),
            order,
            tuple(tuple(group) for group in groups),
            tuple(operands),
        )
        found = cache.known(key)
        if found is not None:
            steps, kept, flops, peak, method = found
            modes = tuple(context.mode_set(mask) for mask in kept)
            return Plan(count, steps, modes, flops, peak, method)
    emitter = _Emitter(context)
    group_nodes: list[_Unit] = []

    def unit(operand: int) -> _Unit:
        return emitter.unit(operand) if operand >= 0 else group_nodes[~operand]

    for group in groups:
        group_nodes.append(emitter.fold([unit(op) for op in group]))
    units = [unit(op) for op in operands]
    if count == 0:
        return emitter.plan(0, "single")
    if len(units) == 1:
        return emitter.plan(count, "kept" if groups else "single")
    if order == "file":
        emitter.fold(units)
        return emitter.plan(count, "file")
    tree, method = _best(_Search(context, units, 0, order), cache)
    emitter.emit(tree)
    plan = emitter.plan(count, method)
    if key is not None:
        kept = tuple(emitter.results[count:])
        cache.remember(key, (plan.steps, kept, plan.flops, plan.peak, method))
    return plan
