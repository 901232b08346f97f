"""Presolving: the internal row variables an application can solve outright.

See :func:`plan_presolve`. The plan is made once per scheme (on its first
application); the values are memoized per source values on the scheme.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from weakref import WeakKeyDictionary

from axisflow.shapes.constraints import (
    RowIneq,
    Terminal,
    TotalElems,
)
from axisflow.shapes.scheme.data import (
    ANCHOR,
    ARG,
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
    EMPTY_ROW,
    Dim,
    DimVar,
    Row,
    RowVar,
    Size,
)

LowerBound = tuple[RowVar | None, tuple[Size, ...]]
"""A lower bound ``[...var, sizes]`` of a presolvable variable (``var`` None: closed)."""


@dataclass(frozen=True, slots=True)
class Presolve:
    """The scheme's internal row variables an application may solve outright.

    ``sources``: the variables that are a whole boundary or anchor row, with
    where they stand ((argument/result/anchor, index, kind index)); at an
    application where that row is concrete the variable's value is known.
    ``order``: the presolvable variables in dependency order, each with its
    lower bounds and template depth. ``skipped``: for each compiled fact,
    whether it only bounds a presolvable variable from below. ``guards``: for
    each variable of ``order``, the variables that must be known at an
    application for it to be presolved there (see :func:`_guards`).
    """

    sources: tuple[tuple[RowVar, tuple[tuple[int, int, int], ...]], ...]
    order: tuple[tuple[RowVar, tuple[LowerBound, ...], int], ...]
    skipped: tuple[RowVar | None, ...]
    guards: tuple[frozenset[RowVar], ...]
    tied: frozenset[RowVar] = frozenset()


_PLANS: WeakKeyDictionary[Scheme, Presolve | None] = WeakKeyDictionary()


def presolve_plan(sc: Scheme) -> Presolve | None:
    """The scheme's presolve plan, made on its first application."""
    try:
        return _PLANS[sc]
    except KeyError:
        plan = _PLANS[sc] = plan_presolve(sc)
        return plan


