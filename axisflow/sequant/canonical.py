"""A factor order that does not depend on how a term was written.

The frontend reads a product in the order written: the order decides ties
between equally cheap contraction trees, the nesting of the batch loops and
the labels a tree shows. That is fine for a forest the user reads, but a plan
(``axisflow.scheduling.planner``) should not change its peak or its
multiply-adds because two factors were swapped or an index renamed.

* ``tensor_colours`` colours each tensor by colour refinement
  (Weisfeiler-Lehman) of the term's tensor-index graph: a tensor starts
  from its label, symmetry and bra/ket/aux sizes, an index from its space
  key and its number of protos (never its name); each round, a tensor's
  colour takes in the colours of its indices with their slot (group and
  position), and an index's the colours of the tensors carrying it (with
  the slot) and of its protos and composites. ``colour_sorted`` sorts the
  tensors by label, then colour.
* Tensors of one label and colour (the two ``g{μ̃;i;Κ}`` of a ladder term)
  are a *tie class*: the colours cannot order them. ``tie_classes`` puts
  them in the order whose reading is least (the term read tensor by
  tensor, every index named by its space and first appearance), the same
  whatever order the term was written in and however its indices are
  named; ``class_orders`` lists a class's distinct orders, and the
  frontend's ``build_forest(canonical=True)`` picks among them the one
  that adds the fewest multiply-adds to the forest built so far (the order
  decides which sub-products equal those of earlier terms).

Pure Python, no xDSL. A term with parenthesized groups keeps its order (its
groups name operands by position), and so does a term whose search
follows more than ``READINGS_LIMIT`` equally read orders (ties then keep
their written order; a term of the bundled doubles follows up to 48).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import replace

from axisflow.roles.index import Index
from axisflow.sequant.syntax import Tensor, Term

ROUNDS = 1
"""Refinement rounds. One: a tensor's colour is its own and the spaces and
proto counts of its slots. More rounds tell more tensors apart, but by
context, which orders the same sub-product differently in different terms
and loses the sharing the frontend finds between them (measured on the
bundled equations: one round keeps the written order's multiply-adds, two
or four cost up to 36% more on the singles)."""


def _digest(parts: Iterable[object]) -> str:
    return hashlib.sha1(repr(tuple(parts)).encode("utf-8")).hexdigest()[:16]


def _all_indices(tensors: Iterable[Tensor]) -> list[Index]:
    found: dict[Index, None] = {}
    stack = [index for tensor in tensors for index in tensor.indices]
    while stack:
        index = stack.pop()
        if index in found:
            continue
        found[index] = None
        stack.extend(index.protos)
    return list(found)


def tensor_colours(term: Term) -> list[str]:
    """Each tensor's colour after refinement (equal for tensors the term's
    structure does not tell apart)."""
    tensors = term.tensors
    indices = _all_indices(tensors)
    slots: list[list[tuple[str, int, Index]]] = []
    for tensor in tensors:
        found: list[tuple[str, int, Index]] = []
        for group, members in (
            ("bra", tensor.bra),
            ("ket", tensor.ket),
            ("aux", tensor.aux),
        ):
            found.extend(
                (group, position, index) for position, index in enumerate(members)
            )
        slots.append(found)
    carriers: dict[Index, list[tuple[int, str, int]]] = {index: [] for index in indices}
    for number, found in enumerate(slots):
        for group, position, index in found:
            carriers[index].append((number, group, position))
    composites: dict[Index, list[Index]] = {index: [] for index in indices}
    for index in indices:
        for proto in index.protos:
            composites[proto].append(index)
    tensor_colour = [
        _digest((t.label, t.symmetry, len(t.bra), len(t.ket), len(t.aux)))
        for t in tensors
    ]
    index_colour = {i: _digest((i.base_key, len(i.protos))) for i in indices}
    for _ in range(ROUNDS):
        tensor_colour = [
            _digest(
                (
                    tensor_colour[n],
                    tuple(
                        (group, position, index_colour[index])
                        for group, position, index in slots[n]
                    ),
                )
            )
            for n in range(len(tensors))
        ]
        index_colour = {
            index: _digest(
                (
                    index_colour[index],
                    tuple(
                        sorted(
                            (group, position, tensor_colour[n])
                            for n, group, position in carriers[index]
                        )
                    ),
                    tuple(index_colour[p] for p in index.protos),
                    tuple(sorted(index_colour[c] for c in composites[index])),
                )
            )
            for index in indices
        }
    return tensor_colour


def colour_sorted(term: Term) -> tuple[Term, list[str]]:
    """``term`` with its tensors sorted by label, then ``tensor_colours``,
    and their colours in that order (a colour does not depend on where its
    tensor stands). The caller keeps a term with parenthesized groups as
    it is."""
    colours = tensor_colours(term)
    tensors = term.tensors
    order = sorted(range(len(tensors)), key=lambda n: (tensors[n].label, colours[n], n))
    return (
        replace(term, tensors=tuple(tensors[n] for n in order)),
        [colours[n] for n in order],
    )


READINGS_LIMIT = 5040
"""Equally read partial orders followed at most while ``tie_classes``
searches (as many as the term has symmetries that the search cannot yet
tell apart); a term that needs more keeps ``colour_sorted``'s order."""

