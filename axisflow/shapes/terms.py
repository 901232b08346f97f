"""Terms of the shape language: dims, rows, axis kinds and origins.

A tensor shape has three *rows* of axes, ``batch | input -> output``. A row
(:class:`Row`) is a tuple of dims plus a *tail*: closed (``var is None``, no
more axes) or open, with a row variable standing for any number of further
axes. Broadcasting extends a row with *leading* axes, so the row variable sits
in front: the row ``Row((d1, d2), r)`` reads ``[...r, d1, d2]``.

A dim is a :class:`DimVar` (unknown size) or a :class:`Size` (a size with a
*basis* label; two dims that must agree in size must agree in basis). The size
1 is the *broadcast unit*: it has no basis (its basis is always ``"default"``)
and it broadcasts to anything.

All terms are immutable values compared by content, so constraints built from
them are plain data that can be stored, renamed and replayed
(:mod:`axisflow.shapes.constraints`). Variables are compared by their integer
id; ids come from the one monotonic counter of a
:class:`~axisflow.shapes.session.Session` and are never reused.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final, final

DEFAULT_BASIS: Final = "default"


class Kind(StrEnum):
    """The three kinds of axes of a shape, in spec order."""

    BATCH = "batch"
    INPUT = "input"
    OUTPUT = "output"


KINDS: Final = (Kind.BATCH, Kind.INPUT, Kind.OUTPUT)


@final
class DimVar:
    """A dimension variable: an axis whose size is not known yet."""

    __slots__ = ("id",)
    id: int

    def __init__(self, id: int) -> None:
        self.id = id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DimVar) and other.id == self.id

    def __hash__(self) -> int:
        # Ids come from one counter for dims and rows alike: the id is a
        # collision-free hash, and the cheapest one (variables key hot dicts).
        return self.id

    def __repr__(self) -> str:
        return f"d{self.id}"


@final
class Size:
    """A solved dimension: a positive size with a basis label.

    Size 1 is the broadcast unit; its basis is normalized to the default so
    that every 1 is the same dim.
    """

    __slots__ = ("basis", "n")
    n: int
    basis: str

    def __init__(self, n: int, basis: str = DEFAULT_BASIS) -> None:
        self.n = n
        self.basis = DEFAULT_BASIS if n == 1 else basis

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Size) and other.n == self.n and other.basis == self.basis
        )

    def __hash__(self) -> int:
        return hash(("s", self.n, self.basis))

    def __repr__(self) -> str:
        return str(self.n) if self.basis == DEFAULT_BASIS else f"{self.n}@{self.basis}"


Dim = DimVar | Size

BROADCAST_UNIT: Final = Size(1)


@final
class RowVar:
    """A row variable: any number of further (leading) axes of a row."""

    __slots__ = ("id",)
    id: int

    def __init__(self, id: int) -> None:
        self.id = id

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RowVar) and other.id == self.id

    def __hash__(self) -> int:
        return self.id  # see DimVar.__hash__

    def __repr__(self) -> str:
        return f"r{self.id}"


@final
class Row:
    """A row of axes: ``dims`` with an optional row variable in front."""

    __slots__ = ("dims", "var")
    dims: tuple[Dim, ...]
    var: RowVar | None

    def __init__(self, dims: tuple[Dim, ...] = (), var: RowVar | None = None) -> None:
        self.dims = dims
        self.var = var

    def is_concrete(self) -> bool:
        """Whether the row is closed and every dim is a size."""
        return self.var is None and all(type(d) is Size for d in self.dims)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Row) and other.var == self.var and other.dims == self.dims
        )

    def __hash__(self) -> int:
        return hash((self.dims, self.var))

    def __repr__(self) -> str:
        return format_row(self)


EMPTY_ROW: Final = Row()


def format_dim(dim: Dim) -> str:
    """Readable form of a dim: ``3``, ``3@rgb`` or ``d7`` for a variable."""
    return repr(dim)


def format_row(row: Row) -> str:
    """Readable form of a row: ``[3, 5]``, ``[...r4, 3]``, ``[]``."""
    items = [f"...{row.var!r}"] if row.var is not None else []
    items.extend(format_dim(d) for d in row.dims)
    return "[" + ", ".join(items) + "]"


def format_concrete_shape(rows: tuple[Row, Row, Row]) -> str:
    """Spec-syntax text of three rows, in its shortest form.

    ``8|3,5->4``; a closed empty batch or input row is left out (``3->4``,
    ``8|4``, ``4``; a scalar is ``""``); an open row starts with ``...``.
    Unknown dims print as their variable (``d7``), so the text of an unsolved
    shape is for people, not for parsing back. The text of a concrete shape is
    canonical: two concrete shapes are equal exactly when their texts are.
    """

    def row_text(row: Row) -> str:
        items = ["..."] if row.var is not None else []
        items.extend(format_dim(d) for d in row.dims)
        return ",".join(items)

    batch, input_, output = (row_text(row) for row in rows)
    text = f"{input_}->{output}" if input_ else output
    return f"{batch}|{text}" if batch else text


@final
class Side:
    """One side of a constraint: a tensor name and the kind of its axes.

    ``kind`` is ``None`` for a side that is not a row of a tensor (a capture
    reference, an einsum label).
    """

    __slots__ = ("kind", "tensor")
    tensor: str
    kind: Kind | None

    def __init__(self, tensor: str, kind: Kind | None = None) -> None:
        self.tensor = tensor
        self.kind = kind

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Side)
            and other.tensor == self.tensor
            and other.kind == self.kind
        )

    def __hash__(self) -> int:
        return hash((self.tensor, self.kind))

    def __repr__(self) -> str:
        return f"Side({self.tensor!r}, {self.kind!r})"

    def __str__(self) -> str:
        return self.tensor if self.kind is None else f"{self.tensor}.{self.kind}"


@final
class Origin:
    """Where a constraint comes from, for error messages.

    ``operation`` is the kind of operation (``"pointwise"``, ``"compose"``,
    ``"einsum"``, ``"leaf"``, ``"param"``, ``"set_dim"``, ...), ``tensor`` the
    tensor it makes (or acts on), ``operands`` the tensors it reads. ``lhs``
    and ``rhs`` name the two sides of the particular constraint (for an
    inequality ``lhs`` is the result side, ``rhs`` the broadcasting operand).
    ``scheme`` and ``application`` name a shape scheme and the call site it is
    applied at (re-evaluation of a call sets only ``application``).
    ``site`` is an opaque handle for tools (the IR pass stores the operation
    there); it takes no part in equality.

    Immutable by convention (a plain slotted class: origins are made for every
    constraint, and a frozen dataclass costs several times more to build).
    """

    __slots__ = (
        "application",
        "detail",
        "lhs",
        "operands",
        "operation",
        "rhs",
        "scheme",
        "site",
        "tensor",
    )
    operation: str
    tensor: str
    operands: tuple[str, ...]
    lhs: Side | None
    rhs: Side | None
    detail: str | None
    scheme: str | None
    application: str | None
    site: object

    def __init__(
        self,
        operation: str,
        tensor: str,
        operands: tuple[str, ...] = (),
        lhs: Side | None = None,
        rhs: Side | None = None,
        detail: str | None = None,
        scheme: str | None = None,
        application: str | None = None,
        site: object = None,
    ) -> None:
        self.operation = operation
        self.tensor = tensor
        self.operands = operands
        self.lhs = lhs
        self.rhs = rhs
        self.detail = detail
        self.scheme = scheme
        self.application = application
        self.site = site

    def _key(self) -> tuple[object, ...]:
        return (
            self.operation,
            self.tensor,
            self.operands,
            self.lhs,
            self.rhs,
            self.detail,
            self.scheme,
            self.application,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Origin) and other._key() == self._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Origin({', '.join(repr(x) for x in self._key())})"

    def with_sides(self, lhs: Side | None, rhs: Side | None) -> Origin:
        """The same origin, naming the two sides of one constraint."""
        return Origin(
            self.operation,
            self.tensor,
            self.operands,
            lhs,
            rhs,
            self.detail,
            self.scheme,
            self.application,
            self.site,
        )

    def describe(self) -> str:
        """``compose 'h' of w, x`` plus the spec, scheme and application if any."""
        text = f"{self.operation} '{self.tensor}'"
        if self.operands:
            text += " of " + ", ".join(self.operands)
        if self.detail:
            text += f" ({self.detail})"
        if self.scheme is not None:
            text += f" in shape scheme {self.scheme}"
        if self.application is not None:
            text += f" at application '{self.application}'"
        return text
