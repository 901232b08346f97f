"""Shape schemes (OCANNL's ``Shape.Scheme``): trace a function once, apply it often.

A tensor function's shapes amount to a *scheme*: the constraints its body
registers, read off a rewind window, with the solution equations of their
variables. Instantiating the scheme at a call site renames the variables the
trace minted (the *generalized* ones), keeps the pre-existing tensors' ones
(*fixed*: shared parameters and other *anchors*), relates the scheme's
boundary rows to the call's argument and result shapes, and solves at Stage 1.
No body runs again.

>>> from axisflow.shapes import Session, scheme
>>> s = Session()
>>> w = s.param("w", "...->4")                  # a shared parameter (an anchor)
>>> with s.rewind():
...     mark = s.var_mark()
...     x = s.fresh("x")                        # the tracer
...     layer = scheme.trace(s, var_mark=mark, label="layer", args=[x],
...                          f=lambda: [s.compose("h", w, x)])
>>> ys = []
>>> for site, spec in (("small", "2|->3"), ("big", "7|->3")):
...     y = s.fresh("y_" + site)
...     _ = scheme.instantiate(layer, application=site,
...                            args=[s.leaf("x_" + site, spec)], results=[y])
...     ys.append(y)
>>> s.close()
>>> [y.shape.dims() for y in ys], w.shape.dims()
([((2,), (), (4,)), ((7,), (), (4,))], ((), (3,), (4,)))

How a scheme is read off
========================
:func:`trace` runs the function inside the caller's rewind window, with
capture references made before it reading as unbound, closing and reading
dims refused (:class:`UntraceableScheme`), and every constraint checked for
what a scheme cannot carry. Then it re-solves the function's constraints at
Stage 1 in a nested scratch window: the trace's variables get fresh *scheme
variables*; a pre-existing variable is replaced by its solution as it stood
when the trace began, or, if it was open then, by a *placeholder* scheme
variable that the instantiation equates with the anchors' current rows. The
scheme is that scratch solution in normal form: its open variables' lower
bounds, relations, fixed-index minima, pending totals, terminal rows, policy
marks and template depths, plus the normalized boundary, anchor and internal
rows and the capture inputs. The scratch re-solve is also the end-of-trace
validation: a contradiction among the function's constraints is a
``ShapeError`` at trace time, as is a contradiction the function swallowed
(the session's taint).

Instantiating writes that normal form with fresh variables: the boundary
equalities first (as re-running the body on the arguments would), then the
anchors' equalities with their current rows, then the solution's facts,
solved at Stage 1. Already-solved parts of the body cost nothing; only what
depends on the arguments is solved again.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from axisflow.gc_pause import collector_paused
from axisflow.shapes.constraints import (
    CaptureBind,
    Constraint,
    DimAtLeast,
    DimEq,
    DimIneq,
    DimLinear,
    Mark,
    PolicyMark,
    RowEq,
    RowIneq,
    RowPrefix,
    SetDim,
    Terminal,
    TotalElems,
)
from axisflow.shapes.errors import ShapeError
from axisflow.shapes.session import (
    DimRef,
    Session,
    Shape,
    Tensor,
    Window,
    shape_sides,
)
from axisflow.shapes.solver import MAX_RANK, marks_of_bits
from axisflow.shapes.terms import (
    BROADCAST_UNIT,
    EMPTY_ROW,
    KINDS,
    Dim,
    DimVar,
    Kind,
    Origin,
    Row,
    RowVar,
    Side,
    Size,
)
from axisflow.shapes.trail import MISSING

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
    the function are equal to it).
    """

    ref: DimRef
    dim: Dim
    origin: Origin


@dataclass(frozen=True, slots=True)
class LooseVariable:
    """An open pre-existing variable the scheme mentions that no anchor holds.

    Instantiation equates ``term`` (in scheme variables) with ``old``. After a
    closing ``old`` has lost its state, so the scheme is stale.
    """

    old: DimVar | RowVar
    term: Dim | Row


Fact = DimIneq | RowIneq | DimAtLeast | TotalElems | Terminal

_ROW_INEQ, _DIM_INEQ, _TERMINAL, _AT_LEAST, _TOTAL = range(5)


def _compile_fact(
    fact: Fact, origin_index: dict[int, int]
) -> tuple[int, object, object, int]:
    """A fact as (kind code, first term, second term or value, origin index)."""
    at = origin_index[id(fact.origin)]
    if isinstance(fact, RowIneq):
        return (_ROW_INEQ, fact.res, fact.opnd, at)
    if isinstance(fact, DimIneq):
        return (_DIM_INEQ, fact.res, fact.opnd, at)
    if isinstance(fact, Terminal):
        return (_TERMINAL, fact.row, fact.is_param, at)
    if isinstance(fact, DimAtLeast):
        return (_AT_LEAST, fact.dim, fact.n, at)
    return (_TOTAL, fact.rows, fact.count, at)


_ARG, _RESULT, _ANCHOR = range(3)

LowerBound = tuple[RowVar | None, tuple[Size, ...]]
"""A lower bound ``[...var, sizes]`` of a presolvable variable (``var`` None: closed)."""


@dataclass(frozen=True, slots=True)
class _Presolve:
    """The scheme's internal row variables an application may solve outright.

    ``sources``: the variables that are a whole boundary or anchor row, with
    where they stand ((argument/result/anchor, index, kind index)); at an
    application where that row is concrete the variable's value is known.
    ``order``: the presolvable variables in dependency order, each with its
    lower bounds and template depth. ``skipped``: for each compiled fact,
    whether it only bounds a presolvable variable from below.
    """

    sources: tuple[tuple[RowVar, tuple[tuple[int, int, int], ...]], ...]
    order: tuple[tuple[RowVar, tuple[LowerBound, ...], int], ...]
    skipped: tuple[RowVar | None, ...]