def plan_presolve(sc: Scheme) -> Presolve | None:
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
    templates one inequality at a time, provided the closing cannot read
    the row through what lies above it: the rows it broadcasts to must be
    presolvable or the result's, and what they broadcast from known at the
    application (:func:`_guards`). ``None`` when there is nothing to
    presolve.

    A candidate that is the one row a result row broadcasts from is *tied*
    (``tied``): where its value has no axes, re-evaluation leaves it bare
    until closing (a bound without axes makes no template), and closing's
    single-neighbour merge then equates it with the result row, which the
    caller may give axes later (a total on the result); an application does
    not presolve it there (:func:`solve_presolvable`).
    """
    places: dict[RowVar, list[tuple[int, int, int]]] = {}
    blocked: set[DimVar | RowVar] = set()
    result_vars: set[DimVar | RowVar] = set()
    boundary = (
        (ARG, sc.args),
        (RESULT, sc.results),
        (ANCHOR, tuple(a.rows for a in sc.anchors)),
    )
    for where, shapes in boundary:
        for index, rows in enumerate(shapes):
            for kind_index, row in enumerate(rows):
                (result_vars if where == RESULT else blocked).update(row_vars(row))
                if row.var is not None and not row.dims:
                    places.setdefault(row.var, []).append((where, index, kind_index))
    for item in sc.loose:
        blocked.add(item.old)
        blocked.update(term_vars(item.term))
    for capture in sc.captures:
        blocked.update(term_vars(capture.dim))
    lower: dict[RowVar, list[LowerBound]] = {}
    # Every row inequality as a graph: the rows each row variable broadcasts
    # to (``above``) and the row variables each row broadcasts from.
    above: dict[RowVar, list[RowVar]] = {}
    below: dict[RowVar, set[RowVar]] = {}
    with_axes: set[RowVar] = set()  # results of inequalities with axes before the tail
    for fact in sc.facts:
        if isinstance(fact, RowIneq):
            res, opnd = fact.res, fact.opnd
            if res.var is None:
                continue  # only an operand side: presolving keeps it
            if opnd.var is not None:
                above.setdefault(opnd.var, []).append(res.var)
                below.setdefault(res.var, set()).add(opnd.var)
            if not all(type(d) is Size for d in opnd.dims):
                blocked.add(res.var)
            elif res.dims:
                with_axes.add(res.var)
            else:
                lower.setdefault(res.var, []).append((opnd.var, opnd.dims))  # type: ignore[arg-type]
        elif isinstance(fact, Terminal | TotalElems):
            for term in fact_terms(fact):
                blocked.update(term_vars(term))
    candidates = {
        v
        for v in sc.generalized
        if type(v) is RowVar
        and v not in blocked
        and v not in with_axes
        and v not in result_vars
    }
    # A result row (its sizes, then a tail read nowhere else) may lie above a
    # presolved row.
    results_above = {
        row.var
        for rows in sc.results
        for row in rows
        if row.var is not None
        and row.var not in blocked
        and all(type(d) is Size for d in row.dims)
    }
    guards = _guards(candidates, results_above, above, below)
    candidates.intersection_update(guards)
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
    used_sources.update(g for var in order for g in guards[var] if g in places)
    presolvable = set(order)
    skipped: list[RowVar | None] = []
    for code, first, _second, _origin in sc._plan:
        var = first.var if code == ROW_INEQ else None  # type: ignore[union-attr]
        skipped.append(var if var in presolvable else None)
    tied = frozenset(
        operand
        for res in results_above
        if len(operands := below.get(res, ())) == 1
        for operand in operands
        if operand in presolvable
    )
    return Presolve(
        sources=tuple(
            (var, tuple(places[var])) for var in places if var in used_sources
        ),
        order=tuple(
            (var, tuple(lower.get(var, ())), gens.get(var, 0)) for var in order
        ),
        skipped=tuple(skipped),
        guards=tuple(guards[var] for var in order),
        tied=tied,
    )


def _guards(
    candidates: set[RowVar],
    results_above: set[RowVar],
    above: dict[RowVar, list[RowVar]],
    below: dict[RowVar, set[RowVar]],
) -> dict[RowVar, frozenset[RowVar]]:
    """What each candidate's presolving depends on besides its own bounds.

    A presolved row is concrete from the application on, where re-running
    the body leaves it open until closing, and closing reads open rows: its
    first step (OCANNL's stage 2) equates a bare ``res ⊑ opnd`` pair that
    are each other's only neighbour (the operand then takes the result's
    other bounds), and a leaf row with no bounds of its own takes those of
    the rows it broadcasts to. So a row is presolved only where everything
    it can meet that way is settled at the application: every row above it
    (transitively) is a candidate or a result row (sizes, then a tail read
    nowhere else), and every row those
    broadcast from, and every candidate among them, is known at the
    application (a concrete source, or presolved itself). The guards are
    those variables; a candidate above which lies any other row (an anchor's
    row, a row with axes before its tail, a leaf's) is dropped (absent from
    the map).
    """
    allowed = candidates | results_above
    guards: dict[RowVar, frozenset[RowVar]] = {}
    for var in candidates:
        seen = {var}
        stack = [var]
        needed: set[RowVar] = set()
        fine = True
        while stack and fine:
            row = stack.pop()
            if row not in allowed:
                fine = False
                break
            if row in candidates:
                needed.add(row)
            needed.update(below.get(row, ()))
            for res in above.get(row, ()):
                if res not in seen:
                    seen.add(res)
                    stack.append(res)
        if fine:
            needed.discard(var)
            guards[var] = frozenset(needed)
    return guards


def join_concrete(rows: Sequence[Row]) -> Row | None:
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


def presolved(
    sc: Scheme,
    pre: Presolve,
    args: tuple[Shape, ...],
    results: tuple[Shape, ...],
    norm_row: Callable[[Row], Row],
) -> dict[RowVar, Row]:
    """The presolvable variables' values at this application (see :func:`plan_presolve`).

    Only those whose sources are all concrete now. Empty when a join clashes
    or would pass the template depth limit: the full application then reports
    the contradiction as re-running the body would.
    """
    known: dict[RowVar, Row] = {}
    for var, where in pre.sources:
        for kind, index, kind_index in where:
            shape = (
                args[index]
                if kind == ARG
                else results[index]
                if kind == RESULT
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
    if len(memo) >= PRESOLVE_MEMO_SIZE:
        memo.clear()
    memo[key] = solved = solve_presolvable(pre, known)
    return solved


PRESOLVE_MEMO_SIZE = 256
"""Source values remembered per scheme (cleared when full: a bound, not a cache policy)."""


def solve_presolvable(pre: Presolve, known: dict[RowVar, Row]) -> dict[RowVar, Row]:
    """The joins of :func:`presolved`, in dependency order (``known``: the sources)."""
    solved: dict[RowVar, Row] = {}
    tied = pre.tied
    for var, bounds, gen in pre.order:
        if len(bounds) == 1 and not bounds[0][1] and bounds[0][0] is not None:
            # The common case: one bare lower bound, whose value it takes.
            value = known.get(bounds[0][0])
            if value is not None:
                if gen + len(value.dims) > MAX_RANK:
                    return {}
                if value.dims or var not in tied:
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
            joined = join_concrete(rows)
            if joined is None or gen + len(joined.dims) > MAX_RANK:
                return {}
            if joined.dims or var not in tied:
                known[var] = joined
                solved[var] = joined
    # Keep a value only where its guards are known too.
    sources = {var for var, _ in pre.sources if var in known}
    unsettled = [
        var
        for (var, _bounds, _gen), guards in zip(pre.order, pre.guards, strict=True)
        if var in solved and not all(g in solved or g in sources for g in guards)
    ]
    if unsettled:
        _drop_unsettled(pre, solved, unsettled)
    return solved


def _drop_unsettled(
    pre: Presolve, solved: dict[RowVar, Row], unsettled: list[RowVar]
) -> None:
    """Drop ``unsettled`` from ``solved``, and every variable guarded by a
    dropped one (once each: linear in the guards)."""
    guarding: dict[RowVar, list[RowVar]] = {}
    for (var, _bounds, _gen), guards in zip(pre.order, pre.guards, strict=True):
        for guard in guards:
            guarding.setdefault(guard, []).append(var)
    while unsettled:
        var = unsettled.pop()
        if solved.pop(var, None) is not None:
            unsettled.extend(guarding.get(var, ()))
