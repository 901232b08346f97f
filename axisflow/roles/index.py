"""SeQuant index labels: ``i_1``, ``a_1<i_1,i_2>``, ``Κ_2``, ``μ̃_1152``.

Pure Python, no xDSL: the decision tree and the frontend share this type.

Grammar (whitespace is allowed around ``<``, ``,`` and ``>``)::

    label   ::= key ( "_" digits | digits )? ( "<" label ( "," label )* ">" )?
    key     ::= one or more key characters (anything but digits, white space
                and the structural characters listed in ``STRUCTURAL``)

The base key is the text before ``_`` (or before the first digit); a label
without an ordinal (``i``) has ``ordinal`` ``None``. ``i1`` is accepted as a
spelling of ``i_1`` and printed canonically. Proto lists are symmetric, so
they are sorted on construction.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

STRUCTURAL = frozenset("_<>,;{}()[]*+-/:=!\"'#@%&|\\`$?~^.")
"""Characters that can never be part of a base key."""


def is_key_char(char: str) -> bool:
    """Whether ``char`` may appear in a base key."""
    return not (char.isspace() or char.isdigit() or char in STRUCTURAL)


class Index:
    """An index label: base key, optional ordinal, sorted proto indices.

    Equality and hashing are identity in SeQuant's sense: same base key, same
    ordinal and equal proto lists (recursively).
    """

    __slots__ = ("_hash", "base_key", "ordinal", "protos")

    base_key: str
    ordinal: int | None
    protos: tuple[Index, ...]

    def __init__(
        self, base_key: str, ordinal: int | None = None, protos: Iterable[Index] = ()
    ) -> None:
        if base_key not in _VALID_KEYS:
            if not base_key or not all(is_key_char(c) for c in base_key):
                raise ValueError(f"malformed index base key {base_key!r}")
            _VALID_KEYS.add(base_key)
        if ordinal is not None and ordinal < 0:
            raise ValueError(f"index ordinal must be non-negative, got {ordinal}")
        self.base_key = base_key
        self.ordinal = ordinal
        self.protos = tuple(sorted(protos, key=Index.sort_key))
        self._hash = hash((base_key, ordinal, self.protos))

    # -- parsing -----------------------------------------------------------

    @staticmethod
    def parse(text: str) -> Index:
        """Parse one full label; raise ``ValueError`` naming text and position."""
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
        """
        pos = _skip_space(text, start)
        key_start = pos
        while pos < len(text) and is_key_char(text[pos]):
            pos += 1
        if pos == key_start:
            raise _error(text, pos, "an index base key")
        base_key = text[key_start:pos]
        ordinal: int | None = None
        if pos < len(text) and text[pos] == "_":
            pos += 1
            if pos >= len(text) or not text[pos].isdigit():
                raise _error(text, pos, "an ordinal (digits) after '_'")
        if pos < len(text) and text[pos].isdigit():
            digits_start = pos
            while pos < len(text) and text[pos].isdigit():
                pos += 1
            ordinal = int(text[digits_start:pos])
        protos: list[Index] = []
        after = _skip_space(text, pos)
        if after < len(text) and text[after] == "<":
            pos = after + 1
            while True:
                proto, pos = Index.parse_prefix(text, pos)
                protos.append(proto)
                pos = _skip_space(text, pos)
                if pos < len(text) and text[pos] == ",":
                    pos += 1
                    continue
                if pos < len(text) and text[pos] == ">":
                    pos += 1
                    break
                raise _error(text, pos, "',' or '>' in a proto-index list")
        return Index(base_key, ordinal, protos), pos

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
        return f"{self.label}<{','.join(p.full_label for p in self.protos)}>"

    def same_type(self, other: Index) -> bool:
        """Whether both indices belong to one index space (equal base keys)."""
        return self.base_key == other.base_key

    def all_protos(self) -> Iterator[Index]:
        """Every proto index at any depth, outer before inner."""
        for proto in self.protos:
            yield proto
            yield from proto.all_protos()

    def renamed(self, mapping: dict[Index, Index]) -> Index:
        """The index with every component (itself, protos at any depth) renamed.

        The whole index is looked up first; otherwise its protos are renamed.
        """
        if self in mapping:
            return mapping[self]
        if not self.protos:
            return self
        return Index(
            self.base_key, self.ordinal, (p.renamed(mapping) for p in self.protos)
        )

    def sort_key(self) -> tuple[object, ...]:
        """A total order: base key, ordinal (none first), protos."""
        return (
            self.base_key,
            -1 if self.ordinal is None else self.ordinal,
            tuple(p.sort_key() for p in self.protos),
        )

    # -- identity ----------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Index):
            return NotImplemented
        return (
            self._hash == other._hash
            and self.base_key == other.base_key
            and self.ordinal == other.ordinal
            and self.protos == other.protos
        )

    def __hash__(self) -> int:
        return self._hash

    def __lt__(self, other: Index) -> bool:
        return self.sort_key() < other.sort_key()

    def __str__(self) -> str:
        return self.full_label

    def __repr__(self) -> str:
        return f"Index({self.full_label!r})"


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