def _plan_presolve(sc: Scheme) -> _Presolve | None:
    """Find the internal row variables an application can solve outright.

    A generalized row variable is *presolvable* when it occurs in no boundary
    or anchor row, no equality, total, terminal, capture or loose term, and as
    the result of row inequalities only bare (``[...v] <= [...u, sizes]``, the
    lower bound ``u`` presolvable itself, a source, or absent), with no cycle
    through such bounds. An application mints it afresh, so nothing added
    later can reach it except as an operand, which never gives a row more
    axes nor a size other than 1 to an axis its bounds leave at 1. So once its
    sources are concrete, what closing will make of it is known at once: the
    broadcast join of its lower bounds (the longest, per axis the size other
    than 1, else 1), which is what Stage 1 plus closing computes through
    templates one inequality at a time. ``None`` when there is nothing to
    presolve.
    """
    places: dict[RowVar, list[tuple[int, int, int]]] = {}
    blocked: set[DimVar | RowVar] = set()
    boundary = (
        (_ARG, sc.args),
        (_RESULT, sc.results),
        (_ANCHOR, tuple(a.rows for a in sc.anchors)),
    )
    for where, shapes in boundary:
        for index, rows in enumerate(shapes):
            for kind_index, row in enumerate(rows):
                blocked.update(_row_vars(row))
                if row.var is not None and not row.dims:
                    places.setdefault(row.var, []).append((where, index, kind_index))
    for item in sc.loose:
        blocked.add(item.old)
        blocked.update(_term_vars(item.term))
    for capture in sc.captures:
        blocked.update(_term_vars(capture.dim))
    lower: dict[RowVar, list[LowerBound]] = {}
    for fact in sc.facts:
        if isinstance(fact, RowIneq):
            res, opnd = fact.res, fact.opnd
            if res.var is None:
                continue  # only an operand side: presolving keeps it
            if res.dims or not all(type(d) is Size for d in opnd.dims):
                blocked.add(res.var)
            else:
                lower.setdefault(res.var, []).append((opnd.var, opnd.dims))  # type: ignore[arg-type]
        elif isinstance(fact, Terminal | TotalElems):
            for term in _fact_terms(fact):
                blocked.update(_term_vars(term))
    candidates = {v for v in sc.generalized if type(v) is RowVar and v not in blocked}
    # Kahn's order over the bounds: a candidate is presolvable once each of its
    # bounds is closed, a source or presolvable itself. One bounded by anything
    # else, by itself or through a cycle never becomes ready, nor do its users.
    waiting: dict[RowVar, int] = {}
    users: dict[RowVar, list[RowVar]] = {}
    ready: list[RowVar] = []
    for var in candidates:
        needs = 0
        for bound_var, _sizes in lower.get(var, ()):
            if bound_var is None or bound_var in places:
                continue
            needs += 1
            users.setdefault(bound_var, []).append(var)
        waiting[var] = needs
        if not needs:
            ready.append(var)
    order: list[RowVar] = []
    while ready:
        var = ready.pop()
        order.append(var)
        for user in users.get(var, ()):
            waiting[user] -= 1
            if not waiting[user]:
                ready.append(user)
    if not order:
        return None
    gens = dict(sc.gens)
    used_sources = {
        b[0]
        for var in order
        for b in lower.get(var, ())
        if b[0] is not None and b[0] in places
    }
    presolvable = set(order)
    skipped: list[RowVar | None] = []
    for code, first, _second, _origin in sc._plan:
        var = first.var if code == _ROW_INEQ else None  # type: ignore[union-attr]
        skipped.append(var if var in presolvable else None)
    return _Presolve(
        sources=tuple(
            (var, tuple(places[var])) for var in places if var in used_sources
        ),
        order=tuple(
            (var, tuple(lower.get(var, ())), gens.get(var, 0)) for var in order
        ),
        skipped=tuple(skipped),
    )


def _join_concrete(rows: Sequence[Row]) -> Row | None:
    """The broadcast join of concrete rows; ``None`` when two sizes other than 1 clash."""
    if len(rows) == 1:
        return rows[0]
    if not rows:
        return EMPTY_ROW
    length = max(len(r.dims) for r in rows)
    joined: list[Dim] = []
    for back in range(length, 0, -1):
        chosen: Size = BROADCAST_UNIT
        for row in rows:
            dims = row.dims
            if len(dims) >= back:
                size = dims[-back]
                if size.n != 1:  # type: ignore[union-attr]
                    if chosen.n == 1:
                        chosen = size  # type: ignore[assignment]
                    elif size != chosen:
                        return None
        joined.append(chosen)
    return Row(tuple(joined))


def _presolved(
    sc: Scheme,
    pre: _Presolve,
    args: tuple[Shape, ...],
    results: tuple[Shape, ...],
    norm_row: Callable[[Row], Row],
) -> dict[RowVar, Row]:
    """The presolvable variables' values at this application (see :func:`_plan_presolve`).

    Only those whose sources are all concrete now. Empty when a join clashes
    or would pass the template depth limit: the full application then reports
    the contradiction as re-running the body would.
    """
    known: dict[RowVar, Row] = {}
    for var, where in pre.sources:
        for kind, index, kind_index in where:
            shape = (
                args[index]
                if kind == _ARG
                else results[index]
                if kind == _RESULT
                else sc.anchors[index].shape
            )
            current = norm_row(shape.rows()[kind_index])
            if current.is_concrete():
                known[var] = current
                break
    # The values are a function of the sources' values: call sites repeating
    # their argument shapes reuse them (the rows are immutable).
    key = tuple(known.get(var) for var, _ in pre.sources)
    memo = sc._presolve_memo
    hit = memo.get(key)
    if hit is not None:
        return hit
    if len(memo) >= _PRESOLVE_MEMO_SIZE:
        memo.clear()
    memo[key] = solved = _solve_presolvable(pre, known)
    return solved


_PRESOLVE_MEMO_SIZE = 256
"""Source values remembered per scheme (cleared when full: a bound, not a cache policy)."""


def _solve_presolvable(pre: _Presolve, known: dict[RowVar, Row]) -> dict[RowVar, Row]:
    """The joins of :func:`_presolved`, in dependency order (``known``: the sources)."""
    solved: dict[RowVar, Row] = {}
    for var, bounds, gen in pre.order:
        if len(bounds) == 1 and not bounds[0][1] and bounds[0][0] is not None:
            # The common case: one bare lower bound, whose value it takes.
            value = known.get(bounds[0][0])
            if value is not None:
                if gen + len(value.dims) > MAX_RANK:
                    return {}
                known[var] = solved[var] = value
            continue
        rows: list[Row] = []
        for bound_var, sizes in bounds:
            if bound_var is None:
                rows.append(Row(sizes))
                continue
            value = known.get(bound_var)
            if value is None:
                break
            rows.append(Row(value.dims + sizes) if sizes else value)
        else:
            joined = _join_concrete(rows)
            if joined is None or gen + len(joined.dims) > MAX_RANK:
                return {}
            known[var] = joined
            solved[var] = joined
    return solved


