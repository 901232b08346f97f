"""SeQuant index labels: ``i_1``, ``a_1<i_1,i_2>``, ``Κ_2``, ``μ̃_1152``.

Pure Python, no xDSL: the decision tree and the frontend share this type.

Grammar (whitespace is allowed around ``<``, ``,`` and ``>``)::

    label   ::= key ( "_" digits | digits )? ( "<" label ( "," label )* ">" )?
    key     ::= one or more key characters (anything printable but digits,
                white space and the structural characters listed in
                ``STRUCTURAL``: a zero-width space, a control character or
                a byte order mark would make two labels look alike)

The base key is the text before ``_`` (or before the first digit); a label
without an ordinal (``i``) has ``ordinal`` ``None``. ``i1`` is accepted as a
spelling of ``i_1`` and printed canonically. Proto lists are symmetric, so
they are sorted on construction; a proto listed twice (``a_1<i_1,i_1>``) is
an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import pairwise
from weakref import WeakValueDictionary

from axisflow.numerals import (
    MAX_DIGITS,
    NumeralError,
    ascii_digits_end,
    is_ascii_digit,
    natural,
)

STRUCTURAL = frozenset("_<>,;{}()[]*+-/:=!\"'#@%&|\\`$?~^.")
"""Characters that can never be part of a base key."""


def is_key_char(char: str) -> bool:
    """Whether ``char`` may appear in a base key: printable (combining marks
    are: the tilde of ``μ̃``), not white space, a digit or structural."""
    return char.isprintable() and not (
        char.isspace() or char.isdigit() or char in STRUCTURAL
    )


class Index:
    """An index label: base key, optional ordinal, sorted proto indices.

    Equality is identity in SeQuant's sense: same base key, same ordinal and
    equal proto lists (recursively). Indices are interned: constructing an
    index equal to a live one returns that very object, so equal indices are
    identical, and equality and hashing are the object's identity (CPython's
    own, no Python call: the forest passes hash labels millions of times).
    Nothing here recurses on the proto depth (labels nested hundreds deep
    parse, print and compare).
    """

    __slots__ = ("__weakref__", "_sort_key", "base_key", "ordinal", "protos")

    base_key: str
    ordinal: int | None
    protos: tuple[Index, ...]

    def __new__(
        cls, base_key: str, ordinal: int | None = None, protos: Iterable[Index] = ()
    ) -> Index:
        if not isinstance(base_key, str):
            raise TypeError(
                f"Index base_key must be a str, got {type(base_key).__name__}"
            )
        if base_key not in _VALID_KEYS:
            if not base_key or not all(is_key_char(c) for c in base_key):
                raise ValueError(f"malformed index base key {base_key!r}")
            _VALID_KEYS.add(base_key)
        if ordinal is not None and (
            not isinstance(ordinal, int) or isinstance(ordinal, bool)
        ):
            raise TypeError(
                f"Index ordinal must be an int or None, got {ordinal!r} "
                f"({type(ordinal).__name__})"
            )
        if ordinal is not None and ordinal < 0:
            raise ValueError(f"index ordinal must be non-negative, got {ordinal}")
        if isinstance(protos, str | bytes):
            raise TypeError("Index protos must be an iterable of Index, got a string")
        proto_list = list(protos)
        for proto in proto_list:
            if not isinstance(proto, Index):
                raise TypeError(
                    f"Index protos must be Index objects, got {type(proto).__name__}"
                )
        if len(proto_list) > 1:
            proto_list.sort(key=Index.sort_key)
            for first, second in pairwise(proto_list):
                if first is second:  # interned: equal protos are one object
                    raise ValueError(
                        f"proto index {first} is listed twice in the protos of "
                        f"{Index(base_key, ordinal).label}"
                    )
        # An int subclass is kept as the int it equals (the key compares so).
        number = None if ordinal is None else int(ordinal)
        key = (base_key, number, tuple(proto_list))
        found = _INTERNED.get(key)
        if found is not None:
            return found
        index = object.__new__(cls)
        index.base_key = base_key
        index.ordinal = number
        index.protos = key[2]
        index._sort_key = None
        return _INTERNED.setdefault(key, index)

    def __reduce__(self) -> tuple[object, ...]:
        # Copies and unpickled indices are interned again (never a second
        # object equal to a live one).
        return (Index, (self.base_key, self.ordinal, self.protos))

    # -- parsing -----------------------------------------------------------

    @staticmethod
    def parse(text: str) -> Index:
        """Parse one full label; raise ``ValueError`` naming text and position."""
        if not isinstance(text, str):
            raise TypeError(
                f"Index.parse: text must be a str, got {type(text).__name__}"
            )
        index, end = Index.parse_prefix(text, 0)
        end = _skip_space(text, end)
        if end != len(text):
            raise _error(text, end, "end of label")
        return index

    @staticmethod
    def parse_prefix(text: str, start: int) -> tuple[Index, int]:
        """Parse a label starting at ``start``; return it and the end position.

        Used by parsers that embed labels in a larger text (IR, SeQuant
        expressions). Errors name the whole ``text`` and the position in it.
        Iterative: a label being read waits on a stack while its protos are.
        """
        if not isinstance(text, str):
            raise TypeError(
                f"Index.parse_prefix: text must be a str, got {type(text).__name__}"
            )
        # Each open label: its base key, ordinal, the protos read so far (a
        # list, and a set for the duplicate check) and where it starts.
        open_labels: list[tuple[str, int | None, list[Index], set[Index], int]] = []
        pos = start
        while True:
            label_start = _skip_space(text, pos)
            base_key, ordinal, pos = _parse_head(text, pos)
            after = _skip_space(text, pos)
            if after < len(text) and text[after] == "<":
                open_labels.append((base_key, ordinal, [], set(), label_start))
                pos = after + 1
                continue
            index = Index(base_key, ordinal)
            # Close every list this label ends, innermost first.
            while open_labels:
                _, _, protos, seen, _ = open_labels[-1]
                if index in seen:
                    raise _error(text, label_start, "a proto index not listed before")
                protos.append(index)
                seen.add(index)
                pos = _skip_space(text, pos)
                if pos < len(text) and text[pos] == ",":
                    pos += 1
                    break
                if pos < len(text) and text[pos] == ">":
                    pos += 1
                    key, number, protos, _, label_start = open_labels.pop()
                    index = Index(key, number, protos)
                    continue
                raise _error(text, pos, "',' or '>' in a proto-index list")
            else:
                return index, pos

    # -- views -------------------------------------------------------------

    @property
    def label(self) -> str:
        """The label without protos: ``a_1`` for ``a_1<i_1,i_2>``."""
        if self.ordinal is None:
            return self.base_key
        return f"{self.base_key}_{self.ordinal}"

    @property
    def full_label(self) -> str:
        """The label with protos: ``a_1<i_1,i_2>``."""
        if not self.protos:
            return self.label
        pieces: list[str] = []
        pending: list[Index | str] = [self]
        while pending:
            item = pending.pop()
            if isinstance(item, str):
                pieces.append(item)
                continue
            pieces.append(item.label)
            if item.protos:
                pieces.append("<")
                pending.append(">")
                for k in range(len(item.protos) - 1, -1, -1):
                    pending.append(item.protos[k])
                    if k:
                        pending.append(",")
        return "".join(pieces)

    def same_type(self, other: Index) -> bool:
        """Whether both indices belong to one index space (equal base keys)."""
        return self.base_key == other.base_key

    def all_protos(self) -> Iterator[Index]:
        """Every proto index at any depth, outer before inner."""
        pending = list(reversed(self.protos))
        while pending:
            proto = pending.pop()
            yield proto
            pending.extend(reversed(proto.protos))

    def renamed(self, mapping: dict[Index, Index]) -> Index:
        """The index with every component (itself, protos at any depth) renamed.

        The whole index is looked up first; otherwise its protos are renamed.
        """
        if self in mapping:
            return mapping[self]
        if not self.protos:
            return self
        done: dict[int, Index] = {}  # id of an original index -> renamed
        pending: list[tuple[Index, bool]] = [(self, False)]
        while pending:
            index, children_done = pending.pop()
            if index in mapping:
                done[id(index)] = mapping[index]
            elif not index.protos:
                done[id(index)] = index
            elif children_done:
                protos = [done[id(p)] for p in index.protos]
                same = all(a is b for a, b in zip(protos, index.protos, strict=True))
                done[id(index)] = (
                    index if same else Index(index.base_key, index.ordinal, protos)
                )
            else:
                pending.append((index, True))
                pending.extend((p, False) for p in index.protos)
        return done[id(self)]

    def sort_key(self) -> tuple[object, ...]:
        """A total order: base key, ordinal (none first), protos.

        Flat (no nested tuples, so comparing deep labels does not recurse) and
        ordered like ``(base_key, ordinal, (proto keys...))``: each label is
        its key and ordinal, then ``1`` and the key of each proto, then ``0``.
        """
        if self._sort_key is not None:
            return self._sort_key
        tokens: list[object] = []
        pending: list[Index | int] = [self]
        while pending:
            item = pending.pop()
            if isinstance(item, int):
                tokens.append(item)
                continue
            tokens.append(item.base_key)
            tokens.append(-1 if item.ordinal is None else item.ordinal)
            pending.append(0)
            for proto in reversed(item.protos):
                pending.append(proto)
                pending.append(1)
        self._sort_key = tuple(tokens)
        return self._sort_key

    # -- identity ----------------------------------------------------------

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, Index):
            return NotImplemented  # Python raises TypeError naming both types
        return self.sort_key() < other.sort_key()

    def __str__(self) -> str:
        return self.full_label

    def __repr__(self) -> str:
        return f"Index({self.full_label!r})"


def _parse_head(text: str, pos: int) -> tuple[str, int | None, int]:
    """Base key and ordinal of a label at ``pos``; the position after them."""
    pos = _skip_space(text, pos)
    key_start = pos
    while pos < len(text) and is_key_char(text[pos]):
        pos += 1
    if pos == key_start:
        raise _error(text, pos, "an index base key")
    base_key = text[key_start:pos]
    if pos < len(text) and text[pos] == "_":
        pos += 1
        if pos >= len(text) or not is_ascii_digit(text[pos]):
            raise _error(text, pos, "an ordinal (digits) after '_'")
    if pos >= len(text) or not is_ascii_digit(text[pos]):
        return base_key, None, pos
    digits_start = pos
    pos = ascii_digits_end(text, pos)
    try:
        ordinal = natural(text[digits_start:pos], "ordinal")
    except NumeralError:
        raise _error(
            text, digits_start, f"an ordinal of at most {MAX_DIGITS} digits"
        ) from None
    return base_key, ordinal, pos


_INTERNED: WeakValueDictionary[tuple[str, int | None, tuple[Index, ...]], Index] = (
    WeakValueDictionary()
)
"""Every live index by (base key, ordinal, protos): protos are interned, so
the key hashes and compares by identities (no recursion on depth)."""

_VALID_KEYS: set[str] = set()
"""Base keys checked already: a program has a handful (``i``, ``a``, ``Κ``)."""


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in " \t":
        pos += 1
    return pos


class IndexSyntaxError(ValueError):
    """A malformed label; ``position`` and ``expected`` locate the fault."""

    def __init__(self, text: str, position: int, expected: str) -> None:
        self.text = text
        self.position = position
        self.expected = expected
        found = repr(text[position]) if position < len(text) else "end of text"
        self.found = found
        super().__init__(
            f"malformed index label {text!r} at position {position}: "
            f"expected {expected}, found {found}"
        )


def _error(text: str, pos: int, expected: str) -> IndexSyntaxError:
    return IndexSyntaxError(text, pos, expected)
