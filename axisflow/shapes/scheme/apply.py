"""Applying a scheme: :func:`instantiate`, :func:`check`, :func:`stale`.

An application renames the scheme's variables, relates its boundary rows to
the call's shapes and writes its compiled facts; presolved internal rows
(:mod:`.presolve`) cost nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from weakref import WeakKeyDictionary

from axisflow.gc_pause import collector_paused
from axisflow.shapes.constraints import (
    CaptureBind,
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
    Terminal,
    TotalElems,
)
from axisflow.shapes.errors import ShapeError
from axisflow.shapes.scheme.data import (
    AT_LEAST,
    DIM_INEQ,
    LINEAR,
    PREFIX,
    ROW_INEQ,
    TERMINAL,
    TOTAL,
    CaptureInput,
    Padding,
    Sabotage,
    ShapeLike,
    fail,
    sabotage_set,
    shapes_of,
)
from axisflow.shapes.scheme.model import (
    Application,
    Scheme,
)
from axisflow.shapes.scheme.presolve import (
    Solved,
    Value,
    Var,
    concrete_internal,
    facts_to_add,
    presolve_plan,
    presolved,
)
from axisflow.shapes.session import Session
from axisflow.shapes.tensors import Shape
from axisflow.shapes.terms import (
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
    arg_shapes = shapes_of(args, session, "argument", prefix)
    result_shapes = (
        shapes_of(results, session, "result", prefix) if with_results else ()
    )
    if len(arg_shapes) != sc.arity:
        fail(
            prefix,
            f"the scheme takes {sc.arity} argument(s) but {len(arg_shapes)} were given",
        )
    if with_results and len(result_shapes) != sc.num_results:
        fail(
            prefix,
            f"the scheme has {sc.num_results} result(s) but {len(result_shapes)} "
            f"were given",
        )
    for anchor in sc.anchors:
        if anchor.shape.discarded:
            fail(
                prefix,
                f"the anchored shape '{anchor.shape.name}' was discarded by a rewind; "
                f"trace the function again",
            )
    for capture in sc.captures:
        if capture.ref.discarded:
            fail(
                prefix,
                f"the capture reference '{capture.ref.label}' was discarded by a "
                f"rewind; trace the function again",
            )
    if stale(sc):
        names = ", ".join(repr(item.old) for item in sc.loose)
        fail(
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
        self._paths: dict[str | None, str] = {}

    def _side(self, side: Side | None) -> Side | None:
        if side is None or side.tensor not in self.names:
            return side
        return Side(self.names[side.tensor], side.kind)

    def _stamp(self, origin: Origin) -> Origin:
        inner = origin.application
        operands = origin.operands
        lhs, rhs = origin.lhs, origin.rhs
        if self.names and any(name in self.names for name in operands):
            operands = tuple([self.names.get(name, name) for name in operands])
        if self.names:
            lhs, rhs = self._side(lhs), self._side(rhs)
        # One string per inner application: the origins of a nested scheme
        # share a few paths, and each application keeps the origins it uses.
        application = self._paths.get(inner)
        if application is None:
            application = self._paths[inner] = (
                self.application if inner is None else f"{self.application} > {inner}"
            )
        return Origin(
            origin.operation,
            origin.tensor,
            operands,
            lhs,
            rhs,
            origin.detail,
            self.label,
            application,
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
    dims: dict[DimVar, Dim], rows: dict[RowVar, RowVar], solved: dict[Var, Value]
) -> Callable[[Row], Row]:
    """Rename a scheme row for one application (presolved variables by their
    value: ``dims`` maps a presolved dim to its size).

    A row that comes out concrete is the same for every application with the
    same presolved values: it is kept on them and shared (``Solved.rows``).
    """
    shared: dict[int, Row] | None = getattr(solved, "rows", None)
    templated: dict[Var, int] = getattr(solved, "templated", {})

    def renamed(r: Row) -> Row:
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
            if var in templated:
                return Row(value.dims + r_dims, rows[var])  # type: ignore[union-attr, index]
            return Row(value.dims + r_dims) if r_dims else value  # type: ignore[union-attr, return-value]
        new_var = rows.get(var, var)
        return r if new_var is var and r_dims is r.dims else Row(r_dims, new_var)

    if shared is None:
        return renamed

    def row(r: Row) -> Row:
        found = shared.get(id(r))
        if found is not None:
            return found
        made = renamed(r)
        if made.var is None and all(type(d) is Size for d in made.dims):
            shared[id(r)] = made
        return made

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
    pre = presolve_plan(sc)
    solved: dict[Var, Value] = (
        presolved(sc, pre, args, results or (), solver.norm_row)
        if pre is not None and not sabotages and not trail.depth
        else {}
    )
    # Tied rows presolved as templates: their axes, and a tail of their own.
    templated: dict[Var, int] = getattr(solved, "templated", {})
    if Sabotage.NO_GENERALIZATION in sabotages:
        dims: dict[DimVar, Dim] = {}
        rows: dict[RowVar, RowVar] = {}
    else:
        mint = session.fresh_dim_var
        dims = {
            v: solved[v] if v in solved else mint()  # type: ignore[misc]
            for v in sc._dims
        }
        mint_row = session.fresh_row_var
        rows = {v: mint_row() for v in sc._rows if v not in solved or v in templated}  # type: ignore[misc]

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
        # One tick for all: the shapes are made together (an int each would
        # cost memory per internal tensor of every call site).
        tick = session.tick()
        made = [
            (item.name, row(item.rows[0]), row(item.rows[1]), row(item.rows[2]))
            for item in sc.internal
        ]
        settled = (
            concrete_internal(sc, solved, made)
            if register and isinstance(solved, Solved)
            else frozenset()
        )
        internal = tuple(
            new_shape(
                name,
                batch,
                input_,
                output,
                register=register and index not in settled,
                created_at=tick,
            )
            for index, (name, batch, input_, output) in enumerate(made)
        )
        # Register before solving: a contradiction leaves them registered,
        # with the session tainted, as a failed construction would.
        for shape in boundary:
            session.register_shape(shape)
    for shape in boundary:
        session.note_use(shape)
    add = session.add
    untemplated = _untemplated_tails(sc, args, sabotages, solver.norm_row)
    try:
        # Template depths first: they bound the axes later templates may add.
        for var, gen in sc.gens:
            if var in solved:
                continue
            solver.raise_template_depth(rows.get(var, var).id, gen)
        for var, depth in templated.items():
            solver.raise_template_depth(rows[var].id, depth)  # type: ignore[index]
        norm_row = solver.norm_row

        def holds(renamed: Row, actual: Row) -> bool:
            # A concrete renamed row (written so, or settled from this very
            # actual row) equal to the actual one: the equality adds nothing.
            return renamed.var is None and (
                renamed == actual or norm_row(actual) == renamed
            )

        # The boundary equalities first, as running the body on the arguments would.
        for index, (terms, shape) in enumerate(zip(sc.args, args, strict=True)):
            traced = sc.arg_names[index]
            for kind, term in zip(KINDS, terms, strict=True):
                renamed, actual = row(term), shape.row(kind)
                if holds(renamed, actual):
                    continue
                origin = _boundary_origin(stamp, "argument", index, traced, shape, kind)
                add(RowEq(renamed, actual, origin))
        for index, (terms, shape) in enumerate(
            zip(sc.results, results or (), strict=False)
        ):
            traced = sc.result_names[index]
            for kind, term in zip(KINDS, terms, strict=True):
                renamed, actual = row(term), shape.row(kind)
                if holds(renamed, actual):
                    continue
                origin = _boundary_origin(stamp, "result", index, traced, shape, kind)
                add(RowEq(renamed, actual, origin))
        if Sabotage.SEVER_SHARED not in sabotages:
            for anchor in sc.anchors:
                shape = anchor.shape
                session.note_use(shape)
                for kind, term in zip(KINDS, anchor.rows, strict=True):
                    current = shape.row(kind)
                    renamed = row(term)
                    if holds(renamed, current):
                        continue
                    origin = stamp.new(
                        "anchor",
                        shape.name,
                        (),
                        Side(f"{shape.name} as traced", kind),
                        Side(shape.name, kind),
                        "a pre-existing shape",
                    )
                    add(RowEq(renamed, current, origin))
            for item in sc.loose:
                origin = stamp.new("fixed variable", repr(item.old))
                if type(item.old) is DimVar:
                    add(DimEq(dim(item.term), item.old, origin))  # type: ignore[arg-type]
                else:
                    add(RowEq(row(item.term), Row((), item.old), origin))  # type: ignore[arg-type]
        origin_at_index = stamp.at
        # Capture inputs the body bound before one of its pending facts are
        # bound at that place (their counts keep their order among the
        # totals); the others after everything else, as before.
        early = (
            sorted(
                (c for c in sc.captures if c.before is not None),
                key=lambda c: c.before,  # type: ignore[arg-type, return-value]
                reverse=True,
            )
            if Sabotage.NO_REF_INPUTS not in sabotages
            else []
        )
        pending = 0
        for code, first, second, origin_at in facts_to_add(sc, pre, solved):
            origin = origin_at_index(origin_at)
            if code >= TOTAL:
                while early and early[-1].before <= pending:  # type: ignore[operator]
                    _bind_input(session, early.pop(), dim, row, stamp, checking)
                pending += 1
            if code == ROW_INEQ:
                add(RowIneq(row(first), row(second), origin))  # type: ignore[arg-type]
            elif code == DIM_INEQ:
                add(DimIneq(dim(first), dim(second), origin))  # type: ignore[arg-type]
            elif code == TERMINAL:
                add(Terminal(row(first), second, origin))  # type: ignore[arg-type]
            elif code == AT_LEAST:
                add(DimAtLeast(dim(first), second, origin))  # type: ignore[arg-type]
            elif code == LINEAR:
                linear: DimLinear = second  # type: ignore[assignment]
                add(
                    DimLinear(
                        tuple([(c, dim(d)) for c, d in linear.terms]),
                        linear.const,
                        linear.names,
                        linear.text,
                        origin,
                        linear.kind,
                    )
                )
            elif code == PREFIX:
                whole, rest = first  # type: ignore[misc]
                beg = tuple([dim(d) for d in second])  # type: ignore[union-attr]
                add(RowPrefix(row(whole), beg, row(rest), origin))
            else:
                renamed = tuple(row(r) for r in first)  # type: ignore[union-attr]
                count = dim(second) if type(second) is DimVar else second  # type: ignore[arg-type]
                add(TotalElems(renamed, count, origin))  # type: ignore[arg-type]
        for padding in sc.paddings:
            _pad(session, sc, padding, args, internal, sabotages, dim, stamp)
        if Sabotage.NO_MARKS not in sabotages or checking:
            mark_origin = stamp.new("policy mark", sc.label)
            marked_safe: set[RowVar] = set()
            for var, mark in sc.marks:
                if var in templated:
                    # Re-evaluation's template tail takes the row's marks.
                    add(PolicyMark(Row((), rows[var]), mark, mark_origin))  # type: ignore[index]
                    continue
                if var in solved:
                    continue  # a closed row takes no marks
                if mark is Mark.SAFE_TO_GUESS:
                    if var in untemplated:
                        continue  # re-running the body would make no template here
                    marked_safe.add(var)
                add(PolicyMark(Row((), rows.get(var, var)), mark, mark_origin))
            for var in templated:
                # A template's tail is safe to guess (the solver's templates).
                tail = Row((), rows[var])  # type: ignore[index]
                add(PolicyMark(tail, Mark.SAFE_TO_GUESS, mark_origin))
            for var in _templated_tails(sc, args, sabotages, solver.norm_row):
                if var not in solved and var not in marked_safe:
                    safe = Row((), rows.get(var, var))
                    add(PolicyMark(safe, Mark.SAFE_TO_GUESS, mark_origin))
                    marked_safe.add(var)
        # Every pending fact is in every plan (presolving skips inequalities
        # only) and ``before`` counts below their number, so each early
        # capture was bound at its place above.
        assert not early
        if Sabotage.NO_REF_INPUTS not in sabotages:
            for capture in sc.captures:
                if capture.before is None:
                    _bind_input(session, capture, dim, row, stamp, checking)
    except ShapeError as error:
        raise ShapeError(prefix + error.message, error.origins) from error
    return internal


def _pad(
    session: Session,
    sc: Scheme,
    padding: Padding,
    args: tuple[Shape, ...],
    internal: tuple[Shape, ...],
    sabotages: frozenset[Sabotage],
    dim: Callable[[Dim], Dim],
    stamp: _Stamp,
) -> None:
    """A padded convolution axis of the application's shape, as the einsum
    registers it: the next closing gives the row its margins."""
    if padding.where == "arg":
        shape = args[padding.index]
    elif padding.where == "anchor":
        if Sabotage.SEVER_SHARED in sabotages:
            return
        shape = sc.anchors[padding.index].shape
    elif internal:
        shape = internal[padding.index]
    else:
        return  # check makes no internal shapes: nothing to pad
    if padding.where != "internal":
        session.register_shape(shape)  # its closing publishes the margins
    session.add(
        PaddedAxis(
            shape.row(padding.kind),
            padding.axis,
            dim(padding.kernel),
            stamp(padding.origin),
        )
    )


def _boundary_tails(
    sc: Scheme, args: tuple[Shape, ...], sabotages: frozenset[Sabotage]
) -> Iterator[tuple[Row, Row]]:
    """Each argument and anchor row of the scheme that has an open tail, with
    the shape's row at this application (anchors not under
    ``SEVER_SHARED``)."""
    for terms, shape in zip(sc.args, args, strict=True):
        for kind, term in zip(KINDS, terms, strict=True):
            if term.var is not None:
                yield term, shape.row(kind)
    if Sabotage.SEVER_SHARED not in sabotages:
        for anchor in sc.anchors:
            for kind, term in zip(KINDS, anchor.rows, strict=True):
                if term.var is not None:
                    yield term, anchor.shape.row(kind)


_TEMPLATED_ITSELF: WeakKeyDictionary[Scheme, frozenset[RowVar]] = WeakKeyDictionary()


def _templated_itself(sc: Scheme) -> frozenset[RowVar]:
    """The ``safe_to_guess`` tails of rows templated themselves: on the
    result side of an inequality that is not into its operation's own
    tensor (a compose's left operand's input row); found once per scheme."""
    found = _TEMPLATED_ITSELF.get(sc)
    if found is None:
        safe = {var for var, mark in sc.marks if mark is Mark.SAFE_TO_GUESS}
        found = frozenset(
            first.var  # type: ignore[union-attr]
            for code, first, _, at in sc._plan
            if code == ROW_INEQ
            and first.var in safe  # type: ignore[union-attr]
            and not _on_the_result(sc._origins[at])  # type: ignore[arg-type]
        )
        _TEMPLATED_ITSELF[sc] = found
    return found


def _untemplated_tails(
    sc: Scheme,
    args: tuple[Shape, ...],
    sabotages: frozenset[Sabotage],
    norm_row: Callable[[Row], Row],
) -> frozenset[RowVar]:
    """Tails of argument and anchor rows whose ``safe_to_guess`` mark must not be written.

    Stage 1 marks the tail of a template ``safe_to_guess``: an open row that
    must take more axes gets ``[...t, fresh dims]``. A tracer's rows are
    wholly open, so the scheme's argument rows carry such tails; so may an
    anchor row open at the trace. Re-running the body on an argument whose
    row already has those axes (or more, or none open) makes no template, and
    its own tail is no safer to guess; the boundary equality would give it
    the mark nonetheless. So the mark is written only where the actual row is
    open and shorter than the scheme's.

    Only a compose puts an operand row on the result side of an inequality
    (its left operand's input row), so only there is a boundary row
    templated itself. A tail holds the mark of another row's template
    otherwise: an operation's fresh result row took one from an operand row
    with axes and was unified into the boundary row, giving its tail the
    mark. Re-running the body makes that template again (the operand keeps
    its axes: a constant's, or the argument or anchor row's, which the
    actual row has too), however long the boundary row is, so such a tail
    keeps its mark. (A tail a compose templated that a result row's template
    reaches too loses it; no program was found where re-evaluation differs.)
    """
    if not sc.marks:
        return frozenset()
    templated_itself = _templated_itself(sc)
    if not templated_itself:
        return frozenset()
    untemplated: set[RowVar] = set()
    for term, current in _boundary_tails(sc, args, sabotages):
        if term.var not in templated_itself:
            continue
        actual = norm_row(current)
        if actual.var is None or len(actual.dims) >= len(term.dims):
            untemplated.add(term.var)  # type: ignore[arg-type]
    return frozenset(untemplated)


_TEMPLATE_SOURCES: WeakKeyDictionary[Scheme, tuple[tuple[RowVar, int, RowVar], ...]] = (
    WeakKeyDictionary()
)


def _template_sources(sc: Scheme) -> tuple[tuple[RowVar, int, RowVar], ...]:
    """The inequalities ``[...x, axes] ⊒ [...tail]`` into the row of the
    tensor their operation makes whose operand ``tail`` is the open tail of
    an argument or anchor row, as (``x``, the result side's axes beyond the
    operand's, ``tail``); found once per scheme."""
    found = _TEMPLATE_SOURCES.get(sc)
    if found is None:
        tails = {
            term.var
            for rows in (*sc.args, *(a.rows for a in sc.anchors))
            for term in rows
            if term.var is not None
        }
        found = tuple(
            (
                first.var,  # type: ignore[union-attr]
                len(first.dims) - len(second.dims),  # type: ignore[union-attr]
                second.var,  # type: ignore[union-attr]
            )
            for code, first, second, at in sc._plan
            if code == ROW_INEQ
            and first.var is not None  # type: ignore[union-attr]
            and second.var in tails  # type: ignore[union-attr]
            and len(first.dims) > len(second.dims)  # type: ignore[union-attr]
            and _on_the_result(sc._origins[at])  # type: ignore[arg-type]
        )
        _TEMPLATE_SOURCES[sc] = found
    return found


def _on_the_result(origin: Origin) -> bool:
    """Whether an inequality's result side is the row of the tensor its
    operation makes (fresh at the operation, so bare until it takes axes),
    not an operand's (a compose's weight input row, say)."""
    lhs = origin.lhs
    return lhs is not None and lhs.tensor == origin.tensor


def _templated_tails(
    sc: Scheme,
    args: tuple[Shape, ...],
    sabotages: frozenset[Sabotage],
    norm_row: Callable[[Row], Row],
) -> list[RowVar]:
    """Result-side row variables that take the ``safe_to_guess`` mark at this
    application although the trace gave them none.

    Re-running the body relates an operation's fresh result row to an
    argument or anchor row as it is at the call: when that row has axes its
    open tail lacks in the trace (a tracer's row has none), Stage 1 gives
    the result row a template, whose tail is ``safe_to_guess``, and the
    mark reaches whatever the result row is unified with later (OCANNL's
    ``unify_row`` copies the marks both ways). The trace related the bare
    rows instead and unified the result row away, so its scheme keeps the
    inequality into the unified row, ``[...x, axes] ⊒ [...tail]``, and no
    mark. ``x`` takes it here where the actual row has axes beyond the ones
    the boundary row writes (the inverse of :func:`_untemplated_tails`), no
    more than ``axes`` (more make the application template ``x`` itself).
    Only inequalities into the operation's own tensor count: one into an
    operand's row (a compose's weight input) had its axes when it was made,
    and re-running makes no template there.
    """
    sources = _template_sources(sc)
    if not sources:
        return []
    extra = {
        term.var: len(norm_row(current).dims) - len(term.dims)
        for term, current in _boundary_tails(sc, args, sabotages)
    }
    return [
        var for var, axes, tail in sources if tail in extra and 0 < extra[tail] <= axes
    ]


def _bind_input(
    session: Session,
    capture: CaptureInput,
    dim: Callable[[Dim], Dim],
    row: Callable[[Row], Row],
    stamp: _Stamp,
    checking: bool,
) -> None:
    """Relate (and, but in check, bind) one capture input, renamed."""
    term = capture.dim
    renamed = row(term) if type(term) is Row else dim(term)  # type: ignore[arg-type]
    _capture(session, capture, renamed, stamp, checking)


def _capture(
    session: Session,
    capture: CaptureInput,
    term: Dim | Row,
    stamp: _Stamp,
    checking: bool,
) -> None:
    """Relate a capture input to its reference's state, and bind it (not in check).

    A row term (a captured row variable) stands for its element count: it is
    related to a dim or a size by a total, to a row by an equality, as the
    session relates two bindings of one reference.
    """
    origin = stamp(capture.origin)
    ref = capture.ref
    if checking:
        # Relate the input to the reference's current state; bind nothing.
        state: DimVar | RowVar | Size | None = (
            ref.var
            if ref.var is not None
            else ref.row
            if ref.row is not None
            else ref.size
        )
        if state is not None:
            what = "row variable" if type(term) is Row else "label"
            related = origin.with_sides(
                Side(f"{what} '{ref.label}'"),
                Side(f"capture reference '{ref.label}'"),
            )
            if type(term) is Row and type(state) is RowVar:
                session.add(RowEq(term, Row((), state), related))
            elif type(term) is Row:
                count = state.n if type(state) is Size else state
                session.add(TotalElems((term,), count, related))  # type: ignore[arg-type]
            elif type(state) is RowVar:
                session.add(TotalElems((Row((), state),), term, related))  # type: ignore[arg-type]
            else:
                session.add(DimEq(term, state, related))  # type: ignore[arg-type]
        return
    if type(term) is Row:
        if term.var is None or term.dims:
            # The captured row was (partly) solved in the scheme: bind a fresh
            # row variable equal to it, so the reference publishes its count.
            fresh_row = session.fresh_row_var()
            session.add(RowEq(Row((), fresh_row), term, origin))
            session.add(CaptureBind(ref, fresh_row, origin))
        else:
            session.add(CaptureBind(ref, term.var, origin))
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
    and the internal shapes with the next closing (but those presolving made
    concrete: they have nothing to close). Every added constraint's
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
    sabotages = sabotage_set(sabotage, prefix)
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
    sabotages = sabotage_set(sabotage, prefix)
    with sc.session.rewind():
        _apply(
            sc, prefix, application, arg_shapes, None, sabotages, None, checking=True
        )