class Scheme:
    """A traced function's shapes; see the module docstring and :func:`trace`.

    Variables: ``generalized`` scheme variables stand for the trace's own;
    ``fixed`` ones for pre-existing open variables (tied to the anchors).
    Both are renamed per application; the anchors' equalities keep the fixed
    ones tied to the tensors they stand for.
    """

    def __init__(
        self,
        *,
        session: Session,
        label: str,
        args: tuple[Rows, ...],
        results: tuple[Rows, ...],
        anchors: tuple[Anchor, ...],
        internal: tuple[InternalRows, ...],
        facts: tuple[Fact, ...],
        marks: tuple[tuple[RowVar, Mark], ...],
        gens: tuple[tuple[RowVar, int], ...],
        captures: tuple[CaptureInput, ...],
        loose: tuple[LooseVariable, ...],
        generalized: tuple[DimVar | RowVar, ...],
        fixed: tuple[DimVar | RowVar, ...],
        closings: int,
        arg_names: tuple[str, ...],
        result_names: tuple[str, ...],
        traced_args: tuple[Shape, ...] = (),
        traced_results: tuple[Shape, ...] = (),
        traced_internal: tuple[Shape, ...] = (),
    ) -> None:
        self.session = session
        self.label = label
        self.args = args
        self.results = results
        self.anchors = anchors
        self.internal = internal
        self.facts = facts
        self.marks = marks
        self.gens = gens
        self.captures = captures
        self.loose = loose
        self.generalized = generalized
        self.fixed = fixed
        self.closings = closings
        self.arg_names = arg_names
        self.result_names = result_names
        self.traced_args = traced_args
        self.traced_results = traced_results
        self.traced_internal = traced_internal
        self._dims = tuple(v for v in (*generalized, *fixed) if type(v) is DimVar)
        self._rows = tuple(v for v in (*generalized, *fixed) if type(v) is RowVar)
        self._internal_sides = tuple(shape_sides(i.name) for i in internal)
        self._anchor_concrete = tuple(
            tuple(row.is_concrete() for row in anchor.rows) for anchor in anchors
        )
        # The distinct origins of the facts and captures, stamped once per
        # application, and each fact as (kind code, terms..., origin index).
        origins: dict[int, Origin] = {}
        for item in (*facts, *captures):
            origins.setdefault(id(item.origin), item.origin)
        self._origins = tuple(origins.values())
        self._origin_index = {key: i for i, key in enumerate(origins)}
        self._plan = tuple(_compile_fact(fact, self._origin_index) for fact in facts)
        self._places: dict[int, tuple[str, int]] | None = None
        self._presolve = _plan_presolve(self)
        self._presolve_memo: dict[tuple[Row | None, ...], dict[RowVar, Row]] = {}

    @property
    def arity(self) -> int:
        """The number of arguments."""
        return len(self.args)

    @property
    def num_results(self) -> int:
        """The number of results."""
        return len(self.results)

    def locate(self, shape: Shape) -> tuple[str, int] | None:
        """Where a shape of the trace stands in the scheme.

        ``("arg", i)``, ``("internal", i)``, ``("anchor", i)`` or ``("result",
        i)`` (the first that applies); ``None`` for a shape the scheme does not
        hold. Tools use it to relate the values of a traced body to an
        application's shapes.
        """
        if self._places is None:
            places: dict[int, tuple[str, int]] = {}
            for what, shapes in (
                ("result", self.traced_results),
                ("anchor", tuple(a.shape for a in self.anchors)),
                ("internal", self.traced_internal),
                ("arg", self.traced_args),
            ):
                for index, candidate in enumerate(shapes):
                    places[id(candidate)] = (what, index)
            self._places = places
        return self._places.get(id(shape))

    def to_lines(self) -> list[str]:
        """The scheme as text, one item per line (see :mod:`.scheme_text`)."""
        from axisflow.shapes.scheme_text import scheme_lines

        return scheme_lines(self)

    def __str__(self) -> str:
        header = (
            f"shape scheme {self.label}: {self.arity} argument(s), "
            f"{self.num_results} result(s)"
        )
        return "\n".join([header, *("  " + line for line in self.to_lines())])

    def __repr__(self) -> str:
        return f"<Scheme {self.label}/{self.arity}->{self.num_results}>"


@dataclass(frozen=True)
class Application:
    """What :func:`instantiate` made: the application's internal shapes.

    ``internal[i]`` has the renamed rows of ``scheme.internal[i]``; it is
    registered with the next closing unless ``NO_INTERNAL_ROWS`` was given.
    """

    scheme: Scheme
    application: str
    internal: tuple[Shape, ...]


# ------------------------------------------------------------------- helpers


def _fail(prefix: str, message: str) -> NoReturn:
    raise ShapeError(prefix + message)


def _shape(value: object, session: Session, what: str, prefix: str) -> Shape:
    """The shape of a ``Shape`` or ``Tensor`` of ``session``, else a clear error."""
    shape = value.shape if isinstance(value, Tensor) else value
    if not isinstance(shape, Shape):
        _fail(prefix, f"{what} must be a shape or a tensor, got {value!r}")
    if shape.session is not session:
        _fail(prefix, f"{what} ('{shape.name}') belongs to another session")
    if shape.discarded:
        _fail(prefix, f"{what} ('{shape.name}') was discarded by a rewind")
    return shape


def _shapes(
    values: object, session: Session, what: str, prefix: str
) -> tuple[Shape, ...]:
    if isinstance(values, str | bytes) or not isinstance(values, Sequence | tuple):
        _fail(prefix, f"the {what}s must be a sequence of shapes, got {values!r}")
    items: Sequence[object] = values  # type: ignore[assignment]
    return tuple(
        _shape(value, session, f"{what} {index}", prefix)
        for index, value in enumerate(items)
    )


def _sabotages(sabotage: object, prefix: str) -> frozenset[Sabotage]:
    """``None``, one member or an iterable of members."""
    if sabotage is None:
        return frozenset()
    if isinstance(sabotage, Sabotage):
        return frozenset((sabotage,))
    if isinstance(sabotage, Iterable) and not isinstance(sabotage, str | bytes):
        members = tuple(sabotage)
        if all(isinstance(m, Sabotage) for m in members):
            return frozenset(members)  # type: ignore[arg-type]
    _fail(prefix, f"sabotage must be a Sabotage member, got {sabotage!r}")


def _row_vars(row: Row) -> Iterable[DimVar | RowVar]:
    if row.var is not None:
        yield row.var
    for d in row.dims:
        if type(d) is DimVar:
            yield d


def _term_vars(term: Dim | Row) -> Iterable[DimVar | RowVar]:
    if type(term) is Row:
        return _row_vars(term)
    return (term,) if type(term) is DimVar else ()


def _fact_terms(fact: Fact) -> Iterable[Dim | Row]:
    if isinstance(fact, DimIneq):
        return (fact.res, fact.opnd)
    if isinstance(fact, RowIneq):
        return (fact.res, fact.opnd)
    if isinstance(fact, DimAtLeast):
        return (fact.dim,)
    if isinstance(fact, TotalElems):
        return fact.rows
    return (fact.row,)


# -------------------------------------------------------------------- trace


