"""Closing: solving what Stage 1 left open (OCANNL's ``finish_inference``).

OCANNL re-solves its constraints through numbered stages; each step here is
the counterpart of one of them and is one function. Every step first *decides*
(reads the state as the previous step left it), then *commits* all its
decisions at once and solves their consequences at Stage 1. Committing a whole
step in one pass is what makes closing independent of the order in which
independent tensors were made: no decision of a step sees another decision of
the same step (OCANNL commits every leaf of a stage to its bound in one pass,
``test/einsum/test_closing_order.ml``). A step whose commits open new
decisions of the same kind (a template minting a variable with a lower bound)
runs again until it has nothing left.

1. :func:`merge_single_neighbours` (OCANNL stage 2): two bare row variables
   related by an inequality that are each other's only neighbour become one
   (``row.ml``, ``solve_row_ineq``).
2. :func:`close_terminal_rows_to_bounds` (stage 3): leaf rows with lower
   bounds take their join; one without bounds of its own, those of the rows
   it broadcasts to.
3. :func:`close_totals` (stages 3-5): pending element totals put their
   elements on their last open row or solve their one unknown dim.
4. :func:`close_unbounded_terminal_rows` (stage 4): the other leaf rows get no
   further axes, or the hidden-dimension error for a parameter.
5. :func:`close_terminal_dims` (stages 4-5): leaf dims take their lower bound;
   a parameter dim without one is the hidden-dimension error.
6. :func:`close_pending_prefixes`: axes written before a row variable
   whose rows are still open: the row variable gets no axes.
7. :func:`close_remaining_rows` (stage 7): every other row variable gets no
   further axes.
8. :func:`close_remaining_dims` (stage 7): every other dim becomes 1, or what
   a fixed index needs.
9. :func:`check_totals`: every total holds.

Steps 8 and 9 run again from the guesses made for pending equations
(:class:`GuessSearch`) when they meet a contradiction, with those guesses
raised, so that closing finds positive sizes where its first guesses would
make the equations contradict each other.

Dims have no single-neighbour step: a dim's lower bound propagates along its
inequalities at Stage 1 (OCANNL keeps it on one side only), so equating two
dims that are each other's only neighbour could not change any closed size.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Sequence
from typing import NoReturn

from axisflow.shapes.constraints import (
    DeferredCount,
    DimLinear,
    LinearKind,
    RowPrefix,
    Terminal,
    TotalElems,
)
from axisflow.shapes.errors import ShapeError
from axisflow.shapes.solver import RowBounds, Solver
from axisflow.shapes.terms import (
    BROADCAST_UNIT,
    EMPTY_ROW,
    Dim,
    DimVar,
    Origin,
    Row,
    RowVar,
    Size,
    format_row,
)

CLOSING_ORIGIN = Origin("close", "the session")

SEARCH_ATTEMPTS = 128
"""Runs of steps 8 and 9 :class:`GuessSearch` may try after the first
fails, before it reports that first contradiction: sizes never run out, so
the search is bounded by count (and so deterministic)."""

SEARCH_WORK = (16, 4096)
"""The dims the search's runs may read in all (``close_remaining_dims``
reads every open row's dims each round): 16 times what the first run read,
plus 4096. A large program's runs each read all of its open rows, so this,
not ``SEARCH_ATTEMPTS``, bounds what a contradiction there costs (about 16
more first runs); a small program gets every attempt."""

SEARCH_DEPTH = 6
"""The guesses before a contradiction that the search may change: each is
solved before the next is made, so the latest are the likely cause."""

SEARCH_WIDTH = 8
"""The largest raise of one guess alone the search tries before it raises
several together."""


class GuessSearch:
    """The guesses closing makes for pending equations, and larger ones.

    :func:`_decide_equations` guesses a dim its least size; equations that
    share dims can then contradict each other where larger sizes satisfy all
    of them (``d4 = d8 + d5`` and ``7 = d4 + d5``: guessing ``d4`` its least
    size 2 leaves ``d8 = -3``; 4 gives ``d5 = 3, d8 = 1``). When steps 8 and
    9 meet a contradiction, the search undoes everything since the
    ``SEARCH_DEPTH``-th guess before it (through the solver's trail) and
    runs them again from there with those guesses raised (:func:`_raises`:
    one alone by 1 to ``SEARCH_WIDTH`` first, then several together), each
    run making its guesses afresh, until one closes or the runs are spent
    (``SEARCH_ATTEMPTS``, ``SEARCH_WORK``); then the first contradiction is
    reported. A closing that meets no contradiction is exactly what it was
    without the search. Trail entries are recorded from the first guess
    on, and dropped at the end unless a rewind window is open around the
    closing.
    """

    def __init__(self, solver: Solver) -> None:
        self.solver = solver
        self.checkpoints: list[int] = []  # the trail's length before each guess
        self.start: int | None = None  # the trail's length at the first guess
        self.first_error: ShapeError | None = None
        self.raises: Iterator[tuple[int, ...]] | None = None
        self.raised: tuple[int, ...] = ()  # this run's raise of each guess
        self.base = 0  # the trail's length the runs start from
        self.attempts = 0
        self.work = 0  # dims read by the runs (``close_remaining_dims``)
        self.allowed = 0  # the work the runs after the first may do in all

    def guess(self, dim: DimVar, size: int, origin: Origin) -> None:
        """Commit ``dim = size``, raised as this run says, as a choice point."""
        trail = self.solver.trail
        if self.start is None:
            self.start = len(trail.entries)
            trail.depth += 1
        index = len(self.checkpoints)
        self.checkpoints.append(len(trail.entries))
        if index < len(self.raised):
            size += self.raised[index]
        _commit_dims(self.solver, [(dim, Size(size), origin)])

    def retry(self, error: ShapeError) -> bool:
        """Prepare the next run (the state undone to where the runs start);
        ``False`` when no guess was made or the runs are spent."""
        if self.first_error is None:
            self.first_error = error
            if not self.checkpoints:
                return False
            depth = min(SEARCH_DEPTH, len(self.checkpoints))
            self.base = self.checkpoints[-depth]
            self.raises = _raises(depth)
            factor, constant = SEARCH_WORK
            self.allowed = self.work * (factor + 1) + constant
        if (
            self.raises is None
            or self.attempts == SEARCH_ATTEMPTS
            or self.work > self.allowed
        ):
            return False
        self.attempts += 1
        self.solver.trail.undo_to(self.base)
        self.solver.trigger = None
        self.checkpoints = []
        self.raised = next(self.raises)
        return True

    def end(self) -> None:
        """Stop recording for the search (keeping what an open window needs)."""
        if self.start is None:
            return
        trail = self.solver.trail
        trail.depth -= 1
        if not trail.depth:
            del trail.entries[self.start :]
        self.start = None


def _raises(count: int) -> Iterator[tuple[int, ...]]:
    """The raises of ``count`` guesses the search tries, in order: one guess
    alone by 1 to ``SEARCH_WIDTH`` (the latest first at each size), then
    every other way by increasing total raise (among equal totals the later
    guesses raised first: ``(0, 1, 1)`` before ``(1, 1, 0)``)."""
    for size in range(1, SEARCH_WIDTH + 1):
        for position in reversed(range(count)):
            yield tuple(size if i == position else 0 for i in range(count))
    total = 2
    while True:
        for cut in itertools.combinations(range(total + count - 1), count - 1):
            bounds = (-1, *cut, total + count - 1)
            parts = tuple(b - a - 1 for a, b in itertools.pairwise(bounds))
            if sum(1 for part in parts if part) > 1 or max(parts) > SEARCH_WIDTH:
                yield parts
        total += 1


def close(solver: Solver, shape_rows: Iterable[Row]) -> None:
    """Solve every remaining variable of ``solver`` (the steps of the module docstring).

    ``shape_rows`` are the open rows of the shapes to solve; variables with
    stored bounds are visited even if no row holds them.
    """
    norm_row = solver.norm_row
    # Concrete leaf rows (the common case) have nothing left to decide.
    terminals = [t for t in solver.terminals if not norm_row(t.row).is_concrete()]
    merge_single_neighbours(solver)
    close_terminal_rows_to_bounds(solver, terminals)
    close_totals(solver)
    # Rows that got lower bounds from the totals (a total giving a row
    # variable its axes, which a row prefix passes on to a result a leaf
    # broadcasts to) take them before anything is guessed.
    close_terminal_rows_to_bounds(solver, terminals)
    # Safety to guess is read after the leaf rows took their bounds (a leaf
    # row that took a template's row is as safe to guess as that template)
    # and before any leaf row is closed to no axes (closing moves marks).
    guessable = [_row_is_guessable(solver, t) for t in terminals]
    close_unbounded_terminal_rows(solver, terminals, guessable)
    close_terminal_dims(solver, terminals, guessable)
    solver.trigger = None
    rows = list(shape_rows)
    close_pending_prefixes(solver)
    close_remaining_rows(solver, rows)
    search = GuessSearch(solver)
    try:
        while True:
            try:
                close_remaining_dims(solver, rows, search)
                check_totals(solver)
                return
            except ShapeError as error:
                if not search.retry(error):
                    raise search.first_error or error from None
    finally:
        search.end()


# ---------------------------------------------------------------- helpers


def join_bounds(solver: Solver, glbs: Sequence[tuple[Row, Origin]]) -> Row:
    """The most general row every lower bound broadcasts to (OCANNL's join).

    Shortest length (fewer axes broadcast to more); per axis the common size,
    1 where sizes differ, a size over a variable; the tail of the shortest
    bounds, closed if any shortest bound is closed. Where the bounds leave a
    choice between different variables (two axes, or the tails of two
    shortest bounds), the join is a fresh variable above all of them (a
    tail carries their policy marks): so the join does not depend on the
    order the bounds arrived in, which differs between a shape scheme and the
    body it was traced from. (OCANNL's join is pairwise and keeps one of the
    two variables.) Solving the variable re-states every bound against the
    join, which relates the variables and re-checks the sizes: a lossy join
    cannot go unnoticed.
    """
    rows = [solver.norm_row(glb) for glb, _ in glbs]
    length = min(len(r.dims) for r in rows)
    shortest = [r for r in rows if len(r.dims) == length]
    tail: RowVar | None = None
    if all(r.var is not None for r in shortest):
        tails = {r.var for r in shortest if r.var is not None}
        tail = (
            next(iter(tails))
            if len(tails) == 1
            else solver.fresh_row_above(sorted(tails, key=lambda v: v.id))
        )
    dims: list[Dim] = []
    for position in range(length):
        column = {r.dims[len(r.dims) - length + position] for r in rows}
        sizes = {d for d in column if type(d) is Size}
        if len(sizes) > 1:
            dims.append(BROADCAST_UNIT)
        elif sizes:
            dims.append(next(iter(sizes)))
        elif len(column) == 1:
            dims.append(next(iter(column)))
        else:
            dims.append(solver.fresh_dim())
    return Row(tuple(dims), tail)


def _open_var(solver: Solver, row: Row) -> RowVar | None:
    return solver.norm_row(row).var


def _is_bare(solver: Solver, var: RowVar) -> RowVar | None:
    """The representative of ``var`` if it is still a bare unsolved variable."""
    if var.id not in solver.row_subst:
        return var  # unsolved: its own representative (what norm_row would say)
    row = solver.norm_row(Row((), var))
    return row.var if not row.dims else None


def _commit_rows(solver: Solver, decisions: list[tuple[RowVar, Row, Origin]]) -> None:
    """Solve every decided row variable, then what follows from all of them."""
    for var, value, origin in decisions:
        current = solver.norm_row(Row((), var))
        if current.dims or current.var != var:
            continue  # a decision of this step already solved it
        value = solver.norm_row(value)
        solver.trigger = origin
        solver.assign_row(var, value, origin, (Row((), var), value))
    solver.run()


def _commit_dims(solver: Solver, decisions: list[tuple[DimVar, Size, Origin]]) -> None:
    for dim, size, origin in decisions:
        if solver.find_dim(dim) != dim:
            continue
        solver.trigger = origin
        solver.assign_dim(dim, size, origin)
    solver.run()


def _row_is_guessable(solver: Solver, terminal: Terminal) -> bool:
    var = _open_var(solver, terminal.row)
    return var is not None and solver.safe_to_guess(var)


def _hidden_dimension(solver: Solver, terminal: Terminal, what: str) -> NoReturn:
    kind = terminal.origin.lhs.kind if terminal.origin.lhs is not None else "some"
    solver.trigger = terminal.origin
    solver.fail(
        f"You forgot to specify the hidden dimension(s) of parameter "
        f"'{terminal.origin.tensor}': {what} of its {kind} axes "
        f"{format_row(solver.norm_row(terminal.row))} cannot be inferred; give "
        f"them in its spec",
        terminal.origin,
        lead=False,
    )


# ------------------------------------------------------------------ steps


def merge_single_neighbours(solver: Solver) -> None:
    """Equate ``res ⊑ opnd`` when the two bare row variables are each other's only neighbour.

    OCANNL (``row.ml``, ``solve_row_ineq``, from stage 2 on) turns such an
    inequality into an equality: nothing else can tell the two apart, and
    the equality lets a bound on one (a bias's width) decide the other (the
    output of the weight it is added to). A merge can make two neighbours of
    a third variable one, so merged variables are looked at again.
    """
    pending = sorted(solver.row_bounds)
    while pending:
        var_id = pending.pop()
        bounds = solver.row_bounds.get(var_id)
        if bounds is None:
            continue
        var = RowVar(var_id)
        above = _bare_neighbours(solver, var, bounds, "opnd", limit=2)
        if len(above) != 1:
            continue
        ((opnd, origin),) = above.items()
        opnd_bounds = solver.row_bounds.get(opnd.id)
        if opnd_bounds is None:
            continue
        below = _bare_neighbours(solver, opnd, opnd_bounds, "res", limit=2)
        if list(below) != [var]:
            continue
        solver.trigger = origin
        solver.push_row_eq(Row((), var), Row((), opnd), origin)
        solver.run()
        merged = _is_bare(solver, var)
        if merged is not None:
            pending.append(merged.id)
            merged_bounds = solver.row_bounds.get(merged.id)
            if merged_bounds is not None:
                for field in ("res", "opnd"):
                    pending.extend(
                        v.id
                        for v in _bare_neighbours(solver, merged, merged_bounds, field)
                    )
    solver.trigger = None


def _bare_neighbours(
    solver: Solver, var: RowVar, bounds: RowBounds, field: str, limit: int = 0
) -> dict[RowVar, Origin]:
    """The distinct bare variables ``var`` is related to on one side.

    ``limit``: stop once that many are found (0: all). The entries read are
    compacted on the trail: an entry for a variable solved since, merged into
    ``var`` itself or repeating another is dropped, so repeated reads of a
    variable's relations (a chain of merges piles them up on one variable)
    cost what they find, not what was ever stored.
    """
    entries = getattr(bounds, field)
    found: dict[RowVar, Origin] = {}
    scanned = 0
    for other, origin in entries:
        scanned += 1
        rep = _is_bare(solver, other)
        if rep is not None and rep != var and rep not in found:
            found[rep] = origin
            if limit and len(found) == limit:
                break
    if scanned != len(found):
        kept = [(rep, origin) for rep, origin in found.items()]
        solver.trail.set_attr(bounds, field, kept + list(entries[scanned:]))
    return found


def close_terminal_rows_to_bounds(
    solver: Solver, terminals: Sequence[Terminal]
) -> None:
    """Leaf rows with lower bounds take their join, all of a round at once.

    A leaf row with axes written before its row variable (``"3,...,7"``)
    takes the join's trailing axes, as many as fit behind the written ones.
    """
    while True:
        decisions: list[tuple[RowVar, Row, Origin]] = []
        seen: set[RowVar] = set()
        prefixes = _pending_prefixes(solver)
        for terminal in terminals:
            var = _open_var(solver, terminal.row)
            if var is None or var in seen:
                continue
            bounds = solver.row_bounds.get(var.id)
            if bounds is None:
                continue
            glbs = bounds.glbs or _bounds_through_results(solver, var, bounds)
            if glbs:
                seen.add(var)
                joined = join_bounds(solver, glbs)
                prefix = prefixes.get(var)
                fitted = None if prefix is None else _fit_prefix(solver, prefix, joined)
                if fitted is not None:
                    decisions.append((*fitted, terminal.origin))
                else:
                    decisions.append((var, joined, terminal.origin))
        if not decisions:
            return
        _commit_rows(solver, decisions)


def _through_prefix(solver: Solver, row: Row, prefixes: dict[RowVar, RowPrefix]) -> Row:
    """A total's (normalized) row with the axes written before its row
    variable in place of it, if it has a pending prefix: ``[...s]`` with
    ``s = [2, ...r]`` counts as ``[2, ...r]``, so the total's elements go to
    ``r`` after the written 2 (OCANNL's rows hold their ``beg_dims``)."""
    if row.var is None:
        return row
    prefix = prefixes.get(row.var)
    if prefix is None or solver.norm_row(prefix.whole).dims:
        return row
    rest = solver.norm_row(prefix.rest)
    beg = tuple([solver.find_dim(d) for d in prefix.beg])
    return Row(beg + rest.dims + row.dims, rest.var)


def _pending_prefixes(solver: Solver) -> dict[RowVar, RowPrefix]:
    """The pending row prefixes whose rows are both open, by the row's variable."""
    found: dict[RowVar, RowPrefix] = {}
    for prefix in solver.prefixes.values():
        whole = _open_var(solver, prefix.whole)
        if whole is not None and _open_var(solver, prefix.rest) is not None:
            found[whole] = prefix
    return found


def _fit_prefix(
    solver: Solver, prefix: RowPrefix, joined: Row
) -> tuple[RowVar, Row] | None:
    """The value of a prefix's row variable that puts the most of the join's
    trailing axes behind the written ones, each written axis broadcasting to
    the join's axis it lands on; if none fits and the join is open, the
    fewest written axes land in front of it (its row variable takes them).
    Axes the row variable already ends in (``[...r, 3]``) stay last.
    ``None`` if nothing fits."""
    rest = solver.norm_row(prefix.rest)
    if rest.var is None:
        return None
    beg = [solver.find_dim(d) for d in prefix.beg]
    dims = joined.dims
    last = len(rest.dims)
    inside = range(len(dims) - len(beg), last - 1, -1)
    beyond = range(max(len(dims) - len(beg) + 1, last), len(dims) + 1)
    for taken in (*inside, *(beyond if joined.var is not None else ())):
        start = len(dims) - taken - len(beg)
        landing = zip(
            beg[max(-start, 0) :], dims[max(start, 0) : start + len(beg)], strict=True
        )
        if all(
            type(written) is not Size
            or type(axis) is not Size
            or written == axis
            or written.n == 1
            for written, axis in landing
        ):
            return (rest.var, Row(dims[len(dims) - taken : len(dims) - last]))
    return None


def _bounds_through_results(
    solver: Solver, var: RowVar, bounds: RowBounds
) -> list[tuple[Row, Origin]]:
    """The lower bounds of the rows ``var`` broadcasts to, when it has none itself.

    Broadcasting is transitive: if ``r ⊑ var`` and ``g ⊑ r`` then ``g ⊑ var``.
    With one such ``r`` this is what the single-neighbour merge gives; a
    layer applied at several call sites in one closing has one ``r`` per
    site, and its weight takes the join of their bounds (a deliberate
    extension, docs/shapes.md section 8: OCANNL closes once per call site).
    Every such ``r`` must have bounds, or the row is left to the next step.
    """
    found: list[tuple[Row, Origin]] = []
    for res in _bare_neighbours(solver, var, bounds, "res"):
        res_bounds = solver.row_bounds.get(res.id)
        if res_bounds is None or not res_bounds.glbs:
            return []
        found.extend(res_bounds.glbs)
    return found


def _resolve_deferred(solver: Solver) -> None:
    for total_id, total in list(solver.totals.items()):
        count = total.count
        if not isinstance(count, DeferredCount):
            continue
        try:
            value = count.resolve()
        except Exception as error:  # the user's callback failed
            solver.fail(
                f"the element count {count} could not be resolved: {error}",
                total.origin,
            )
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            solver.fail(
                f"the element count {count} resolved to {value!r}, not a positive "
                f"integer",
                total.origin,
            )
        solver.trail.set_item(
            solver.totals, total_id, TotalElems(total.rows, value, total.origin)
        )


def _close_empty(solver: Solver, var: RowVar, origin: Origin) -> None:
    _commit_rows(solver, [(var, EMPTY_ROW, origin)])


def close_totals(solver: Solver) -> None:
    """Deferred counts are resolved; each total puts its elements on its last open row.

    The other open rows close to no axes (OCANNL gives a total's elements to
    the output-kind row variable); a total with one unknown dim solves it at
    Stage 1 already.
    """
    _resolve_deferred(solver)
    norm_row = solver.norm_row
    for total_id in sorted(solver.totals):
        total = solver.totals.get(total_id)
        if total is None:
            continue
        solver.trigger = total.origin
        count = total.count
        if not isinstance(count, int):
            # A dim count (a resolved deferred count is an int): once the
            # rows are closed by the later steps, Stage 1 gives it its size.
            assert not isinstance(count, DeferredCount)
            found = solver.find_dim(count)
            if type(found) is not Size:
                continue
            count = found.n
        prefixes = _pending_prefixes(solver) if solver.prefixes else {}
        rows = [_through_prefix(solver, norm_row(r), prefixes) for r in total.rows]
        open_vars = [row.var for row in rows if row.var is not None]
        for var in open_vars[:-1]:
            if norm_row(Row((), var)).var == var:
                _close_empty(solver, var, total.origin)
        last = norm_row(Row((), open_vars[-1])).var if open_vars else None
        if last is not None:
            product = 1
            unknown = 0
            for row in rows:
                for d in norm_row(row).dims:
                    if type(d) is Size:
                        product *= d.n
                    else:
                        unknown += 1
            if unknown or count % product:
                _close_empty(solver, last, total.origin)
            else:
                quotient = count // product
                value = Row((Size(quotient),)) if quotient != 1 else EMPTY_ROW
                _commit_rows(solver, [(last, value, total.origin)])
        solver.push_total_check(total_id)
        solver.run()
    solver.trigger = None


def close_unbounded_terminal_rows(
    solver: Solver, terminals: Sequence[Terminal], guessable: Sequence[bool]
) -> None:
    """Leaf rows still open get no further axes; a parameter row must be safe to guess.

    The check reads every leaf row before any of them is closed, so whether
    a parameter is the hidden-dimension error does not depend on the order
    of the leaves.
    """
    decisions: list[tuple[RowVar, Row, Origin]] = []
    prefixes = _pending_prefixes(solver)
    for terminal, safe in zip(terminals, guessable, strict=True):
        var = _open_var(solver, terminal.row)
        if var is None:
            continue
        if terminal.is_param and not safe:
            _hidden_dimension(solver, terminal, "the number")
        prefix = prefixes.get(var)
        if prefix is not None:
            # A row with axes written before its row variable ("3,...,7"):
            # if it has fewer axes than written, the row variable between
            # them closes (no axes there), else the row gets no more axes.
            whole = solver.norm_row(prefix.whole)
            rest = solver.norm_row(prefix.rest)
            if len(whole.dims) < len(prefix.beg) + len(rest.dims):
                assert rest.var is not None
                var = rest.var
        decisions.append((var, EMPTY_ROW, terminal.origin))
    _commit_rows(solver, decisions)
    solver.trigger = None


def close_terminal_dims(
    solver: Solver, terminals: Sequence[Terminal], guessable: Sequence[bool]
) -> None:
    """Leaf dims take their lower bound; a parameter dim without one is an error.

    Unless the parameter's row variable was safe to guess (then the dim
    falls to the remaining-dims step). An affine or concatenated axis still
    waiting on its parts takes its lower bound too, before any parameter is
    checked: OCANNL relates such an axis by equality, not broadcasting
    (``row.ml``, ``solve_dim_ineq``), so a parameter sized only through a
    concatenation gets what the other parts leave (``kk`` of ``ii^jj^kk``
    added to a ``[7]``).
    """
    while True:
        decisions: list[tuple[DimVar, Size, Origin]] = []
        seen: set[DimVar] = set()
        for terminal in terminals:
            for dim in solver.norm_row(terminal.row).dims:
                dim = solver.find_dim(dim)
                if type(dim) is not DimVar or dim in seen:
                    continue
                bounds = solver.dim_bounds.get(dim.id)
                if bounds is not None and bounds.glb is not None:
                    seen.add(dim)
                    decisions.append((dim, bounds.glb, terminal.origin))
        for linear in solver.linears.values():
            if linear.kind == LinearKind.SUM:
                continue
            axis = solver.find_dim(linear.terms[-1][1])
            if type(axis) is not DimVar or axis in seen:
                continue
            bounds = solver.dim_bounds.get(axis.id)
            if bounds is not None and bounds.glb is not None:
                seen.add(axis)
                decisions.append((axis, bounds.glb, linear.origin))
        if not decisions:
            break
        _commit_dims(solver, decisions)
    # An affine or concatenated axis still waiting on its parts is sized by
    # its equation once they are (a parameter stacked with a literal whose
    # stacked axis is 1 + 1): it is no hidden dimension.
    computed = {
        axis
        for linear in solver.linears.values()
        if linear.kind != LinearKind.SUM
        and type(axis := solver.find_dim(linear.terms[-1][1])) is DimVar
    }
    for terminal, safe in zip(terminals, guessable, strict=True):
        if not terminal.is_param or safe:
            continue
        for dim in solver.norm_row(terminal.row).dims:
            found = solver.find_dim(dim)
            if type(found) is DimVar and found not in computed:
                _hidden_dimension(solver, terminal, "the size of one")
    solver.trigger = None


def close_pending_prefixes(solver: Solver) -> None:
    """Axes written before a row variable whose rows are both still open:
    the row variable gets no axes (the least the spec allows), which fixes
    the row to exactly the written axes."""
    while solver.prefixes:
        decisions: list[tuple[RowVar, Row, Origin]] = []
        for prefix in list(solver.prefixes.values()):
            var = solver.norm_row(prefix.rest).var
            if var is not None:
                decisions.append((var, EMPTY_ROW, prefix.origin))
        if not decisions:
            return
        _commit_rows(solver, decisions)


def close_remaining_rows(solver: Solver, rows: Sequence[Row]) -> None:
    """Every other row variable gets no further axes.

    A deliberate difference (docs/shapes.md): OCANNL's ``process_shape_row``
    (stage 6) gives such a row the bound its results put on it; here it
    keeps NumPy's broadcast of its operands, as forward evaluation does.
    """
    while True:
        decisions: list[tuple[RowVar, Row, Origin]] = []
        seen: set[RowVar] = set()
        candidates = [_open_var(solver, row) for row in rows]
        candidates.extend(RowVar(var_id) for var_id in solver.row_bounds)
        for var in candidates:
            if var is None:
                continue
            rep = _is_bare(solver, var)
            if rep is None:
                rep = _open_var(solver, Row((), var))
                if rep is None:
                    continue
            if rep in seen:
                continue
            seen.add(rep)
            decisions.append((rep, EMPTY_ROW, CLOSING_ORIGIN))
        if not decisions:
            return
        _commit_rows(solver, decisions)


def close_remaining_dims(
    solver: Solver, rows: Sequence[Row], search: GuessSearch | None = None
) -> None:
    """Every other dim becomes 1, or what a fixed index needs.

    A deliberate difference like :func:`close_remaining_rows`: OCANNL's
    ``eliminate_dim_entry`` (stage 6) gives it its lower bound. Each round
    decides, in this order of preference:

    1. the dims a fixed index bounds from below (their sizes reach the dims
       they broadcast to at Stage 1; an unbounded result dim guessed 1 in the
       same round would clash with an operand of 3);
    2. the free dims, all at once, but those that broadcast (directly or
       through other dims) from a dim a pending equation waits on: as in
       forward evaluation, a result dim follows its operands, so it waits for
       the equation (guessing it 1 would force the operand to 1, e.g. the
       stacked axis of ``sin [g1; g2]``);
    3. dims a pending affine, concatenated or total equation waits on
       (:func:`_decide_equations`), one per equation: guessing it may
       solve the rest.

    The dims that broadcast from a waiting dim are decided in a later round,
    once the equation is solved: forced to its size at Stage 1, or free
    again if it is 1. The guesses of step 3 go through ``search`` (the
    choice points a contradiction returns to), when given; without one,
    each round's guesses are plain commits.
    """
    while True:
        waiting = _waiting_dims(solver)
        downstream = _broadcasting_from(solver, waiting)
        decisions: list[tuple[DimVar, Size, Origin]] = []
        followers: list[tuple[DimVar, Size, Origin]] = []
        waits: list[DimVar] = []  # in the order of the rows, then of the entries
        seen: set[DimVar] = set()
        candidates: list[Dim] = [d for row in rows for d in solver.norm_row(row).dims]
        if search is not None:
            search.work += len(candidates)
        candidates.extend(DimVar(var_id) for var_id in solver.dim_bounds)
        for dim in candidates:
            dim = solver.find_dim(dim)
            if type(dim) is not DimVar or dim in seen:
                continue
            seen.add(dim)
            if dim in waiting:
                waits.append(dim)
                continue
            bounds = solver.dim_bounds.get(dim.id)
            size = Size(1) if bounds is None else Size(bounds.at_least)
            decision = (dim, size, CLOSING_ORIGIN)
            (followers if dim in downstream else decisions).append(decision)
        bounded = [d for d in (*decisions, *followers) if d[1].n > 1]
        if bounded or decisions:
            _commit_dims(solver, bounded or decisions)
            continue
        if not waits:
            # Followers broadcast from a waiting dim, which has stored
            # relations and so is a candidate: none is left without a wait.
            return
        if search is not None:
            _decide_equations(solver, waits, search)
        else:
            _decide_alone(solver, waits)


def _decide_alone(solver: Solver, waits: Sequence[DimVar]) -> None:
    """:func:`_decide_equations` for ``close_remaining_dims`` called without
    a search: through one of its own, ended at once (nothing runs the step
    again, and an open search would keep recording on the solver's trail)."""
    search = GuessSearch(solver)
    try:
        _decide_equations(solver, waits, search)
    finally:
        search.end()


def _waiting_dims(solver: Solver) -> set[DimVar]:
    """The unknown dims of pending linear equations and totals (a total's
    rows and, if a dim counts its elements, that dim)."""
    find_dim = solver.find_dim
    waiting = {
        found
        for linear in solver.linears.values()
        for _, dim in linear.terms
        if type(found := find_dim(dim)) is DimVar
    }
    for total in solver.totals.values():
        waiting.update(
            found
            for row in total.rows
            for dim in solver.norm_row(row).dims
            if type(found := find_dim(dim)) is DimVar
        )
        if isinstance(total.count, DimVar | Size):
            found = find_dim(total.count)
            if type(found) is DimVar:
                waiting.add(found)
    return waiting


def _broadcasting_from(solver: Solver, sources: set[DimVar]) -> set[DimVar]:
    """The unknown dims that broadcast from ``sources``, directly or through
    other dims (a walk of the stored inequalities: linear in their number)."""
    found: set[DimVar] = set()
    stack = list(sources)
    while stack:
        bounds = solver.dim_bounds.get(stack.pop().id)
        if bounds is None:
            continue
        for res, _ in bounds.res:
            dim = solver.find_dim(res)
            if type(dim) is DimVar and dim not in found and dim not in sources:
                found.add(dim)
                stack.append(dim)
    return found


def _decide_equations(
    solver: Solver, waits: Sequence[DimVar], search: GuessSearch
) -> None:
    """Guess the dims of pending equations so they stay solvable in positive sizes.

    An affine or concatenated axis that no other pending equation uses as a
    part takes the least size its equations allow with every unknown part at
    its minimum (OCANNL subtracts the known parts; with parts all unknown it
    pairs them and allows empty ones, which positive sizes cannot: ``a^b^c =
    d^e`` closes to ``1+1+1 = 1+2``). Where no such axis is left, the first
    unknown part (in the order the spec writes them) of each equation whose
    axis is known takes its minimum, and Stage 1 gives the last part the
    rest. The equations are taken in the order they were made, one guess
    each, solved before the next is read (a guess's consequences can size
    another equation's dims): one round guesses every equation, so the
    rounds follow the nesting of the equations, not their number. With no
    such equation, the first unknown dim of the earliest pending total (in
    the order of its own rows, see :func:`_first_unknown_of_a_total`) takes
    its minimum (a total ``a·b = 6`` of two unknown dims closes to ``a = 1,
    b = 6``).
    """
    find_dim = solver.find_dim
    minimum = _equation_minima(solver)
    structured = [
        (linear_id, linear)
        for linear_id, linear in sorted(solver.linears.items())
        if linear.kind != LinearKind.SUM
    ]
    parts_of_pending = {
        found
        for _, linear in structured
        for _, dim in linear.terms[:-1]
        if type(found := find_dim(dim)) is DimVar
    }
    axes: dict[DimVar, list[DimLinear]] = {}
    for _, linear in structured:
        axis = find_dim(linear.terms[-1][1])
        if type(axis) is DimVar:
            axes.setdefault(axis, []).append(linear)

    def floor(dim: DimVar) -> int:
        # A dim's least size (a variable unified since reads its own minimum).
        found = minimum.get(dim)
        if found is None:
            bounds = solver.dim_bounds.get(dim.id)
            return 1 if bounds is None else bounds.at_least
        return found

    def least(axis: DimVar) -> int:
        # The axis's least size from its parts as they are now.
        sizes = [floor(axis)]
        for linear in axes[axis]:
            total = linear.const
            for coeff, dim in linear.terms[:-1]:
                found = find_dim(dim)
                assert type(found) is DimVar or type(found) is Size
                total += coeff * (found.n if type(found) is Size else floor(found))
            sizes.append(total)
        return max(sizes)

    guessed = False
    for axes_first in (True, False):
        for linear_id, linear in structured:
            if linear_id not in solver.linears:
                continue  # solved by an earlier guess's consequences
            axis = find_dim(linear.terms[-1][1])
            if axes_first:
                if type(axis) is not DimVar or axis not in axes:
                    continue
                if axis in parts_of_pending:
                    continue
                guess, size = axis, least(axis)
            else:
                if type(axis) is DimVar:
                    continue
                unknown = [
                    found
                    for _, dim in linear.terms[:-1]
                    if type(found := find_dim(dim)) is DimVar
                ]
                if not unknown:
                    continue
                guess, size = unknown[0], floor(unknown[0])
            search.guess(guess, size, linear.origin)
            guessed = True
        if guessed:
            return
    var = _first_unknown_of_a_total(solver) or waits[0]
    bounds = solver.dim_bounds.get(var.id)
    search.guess(var, 1 if bounds is None else bounds.at_least, CLOSING_ORIGIN)


def _first_unknown_of_a_total(solver: Solver) -> DimVar | None:
    """The first unknown dim of the earliest pending total, in its rows' order.

    Reading the total's own rows (batch, input, output; each from its first
    axis) rather than the session's shapes makes the guess independent of
    the order the shapes were made in, which differs between a shape scheme
    and its body: the total's last unknown dim, on its last row, gets the
    elements, as its last open row does in :func:`close_totals`.
    """
    find_dim = solver.find_dim
    for total_id in sorted(solver.totals):
        for row in solver.totals[total_id].rows:
            for dim in solver.norm_row(row).dims:
                found = find_dim(dim)
                if type(found) is DimVar:
                    return found
    return None


def _equation_minima(solver: Solver) -> dict[DimVar, int]:
    """The least size of each unknown dim of the pending structured equations.

    A dim's own minimum (a fixed index), raised for an axis to what its parts
    at their minima make; axes nested in other equations (a concatenation of
    concatenations) are raised from the inside out.
    """
    find_dim = solver.find_dim
    minimum: dict[DimVar, int] = {}
    linears = [
        linear for linear in solver.linears.values() if linear.kind != LinearKind.SUM
    ]
    for linear in linears:
        for _, dim in linear.terms:
            found = find_dim(dim)
            if type(found) is DimVar and found not in minimum:
                bounds = solver.dim_bounds.get(found.id)
                minimum[found] = 1 if bounds is None else bounds.at_least
    for _ in range(len(linears) + 1):
        changed = False
        for linear in linears:
            axis = find_dim(linear.terms[-1][1])
            if type(axis) is not DimVar:
                continue
            least = linear.const
            for coeff, dim in linear.terms[:-1]:
                found = find_dim(dim)
                least += coeff * (found.n if type(found) is Size else minimum[found])
            if least > minimum[axis]:
                minimum[axis] = least
                changed = True
        if not changed:
            break
    return minimum


def check_totals(solver: Solver) -> None:
    """Every total holds (all of their dims are known now)."""
    for total_id in list(solver.totals):
        solver.push_total_check(total_id)
        solver.run()
