"""The user's tensors for a SeQuant expression: keys, axis layout, checks.

Pure Python and NumPy, no xDSL (Dask and Zarr are imported only when an
input is one of theirs). ``read_inputs`` takes one array per *input* of an
expression, checks it and resolves the extents; ``Inputs.leaf_arrays`` then
gives every leaf of a forest built from that expression its array in the
leaf's own frame. See ``docs/execution.md``.

Inputs and keys
    An input is a tensor label with one index structure: every occurrence
    of the label whose indices are the same up to a renaming is one input
    (``t{a_3;i_2}`` and ``t{a_1;i_4}`` are the input ``t{a;i}``; the doubles
    ``t{a_1,a_2;i_1,i_2}`` are another, ``t{a,a;i,i}``). Its *exact key* is
    the tensor written in its canonical frame, the frontend's leaf frame
    (``axisflow.forest.frames.canonical_renaming``): ``C{a_1<i_1,i_2>;μ̃_1}``.
    Its *key* drops the ordinals, ``C{a<i,i>;μ̃}``, when no other input of
    the expression reads the same that way (else the key is the exact key).
    An array may be given under the key, the exact key, or the bare label
    when the label has one input only (``f`` for an expression whose only
    Fock block is ``f{i;a}``). Groups are written ``bra;ket`` and ``;aux``
    when there is one (``g{μ̃;i;Κ}``), so ``g{μ̃,i;Κ}`` is another input.
    The symmetry suffix (``:N-S-S``) takes no part: the frontend never
    merges two occurrences by their declared symmetries (a bra-ket swapped
    occurrence is an input of its own).

Axis layout
    An input's axes are its indices in the order of the exact key (bra,
    then ket, then aux, as written), then its proto-only indices (those
    that occur only inside a composite) in order of first appearance: the
    dense model of the memory model (``docs/pipeline.md``), where
    ``a_1<i_1,i_2>`` is an axis of the composite kind's extent (``a<2>``)
    and the pair ``(i_1, i_2)`` it belongs to is two more axes.
    ``C{a<i,i>;μ̃}`` has axes ``(a_1<i_1,i_2>, μ̃_1, i_1, i_2)``;
    ``t{a<i>;i}`` (``t{a_1<i_1>;i_1}``) has ``(a_1<i_1>, i_1)``: its proto
    is its ket index, no extra axis. ``input_signatures`` lists every input
    with its axes.

Checks (``InputError``, each message naming the input, the axis and the
sizes)
    every input given once, nothing given that is not an input; real
    numbers; the number of axes; every axis against the extents, given
    (``extents``) or inferred from the first input carrying the space (a
    composite axis has its kind's extent, ``a<2>``; given only ``a``, the
    kind has ``a``'s, as the memory model sizes it); and the symmetry the
    frontend relies on: a composite's proto-only indices of one shape in
    the same places (``i_1``, ``i_2`` of ``C{a_1<i_1,i_2>;μ̃_1}``) are
    paired in either order (``frames.proto_ties``), so the array must be
    symmetric under exchanging them. That is checked on a random projection
    (every other axis contracted with a random vector: one pass over the
    data) to ``SYMMETRY_TOLERANCE``; ``assume_symmetric=True`` skips it.
    Last, every value finite (a NaN or an infinity would make the whole
    residual NaN after the run): a NumPy array at once, a Dask or Zarr
    array when it is read (``Inputs.array``), the message naming the
    first such element.
"""

from __future__ import annotations

import itertools
import math
import os
import re
import unicodedata
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeGuard

import numpy as np
from numpy.typing import NDArray

from axisflow.forest.frames import canonical_renaming, expand_modes, proto_ties
from axisflow.forest.model import Forest
from axisflow.numerals import check_count
from axisflow.order.extents import ExtentError, split_kind
from axisflow.roles.index import Index
from axisflow.sequant.forest import (
    PolicyError,
    parse_extents,
    resolve_space_key,
    space_aliases,
)
from axisflow.sequant.syntax import Expression, SequantError, Tensor, parse

Array = NDArray[np.float64]

SYMMETRY_TOLERANCE = 1e-10
"""Largest relative difference, on the random projection, between an input
and its image under a proto exchange it must be symmetric under."""