Descriptor = tuple[object, ...]


def colour_classes(term: Term) -> tuple[Term, list[list[int]]]:
    """``colour_sorted``'s term and its tensors' positions grouped by label
    and colour, in order (a group of one is a tensor the colours order)."""
    first, colours = colour_sorted(term)
    tensors = first.tensors
    return first, [
        list(members)
        for _, members in itertools.groupby(
            range(len(tensors)), key=lambda n: (tensors[n].label, colours[n])
        )
    ]


class _Reading:
    """Tensors read in order, every index named by its space and the order
    of its first appearance (``certificate``)."""

    def __init__(self, containers: dict[Index, list[Index]]) -> None:
        self.containers = containers
        """Index -> the composites of the term that list it as a proto."""
        self.names: dict[Index, tuple[str, int]] = {}
        self.counts: dict[str, int] = {}

    def copy(self) -> _Reading:
        other = _Reading(self.containers)
        other.names = dict(self.names)
        other.counts = dict(self.counts)
        return other

    def _read(
        self, tensor: Tensor
    ) -> tuple[Descriptor, dict[Index, tuple[str, int]], dict[str, int]]:
        """How ``tensor`` reads next, and the names and counts reading it
        adds (not yet added). Each index reads as its name; at its first
        appearance, with what relates it to the indices named before it:
        its protos and the composites listing it (``Index`` sorts a
        composite's protos by name, so they are a set here) and how many of
        its protos are still unnamed."""
        names = self.names
        added: dict[Index, tuple[str, int]] = {}
        counts: dict[str, int] = {}
        containers = self.containers

        def name_of(index: Index) -> tuple[str, int] | None:
            found = names.get(index)
            return found if found is not None else added.get(index)

        def index(index: Index) -> Descriptor:
            name = name_of(index)
            if name is not None:
                return name
            key = index.base_key
            count = counts[key] = counts.get(key, self.counts.get(key, 0)) + 1
            name = added[index] = (key, count)
            protos = [name_of(p) for p in index.protos]
            return (
                *name,
                tuple(sorted(p for p in protos if p is not None)),
                sum(p is None for p in protos),
                tuple(
                    sorted(
                        found
                        for found in map(name_of, containers[index])
                        if found is not None
                    )
                ),
            )

        read = (
            tensor.label,
            tensor.symmetry,
            tuple(map(index, tensor.bra)),
            tuple(map(index, tensor.ket)),
            tuple(map(index, tensor.aux)),
        )
        return read, added, counts

    def peek(self, tensor: Tensor) -> Descriptor:
        """How ``tensor`` would read next, without reading it (a search
        tries several candidates at each position; copying the reading for
        each made it cubic in a class's size)."""
        return self._read(tensor)[0]

    def tensor(self, tensor: Tensor) -> Descriptor:
        """The next tensor read."""
        read, added, counts = self._read(tensor)
        self.names.update(added)
        self.counts.update(counts)
        return read

    def unread(self) -> list[Descriptor]:
        """The protos never read in a slot: each by its space, its named
        protos and the composites listing it, as a multiset."""
        names = self.names
        return sorted(
            (
                index.base_key,
                tuple(sorted(names[p] for p in index.protos if p in names)),
                tuple(sorted(names[c] for c in self.containers[index] if c in names)),
            )
            for index in self.containers
            if index not in names
        )


