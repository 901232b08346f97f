"""Shape schemes' plain data: what a scheme holds, the negative controls, the
refusal, the compiled form of a fact, and the checks every operation shares."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from axisflow.shapes.constraints import (
    DimAtLeast,
    DimIneq,
    DimLinear,
    RowIneq,
    RowPrefix,
    Terminal,
    TotalElems,
)
from axisflow.shapes.errors import ShapeError
from axisflow.shapes.refs import DimRef
from axisflow.shapes.session import Session
from axisflow.shapes.tensors import Shape, Tensor
from axisflow.shapes.terms import (
    Dim,
    DimVar,
    Kind,
    Origin,
    Row,
    RowVar,
    Size,
)

Rows = tuple[Row, Row, Row]
ShapeLike = Shape | Tensor


class Sabotage(enum.Enum):
    """Negative controls: each disables one part of the mechanism.

    They exist so that tests can show they test something. Every operation
    accepts every member; a member only acts where the specification says.
    """

    NO_GENERALIZATION = "no_generalization"
    """Rename nothing: applications share the trace's variables (instantiate, check)."""
    SEVER_SHARED = "sever_shared"
    """Rename every variable and drop the anchors (instantiate, check)."""
    NO_MARKS = "no_marks"
    """Re-add none of the trace's policy marks (instantiate only)."""
    NO_INTERNAL_ROWS = "no_internal_rows"
    """Register none of the scheme's internal rows with the closing (instantiate only)."""
    NO_END_VALIDATION = "no_end_validation"
    """Skip the end-of-trace solve of the whole window (trace only)."""
    NO_REF_INPUTS = "no_ref_inputs"
    """Relate and bind none of the scheme's capture inputs (instantiate and check)."""


class UntraceableScheme(ShapeError):
    """A traced function did something a shape scheme cannot carry.

    A precision-dependent element count, ``set_dim`` on a capture reference
    made before the trace, or forcing dims (closing, reading dims) while it
    runs. The message starts ``tracing the shape scheme <label>: ``.
    """


# ------------------------------------------------------------------ the scheme


@dataclass(frozen=True, slots=True)
class Anchor:
    """A pre-existing shape the traced function read, with its rows as traced."""

    shape: Shape
    rows: Rows


@dataclass(frozen=True, slots=True)
class InternalRows:
    """The rows of a shape the traced function made (an intermediate tensor)."""

    name: str
    rows: Rows


@dataclass(frozen=True, slots=True)
class CaptureInput:
    """A capture reference made before the trace that the function binds.

    ``dim`` is the scheme term of its first binding (all later bindings in
    the function are equal to it): a dim for a label, a row for a row
    variable (``..name..``: the reference stands for its element count).
    ``before``: the number of the scheme's pending facts (totals, linear
    equations, row prefixes, in the facts' order) the function added before
    that binding, when it added one after it (``None``: it added none). An
    application binds the input there, so that an element count the binding
    adds keeps its place among the others: closing gives each total's
    elements to its last open row in the order the totals were added.
    """

    ref: DimRef
    dim: Dim | Row
    origin: Origin
    before: int | None = None


@dataclass(frozen=True, slots=True)
class Padding:
    """A padded convolution reads axis ``axis`` of a shape's row: closing
    gives that row its padding margins for a kernel of size ``kernel``.

    ``where`` and ``index`` say which shape (``"arg"``, ``"internal"`` or
    ``"anchor"``), ``kind`` which of its rows; ``axis`` counts from the
    front (``>= 0``) or from the end (``< 0``), as ``PaddedAxis.index``.
    """

    where: str
    index: int
    kind: Kind
    axis: int
    kernel: Dim
    origin: Origin


@dataclass(frozen=True, slots=True)
class LooseVariable:
    """An open pre-existing variable the scheme mentions that no anchor holds.

    Instantiation equates ``term`` (in scheme variables) with ``old``. After a
    closing ``old`` has lost its state, so the scheme is stale.
    """

    old: DimVar | RowVar
    term: Dim | Row