class _PreTrace:
    """Substitutes the trace's variables by fresh scheme variables.

    A variable minted after the mark becomes a fresh (generalized) scheme
    variable. An older one is replaced by its solution as it stood when the
    trace began (read through the undo trail, so what the function did to it
    does not count); an old variable that was open then becomes a placeholder
    scheme variable, tied back to it through the anchors or a loose equation.
    """

    def __init__(self, session: Session, var_mark: int, trail_start: int) -> None:
        self.session = session
        self.var_mark = var_mark
        solver = session.solver
        trail = session.trail
        self._dim_subst = solver.dim_subst
        self._row_subst = solver.row_subst
        self._dims_before = trail.values_before(trail_start, solver.dim_subst)
        self._rows_before = trail.values_before(trail_start, solver.row_subst)
        self.dims: dict[int, Dim] = {}
        self.rows: dict[int, Row] = {}
        self.placeholders: dict[DimVar | RowVar, DimVar | RowVar] = {}

    def _dim_value(self, var_id: int) -> Dim | None:
        """The solver entry of an old dim variable when the trace began."""
        if var_id in self._dims_before:
            value = self._dims_before[var_id]
            return None if value is MISSING else value
        return self._dim_subst.get(var_id)

    def _row_value(self, var_id: int) -> Row | None:
        """The solver entry of an old row variable when the trace began."""
        if var_id in self._rows_before:
            value = self._rows_before[var_id]
            return None if value is MISSING else value
        return self._row_subst.get(var_id)

    def dim(self, dim: Dim) -> Dim:
        """The scheme term of a dim."""
        if type(dim) is not DimVar:
            return dim
        cached = self.dims.get(dim.id)
        if cached is not None:
            return cached
        root: Dim = dim
        # An old variable stands for its solution as it was before the trace.
        while type(root) is DimVar and root.id < self.var_mark:
            nxt = self._dim_value(root.id)
            if nxt is None:
                break
            root = nxt
        if type(root) is Size:
            term: Dim = root
        else:
            assert type(root) is DimVar
            found = self.dims.get(root.id)
            if found is None:
                found = self.session.fresh_dim_var()
                self.dims[root.id] = found
                if root.id < self.var_mark:
                    self.placeholders[found] = root  # type: ignore[index]
            term = found
        self.dims[dim.id] = term
        return term

    def row(self, row: Row) -> Row:
        """The scheme term of a row."""
        dims: tuple[Dim, ...] = tuple(self.dim(d) for d in row.dims)
        var = row.var
        if var is None:
            return Row(dims)
        head = self.rows.get(var.id)
        if head is None:
            prefix: list[Dim] = []
            tail: RowVar | None = var
            # An old variable stands for its solution as it was before the trace.
            while tail is not None and tail.id < self.var_mark:
                value = self._row_value(tail.id)
                if value is None:
                    break
                prefix[:0] = [self.dim(d) for d in value.dims]
                tail = value.var
            if tail is None:
                head = Row(tuple(prefix))
            else:
                fresh = self.rows.get(tail.id)
                if fresh is None:
                    fresh = Row((), self.session.fresh_row_var())
                    self.rows[tail.id] = fresh
                    if tail.id < self.var_mark:
                        assert fresh.var is not None
                        self.placeholders[fresh.var] = tail
                head = Row((*prefix, *fresh.dims), fresh.var)
            self.rows[var.id] = head
        return Row(head.dims + dims, head.var)

    def rows3(self, shape: Shape) -> Rows:
        """The scheme terms of a shape's three rows."""
        return (self.row(shape.batch), self.row(shape.input), self.row(shape.output))


@dataclass
class _TraceGuard:
    """What the trace watches while the function runs."""

    prefix: str
    inputs: frozenset[int]  # ids of capture references that existed before
    refusal: str | None = None
    raised: list[UntraceableScheme] = field(default_factory=list)
    used: list[Shape] = field(default_factory=list)

    def refuse(self, reason: str) -> NoReturn:
        if self.refusal is None:
            self.refusal = reason
        error = UntraceableScheme(self.prefix + reason)
        self.raised.append(error)
        raise error

    def forcing(self, what: str) -> None:
        self.refuse(
            f"the function forces dims ({what}) while it is traced; a scheme "
            f"cannot carry that (shapes are only closed after an application)"
        )

    def constraint(self, constraint: Constraint) -> None:
        if isinstance(constraint, TotalElems) and constraint.is_deferred:
            self.refuse(
                f"{constraint.origin.describe()} has a precision-dependent element "
                f"count {constraint.count}; a scheme cannot carry it (the count is "
                f"only known at closing)"
            )
        if isinstance(constraint, DimLinear | RowPrefix):
            what = (
                f"an affine or concatenated axis '{constraint.text}'"
                if isinstance(constraint, DimLinear)
                else "axes written before a row variable"
            )
            self.refuse(
                f"{constraint.origin.describe()} has {what}; shape schemes do not "
                f"carry these pending equations yet (evaluate the function at each "
                f"call instead: close-shapes without generalize-shapes)"
            )
        if isinstance(constraint, SetDim) and id(constraint.ref) in self.inputs:
            self.refuse(
                f"set_dim on the capture reference '{constraint.ref.label}', made "
                f"outside the traced window; a scheme cannot carry that (bind the "
                f"reference in the function and set it outside)"
            )

    def note(self, shape: Shape) -> None:
        self.used.append(shape)


def trace(
    session: Session,
    *,
    var_mark: int,
    label: str,
    args: Sequence[ShapeLike],
    f: Callable[[], Sequence[ShapeLike]],
    sabotage: Sabotage | Iterable[Sabotage] | None = None,
) -> Scheme:
    """Run ``f`` once and read its shapes off as a :class:`Scheme`.

    ``args`` are the tracers' shapes, made after ``var_mark`` was read (so
    their variables are generalized) and before this call (so their own
    constraints are not the scheme's); ``f()`` returns the result shapes. Must
    run inside ``session.rewind()``, which undoes the trace.

    While ``f`` runs, capture references made before the call read as unbound,
    and closing or reading dims raises :class:`UntraceableScheme`, as do a
    precision-dependent total and ``set_dim`` on such a reference. A
    contradiction among the function's constraints (checked once more at the
    end, unless ``Sabotage.NO_END_VALIDATION``) is a ``ShapeError``. Both
    messages start ``tracing the shape scheme <label>: ``.
    """
    if not isinstance(label, str):
        raise ShapeError(
            f"tracing a shape scheme: the label must be a string, got {label!r}"
        )
    prefix = f"tracing the shape scheme {label}: "
    if not isinstance(session, Session):
        _fail(prefix, f"needs a Session, got {session!r}")
    sabotages = _sabotages(sabotage, prefix)
    window = session.window
    if window is None:
        _fail(
            prefix,
            "trace must run inside session.rewind(), which undoes the trace; "
            "open a window first",
        )
    if (
        isinstance(var_mark, bool)
        or not isinstance(var_mark, int)
        or not 0 <= var_mark <= session.var_mark()
    ):
        _fail(
            prefix, f"var_mark must be a value of session.var_mark(), got {var_mark!r}"
        )
    if not callable(f):
        _fail(prefix, f"f must be callable, got {f!r}")
    tracers = _shapes(args, session, "argument", prefix)
    for index, tracer in enumerate(tracers):
        if tracer.created_at < var_mark:
            _fail(
                prefix,
                f"argument {index} ('{tracer.name}') was made before var_mark was "
                f"read, so its variables would be fixed, not generalized; make the "
                f"tracers after reading var_mark",
            )
    if len({id(t) for t in tracers}) != len(tracers):
        _fail(prefix, "the same shape is given as two arguments")

    trail = session.trail
    trail_start = len(trail.entries)
    log_start = len(session.log)
    shapes_start = len(session.registered_shapes)
    # Capture references made before the call are the scheme's inputs: they
    # read as unbound while f runs, so the scheme does not depend on them.
    inputs = [ref for ref in session.refs if not ref.discarded]
    saved = [(ref, ref.var, ref.size) for ref in inputs]
    for ref in inputs:
        trail.set_attr(ref, "var", None)
        trail.set_attr(ref, "size", None)
    guard = _TraceGuard(prefix, frozenset(id(ref) for ref in inputs))
    try:
        with (
            session.guard_forcing(guard.forcing),
            session.guard_constraints(guard.constraint),
            session.observe_uses(guard.note),
        ):
            returned = f()
    except UntraceableScheme as error:
        if any(error is mine for mine in guard.raised):
            raise
        # A nested trace refused: this trace fails with it.
        raise UntraceableScheme(prefix + error.message, error.origins) from error
    except ShapeError as error:
        if guard.refusal is not None:
            raise UntraceableScheme(prefix + guard.refusal, error.origins) from error
        raise ShapeError(prefix + error.message, error.origins) from error
    finally:
        for ref, var, size in saved:
            trail.set_attr(ref, "var", var)
            trail.set_attr(ref, "size", size)
    if guard.refusal is not None:
        # f caught the refusal and went on: the scheme is still untraceable.
        raise UntraceableScheme(prefix + guard.refusal)
    results = _shapes(returned, session, "result", prefix)
    if Sabotage.NO_END_VALIDATION not in sabotages:
        error = session.taint_error
        if error is not None and not window.tainted_at_open:
            raise ShapeError(prefix + error.message, error.origins)
    return _read_off(
        session,
        label=label,
        prefix=prefix,
        var_mark=var_mark,
        trail_start=trail_start,
        constraints=tuple(session.log[log_start:]),
        tracers=tracers,
        results=results,
        internal=tuple(
            shape
            for shape in session.registered_shapes[shapes_start:]
            if shape.created_at >= var_mark and not shape.discarded
        ),
        used=tuple(guard.used),
        inputs=tuple(inputs),
        validate=Sabotage.NO_END_VALIDATION not in sabotages,
    )


