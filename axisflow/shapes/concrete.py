"""The concrete fast path: operations on concrete rows, without variables.

Most tensors of real programs have concrete shapes: leaves with sizes in
their specs, and operations on them. For those the general path (a row
variable per row, a constraint with its origin per inequality, templates,
relations between the open tails of results, closing each of them) spends
hundreds of Python calls per operation on what NumPy's broadcasting rules
give directly. A session therefore starts in the **fast mode**: while every
operation is a leaf or parameter with a concrete spec, or a ``pointwise``,
``compose`` or ``transpose`` whose operands are such tensors, it computes
each result's rows here, with plain tuples, and records the operation. It
leaves the fast mode (:meth:`~axisflow.shapes.session.Session._leave_fast_mode`)
as soon as anything else happens (another operation, a constraint, a rewind
window, a guard, a read of the solver or of a shape's stored rows, or an
error found here) by replaying the recorded operations through the general
path, which then builds exactly the state it would have built from the start.

Why the results agree. The general path leaves a result's rows open: a
*safe-to-guess* tail in front of its axes, and a free dim variable where
every operand has 1. Only a constraint with the result on the *result side*
of an inequality, or in an equation, could give those open parts axes or
sizes; the fast mode admits a result only as an operand (of ``pointwise``,
of ``transpose``, as the right operand of ``compose``), where the general
path only relates its tail to other open tails, gives it lower bounds or
closes it to no axes, and gives its free dims lower bounds or 1. Leaves are
all concrete, so closing decides no leaf row: every open row closes to no
axes and every free dim to 1, which is the broadcast computed here. The
replay keeps every variable id the same (the fast path reserves the ids the
general path would mint, so messages naming variables do not change), and
an error found here is re-raised by the general path with its message
(:func:`broadcast` and :func:`fits` return ``None`` whenever the general path
could fail). A property test (``tests/shapes/test_shapes_concrete.py``)
compares both paths on random programs: closed shapes, errors, variable
counter.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Final, cast

from axisflow.shapes.spec import parse_shape_spec
from axisflow.shapes.tensors import Shape
from axisflow.shapes.terms import KINDS, Dim, Origin, Row, Size

MAX_FAST_RANK: Final = 64
"""The general path refuses more axes than this in front of a template's
variable (``solver.MAX_RANK``); rows this long take the general path."""

Dims = tuple[Dim, ...]
"""The dims of a concrete row: every one a :class:`Size` (typed as the row's)."""
Sizes = tuple[Size, ...]


class FastRecord:
    """One operation made in the fast mode: its result's rows and how to replay it.

    ``op`` is ``"leaf"``, ``"param"``, ``"pointwise"``, ``"compose"`` or
    ``"transpose"``; ``args`` the spec text (leaves) or the operand shapes;
    ``rows`` the result's closed concrete rows. ``provisional``: the general
    path leaves the rows open until closing (results, not leaves), so the
    shape may not be the left operand of ``compose``. The operation minted the
    ids ``first_id`` to ``end_id - 1`` (three row variables, the creation
    tick, then its templates' variables).
    """

    __slots__ = (
        "args",
        "end_id",
        "first_id",
        "op",
        "origin",
        "provisional",
        "rows",
        "shape",
    )

    def __init__(
        self,
        op: str,
        args: object,
        origin: Origin,
        rows: tuple[Row, Row, Row],
        provisional: bool,
        first_id: int,
        end_id: int,
    ) -> None:
        self.op = op
        self.args = args
        self.origin = origin
        self.rows = rows
        self.provisional = provisional
        self.first_id = first_id
        self.end_id = end_id
        self.shape: Shape | None = None


@lru_cache(maxsize=4096)
def concrete_spec_rows(spec: str) -> tuple[Row, Row, Row] | None:
    """The closed rows of a leaf spec whose every row is closed (``None`` otherwise).

    Raises ``SpecError`` for a malformed spec, as ``parse_shape_spec``.
    """
    parsed = parse_shape_spec(spec)
    rows = tuple(parsed.row(kind) for kind in KINDS)
    if any(row.is_open or len(row.sizes) > MAX_FAST_RANK for row in rows):
        return None
    batch, input_, output = (Row(row.sizes) for row in rows)
    return (batch, input_, output)


def concrete_rows(shape: Shape) -> tuple[tuple[Row, Row, Row], bool] | None:
    """A shape's concrete rows and whether they are provisional, if it has them.

    A shape of the fast mode has them (provisional for a result); any other
    shape only if its stored rows are closed and sized (closed by an earlier
    closing, say).
    """
    record = shape._fast  # pyright: ignore[reportPrivateUsage]
    if record is not None:
        assert isinstance(record, FastRecord)
        return record.rows, record.provisional
    rows = (shape.batch, shape.input, shape.output)
    for row in rows:
        if row.var is not None or len(row.dims) > MAX_FAST_RANK:
            return None
        for dim in row.dims:
            if type(dim) is not Size:
                return None
    return rows, False


def broadcast(rows: Sequence[Dims]) -> tuple[Dims, int] | None:
    """Broadcast concrete rows as the general path solves ``r ⊑ x`` for each, in order.

    Returns the result row's dims and how many variable ids the general path
    mints for it (each operand longer than the result so far makes a template:
    one dim per missing axis and a tail), or ``None`` if the general path
    would fail (two different sizes other than 1 at one position). A position where every operand has 1 is
    1: the general path leaves a free dim there, which closing makes 1.
    """
    # Rows of at most MAX_FAST_RANK axes (concrete_spec_rows, concrete_rows)
    # broadcast to at most as many: no template passes the general limit.
    first = rows[0]
    mints = len(first) + 1 if first else 0
    if len(rows) == 1:
        return first, mints
    result = list(cast(Sizes, first))
    for dims in cast(Sequence[Sizes], rows[1:]):
        if dims is first:
            continue  # the first operand's row again adds nothing
        extra = len(dims) - len(result)
        if extra > 0:
            # The general path's template: the new leading axes come from here.
            mints += extra + 1
            result[0:0] = dims[:extra]
            start, offset = extra, 0
        else:
            start, offset = 0, -extra
        for position in range(start, len(dims)):
            new = dims[position]
            if new.n == 1:
                continue
            old = result[position + offset]
            if old is new:
                continue
            if old.n == 1:
                result[position + offset] = new
            elif old.n != new.n or old.basis != new.basis:
                return None
    return tuple(result), mints


def join_rows(rows: Sequence[Dims]) -> Dims | None:
    """The broadcast join of concrete rows: the longest, per axis the size
    other than 1 among them, else 1; ``None`` when two such sizes clash.

    What :func:`broadcast` computes for a result row, without counting
    templates: shape schemes presolve internal rows with it.
    """
    if not rows:
        return ()
    found = broadcast(rows)
    return None if found is None else found[0]


def fits(res: Dims, opnd: Dims) -> bool:
    """Whether ``res ⊑ opnd`` holds for a closed concrete result row.

    The operand may have fewer axes (aligned from the right), each one 1 or
    the result's size; an operand with more axes than the closed result is
    the general path's error.
    """
    offset = len(res) - len(opnd)
    if offset < 0:
        return False
    sizes = cast(Sizes, res)
    for position, new in enumerate(cast(Sizes, opnd)):
        if new.n == 1:
            continue
        old = sizes[offset + position]
        if old is not new and (old.n != new.n or old.basis != new.basis):
            return False
    return True
