"""The constraint solver: Stage 1 (online) and closing.

State
=====
All state lives in dicts mutated only through the session's
:class:`~axisflow.shapes.trail.Trail`, so a rewind window can undo it:

* ``dim_subst``: dim variable id -> ``Size`` (solved) or ``DimVar`` (a
  union-find link towards the representative). Paths are compressed on reads.
* ``dim_bounds``: representative id -> :class:`DimBounds`: the lower bound
  ``glb`` (the size the variable must broadcast to, from the result side), the
  variables related by inequalities (``res``: known ``⊑`` it, ``opnd``: known
  ``⊒`` it), a minimum size and the pending totals mentioning it.
* ``row_subst``: row variable id -> ``Row`` (its value; the value's own
  variable may be solved in turn; reads flatten the chain).
* ``row_bounds``: unsolved row variable id -> :class:`RowBounds`: the lower
  bounds ``glbs`` (rows it must broadcast to) and the related variables.
* ``row_marks``: row variable id -> policy mark bits (absent: none); marks
  move to the variable a row variable is solved to.
* ``row_gen``: row variable id -> how many axes templates put in front of the
  variable it descends from (absent: 0), to stop cyclic constraints from
  minting axes forever.
* ``totals``, ``linears``, ``prefixes``: pending ``TotalElems``,
  ``DimLinear`` and ``RowPrefix`` constraints by id (one id space; the
  variables they wait on list the id).
* ``paddings``: the padded convolution axes, for closing's margins.
* ``terminals``: the ``Terminal`` marks since the last closing.

Stage 1
=======
:meth:`Solver.add` is the one way in: it solves the constraint, whose
consequences go on a work list; solving an item may push more (solving a
variable re-emits every inequality stored on it). The loop is
iterative (no recursion), each stored relation is re-emitted a bounded number
of times (unions move the shorter relation lists), so solving is near-linear
in the number of constraints.

* ``DimEq``/``RowEq``: unification; rows align from the right and the longer
  side's extra axes become the value of the shorter side's row variable
  (occurs check: a row variable cannot contain itself).
* ``DimIneq(res, opnd)``: ``opnd`` is ``res`` or the broadcast unit 1. A size
  on the operand side other than 1 forces the result; a size on the result
  side becomes the operand variable's ``glb``; two different ``glb``s demote
  the operand to 1 (the only dim above both). Result size 1 forces the
  operand to 1. Lower bounds propagate along ``opnd`` relations.
* ``RowIneq(res, opnd)``: the trailing axes pair up as ``DimIneq``s. If the
  operand has more axes and the result is open, the result's variable gets a
  *template* ``[...t, fresh dims]`` whose new variable ``t`` is marked
  ``safe_to_guess``. If the result has axes left over, they (with the result's
  variable) become a lower bound of the operand's variable; if only variables
  are left, the two are related.
* ``TotalElems``, ``DimLinear`` and ``RowPrefix`` are *pending*: each is
  checked when added and again whenever a variable it waits on is solved.
  A total whose rows are closed solves its one unknown dim (the count over
  the known product) or checks the product; a count given as a dim takes
  the product once the rows are known. A linear equation
  (``Σ coeff·dim + const = 0``, affine and concatenated axes) with one
  unknown left solves it, to a positive integer in the basis its parts give
  (or fails naming it); with none left it checks the sizes and the axis's
  basis. A row prefix (``whole = [beg..., ...rest]``, axes before a row
  variable) becomes row and dim equations once ``rest`` or ``whole`` is
  closed, and fails if a closed ``whole`` has fewer axes than ``beg``.
* ``DimAtLeast``: a minimum size on the dim (einsum fixed indices).

Closing
=======
Closing (OCANNL's ``finish_inference``) is its own module,
:mod:`axisflow.shapes.closing`: it decides what Stage 1 left open and solves
each decision here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, NoReturn, TypeVar

from axisflow.shapes.constraints import (
    CaptureBind,
    Constraint,
    DeferredCount,
    DimAtLeast,
    DimEq,
    DimIneq,
    DimLinear,
    LinearKind,
    Mark,
    PaddedAxis,
    PolicyMark,
    RowEq,
    RowIneq,
    RowPrefix,
    SetDim,
    Terminal,
    TotalElems,
)
from axisflow.shapes.errors import ShapeError
from axisflow.shapes.terms import (
    BROADCAST_UNIT,
    DEFAULT_BASIS,
    EMPTY_ROW,
    Dim,
    DimVar,
    Origin,
    Row,
    RowVar,
    Side,
    Size,
    format_row,
)
from axisflow.shapes.trail import Trail

MAX_RANK: Final = 64
"""The most axes a row may get in front of a row variable (NumPy's limit on
the number of dimensions). Templates count the axes they put in front of a
variable; going past this means the inequalities are cyclic and each round of
templates would add axes forever."""

MARK_BITS: Final = {
    Mark.SAFE_TO_GUESS: 1,
    Mark.USED_IN_SPEC_OR_COMPOSE: 2,
    Mark.USED_IN_POINTWISE: 4,
}
_SAFE: Final = 1
_SPEC: Final = 2
_POINTWISE: Final = 4

# Work-list item tags.
_DIM_EQ: Final = 0
_ROW_EQ: Final = 1
_DIM_INEQ: Final = 2
_ROW_INEQ: Final = 3
_TOTAL: Final = 4


VarT = TypeVar("VarT", DimVar, RowVar)
Relations = list[tuple[VarT, Origin]] | tuple[()]


class DimBounds:
    """What Stage 1 knows about an unsolved dim variable."""

    __slots__ = ("at_least", "glb", "glb_origin", "opnd", "res", "totals", "var_id")

    def __init__(self, var_id: int) -> None:
        self.var_id = var_id
        self.glb: Size | None = None
        self.glb_origin: Origin | None = None
        # Relation lists start as a shared empty tuple: most variables never
        # get any, and every list is one more object for the garbage collector.
        self.res: Relations[DimVar] = ()
        self.opnd: Relations[DimVar] = ()
        self.at_least = 1
        self.totals: list[int] | tuple[()] = ()


class RowBounds:
    """What Stage 1 knows about an unsolved row variable."""

    __slots__ = ("glbs", "opnd", "res", "totals", "var_id")

    def __init__(self, var_id: int) -> None:
        self.var_id = var_id
        self.glbs: list[tuple[Row, Origin]] | tuple[()] = ()
        self.res: Relations[RowVar] = ()
        self.opnd: Relations[RowVar] = ()
        self.totals: list[int] | tuple[()] = ()


def marks_of_bits(bits: int) -> frozenset[Mark]:
    """The policy marks a bit set stands for."""
    return frozenset(mark for mark, bit in MARK_BITS.items() if bits & bit)


def _basis(dim: Dim) -> str:
    """The basis of a known dim; an unknown one claims none (the default)."""
    return dim.basis if type(dim) is Size else DEFAULT_BASIS


def _merge_basis(first: str, second: str) -> str | None:
    """OCANNL's ``merge_derived_basis``: a named basis wins over the default;
    two different named bases conflict (``None``)."""
    if first == second or second == DEFAULT_BASIS:
        return first
    if first == DEFAULT_BASIS:
        return second
    return None


_Entry = TypeVar("_Entry", bound=tuple[object, Origin])


def _distinct(entries: Sequence[_Entry]) -> Sequence[_Entry]:
    """A bounds list without repeats of a relation, each kept where it last
    occurs (the copy the work stack solves first).

    Solving a relation again (a variable's bounds re-emitted when it is
    solved) records it again, so a cycle of inequalities that templates one
    axis per round would double its relations every round, 2**MAX_RANK work
    before the cyclic error; without repeats each round re-emits each
    relation once.
    """
    if len(entries) < 2:
        return entries
    seen: set[object] = set()
    kept: list[_Entry] = []
    for entry in reversed(entries):
        if entry[0] not in seen:
            seen.add(entry[0])
            kept.append(entry)
    if len(kept) == len(entries):
        return entries
    kept.reverse()
    return kept


def _sides(origin: Origin) -> tuple[str, str, str]:
    """Texts for the two sides of a constraint and the kind of axes."""
    lhs, rhs = origin.lhs, origin.rhs
    lhs_text = str(lhs) if lhs is not None else "the result"
    rhs_text = str(rhs) if rhs is not None else "the operand"
    kinds = [
        side.kind for side in (lhs, rhs) if side is not None and side.kind is not None
    ]
    if not kinds:
        axes = "sizes"
    elif len(kinds) == 2 and kinds[0] != kinds[1]:
        axes = f"{kinds[0]} and {kinds[1]} axes"
    else:
        axes = f"{kinds[0]} axes"
    return lhs_text, rhs_text, axes


class Solver:
    """Stage-1 solving and closing over one session's variables.

    ``mint`` returns fresh variable ids from the session's counter (templates
    need fresh variables). ``trigger`` is the origin of the constraint being
    added, named in errors found while solving its consequences.
    """

    def __init__(self, trail: Trail, mint: Any) -> None:
        self.trail = trail
        self._mint = mint
        self.dim_subst: dict[int, Dim] = {}
        self.dim_bounds: dict[int, DimBounds] = {}
        self.row_subst: dict[int, Row] = {}
        self.row_bounds: dict[int, RowBounds] = {}
        self.row_marks: dict[int, int] = {}
        self.row_gen: dict[int, int] = {}
        self.totals: dict[int, TotalElems] = {}
        self.linears: dict[int, DimLinear] = {}
        self.prefixes: dict[int, RowPrefix] = {}
        self.paddings: list[PaddedAxis] = []
        self.terminals: list[Terminal] = []
        self.trigger: Origin | None = None
        self._work: list[tuple[Any, ...]] = []

    # ------------------------------------------------------------------ reads

    def find_dim(self, dim: Dim) -> Dim:
        """The representative of a dim: its size, or its root variable."""
        if type(dim) is not DimVar:
            return dim
        subst = self.dim_subst
        link = subst.get(dim.id)
        if link is None or type(link) is Size:
            return dim if link is None else link
        root: Dim = link
        while type(root) is DimVar:
            nxt = subst.get(root.id)
            if nxt is None:
                break
            root = nxt
        if root is not link:
            # Path compression, on the trail like every other write.
            set_item = self.trail.set_item
            node: Dim = dim
            while type(node) is DimVar and node != root:
                nxt = subst.get(node.id)
                if nxt is None:
                    break
                if nxt is not root:
                    set_item(subst, node.id, root)
                node = nxt
        return root

    def _row_value(self, var_id: int, value: Row) -> Row:
        """Flatten the chain of solved row variables starting at ``var_id``."""
        subst = self.row_subst
        tail = value.var
        if tail is None or tail.id not in subst:
            return value
        chain: list[tuple[int, Row]] = [(var_id, value)]
        while tail is not None:
            nxt = subst.get(tail.id)
            if nxt is None:
                break
            chain.append((tail.id, nxt))
            tail = nxt.var
        dims: tuple[Dim, ...] = ()
        set_item = self.trail.set_item
        flat = value
        for vid, step in reversed(chain):
            dims = dims + step.dims
            flat = Row(dims, tail)
            set_item(subst, vid, flat)
        return flat

    def norm_row(self, row: Row) -> Row:
        """The row with solved variables substituted and dims at representatives."""
        dims = row.dims
        var = row.var
        if var is not None:
            row_subst = self.row_subst
            value = row_subst.get(var.id)
            if value is not None:
                tail = value.var
                if tail is not None and tail.id in row_subst:
                    value = self._row_value(var.id, value)
                if dims:
                    dims = value.dims + dims
                else:
                    row = value  # returned as it is unless a dim is solved
                    dims = value.dims
                var = value.var
        if dims:
            subst = self.dim_subst
            for d in dims:
                if type(d) is DimVar and d.id in subst:
                    find = self.find_dim
                    return Row(tuple([find(d) for d in dims]), var)
        return row if var is row.var else Row(dims, var)

    def marks(self, var: RowVar) -> frozenset[Mark]:
        """The policy marks of a row variable."""
        return marks_of_bits(self.row_marks.get(var.id, 0))

    def safe_to_guess(self, var: RowVar) -> bool:
        """Whether closing may give the variable no axes even in a parameter."""
        bits = self.row_marks.get(var.id, 0)
        return bool(bits & _SAFE) or (bool(bits & _POINTWISE) and not bits & _SPEC)

    # --------------------------------------------------------------- queries
    # What shape schemes read of the state (axisflow.shapes.scheme), so that
    # they depend on these answers rather than on the tables behind them.

    def dim_link(self, var_id: int) -> Dim | None:
        """The stored entry of a dim variable: a size, a link, or ``None`` (open root)."""
        return self.dim_subst.get(var_id)

    def row_link(self, var_id: int) -> Row | None:
        """The stored value of a row variable (``None``: unsolved)."""
        return self.row_subst.get(var_id)

    def is_row_solved(self, var_id: int) -> bool:
        """Whether the row variable has a value."""
        return var_id in self.row_subst

    def links_before(self, trail_start: int) -> tuple[dict[int, Any], dict[int, Any]]:
        """The dim and row entries written since ``trail_start``, as they were then.

        Two maps from variable id to its old entry (``trail.MISSING``: it had
        none); a variable absent from them still has its entry of then.
        """
        trail = self.trail
        return (
            trail.values_before(trail_start, self.dim_subst),
            trail.values_before(trail_start, self.row_subst),
        )

    def dim_lower_bound(self, var_id: int) -> tuple[Size, Origin] | None:
        """An open dim variable's lower bound (the size it broadcasts to) and its origin."""
        bounds = self.dim_bounds.get(var_id)
        if bounds is None or bounds.glb is None:
            return None
        assert bounds.glb_origin is not None
        return bounds.glb, bounds.glb_origin

    def dim_results(self, var_id: int) -> Sequence[tuple[DimVar, Origin]]:
        """The dim variables known ``⊑`` an open one (its result-side relations)."""
        bounds = self.dim_bounds.get(var_id)
        return () if bounds is None else bounds.res

    def row_lower_bounds(self, var_id: int) -> Sequence[tuple[Row, Origin]]:
        """The rows an open row variable must broadcast to, with their origins."""
        bounds = self.row_bounds.get(var_id)
        return () if bounds is None else bounds.glbs

    def row_results(self, var_id: int) -> Sequence[tuple[RowVar, Origin]]:
        """The row variables known ``⊑`` an open one (its result-side relations)."""
        bounds = self.row_bounds.get(var_id)
        return () if bounds is None else bounds.res

    def template_depth(self, var_id: int) -> int:
        """How many axes templates put in front of the variable's ancestors."""
        return self.row_gen.get(var_id, 0)

    def raise_template_depth(self, var_id: int, depth: int) -> None:
        """Make the variable's template depth at least ``depth`` (on the trail)."""
        if self.row_gen.get(var_id, 0) < depth:
            self.trail.set_item(self.row_gen, var_id, depth)

    def mark_bits(self, var_id: int) -> int:
        """The policy mark bits of a row variable (:func:`marks_of_bits` reads them)."""
        return self.row_marks.get(var_id, 0)

    def terminal_count(self) -> int:
        """How many terminal rows wait for the next closing."""
        return len(self.terminals)

    def terminals_since(self, start: int) -> Sequence[Terminal]:
        """The terminal rows registered after the first ``start``."""
        return self.terminals[start:]

    def pending_since(
        self, trail_start: int
    ) -> list[TotalElems | DimLinear | RowPrefix]:
        """The pending equations registered since ``trail_start`` and still pending.

        Totals, linear dim equations and row prefixes, in the order of their
        ids (the order they were added); costs the trail entries since then.
        """
        return [self.pending(i) for i in self.pending_ids_since(trail_start)]

    def pending(self, pending_id: int) -> TotalElems | DimLinear | RowPrefix:
        """The pending equation with this id (one of :meth:`pending_ids_since`)."""
        for table in (self.totals, self.linears, self.prefixes):
            found = table.get(pending_id)
            if found is not None:
                return found
        raise KeyError(pending_id)

    def pending_ids_since(self, trail_start: int) -> list[int]:
        """The ids of :meth:`pending_since`'s equations, ascending (ids come
        from the variable counter, so they tell what was added before what)."""
        trail = self.trail
        return sorted(
            pending_id
            for table in (self.totals, self.linears, self.prefixes)
            for pending_id in trail.values_before(trail_start, table)
            if pending_id in table
        )

    def touched_since(self, trail_start: int) -> tuple[set[int], set[int]]:
        """Ids of dim and row variables whose entries were written since ``trail_start``.

        Costs the trail entries since then, not the size of the state.
        """
        dims: set[int] = set()
        rows: set[int] = set()
        dim_tables = (self.dim_subst, self.dim_bounds)
        row_tables = (self.row_subst, self.row_bounds, self.row_marks, self.row_gen)
        for _tag, container, key, _old in self.trail.entries[trail_start:]:
            if any(container is table for table in dim_tables):
                dims.add(key)
            elif any(container is table for table in row_tables):
                rows.add(key)
            else:
                # Attribute writes name the bounds object; list writes its owner.
                for owner in (container, key):
                    if isinstance(owner, DimBounds):
                        dims.add(owner.var_id)
                    elif isinstance(owner, RowBounds):
                        rows.add(owner.var_id)
        return dims, rows

    # ----------------------------------------------------------- variables

    def fresh_dim(self) -> DimVar:
        """A new dim variable (closing's joins mint them)."""
        return DimVar(self._mint())

    def fresh_row_above(self, below: Iterable[RowVar]) -> RowVar:
        """A new row variable standing above the variables ``below``: it has
        the union of their policy marks and their deepest template count."""
        var = RowVar(self._mint())
        bits = 0
        gen = 0
        for other in below:
            bits |= self.row_marks.get(other.id, 0)
            gen = max(gen, self.row_gen.get(other.id, 0))
        if bits:
            self.trail.set_item(self.row_marks, var.id, bits)
        if gen:
            self.trail.set_item(self.row_gen, var.id, gen)
        return var

    # --------------------------------------------------------------- entries

    def push_dim_eq(self, a: Dim, b: Dim, origin: Origin) -> None:
        """Queue ``a = b`` (closing queues its decisions' consequences so)."""
        self._work.append((_DIM_EQ, a, b, origin))

    def push_row_eq(self, a: Row, b: Row, origin: Origin) -> None:
        """Queue ``a = b`` on rows."""
        self._work.append((_ROW_EQ, a, b, origin))

    def add(self, constraint: Constraint) -> None:
        """Solve a constraint at Stage 1, and everything solving it queues.

        The one way a constraint enters the solver (the session's ``add`` and
        operations come through here); ``trigger`` should name its origin.
        A contradiction raises ``ShapeError`` with the work list emptied.
        """
        try:
            _HANDLERS[type(constraint)](self, constraint)
            if self._work:
                self.run()
        except BaseException:
            self._work.clear()
            raise

    def _add_row_ineq(self, c: RowIneq) -> None:
        self._row_ineq(c.res, c.opnd, c.origin)

    def _add_row_eq(self, c: RowEq) -> None:
        self._row_eq(c.a, c.b, c.origin)

    def _add_dim_ineq(self, c: DimIneq) -> None:
        self._dim_ineq(c.res, c.opnd, c.origin)

    def _add_dim_eq(self, c: DimEq) -> None:
        self._dim_eq(c.a, c.b, c.origin)

    def _add_policy_mark(self, c: PolicyMark) -> None:
        self.add_mark(c.row, c.mark)

    def _add_total_elems(self, c: TotalElems) -> None:
        self.add_total(self._mint(), c)

    def _add_dim_at_least(self, c: DimAtLeast) -> None:
        self.add_at_least(c.dim, c.n, c.origin)

    def _add_dim_linear(self, c: DimLinear) -> None:
        self.add_linear(self._mint(), c)

    def _add_row_prefix(self, c: RowPrefix) -> None:
        self.add_prefix(self._mint(), c)

    # ------------------------------------------------------ capture references

    def _bind(self, c: CaptureBind) -> None:
        ref = c.ref
        var = c.var
        what = "label" if type(var) is DimVar else "row variable"
        origin = c.origin.with_sides(
            Side(f"{what} '{ref.label}'"), Side(f"capture reference '{ref.label}'")
        )
        if ref.is_bound:
            # One reference stands for one size: equate the two variables.
            bound = ref.var if ref.var is not None else ref.row
            assert bound is not None
            self._equate_vars(var, bound, origin)
            return
        self.trail.set_attr(ref, "var" if type(var) is DimVar else "row", var)
        if ref.size is not None:
            self._equate_vars(var, ref.size, origin)

    def _set(self, c: SetDim) -> None:
        ref = c.ref
        if ref.is_bound:
            origin = c.origin.with_sides(
                Side(f"capture reference '{ref.label}'"),
                Side(f"set_dim({ref.label!r})"),
            )
            bound = ref.var if ref.var is not None else ref.row
            assert bound is not None
            self._equate_vars(bound, c.size, origin)
        elif ref.size is None:
            self.trail.set_attr(ref, "size", c.size)
        elif ref.size != c.size:
            self.fail(
                f"the capture reference '{ref.label}' already stands for size "
                f"{ref.size!r}, not {c.size!r}",
                c.origin,
            )

    def _equate_vars(
        self, var: DimVar | RowVar, other: DimVar | RowVar | Size, origin: Origin
    ) -> None:
        """Queue ``var = other`` for capture variables: dims or rows are equal,
        a row holds as many elements as a dim or size counts (OCANNL's
        ``set_equal``, ``Total_elems``)."""
        if type(var) is RowVar and type(other) is RowVar:
            self.push_row_eq(Row((), var), Row((), other), origin)
        elif type(var) is RowVar:
            assert type(other) is not RowVar
            count = other.n if type(other) is Size else other
            self.add_total(self._mint(), TotalElems((Row((), var),), count, origin))
        elif type(other) is RowVar:
            self.add_total(self._mint(), TotalElems((Row((), other),), var, origin))
        else:
            assert type(other) is not RowVar
            self.push_dim_eq(var, other, origin)

    def add_total(self, total_id: int, total: TotalElems) -> None:
        """Register a pending ``TotalElems`` and queue its first check."""
        self.trail.set_item(self.totals, total_id, total)
        self._work.append((_TOTAL, total_id))

    def add_linear(self, linear_id: int, linear: DimLinear) -> None:
        """Register a pending ``DimLinear`` and queue its first check."""
        self.trail.set_item(self.linears, linear_id, linear)
        self._work.append((_TOTAL, linear_id))

    def add_prefix(self, prefix_id: int, prefix: RowPrefix) -> None:
        """Register a pending ``RowPrefix`` and queue its first check."""
        self.trail.set_item(self.prefixes, prefix_id, prefix)
        self._work.append((_TOTAL, prefix_id))

    def push_total_check(self, total_id: int) -> None:
        """Queue a check of a pending total (closing re-checks them)."""
        self._work.append((_TOTAL, total_id))

    def add_at_least(self, dim: Dim, n: int, origin: Origin) -> None:
        """``dim >= n``."""
        found = self.find_dim(dim)
        if type(found) is Size:
            if found.n < n:
                self.fail(
                    f"an axis indexed at position {n - 1} has size {found.n}", origin
                )
            return
        assert type(found) is DimVar
        bounds = self._dim_bounds_for(found)
        if bounds.at_least < n:
            self.trail.set_attr(bounds, "at_least", n)

    def add_mark(self, row: Row, mark: Mark) -> None:
        """Set a policy mark on the row's variable, if it is still open."""
        var = self.norm_row(row).var
        if var is None:
            return
        bits = self.row_marks.get(var.id, 0)
        bit = MARK_BITS[mark]
        if not bits & bit:
            self.trail.set_item(self.row_marks, var.id, bits | bit)

    def add_padding(self, padding: PaddedAxis) -> None:
        """Remember a padded convolution axis for the next closing's margins."""
        self.trail.append(self.paddings, padding)

    def add_terminal(self, terminal: Terminal) -> None:
        """Remember a leaf row for the next closing."""
        self.trail.append(self.terminals, terminal)

    def run(self) -> None:
        """Solve every queued item, and what solving them queues."""
        work = self._work
        try:
            while work:
                item = work.pop()
                tag = item[0]
                if tag == _ROW_INEQ:
                    self._row_ineq(item[1], item[2], item[3])
                elif tag == _DIM_INEQ:
                    self._dim_ineq(item[1], item[2], item[3])
                elif tag == _ROW_EQ:
                    self._row_eq(item[1], item[2], item[3])
                elif tag == _DIM_EQ:
                    self._dim_eq(item[1], item[2], item[3])
                else:
                    self._check_total(item[1])
        except BaseException:
            work.clear()
            raise

    # ---------------------------------------------------------------- errors

    def fail(self, message: str, origin: Origin, *, lead: bool = True) -> NoReturn:
        """Raise a ``ShapeError`` about ``origin`` (and the constraint being added).

        The message starts with the origin (``lead``) or ends with it.
        """
        described = origin.describe()
        text = f"{described}: {message}" if lead else f"{message} ({described})"
        origins: tuple[Origin, ...] = (origin,)
        trigger = self.trigger
        if trigger is not None and trigger.describe() != described:
            text += f" (found while solving {trigger.describe()})"
            origins = (origin, trigger)
        raise ShapeError(text, origins)

    def _push(self, owner: DimBounds | RowBounds, field: str, item: object) -> None:
        """Append to one of a bounds object's lazily created lists."""
        items = getattr(owner, field)
        if isinstance(items, list) and items:
            self.trail.append(items, item, owner)
        else:
            self.trail.set_attr(owner, field, [item])

    def _extend(
        self, owner: DimBounds | RowBounds, field: str, more: Sequence[object]
    ) -> None:
        """Extend one of a bounds object's lists (never sharing the list ``more``)."""
        items = getattr(owner, field)
        if isinstance(items, list) and items:
            self.trail.extend(items, more, owner)
        else:
            self.trail.set_attr(owner, field, list(more))

    # ------------------------------------------------------------------ dims

    def _dim_bounds_for(self, var: DimVar) -> DimBounds:
        bounds = self.dim_bounds.get(var.id)
        if bounds is None:
            bounds = DimBounds(var.id)
            self.trail.set_item(self.dim_bounds, var.id, bounds)
        return bounds

    def _dim_eq(self, a: Dim, b: Dim, origin: Origin) -> None:
        a = self.find_dim(a)
        b = self.find_dim(b)
        if a == b:
            return
        if type(a) is Size:
            if type(b) is Size:
                lhs, rhs, axes = _sides(origin)
                reason = " (different bases)" if a.n == b.n else ""
                self.fail(
                    f"{axes} disagree: {lhs} has size {a!r} but {rhs} has size "
                    f"{b!r}{reason}",
                    origin,
                )
            a, b = b, a
        assert type(a) is DimVar
        if type(b) is Size:
            self.assign_dim(a, b, origin)
        else:
            assert type(b) is DimVar
            self._union_dims(a, b)

    def assign_dim(self, var: DimVar, size: Size, origin: Origin) -> None:
        trail = self.trail
        bounds = self.dim_bounds.get(var.id)
        if bounds is not None and bounds.at_least > size.n:
            self.fail(
                f"an axis indexed at position {bounds.at_least - 1} would have size "
                f"{size.n}",
                origin,
            )
        trail.set_item(self.dim_subst, var.id, size)
        if bounds is None:
            return
        trail.del_item(self.dim_bounds, var.id)
        work = self._work
        for res, res_origin in bounds.res:
            work.append((_DIM_INEQ, res, size, res_origin))
        for opnd, opnd_origin in bounds.opnd:
            work.append((_DIM_INEQ, size, opnd, opnd_origin))
        if bounds.glb is not None:
            assert bounds.glb_origin is not None
            work.append((_DIM_INEQ, bounds.glb, size, bounds.glb_origin))
        for total_id in bounds.totals:
            work.append((_TOTAL, total_id))

    def _union_dims(self, a: DimVar, b: DimVar) -> None:
        trail = self.trail
        dim_bounds = self.dim_bounds
        bounds_a = dim_bounds.get(a.id)
        bounds_b = dim_bounds.get(b.id)
        if bounds_a is None:
            trail.set_item(self.dim_subst, a.id, b)
            return
        if bounds_b is None:
            trail.set_item(self.dim_subst, b.id, a)
            return
        # Link the variable with fewer relations under the other one.
        if len(bounds_a.res) + len(bounds_a.opnd) > len(bounds_b.res) + len(
            bounds_b.opnd
        ):
            a, b = b, a
            bounds_a, bounds_b = bounds_b, bounds_a
        trail.set_item(self.dim_subst, a.id, b)
        trail.del_item(dim_bounds, a.id)
        if bounds_a.res:
            self._extend(bounds_b, "res", bounds_a.res)
        if bounds_a.opnd:
            self._extend(bounds_b, "opnd", bounds_a.opnd)
            if bounds_b.glb is not None:
                assert bounds_b.glb_origin is not None
                for opnd, _ in bounds_a.opnd:
                    self._work.append(
                        (_DIM_INEQ, bounds_b.glb, opnd, bounds_b.glb_origin)
                    )
        if bounds_a.totals:
            self._extend(bounds_b, "totals", bounds_a.totals)
            # A pending equation waiting on ``a`` may now have one unknown
            # fewer (``a`` and ``b`` were both in it): check it again, so that
            # what Stage 1 decides does not depend on the order of the
            # constraints (a shape scheme adds them in another order).
            self._work.extend((_TOTAL, pending_id) for pending_id in bounds_a.totals)
        if bounds_a.at_least > bounds_b.at_least:
            trail.set_attr(bounds_b, "at_least", bounds_a.at_least)
        if bounds_a.glb is not None:
            # Merge the lower bounds by re-stating a's bound on the union.
            self._work.append((_DIM_INEQ, bounds_a.glb, b, bounds_a.glb_origin))

    def _dim_ineq(self, res: Dim, opnd: Dim, origin: Origin) -> None:
        res = self.find_dim(res)
        opnd = self.find_dim(opnd)
        if res == opnd:
            return
        if type(opnd) is Size:
            if opnd.n == 1:
                return
            if type(res) is Size:
                lhs, rhs, axes = _sides(origin)
                reason = (
                    " (different bases)"
                    if res.n == opnd.n
                    else "; only size 1 broadcasts"
                )
                self.fail(
                    f"{axes} disagree: {rhs} has size {opnd!r}, which does not "
                    f"broadcast to size {res!r} of {lhs}{reason}",
                    origin,
                )
            assert type(res) is DimVar
            self.assign_dim(res, opnd, origin)
            return
        assert type(opnd) is DimVar
        if type(res) is Size:
            if res.n == 1:
                # Only 1 itself is above 1 in the broadcast order.
                self.assign_dim(opnd, BROADCAST_UNIT, origin)
                return
            bounds = self._dim_bounds_for(opnd)
            glb = bounds.glb
            if glb is None:
                self.trail.set_attr(bounds, "glb", res)
                self.trail.set_attr(bounds, "glb_origin", origin)
                work = self._work
                for above, above_origin in bounds.opnd:
                    work.append((_DIM_INEQ, res, above, above_origin))
            elif glb != res:
                # Two different lower bounds: only the broadcast unit is above both.
                self.assign_dim(opnd, BROADCAST_UNIT, origin)
            return
        assert type(res) is DimVar
        res_bounds = self._dim_bounds_for(res)
        opnd_bounds = self._dim_bounds_for(opnd)
        self._push(res_bounds, "opnd", (opnd, origin))
        self._push(opnd_bounds, "res", (res, origin))
        if res_bounds.glb is not None:
            self._work.append((_DIM_INEQ, res_bounds.glb, opnd, origin))

    # ------------------------------------------------------------------ rows

    def _row_bounds_for(self, var: RowVar) -> RowBounds:
        bounds = self.row_bounds.get(var.id)
        if bounds is None:
            bounds = RowBounds(var.id)
            self.trail.set_item(self.row_bounds, var.id, bounds)
        return bounds

    def _row_eq(self, a: Row, b: Row, origin: Origin) -> None:
        a = self.norm_row(a)
        b = self.norm_row(b)
        len_a, len_b = len(a.dims), len(b.dims)
        common = min(len_a, len_b)
        work = self._work
        for da, db in zip(
            a.dims[len_a - common :], b.dims[len_b - common :], strict=True
        ):
            if da != db:
                work.append((_DIM_EQ, da, db, origin))
        if len_a == len_b:
            if a.var == b.var:
                return
            if a.var is None:
                assert b.var is not None
                self.assign_row(b.var, EMPTY_ROW, origin, (a, b))
            elif b.var is None:
                self.assign_row(a.var, EMPTY_ROW, origin, (a, b))
            else:
                self._union_rows(a.var, b.var, origin, (a, b))
            return
        if len_a < len_b:
            a, b = b, a
            len_a, len_b = len_b, len_a
            origin = origin.with_sides(origin.rhs, origin.lhs)
        # ``a`` has more axes: ``b``'s variable takes a's extra leading axes.
        if b.var is None:
            lhs, rhs, axes = _sides(origin)
            self.fail(
                f"{axes} disagree: {lhs} {format_row(a)} and {rhs} {format_row(b)} "
                f"have different numbers of axes",
                origin,
            )
        assert b.var is not None
        self.assign_row(b.var, Row(a.dims[: len_a - len_b], a.var), origin, (a, b))

    def _union_rows(
        self, a: RowVar, b: RowVar, origin: Origin, rows: tuple[Row, Row]
    ) -> None:
        bounds_a = self.row_bounds.get(a.id)
        bounds_b = self.row_bounds.get(b.id)
        size_a = (
            0
            if bounds_a is None
            else len(bounds_a.res) + len(bounds_a.opnd) + len(bounds_a.glbs)
        )
        size_b = (
            0
            if bounds_b is None
            else len(bounds_b.res) + len(bounds_b.opnd) + len(bounds_b.glbs)
        )
        if size_a > size_b:
            a, b = b, a
        # Solving the variable with fewer relations re-emits fewer of them.
        self.assign_row(a, Row((), b), origin, rows)

    def assign_row(
        self, var: RowVar, value: Row, origin: Origin, rows: tuple[Row, Row]
    ) -> None:
        """Solve ``var := value`` (``value`` normalized) and re-emit its bounds."""
        if value.var == var:
            if not value.dims:
                return
            self._fail_infinite(origin, rows)
        trail = self.trail
        tail = value.var
        if tail is not None:
            marks = self.row_marks.get(var.id, 0)
            if marks:
                tail_marks = self.row_marks.get(tail.id, 0)
                if marks & ~tail_marks:
                    trail.set_item(self.row_marks, tail.id, tail_marks | marks)
            gen = self.row_gen.get(var.id, 0)
            if gen:
                gen += len(value.dims)
                if gen > MAX_RANK:
                    self._fail_infinite(origin, rows, cyclic=True)
                if gen > self.row_gen.get(tail.id, 0):
                    trail.set_item(self.row_gen, tail.id, gen)
        bounds = self.row_bounds.get(var.id)
        trail.set_item(self.row_subst, var.id, value)
        if bounds is None:
            return
        trail.del_item(self.row_bounds, var.id)
        work = self._work
        if not value.dims and value.var is None:
            # Every row broadcasts from the empty row: ``res ⊑ []`` and
            # ``glb ⊑ []`` hold whatever ``res`` and ``glb`` are, so only the
            # operands (which must now be empty as well) are re-emitted. Closing
            # empties most variables, so this keeps it linear in their operands.
            for opnd, opnd_origin in _distinct(bounds.opnd):
                work.append((_ROW_INEQ, value, Row((), opnd), opnd_origin))
            for total_id in bounds.totals:
                work.append((_TOTAL, total_id))
            return
        for res, res_origin in _distinct(bounds.res):
            work.append((_ROW_INEQ, Row((), res), value, res_origin))
        for opnd, opnd_origin in _distinct(bounds.opnd):
            work.append((_ROW_INEQ, value, Row((), opnd), opnd_origin))
        for glb, glb_origin in _distinct(bounds.glbs):
            work.append((_ROW_INEQ, glb, value, glb_origin))
        for total_id in bounds.totals:
            work.append((_TOTAL, total_id))

    def _fail_infinite(
        self, origin: Origin, rows: tuple[Row, Row], *, cyclic: bool = False
    ) -> NoReturn:
        lhs, rhs, axes = _sides(origin)
        why = (
            f"more than {MAX_RANK} axes in one row: the inequalities are cyclic"
            if cyclic
            else "a row variable would contain itself"
        )
        self.fail(
            f"{axes} cannot agree: {lhs} {format_row(rows[0])} and {rhs} "
            f"{format_row(rows[1])} would need infinitely many axes ({why})",
            origin,
        )

    def _row_ineq(self, res: Row, opnd: Row, origin: Origin) -> None:
        res = self.norm_row(res)
        opnd = self.norm_row(opnd)
        res_dims, opnd_dims = res.dims, opnd.dims
        len_res, len_opnd = len(res_dims), len(opnd_dims)
        work = self._work
        if res.var is not None and res.var == opnd.var:
            if len_res != len_opnd:
                self._fail_infinite(origin, (res, opnd))
            for r, o in zip(res_dims, opnd_dims, strict=True):
                if r != o:
                    work.append((_DIM_INEQ, r, o, origin))
            return
        if len_res < len_opnd:
            if res.var is None:
                lhs, rhs, axes = _sides(origin)
                self.fail(
                    f"{axes} disagree: {rhs} {format_row(opnd)} has more axes than "
                    f"{lhs} {format_row(res)}, which is closed (an operand broadcasts "
                    f"only to a result with at least as many axes)",
                    origin,
                )
            assert res.var is not None
            self._template(res.var, len_opnd - len_res, origin, (res, opnd))
            work.append((_ROW_INEQ, res, opnd, origin))
            return
        offset = len_res - len_opnd
        for i, o in enumerate(opnd_dims):
            r = res_dims[offset + i]
            if r != o:
                work.append((_DIM_INEQ, r, o, origin))
        opnd_var = opnd.var
        if opnd_var is None:
            return
        if offset == 0:
            if res.var is None:
                # Nothing is left on the result side: the operand has no more axes.
                self.assign_row(opnd_var, EMPTY_ROW, origin, (res, opnd))
            else:
                res_bounds = self._row_bounds_for(res.var)
                opnd_bounds = self._row_bounds_for(opnd_var)
                self._push(res_bounds, "opnd", (opnd_var, origin))
                self._push(opnd_bounds, "res", (res.var, origin))
        else:
            bounds = self._row_bounds_for(opnd_var)
            self._push(bounds, "glbs", (Row(res_dims[:offset], res.var), origin))

    def _template(
        self, var: RowVar, missing: int, origin: Origin, rows: tuple[Row, Row]
    ) -> None:
        """Give ``var`` ``missing`` fresh leading axes and a fresh safe-to-guess tail."""
        mint = self._mint
        fresh_dims = tuple([DimVar(mint()) for _ in range(missing)])
        tail = RowVar(mint())
        self.trail.set_item(self.row_marks, tail.id, _SAFE)
        gen = self.row_gen.get(var.id, 0) + missing
        if gen > MAX_RANK:
            self._fail_infinite(origin, rows, cyclic=True)
        self.trail.set_item(self.row_gen, tail.id, gen)
        self.assign_row(var, Row(fresh_dims, tail), origin, rows)

    # ---------------------------------------------------------------- totals

    def _check_total(self, total_id: int) -> None:
        # Totals, linear dim equations and row prefixes share one id space and
        # the re-check lists of the variables they wait on.
        total = self.totals.get(total_id)
        if total is None:
            if total_id in self.linears:
                self._check_linear(total_id)
            elif total_id in self.prefixes:
                self._check_prefix(total_id)
            return
        count = total.count
        if isinstance(count, DeferredCount):
            return
        product = 1
        unknown: list[DimVar] = []
        open_vars: list[RowVar] = []
        for row in total.rows:
            row = self.norm_row(row)
            if row.var is not None:
                open_vars.append(row.var)
            for d in row.dims:
                if type(d) is Size:
                    product *= d.n
                else:
                    assert type(d) is DimVar
                    unknown.append(d)
        if not isinstance(count, int):
            # A dim counts the elements: once it is known it is a number; until
            # then the rows, once known, give it its size.
            found = self.find_dim(count)
            if type(found) is Size:
                count = found.n
            else:
                assert type(found) is DimVar
                if not open_vars and not unknown:
                    self.trail.del_item(self.totals, total_id)
                    self.assign_dim(found, Size(product), total.origin)
                    return
                self._wait_on(total_id, (*unknown, found), open_vars)
                return
        if count % product:
            self._fail_total(total, count, product)
        if not open_vars:
            if not unknown:
                if product != count:
                    self._fail_total(total, count, product)
                self.trail.del_item(self.totals, total_id)
                return
            if len(unknown) == 1:
                self.trail.del_item(self.totals, total_id)
                self.assign_dim(unknown[0], Size(count // product), total.origin)
                return
        # Wait for more information: check again when any variable is solved.
        self._wait_on(total_id, unknown, open_vars)

    def _wait_on(
        self, pending_id: int, dims: Iterable[DimVar], rows: Iterable[RowVar]
    ) -> None:
        """Check the pending item again when any of these variables is solved."""
        for dim in dims:
            self._push(self._dim_bounds_for(dim), "totals", pending_id)
        for var in rows:
            self._push(self._row_bounds_for(var), "totals", pending_id)

    def _check_linear(self, linear_id: int) -> None:
        linear = self.linears[linear_id]
        known = linear.const
        unknown: dict[DimVar, int] = {}
        names: dict[DimVar, str] = {}
        values: list[Dim] = []
        for (coeff, dim), name in zip(linear.terms, linear.names, strict=True):
            dim = self.find_dim(dim)
            values.append(dim)
            if type(dim) is Size:
                known += coeff * dim.n
            else:
                assert type(dim) is DimVar
                unknown[dim] = unknown.get(dim, 0) + coeff
                names.setdefault(dim, name)
        unknown = {d: c for d, c in unknown.items() if c}
        if len(unknown) > 1:
            self._check_linear_bases(linear, values)
            self._wait_on(linear_id, unknown, ())
            return
        self.trail.del_item(self.linears, linear_id)
        if not unknown:
            if known:
                self._fail_linear(linear, "the sizes do not satisfy it")
            basis = self._linear_basis(linear, values, len(values) - 1)
            axis = values[-1]
            if type(axis) is Size and axis != Size(axis.n, basis):
                self._fail_linear(
                    linear,
                    f"its size has basis {axis.basis} but its parts give {basis} "
                    f"(different bases)",
                )
            return
        ((dim, coeff),) = unknown.items()
        if known % coeff or -known // coeff < 1:
            self._fail_linear(
                linear,
                f"no positive size of '{names[dim]}' satisfies it "
                f"({names[dim]} = {-known}/{coeff})",
            )
        position = max(i for i, value in enumerate(values) if value == dim)
        basis = self._linear_basis(linear, values, position)
        self.assign_dim(dim, Size(-known // coeff, basis), linear.origin)

    def _check_linear_bases(self, linear: DimLinear, values: Sequence[Dim]) -> None:
        """Refuse what no solution can fix: named bases that disagree among a
        concatenation's parts, or between a convolution's ``over`` and kernel."""
        if linear.kind == LinearKind.CONCAT:
            self._concat_basis(linear, values[:-1])
        elif linear.kind == LinearKind.CONVOLUTION:
            self._merge_bases(linear, values[0], values[1])

    def _linear_basis(
        self, linear: DimLinear, values: Sequence[Dim], position: int
    ) -> str:
        """The basis of the dim at ``position`` of ``linear`` solved from the
        others (OCANNL's ``row.ml``: ``s_dim_one``, ``unify_dim``).

        A strided axis and its ``over`` share their basis; an unpadded
        convolution's axis and ``over`` take that of the other and of the
        kernel (which must agree, reserved bases being no claim), and a kernel
        solved from them the default; a concatenation's axis takes the named
        basis of its parts (which must agree), a part that of the other parts
        and the axis. ``SUM`` equations give the default basis.
        """
        self._check_linear_bases(linear, values)
        kind = linear.kind
        axis = len(values) - 1
        if kind == LinearKind.STRIDE:
            return _basis(values[axis if position == 0 else 0])
        if kind == LinearKind.CONVOLUTION:
            if position == 1:
                return DEFAULT_BASIS  # OCANNL infers a kernel as a default dim
            return self._merge_bases(
                linear, values[axis if position == 0 else 0], values[1]
            )
        if kind == LinearKind.CONCAT:
            parts = [v for i, v in enumerate(values[:-1]) if i != position]
            basis = self._concat_basis(linear, parts)
            if position == axis:
                return basis
            return self._concat_merge(linear, basis, _basis(values[axis]))
        return DEFAULT_BASIS

    def _merge_bases(self, linear: DimLinear, over: Dim, kernel: Dim) -> str:
        """OCANNL's ``merge_derived_basis`` of a convolution's two sides."""
        merged = _merge_basis(_basis(over), _basis(kernel))
        if merged is None:
            self._fail_linear(
                linear,
                f"convolution: conflicting dimension bases between stride and "
                f"kernel ({_basis(over)} and {_basis(kernel)})",
            )
        return merged

    def _concat_basis(self, linear: DimLinear, parts: Sequence[Dim]) -> str:
        """The one named basis of a concatenation's known parts, or the default."""
        named = sorted({b for b in map(_basis, parts) if b != DEFAULT_BASIS})
        if len(named) > 1:
            self._fail_linear(
                linear,
                f"concat: conflicting dimension bases ({' and '.join(named)})",
            )
        return named[0] if named else DEFAULT_BASIS

    def _concat_merge(self, linear: DimLinear, parts: str, axis: str) -> str:
        merged = _merge_basis(parts, axis)
        if merged is None:
            self._fail_linear(
                linear, f"concat: conflicting dimension bases ({parts} and {axis})"
            )
        return merged

    def _fail_linear(self, linear: DimLinear, why: str) -> NoReturn:
        sizes = ", ".join(
            f"{name} = {self.find_dim(dim)!r}"
            for (_, dim), name in zip(linear.terms, linear.names, strict=True)
            if type(self.find_dim(dim)) is Size
        )
        self.fail(
            f"the axis '{linear.text}' cannot hold with {sizes}: {why}", linear.origin
        )

    def _check_prefix(self, prefix_id: int) -> None:
        prefix = self.prefixes[prefix_id]
        whole = self.norm_row(prefix.whole)
        rest = self.norm_row(prefix.rest)
        beg = prefix.beg
        work = self._work
        origin = prefix.origin
        if rest.var is None:
            self.trail.del_item(self.prefixes, prefix_id)
            work.append((_ROW_EQ, whole, Row(beg + rest.dims), origin))
            return
        if whole.var is None:
            if len(whole.dims) < len(beg) + len(rest.dims):
                lhs, rhs, axes = _sides(origin)
                self.fail(
                    f"{axes} disagree: {lhs} {format_row(whole)} has fewer axes than the "
                    f"{len(beg)} written before the row variable of {rhs}",
                    origin,
                )
            self.trail.del_item(self.prefixes, prefix_id)
            for written, actual in zip(beg, whole.dims, strict=False):
                work.append((_DIM_EQ, written, actual, origin))
            work.append((_ROW_EQ, Row(whole.dims[len(beg) :]), rest, origin))
            return
        self._wait_on(prefix_id, (), (whole.var, rest.var))

    def _fail_total(self, total: TotalElems, count: int, product: int) -> NoReturn:
        rows = ", ".join(format_row(self.norm_row(r)) for r in total.rows)
        self.fail(
            f"the axes {rows} cannot hold {count} elements (their known sizes "
            f"multiply to {product})",
            total.origin,
        )

    def reset(self) -> None:
        """Forget every variable (after closing), on the trail."""
        trail = self.trail
        for name in (
            "dim_subst",
            "dim_bounds",
            "row_subst",
            "row_bounds",
            "row_marks",
            "row_gen",
            "totals",
            "linears",
            "prefixes",
        ):
            trail.set_attr(self, name, {})
        trail.set_attr(self, "terminals", [])
        trail.set_attr(self, "paddings", [])


_HANDLERS: Final[dict[type, Callable[[Solver, Any], None]]] = {
    RowIneq: Solver._add_row_ineq,
    RowEq: Solver._add_row_eq,
    DimIneq: Solver._add_dim_ineq,
    DimEq: Solver._add_dim_eq,
    Terminal: Solver.add_terminal,
    PolicyMark: Solver._add_policy_mark,
    TotalElems: Solver._add_total_elems,
    DimAtLeast: Solver._add_dim_at_least,
    DimLinear: Solver._add_dim_linear,
    RowPrefix: Solver._add_row_prefix,
    PaddedAxis: Solver.add_padding,
    CaptureBind: Solver._bind,
    SetDim: Solver._set,
}
"""What each kind of constraint does in :meth:`Solver.add` (a table of the
class's functions, not of bound methods, which would make every solver a
reference cycle that only the cyclic collector frees)."""