def _read_off(
    session: Session,
    *,
    label: str,
    prefix: str,
    var_mark: int,
    trail_start: int,
    constraints: tuple[Constraint, ...],
    tracers: tuple[Shape, ...],
    results: tuple[Shape, ...],
    internal: tuple[Shape, ...],
    used: tuple[Shape, ...],
    inputs: tuple[DimRef, ...],
    validate: bool,
) -> Scheme:
    """Re-solve the function's constraints in a scratch window; read the scheme."""
    scheme_mark = session.var_mark()
    pre = _PreTrace(session, var_mark, trail_start)
    tracer_ids = {id(t) for t in tracers}
    anchor_shapes: list[Shape] = []
    seen: set[int] = set()
    for shape in (*used, *results):
        if (
            shape.created_at < var_mark
            and id(shape) not in seen
            and id(shape) not in tracer_ids
        ):
            seen.add(id(shape))
            anchor_shapes.append(shape)
    # Anchors first: the placeholders their rows create are held by them.
    anchor_terms = [pre.rows3(shape) for shape in anchor_shapes]
    held = set(pre.placeholders)
    arg_terms = [pre.rows3(shape) for shape in tracers]
    result_terms = [pre.rows3(shape) for shape in results]
    internal_terms = [pre.rows3(shape) for shape in internal]
    input_ids = {id(ref): ref for ref in inputs}
    capture_origins: dict[int, Origin] = {}

    with session.rewind() as scratch:
        solver = session.solver
        terminals_start = len(solver.terminals)
        proxies: dict[int, DimRef] = {}

        def proxy(ref: DimRef) -> DimRef:
            found = proxies.get(id(ref))
            if found is None:
                found = proxies[id(ref)] = session.dim_ref(ref.label)
            return found

        at_least: list[DimAtLeast] = []
        for constraint in constraints:
            replay = _substitute(constraint, pre, proxy)
            if isinstance(replay, DimAtLeast):
                at_least.append(replay)
            if (
                isinstance(constraint, CaptureBind)
                and id(constraint.ref) in input_ids
                and id(constraint.ref) not in capture_origins
            ):
                capture_origins[id(constraint.ref)] = constraint.origin
            try:
                session.add(replay)
            except ShapeError as error:
                if validate:
                    raise ShapeError(prefix + error.message, error.origins) from error
                # NO_END_VALIDATION: the contradiction is not the trace's
                # concern; the constraint is left out of the scheme.
        return _normal_form(
            session,
            scratch,
            scheme_mark,
            label=label,
            anchor_shapes=tuple(anchor_shapes),
            anchor_terms=anchor_terms,
            arg_terms=arg_terms,
            result_terms=result_terms,
            internal=internal,
            internal_terms=internal_terms,
            at_least=at_least,
            terminals=solver.terminals[terminals_start:],
            captures=[
                (input_ids[ref_id], proxies[ref_id], capture_origins[ref_id])
                for ref_id in capture_origins
                if proxies[ref_id].var is not None
            ],
            placeholders=pre.placeholders,
            held=held,
            tracers=tracers,
            results=results,
        )


def _substitute(
    constraint: Constraint, pre: _PreTrace, proxy: Callable[[DimRef], DimRef]
) -> Constraint:
    """A constraint of the trace in scheme variables (references by proxies)."""
    if isinstance(constraint, RowIneq):
        return RowIneq(
            pre.row(constraint.res), pre.row(constraint.opnd), constraint.origin
        )
    if isinstance(constraint, RowEq):
        return RowEq(pre.row(constraint.a), pre.row(constraint.b), constraint.origin)
    if isinstance(constraint, DimIneq):
        return DimIneq(
            pre.dim(constraint.res), pre.dim(constraint.opnd), constraint.origin
        )
    if isinstance(constraint, DimEq):
        return DimEq(pre.dim(constraint.a), pre.dim(constraint.b), constraint.origin)
    if isinstance(constraint, TotalElems):
        return TotalElems(
            tuple(pre.row(r) for r in constraint.rows),
            constraint.count,
            constraint.origin,
        )
    if isinstance(constraint, DimAtLeast):
        return DimAtLeast(pre.dim(constraint.dim), constraint.n, constraint.origin)
    if isinstance(constraint, Terminal):
        return Terminal(pre.row(constraint.row), constraint.is_param, constraint.origin)
    if isinstance(constraint, PolicyMark):
        return PolicyMark(pre.row(constraint.row), constraint.mark, constraint.origin)
    if isinstance(constraint, CaptureBind):
        var = pre.dim(constraint.var)
        bound = proxy(constraint.ref)
        if type(var) is DimVar:
            return CaptureBind(bound, var, constraint.origin)
        # The label's variable was solved before the trace: bind a fresh one.
        fresh = pre.session.fresh_dim_var()
        pre.session.add(DimEq(fresh, var, constraint.origin))
        return CaptureBind(bound, fresh, constraint.origin)
    if isinstance(constraint, DimLinear | RowPrefix):
        raise AssertionError("refused while the function ran (_TraceGuard.constraint)")
    return SetDim(proxy(constraint.ref), constraint.size, constraint.origin)


