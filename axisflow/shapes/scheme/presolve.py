"""Presolving: the internal variables an application can solve outright.

See :func:`plan_presolve`. The plan is made once per scheme (on its first
application); the values are memoized per source values on the scheme.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final
from weakref import WeakKeyDictionary

from axisflow.shapes.concrete import join_rows
from axisflow.shapes.constraints import (
    DimAtLeast,
    DimIneq,
    RowIneq,
)
from axisflow.shapes.scheme.data import (
    ANCHOR,
    ARG,
    AT_LEAST,
    DIM_INEQ,
    RESULT,
    ROW_INEQ,
    fact_terms,
    row_vars,
    term_vars,
)
from axisflow.shapes.scheme.model import Scheme
from axisflow.shapes.solver import MAX_RANK
from axisflow.shapes.tensors import Shape
from axisflow.shapes.terms import (
    BROADCAST_UNIT,
    Dim,
    DimVar,
    Row,
    RowVar,
    Size,
)

Var = DimVar | RowVar
Value = Row | Size

CAPTURE: Final = 3
"""Where a source stands: a capture input (after argument, result, anchor)."""

DIM, AXIS, LEAD = range(3)
"""Kinds of bound: a dim's operand dim; the axis ``back`` positions from the
right of an operand row (a dim of a result row); an operand row without its
last ``back`` axes (the row variable of a result row)."""

Bound = tuple[int, Dim | Row, int]


@dataclass(frozen=True, slots=True)
class TiedFact:
    """An inequality bounding presolvable variables, some of them tied
    (:func:`_tied`), from below. It holds by construction where its operand
    side is presolved outright too; where an operand is a tied variable's
    template, it relates the two tails, as re-evaluation's inequality
    relates its templates' tails, and is added."""

    result: tuple[Var, ...]
    operand: tuple[Var, ...]


@dataclass(frozen=True, slots=True)
class Presolve:
    """The scheme's internal variables an application may solve outright.

    ``sources``: the boundary and anchor rows (where each stands:
    argument/result/anchor, index, kind index) whose variables an
    application reads off the actual row when it is concrete, and the
    capture inputs of labels (``CAPTURE``, index), which read the size their
    reference stands for when it is known. ``order``: the presolvable
    variables in dependency order, each with its lower bounds and its
    template depth (0 for a dim). ``skipped``: for each compiled fact, the
    variables on its result side if the fact only bounds presolvable
    variables from below (it holds once they are presolved), a
    :class:`TiedFact` if some of them are tied, else ``None``. ``guards``: for each variable of ``order``,
    the variables that must be known at an application for it to be
    presolved there (see :func:`_guards`). ``closed``: the operand rows of
    inequalities into a closed result row, with its number of axes: an
    operand with more axes is Stage 1's error, which a skipped inequality
    would not report (nothing is presolved then). ``fixed``: likewise, the
    sizes result rows write (an operand row, the position from the right,
    the size): an operand's axis there other than 1 and that size is Stage
    1's error. ``tied``: the row candidates an application presolves as a
    template only (see :func:`_tied`). ``settled``:
    the argument, result and anchor rows' variables, which an application
    takes from the actual row where that is concrete (its equality with the
    scheme's row would bind them so first) instead of minting them.
    """

    sources: tuple[tuple[tuple[int, int, int], Row], ...]
    order: tuple[tuple[Var, tuple[Bound, ...], int], ...]
    skipped: tuple[tuple[Var, ...] | TiedFact | None, ...]
    guards: tuple[frozenset[Var], ...]
    closed: tuple[tuple[Row, int], ...] = ()
    fixed: tuple[tuple[Row, int, Size], ...] = ()
    settled: frozenset[Var] = frozenset()
    tied: frozenset[Var] = frozenset()

    @property
    def source_vars(self) -> frozenset[Var]:
        """Every variable a source row holds."""
        return frozenset(v for _, row in self.sources for v in row_vars(row))


_PLANS: WeakKeyDictionary[Scheme, Presolve | None] = WeakKeyDictionary()


def presolve_plan(sc: Scheme) -> Presolve | None:
    """The scheme's presolve plan, made on its first application."""
    try:
        return _PLANS[sc]
    except KeyError:
        plan = _PLANS[sc] = plan_presolve(sc)
        return plan


