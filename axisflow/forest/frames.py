"""Frames, modes and mode maps: the one home of relabelling.

Pure Python, no xDSL. Every other module that renames indices calls here.

* **Frame.** A value lives in its own index frame: its result indices with
  labels of its own (the frontend numbers them canonically, see
  ``canonical_renaming``).
* **Modes.** The modes of a frame are its indices followed by the proto
  indices of its composites at any depth, each once (``expand_modes``): a
  value carrying ``a_1<i_1,i_2>`` depends on the pair ``(i_1, i_2)`` too.
* **Mode map.** Where a value is read (a use-site in a tree, or a factor in a
  consumer's frame) every mode of its frame has a label there. The labels of
  the result indices are positional (``[a_3<i_5,i_6>]``); the protos follow
  from them, except that a composite's protos of one index space can pair up
  in several ways (proto lists are symmetric sets). Such pairings are carried
  explicitly (``protos``), never guessed: ``mode_map`` derives the pairings
  that are forced, takes one of those that cannot matter (protos that occur
  in one composite of the frame and nowhere else are interchangeable), and
  reports an ambiguous one.

All functions here are iterative: proto nesting of any depth is fine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from axisflow.roles.index import Index

ProtoPairs = tuple[tuple[Index, Index], ...]
"""An explicit proto map: ``(frame mode, label there)`` pairs."""


class FrameError(ValueError):
    """An inconsistent or ambiguous relabelling; the message names the place."""


def proto_closure(indices: Iterable[Index]) -> list[Index]:
    """The proto indices of ``indices`` at any depth, outer before inner
    (pre-order), with repetitions."""
    found: list[Index] = []
    for index in indices:
        stack = list(reversed(index.protos))
        while stack:
            proto = stack.pop()
            found.append(proto)
            stack.extend(reversed(proto.protos))
    return found


def expand_modes(indices: Iterable[Index]) -> tuple[Index, ...]:
    """The modes of a tensor carrying ``indices``: the indices, then their
    proto indices at any depth, each once, in order of first appearance."""
    indices = tuple(indices)
    found: dict[Index, None] = dict.fromkeys(indices)
    for index in indices:
        if index.protos:
            for proto in proto_closure(indices):
                found.setdefault(proto, None)
            break
    return tuple(found)


def proto_modes(indices: Sequence[Index]) -> tuple[Index, ...]:
    """The modes of ``indices`` that are not among the indices themselves:
    the modes a positional relabelling does not name directly."""
    for index in indices:
        if index.protos:
            plain = set(indices)
            return tuple(m for m in expand_modes(indices) if m not in plain)
    return ()


class _Binder:
    """A partial bijective, type-preserving map from frame modes to labels."""

    def __init__(self, where: str) -> None:
        self.where = where
        self.forward: dict[Index, Index] = {}
        self.backward: dict[Index, Index] = {}

    def bind(self, source: Index, target: Index) -> None:
        where = self.where
        if not source.same_type(target):
            raise FrameError(
                f"{where}: index {target} stands for {source} of the value's frame, "
                "which is of another index space"
            )
        seen = self.forward.setdefault(source, target)
        if seen != target:
            raise FrameError(
                f"{where}: the value's index {source} is labelled both {seen} and "
                f"{target} here"
            )
        back = self.backward.setdefault(target, source)
        if back != source:
            raise FrameError(
                f"{where}: label {target} stands for both {back} and {source} of "
                "the value's frame"
            )


def _shape(index: Index) -> tuple[str, int]:
    """What a proto pairing must preserve at the first level."""
    return (index.base_key, len(index.protos))


def mode_map(
    frame: Sequence[Index],
    here: Sequence[Index],
    protos: Iterable[tuple[Index, Index]] = (),
    where: str = "relabelling",
) -> dict[Index, Index]:
    """The label of every mode of ``frame`` where it is read as ``here``.

    Result indices map by position; ``protos`` gives pairings of proto modes
    explicitly; a proto whose pairing is forced (the only unpaired proto of
    its index space in its composite) is derived. Raises ``FrameError`` if
    the relabelling is inconsistent (two labels for one mode, one label for
    two modes, another index space, proto lists that do not match) or if a
    pairing is neither given nor forced.

    Results are shared (memoised per distinct ``frame``, ``here`` and
    ``protos``: a forest reads few values under few labellings many times):
    callers must not change the returned map.
    """
    key = (tuple(frame), tuple(here), tuple(protos))
    found = _MODE_MAPS.get(key)
    if found is None:
        found = _derive(key[0], key[1], key[2], where, None)[0]
        if len(_MODE_MAPS) >= _MODE_MAPS_LIMIT:
            _MODE_MAPS.clear()
        _MODE_MAPS[key] = found
    return found


_MODE_MAPS: dict[
    tuple[tuple[Index, ...], tuple[Index, ...], tuple[tuple[Index, Index], ...]],
    dict[Index, Index],
] = {}
_MODE_MAPS_LIMIT = 65536


def minimal_protos(
    frame: Sequence[Index], here: Sequence[Index], full: Mapping[Index, Index]
) -> ProtoPairs:
    """Pairs of ``full`` (a complete mode map of ``frame`` read as ``here``)
    from which ``mode_map`` derives all of ``full``: one pairing per choice
    that is not forced, in derivation order. What the IR prints after
    ``protos``."""
    return tuple(_derive(frame, here, (), "relabelling", full)[1])


def _derive(
    frame: Sequence[Index],
    here: Sequence[Index],
    protos: Iterable[tuple[Index, Index]],
    where: str,
    fallback: Mapping[Index, Index] | None,
) -> tuple[dict[Index, Index], list[tuple[Index, Index]]]:
    """``mode_map``; with ``fallback``, an ambiguous pairing is taken from it
    (returned as the second item) instead of being an error."""
    taken: list[tuple[Index, Index]] = []
    chosen = False  # an interchangeable pairing was taken (sorted)
    if len(frame) != len(here):
        raise FrameError(
            f"{where}: {len(here)} labels for a value with {len(frame)} indices"
        )
    binder = _Binder(where)
    for source, target in zip(frame, here, strict=True):
        binder.bind(source, target)
    modes = set(expand_modes(frame))
    for source, target in protos:
        if source not in modes:
            raise FrameError(
                f"{where}: the proto map names {source}, which is no mode of the "
                "value's frame"
            )
        binder.bind(source, target)
    pending = [(s, t) for s, t in zip(frame, here, strict=True) if s.protos or t.protos]
    queued = set(pending)
    while pending:
        waiting: list[tuple[Index, Index]] = []
        progress = False
        for source, target in pending:
            done, bound = _pair_protos(binder, source, target)
            progress = progress or bound or done
            if not done:
                waiting.append((source, target))
                continue
            for proto in source.protos:
                image = binder.forward[proto]
                if (proto.protos or image.protos) and (proto, image) not in queued:
                    queued.add((proto, image))
                    waiting.append((proto, image))
        if not progress:
            if fallback is None and _pair_interchangeable(binder, frame, waiting):
                chosen = True
                pending = waiting
                continue
            source, target = waiting[0]
            unpaired = [p for p in source.protos if p not in binder.forward]
            if fallback is not None:
                proto = unpaired[0]  # one pairing; the rest may now be forced
                taken.append((proto, fallback[proto]))
                binder.bind(proto, fallback[proto])
                pending = waiting
                continue
            raise FrameError(
                f"{where}: the pairing of the protos {', '.join(map(str, unpaired))} "
                f"of {source} with those of {target} is ambiguous; give it "
                "explicitly (protos [...])"
            )
        pending = waiting
    # In mode order: callers read the map as the list of the frame's modes.
    kind = SortedPairing if chosen else dict
    return kind((mode, binder.forward[mode]) for mode in expand_modes(frame)), taken


class SortedPairing(dict[Index, Index]):
    """A mode map in which interchangeable protos were paired in sorted order
    (``_pair_interchangeable``): a consumer that relates them otherwise
    needs the pairing given (``node_labels`` says so)."""


def _pair_interchangeable(
    binder: _Binder, frame: Sequence[Index], waiting: Sequence[tuple[Index, Index]]
) -> bool:
    """Pair the open protos of the first waiting composite whose open protos
    are interchangeable, in sorted order; whether one was found.

    Protos that occur in one composite of the value's frame and nowhere else
    (no plain index, no other composite, no protos of their own) can be
    permuted without changing the value: the composite depends on the set
    of them (proto lists are symmetric, and the frontend's CSE relies on
    that symmetry of the data), and no other mode of the value tells them
    apart. Every pairing of such protos is the same relabelling up to that
    symmetry, so one is taken (sorted frame protos to sorted labels) instead
    of calling the use-site ambiguous. Protos also carried plainly or shared
    with another composite stay an error when nothing forces them."""
    occurrences: dict[Index, int] = {}
    for index in (*frame, *proto_closure(frame)):
        occurrences[index] = occurrences.get(index, 0) + 1
    for source, target in waiting:
        unpaired = [p for p in source.protos if p not in binder.forward]
        if not all(occurrences.get(p) == 1 and not p.protos for p in unpaired):
            continue
        taken = {binder.forward[p] for p in source.protos if p in binder.forward}
        free = [label for label in target.protos if label not in taken]
        by_shape: dict[tuple[str, int], list[Index]] = {}
        for label in free:
            by_shape.setdefault(_shape(label), []).append(label)
        for proto in sorted(unpaired, key=Index.sort_key):
            labels = by_shape.get(_shape(proto))
            if not labels:
                return False  # the lists do not match: _pair_protos says how
            labels.sort(key=Index.sort_key)
            binder.bind(proto, labels.pop(0))
        return True
    return False


def _pair_protos(binder: _Binder, source: Index, target: Index) -> tuple[bool, bool]:
    """Check and extend the pairing of one composite's protos.

    Returns (all protos paired, some pairing was added now).
    """
    where = binder.where
    if len(source.protos) != len(target.protos):
        raise FrameError(
            f"{where}: {target} and {source} have proto lists of different lengths"
        )
    free = list(target.protos)
    unpaired: list[Index] = []
    for proto in source.protos:
        image = binder.forward.get(proto)
        if image is None:
            unpaired.append(proto)
        elif image in free:
            free.remove(image)
        else:
            raise FrameError(
                f"{where}: proto {proto} of {source} maps to {image}, which is not "
                f"a proto of {target}"
            )
    if not unpaired:
        return True, False
    groups: dict[tuple[str, int], tuple[list[Index], list[Index]]] = {}
    for proto in unpaired:
        groups.setdefault(_shape(proto), ([], []))[0].append(proto)
    for image in free:
        group = groups.get(_shape(image))
        if group is None:
            raise FrameError(
                f"{where}: proto {image} of {target} stands for no proto of {source}"
            )
        group[1].append(image)
    bound = False
    for sources, targets in groups.values():
        if len(sources) != len(targets):
            raise FrameError(
                f"{where}: the protos of {source} and {target} do not match"
            )
        if len(sources) == 1:
            binder.bind(sources[0], targets[0])
            bound = True
    return all(p in binder.forward for p in source.protos), bound


def node_labels(
    site_map: Mapping[Index, Index],
    factor_maps: Sequence[Mapping[Index, Index]],
    child_maps: Sequence[Mapping[Index, Index]],
    where: str,
) -> dict[Index, Index]:
    """The label of every mode of a contraction node at one use-site.

    ``site_map``: the value's modes -> labels at the use-site;
    ``factor_maps[k]``: factor k's modes -> the node's modes (the value's
    frame); ``child_maps[k]``: factor k's modes -> labels at its use-site.
    The result maps the node's modes (the value's, then those summed at the
    node) to labels; raises ``FrameError`` if two of the maps disagree.
    """
    # Fast path (every use-site of every verification comes here): plain
    # dictionaries, no messages. On any disagreement the checked path below
    # runs from the start and raises the exact error.
    forward: dict[Index, Index] = {}
    backward: dict[Index, Index] = {}
    consistent = True
    for mode, label in site_map.items():
        if mode.base_key != label.base_key or label in backward:
            consistent = False
            break
        forward[mode] = label
        backward[label] = mode
    if consistent and len(forward) == len(site_map):
        for factor_map, child_map in zip(factor_maps, child_maps, strict=True):
            for mode, node_mode in factor_map.items():
                label = child_map[mode]
                seen = forward.get(node_mode)
                if seen is None:
                    if node_mode.base_key != label.base_key or label in backward:
                        consistent = False
                        break
                    forward[node_mode] = label
                    backward[label] = node_mode
                elif seen is not label and seen != label:
                    consistent = False
                    break
            if not consistent:
                break
        if consistent:
            return forward
    binder = _Binder(where)
    try:
        for mode, label in site_map.items():
            binder.bind(mode, label)
        for factor_map, child_map in zip(factor_maps, child_maps, strict=True):
            for mode, node_mode in factor_map.items():
                binder.bind(node_mode, child_map[mode])
    except FrameError as error:
        if any(isinstance(m, SortedPairing) for m in (site_map, *child_maps)):
            raise FrameError(
                f"{error} (interchangeable protos without protos [...] are paired "
                "in sorted order; give the pairing where this node relates them "
                "otherwise)"
            ) from None
        raise
    return binder.forward


def invert(mapping: Mapping[Index, Index]) -> dict[Index, Index]:
    """The inverse of a bijective map."""
    return {target: source for source, target in mapping.items()}


def explicit_protos(
    frame: Sequence[Index], mapping: Mapping[Index, Index]
) -> ProtoPairs:
    """The pairs of ``mapping`` for the proto modes of ``frame`` (those a
    positional relabelling does not name), in mode order."""
    return tuple((mode, mapping[mode]) for mode in proto_modes(frame))


# --------------------------------------------------------------------------
# Canonical frames
# --------------------------------------------------------------------------


def canonical_renaming(lists: Sequence[Sequence[Index]]) -> dict[Index, Index]:
    """A renaming of every index in ``lists`` (protos included) to canonical
    labels that do not depend on the original labels.

    Indices are numbered per base key from 1: first every index of the lists
    in order of first appearance, then indices that occur only as protos,
    ordered by the places (list, slot, depth) where they occur, then by
    their shape (nested proto structure). Two protos of one shape occurring
    in exactly the same places are interchangeable (proto lists are
    symmetric); the tie is broken by label, and the renaming records which
    one became which, so callers keep the pairing explicit.
    """
    next_ordinal: dict[str, int] = {}
    ordinal: dict[Index, int] = {}

    def number(index: Index) -> None:
        value = next_ordinal.get(index.base_key, 1)
        next_ordinal[index.base_key] = value + 1
        ordinal[index] = value

    for indices in lists:
        for index in indices:
            if index not in ordinal:
                number(index)
    tie_keys = _proto_tie_keys(lists, ordinal)
    for proto in sorted(tie_keys, key=lambda p: (tie_keys[p], p.sort_key())):
        number(proto)
    renamed: dict[Index, Index] = {}
    for index in list(ordinal):
        _rebuild(index, ordinal, renamed)
    return renamed


def _proto_tie_keys(
    lists: Sequence[Sequence[Index]], carried: Mapping[Index, object]
) -> dict[Index, tuple[list[tuple[int, int, int]], tuple[int, int]]]:
    """Per index of ``lists`` that occurs only as a proto (not in
    ``carried``): the label-free key ``canonical_renaming`` orders it by,
    its sorted places (list, slot, depth) and its shape."""
    places: dict[Index, list[tuple[int, int, int]]] = {}
    for list_number, indices in enumerate(lists):
        for slot, index in enumerate(indices):
            stack = [(proto, 1) for proto in reversed(index.protos)]
            while stack:
                proto, depth = stack.pop()
                if proto not in carried:
                    places.setdefault(proto, []).append((list_number, slot, depth))
                stack.extend((inner, depth + 1) for inner in reversed(proto.protos))
    shapes = _shapes(places)
    # Sorted places: the walk's order follows the (label-sorted) proto lists.
    return {proto: (sorted(found), shapes[proto]) for proto, found in places.items()}


def proto_ties(indices: Sequence[Index]) -> list[tuple[Index, ...]]:
    """The groups (two or more, in label order) of proto-only indices of one
    tensor carrying ``indices`` that ``canonical_renaming`` tells apart only
    by their labels: of one shape, in exactly the same places. Proto lists
    are symmetric sets, so a tensor's data must not depend on which member
    of a group is which (``C{a_1<i_1,i_2>;μ̃_1}``: ``i_1`` and ``i_2``); the
    frontend relies on that when it shares a leaf across terms."""
    keys = _proto_tie_keys((indices,), dict.fromkeys(indices))
    groups: dict[tuple[tuple[tuple[int, int, int], ...], tuple[int, int]], list[Index]]
    groups = {}
    for proto in sorted(keys, key=Index.sort_key):
        places, shape = keys[proto]
        groups.setdefault((tuple(places), shape), []).append(proto)
    return [tuple(group) for group in groups.values() if len(group) > 1]


def _shapes(indices: Iterable[Index]) -> dict[Index, tuple[int, int]]:
    """A label-free shape per index, as a flat sortable key: (height, rank),
    where the rank orders the distinct shapes of one height by base key and
    then by the sorted keys of their protos. Computed level by level and
    compared as pairs of ints, so no step recurses on the nesting depth
    (nested shape tuples would, in ``repr`` and in tuple comparison)."""
    height: dict[Index, int] = {}
    order: list[Index] = []  # post-order: protos before the index
    for index in indices:
        stack: list[tuple[Index, bool]] = [(index, False)]
        while stack:
            node, ready = stack.pop()
            if node in height:
                continue
            if ready or not node.protos:
                height[node] = 1 + max((height[p] for p in node.protos), default=-1)
                order.append(node)
                continue
            stack.append((node, True))
            stack.extend((p, False) for p in node.protos if p not in height)
    by_height: dict[int, list[Index]] = {}
    for node in order:
        by_height.setdefault(height[node], []).append(node)
    done: dict[Index, tuple[int, int]] = {}
    for level in sorted(by_height):
        signature = {
            node: (node.base_key, tuple(sorted(done[p] for p in node.protos)))
            for node in by_height[level]
        }
        ranks = {sig: rank for rank, sig in enumerate(sorted(set(signature.values())))}
        for node, sig in signature.items():
            done[node] = (level, ranks[sig])
    return done


def _rebuild(index: Index, ordinal: Mapping[Index, int], done: dict[Index, Index]):
    """``done[index]``: ``index`` with its own and every proto's ordinal
    replaced (post-order, iterative)."""
    stack: list[tuple[Index, bool]] = [(index, False)]
    while stack:
        node, ready = stack.pop()
        if node in done:
            continue
        if ready or not node.protos:
            done[node] = Index(
                node.base_key, ordinal[node], (done[p] for p in node.protos)
            )
            continue
        stack.append((node, True))
        stack.extend((p, False) for p in node.protos if p not in done)