def _normal_form(
    session: Session,
    scratch: Window,
    scheme_mark: int,
    *,
    label: str,
    anchor_shapes: tuple[Shape, ...],
    anchor_terms: list[Rows],
    arg_terms: list[Rows],
    result_terms: list[Rows],
    internal: tuple[Shape, ...],
    internal_terms: list[Rows],
    at_least: list[DimAtLeast],
    terminals: Sequence[Terminal],
    captures: list[tuple[DimRef, DimRef, Origin]],
    placeholders: dict[DimVar | RowVar, DimVar | RowVar],
    held: set[DimVar | RowVar],
    tracers: tuple[Shape, ...],
    results: tuple[Shape, ...],
) -> Scheme:
    """Read the scratch solution off as a scheme (inside the scratch window)."""
    solver = session.solver
    norm_row = solver.norm_row
    find_dim = solver.find_dim

    def rows3(terms: Rows) -> Rows:
        return (norm_row(terms[0]), norm_row(terms[1]), norm_row(terms[2]))

    def bare(var: RowVar) -> RowVar | None:
        row = norm_row(Row((), var))
        return row.var if not row.dims else None

    # Only scheme variables (minted for this read-off) belong to the scheme;
    # the window tells which of their entries exist, whatever the session's size.
    dims_touched, rows_touched = scratch.touched_variables()
    dim_ids = sorted(v for v in dims_touched if v >= scheme_mark)
    row_ids = sorted(v for v in rows_touched if v >= scheme_mark)
    facts: list[Fact] = []
    # Dims: lower bounds and relations between open variables. A relation
    # with a solved side was absorbed into the other side's bound already.
    pairs: set[tuple[int, int]] = set()
    for var_id in dim_ids:
        bounds = solver.dim_bounds.get(var_id)
        if bounds is None:
            continue
        var = DimVar(var_id)
        if bounds.glb is not None:
            assert bounds.glb_origin is not None
            facts.append(DimIneq(bounds.glb, var, bounds.glb_origin))
        for res, origin in bounds.res:
            root = find_dim(res)
            if type(root) is DimVar and root != var and (root.id, var_id) not in pairs:
                pairs.add((root.id, var_id))
                facts.append(DimIneq(root, var, origin))
    for constraint in at_least:
        dim = find_dim(constraint.dim)
        if type(dim) is DimVar:
            facts.append(DimAtLeast(dim, constraint.n, constraint.origin))
    row_pairs: set[tuple[int, int]] = set()
    for var_id in row_ids:
        bounds = solver.row_bounds.get(var_id)
        if bounds is None:
            continue
        var = RowVar(var_id)
        seen_glbs: set[Row] = set()
        for glb, origin in bounds.glbs:
            glb = norm_row(glb)
            if glb not in seen_glbs:
                seen_glbs.add(glb)
                facts.append(RowIneq(glb, Row((), var), origin))
        for res, origin in bounds.res:
            root = bare(res)
            if root is not None and root != var and (root.id, var_id) not in row_pairs:
                row_pairs.add((root.id, var_id))
                facts.append(RowIneq(Row((), root), Row((), var), origin))
    written_totals = session.trail.values_before(scratch.trail_start, solver.totals)
    for total_id in sorted(written_totals):
        total = solver.totals.get(total_id)
        if total is None:
            continue
        facts.append(
            TotalElems(
                tuple(norm_row(r) for r in total.rows), total.count, total.origin
            )
        )
    for terminal in terminals:
        row = norm_row(terminal.row)
        if not row.is_concrete():
            facts.append(Terminal(row, terminal.is_param, terminal.origin))
    marks: list[tuple[RowVar, Mark]] = []
    gens: list[tuple[RowVar, int]] = []
    for var_id in row_ids:
        if var_id in solver.row_subst:
            continue
        bits = solver.row_marks.get(var_id, 0)
        marks.extend((RowVar(var_id), mark) for mark in sorted(marks_of_bits(bits)))
        gen = solver.row_gen.get(var_id, 0)
        if gen:
            gens.append((RowVar(var_id), gen))
    capture_inputs = tuple(
        CaptureInput(ref, find_dim(bound.var), origin)  # type: ignore[arg-type]
        for ref, bound, origin in captures
    )
    loose = tuple(
        LooseVariable(
            old,
            find_dim(placeholder)
            if type(placeholder) is DimVar
            else norm_row(Row((), placeholder)),  # type: ignore[arg-type]
        )
        for placeholder, old in placeholders.items()
        if placeholder not in held
    )

    args = tuple(rows3(t) for t in arg_terms)
    result_rows = tuple(rows3(t) for t in result_terms)
    anchors = tuple(
        Anchor(shape, rows3(terms))
        for shape, terms in zip(anchor_shapes, anchor_terms, strict=True)
    )
    internal_rows = tuple(
        InternalRows(shape.name, rows3(terms))
        for shape, terms in zip(internal, internal_terms, strict=True)
    )

    # Every open variable the scheme mentions, in order of first mention.
    mentioned: dict[DimVar | RowVar, None] = {}

    def mention(term: Dim | Row) -> None:
        for v in _term_vars(term):
            mentioned.setdefault(v, None)

    for rows in (
        *args,
        *result_rows,
        *(a.rows for a in anchors),
        *(i.rows for i in internal_rows),
    ):
        for row in rows:
            mention(row)
    for fact in facts:
        for term in _fact_terms(fact):
            mention(term)
    for capture in capture_inputs:
        mention(capture.dim)
    for item in loose:
        mention(item.term)
    fixed_set: set[DimVar | RowVar] = set()
    for placeholder in placeholders:
        term = (
            find_dim(placeholder)
            if type(placeholder) is DimVar
            else norm_row(Row((), placeholder))  # type: ignore[arg-type]
        )
        fixed_set.update(_term_vars(term))
    marks = [(v, m) for v, m in marks if v in mentioned]
    gens = [(v, g) for v, g in gens if v in mentioned]
    return Scheme(
        session=session,
        label=label,
        args=args,
        results=result_rows,
        anchors=anchors,
        internal=internal_rows,
        facts=tuple(facts),
        marks=tuple(marks),
        gens=tuple(gens),
        captures=capture_inputs,
        loose=loose,
        generalized=tuple(v for v in mentioned if v not in fixed_set),
        fixed=tuple(v for v in mentioned if v in fixed_set),
        closings=session.closings,
        arg_names=tuple(t.name for t in tracers),
        result_names=tuple(r.name for r in results),
        traced_args=tracers,
        traced_results=results,
        traced_internal=internal,
    )


# --------------------------------------------------------------- applying


def stale(sc: Scheme) -> bool:
    """Whether :func:`instantiate` would refuse the scheme for a closing since its trace.

    That is the case when the session was closed after the trace and the
    scheme depends on open state no anchored shape holds (a loose variable).
    Trace it again.
    """
    if not isinstance(sc, Scheme):
        raise ShapeError(f"stale needs a Scheme, got {sc!r}")
    return sc.session.closings != sc.closings and bool(sc.loose)