Fact = DimIneq | RowIneq | DimAtLeast | TotalElems | Terminal | DimLinear | RowPrefix

ROW_INEQ, DIM_INEQ, TERMINAL, AT_LEAST, TOTAL, LINEAR, PREFIX = range(7)


def compile_fact(
    fact: Fact, origin_index: dict[int, int]
) -> tuple[int, object, object, int]:
    """A fact as (kind code, first term, second term or value, origin index)."""
    at = origin_index[id(fact.origin)]
    if isinstance(fact, RowIneq):
        return (ROW_INEQ, fact.res, fact.opnd, at)
    if isinstance(fact, DimIneq):
        return (DIM_INEQ, fact.res, fact.opnd, at)
    if isinstance(fact, Terminal):
        return (TERMINAL, fact.row, fact.is_param, at)
    if isinstance(fact, DimAtLeast):
        return (AT_LEAST, fact.dim, fact.n, at)
    if isinstance(fact, DimLinear):
        return (LINEAR, fact.terms, fact, at)
    if isinstance(fact, RowPrefix):
        return (PREFIX, (fact.whole, fact.rest), fact.beg, at)
    return (TOTAL, fact.rows, fact.count, at)


ARG, RESULT, ANCHOR = range(3)


# ------------------------------------------------------------------- helpers


def fail(prefix: str, message: str) -> NoReturn:
    raise ShapeError(prefix + message)


def one_shape(value: object, session: Session, what: str, prefix: str) -> Shape:
    """The shape of a ``Shape`` or ``Tensor`` of ``session``, else a clear error."""
    shape = value.shape if isinstance(value, Tensor) else value
    if not isinstance(shape, Shape):
        fail(prefix, f"{what} must be a shape or a tensor, got {value!r}")
    if shape.session is not session:
        fail(prefix, f"{what} ('{shape.name}') belongs to another session")
    if shape.discarded:
        fail(prefix, f"{what} ('{shape.name}') was discarded by a rewind")
    return shape


def shapes_of(
    values: object, session: Session, what: str, prefix: str
) -> tuple[Shape, ...]:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | tuple):
        fail(prefix, f"the {what}s must be a sequence of shapes, got {values!r}")
    items: Sequence[object] = values  # type: ignore[assignment]
    return tuple(
        one_shape(value, session, f"{what} {index}", prefix)
        for index, value in enumerate(items)
    )


def sabotage_set(sabotage: object, prefix: str) -> frozenset[Sabotage]:
    """``None``, one member or an iterable of members."""
    if sabotage is None:
        return frozenset()
    if isinstance(sabotage, Sabotage):
        return frozenset((sabotage,))
    if isinstance(sabotage, Iterable) and not isinstance(sabotage, str | bytes):
        members = tuple(sabotage)
        if all(isinstance(m, Sabotage) for m in members):
            return frozenset(members)  # type: ignore[arg-type]
    fail(prefix, f"sabotage must be a Sabotage member, got {sabotage!r}")


def row_vars(row: Row) -> Iterable[DimVar | RowVar]:
    if row.var is not None:
        yield row.var
    for d in row.dims:
        if type(d) is DimVar:
            yield d


def term_vars(term: Dim | Row) -> Iterable[DimVar | RowVar]:
    if type(term) is Row:
        return row_vars(term)
    return (term,) if type(term) is DimVar else ()


def fact_terms(fact: Fact) -> Iterable[Dim | Row]:
    if isinstance(fact, DimIneq):
        return (fact.res, fact.opnd)
    if isinstance(fact, RowIneq):
        return (fact.res, fact.opnd)
    if isinstance(fact, DimAtLeast):
        return (fact.dim,)
    if isinstance(fact, TotalElems):
        count = fact.count
        return (*fact.rows, count) if isinstance(count, DimVar | Size) else fact.rows
    if isinstance(fact, DimLinear):
        return tuple(dim for _, dim in fact.terms)
    if isinstance(fact, RowPrefix):
        return (fact.whole, Row(fact.beg), fact.rest)
    return (fact.row,)


# -------------------------------------------------------------------- trace
