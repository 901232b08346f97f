"""Parsers for the two spec syntaxes: leaf/parameter shapes and einsum labels.

Both share the row layout ``[batch "|"] [input "->"] output``: a spec without
``|`` has no batch row, one without ``->`` no input row, and a row that is not
mentioned is closed and empty. A bare row (``"4"``) is the output row.

**Shape specs** (leaves and parameters): a row is comma-separated sizes, a size
is a positive integer with an optional basis label (``3@rgb``); ``...`` opens
the row (a row variable; sizes written before it are the row's first axes).
Examples: ``"8|3,5->4"``, ``"->4"``, ``"4"``, ``"...|3->..."``, ``"3,...,7"``,
``""`` (a scalar).

**Einsum specs**: ``operand;operand;...=>result``. A row is either single
characters (``ij``) or, when it contains a comma, comma-separated names
(``h, d``). Items: a label (the same label is the same dim across the whole
spec), ``_`` (a placeholder axis, fresh each time), an integer (a fixed index:
the axis has at least index+1 positions), ``...`` (the kind's row variable,
shared across the spec's tensors) or ``..name..`` (a named row variable shared
across kinds); items may come before and after it (OCANNL's ``beg_dims``). A
row has at most one row variable; a row without one is closed.

Malformed specs raise :class:`~axisflow.shapes.errors.SpecError` naming the
spec and the 0-based position of the problem. Parses are cached: a spec string
is parsed once however many operations use it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from axisflow.numerals import NumeralError, ascii_digits_end, is_ascii_digit, natural
from axisflow.shapes.constraints import LinearKind
from axisflow.shapes.errors import SpecError
from axisflow.shapes.terms import Dim, DimVar, Kind, Row, RowVar, Size

_SHAPE_SPEC = "shape spec"
_EINSUM_SPEC = "einsum spec"

_BASIS = r"[A-Za-z_][A-Za-z0-9_]*"
BASIS_LABEL_RE = re.compile(_BASIS + r"\Z")
"""A basis label, as written after ``@`` in a size (``3@rgb``)."""
_SIZE_RE = re.compile(rf"(\d+)(?:@({_BASIS}))?\Z")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_']*\Z")
_NAMED_VAR_RE = re.compile(r"\.\.([A-Za-z_][A-Za-z0-9_]*)\.\.")


@dataclass(frozen=True)
class RowSpec:
    """A row of a shape spec: sizes, open (``...``) or closed.

    ``sizes`` are the axes after ``...`` (all of them in a closed row);
    ``beg`` the axes written before it (OCANNL's ``beg_dims``: ``"3,...,7"``
    is a 3, then any number of axes, then a 7).
    """

    sizes: tuple[Size, ...]
    is_open: bool
    beg: tuple[Size, ...] = ()


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


@dataclass(frozen=True)
class Affine:
    """OCANNL's affine axis ``[stride*]over[=|<][+offset][+[dilation*]kernel]``.

    The axis is indexed ``stride*over + offset + dilation*kernel``. Its size:
    ``stride * over`` without a kernel or with ``use_padding`` (``=``), and
    ``stride * (over - 1) + dilation * (kernel - 1) + 1`` without padding
    (``<``). ``use_padding`` is ``None`` when neither marker is written, which
    an einsum refuses for a convolution (as OCANNL's ``shape.ml`` does); the
    offset moves the window and takes no part in the size.
    """

    stride: int
    over: str
    offset: int = 0
    dilation: int = 1
    kernel: str | None = None
    use_padding: bool | None = None


@dataclass(frozen=True)
class Concat:
    """OCANNL's ``a^b^c``: one axis made of the labels' axes one after another."""

    labels: tuple[str, ...]


LabelItem = Label | Placeholder | FixedIndex | Affine | Concat


@dataclass(frozen=True)
class LabelRow:
    """A row of an einsum spec.

    ``var`` is ``None`` for a closed row, ``""`` for ``...`` (the kind's row
    variable) and a name for ``..name..``. ``beg`` are the items written before
    the row variable (OCANNL's ``beg_dims``), ``items`` those after it.
    """

    items: tuple[LabelItem, ...]
    var: str | None
    beg: tuple[LabelItem, ...] = ()


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

    def row_var_names(self) -> set[str]:
        """The names of the spec's ``..name..`` row variables."""
        return {
            row.var
            for tensor in (*self.operands, self.result)
            for kind in Kind
            if (row := tensor.row(kind)).var
        }

    def labels(self) -> set[str]:
        """Every label name the spec uses (also inside affine and concatenated axes)."""
        names: set[str] = set()
        for tensor in (*self.operands, self.result):
            for kind in Kind:
                row = tensor.row(kind)
                for item in (*row.beg, *row.items):
                    names.update(item_labels(item))
        return names


def item_text(item: LabelItem) -> str:
    """An item of an einsum row as a spec writes it."""
    if isinstance(item, Label):
        return item.name
    if isinstance(item, FixedIndex):
        return str(item.index)
    if isinstance(item, Concat):
        return "^".join(item.labels)
    if isinstance(item, Affine):
        text = item.over if item.stride == 1 else f"{item.stride}*{item.over}"
        if item.use_padding is not None:
            text += "=" if item.use_padding else "<"
        if item.offset:
            text += f"+{item.offset}"
        if item.kernel is not None:
            dilation = "" if item.dilation == 1 else f"{item.dilation}*"
            text += f"+{dilation}{item.kernel}"
        return text
    return "_"


def item_labels(item: LabelItem) -> tuple[str, ...]:
    """The label names an item of an einsum row mentions."""
    if isinstance(item, Label):
        return (item.name,)
    if isinstance(item, Affine):
        return (item.over,) if item.kernel is None else (item.over, item.kernel)
    if isinstance(item, Concat):
        return item.labels
    return ()


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
    beg: tuple[Size, ...] = ()
    is_open = False
    for pos, item in _comma_items(spec, start, end):
        if not item:
            raise SpecError(spec, pos, "empty item in a row", _SHAPE_SPEC)
        if item == "...":
            if is_open:
                raise SpecError(spec, pos, "a row has at most one '...'", _SHAPE_SPEC)
            is_open = True
            beg = tuple(sizes)
            sizes = []
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
        n = parse_number(spec, pos, match.group(1), "a size", _SHAPE_SPEC)
        if n < 1:
            raise SpecError(spec, pos, f"a size must be positive, got {n}", _SHAPE_SPEC)
        basis = match.group(2)
        sizes.append(Size(n) if basis is None else Size(n, basis))
    return RowSpec(tuple(sizes), is_open, beg)


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


_AFFINE_RE = re.compile(
    r"(?:(?P<stride>[A-Za-z0-9_]+)\*)?(?P<over>[A-Za-z][A-Za-z0-9_']*)(?P<pad>[=<])?"
    r"(?:\+(?P<offset>[0-9]+))?"
    r"(?:\+(?:(?P<dilation>[A-Za-z0-9_]+)\*)?(?P<kernel>[A-Za-z][A-Za-z0-9_']*))?\Z"
)
_CONCAT_RE = re.compile(r"[A-Za-z][A-Za-z0-9_']*(?:\^[A-Za-z][A-Za-z0-9_']*)+\Z")
_OPERATOR_SPACES = re.compile(r"\s*([*+=<^])\s*")
_MULTICHAR_TRIGGERS = frozenset(",*+^<=")
"""Characters that put a row in multi-character mode (OCANNL's ``Lexer.is_multichar``;
``=`` of ``=>`` never reaches a row)."""


def parse_number(spec: str, pos: int, text: str, what: str, kind: str = "") -> int:
    """The value of a spec's decimal digits (the one place spec numbers are
    read): ASCII digits, at most ``MAX_DIGITS`` (``axisflow.numerals``), else
    a ``SpecError`` at ``pos`` naming ``what`` and the limit."""
    try:
        return natural(text, what)
    except NumeralError as error:
        raise SpecError(spec, pos, str(error), kind or _EINSUM_SPEC) from None


def _coefficient(spec: str, pos: int, text: str, what: str) -> int:
    if not (text.isascii() and text.isdigit()):
        raise SpecError(
            spec,
            pos,
            f"the {what} must be a positive integer, got {text!r}",
            _EINSUM_SPEC,
        )
    value = parse_number(spec, pos, text, f"the {what}")
    if value < 1:
        raise SpecError(
            spec,
            pos,
            f"the {what} must be a positive integer, got {value}",
            _EINSUM_SPEC,
        )
    return value


def _affine_item(spec: str, pos: int, token: str) -> Affine | None:
    match = _AFFINE_RE.match(token)
    if match is None:
        return None
    stride, pad, offset = match["stride"], match["pad"], match["offset"]
    dilation, kernel = match["dilation"], match["kernel"]
    if stride is None and pad is None and offset is None and kernel is None:
        return None  # a plain label
    if pad is not None and kernel is None:
        raise SpecError(
            spec,
            pos,
            f"'{pad}' (use_padding) belongs to a convolution: write it before "
            f"'+kernel', as in 'o{pad}+k'",
            _EINSUM_SPEC,
        )
    return Affine(
        stride=1 if stride is None else _coefficient(spec, pos, stride, "stride"),
        over=match["over"],
        offset=0 if offset is None else parse_number(spec, pos, offset, "the offset"),
        dilation=1
        if dilation is None
        else _coefficient(spec, pos, dilation, "dilation"),
        kernel=kernel,
        use_padding=None if pad is None else pad == "=",
    )


def _label_item(spec: str, pos: int, token: str, comma_mode: bool) -> LabelItem:
    if token == "_":
        return Placeholder()
    if token.isdigit():  # '²' too: parse_number refuses it with its position
        return FixedIndex(parse_number(spec, pos, token, "a fixed index"))
    if (comma_mode and _NAME_RE.match(token)) or (
        not comma_mode and len(token) == 1 and token.isalpha() and token.isascii()
    ):
        return Label(token)
    if comma_mode:
        if _CONCAT_RE.match(token):
            return Concat(tuple(token.split("^")))
        affine = _affine_item(spec, pos, token)
        if affine is not None:
            return affine
    raise SpecError(spec, pos, f"expected an axis label, got {token!r}", _EINSUM_SPEC)


def is_multichar(spec: str) -> bool:
    """Whether an einsum spec is in multi-character mode (OCANNL's
    ``Lexer.is_multichar``): any of ``, * + ^ <`` or an ``=`` not of ``=>``
    puts the whole spec in it, every row reading comma-separated names."""
    for index, char in enumerate(spec):
        if char in _MULTICHAR_TRIGGERS and not (
            char == "=" and spec.startswith("=>", index)
        ):
            return True
    return False


def _label_tokens(
    spec: str, start: int, end: int, multichar: bool
) -> tuple[list[tuple[int, str]], bool]:
    """Tokens of a label row with positions, and whether it is in comma mode."""
    if multichar:
        tokens = _comma_items(spec, start, end)
        if len(tokens) > 1 and not tokens[-1][1]:
            tokens.pop()  # a trailing comma, as OCANNL's grammar allows
        for pos, token in tokens:
            if not token:
                raise SpecError(spec, pos, "empty item in a row", _EINSUM_SPEC)
        # OCANNL's lexer skips spaces between the tokens of an affine or
        # concatenated item ("2*i + 1", "oh< + wh"); spaces between two names
        # stay and are refused (they are no single item).
        return [
            (pos, _OPERATOR_SPACES.sub(r"\1", token)) for pos, token in tokens
        ], True
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


def _parse_label_row(spec: str, start: int, end: int, multichar: bool) -> LabelRow:
    tokens, comma_mode = _label_tokens(spec, start, end, multichar)
    items: list[LabelItem] = []
    beg: tuple[LabelItem, ...] = ()
    var: str | None = None
    for pos, token in tokens:
        row_var = _row_var_item(spec, pos, token)
        if row_var is not None:
            if var is not None:
                raise SpecError(
                    spec, pos, "a row has at most one row variable", _EINSUM_SPEC
                )
            var = row_var
            beg = tuple(items)
            items = []
            continue
        items.append(_label_item(spec, pos, token, comma_mode))
    return LabelRow(tuple(items), var, beg)


def _parse_tensor_labels(
    spec: str, start: int, end: int, multichar: bool
) -> TensorLabels:
    segments = _split_kinds(spec, start, end, _EINSUM_SPEC)
    rows: dict[Kind, LabelRow] = {}
    for kind, segment in segments.items():
        rows[kind] = (
            LabelRow((), None)
            if segment is None
            else _parse_label_row(spec, *segment, multichar)
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
    multichar = is_multichar(spec)
    operands: list[TensorLabels] = []
    start = 0
    for _ in range(spec.count(";", 0, arrow) + 1):
        end = spec.find(";", start, arrow)
        end = arrow if end < 0 else end
        operands.append(_parse_tensor_labels(spec, start, end, multichar))
        start = end + 1
    result = _parse_tensor_labels(spec, arrow + 2, len(spec), multichar)
    parsed = EinsumSpec(spec, tuple(operands), result)
    _check_name_clash(parsed)
    return parsed


def _check_name_clash(parsed: EinsumSpec) -> None:
    """A name is a dim label or a row variable, not both (OCANNL's
    ``check_dim_row_var_name_clash``): ``..d..`` and ``d`` in one spec would
    make one name stand for an axis and for a run of axes."""
    clashes = sorted(parsed.labels() & parsed.row_var_names())
    if clashes:
        name = clashes[0]
        match = re.search(rf"\.\.{re.escape(name)}\.\.", parsed.text)
        raise SpecError(
            parsed.text,
            match.start() if match is not None else 0,
            f"'{name}' is used both as an axis label and as a row variable",
            _EINSUM_SPEC,
        )


# ------------------------------------------------------- einsum spec-to-rows

LinearAxis = tuple[tuple[tuple[int, Dim], ...], int, tuple[str, ...], str, LinearKind]
"""An affine or concatenated axis as ``(terms, const, names, text, kind)``: the
equation ``Σ coeff·dim + const = 0``, the dims' names, the axis as written and
the kind of equation (:class:`~axisflow.shapes.constraints.LinearKind`)."""


@dataclass
class EinsumRows:
    """An einsum spec in terms of fresh variables (see :func:`einsum_rows`).

    ``operands`` and ``result`` are each tensor's spec rows (batch, input,
    output); ``labels`` the label variables; ``row_vars`` the spec's row
    variables (``...`` per kind, then ``..name..``); ``at_least`` the fixed
    indices' minima; ``linears`` the affine and concatenated axes;
    ``prefixes`` the axes written before a row variable, as ``(s, beg, r)``
    for ``s = [beg..., ...r]``; ``named_rows`` the ``..name..`` row variables
    by name (what a capture of ``name`` binds); ``paddings`` the padded
    convolution axes as ``(tensor, kind, index, kernel)``: the tensor's
    position (the operands, then the result), the axis's index in its row
    (from the front for an axis before the row variable, else negative, from
    the end) and the kernel's variable.
    """

    operands: list[tuple[Row, Row, Row]]
    result: tuple[Row, Row, Row]
    labels: dict[str, DimVar]
    row_vars: list[RowVar]
    at_least: list[tuple[DimVar, int]]
    linears: list[LinearAxis]
    prefixes: list[tuple[RowVar, tuple[Dim, ...], RowVar]]
    named_rows: dict[str, RowVar]
    paddings: list[tuple[int, Kind, int, DimVar]]


def unpadded_convolution(parsed: EinsumSpec) -> Affine | None:
    """A convolution axis that does not say whether it pads (an einsum refuses it)."""
    for labels in (*parsed.operands, parsed.result):
        for kind in Kind:
            row = labels.row(kind)
            for item in (*row.beg, *row.items):
                if (
                    isinstance(item, Affine)
                    and item.kernel is not None
                    and item.use_padding is None
                ):
                    return item
    return None


def einsum_rows(
    parsed: EinsumSpec,
    fresh_dim: Callable[[], DimVar],
    fresh_row: Callable[[], RowVar],
) -> EinsumRows:
    """The spec's rows over fresh variables, in the order a reader meets them.

    A label is one variable throughout the spec, ``...`` one row variable per
    kind, ``..name..`` one per name. An affine, fixed-index or concatenated
    axis is a fresh variable with its equation or minimum; items before a
    row variable make the row ``[...s, items]`` with ``s = [beg..., ...r]``.
    """
    labels: dict[str, DimVar] = {}
    kind_vars: dict[Kind, RowVar] = {}
    named_vars: dict[str, RowVar] = {}
    at_least: list[tuple[DimVar, int]] = []
    linears: list[LinearAxis] = []
    prefixes: list[tuple[RowVar, tuple[Dim, ...], RowVar]] = []

    def label_var(label: str) -> DimVar:
        var = labels.get(label)
        if var is None:
            var = labels[label] = fresh_dim()
        return var

    def item_dim(item: LabelItem) -> DimVar:
        if isinstance(item, Label):
            return label_var(item.name)
        var = fresh_dim()
        text = item_text(item)
        if isinstance(item, FixedIndex):
            at_least.append((var, item.index + 1))
        elif isinstance(item, Affine):
            over = label_var(item.over)
            if item.kernel is None or item.use_padding:
                # Strided or padded: the axis has stride * over positions.
                if item.kernel is not None:
                    label_var(item.kernel)  # a label of the spec all the same
                linears.append(
                    (
                        ((item.stride, over), (-1, var)),
                        0,
                        (item.over, text),
                        text,
                        LinearKind.STRIDE,
                    )
                )
            else:
                # stride * (over - 1) + dilation * (kernel - 1) + 1 positions.
                kernel = label_var(item.kernel)
                linears.append(
                    (
                        ((item.stride, over), (item.dilation, kernel), (-1, var)),
                        1 - item.stride - item.dilation,
                        (item.over, item.kernel, text),
                        text,
                        LinearKind.CONVOLUTION,
                    )
                )
        elif isinstance(item, Concat):
            parts = tuple((1, label_var(label)) for label in item.labels)
            linears.append(
                (
                    (*parts, (-1, var)),
                    0,
                    (*item.labels, text),
                    text,
                    LinearKind.CONCAT,
                )
            )
        return var

    paddings: list[tuple[int, Kind, int, DimVar]] = []

    def note_padding(
        tensor: int, kind: Kind, items: tuple[LabelItem, ...], front: bool
    ) -> None:
        for index, item in enumerate(items):
            if (
                isinstance(item, Affine)
                and item.use_padding
                and item.kernel is not None
            ):
                position = index if front else index - len(items)
                paddings.append((tensor, kind, position, label_var(item.kernel)))

    def spec_row(row: LabelRow, kind: Kind) -> Row:
        dims: list[Dim] = [item_dim(item) for item in row.items]
        row_var: RowVar | None = None
        if row.var == "":
            row_var = kind_vars.get(kind)
            if row_var is None:
                row_var = kind_vars[kind] = fresh_row()
        elif row.var is not None:
            row_var = named_vars.get(row.var)
            if row_var is None:
                row_var = named_vars[row.var] = fresh_row()
        if row.beg:
            # [beg..., ...r, items...]: the row is [...s, items...] with
            # s = [beg..., ...r], which waits until s or r is closed.
            assert row_var is not None
            beg = tuple(item_dim(item) for item in row.beg)
            front = fresh_row()
            prefixes.append((front, beg, row_var))
            return Row(tuple(dims), front)
        return Row(tuple(dims), row_var)

    def tensor_rows(tensor: TensorLabels) -> tuple[Row, Row, Row]:
        batch = spec_row(tensor.batch, Kind.BATCH)
        input_ = spec_row(tensor.input, Kind.INPUT)
        return (batch, input_, spec_row(tensor.output, Kind.OUTPUT))

    operands = [tensor_rows(tensor) for tensor in parsed.operands]
    result = tensor_rows(parsed.result)
    for position, tensor in enumerate((*parsed.operands, parsed.result)):
        for kind in Kind:
            row = tensor.row(kind)
            note_padding(position, kind, row.beg, True)
            note_padding(position, kind, row.items, False)
    return EinsumRows(
        operands,
        result,
        labels,
        [*kind_vars.values(), *named_vars.values()],
        at_least,
        linears,
        prefixes,
        named_vars,
        paddings,
    )