def _fact_sides(
    code: int, first: object, second: object
) -> tuple[tuple[Var, ...], tuple[Var, ...]] | None:
    """The variables on the result and on the operand side of a compiled
    inequality (``None`` for every other fact)."""
    if code == ROW_INEQ:
        assert isinstance(first, Row) and isinstance(second, Row)
        return tuple(row_vars(first)), tuple(row_vars(second))
    if code == DIM_INEQ:
        return tuple(term_vars(first)), tuple(term_vars(second))  # type: ignore[arg-type]
    return None


def plan_presolve(sc: Scheme) -> Presolve | None:
    """Find the internal variables an application can solve outright.

    A generalized variable (row or dim) is a *candidate* when it occurs in no
    argument, anchor or result row, no total, linear equation, row prefix,
    terminal, capture or loose term, has no fixed-index minimum above 1, and
    otherwise occurs only in inequalities. An application mints it afresh,
    so nothing added later reaches it except as an operand, which never
    gives a row more axes nor an axis a size other than 1. So once what its
    lower bounds read is known (the application's concrete argument and
    anchor rows, the *sources*, or other candidates solved first), what
    Stage 1 and the closing make of it is known at once: for a row
    variable the broadcast join of its bounds (each result row's operand
    without the axes the result row writes after the variable), for a dim
    the size other than 1 among its bounds, else its minimum. That is what
    Stage 1 computes through templates one inequality at a time and the
    closing completes (open tails empty, free dims 1), provided the closing
    cannot read the variable through what lies above it: everything above
    (transitively) must be a candidate or a result's variable, and
    everything those broadcast from known at the application
    (:func:`_guards`). The boundary rows' variables are sources too, and
    an application settles them from the concrete actual rows
    (``settled``). ``None`` when there is nothing to presolve or settle.

    A row candidate closing's single-neighbour merge may equate (or its
    template's tail) with a result's variable, to which the caller may give
    axes later, is *tied* (:func:`_tied`): presolved as a template only.
    Dims have no such merge.
    """
    blocked: set[Var] = set()
    result_vars: set[Var] = set()
    anchor_vars: set[Var] = set()
    sources: list[tuple[tuple[int, int, int], Row]] = []
    boundary = (
        (ARG, sc.args),
        (RESULT, sc.results),
        (ANCHOR, tuple(a.rows for a in sc.anchors)),
    )
    for where, shapes in boundary:
        for index, rows in enumerate(shapes):
            for kind_index, row in enumerate(rows):
                (result_vars if where == RESULT else blocked).update(row_vars(row))
                if where == ANCHOR:
                    anchor_vars.update(row_vars(row))
                if any(type(d) is DimVar for d in row.dims) or row.var is not None:
                    sources.append(((where, index, kind_index), row))
    for item in sc.loose:
        blocked.add(item.old)
        blocked.update(term_vars(item.term))
    for padding in sc.paddings:
        blocked.update(term_vars(padding.kernel))
    for index, capture in enumerate(sc.captures):
        blocked.update(term_vars(capture.dim))
        if type(capture.dim) is DimVar:
            # A label's capture input takes the size its reference stands for
            # at the application, when it is known then.
            sources.append(((CAPTURE, index, 0), Row((capture.dim,))))
    bounds: dict[Var, list[Bound]] = {}
    closed: list[tuple[Row, int]] = []
    fixed: list[tuple[Row, int, Size]] = []
    # Every inequality as a graph: the variables each variable broadcasts
    # to (``above``) and those each one broadcasts from (``below``).
    above: dict[Var, list[Var]] = {}
    below: dict[Var, set[Var]] = {}
    # The row variables each result row's variable broadcasts from (what
    # closing's single-neighbour merge reads: dims have no such step).
    row_below: dict[RowVar, set[RowVar]] = {}
    row_above: dict[RowVar, set[RowVar]] = {}
    for fact in sc.facts:
        if isinstance(fact, RowIneq):
            res, opnd = fact.res, fact.opnd
            res_side, opnd_side = list(row_vars(res)), list(row_vars(opnd))
            for low in opnd_side:
                above.setdefault(low, []).extend(res_side)
            for high in res_side:
                below.setdefault(high, set()).update(opnd_side)
            if res.var is not None:
                bounds.setdefault(res.var, []).append((LEAD, opnd, len(res.dims)))
                if opnd.var is not None:
                    row_below.setdefault(res.var, set()).add(opnd.var)
                    row_above.setdefault(opnd.var, set()).add(res.var)
            else:
                closed.append((opnd, len(res.dims)))
            for position, dim in enumerate(res.dims):
                back = len(res.dims) - position
                if type(dim) is DimVar:
                    bounds.setdefault(dim, []).append((AXIS, opnd, back))
                else:
                    fixed.append((opnd, back, dim))  # type: ignore[arg-type]
        elif isinstance(fact, DimIneq):
            res_dim, opnd_dim = fact.res, fact.opnd
            if type(res_dim) is not DimVar:
                continue  # only an operand side: presolving keeps it
            bounds.setdefault(res_dim, []).append((DIM, opnd_dim, 0))
            below.setdefault(res_dim, set()).update(term_vars(opnd_dim))
            if type(opnd_dim) is DimVar:
                above.setdefault(opnd_dim, []).append(res_dim)
        elif isinstance(fact, DimAtLeast):
            if fact.n > 1:
                blocked.update(term_vars(fact.dim))
        else:
            for term in fact_terms(fact):
                blocked.update(term_vars(term))
    candidates = {
        v for v in sc.generalized if v not in blocked and v not in result_vars
    }
    # A result's variables may lie above a presolved variable: the result
    # shape is made for the application and read nowhere else.
    results_above = {v for v in result_vars if v not in blocked}
    tied, shared = _tied(candidates, results_above, row_below, row_above)
    candidates.difference_update(shared)
    guards = _guards(candidates, results_above, anchor_vars, above, below)
    candidates.intersection_update(guards)
    source_vars = {v for _, row in sources for v in row_vars(row)}
    # Kahn's order over the bounds: a candidate is presolvable once each
    # variable its bounds read is a source or presolvable itself. One that
    # reads anything else, itself or a cycle never becomes ready, nor do its
    # users.
    waiting: dict[Var, int] = {}
    users: dict[Var, list[Var]] = {}
    ready: list[Var] = []
    for var in candidates:
        needs = 0
        for _kind, term, _back in bounds.get(var, ()):
            for read in term_vars(term):
                if read in source_vars:
                    continue
                needs += 1
                users.setdefault(read, []).append(var)
        waiting[var] = needs
        if not needs:
            ready.append(var)
    ready.sort(key=lambda v: v.id)  # deterministic order
    order: list[Var] = []
    while ready:
        var = ready.pop()
        order.append(var)
        for user in users.get(var, ()):
            waiting[user] -= 1
            if not waiting[user]:
                ready.append(user)
    settled = frozenset(
        v for (where, _i, _k), row in sources if where != CAPTURE for v in row_vars(row)
    )
    if not order and not settled:
        return None
    gens = dict(sc.gens)
    presolvable = set(order)
    untied = presolvable.difference(tied)
    skipped: list[tuple[Var, ...] | TiedFact | None] = []
    for code, first, second, _origin in sc._plan:
        sides = _fact_sides(code, first, second)
        if code == AT_LEAST and type(first) is DimVar and first in untied:
            skipped.append((first,))  # a minimum of 1 (larger ones block)
        elif sides is not None and sides[0] and untied.issuperset(sides[0]):
            skipped.append(sides[0])
        elif sides is not None and sides[0] and presolvable.issuperset(sides[0]):
            skipped.append(TiedFact(sides[0], sides[1]))
        else:
            skipped.append(None)
    used = {
        read
        for var in order
        for _kind, term, _back in bounds.get(var, ())
        for read in term_vars(term)
    }
    used.update(g for var in order for g in guards[var])
    return Presolve(
        sources=tuple(
            (where, row)
            for where, row in sources
            if where[0] != CAPTURE or any(v in used for v in row_vars(row))
        ),
        order=tuple(
            (
                var,
                tuple(bounds.get(var, ())),
                gens.get(var, 0),  # type: ignore[call-overload, arg-type]
            )
            for var in order
        ),
        skipped=tuple(skipped),
        guards=tuple(guards[var] for var in order),
        closed=tuple(closed),
        fixed=tuple(fixed),
        settled=settled,
        tied=frozenset(tied.intersection(order)),
    )


