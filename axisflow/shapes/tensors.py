"""Shapes and tensors: the three rows of a tensor, named and owned by a session.

Below the operations and the session; a shape reaches its session only
through :class:`ShapeOwner` (to mint its creation tick, read its rows through
the solver, refuse reads of discarded shapes or while forcing is guarded).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Literal, Protocol

from axisflow.shapes.errors import ShapeError
from axisflow.shapes.terms import (
    KINDS,
    Kind,
    Origin,
    Row,
    Side,
    Size,
    format_concrete_shape,
)


class RowReader(Protocol):
    """What a shape reads its rows through (the session's solver)."""

    def norm_row(self, row: Row) -> Row: ...


class ShapeOwner(Protocol):
    """The session a shape belongs to, as the shape sees it."""

    @property
    def row_reader(self) -> RowReader: ...

    def _mint(self) -> int: ...

    def _leave_fast_mode(self) -> None: ...

    def check_alive(self, shape: Shape) -> None: ...

    def margins_of(
        self, shape: Shape
    ) -> Mapping[Kind, tuple[tuple[int, int], ...]]: ...

    def check_forcing(self, what: str) -> None: ...


Role = Literal["leaf", "param", "fresh", "result"]

ROW_ATTRS = tuple(kind.value for kind in KINDS)  # Shape's attributes, in row order


NO_MARGINS: Mapping[Kind, tuple[tuple[int, int], ...]] = MappingProxyType({})
"""The margins of a shape no padded convolution reads (one read-only mapping
shared by every shape: a dict per shape would cost memory per tensor)."""


@lru_cache(maxsize=4096)
def shape_sides(name: str) -> tuple[Side, Side, Side]:
    """The sides naming a shape's batch, input and output rows in origins.

    Cached (sides are immutable): re-evaluating a function makes its tensors
    under the same names at every call site, which then share their sides.
    """
    return (Side(name, Kind.BATCH), Side(name, Kind.INPUT), Side(name, Kind.OUTPUT))


class Shape:
    """The three rows of a tensor, registered with its session's next closing.

    The rows are terms over the session's variables; :meth:`current` reads
    them through the solver, :meth:`dims` returns concrete sizes once every
    dim is solved. Closing rewrites the rows to their concrete values.
    """

    __slots__ = (
        "_fast",
        "_session",
        "batch",
        "created_at",
        "discarded",
        "input",
        "name",
        "output",
        "registered_at",
    )

    def __init__(
        self,
        session: ShapeOwner,
        name: str,
        batch: Row,
        input_: Row,
        output: Row,
        created_at: int | None = None,
    ):
        self._session = session
        self.name = name
        self.batch = batch
        self.input = input_
        self.output = output
        self.discarded = False
        # A tick of the variable counter (ids are never reused, so one is spent
        # on this): a shape made after ``var_mark()`` was read has
        # ``created_at >= mark``, one made before has ``created_at < mark``. A
        # shape scheme tells the shapes its function made from older ones so.
        # Shapes made together may share one tick (``created_at``: the
        # internal shapes of one scheme application share its int object).
        self.created_at = session._mint() if created_at is None else created_at
        # The closing count when the shape was registered (-1: never), so that
        # registering twice before one closing registers once.
        self.registered_at = -1
        self._fast: object = None

    @property
    def margins(self) -> Mapping[Kind, tuple[tuple[int, int], ...]]:
        """Padding margins per kind, as closing published them (see
        :meth:`padding`). Kept by the session, not on the shape: a slot
        would cost memory per tensor, and only padded convolutions have any."""
        return self._session.margins_of(self)

    @property
    def session(self) -> ShapeOwner:
        """The session the shape belongs to."""
        return self._session

    def rows(self) -> tuple[Row, Row, Row]:
        """The rows as stored (batch, input, output)."""
        return (self.batch, self.input, self.output)

    def side(self, kind: Kind) -> Side:
        """The side naming this shape's row of one kind in constraint origins.

        Not stored: a slot would cost memory per tensor of every call site,
        and the sides of a name are cached (:func:`shape_sides`)."""
        return shape_sides(self.name)[KINDS.index(kind)]

    def row(self, kind: Kind | str) -> Row:
        """The stored row of one kind (``Kind.BATCH`` or ``"batch"``, ...)."""
        if kind == Kind.BATCH:
            return self.batch
        if kind == Kind.INPUT:
            return self.input
        if kind == Kind.OUTPUT:
            return self.output
        raise ShapeError(
            f"no axis kind {kind!r}: the kinds are 'batch', 'input' and 'output'"
        )

    def current(self) -> tuple[Row, Row, Row]:
        """The rows with everything solved so far substituted."""
        self._session.check_alive(self)
        norm_row = self._session.row_reader.norm_row
        return (norm_row(self.batch), norm_row(self.input), norm_row(self.output))

    def describe(self) -> str:
        """Spec-like text of the current rows, e.g. ``8|3->4`` or ``...|->d5``."""
        return format_concrete_shape(self.current())

    def dims(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """``(batch, input, output)`` sizes; raises ``ShapeError`` until all are solved."""
        self._session.check_forcing(f"reading the dims of '{self.name}'")
        rows = self.current()
        if not all(row.is_concrete() for row in rows):
            raise ShapeError(
                f"the shape of '{self.name}' is not solved yet "
                f"({format_concrete_shape(rows)}); call close() first"
            )
        batch, input_, output = (
            tuple(d.n for d in row.dims if type(d) is Size) for row in rows
        )
        return (batch, input_, output)

    def padding(self, kind: Kind | str) -> tuple[tuple[int, int], ...] | None:
        """The padding margins of the row of one kind, as closing published them.

        ``None`` when no axis of the row is the input of a padded convolution
        (OCANNL's ``batch_padding``/``input_padding``/``output_padding``);
        otherwise one ``(before, after)`` pair per axis, ``(0, 0)`` for an
        axis no padded convolution reads. For a kernel of size ``k`` an axis
        has ``(k + 1) // 2`` positions of padding after it and the rest of
        ``k`` before (a 3-wide kernel: ``(1, 2)``); several convolutions on
        one axis take the widest margins.
        """
        margins = self.margins.get(Kind(kind)) if kind in KINDS else None
        if margins is None:
            self.row(kind)  # an unknown kind: the error names the kinds
        return margins

    def __repr__(self) -> str:
        return f"<Shape {self.name}: {format_concrete_shape(self.rows())}>"


@dataclass(frozen=True, eq=False)
class Tensor:
    """A tensor of a session: a name, a shape, its role and where it was made."""

    name: str
    shape: Shape
    role: Role
    origin: Origin


_BATCH_SLOT = Shape.__dict__["batch"]
_INPUT_SLOT = Shape.__dict__["input"]
_OUTPUT_SLOT = Shape.__dict__["output"]


class FastShape(Shape):
    """A shape the concrete fast path made (:mod:`axisflow.shapes.concrete`).

    Its rows are known concretely, but the session has not built the
    variables and constraints the general path would have: they are built
    (the session *leaves the fast mode*) the first time anything reads the
    rows as stored, which is when they could differ. Reading ``batch``,
    ``input`` or ``output`` (and so ``rows``, ``row``, ``current``, ``dims``,
    ``describe``) does that; afterwards the object is a plain :class:`Shape`
    (its class is switched back), with exactly the rows the general path gives
    it. Closing in the fast mode switches it back with its concrete rows.
    """

    __slots__ = ()

    def __init__(  # pyright: ignore[reportMissingSuperCall]
        self, session: ShapeOwner, name: str, created_at: int, record: object
    ) -> None:
        # Not Shape.__init__: the rows are not stored (reading them builds
        # them), and the creation tick is one the fast path reserved.
        self._session = session
        self.name = name
        self.discarded = False
        self.created_at = created_at
        self.registered_at = -1
        self._fast = record

    @property
    def batch(self) -> Row:  # type: ignore[override]
        """The stored batch row (leaves the session's fast mode)."""
        self._session._leave_fast_mode()
        return _BATCH_SLOT.__get__(self, Shape)

    @property
    def input(self) -> Row:  # type: ignore[override]
        """The stored input row (leaves the session's fast mode)."""
        self._session._leave_fast_mode()
        return _INPUT_SLOT.__get__(self, Shape)

    @property
    def output(self) -> Row:  # type: ignore[override]
        """The stored output row (leaves the session's fast mode)."""
        self._session._leave_fast_mode()
        return _OUTPUT_SLOT.__get__(self, Shape)