_PROJECTION_SEED = 27
"""Seed of the random projection vectors: the same data, the same verdict."""


class InputError(ValueError):
    """Inputs that do not fit the expression; the message names the input,
    the axis and both sizes, or the pairing the data breaks."""


class ArrayLike(Protocol):
    """What an input array must offer without being read: a shape and a
    dtype (NumPy, Dask and Zarr arrays do); ``numpy.asarray`` reads it."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def dtype(self) -> object: ...


InputSource = Mapping[str, object] | str | os.PathLike[str]
"""Arrays by key (NumPy, Dask, Zarr, or anything ``numpy.asarray`` reads),
or the path of a ``.npz`` file or a Zarr store holding them by key."""


# --------------------------------------------------------------------------
# Signatures: which inputs an expression has, and their axes
# --------------------------------------------------------------------------


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def _stripped(index: Index) -> str:
    """``index``'s label without ordinals, at any depth (``a_1<i_1,i_2>`` ->
    ``a<i,i>``; a text, since the same proto may then repeat)."""
    done: dict[Index, str] = {}
    stack: list[tuple[Index, bool]] = [(index, False)]
    while stack:
        node, ready = stack.pop()
        if node in done:
            continue
        if ready or not node.protos:
            inner = ",".join(done[p] for p in node.protos)
            done[node] = f"{node.base_key}<{inner}>" if node.protos else node.base_key
            continue
        stack.append((node, True))
        stack.extend((p, False) for p in node.protos if p not in done)
    return done[index]


def _written(
    label: str, layout: tuple[int, int, int], indices: Sequence[Index | str]
) -> str:
    """``label{bra;ket}`` or ``label{bra;ket;aux}``, as SeQuant writes it
    (indices, or their labels as text)."""
    bra, ket = layout[0], layout[0] + layout[1]
    groups = [indices[:bra], indices[bra:ket]]
    if layout[2]:
        groups.append(indices[ket:])
    body = ";".join(
        ",".join(i if isinstance(i, str) else i.full_label for i in group)
        for group in groups
    )
    return _nfc(f"{label}{{{body}}}")


def _kind(mode: Index) -> str:
    """The extent key of one axis: ``a<2>`` for a composite, else its space."""
    if mode.protos:
        return f"{mode.base_key}<{len(mode.protos)}>"
    return mode.base_key


@dataclass(frozen=True)
class InputSignature:
    """One input of an expression: a label with one index structure.

    ``frame`` is the canonical frame (the frontend's leaf frame), ``modes``
    the array's axes in order (``frame`` then the proto-only indices),
    ``ties`` the groups of axes (positions in ``modes``) the data must be
    symmetric in (``frames.proto_ties``)."""

    label: str
    layout: tuple[int, int, int]
    frame: tuple[Index, ...]
    modes: tuple[Index, ...]
    ties: tuple[tuple[int, ...], ...]

    @property
    def exact_key(self) -> str:
        """The tensor in its canonical frame: ``C{a_1<i_1,i_2>;μ̃_1}``."""
        return _written(self.label, self.layout, self.frame)

    @property
    def short_key(self) -> str:
        """The tensor without ordinals: ``C{a<i,i>;μ̃}``."""
        return _written(self.label, self.layout, [_stripped(i) for i in self.frame])

    @property
    def axis_kinds(self) -> tuple[str, ...]:
        """The extent key of each axis: a space (``i``) or, for a composite,
        its kind (``a<2>``)."""
        return tuple(_kind(m) for m in self.modes)


def signature_of(tensor: Tensor) -> tuple[InputSignature, dict[Index, Index]]:
    """The input ``tensor`` reads, and the label each of its axes
    (``InputSignature.modes``) has in ``tensor``."""
    renaming = canonical_renaming((tensor.indices,))
    frame = tuple(renaming[i] for i in tensor.indices)
    modes = expand_modes(frame)
    position = {mode: k for k, mode in enumerate(modes)}
    ties = tuple(tuple(position[m] for m in group) for group in proto_ties(frame))
    signature = InputSignature(_nfc(tensor.label), tensor.layout, frame, modes, ties)
    labels = {renaming[label]: label for label in expand_modes(tensor.indices)}
    return signature, labels


def input_signatures(expression: Expression) -> tuple[InputSignature, ...]:
    """Every input of ``expression`` (its tensors, operators aside), in order
    of first appearance."""
    found: dict[str, InputSignature] = {}
    for term in expression.terms:
        for tensor in term.tensors:
            signature, _ = signature_of(tensor)
            found.setdefault(signature.exact_key, signature)
    return tuple(found.values())


def input_keys(signatures: Sequence[InputSignature]) -> dict[str, str]:
    """Each signature's key (by exact key): the short key where no other
    signature has the same, else the exact key."""
    shorts: dict[str, int] = {}
    for signature in signatures:
        shorts[signature.short_key] = shorts.get(signature.short_key, 0) + 1
    return {
        s.exact_key: s.short_key if shorts[s.short_key] == 1 else s.exact_key
        for s in signatures
    }


# --------------------------------------------------------------------------
# Reading the sources
# --------------------------------------------------------------------------


def _is_array(value: object) -> TypeGuard[ArrayLike]:
    return hasattr(value, "shape") and hasattr(value, "dtype")


@contextmanager
def _opened(inputs: object) -> Iterator[tuple[Mapping[str, object], bool]]:
    """The arrays of ``inputs`` by the names given (a store's are read only
    when asked for), and whether they come from a store (whose entries that
    are no input are ignored)."""
    if isinstance(inputs, Mapping):
        for name in inputs:
            if not isinstance(name, str):
                raise TypeError(f"inputs keys must be input keys (str), got {name!r}")
        yield inputs, False
        return
    if not isinstance(inputs, str | os.PathLike):
        raise TypeError(
            "inputs must be a mapping of input key to array, or the path of a "
            f".npz file or a Zarr store, got {type(inputs).__name__}"
        )
    path = Path(inputs)
    if not path.exists():
        raise InputError(f"inputs: no such file or directory: {str(path)!r}")
    if path.suffix == ".npz" and path.is_file():
        if not zipfile.is_zipfile(path):
            raise InputError(
                f"inputs: {str(path)!r} is not a .npz file (no zip archive)"
            )
        try:
            archive = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as error:
            raise InputError(
                f"inputs: cannot read {str(path)!r} as a .npz file: {error}"
            ) from None
        with archive:
            yield archive, True
        return
    import zarr

    try:
        group = zarr.open_group(str(path), mode="r")
    except Exception:  # zarr raises several kinds (by version) for a non-store
        raise InputError(
            f"inputs: {str(path)!r} is neither a .npz file nor a Zarr store"
        ) from None
    yield dict(group.arrays()), True


def _as_array(name: str, value: object) -> ArrayLike:
    if _is_array(value):
        return value
    try:
        array = np.asarray(value)
    except (TypeError, ValueError):
        array = None
    if array is None or array.dtype == object:
        raise TypeError(
            f"inputs[{name!r}] must be an array (NumPy, Dask, Zarr or "
            f"array-like), got {type(value).__name__}"
        )
    return array


# --------------------------------------------------------------------------
# The checked inputs
# --------------------------------------------------------------------------


@dataclass
class Inputs:
    """An expression's inputs, matched to the arrays given and checked.

    ``arrays`` holds each input's array as given (by exact key; a Dask or
    Zarr array is not read); ``extents`` the extents of every space and
    composite kind of the inputs, given or inferred (``{"i": 5, "a<2>":
    3}``), ready for ``to_model`` and ``Sizing``."""

    signatures: tuple[InputSignature, ...]
    keys: dict[str, str]
    """Each input's key, by exact key."""
    arrays: dict[str, ArrayLike]
    extents: dict[str, int]
    _read: dict[str, Array] = field(default_factory=dict[str, Array], repr=False)

    def array(self, exact_key: str) -> Array:
        """The input's array read into memory as float64 (once); a Dask or
        Zarr array's values are checked finite as they are read."""
        found = self._read.get(exact_key)
        if found is None:
            given = self.arrays[exact_key]
            found = np.asarray(given, dtype=np.float64)
            if not isinstance(given, np.ndarray):  # read_inputs checked those
                _check_finite(self.keys[exact_key], found)
            self._read[exact_key] = found
        return found

    def leaf_arrays(self, forest: Forest) -> dict[str, Array]:
        """The array of every input value of ``forest`` that a use-site
        reads, axes in the value's modes (its own frame). The forest must
        come from the expression the inputs were read for (leaves carry
        their tensor label and group layout); ``InputError`` otherwise."""
        by_key = {s.exact_key: s for s in self.signatures}
        used = {site.value for site in forest.sites}
        leaves: dict[str, Array] = {}
        for name, value in forest.values.items():
            if not value.is_input or name not in used:
                continue
            if value.tensor is None or value.layout is None:
                raise InputError(
                    f"leaf @{name} has no tensor label and group layout: it "
                    "does not come from SeQuant text"
                )
            tensor = _as_tensor(value.tensor, value.layout, value.result)
            signature, labels = signature_of(tensor)
            if signature.exact_key not in by_key:
                raise InputError(
                    f"leaf @{name} reads {signature.exact_key}, which is no "
                    "input of the expression the inputs were read for"
                )
            axis = {labels[mode]: k for k, mode in enumerate(signature.modes)}
            array = self.array(signature.exact_key)
            leaves[name] = np.transpose(array, [axis[m] for m in value.modes])
        return leaves


