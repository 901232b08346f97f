"""Reading a scheme off a traced function (:func:`trace`)."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NoReturn

from axisflow.shapes.constraints import (
    CaptureBind,
    Constraint,
    DimAtLeast,
    DimEq,
    DimIneq,
    DimLinear,
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
from axisflow.shapes.refs import DimRef
from axisflow.shapes.scheme.data import (
    Anchor,
    CaptureInput,
    Fact,
    InternalRows,
    LooseVariable,
    Padding,
    Rows,
    Sabotage,
    ShapeLike,
    UntraceableScheme,
    fact_terms,
    fail,
    sabotage_set,
    shapes_of,
    term_vars,
)
from axisflow.shapes.scheme.model import (
    Scheme,
)
from axisflow.shapes.session import Session, Window
from axisflow.shapes.solver import marks_of_bits
from axisflow.shapes.tensors import Shape
from axisflow.shapes.terms import (
    KINDS,
    Dim,
    DimVar,
    Kind,
    Origin,
    Row,
    RowVar,
    Size,
)
from axisflow.shapes.trail import MISSING


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
        self._dim_link = solver.dim_link
        self._row_link = solver.row_link
        self._dims_before, self._rows_before = solver.links_before(trail_start)
        self.dims: dict[int, Dim] = {}
        self.rows: dict[int, Row] = {}
        self.placeholders: dict[DimVar | RowVar, DimVar | RowVar] = {}

    def _dim_value(self, var_id: int) -> Dim | None:
        """The solver entry of an old dim variable when the trace began."""
        if var_id in self._dims_before:
            value = self._dims_before[var_id]
            return None if value is MISSING else value
        return self._dim_link(var_id)

    def _row_value(self, var_id: int) -> Row | None:
        """The solver entry of an old row variable when the trace began."""
        if var_id in self._rows_before:
            value = self._rows_before[var_id]
            return None if value is MISSING else value
        return self._row_link(var_id)

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
        if isinstance(constraint, SetDim) and id(constraint.ref) in self.inputs:
            self.refuse(
                f"set_dim on the capture reference '{constraint.ref.label}', made "
                f"outside the traced window; a scheme cannot carry that (bind the "
                f"reference in the function and set it outside)"
            )

    def related(self, operation: str, ref: DimRef) -> None:
        if id(ref) in self.inputs:
            self.refuse(
                f"{operation} relates the capture reference '{ref.label}', made "
                f"outside the traced window; a scheme cannot carry that (relate the "
                f"references outside the function)"
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
        fail(prefix, f"needs a Session, got {session!r}")
    sabotages = sabotage_set(sabotage, prefix)
    window = session.window
    if window is None:
        fail(
            prefix,
            "trace must run inside session.rewind(), which undoes the trace; "
            "open a window first",
        )
    if (
        isinstance(var_mark, bool)
        or not isinstance(var_mark, int)
        or not 0 <= var_mark <= session.var_mark()
    ):
        fail(
            prefix, f"var_mark must be a value of session.var_mark(), got {var_mark!r}"
        )
    if not callable(f):
        fail(prefix, f"f must be callable, got {f!r}")
    tracers = shapes_of(args, session, "argument", prefix)
    for index, tracer in enumerate(tracers):
        if tracer.created_at < var_mark:
            fail(
                prefix,
                f"argument {index} ('{tracer.name}') was made before var_mark was "
                f"read, so its variables would be fixed, not generalized; make the "
                f"tracers after reading var_mark",
            )
    if len({id(t) for t in tracers}) != len(tracers):
        fail(prefix, "the same shape is given as two arguments")

    trail = session.trail
    trail_start = len(trail.entries)
    log_start = len(session.log)
    shapes_start = len(session.registered_shapes)
    # Capture references made before the call are the scheme's inputs: they
    # read as unbound while f runs, so the scheme does not depend on them.
    inputs = [ref for ref in session.refs if not ref.discarded]
    saved = [(ref, ref.var, ref.row, ref.size) for ref in inputs]
    for ref in inputs:
        trail.set_attr(ref, "var", None)
        trail.set_attr(ref, "row", None)
        trail.set_attr(ref, "size", None)
    guard = _TraceGuard(prefix, frozenset(id(ref) for ref in inputs))
    try:
        with (
            session.guard_forcing(guard.forcing),
            session.guard_relations(guard.related),
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
        for ref, var, row, size in saved:
            trail.set_attr(ref, "var", var)
            trail.set_attr(ref, "row", row)
            trail.set_attr(ref, "size", size)
    if guard.refusal is not None:
        # f caught the refusal and went on: the scheme is still untraceable.
        raise UntraceableScheme(prefix + guard.refusal)
    results = shapes_of(returned, session, "result", prefix)
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


@dataclass
class _ReadOff:
    """What the read-off of a trace knows, in scheme terms.

    Built by :func:`_read_off` before the scratch window opens (the
    boundary, anchor and internal rows, the placeholders) and completed in it
    (the fixed-index minima, where the window's terminals start, the capture
    inputs); :func:`_normal_form` reads the scheme off it.
    """

    session: Session
    label: str
    tracers: tuple[Shape, ...]
    results: tuple[Shape, ...]
    internal: tuple[Shape, ...]
    anchor_shapes: tuple[Shape, ...]
    anchor_terms: list[Rows]
    arg_terms: list[Rows]
    result_terms: list[Rows]
    internal_terms: list[Rows]
    placeholders: dict[DimVar | RowVar, DimVar | RowVar]
    held: set[DimVar | RowVar]
    scheme_mark: int = 0
    terminals_start: int = 0
    at_least: list[DimAtLeast] = field(default_factory=list)
    captures: list[tuple[DimRef, DimRef, Origin]] = field(default_factory=list)
    # The variable counter at each capture input's first binding (pending
    # facts with smaller ids were added before it).
    capture_marks: list[int] = field(default_factory=list)
    # Padded convolution axes: (where, index, kind, axis, kernel term, origin).
    paddings: list[tuple[str, int, Kind, int, Dim, Origin]] = field(
        default_factory=list
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
    context = _ReadOff(
        session=session,
        label=label,
        tracers=tracers,
        results=results,
        internal=internal,
        anchor_shapes=tuple(anchor_shapes),
        anchor_terms=anchor_terms,
        arg_terms=[pre.rows3(shape) for shape in tracers],
        result_terms=[pre.rows3(shape) for shape in results],
        internal_terms=[pre.rows3(shape) for shape in internal],
        placeholders=pre.placeholders,
        held=held,
        scheme_mark=scheme_mark,
    )
    input_ids = {id(ref): ref for ref in inputs}
    capture_origins: dict[int, Origin] = {}
    capture_marks: dict[int, int] = {}
    # The shape (and its row kind) holding each stored row: a padded axis
    # names the row of the shape a convolution reads.
    holders: dict[int, tuple[str, int, Kind]] = {}
    for where, shapes in (
        ("anchor", anchor_shapes),
        ("internal", internal),
        ("arg", tracers),
    ):
        for index, shape in enumerate(shapes):
            for kind, stored in zip(KINDS, shape.rows(), strict=True):
                holders[id(stored)] = (where, index, kind)

    with session.rewind() as scratch:
        context.terminals_start = session.solver.terminal_count()
        proxies: dict[int, DimRef] = {}

        def proxy(ref: DimRef) -> DimRef:
            found = proxies.get(id(ref))
            if found is None:
                found = proxies[id(ref)] = session.dim_ref(ref.label)
            return found

        for constraint in constraints:
            replay = _substitute(constraint, pre, proxy)
            if isinstance(replay, DimAtLeast):
                context.at_least.append(replay)
            if isinstance(constraint, PaddedAxis):
                holder = holders.get(id(constraint.row))
                if holder is None:
                    raise UntraceableScheme(
                        f"{prefix}{constraint.origin.describe()} pads an axis of a "
                        f"shape that is neither an argument, an anchor nor made by "
                        f"the function; a scheme cannot name it"
                    )
                assert isinstance(replay, PaddedAxis)
                where, index, kind = holder
                context.paddings.append(
                    (
                        where,
                        index,
                        kind,
                        constraint.index,
                        replay.kernel,
                        constraint.origin,
                    )
                )
            if (
                isinstance(constraint, CaptureBind)
                and id(constraint.ref) in input_ids
                and id(constraint.ref) not in capture_origins
            ):
                capture_origins[id(constraint.ref)] = constraint.origin
                capture_marks[id(constraint.ref)] = session.var_mark()
            try:
                session.add(replay)
            except ShapeError as error:
                if validate:
                    raise ShapeError(prefix + error.message, error.origins) from error
                # NO_END_VALIDATION: the contradiction is not the trace's
                # concern; the constraint is left out of the scheme.
        bound = [ref_id for ref_id in capture_origins if proxies[ref_id].is_bound]
        context.captures = [
            (input_ids[ref_id], proxies[ref_id], capture_origins[ref_id])
            for ref_id in bound
        ]
        context.capture_marks = [capture_marks[ref_id] for ref_id in bound]
        return _normal_form(context, scratch)


def _pending_before(pending_ids: Sequence[int], mark: int) -> int | None:
    """How many of the pending facts (their ids, ascending) came before the
    variable counter stood at ``mark``; ``None`` when all of them did."""
    before = bisect.bisect_left(pending_ids, mark)
    return None if before == len(pending_ids) else before


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
        count = constraint.count
        return TotalElems(
            tuple(pre.row(r) for r in constraint.rows),
            pre.dim(count) if isinstance(count, DimVar | Size) else count,
            constraint.origin,
        )
    if isinstance(constraint, DimAtLeast):
        return DimAtLeast(pre.dim(constraint.dim), constraint.n, constraint.origin)
    if isinstance(constraint, Terminal):
        return Terminal(pre.row(constraint.row), constraint.is_param, constraint.origin)
    if isinstance(constraint, PolicyMark):
        return PolicyMark(pre.row(constraint.row), constraint.mark, constraint.origin)
    if isinstance(constraint, CaptureBind):
        bound = proxy(constraint.ref)
        if type(constraint.var) is RowVar:
            # A row capture (the row's element count): bind a bare row variable.
            row = pre.row(Row((), constraint.var))
            if row.var is not None and not row.dims:
                return CaptureBind(bound, row.var, constraint.origin)
            fresh_row = pre.session.fresh_row_var()
            pre.session.add(RowEq(Row((), fresh_row), row, constraint.origin))
            return CaptureBind(bound, fresh_row, constraint.origin)
        var = pre.dim(constraint.var)
        if type(var) is DimVar:
            return CaptureBind(bound, var, constraint.origin)
        # The label's variable was solved before the trace: bind a fresh one.
        fresh = pre.session.fresh_dim_var()
        pre.session.add(DimEq(fresh, var, constraint.origin))
        return CaptureBind(bound, fresh, constraint.origin)
    if isinstance(constraint, DimLinear):
        return DimLinear(
            tuple((coeff, pre.dim(dim)) for coeff, dim in constraint.terms),
            constraint.const,
            constraint.names,
            constraint.text,
            constraint.origin,
            constraint.kind,
        )
    if isinstance(constraint, RowPrefix):
        return RowPrefix(
            pre.row(constraint.whole),
            tuple(pre.dim(dim) for dim in constraint.beg),
            pre.row(constraint.rest),
            constraint.origin,
        )
    if isinstance(constraint, PaddedAxis):
        return PaddedAxis(
            pre.row(constraint.row),
            constraint.index,
            pre.dim(constraint.kernel),
            constraint.origin,
        )
    return SetDim(proxy(constraint.ref), constraint.size, constraint.origin)


def _normal_pending(
    pending: TotalElems | DimLinear | RowPrefix,
    norm_row: Callable[[Row], Row],
    find_dim: Callable[[Dim], Dim],
) -> Fact:
    """A pending equation of the scratch solution, its terms normalized."""
    if isinstance(pending, TotalElems):
        count = pending.count
        if isinstance(count, DimVar | Size):
            # A count solved to a size is that number of elements.
            count = find_dim(count)
            if type(count) is Size:
                count = count.n
        return TotalElems(
            tuple(norm_row(r) for r in pending.rows), count, pending.origin
        )
    if isinstance(pending, DimLinear):
        return DimLinear(
            tuple((coeff, find_dim(dim)) for coeff, dim in pending.terms),
            pending.const,
            pending.names,
            pending.text,
            pending.origin,
            pending.kind,
        )
    return RowPrefix(
        norm_row(pending.whole),
        tuple(find_dim(dim) for dim in pending.beg),
        norm_row(pending.rest),
        pending.origin,
    )


def _normal_form(context: _ReadOff, scratch: Window) -> Scheme:
    """Read the scratch solution off as a scheme (inside the scratch window)."""
    session = context.session
    solver = session.solver
    norm_row = solver.norm_row
    find_dim = solver.find_dim
    scheme_mark = context.scheme_mark

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
        var = DimVar(var_id)
        lower = solver.dim_lower_bound(var_id)
        if lower is not None:
            facts.append(DimIneq(lower[0], var, lower[1]))
        for res, origin in solver.dim_results(var_id):
            root = find_dim(res)
            if type(root) is DimVar and root != var and (root.id, var_id) not in pairs:
                pairs.add((root.id, var_id))
                facts.append(DimIneq(root, var, origin))
    for constraint in context.at_least:
        dim = find_dim(constraint.dim)
        if type(dim) is DimVar:
            facts.append(DimAtLeast(dim, constraint.n, constraint.origin))
    row_pairs: set[tuple[int, int]] = set()
    for var_id in row_ids:
        var = RowVar(var_id)
        seen_glbs: set[Row] = set()
        for glb, origin in solver.row_lower_bounds(var_id):
            glb = norm_row(glb)
            if glb not in seen_glbs:
                seen_glbs.add(glb)
                facts.append(RowIneq(glb, Row((), var), origin))
        for res, origin in solver.row_results(var_id):
            root = bare(res)
            if root is not None and root != var and (root.id, var_id) not in row_pairs:
                row_pairs.add((root.id, var_id))
                facts.append(RowIneq(Row((), root), Row((), var), origin))
    # Pending totals, linear equations (affine, strided, convolution and
    # concatenated axes) and row prefixes, in the order they were added.
    pending_ids = solver.pending_ids_since(scratch.trail_start)
    facts.extend(
        _normal_pending(pending, norm_row, find_dim)
        for pending in map(solver.pending, pending_ids)
    )
    for terminal in solver.terminals_since(context.terminals_start):
        row = norm_row(terminal.row)
        if not row.is_concrete():
            facts.append(Terminal(row, terminal.is_param, terminal.origin))
    marks: list[tuple[RowVar, Mark]] = []
    gens: list[tuple[RowVar, int]] = []
    for var_id in row_ids:
        if solver.is_row_solved(var_id):
            continue
        bits = solver.mark_bits(var_id)
        marks.extend((RowVar(var_id), mark) for mark in sorted(marks_of_bits(bits)))
        gen = solver.template_depth(var_id)
        if gen:
            gens.append((RowVar(var_id), gen))
    capture_inputs = tuple(
        CaptureInput(
            ref,
            find_dim(bound.var)
            if bound.var is not None
            else norm_row(Row((), bound.row)),  # type: ignore[arg-type]
            origin,
            _pending_before(pending_ids, mark),
        )
        for (ref, bound, origin), mark in zip(
            context.captures, context.capture_marks, strict=True
        )
    )
    placeholders = context.placeholders
    paddings = tuple(
        Padding(where, index, kind, axis, find_dim(kernel), origin)
        for where, index, kind, axis, kernel, origin in context.paddings
    )
    loose = tuple(
        LooseVariable(
            old,
            find_dim(placeholder)
            if type(placeholder) is DimVar
            else norm_row(Row((), placeholder)),  # type: ignore[arg-type]
        )
        for placeholder, old in placeholders.items()
        if placeholder not in context.held
    )

    args = tuple(rows3(t) for t in context.arg_terms)
    result_rows = tuple(rows3(t) for t in context.result_terms)
    anchors = tuple(
        Anchor(shape, rows3(terms))
        for shape, terms in zip(
            context.anchor_shapes, context.anchor_terms, strict=True
        )
    )
    internal_rows = tuple(
        InternalRows(shape.name, rows3(terms))
        for shape, terms in zip(context.internal, context.internal_terms, strict=True)
    )

    # Every open variable the scheme mentions, in order of first mention.
    mentioned: dict[DimVar | RowVar, None] = {}

    def mention(term: Dim | Row) -> None:
        for v in term_vars(term):
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
        for term in fact_terms(fact):
            mention(term)
    for capture in capture_inputs:
        mention(capture.dim)
    for padding in paddings:
        mention(padding.kernel)
    for item in loose:
        mention(item.term)
    fixed_set: set[DimVar | RowVar] = set()
    for placeholder in placeholders:
        term = (
            find_dim(placeholder)
            if type(placeholder) is DimVar
            else norm_row(Row((), placeholder))  # type: ignore[arg-type]
        )
        fixed_set.update(term_vars(term))
    marks = [(v, m) for v, m in marks if v in mentioned]
    gens = [(v, g) for v, g in gens if v in mentioned]
    return Scheme(
        session=session,
        label=context.label,
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
        arg_names=tuple(t.name for t in context.tracers),
        result_names=tuple(r.name for r in context.results),
        traced_args=context.tracers,
        traced_results=context.results,
        traced_internal=context.internal,
        paddings=paddings,
    )