def _tied(
    candidates: set[Var],
    results_above: set[Var],
    row_below: dict[RowVar, set[RowVar]],
    row_above: dict[RowVar, set[RowVar]],
) -> tuple[set[RowVar], set[RowVar]]:
    """The row candidates closing's single-neighbour merge may equate with a
    result's row variable: the one row variable a result's variable
    broadcasts from, when that one broadcasts to nothing else, the one
    that one broadcasts from on the same terms, and so on down.

    Re-evaluation leaves each of them bare where its bounds have no axes,
    else gives it a template whose tail is bare; the merge joins the bare
    ones along the chain, so what the caller gives the result's row later
    (a total on it, another call it is passed to, a merge above it) reaches
    all of them. An application therefore presolves a tied variable only
    as such a template (its axes, a fresh tail: ``Presolve.tied``), and
    not at all where it has no axes.

    Also returned: the rows the walk meets that broadcast to another row
    as well (*shared*). Whether re-evaluation's merge takes their tail
    depends on whether that other relation pairs the two tails or leaves
    the operand's a bound with axes (a longer row above it), which only
    the values tell; such a row is not presolved at all (nor, through the
    guards, anything below it), so that the application writes its
    relations as re-evaluation does.
    """
    tied: set[RowVar] = set()
    shared: set[RowVar] = set()
    for res in results_above:
        upper = res
        while type(upper) is RowVar:
            operands = row_below.get(upper, ())
            if len(operands) != 1:
                break
            (lower,) = operands
            if lower not in candidates or lower in tied:
                break
            if row_above.get(lower, set()) != {upper}:
                shared.add(lower)
                break
            tied.add(lower)
            upper = lower
    return tied, shared