def _as_tensor(
    label: str, layout: tuple[int, int, int], indices: Sequence[Index]
) -> Tensor:
    bra, ket = layout[0], layout[0] + layout[1]
    return Tensor(
        label, tuple(indices[:bra]), tuple(indices[bra:ket]), tuple(indices[ket:])
    )


def read_inputs(
    expression: Expression | str,
    inputs: InputSource,
    *,
    extents: str | Mapping[str, int] | None = None,
    assume_symmetric: bool = False,
) -> Inputs:
    """Match ``inputs`` to the inputs of ``expression`` and check them.

    ``inputs``: arrays by key (see the module docstring for keys and axis
    layout): a mapping, or the path of a ``.npz`` file or a Zarr store
    (group) holding them by key (a store's entries that are no input of
    the expression are ignored; in a mapping they are an error).
    ``extents``: sizes of spaces and composite kinds (``"i=5,a=2"``, a
    mapping, or ``None``), checked against the arrays; spaces without one
    take the size of the first input carrying them. ``assume_symmetric``:
    skip the check of the proto symmetry the frontend relies on. Raises
    ``InputError`` for inputs that do not fit, ``TypeError`` for arguments
    of the wrong type, ``PolicyError`` for malformed extents.
    """
    if isinstance(expression, str):
        expression = parse(expression)
    elif not isinstance(expression, Expression):
        raise TypeError(
            "expression must be SeQuant text (str) or a parsed Expression, "
            f"got {type(expression).__name__}"
        )
    if not isinstance(assume_symmetric, bool):
        raise TypeError(
            f"assume_symmetric must be True or False, got {assume_symmetric!r}"
        )
    given_extents = _given_extents(expression, extents)
    signatures = input_signatures(expression)
    keys = input_keys(signatures)
    with _opened(inputs) as (given, from_store):
        arrays = _match(signatures, keys, given, from_store)
    resolved = _resolve_extents(signatures, keys, arrays, given_extents)
    for signature in signatures:
        array = arrays[signature.exact_key]
        if isinstance(array, np.ndarray):  # in memory: checked now, cheaply
            _check_finite(keys[signature.exact_key], array)
    if not assume_symmetric:
        for signature in signatures:
            _check_ties(
                signature, keys[signature.exact_key], arrays[signature.exact_key]
            )
    return Inputs(signatures, keys, arrays, resolved)


