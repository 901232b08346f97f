"""Constraints: plain data that operations emit and the solver consumes.

Every constraint carries an :class:`~axisflow.shapes.terms.Origin`. A session
keeps an append-only log of the constraints it was given inside rewind
windows (of all of them with ``keep_log=True``), in emission order
(:attr:`Session.log <axisflow.shapes.session.Session.log>`); a rewind window
can read off the part it added. Because constraints only hold immutable terms,
they can be replayed (:meth:`Session.add
<axisflow.shapes.session.Session.add>`).

============== ===========================================================
``DimEq``      two dims are equal (unification)
``RowEq``      two rows are equal (unification, occurs check)
``DimIneq``    ``res ⊑ opnd``: the operand dim equals the result dim or is 1
``RowIneq``    ``res ⊑ opnd``: rows aligned from the right; the operand may
               have fewer axes (they broadcast) and each of its dims is
               ``⊒`` the result's
``TotalElems`` the product of all dims of the rows is ``count``
``DimAtLeast`` a dim is at least ``n`` (einsum fixed indices)
``DimLinear``  ``Σ coeff·dim + const = 0`` (affine and concatenated axes)
``RowPrefix``  ``whole = [beg..., ...rest]`` (axes before a row variable)
``PaddedAxis`` an axis is the input of a padded convolution (its margins)
``Terminal``   the row belongs to a leaf (data or parameter): at closing it
               takes its lower bound, and a parameter's must be inferable
``PolicyMark`` a policy flag on the row's variable, consulted at closing
``CaptureBind`` an operation binds a capture reference to a dim variable
``SetDim``     the user fixes the size a capture reference stands for
============== ===========================================================
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from axisflow.shapes.refs import DimRef
from axisflow.shapes.terms import Dim, DimVar, Origin, Row, RowVar, Size


class Mark(StrEnum):
    """Policy marks on row variables (copied when variables are unified)."""

    SAFE_TO_GUESS = "safe_to_guess"
    USED_IN_SPEC_OR_COMPOSE = "used_in_spec_or_compose"
    USED_IN_POINTWISE = "used_in_pointwise"


@dataclass(frozen=True)
class DeferredCount:
    """An element count known only late, e.g. a file's bytes over the precision.

    ``resolve`` is called at closing, not before: until then a
    :class:`TotalElems` with a deferred count constrains nothing. A shape
    scheme cannot carry such a constraint (its count depends on state outside
    the traced function), which is why it is a distinct type.
    """

    description: str
    resolve: Callable[[], int]

    def __str__(self) -> str:
        return f"<{self.description}>"


# ``RowEq``, ``RowIneq`` and ``DimIneq`` are made for every relation of
# every operation's rows: they are immutable by convention (as ``Origin``),
# not frozen, because a frozen dataclass builds its fields through
# ``object.__setattr__``, which tripled the cost of making one.


@dataclass(frozen=True, slots=True)
class DimEq:
    """``a = b``."""

    a: Dim
    b: Dim
    origin: Origin

    def __str__(self) -> str:
        return f"{self.a!r} = {self.b!r}  ({self.origin.describe()})"


@dataclass(slots=True, unsafe_hash=True)  # immutable by convention: see below
class RowEq:
    """``a = b`` on rows."""

    a: Row
    b: Row
    origin: Origin

    def __str__(self) -> str:
        return f"{self.a!r} = {self.b!r}  ({self.origin.describe()})"


@dataclass(slots=True, unsafe_hash=True)  # immutable by convention: see below
class DimIneq:
    """``res ⊑ opnd``: ``opnd`` equals ``res`` or is the broadcast unit."""

    res: Dim
    opnd: Dim
    origin: Origin

    def __str__(self) -> str:
        return f"{self.res!r} ⊑ {self.opnd!r}  ({self.origin.describe()})"


@dataclass(slots=True, unsafe_hash=True)  # immutable by convention: see below
class RowIneq:
    """``res ⊑ opnd`` on rows: ``opnd`` broadcasts to ``res``."""

    res: Row
    opnd: Row
    origin: Origin

    def __str__(self) -> str:
        return f"{self.res!r} ⊑ {self.opnd!r}  ({self.origin.describe()})"


@dataclass(frozen=True, slots=True)
class TotalElems:
    """The product of every dim of ``rows`` is ``count``.

    ``count`` is a number, a :class:`DeferredCount`, or a dim (OCANNL's
    ``Strided_var``: ``set_equal`` between a row capture and a dim capture
    says a row holds as many elements as a dim has positions).
    """

    rows: tuple[Row, ...]
    count: int | DeferredCount | Dim
    origin: Origin

    @property
    def is_deferred(self) -> bool:
        """Whether the count is only known at closing (e.g. precision-dependent)."""
        return isinstance(self.count, DeferredCount)

    @property
    def counts_a_dim(self) -> bool:
        """Whether the count is a dim (a variable, or the size it was solved to)."""
        return isinstance(self.count, DimVar | Size)

    def __str__(self) -> str:
        return f"elements({', '.join(map(repr, self.rows))}) = {self.count}  ({self.origin.describe()})"


@dataclass(frozen=True, slots=True)
class DimAtLeast:
    """``dim >= n`` (an einsum fixed index ``k`` needs ``k + 1`` positions)."""

    dim: Dim
    n: int
    origin: Origin

    def __str__(self) -> str:
        return f"{self.dim!r} >= {self.n}  ({self.origin.describe()})"


class LinearKind(StrEnum):
    """What a :class:`DimLinear` stands for, which says how bases pass through it.

    The kind fixes the layout of the terms; the axis itself is always the
    last term:

    * ``SUM``: any equation; a dim it solves takes the default basis;
    * ``STRIDE``: ``((stride, over), (-1, axis))``, a strided axis or a padded
      convolution (whose kernel takes no part in the size);
    * ``CONVOLUTION``: ``((stride, over), (dilation, kernel), (-1, axis))``,
      an unpadded convolution;
    * ``CONCAT``: ``((1, part), ..., (-1, axis))``, a concatenation.
    """

    SUM = "sum"
    STRIDE = "stride"
    CONVOLUTION = "convolution"
    CONCAT = "concat"


@dataclass(frozen=True, slots=True)
class DimLinear:
    """``Σ coeff·dim + const = 0`` over positive sizes (affine and concatenated axes).

    An einsum's ``stride*o<+k`` axis of size ``i`` is ``stride·o + k - i +
    (1 - stride) - 1 = 0``; ``a^b`` of size ``c`` is ``a + b - c = 0``. Solved
    once at most one of the dims is unknown. ``names`` name the dims for
    messages and ``text`` is the axis as the spec writes it. ``kind`` says
    which basis a solved dim takes (OCANNL's ``row.ml``: a strided axis and
    its ``over`` share one; a convolution's is that of ``over`` and the
    kernel, which must agree; a concatenation's that of its parts, which
    must agree).
    """

    terms: tuple[tuple[int, Dim], ...]
    const: int
    names: tuple[str, ...]
    text: str
    origin: Origin
    kind: LinearKind = LinearKind.SUM

    def __str__(self) -> str:
        parts = " + ".join(f"{c}*{d!r}" for c, d in self.terms)
        return f"{parts} + {self.const} = 0  ({self.text}; {self.origin.describe()})"


@dataclass(frozen=True, slots=True)
class RowPrefix:
    """``whole = [beg..., ...rest]``: axes written before a row variable.

    OCANNL's ``beg_dims`` (einsum ``"a, ..r.., b"``): the einsum relates the
    tensor's row to ``[...s, b]`` and ``s`` to ``a`` followed by ``r``. Solved
    once ``whole`` is closed (its first axes are ``beg``) or ``rest`` is (then
    ``whole`` is known); closing gives a still-open ``rest`` no axes.
    """

    whole: Row
    beg: tuple[Dim, ...]
    rest: Row
    origin: Origin

    def __str__(self) -> str:
        return f"{self.whole!r} = {list(self.beg)!r} ++ {self.rest!r}  ({self.origin.describe()})"


@dataclass(frozen=True, slots=True)
class PaddedAxis:
    """An axis of ``row`` is the input of a padded convolution with ``kernel``.

    ``index`` is the axis's position in the row: from the front (``>= 0``, an
    axis written before the row variable) or from the end (``< 0``, ``-1``
    the last). Closing gives the axis OCANNL's padding margins for a kernel
    of size ``k``: ``(k + 1) // 2`` after it, the rest of ``k`` before
    (``row.ml``, ``Conv_input``); several convolutions on one axis take the
    widest (:meth:`Shape.padding <axisflow.shapes.tensors.Shape.padding>`).
    """

    row: Row
    index: int
    kernel: Dim
    origin: Origin

    def __str__(self) -> str:
        return f"padded axis {self.index} of {self.row!r}, kernel {self.kernel!r}  ({self.origin.describe()})"


@dataclass(frozen=True, slots=True)
class Terminal:
    """The row belongs to a leaf tensor (``is_param``: a parameter)."""

    row: Row
    is_param: bool
    origin: Origin

    def __str__(self) -> str:
        return f"{'param' if self.is_param else 'leaf'} row {self.row!r}  ({self.origin.describe()})"


@dataclass(frozen=True, slots=True)
class PolicyMark:
    """Set ``mark`` on the row variable of ``row`` (if the row is still open)."""

    row: Row
    mark: Mark
    origin: Origin

    def __str__(self) -> str:
        return f"{self.mark} {self.row!r}  ({self.origin.describe()})"


@dataclass(frozen=True, slots=True, eq=False)
class CaptureBind:
    """An operation binds the capture reference ``ref`` to the variable ``var``.

    ``var`` is the dim variable of a label, or the row variable of a
    ``..name..`` (the reference then stands for the row's element count). The
    first binding of an unbound reference records the variable; binding a
    bound reference (or one with a known size) equates the two: dims or rows
    are equal, a row holds as many elements as the dim has positions.
    """

    ref: DimRef
    var: DimVar | RowVar
    origin: Origin

    def __str__(self) -> str:
        return f"capture '{self.ref.label}' := {self.var!r}  ({self.origin.describe()})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, CaptureBind)
            and other.ref is self.ref
            and other.var == self.var
            and other.origin == self.origin
        )

    def __hash__(self) -> int:
        return hash((id(self.ref), self.var, self.origin))


@dataclass(frozen=True, slots=True, eq=False)
class SetDim:
    """The user fixes the size of the dim the reference ``ref`` stands for."""

    ref: DimRef
    size: Size
    origin: Origin

    def __str__(self) -> str:
        return f"capture '{self.ref.label}' = {self.size!r}  ({self.origin.describe()})"

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SetDim)
            and other.ref is self.ref
            and other.size == self.size
            and other.origin == self.origin
        )

    def __hash__(self) -> int:
        return hash((id(self.ref), self.size, self.origin))


Constraint = (
    DimEq
    | RowEq
    | DimIneq
    | RowIneq
    | TotalElems
    | DimAtLeast
    | DimLinear
    | RowPrefix
    | PaddedAxis
    | Terminal
    | PolicyMark
    | CaptureBind
    | SetDim
)