def _guards(
    candidates: set[Var],
    results_above: set[Var],
    anchored: set[Var],
    above: dict[Var, list[Var]],
    below: dict[Var, set[Var]],
) -> dict[Var, frozenset[Var]]:
    """What each candidate's presolving depends on besides its own bounds.

    A presolved variable is concrete from the application on, where
    re-running the body leaves it open until closing, and closing reads open
    variables: its first step (OCANNL's stage 2) equates a bare ``res ⊑
    opnd`` pair of rows or dims that are each other's only neighbour (the
    operand then takes the result's other bounds), and a leaf row with no
    bounds of its own takes those of the rows it broadcasts to. So a
    variable is presolved only where everything it can meet that way is
    settled at the application: everything above it (transitively) is a
    candidate or a result's variable, and everything those broadcast from,
    and every candidate among them, is known at the application (a
    concrete source, or presolved itself). An anchor's variable (a tensor
    made outside the function, a parameter it reads) may lie above too: it
    is then a guard, so the candidate is presolved only at an application
    where the anchor's row is concrete (closed since, or sized by an earlier
    application): closing cannot read through it there. The guards are
    those variables; a candidate above which lies anything else (a leaf's
    row, a dim a total waits on) is dropped (absent from the map).
    """
    allowed = candidates | results_above | anchored
    guards: dict[Var, frozenset[Var]] = {}
    for var in candidates:
        seen = {var}
        stack = [var]
        needed: set[Var] = set()
        fine = True
        while stack and fine:
            node = stack.pop()
            if node not in allowed:
                fine = False
                break
            if node in candidates or node in anchored:
                needed.add(node)
            needed.update(below.get(node, ()))
            for res in above.get(node, ()):
                if res not in seen:
                    seen.add(res)
                    stack.append(res)
        if fine:
            needed.discard(var)
            guards[var] = frozenset(needed)
    return guards


def join_concrete(rows: Sequence[Row]) -> Row | None:
    """The broadcast join of concrete rows; ``None`` when two sizes other than 1 clash."""
    joined = join_rows([row.dims for row in rows])
    return None if joined is None else Row(joined)


def join_sizes(sizes: Iterable[Size]) -> Size | None:
    """The size other than 1 among ``sizes`` (else 1); ``None`` on a clash."""
    chosen: Size = BROADCAST_UNIT
    for size in sizes:
        if size.n != 1:
            if chosen.n == 1:
                chosen = size
            elif size != chosen:
                return None
    return chosen


def presolved(
    sc: Scheme,
    pre: Presolve,
    args: tuple[Shape, ...],
    results: tuple[Shape, ...],
    norm_row: Callable[[Row], Row],
) -> Solved:
    """The presolvable variables' values at this application (see :func:`plan_presolve`).

    Only those whose sources are all concrete now. Empty when a join clashes,
    would pass the template depth limit, or the
    sources disagree: the full application then reports the contradiction as
    re-running the body would.
    """
    actual: list[Row | None] = []
    for (kind, index, kind_index), _term in pre.sources:
        if kind == CAPTURE:
            size = sc.captures[index].ref.known_size()
            actual.append(None if size is None else Row((size,)))
            continue
        shape = (
            args[index]
            if kind == ARG
            else results[index]
            if kind == RESULT
            else sc.anchors[index].shape
        )
        current = norm_row(shape.rows()[kind_index])
        actual.append(current if current.is_concrete() else None)
    # The values are a function of the sources' values: call sites repeating
    # their argument shapes reuse them (the rows are immutable).
    key = tuple(actual)
    memo = sc._presolve_memo
    hit = memo.get(key)
    if hit is not None:
        return hit
    if len(memo) >= PRESOLVE_MEMO_SIZE:
        memo.clear()
    known = _read_sources(pre, actual)
    memo[key] = solved = Solved() if known is None else solve_presolvable(pre, known)
    return solved