def _check_application(
    sc: Scheme,
    application: object,
    args: object,
    results: object,
    *,
    with_results: bool,
) -> tuple[str, tuple[Shape, ...], tuple[Shape, ...]]:
    """Every refusal that comes before writing anything (``check`` has no results)."""
    if not isinstance(sc, Scheme):
        raise ShapeError(f"applying a shape scheme: expected a Scheme, got {sc!r}")
    if not isinstance(application, str):
        raise ShapeError(
            f"applying the shape scheme {sc.label}: the application must be a "
            f"string, got {application!r}"
        )
    prefix = f"applying the shape scheme {sc.label} to {application}: "
    session = sc.session
    arg_shapes = _shapes(args, session, "argument", prefix)
    result_shapes = _shapes(results, session, "result", prefix) if with_results else ()
    if len(arg_shapes) != sc.arity:
        _fail(
            prefix,
            f"the scheme takes {sc.arity} argument(s) but {len(arg_shapes)} were given",
        )
    if with_results and len(result_shapes) != sc.num_results:
        _fail(
            prefix,
            f"the scheme has {sc.num_results} result(s) but {len(result_shapes)} "
            f"were given",
        )
    for anchor in sc.anchors:
        if anchor.shape.discarded:
            _fail(
                prefix,
                f"the anchored shape '{anchor.shape.name}' was discarded by a rewind; "
                f"trace the function again",
            )
    for capture in sc.captures:
        if capture.ref.discarded:
            _fail(
                prefix,
                f"the capture reference '{capture.ref.label}' was discarded by a "
                f"rewind; trace the function again",
            )
    if stale(sc):
        names = ", ".join(repr(item.old) for item in sc.loose)
        _fail(
            prefix,
            f"the scheme is stale: the session was closed since the trace and the "
            f"scheme depends on open state no anchored shape holds ({names}); trace "
            f"the function again",
        )
    return prefix, arg_shapes, result_shapes


class _Stamp:
    """Origins of one application: the scheme, the application and the site.

    Origins of the trace name the tracers; an application's name the actual
    arguments instead (``names``), as re-running the body would. The scheme's
    own origins are stamped once per application (on first use, in the order of
    ``Scheme._origins``).
    """

    def __init__(
        self, sc: Scheme, application: str, site: object, names: dict[str, str]
    ) -> None:
        self.label = sc.label
        self.application = application
        self.site = site
        self.names = names
        self._index = sc._origin_index
        self._origins = sc._origins
        # Stamped on first use: a presolved application uses few of them.
        self._table: list[Origin | None] = [None] * len(sc._origins)

    def _side(self, side: Side | None) -> Side | None:
        if side is None or side.tensor not in self.names:
            return side
        return Side(self.names[side.tensor], side.kind)

    def _stamp(self, origin: Origin) -> Origin:
        inner = origin.application
        operands = origin.operands
        lhs, rhs = origin.lhs, origin.rhs
        if self.names:
            operands = tuple([self.names.get(name, name) for name in operands])
            lhs, rhs = self._side(lhs), self._side(rhs)
        return Origin(
            origin.operation,
            origin.tensor,
            operands,
            lhs,
            rhs,
            origin.detail,
            self.label,
            self.application if inner is None else f"{self.application} > {inner}",
            origin.site if self.site is None else self.site,
        )

    def __call__(self, origin: Origin) -> Origin:
        """The application's origin for one of the scheme's origins."""
        index = self._index.get(id(origin))
        return self.at(index) if index is not None else self._stamp(origin)

    def at(self, index: int) -> Origin:
        """The application's origin for the scheme's origin number ``index``."""
        stamped = self._table[index]
        if stamped is None:
            stamped = self._table[index] = self._stamp(self._origins[index])
        return stamped

    def new(
        self,
        operation: str,
        tensor: str,
        operands: tuple[str, ...] = (),
        lhs: Side | None = None,
        rhs: Side | None = None,
        detail: str | None = None,
    ) -> Origin:
        return Origin(
            operation,
            tensor,
            operands,
            lhs,
            rhs,
            detail,
            self.label,
            self.application,
            self.site,
        )


def _renamer(
    dims: dict[DimVar, DimVar], rows: dict[RowVar, RowVar], solved: dict[RowVar, Row]
) -> Callable[[Row], Row]:
    """Rename a scheme row for one application (presolved variables by their value)."""

    def row(r: Row) -> Row:
        var = r.var
        r_dims = r.dims
        if r_dims and dims:
            r_dims = tuple(
                [dims.get(d, d) if type(d) is DimVar else d for d in r_dims]  # type: ignore[call-overload]
            )
        if var is None:
            return r if r_dims is r.dims else Row(r_dims)
        value = solved.get(var)
        if value is not None:
            return Row(value.dims + r_dims) if r_dims else value
        new_var = rows.get(var, var)
        return r if new_var is var and r_dims is r.dims else Row(r_dims, new_var)

    return row


def _boundary_origin(
    stamp: _Stamp, what: str, index: int, traced: str, shape: Shape, kind: Kind
) -> Origin:
    return stamp.new(
        what,
        traced,
        (shape.name,),
        Side(traced, kind),
        Side(shape.name, kind),
        f"{what} {index}",
    )


