"""Extents of index spaces, with extents per composite kind.

Pure Python, no xDSL. One sizing convention for the whole project (the
contraction-order search and the memory model both size through
``Extents``):

* a plain index ``i_3`` has the extent of its space ``i``;
* a composite index ``a_1<i_1,i_2>`` (a pair-specific virtual) has the extent
  of its *kind*, the base key and the number of its protos: ``a<2>``. Cluster
  specific virtuals are much smaller than the full virtual space, so
  ``extents="i=80,a=896,a<2>=40,a<1>=60"`` sizes ``a_1<i_1,i_2>`` at 40 and
  ``a_1<i_1>`` at 60. A kind without an extent of its own keeps the extent of
  its base space;
* a space without any extent has ``DEFAULT_EXTENT``;
* the elements of a tensor are the product of the extents of its modes
  (``axisflow.forest.frames.expand_modes``: carried indices and their protos).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from axisflow.numerals import I64_MAX, NumeralError, natural
from axisflow.roles.index import Index

DEFAULT_EXTENT = 4
"""Extent of a space that is given none."""

_COMPOSITE_KEY = re.compile(r"^(?P<key>.+?)\s*<\s*(?P<protos>[0-9]+)\s*>$")


class ExtentError(ValueError):
    """A malformed extent specification."""


def split_kind(key: str) -> tuple[str, int | None]:
    """``"a<2>"`` → ``("a", 2)``; ``"a"`` → ``("a", None)``.

    Raises ``ExtentError`` for a malformed kind (``a<0>``, ``a<x>``).
    """
    if "<" not in key and ">" not in key:
        return key, None
    match = _COMPOSITE_KEY.match(key)
    if match is None or not match.group("protos").isascii():
        raise ExtentError(
            f"malformed composite kind {key!r}: expected KEY<NUMBER OF PROTOS>"
        )
    protos = int(match.group("protos"))
    if protos == 0:
        raise ExtentError(
            f"composite kind {key!r} has no protos: a composite has at least one"
        )
    return match.group("key"), protos


def parse_extents(text: str) -> dict[str, int]:
    """``"i=80,a=896,a<2>=40"`` → ``{"i": 80, "a": 896, "a<2>": 40}``.

    Keys are space keys or composite kinds ``KEY<N>``, each at most once;
    values positive integers. Raises ``ExtentError`` naming the malformed
    item (or the key given twice).
    """
    extents: dict[str, int] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        key, equals, number = item.partition("=")
        key, number = key.strip(), number.strip()
        if not equals or not key or not (number.isascii() and number.isdigit()):
            raise ExtentError(
                f"malformed extent {item.strip()!r}: expected KEY=POSITIVE_INTEGER "
                "or KEY<PROTOS>=POSITIVE_INTEGER"
            )
        kind = "composite kind" if split_kind(key)[1] is not None else "space"
        try:  # at most 4300 digits and i64 (axisflow.numerals)
            value = natural(number, f"extent of {kind} {key!r}", I64_MAX)
        except NumeralError as error:
            raise ExtentError(
                f"malformed extent {item.strip()[:40]!r}: {error}"
            ) from None
        if value <= 0:
            raise ExtentError(f"extent of {kind} {key!r} must be positive, got {value}")
        if key in extents:
            raise ExtentError(f"{kind} {key!r} is given twice in {text[:80]!r}")
        extents[key] = value
    return extents


class Extents:
    """Extents per space key and per composite kind ``(key, protos)``."""

    __slots__ = ("composites", "default", "spaces")

    def __init__(
        self,
        spaces: Mapping[str, int] | None = None,
        composites: Mapping[tuple[str, int], int] | None = None,
        default: int = DEFAULT_EXTENT,
    ) -> None:
        self.spaces: dict[str, int] = dict(spaces or {})
        self.composites: dict[tuple[str, int], int] = dict(composites or {})
        self.default = default

    @staticmethod
    def make(extents: Mapping[str, int], default: int = DEFAULT_EXTENT) -> Extents:
        """From ``{"i": 80, "a<2>": 40}`` (keys as ``parse_extents`` gives)."""
        spaces: dict[str, int] = {}
        composites: dict[tuple[str, int], int] = {}
        for key, value in extents.items():
            base, protos = split_kind(key)
            if protos is None:
                spaces[base] = value
            else:
                composites[(base, protos)] = value
        return Extents(spaces, composites, default)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Extents) and (
            self.spaces,
            self.composites,
            self.default,
        ) == (other.spaces, other.composites, other.default)

    def __hash__(self) -> int:
        return hash((tuple(sorted(self.spaces.items())), self.default))

    def __repr__(self) -> str:
        return f"Extents({self.spaces!r}, {self.composites!r}, {self.default})"

    def space(self, key: str) -> int:
        """The extent of space ``key``."""
        return self.spaces.get(key, self.default)

    def is_default(self, key: str) -> bool:
        """Whether space ``key`` has no extent of its own."""
        return key not in self.spaces

    def composite(self, key: str, protos: int) -> int | None:
        """The extent of composite kind ``key<protos>``, if it has one."""
        return self.composites.get((key, protos))

    def extent(self, index: Index) -> int:
        """The extent of one mode: its kind's if it is a composite with an
        extent of its own, otherwise its space's."""
        # ``composite`` and ``space`` inlined: the memory model asks this
        # millions of times in a test run
        if index.protos:
            kind = self.composites.get((index.base_key, len(index.protos)))
            if kind is not None:
                return kind
        return self.spaces.get(index.base_key, self.default)

    def elements(self, modes: Iterable[Index]) -> int:
        """The product of the extents of ``modes`` (each listed once)."""
        extent = self.extent
        count = 1
        for mode in modes:
            count *= extent(mode)
        return count