def _given_extents(
    expression: Expression, extents: str | Mapping[str, int] | None
) -> dict[str, int]:
    """``extents`` by space key or kind (ASCII aliases resolved)."""
    if extents is None:
        return {}
    if isinstance(extents, str):
        parsed = parse_extents(extents)
    elif isinstance(extents, Mapping):
        parsed = {}
        for key, extent in extents.items():
            if not isinstance(key, str):
                raise TypeError(f"extents keys must be space keys (str), got {key!r}")
            check_count(f"extents[{key!r}]", extent)
            parsed[key] = int(extent)
    else:
        raise TypeError(
            'extents must be a mapping, a string such as "i=80,a=896" or None, '
            f"got {type(extents).__name__}"
        )
    spaces = expression.space_keys()
    aliases = space_aliases(spaces)
    resolved: dict[str, int] = {}
    for key, extent in parsed.items():
        try:
            base, protos = split_kind(key)
        except ExtentError as error:
            raise PolicyError(str(error)) from None
        base = resolve_space_key(base, spaces, aliases)
        resolved[base if protos is None else f"{base}<{protos}>"] = extent
    return resolved


def _spelled(name: str) -> tuple[str, str]:
    """What a name given for an input stands for: ``("label", label)``, or
    the tensor it spells as ``("key", exact or short key)`` (any ordinals;
    without ordinals, the short key; groups and symmetry as SeQuant reads
    them), or ``("unknown", name)``."""
    text = "".join(_nfc(name).split())
    if "{" not in text:
        return "label", text
    try:
        expression = parse(text)
    except SequantError:
        # a short key's protos repeat (``a<i,i>``), which no index allows:
        # read its groups as written
        match = re.fullmatch(r"([^{}]+)\{([^{}]*)\}(?::[A-Z-]+)?", text)
        if match is None:
            return "unknown", text
        groups = match.group(2).split(";")
        if len(groups) == 1:
            groups.append("")
        return "key", _nfc(f"{match.group(1)}{{{';'.join(groups)}}}")
    terms = expression.terms
    if (
        len(terms) != 1
        or len(terms[0].tensors) != 1
        or terms[0].operators
        or terms[0].coefficient != 1
    ):
        return "unknown", text
    tensor = terms[0].tensors[0]
    if all(i.ordinal is not None for i in expand_modes(tensor.indices)):
        return "key", signature_of(tensor)[0].exact_key
    stripped = [_stripped(i) for i in tensor.indices]
    return "key", _written(tensor.label, tensor.layout, stripped)