def _apply(
    sc: Scheme,
    prefix: str,
    application: str,
    args: tuple[Shape, ...],
    results: tuple[Shape, ...] | None,
    sabotages: frozenset[Sabotage],
    site: object,
    *,
    checking: bool,
) -> tuple[Shape, ...]:
    """Write one application of the scheme (see :func:`instantiate`)."""
    session = sc.session
    solver = session.solver
    trail = session.trail
    # Outside rewind windows (check and nested traces log every constraint
    # they add) and with no sabotage, solve the internal-only rows outright.
    pre = sc._presolve
    solved: dict[RowVar, Row] = (
        _presolved(sc, pre, args, results or (), solver.norm_row)
        if pre is not None and not sabotages and not trail.depth
        else {}
    )
    if Sabotage.NO_GENERALIZATION in sabotages:
        dims: dict[DimVar, DimVar] = {}
        rows: dict[RowVar, RowVar] = {}
    else:
        mint = session.fresh_dim_var
        dims = {v: mint() for v in sc._dims}  # type: ignore[misc]
        mint_row = session.fresh_row_var
        rows = {v: mint_row() for v in sc._rows if v not in solved}  # type: ignore[misc]

    row = _renamer(dims, rows, solved)

    def dim(d: Dim) -> Dim:
        return dims.get(d, d) if type(d) is DimVar else d  # type: ignore[call-overload]

    names = {
        traced: shape.name
        for traced, shape in zip(sc.arg_names, args, strict=True)
        if traced != shape.name
    }
    stamp = _Stamp(sc, application, site, names)
    boundary = (*args, *(results or ()))
    internal: tuple[Shape, ...] = ()
    if not checking:
        register = Sabotage.NO_INTERNAL_ROWS not in sabotages
        new_shape = session.new_shape
        internal = tuple(
            new_shape(
                item.name,
                row(item.rows[0]),
                row(item.rows[1]),
                row(item.rows[2]),
                sides=sides,
                register=register,
            )
            for item, sides in zip(sc.internal, sc._internal_sides, strict=True)
        )
        # Register before solving: a contradiction leaves them registered,
        # with the session tainted, as a failed construction would.
        for shape in boundary:
            session.register_shape(shape)
    for shape in boundary:
        session.note_use(shape)
    add = session.add
    try:
        # Template depths first: they bound the axes later templates may add.
        row_gen = solver.row_gen
        for var, gen in sc.gens:
            if var in solved:
                continue
            new = rows.get(var, var)
            if row_gen.get(new.id, 0) < gen:
                trail.set_item(row_gen, new.id, gen)
        # The boundary equalities first, as running the body on the arguments would.
        for index, (terms, shape) in enumerate(zip(sc.args, args, strict=True)):
            traced = sc.arg_names[index]
            for kind, term in zip(KINDS, terms, strict=True):
                origin = _boundary_origin(stamp, "argument", index, traced, shape, kind)
                add(RowEq(row(term), shape.row(kind), origin))
        for index, (terms, shape) in enumerate(
            zip(sc.results, results or (), strict=False)
        ):
            traced = sc.result_names[index]
            for kind, term in zip(KINDS, terms, strict=True):
                origin = _boundary_origin(stamp, "result", index, traced, shape, kind)
                add(RowEq(row(term), shape.row(kind), origin))
        if Sabotage.SEVER_SHARED not in sabotages:
            norm_row = solver.norm_row
            for anchor, concrete in zip(sc.anchors, sc._anchor_concrete, strict=True):
                shape = anchor.shape
                session.note_use(shape)
                for kind, term, is_concrete in zip(
                    KINDS, anchor.rows, concrete, strict=True
                ):
                    current = shape.row(kind)
                    if is_concrete and norm_row(current) == term:
                        continue  # already holds: the equality would add nothing
                    origin = stamp.new(
                        "anchor",
                        shape.name,
                        (),
                        Side(f"{shape.name} as traced", kind),
                        Side(shape.name, kind),
                        "a pre-existing shape",
                    )
                    add(RowEq(row(term), current, origin))
            for item in sc.loose:
                origin = stamp.new("fixed variable", repr(item.old))
                if type(item.old) is DimVar:
                    add(DimEq(dim(item.term), item.old, origin))  # type: ignore[arg-type]
                else:
                    add(RowEq(row(item.term), Row((), item.old), origin))  # type: ignore[arg-type]
        origin_at_index = stamp.at
        skipped = pre.skipped if solved and pre is not None else None
        for at, (code, first, second, origin_at) in enumerate(sc._plan):
            if skipped is not None:
                presolved_var = skipped[at]
                if presolved_var is not None and presolved_var in solved:
                    continue  # holds: the presolved value is the join of its bounds
            origin = origin_at_index(origin_at)
            if code == _ROW_INEQ:
                add(RowIneq(row(first), row(second), origin))  # type: ignore[arg-type]
            elif code == _DIM_INEQ:
                add(DimIneq(dim(first), dim(second), origin))  # type: ignore[arg-type]
            elif code == _TERMINAL:
                add(Terminal(row(first), second, origin))  # type: ignore[arg-type]
            elif code == _AT_LEAST:
                add(DimAtLeast(dim(first), second, origin))  # type: ignore[arg-type]
            else:
                renamed = tuple(row(r) for r in first)  # type: ignore[union-attr]
                add(TotalElems(renamed, second, origin))  # type: ignore[arg-type]
        if Sabotage.NO_MARKS not in sabotages or checking:
            mark_origin = stamp.new("policy mark", sc.label)
            for var, mark in sc.marks:
                if var in solved:
                    continue  # a closed row takes no marks
                add(PolicyMark(Row((), rows.get(var, var)), mark, mark_origin))
        if Sabotage.NO_REF_INPUTS not in sabotages:
            for capture in sc.captures:
                _capture(session, capture, dim(capture.dim), stamp, checking)
    except ShapeError as error:
        raise ShapeError(prefix + error.message, error.origins) from error
    return internal


def _capture(
    session: Session, capture: CaptureInput, term: Dim, stamp: _Stamp, checking: bool
) -> None:
    """Relate a capture input to its reference's state, and bind it (not in check)."""
    origin = stamp(capture.origin)
    ref = capture.ref
    if checking:
        # Relate the input to the reference's current state; bind nothing.
        state: Dim | None = ref.var if ref.var is not None else ref.size
        if state is not None:
            sides = (
                Side(f"label '{ref.label}'"),
                Side(f"capture reference '{ref.label}'"),
            )
            session.add(DimEq(term, state, origin.with_sides(*sides)))
        return
    if type(term) is not DimVar:
        # The first binding's variable was solved in the scheme: bind a fresh
        # variable equal to it, so the reference publishes that size.
        fresh = session.fresh_dim_var()
        session.add(DimEq(fresh, term, origin))
        term = fresh
    session.add(CaptureBind(ref, term, origin))


@collector_paused
def instantiate(
    sc: Scheme,
    *,
    application: str,
    args: Sequence[ShapeLike],
    results: Sequence[ShapeLike],
    sabotage: Sabotage | Iterable[Sabotage] | None = None,
    site: object = None,
) -> Application:
    """Apply the scheme to ``args`` and ``results`` at the site ``application``.

    Adds the scheme's renamed constraints and the equalities of its boundary
    rows with ``args`` and ``results`` (and of its anchored shapes with their
    current rows), solves them at Stage 1, and registers the boundary shapes
    and the internal rows with the next closing. Every added constraint's
    origin names the scheme and the application (and ``site``, if given, for
    tools placing diagnostics), so a closing-time failure names them too.

    Raises ``ShapeError`` prefixed ``applying the shape scheme <label> to
    <application>: `` before writing anything on an arity mismatch, a shape
    discarded by a rewind, or staleness (:func:`stale`); after registering
    (the session is then tainted) on a contradiction. Capture inputs are
    related to the references' current state and bound, so their solutions
    are published after Stage 1 and at closing, as the body's would be.
    """
    prefix, arg_shapes, result_shapes = _check_application(
        sc, application, args, results, with_results=True
    )
    sabotages = _sabotages(sabotage, prefix)
    internal = _apply(
        sc,
        prefix,
        application,
        arg_shapes,
        result_shapes,
        sabotages,
        site,
        checking=False,
    )
    return Application(sc, application, internal)


@collector_paused
def check(
    sc: Scheme,
    *,
    application: str,
    args: Sequence[ShapeLike],
    sabotage: Sabotage | Iterable[Sabotage] | None = None,
) -> None:
    """Whether applying the scheme to ``args`` is consistent; changes nothing.

    ``instantiate`` against ``args`` with no results and no capture binding
    (capture inputs are only related to the references' current state), then
    everything written is put back: an argument-dependent shape error raises
    as ``instantiate``'s does, and the session is unchanged either way. It
    costs what ``instantiate`` does, whatever the size of the rest of the
    session (only the variable counter moves on: ids are never reused).
    """
    prefix, arg_shapes, _ = _check_application(
        sc, application, args, None, with_results=False
    )
    sabotages = _sabotages(sabotage, prefix)
    with sc.session.rewind():
        _apply(
            sc, prefix, application, arg_shapes, None, sabotages, None, checking=True
        )