def _containers(tensors: Iterable[Tensor]) -> dict[Index, list[Index]]:
    containers: dict[Index, list[Index]] = {}
    for index in _all_indices(tensors):
        containers.setdefault(index, [])
        for proto in index.protos:
            containers.setdefault(proto, []).append(index)
    return containers


def certificate(tensors: Sequence[Tensor]) -> str:
    """The tensors in order, every index named by its space and the order of
    its first appearance (``_Reading``): equal for two orders of one term
    exactly when they read the same up to renaming, and independent of the
    names."""
    reading = _Reading(_containers(tensors))
    read = [reading.tensor(t) for t in tensors]
    return repr((read, reading.unread()))


class _Search:
    """One partial order ``tie_classes`` follows: its reading, the
    positions read in order, and the members of the class being ordered
    left to read whose reading depends on what it named (``_watched``)."""

    __slots__ = ("frontier", "order", "reading", "used")

    def __init__(
        self, reading: _Reading, order: list[int], used: set[int], frontier: set[int]
    ) -> None:
        self.reading = reading
        self.order = order
        self.used = used
        self.frontier = frontier

    def watch(self, watched: dict[Index, list[int]]) -> None:
        """Start ordering a class: its members the names so far touch."""
        self.frontier = {
            member
            for index in self.reading.names
            for member in watched.get(index, ())
            if member not in self.used
        }

    def candidates(
        self, tensors: Sequence[Tensor], ranked: list[list[int]]
    ) -> tuple[list[tuple[int, Descriptor]], list[int] | None]:
        """The members that can read least next, with how each reads:
        every member left that the names so far touch; and the first rank
        of the others, which all read alike (``_isolated_ranks``): one of
        them is read for all, and the rank is returned to be listed only
        if that reading is least."""
        peek = self.reading.peek
        chosen = [(m, peek(tensors[m])) for m in self.frontier]
        skip = self.used
        frontier = self.frontier
        for rank in ranked:
            for member in rank:
                if member not in skip and member not in frontier:
                    chosen.append((member, peek(tensors[member])))
                    return chosen, rank
        return chosen, None

    def rest(self, rank: list[int]) -> list[int]:
        """The members of ``rank`` left to read that no name touches."""
        return [m for m in rank if m not in self.used and m not in self.frontier]

    def then(
        self, tensor: Tensor, member: int, watched: dict[Index, list[int]]
    ) -> _Search:
        """This search after reading ``tensor`` (position ``member``)."""
        reading = self.reading.copy()
        before = len(reading.names)
        reading.tensor(tensor)
        used = {*self.used, member}
        frontier = set(self.frontier)
        frontier.discard(member)
        for index in itertools.islice(reading.names, before, None):
            frontier.update(m for m in watched.get(index, ()) if m not in used)
        return _Search(reading, [*self.order, member], used, frontier)