class Solved(dict[Var, Value]):
    """Presolved values of one set of source values, and the application
    rows built from them.

    ``rows`` maps a scheme row (by identity: the scheme holds it) to its
    application row when that is concrete: applications with the same
    sources share those immutable rows instead of building their own.
    ``facts``: the scheme's compiled facts such an application still adds
    (see :func:`facts_to_add`), once computed. ``templated``: the tied
    variables among them (:func:`_tied`), each with its tail's template
    depth: their values are the axes of a template whose tail each
    application mints. ``concrete_shapes``: the internal shapes such an
    application makes concrete (:func:`concrete_internal`), once computed.
    """

    __slots__ = ("concrete_shapes", "facts", "rows", "templated")

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[int, Row] = {}
        self.facts: Sequence[tuple[Any, ...]] | None = None
        self.templated: dict[Var, int] = {}
        self.concrete_shapes: frozenset[int] | None = None


def concrete_internal(
    sc: Scheme, solved: Solved, made: Sequence[tuple[str, Row, Row, Row]]
) -> frozenset[int]:
    """The internal shapes (indices into ``sc.internal``) an application with
    these presolved values makes concrete, but the padded ones.

    Such a shape leaves the closing nothing to decide, so the application,
    which presolves outside rewind windows only (where no trace reads the
    shapes it registers), does not register it: the shape then lives only as
    long as its reader keeps it. A padded one is registered all the same,
    since its closing publishes its margins. ``made``: the application's
    internal shapes' names and rows. The answer depends on the presolved
    values alone, so it is kept on ``solved``, which applications with the
    same sources share.
    """
    found = solved.concrete_shapes
    if found is None:
        padded = {
            padding.index for padding in sc.paddings if padding.where == "internal"
        }
        found = solved.concrete_shapes = frozenset(
            index
            for index, (_name, *rows) in enumerate(made)
            if index not in padded and all(row.is_concrete() for row in rows)
        )
    return found


def facts_to_add(
    sc: Scheme, pre: Presolve | None, solved: dict[Var, Value]
) -> Sequence[tuple[Any, ...]]:
    """The compiled facts an application with these presolved values adds:
    all but those that only bound presolved variables from below (they hold
    by construction), except the inequalities that relate two tied rows'
    template tails (:class:`TiedFact`). Kept on ``solved``, which
    applications with the same source values share."""
    if not solved or pre is None:
        return sc._plan
    facts = getattr(solved, "facts", None)
    if facts is None:
        templated: dict[Var, int] = getattr(solved, "templated", {})

        def holds(bounded: tuple[Var, ...] | TiedFact | None) -> bool:
            if bounded is None:
                return False
            if type(bounded) is TiedFact:
                return all(v in solved for v in bounded.result) and all(
                    v in solved and v not in templated for v in bounded.operand
                )
            return all(v in solved for v in bounded)  # type: ignore[union-attr]

        facts = [
            fact
            for fact, bounded in zip(sc._plan, pre.skipped, strict=True)
            if not holds(bounded)
        ]
        if isinstance(solved, Solved):
            solved.facts = facts
    return facts


PRESOLVE_MEMO_SIZE = 256
"""Source values remembered per scheme (cleared when full: a bound, not a cache policy)."""

_NOT_KNOWN: Final = None