def _match(
    signatures: Sequence[InputSignature],
    keys: Mapping[str, str],
    given: Mapping[str, object],
    from_store: bool,
) -> dict[str, ArrayLike]:
    """Each input's array (by exact key), from the names given."""
    spellings: dict[tuple[str, str], list[InputSignature]] = {}
    for signature in signatures:
        for spelling in {
            ("key", signature.exact_key),
            ("key", signature.short_key),
            ("label", signature.label),
        }:
            spellings.setdefault(spelling, []).append(signature)
    arrays: dict[str, ArrayLike] = {}
    given_as: dict[str, str] = {}
    for name in given:
        # a key as written (``C{a<i,i>;μ̃}``: its protos repeat, so it does
        # not parse as an index), else whatever else it spells
        kind, spelling = "key", "".join(_nfc(name).split())
        found = spellings.get((kind, spelling), [])
        if not found:
            kind, spelling = _spelled(name)
            found = spellings.get((kind, spelling), [])
        if not found:
            if from_store:
                continue
            known = ", ".join(keys[s.exact_key] for s in signatures)
            raise InputError(
                f"inputs[{name!r}]: no input of the expression has this key; "
                f"its inputs are {known}"
            )
        if len(found) > 1:
            which = ", ".join(keys[s.exact_key] for s in found)
            raise InputError(
                f"inputs[{name!r}]: the {kind} names {len(found)} inputs "
                f"({which}); give one array per input, by its key"
            )
        signature = found[0]
        key = keys[signature.exact_key]
        if signature.exact_key in given_as:
            raise InputError(
                f"inputs[{given_as[signature.exact_key]!r}] and inputs[{name!r}] "
                f"are the same input {key}"
            )
        given_as[signature.exact_key] = name
        arrays[signature.exact_key] = _as_array(name, given[name])
    missing = [
        f"{keys[s.exact_key]} (axes {', '.join(map(str, s.modes))})"
        for s in signatures
        if s.exact_key not in arrays
    ]
    if missing:
        raise InputError(f"no array given for {', '.join(missing)}")
    for signature in signatures:
        _check_dtype(keys[signature.exact_key], arrays[signature.exact_key])
    return arrays