def _watched(
    tensors: Sequence[Tensor], members: list[int], containers: dict[Index, list[Index]]
) -> dict[Index, list[int]]:
    """Index -> the members whose reading changes once it is named: those
    holding it, or an index it is a proto or a composite of."""
    watched: dict[Index, list[int]] = {}
    for member in members:
        seen: set[Index] = set()
        for index in tensors[member].indices:
            seen.add(index)
            seen.update(index.protos)
            seen.update(containers[index])
        for index in seen:
            watched.setdefault(index, []).append(member)
    return watched


def _isolated_ranks(
    tensors: Sequence[Tensor], members: list[int], containers: dict[Index, list[Index]]
) -> list[list[int]]:
    """The members grouped by how they read when nothing they hold, nor
    the protos or composites of it, is named yet, least first: each such
    index then reads as the next of its space, so two such members compare
    as they do at the start of a reading, whatever was read before."""
    blank = _Reading(containers)
    reads = sorted((blank.peek(tensors[member]), member) for member in members)
    ranks: list[list[int]] = []
    previous: Descriptor | None = None
    for read, member in reads:
        if ranks and read == previous:
            ranks[-1].append(member)
        else:
            ranks.append([member])
        previous = read
    return ranks


def tie_classes(term: Term) -> tuple[Term, list[list[int]]]:
    """``term`` in its first canonical order and the positions of its tie
    classes (tensors of one label and colour, which ``colour_sorted``
    cannot order): the same whatever order the term was written in or its
    indices named. The order is the least reading (``_Reading``) of the
    orders that permute tie classes, found position by position: of the class
    members left, those whose reading is least, every such partial order
    followed (up to ``READINGS_LIMIT``; beyond, ``colour_sorted``'s order
    and no classes). A term with parenthesized groups stays as written.

    Only members that can read least are read at each position: those
    holding (or related by protos to) an index named so far, and of the
    others, which read alike whatever was read before, one per group
    (``_isolated_ranks``). So a chain of ``n`` factors of one label costs
    about ``n**2`` readings, not ``n**3`` (0.35 s at 200 factors instead of
    10 s; ``docs/reliability.md``)."""
    if term.groups or len(term.tensors) < 2:
        return term, []
    first, classes = colour_classes(term)
    tensors = first.tensors
    if all(len(members) == 1 for members in classes):
        return first, []  # the colours order every tensor
    containers = _containers(tensors)
    readings = [_Search(_Reading(containers), [], set(), set())]
    for members in classes:
        watched = _watched(tensors, members, containers)
        ranked = _isolated_ranks(tensors, members, containers)
        for search in readings:
            search.watch(watched)
        for _ in members:
            found: list[
                tuple[_Search, list[tuple[int, Descriptor]], list[int] | None]
            ] = []
            least: Descriptor | None = None
            for search in readings:
                tried, rank = search.candidates(tensors, ranked)
                found.append((search, tried, rank))
                for _, read in tried:
                    if least is None or read < least:
                        least = read
            following: list[_Search] = []
            for search, tried, rank in found:
                best = {member for member, read in tried if read == least}
                if rank is not None and tried[-1][1] == least:
                    best.update(search.rest(rank))  # the whole rank reads least
                for member in sorted(best):
                    following.append(search.then(tensors[member], member, watched))
                    if len(following) > READINGS_LIMIT:
                        return first, []
            readings = following
    order = min(readings, key=lambda found: repr(found.reading.unread())).order
    return (
        replace(first, tensors=tuple(tensors[n] for n in order)),
        [c for c in classes if len(c) > 1],
    )


def class_orders(term: Term, members: list[int]) -> list[Term]:
    """``term`` with the tensors at ``members`` (one class of tensors of one
    colour) in every order, one per certificate, by increasing
    certificate."""
    found: dict[str, tuple[Tensor, ...]] = {}
    for order in itertools.permutations(members):
        tensors = list(term.tensors)
        for position, source in zip(members, order, strict=True):
            tensors[position] = term.tensors[source]
        found.setdefault(certificate(tensors), tuple(tensors))
    return [replace(term, tensors=found[key]) for key in sorted(found)]