def _read_sources(
    pre: Presolve, actual: Sequence[Row | None]
) -> dict[Var, Value] | None:
    """The source variables' values from the concrete actual rows.

    ``None`` when a source row cannot hold its actual row (too few axes, or
    a size that differs) or two sources disagree: the full application
    reports that.
    """
    known: dict[Var, Value] = {}

    def give(var: Var, value: Value) -> bool:
        found = known.get(var)
        if found is None:
            known[var] = value
            return True
        return found == value

    for (_where, term), current in zip(pre.sources, actual, strict=True):
        if current is None:
            continue
        dims = current.dims
        written = len(term.dims)
        if len(dims) < written or (term.var is None and len(dims) != written):
            return None
        lead = len(dims) - written
        if term.var is not None and not give(term.var, Row(dims[:lead])):
            return None
        for position, dim in enumerate(term.dims):
            size = dims[lead + position]
            if type(dim) is DimVar:
                if not give(dim, size):  # type: ignore[arg-type]
                    return None
            elif dim != size:
                return None
    return known


def _value(term: Dim | Row, known: dict[Var, Value]) -> Value | None:
    """A term's value from the known variables (``None`` if one is unknown)."""
    if type(term) is Size:
        return term
    if type(term) is DimVar:
        return known.get(term)
    assert type(term) is Row
    head: tuple[Dim, ...] = ()
    if term.var is not None:
        lead = known.get(term.var)
        if lead is None:
            return _NOT_KNOWN
        head = lead.dims  # type: ignore[union-attr]
    if not term.dims:
        return Row(head)
    tail = [_value(d, known) for d in term.dims]
    if any(d is None for d in tail):
        return _NOT_KNOWN
    return Row(head + tuple(tail))  # type: ignore[arg-type]


def solve_presolvable(pre: Presolve, known: dict[Var, Value]) -> Solved:
    """The joins of :func:`presolved`, in dependency order (``known``: the sources)."""
    solved = Solved()
    tied = pre.tied
    # A boundary variable read off a concrete actual row takes that value:
    # the application's equality would bind it so before anything else.
    settled = [(var, known[var]) for var in pre.settled if var in known]
    join = join_concrete  # looked up once (a test replaces it)
    for var, var_bounds, gen in pre.order:
        values: list[Value] = []
        for kind, term, back in var_bounds:
            value = _value(term, known)
            if value is None:
                break
            if kind == DIM:
                values.append(value)
            elif kind == AXIS:
                dims = value.dims  # type: ignore[union-attr]
                if len(dims) >= back:
                    values.append(dims[len(dims) - back])  # type: ignore[arg-type]
            else:
                dims = value.dims  # type: ignore[union-attr]
                values.append(Row(dims[: max(0, len(dims) - back)]) if back else value)
        else:
            if type(var) is RowVar:
                joined = join(values)  # type: ignore[arg-type]
                if joined is None or gen + len(joined.dims) > MAX_RANK:
                    return Solved()
                if var in tied:
                    if not joined.dims:
                        continue  # bare in re-evaluation too: left open
                    solved.templated[var] = gen + len(joined.dims)
                known[var] = solved[var] = joined
            else:
                size = join_sizes(values)  # type: ignore[arg-type]
                if size is None:
                    return Solved()
                known[var] = solved[var] = size
    for opnd, length in pre.closed:
        value = _value(opnd, known)
        if value is not None and len(value.dims) > length:  # type: ignore[union-attr]
            return Solved()  # Stage 1's error: the full application reports it
    for opnd, back, size in pre.fixed:
        value = _value(opnd, known)
        if value is not None and len(value.dims) >= back:  # type: ignore[union-attr]
            axis = value.dims[len(value.dims) - back]  # type: ignore[union-attr]
            if axis.n != 1 and axis != size:  # type: ignore[union-attr]
                return Solved()
    # Keep a value only where its guards are known too.
    sources = {var for var in pre.source_vars if var in known}
    unsettled = [
        var
        for (var, _bounds, _gen), guards in zip(pre.order, pre.guards, strict=True)
        if var in solved and not all(g in solved or g in sources for g in guards)
    ]
    if unsettled:
        _drop_unsettled(pre, solved, unsettled)
        for var in [v for v in solved.templated if v not in solved]:
            del solved.templated[var]
    solved.update(settled)
    return solved


def _drop_unsettled(pre: Presolve, solved: Solved, unsettled: list[Var]) -> None:
    """Drop ``unsettled`` from ``solved``, and every variable guarded by a
    dropped one (once each: linear in the guards)."""
    guarding: dict[Var, list[Var]] = {}
    for (var, _bounds, _gen), guards in zip(pre.order, pre.guards, strict=True):
        for guard in guards:
            guarding.setdefault(guard, []).append(var)
    while unsettled:
        var = unsettled.pop()
        if solved.pop(var, None) is not None:
            unsettled.extend(guarding.get(var, ()))