def _check_dtype(key: str, array: ArrayLike) -> None:
    try:
        kind = np.dtype(array.dtype).kind  # type: ignore[call-overload]
    except TypeError:
        kind = "?"
    if kind not in "iuf":
        raise InputError(
            f"input {key}: dtype {array.dtype}, but the evaluation takes real "
            "numbers (float64)"
        )


_FINITE_CHECK_ELEMENTS = 1 << 22
"""Elements checked at a time: the check's scratch stays a few MiB."""


def _check_finite(key: str, array: NDArray[Any]) -> None:
    """Refuse an array holding a NaN or an infinity, naming the first (in C
    order), checked a slab of leading axis at a time (no copy of the array).
    A slab whose sum is finite holds only finite values (a NaN or an
    infinity makes any sum NaN or infinite), so one summing pass decides
    most slabs; only one whose sum is not (an infinity, a NaN, or finite
    values whose sum overflows) is looked at element by element."""
    if array.dtype.kind != "f":
        return  # integers are finite; complex numbers are refused elsewhere
    rows = array.reshape(1) if array.ndim == 0 else array
    per_row = max(1, math.prod(rows.shape[1:]))
    step = max(1, _FINITE_CHECK_ELEMENTS // per_row)
    for start in range(0, rows.shape[0], step):
        slab = rows[start : start + step]
        with np.errstate(over="ignore", invalid="ignore"):
            if np.isfinite(np.sum(slab)):
                continue
        finite = np.isfinite(slab)
        if finite.all():
            continue  # finite values whose sum overflowed
        found = [int(k) for k in np.argwhere(~finite)[0]]
        found[0] += start
        value = rows[tuple(found)]
        element = ", ".join(map(str, found[1:] if array.ndim == 0 else found))
        raise InputError(
            f"input {key}: element [{element}] is {value}; the evaluation "
            "takes finite numbers"
        )


def _axis_name(signature: InputSignature, axis: int) -> str:
    mode = signature.modes[axis]
    if mode.protos:
        return f"axis {axis} ({mode}, composite kind {_kind(mode)})"
    return f"axis {axis} ({mode}, space {mode.base_key})"


def _resolve_extents(
    signatures: Sequence[InputSignature],
    keys: Mapping[str, str],
    arrays: Mapping[str, ArrayLike],
    given: Mapping[str, int],
) -> dict[str, int]:
    """Every axis checked against ``given`` or the first input carrying its
    space or kind; the extents of every space and kind the inputs carry."""
    resolved = dict(given)
    first: dict[str, tuple[str, int]] = {}
    for signature in signatures:
        key = keys[signature.exact_key]
        shape = tuple(int(n) for n in arrays[signature.exact_key].shape)
        if len(shape) != len(signature.modes):
            raise InputError(
                f"input {key}: {len(shape)} axes, expected {len(signature.modes)} "
                f"({', '.join(map(str, signature.modes))})"
            )
        for axis, (mode, size) in enumerate(zip(signature.modes, shape, strict=True)):
            kind = _kind(mode)
            where = f"input {key}, {_axis_name(signature, axis)}"
            if size <= 0:
                raise InputError(f"{where}: size {size}, extents must be positive")
            if kind in given:
                if size != given[kind]:
                    raise InputError(
                        f"{where}: size {size}, but extents give {kind}={given[kind]}"
                    )
            elif mode.protos and mode.base_key in given:
                extent = given[mode.base_key]
                if size != extent:
                    raise InputError(
                        f"{where}: size {size}, but extents give "
                        f"{mode.base_key}={extent} (and no {kind})"
                    )
            elif kind in first:
                other, other_axis = first[kind]
                if size != resolved[kind]:
                    raise InputError(
                        f"{where}: size {size}, but input {other} has size "
                        f"{resolved[kind]} on axis {other_axis} ({kind})"
                    )
            else:
                first[kind] = (key, axis)
                resolved[kind] = size
    return resolved


# --------------------------------------------------------------------------
# The proto symmetry
# --------------------------------------------------------------------------


def _exchanges(
    signature: InputSignature,
) -> list[tuple[tuple[int, int], tuple[int, ...]]]:
    """Per tie group, the exchanges of neighbours that map the frame onto
    itself, as (the two axes, the axis permutation). A tied proto's own
    protos move with it, position by position."""
    position = {mode: k for k, mode in enumerate(signature.modes)}
    found: list[tuple[tuple[int, int], tuple[int, ...]]] = []
    for group in signature.ties:
        for first, second in itertools.pairwise(group):
            swap = _swap(signature.modes[first], signature.modes[second])
            if swap is None:
                continue

            def moved(index: Index, swap: dict[Index, Index] = swap) -> Index:
                if index in swap:
                    return swap[index]
                return Index(index.base_key, index.ordinal, map(moved, index.protos))

            if tuple(moved(i) for i in signature.frame) != signature.frame:
                continue
            permutation = tuple(position[moved(m)] for m in signature.modes)
            found.append(((first, second), permutation))
    return found


def _swap(first: Index, second: Index) -> dict[Index, Index] | None:
    """The relabelling exchanging ``first`` and ``second`` and, position by
    position, their protos (``None`` if their proto lists differ in length)."""
    swap: dict[Index, Index] = {}
    pending = [(first, second)]
    while pending:
        x, y = pending.pop()
        if x == y:
            continue
        if len(x.protos) != len(y.protos) or swap.get(x, y) != y:
            return None
        swap[x], swap[y] = y, x
        pending.extend(zip(x.protos, y.protos, strict=True))
    return swap


def _check_ties(signature: InputSignature, key: str, array: ArrayLike) -> None:
    """Refuse an array that is not symmetric under the proto exchanges the
    frontend relies on, tested on one random projection."""
    exchanges = _exchanges(signature)
    if not exchanges:
        return
    tied = sorted(
        {axis for (a, b), _ in exchanges for axis in (a, b)}
        | {
            axis
            for _, permutation in exchanges
            for axis, image in enumerate(permutation)
            if axis != image
        }
    )
    projected = _project(array, tied)
    scale = float(np.linalg.norm(projected))
    for (first, second), permutation in exchanges:
        image = np.transpose(projected, [tied.index(permutation[a]) for a in tied])
        difference = float(np.linalg.norm(projected - image))
        if difference > SYMMETRY_TOLERANCE * scale:
            modes = signature.modes
            owner = next(m for m in signature.frame if _carries(m, modes[first]))
            raise InputError(
                f"input {key} is not symmetric in {modes[first]} and {modes[second]} "
                f"(axes {first} and {second}), the protos of {owner}: the "
                "frontend pairs them in either order (relative difference "
                f"{difference / scale:.2g} on a random projection); symmetrize "
                "the array or pass assume_symmetric=True"
            )


def _carries(index: Index, proto: Index) -> bool:
    stack = list(index.protos)
    while stack:
        found = stack.pop()
        if found == proto:
            return True
        stack.extend(found.protos)
    return False


def _project(array: ArrayLike, kept: Sequence[int]) -> Array:
    """``array`` with every axis not in ``kept`` contracted with a random
    standard-normal vector (seeded): the kept axes remain, in order. A Dask
    array (a Zarr array is read as one) is reduced chunk by chunk."""
    rng = np.random.default_rng(_PROJECTION_SEED)
    data: Any = array  # NumPy, or Dask through NumPy's dispatch
    if type(array).__module__.startswith("zarr"):
        import dask.array

        data = dask.array.from_zarr(data)
    shape = tuple(int(n) for n in array.shape)
    vectors = {
        axis: rng.standard_normal(shape[axis])
        for axis in range(len(shape))
        if axis not in kept
    }
    # Leading axes first and trailing ones next: contracting an outer axis of
    # a C-ordered array is a matrix-vector product on the array as it is
    # (no transposed copy); axes between kept ones last.
    axes = list(range(len(shape)))  # the original axis of each current axis
    while axes and axes[0] in vectors:
        data = np.tensordot(vectors[axes.pop(0)], data, axes=([0], [0]))
    while axes and axes[-1] in vectors:
        data = np.tensordot(data, vectors[axes.pop()], axes=([len(axes)], [0]))
    for position in reversed(range(len(axes))):
        if axes[position] in vectors:
            vector = vectors[axes.pop(position)]
            data = np.tensordot(data, vector, axes=([position], [0]))
    return np.asarray(data, dtype=np.float64)
