"""Parsers for the two spec syntaxes: leaf/parameter shapes and einsum labels.

Both share the row layout ``[batch "|"] [input "->"] output``: a spec without
``|`` has no batch row, one without ``->`` no input row, and a row that is not
mentioned is closed and empty. A bare row (``"4"``) is the output row.

**Shape specs** (leaves and parameters): a row is comma-separated sizes, a size
is a positive integer with an optional basis label (``3@rgb``); ``...`` as the
first item opens the row (a row variable in front). Examples: ``"8|3,5->4"``,
``"->4"``, ``"4"``, ``"...|3->..."``, ``""`` (a scalar).

**Einsum specs**: ``operand;operand;...=>result``. A row is either single
characters (``ij``) or, when it contains a comma, comma-separated names
(``h, d``). Items: a label (the same label is the same dim across the whole
spec), ``_`` (a placeholder axis, fresh each time), an integer (a fixed index:
the axis has at least index+1 positions), ``...`` (the kind's row variable,
shared across the spec's tensors) or ``..name..`` (a named row variable shared
across kinds). A row variable must come first in its row; a row without one is
closed.

Malformed specs raise :class:`~axisflow.shapes.errors.SpecError` naming the
spec and the 0-based position of the problem. Parses are cached: a spec string
is parsed once however many operations use it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from axisflow.numerals import NumeralError, ascii_digits_end, is_ascii_digit, natural
from axisflow.shapes.errors import SpecError
from axisflow.shapes.terms import Kind, Size

_SHAPE_SPEC = "shape spec"
_EINSUM_SPEC = "einsum spec"

_SIZE_RE = re.compile(r"(\d+)(?:@([A-Za-z_][A-Za-z0-9_]*))?\Z")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_']*\Z")
_NAMED_VAR_RE = re.compile(r"\.\.([A-Za-z_][A-Za-z0-9_]*)\.\.")


@dataclass(frozen=True)
class RowSpec:
    """A row of a shape spec: sizes, open (``...`` in front) or closed."""

    sizes: tuple[Size, ...]
    is_open: bool


@dataclass(frozen=True)
class ShapeSpec:
    """A parsed leaf or parameter shape spec."""

    text: str
    batch: RowSpec
    input: RowSpec
    output: RowSpec

    def row(self, kind: Kind) -> RowSpec:
        """The row of the given kind (the attributes are named after the kinds)."""
        return getattr(self, kind.value)


@dataclass(frozen=True)
class Label:
    """A named axis of an einsum spec."""

    name: str


@dataclass(frozen=True)
class Placeholder:
    """``_``: an axis related to nothing else."""


@dataclass(frozen=True)
class FixedIndex:
    """An integer in an einsum row: a fixed position along the axis."""

    index: int


LabelItem = Label | Placeholder | FixedIndex


@dataclass(frozen=True)
class LabelRow:
    """A row of an einsum spec.

    ``var`` is ``None`` for a closed row, ``""`` for ``...`` (the kind's row
    variable) and a name for ``..name..``.
    """

    items: tuple[LabelItem, ...]
    var: str | None


@dataclass(frozen=True)
class TensorLabels:
    """The three label rows of one tensor of an einsum spec."""

    batch: LabelRow
    input: LabelRow
    output: LabelRow

    def row(self, kind: Kind) -> LabelRow:
        """The row of the given kind (the attributes are named after the kinds)."""
        return getattr(self, kind.value)


@dataclass(frozen=True)
class EinsumSpec:
    """A parsed einsum spec."""

    text: str
    operands: tuple[TensorLabels, ...]
    result: TensorLabels

    def labels(self) -> set[str]:
        """Every label name the spec uses."""
        names: set[str] = set()
        for tensor in (*self.operands, self.result):
            for kind in Kind:
                names.update(
                    item.name
                    for item in tensor.row(kind).items
                    if isinstance(item, Label)
                )
        return names


def _split_kinds(
    spec: str, start: int, end: int, what: str
) -> dict[Kind, tuple[int, int] | None]:
    """Split ``spec[start:end]`` into its batch, input and output segments."""
    segment = spec[start:end]
    bars = [m.start() + start for m in re.finditer(r"\|", segment)]
    arrows = [m.start() + start for m in re.finditer(r"->", segment)]
    if len(bars) > 1:
        raise SpecError(spec, bars[1], "more than one '|' (batch separator)", what)
    if len(arrows) > 1:
        raise SpecError(spec, arrows[1], "more than one '->' (input separator)", what)
    bar = bars[0] if bars else None
    arrow = arrows[0] if arrows else None
    if bar is not None and arrow is not None and bar > arrow:
        raise SpecError(spec, bar, "the batch row ('|') must come before '->'", what)
    segments: dict[Kind, tuple[int, int] | None] = dict.fromkeys(Kind)
    rest = start
    if bar is not None:
        segments[Kind.BATCH] = (start, bar)
        rest = bar + 1
    if arrow is not None:
        segments[Kind.INPUT] = (rest, arrow)
        rest = arrow + 2
    segments[Kind.OUTPUT] = (rest, end)
    return segments


def _comma_items(spec: str, start: int, end: int) -> list[tuple[int, str]]:
    """Comma-separated items of ``spec[start:end]`` with their positions.

    An all-blank segment has no items.
    """
    if not spec[start:end].strip():
        return []
    items: list[tuple[int, str]] = []
    pos = start
    for raw in spec[start:end].split(","):
        stripped = raw.strip()
        offset = len(raw) - len(raw.lstrip())
        items.append((pos + offset if stripped else pos, stripped))
        pos += len(raw) + 1
    return items


def _parse_shape_row(spec: str, start: int, end: int) -> RowSpec:
    sizes: list[Size] = []
    is_open = False
    for index, (pos, item) in enumerate(_comma_items(spec, start, end)):
        if not item:
            raise SpecError(spec, pos, "empty item in a row", _SHAPE_SPEC)
        if item == "...":
            if index != 0:
                raise SpecError(
                    spec,
                    pos,
                    "'...' must come first in its row "
                    "(broadcasting in the middle is not supported)",
                    _SHAPE_SPEC,
                )
            is_open = True
            continue
        match = _SIZE_RE.match(item)
        if match is None:
            raise SpecError(
                spec,
                pos,
                f"expected a size (a positive integer, optionally @basis) or '...', "
                f"got {item!r}",
                _SHAPE_SPEC,
            )
        try:
            n = natural(match.group(1), "a size")
        except NumeralError as error:
            raise SpecError(spec, pos, str(error), _SHAPE_SPEC) from None
        if n < 1:
            raise SpecError(spec, pos, f"a size must be positive, got {n}", _SHAPE_SPEC)
        basis = match.group(2)
        sizes.append(Size(n) if basis is None else Size(n, basis))
    return RowSpec(tuple(sizes), is_open)


@lru_cache(maxsize=4096)
def parse_shape_spec(spec: str) -> ShapeSpec:
    """Parse a leaf or parameter spec such as ``"8|3,5->4"``."""
    segments = _split_kinds(spec, 0, len(spec), _SHAPE_SPEC)
    rows: dict[Kind, RowSpec] = {}
    for kind, segment in segments.items():
        rows[kind] = (
            RowSpec((), False) if segment is None else _parse_shape_row(spec, *segment)
        )
    return ShapeSpec(spec, rows[Kind.BATCH], rows[Kind.INPUT], rows[Kind.OUTPUT])


def _row_var_item(spec: str, pos: int, token: str) -> str | None:
    """The row variable a token stands for, or None if it is not one."""
    if token == "...":
        return ""
    match = _NAMED_VAR_RE.fullmatch(token)
    if match is not None:
        return match.group(1)
    if token.startswith(".."):
        raise SpecError(
            spec, pos, f"expected '...' or '..name..', got {token!r}", _EINSUM_SPEC
        )
    return None


def _label_item(spec: str, pos: int, token: str, comma_mode: bool) -> LabelItem:
    if token == "_":
        return Placeholder()
    if token.isdigit():
        try:
            return FixedIndex(natural(token, "a fixed index"))
        except NumeralError as error:
            raise SpecError(spec, pos, str(error), _EINSUM_SPEC) from None
    if (comma_mode and _NAME_RE.match(token)) or (
        not comma_mode and len(token) == 1 and token.isalpha()
    ):
        return Label(token)
    raise SpecError(spec, pos, f"expected an axis label, got {token!r}", _EINSUM_SPEC)


def _label_tokens(
    spec: str, start: int, end: int
) -> tuple[list[tuple[int, str]], bool]:
    """Tokens of a label row with positions, and whether it is in comma mode."""
    if "," in spec[start:end]:
        tokens = _comma_items(spec, start, end)
        for pos, token in tokens:
            if not token:
                raise SpecError(spec, pos, "empty item in a row", _EINSUM_SPEC)
        return tokens, True
    tokens: list[tuple[int, str]] = []
    pos = start
    while pos < end:
        char = spec[pos]
        if char.isspace():
            pos += 1
        elif spec.startswith("...", pos):
            tokens.append((pos, "..."))
            pos += 3
        elif spec.startswith("..", pos):
            match = _NAMED_VAR_RE.match(spec, pos, end)
            if match is None:
                raise SpecError(spec, pos, "expected '...' or '..name..'", _EINSUM_SPEC)
            tokens.append((pos, match.group(0)))
            pos = match.end()
        elif is_ascii_digit(char):
            digits_end = ascii_digits_end(spec, pos, end)
            tokens.append((pos, spec[pos:digits_end]))
            pos = digits_end
        else:
            tokens.append((pos, char))
            pos += 1
    return tokens, False


def _parse_label_row(spec: str, start: int, end: int) -> LabelRow:
    tokens, comma_mode = _label_tokens(spec, start, end)
    items: list[LabelItem] = []
    var: str | None = None
    for index, (pos, token) in enumerate(tokens):
        row_var = _row_var_item(spec, pos, token)
        if row_var is not None:
            if index != 0:
                raise SpecError(
                    spec,
                    pos,
                    "a row variable must come first in its row "
                    "(broadcasting in the middle is not supported)",
                    _EINSUM_SPEC,
                )
            var = row_var
            continue
        items.append(_label_item(spec, pos, token, comma_mode))
    return LabelRow(tuple(items), var)


def _parse_tensor_labels(spec: str, start: int, end: int) -> TensorLabels:
    segments = _split_kinds(spec, start, end, _EINSUM_SPEC)
    rows: dict[Kind, LabelRow] = {}
    for kind, segment in segments.items():
        rows[kind] = (
            LabelRow((), None) if segment is None else _parse_label_row(spec, *segment)
        )
    return TensorLabels(rows[Kind.BATCH], rows[Kind.INPUT], rows[Kind.OUTPUT])


@lru_cache(maxsize=4096)
def parse_einsum_spec(spec: str) -> EinsumSpec:
    """Parse an einsum spec such as ``"ij;jk=>ik"`` or ``"...|h=>...|h"``."""
    arrows = [m.start() for m in re.finditer("=>", spec)]
    if not arrows:
        raise SpecError(
            spec, len(spec), "expected '=>' before the result", _EINSUM_SPEC
        )
    if len(arrows) > 1:
        raise SpecError(spec, arrows[1], "more than one '=>'", _EINSUM_SPEC)
    arrow = arrows[0]
    operands: list[TensorLabels] = []
    start = 0
    for _ in range(spec.count(";", 0, arrow) + 1):
        end = spec.find(";", start, arrow)
        end = arrow if end < 0 else end
        operands.append(_parse_tensor_labels(spec, start, end))
        start = end + 1
    result = _parse_tensor_labels(spec, arrow + 2, len(spec))
    return EinsumSpec(spec, tuple(operands), result)
