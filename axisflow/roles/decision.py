"""The loop-role decision tree (``classify_axis``), free of any IR.

Normative description: ``docs/roles.md`` (section 4 of the batching note).
For one value and one batch-loop axis (only the axis's *type*, its base key,
matters) the value is

* ``REDUCTION`` when it carries no index of the axis's type but contracts one
  at its own node;
* ``LOOP_INVARIANT`` when it neither carries nor contracts one;
* ``LOOP_LOCAL`` when every same-type carried slot, at every use-site under a
  same-type loop, is bound to some same-type enclosing loop (and, with loop
  slots supplied, to the same loop instance per slot position);
* ``LOOP_CARRIED`` otherwise, including when no use-site has a same-type
  enclosing loop at all.

The cost is linear in the total size of the occurrences.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import FrozenInstanceError, dataclass
from enum import StrEnum
from typing import cast

from axisflow.roles.index import Index


class LoopRole(StrEnum):
    """What one batch loop means for one value."""

    LOOP_LOCAL = "loop_local"
    """Built inside the loop, one slice at a time; never leaves it."""
    REDUCTION = "reduction"
    """Each iteration contributes a partial sum; accumulated outside."""
    LOOP_CARRIED = "loop_carried"
    """Must be assembled in full (scattered) before it is read."""
    LOOP_INVARIANT = "loop_invariant"
    """Untouched by the loop: it can be hoisted above it."""


@dataclass(frozen=True, slots=True)
class Occurrence:
    """One use-site of a value.

    ``carried`` are the indices the value carries at this use-site (labels of
    the use-site's own tree), ``ectx`` the indices of the enclosing batch
    loops, outermost first. ``slots`` optionally gives the fusion slot of each
    enclosing loop (parallel to ``ectx``; ``-1`` = unknown) and ``site`` a name
    used in explanations; neither changes equality semantics of the indices.

    ``protos`` relates the value's frame to this use-site: ``(mode, label)``
    pairs naming, in the use-site's labels, each proto mode of the value's
    frame (``None``: the caller uses one frame for the value and all its
    use-sites, so ``sliced`` applies to the protos of ``carried`` directly).
    With ``protos`` given, a sliced proto slot is identified by its mode of
    the value's frame, so the answer does not depend on any label.
    """

    carried: tuple[Index, ...]
    ectx: tuple[Index, ...]
    slots: tuple[int, ...] = ()
    site: str = ""
    protos: tuple[tuple[Index, Index], ...] | None = None

    def __init__(
        self,
        carried: Iterable[Index],
        ectx: Iterable[Index],
        slots: Iterable[int] = (),
        site: str = "",
        protos: Iterable[tuple[Index, Index]] | None = None,
    ) -> None:
        object.__setattr__(self, "carried", tuple(carried))
        object.__setattr__(self, "ectx", tuple(ectx))
        object.__setattr__(self, "slots", tuple(slots))
        object.__setattr__(self, "site", site)
        object.__setattr__(self, "protos", None if protos is None else tuple(protos))
        for parameter in ("carried", "ectx"):
            indices = getattr(self, parameter)
            if isinstance(indices, str) or not all(
                isinstance(index, Index) for index in indices
            ):
                raise TypeError(
                    f"Occurrence {parameter} must be Index objects, got {indices!r}"
                )
        if not isinstance(site, str):
            raise TypeError(f"Occurrence site must be a str, got {site!r}")
        if isinstance(slots, str | bytes) or not all(
            isinstance(slot, int) and not isinstance(slot, bool) for slot in self.slots
        ):
            raise TypeError(f"Occurrence slots must be ints, got {slots!r}")
        if self.protos is not None and not all(
            isinstance(pair, tuple)
            and len(pair) == 2
            and all(isinstance(index, Index) for index in pair)
            for pair in self.protos
        ):
            raise TypeError(
                f"Occurrence protos must be (Index, Index) pairs, got {protos!r}"
            )
        if self.slots and len(self.slots) != len(self.ectx):
            raise ValueError(
                f"occurrence has {len(self.ectx)} enclosing loops but "
                f"{len(self.slots)} slots"
            )

    @classmethod
    def trusted(
        cls,
        carried: tuple[Index, ...],
        ectx: tuple[Index, ...],
        slots: tuple[int, ...] = (),
        site: str = "",
        protos: tuple[tuple[Index, Index], ...] | None = None,
    ) -> Occurrence:
        """Build from tuples already checked by the caller (hot paths)."""
        occurrence = object.__new__(cls)
        _set_carried(occurrence, carried)
        _set_ectx(occurrence, ectx)
        _set_slots(occurrence, slots)
        _set_site(occurrence, site)
        _set_protos(occurrence, protos)
        return occurrence

    def slot_of(self, loop_index: Index) -> int:
        """The slot of the innermost enclosing loop binding ``loop_index``.

        ``-1`` when slots are unknown or no enclosing loop binds that index.
        """
        if not self.slots:
            return -1
        for position in range(len(self.ectx) - 1, -1, -1):
            if self.ectx[position] == loop_index:
                return self.slots[position]
        return -1


# The slots' own setters (a frozen occurrence refuses attribute assignment).
_set_carried = Occurrence.__dict__["carried"].__set__
_set_ectx = Occurrence.__dict__["ectx"].__set__
_set_slots = Occurrence.__dict__["slots"].__set__
_set_site = Occurrence.__dict__["site"].__set__
_set_protos = Occurrence.__dict__["protos"].__set__

EnclosingSlot = Callable[[Occurrence, Index], int]
"""``enclosing_slot(occurrence, loop_index) -> slot`` (``-1`` = unknown)."""


def occurrence_slot(occurrence: Occurrence, loop_index: Index) -> int:
    """An ``enclosing_slot`` that reads the slots recorded in the occurrence."""
    return occurrence.slot_of(loop_index)


class Verdict:
    """A role with the evidence that decided it (for ``explain``).

    Immutable. The decision tree states its ``reason`` lazily: the text is
    formatted when read (``classify-axes`` reads it only to explain), so
    deciding formats no labels. The role has a slot of its own and the rest
    lives in one tuple, so building a verdict is two stores (the forest
    passes build one per value and index space).
    """

    __slots__ = ("_state", "role")

    role: LoopRole
    """The role decided."""
    _state: tuple[
        int | None,
        Index | None,
        tuple[str, ...],
        str | None,
        Callable[..., str] | None,
        tuple[object, ...],
    ]
    """occurrence, index, details, then the reason, or the function and the
    arguments that state it."""

    def __init__(
        self,
        role: LoopRole,
        reason: str,
        occurrence: int | None = None,
        index: Index | None = None,
        details: tuple[str, ...] = (),
    ) -> None:
        _set_role(self, role)
        _set_state(self, (occurrence, index, details, reason, None, ()))

    @property
    def occurrence(self) -> int | None:
        """Position of the deciding occurrence in the list, if one decided."""
        return self._state[0]

    @property
    def index(self) -> Index | None:
        """The deciding index (unbound carried slot, contracted index)."""
        return self._state[1]

    @property
    def details(self) -> tuple[str, ...]:
        """Further evidence, if any."""
        return self._state[2]

    @property
    def reason(self) -> str:
        """Why: the use-site and index that decided, in words."""
        _, _, _, reason, because, arguments = self._state
        if reason is not None:
            return reason
        return cast(Callable[..., str], because)(*arguments)

    def _fields(self) -> tuple[object, ...]:
        return (self.role, self.reason, self.occurrence, self.index, self.details)

    def __setattr__(self, name: str, value: object) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._fields() == cast(Verdict, other)._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"Verdict(role={self.role!r}, reason={self.reason!r}, "
            f"occurrence={self.occurrence!r}, index={self.index!r}, "
            f"details={self.details!r})"
        )


_set_role = cast(Callable[[Verdict, LoopRole], None], Verdict.__dict__["role"].__set__)
_set_state = cast(
    Callable[[Verdict, tuple[object, ...]], None],
    Verdict.__dict__["_state"].__set__,
)
"""Store a verdict's fields (the slots' own setters: ``Verdict`` refuses
attribute assignment)."""
_new = object.__new__


def _stated(
    role: LoopRole,
    because: Callable[..., str],
    arguments: tuple[object, ...],
    occurrence: int | None = None,
    index: Index | None = None,
) -> Verdict:
    """A verdict whose reason is ``because(*arguments)``, formatted when
    read."""
    verdict = _new(Verdict)
    _set_role(verdict, role)
    _set_state(verdict, (occurrence, index, (), None, because, arguments))
    return verdict


def _reduction_reason(index: Index) -> str:
    return f"contracts {index} at its own node"


def _invariant_reason(key: str) -> str:
    return f"neither carries nor contracts an index of {key}"


def _unbound_reason(occurrence: Occurrence, number: int, index: Index, key: str) -> str:
    site = _site(occurrence, number)
    return f"{site} carries {index}, bound by no enclosing loop of {key}"


def _crossed_reason(
    occurrence: Occurrence,
    number: int,
    index: Index,
    slot: int,
    first: Occurrence,
    first_number: int,
    first_slot: int,
) -> str:
    return (
        f"{_site(occurrence, number)} reads {index} from loop instance {slot}, but "
        f"{_site(first, first_number)} binds that slot in instance {first_slot}"
    )


def _unrelated_reason(occurrence: Occurrence, number: int, key: str) -> str:
    return (
        f"{_site(occurrence, number)} is under a loop of {key} but carries no "
        f"{key} index (inconsistent relabelling; conservative answer)"
    )


def _free_reason(key: str) -> str:
    return f"no enclosing loop of {key} at any use-site: a free result index"


def _local_reason(key: str) -> str:
    return f"every {key} slot is bound to an enclosing loop at every use-site"


def _slots(
    carried: Sequence[Index], key: str, sliced: frozenset[Index]
) -> Iterator[tuple[tuple[int, int], Index]]:
    """Same-type carried slots with their positions.

    A plain carried index is a slot; a proto index (any depth) of a carried
    composite is a slot exactly when it is in ``sliced``. Position is
    ``(carried position, 0)`` for the plain index and ``(carried position, k)``
    for the k-th proto (depth first, 1-based).
    """
    for position, index in enumerate(carried):
        if index.base_key == key:
            yield (position, 0), index
        if index.protos and sliced:
            for k, proto in enumerate(index.all_protos(), start=1):
                if proto.base_key == key and proto in sliced:
                    yield (position, k), proto


def _plain_slots(
    carried: Sequence[Index], key: str
) -> list[tuple[tuple[int, int], Index]]:
    """The plain carried indices of ``key`` at their positions ``(position,
    0)``: every slot when nothing is sliced (a list, no generator frame)."""
    found: list[tuple[tuple[int, int], Index]] = []
    for position, index in enumerate(carried):
        if index.base_key == key:
            found.append(((position, 0), index))
    return found


def _occurrence_slots(
    occurrence: Occurrence, key: str, sliced: frozenset[Index]
) -> Iterator[tuple[object, Index]]:
    """Same-type slots of a use-site with their positions.

    Without ``occurrence.protos``, as ``_slots`` (one frame for everything).
    With it, the plain carried indices by position, then each sliced proto
    mode of the value's frame, positioned by that mode and labelled as the
    use-site names it.
    """
    if occurrence.protos is None:
        yield from _slots(occurrence.carried, key, sliced)
        return
    yield from _plain_slots(occurrence.carried, key)
    for mode, label in occurrence.protos:
        if label.base_key == key and mode in sliced:
            yield mode, label


def _site(occurrence: Occurrence, number: int) -> str:
    return occurrence.site or f"use-site #{number}"


def _check_indices(parameter: str, indices: object) -> None:
    if isinstance(indices, str | bytes) or not isinstance(indices, Sequence):
        raise TypeError(
            f"{parameter} must be a sequence of Index, got {type(indices).__name__}"
        )
    for index in indices:
        if not isinstance(index, Index):
            raise TypeError(
                f"{parameter} must hold Index objects (Index.parse('i_1')), got "
                f"{index!r}"
            )


def _check_arguments(
    carried: object,
    contracted_below: object,
    axis: object,
    occurrences: object,
    enclosing_slot: object,
) -> None:
    """The boundary check of ``decide_axis``: linear, like the decision."""
    _check_indices("carried", carried)
    _check_indices("contracted_below", contracted_below)
    if not isinstance(axis, Index):
        raise TypeError(
            f"axis must be an Index (Index.parse('i')), got {type(axis).__name__}"
        )
    if isinstance(occurrences, str | bytes) or not isinstance(occurrences, Sequence):
        raise TypeError(
            "occurrences must be a sequence of Occurrence, got "
            f"{type(occurrences).__name__}"
        )
    for occurrence in occurrences:
        if not isinstance(occurrence, Occurrence):
            raise TypeError(
                f"occurrences must hold Occurrence objects, got {occurrence!r}"
            )
    if enclosing_slot is not None and not callable(enclosing_slot):
        raise TypeError(
            "enclosing_slot must be a function (occurrence, loop) -> slot or None, "
            f"got {type(enclosing_slot).__name__}"
        )


def _checked_sliced(sliced: object) -> Iterable[Index]:
    """``sliced`` as the decision reads it: a collection of Index (a
    one-shot iterable is read once, here); ``TypeError`` otherwise."""
    if isinstance(sliced, str | bytes) or not isinstance(sliced, Iterable):
        raise TypeError(
            f"sliced must be an iterable of Index, got {type(sliced).__name__}"
        )
    if not isinstance(sliced, Collection):
        sliced = tuple(cast(Iterable[object], sliced))
    for index in cast(Collection[object], sliced):
        if not isinstance(index, Index):
            raise TypeError(
                f"sliced must hold Index objects (Index.parse('i_1')), got {index!r}"
            )
    return cast(Collection[Index], sliced)


def decide_axis(
    carried: Sequence[Index],
    contracted_below: Sequence[Index],
    axis: Index,
    occurrences: Sequence[Occurrence],
    sliced: Iterable[Index] = (),
    enclosing_slot: EnclosingSlot | None = None,
) -> Verdict:
    """``classify_axis`` with the evidence that decided the role."""
    _check_arguments(carried, contracted_below, axis, occurrences, enclosing_slot)
    sliced = _checked_sliced(sliced)
    return decide_axis_trusted(
        carried, contracted_below, axis, occurrences, sliced, enclosing_slot
    )


def decide_axis_trusted(
    carried: Sequence[Index],
    contracted_below: Sequence[Index],
    axis: Index,
    occurrences: Sequence[Occurrence],
    sliced: Iterable[Index] = (),
    enclosing_slot: EnclosingSlot | None = None,
) -> Verdict:
    """``decide_axis`` without its boundary check of the argument types, for
    callers that build the arguments themselves (the forest model's roles)."""
    key = axis.base_key
    if not sliced:
        sliced_set = _NOTHING_SLICED
    elif isinstance(sliced, frozenset):
        sliced_set = cast(frozenset[Index], sliced)
    else:
        sliced_set = frozenset(sliced)
    for index in carried:
        if index.base_key == key:
            break  # a plain carried slot (the common case, read in place)
    else:
        if not sliced_set or next(_slots(carried, key, sliced_set), None) is None:
            return _uncarried(contracted_below, key)

    under_same_type_loop = False
    slot_of_position: dict[object, tuple[int, int]] = {}
    several = len(occurrences) > 1
    # Loop instances can disagree only between two use-sites (a slot
    # position occurs once per use-site): one use-site needs no slot.
    instances = enclosing_slot if several else None
    # An occurrence object repeated in the list (callers share one between
    # use-sites nothing tells apart) decides nothing the first time did not.
    visited: set[int] | None = set() if several else None
    for number, occurrence in enumerate(occurrences):
        if visited is not None:
            if id(occurrence) in visited:
                continue
            visited.add(id(occurrence))
        loops: set[Index] = set()
        for loop in occurrence.ectx:
            if loop.base_key == key:
                loops.add(loop)
        if not loops:
            continue  # Q2b skips use-sites with no loop of this type
        under_same_type_loop = True
        slots = (
            list(_occurrence_slots(occurrence, key, sliced_set))
            if sliced_set
            else _plain_slots(occurrence.carried, key)
        )
        if not slots:
            return _stated(
                LoopRole.LOOP_CARRIED,
                _unrelated_reason,
                (occurrence, number, key),
                occurrence=number,
            )
        for position, index in slots:
            if index not in loops:
                return _stated(
                    LoopRole.LOOP_CARRIED,
                    _unbound_reason,
                    (occurrence, number, index, key),
                    occurrence=number,
                    index=index,
                )
            if instances is None:
                continue
            slot = instances(occurrence, index)
            if slot == -1:
                continue
            first = slot_of_position.setdefault(position, (slot, number))
            if first[0] != slot:
                return _stated(
                    LoopRole.LOOP_CARRIED,
                    _crossed_reason,
                    (
                        occurrence,
                        number,
                        index,
                        slot,
                        occurrences[first[1]],
                        first[1],
                        first[0],
                    ),
                    occurrence=number,
                    index=index,
                )
    if not under_same_type_loop:
        return _stated(LoopRole.LOOP_CARRIED, _free_reason, (key,))
    return _stated(LoopRole.LOOP_LOCAL, _local_reason, (key,))


_NOTHING_SLICED: frozenset[Index] = frozenset()


def _uncarried(contracted_below: Sequence[Index], key: str) -> Verdict:
    """The verdict for a value carrying no slot of ``key``: a reduction if it
    contracts an index of ``key`` at its own node, else loop-invariant."""
    for index in contracted_below:
        if index.base_key == key:
            return _stated(LoopRole.REDUCTION, _reduction_reason, (index,), index=index)
    return _stated(LoopRole.LOOP_INVARIANT, _invariant_reason, (key,))


def classify_axis(
    carried: Sequence[Index],
    contracted_below: Sequence[Index],
    axis: Index,
    occurrences: Sequence[Occurrence],
    sliced: Iterable[Index] = (),
    enclosing_slot: EnclosingSlot | None = None,
) -> LoopRole:
    """Classify one batch-loop ``axis`` against one value.

    ``carried``: the value's own result indices; ``contracted_below``: the
    indices it contracts at its own node; ``occurrences``: every use-site;
    ``sliced``: the value's sliced modes (proto indices of a carried composite
    count as carried slots exactly when listed here); ``enclosing_slot``: the
    fusion slot of an enclosing loop at an occurrence (``-1`` = unknown),
    making the lockstep test instance-aware per carried-slot position (it is
    consulted only to compare use-sites: never for a single occurrence).
    An occurrence object repeated in ``occurrences`` is read once, at its
    first position.
    """
    return decide_axis(
        carried, contracted_below, axis, occurrences, sliced, enclosing_slot
    ).role
