"""Sessions: tensors, operations, rewind windows and closing.

A :class:`Session` owns

* one monotonic variable counter (:meth:`Session.var_mark` reads it; it is
  never rewound, so ids are never reused);
* the :class:`~axisflow.shapes.solver.Solver` state (solutions, bounds,
  policy marks, pending totals, terminal rows);
* an append-only :attr:`Session.log` of the constraints added while a rewind
  window is open, in emission order (of every one with ``keep_log=True``);
* the shapes registered with the next closing, the capture
  references, the ``tainted`` flag and the number of closings.

Every mutation of that state goes through the session's
:class:`~axisflow.shapes.trail.Trail`. ``with session.rewind() as window:``
opens a window; on exit everything the window added is undone, whatever
happened inside (a shape error, a closing, nested windows). While the window
is open, :meth:`Window.constraints` reads off the constraints it added, and
:meth:`Window.touched_variables` the variables whose solver entries it
changed, which :meth:`Session.dim_entry` and :meth:`Session.row_entry` read.
A shape made inside a window is *discarded* when the window is rewound.

The operations (:mod:`axisflow.shapes.operations`, mixed in) build
constraints (:mod:`axisflow.shapes.constraints`) and hand them to
:meth:`Session.add`, which logs them and solves them at Stage 1; closing is
:mod:`axisflow.shapes.closing`. A
shape error raised while solving a constraint already logged *taints* the
session: its state then holds half-applied constraints and :meth:`Session.close`
refuses to run. Malformed input (a bad spec, a wrong number of operands) is
refused before anything is written and does not taint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, NoReturn

from axisflow.gc_pause import collector_paused
from axisflow.shapes.closing import close as close_open_state
from axisflow.shapes.concrete import FastRecord
from axisflow.shapes.constraints import (
    Constraint,
    DeferredCount,
    DimEq,
    Mark,
    RowEq,
    SetDim,
    TotalElems,
)
from axisflow.shapes.errors import ShapeError
from axisflow.shapes.operations import Operations
from axisflow.shapes.refs import DimRef
from axisflow.shapes.solver import Solver
from axisflow.shapes.spec import parse_shape_spec
from axisflow.shapes.tensors import NO_MARGINS, ROW_ATTRS, FastShape, Shape, Tensor
from axisflow.shapes.terms import (
    DEFAULT_BASIS,
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
from axisflow.shapes.trail import Trail


@dataclass(frozen=True)
class DimEntry:
    """A solver entry of a dim variable (read-only copy)."""

    var: DimVar
    value: Dim | None
    glb: Size | None
    res: tuple[DimVar, ...]
    opnd: tuple[DimVar, ...]
    at_least: int


@dataclass(frozen=True)
class RowEntry:
    """A solver entry of a row variable (read-only copy)."""

    var: RowVar
    value: Row | None
    glbs: tuple[Row, ...]
    res: tuple[RowVar, ...]
    opnd: tuple[RowVar, ...]
    marks: frozenset[Mark]


class Window:
    """An open rewind window (see :meth:`Session.rewind`)."""

    def __init__(self, session: Session, trail_start: int, log_start: int) -> None:
        self.session = session
        self.var_mark = session.var_mark()
        self._trail_start = trail_start
        self._log_start = log_start
        self.tainted_at_open = session.tainted
        self.is_open = True

    @property
    def trail_start(self) -> int:
        """The length of the session's undo trail when the window opened."""
        return self._trail_start

    @property
    def log_start(self) -> int:
        """The length of the session's constraint log when the window opened."""
        return self._log_start

    def _require_open(self) -> None:
        if not self.is_open:
            raise ShapeError("this rewind window is closed: read it off before it ends")

    def constraints(self) -> tuple[Constraint, ...]:
        """The constraints added in the window so far, in emission order."""
        self._require_open()
        return tuple(self.session.log[self._log_start :])

    def is_young(self, var: DimVar | RowVar) -> bool:
        """Whether the variable was minted after the window opened."""
        return var.id >= self.var_mark

    def touched_variables(self) -> tuple[set[int], set[int]]:
        """Ids of dim and row variables whose solver entries the window changed.

        Costs what the window wrote, not the size of the session.
        """
        self._require_open()
        return self.session.solver.touched_since(self._trail_start)


class Session(Operations):
    """A shape-inference session: make tensors, relate them, close.

    >>> s = Session()
    >>> w = s.param("w", "...->4")
    >>> x = s.leaf("x", "3")
    >>> y = s.compose("y", w, x)
    >>> s.close()
    >>> w.shape.dims(), y.shape.dims()
    (((), (3,), (4,)), ((), (), (4,)))
    """

    def __init__(
        self, *, keep_log: bool = False, concrete_fast_path: bool = True
    ) -> None:
        self._next_id = 0
        self._trail = Trail()
        self._solver = Solver(self._trail, self._mint)
        self._keep_log = keep_log
        # The concrete fast path (axisflow.shapes.concrete): the operations
        # made in the fast mode, or None once the session left it (until the
        # next closing). A kept log needs every constraint built: no fast mode.
        self._fast_enabled = concrete_fast_path and not keep_log
        self._fast: list[FastRecord] | None = [] if self._fast_enabled else None
        self._log: list[Constraint] = []
        self._shapes: list[Shape] = []
        # Padding margins published by closing, per shape (few have any).
        self._margins: dict[Shape, Mapping[Kind, tuple[tuple[int, int], ...]]] = {}
        self._refs: list[DimRef] = []
        self._tainted = False
        self._taint_error: ShapeError | None = None
        self._closings = 0
        self._scheme: str | None = None
        self._application: str | None = None
        self._forcing_guards: list[Callable[[str], None]] = []
        self._relation_guards: list[Callable[[str, DimRef], None]] = []
        self._constraint_guards: list[Callable[[Constraint], None]] = []
        self._use_observers: list[Callable[[Shape], None]] = []
        self._windows: list[Window] = []

    # ------------------------------------------------------------ variables

    def _mint(self) -> int:
        vid = self._next_id
        self._next_id = vid + 1
        return vid

    def tick(self) -> int:
        """Spend one tick of the variable counter (a shape's ``created_at``)."""
        return self._mint()

    def var_mark(self) -> int:
        """The variable counter: variables minted later have larger ids."""
        return self._next_id

    def fresh_dim_var(self) -> DimVar:
        """A new dim variable."""
        if self._fast is not None:
            self._leave_fast_mode()  # general state is being built from here
        return DimVar(self._mint())

    def fresh_row_var(self) -> RowVar:
        """A new row variable."""
        if self._fast is not None:
            self._leave_fast_mode()
        return RowVar(self._mint())

    # ------------------------------------------------------ the fast mode

    def _fast_allowed(self) -> bool:
        """Whether an operation may take the concrete fast path now.

        Only in the fast mode, and only when nothing reads constraints or
        uses as they are made (guards, use observers, rewind windows).
        """
        return (
            self._fast is not None
            and not self._constraint_guards
            and not self._use_observers
            and not self._trail.depth
        )

    def _fast_result(
        self,
        op: str,
        name: str,
        args: object,
        origin: Origin,
        rows: tuple[Row, Row, Row],
        provisional: bool,
        mints: int,
    ) -> FastShape:
        """Record an operation of the fast mode and make its shape.

        Reserves the ids the general path would mint: three row variables,
        the creation tick, and ``mints`` for its templates.
        """
        records = self._fast
        assert records is not None
        first = self._next_id
        end = first + 4 + mints
        self._next_id = end
        record = FastRecord(op, args, origin, rows, provisional, first, end)
        shape = FastShape(self, name, first + 3, record)
        record.shape = shape
        shape.registered_at = self._closings
        self._shapes.append(shape)
        records.append(record)
        return shape

    def _leave_fast_mode(self) -> None:
        """Build the general path's state of every operation of the fast mode.

        Each recorded operation runs its general path again, into its own
        shape and with the ids it reserved, in the order they were made: the
        state is the one the general path would have built from the start.
        The session stays out of the fast mode until its next closing.
        """
        records = self._fast
        if records is None:
            return
        self._fast = None
        if not records:
            return
        resume = self._next_id
        for record in records:
            self._replay(record)
        assert self._next_id == resume, "the fast path reserved other ids"

    def _replay(self, record: FastRecord) -> None:
        shape = record.shape
        assert shape is not None
        shape.__class__ = Shape
        shape._fast = None  # pyright: ignore[reportPrivateUsage]
        first = record.first_id
        shape.batch = Row((), RowVar(first))
        shape.input = Row((), RowVar(first + 1))
        shape.output = Row((), RowVar(first + 2))
        self._next_id = first + 4  # first + 3 is the shape's creation tick
        op, origin, args = record.op, record.origin, record.args
        if op == "pointwise":
            assert isinstance(args, tuple)
            self._emit_pointwise(origin, shape, args)
        elif op == "compose":
            assert isinstance(args, tuple)
            self._emit_compose(origin, shape, *args)
        elif op == "transpose":
            assert isinstance(args, tuple)
            self._emit_transpose(origin, shape, *args)
        else:
            assert isinstance(args, str)
            self._emit_terminal(shape, parse_shape_spec(args), op == "param", origin)
        assert self._next_id == record.end_id, (
            f"the fast path reserved other ids ({op})"
        )

    def _close_fast(self) -> None:
        """Closing in the fast mode: every shape takes its concrete rows.

        The general path's closing would give every open tail no axes and
        every free dim 1 (no leaf row is open): the rows computed already.
        """
        records = self._fast
        assert records is not None
        for record in records:
            shape = record.shape
            assert shape is not None
            shape.__class__ = Shape
            shape._fast = None  # pyright: ignore[reportPrivateUsage]
            shape.batch, shape.input, shape.output = record.rows
        self._fast = []
        self._solver.reset()
        self._shapes = []
        self._closings += 1

    @property
    def trail(self) -> Trail:
        """The session's undo trail (reading it leaves the fast mode)."""
        self._leave_fast_mode()
        return self._trail

    @trail.setter
    def trail(self, trail: Trail) -> None:
        self._leave_fast_mode()
        self._trail = trail

    @property
    def row_reader(self) -> Solver:
        """The solver, for shapes reading their rows through it.

        Does not leave the fast mode: a shape that is not of the fast mode
        (closed earlier, or made since leaving it) reads only solved rows.
        """
        return self._solver

    @property
    def solver(self) -> Solver:
        """The session's solver (reading it leaves the fast mode)."""
        self._leave_fast_mode()
        return self._solver

    @solver.setter
    def solver(self, solver: Solver) -> None:
        self._leave_fast_mode()
        self._solver = solver

    # ----------------------------------------------------------------- state

    @property
    def log(self) -> Sequence[Constraint]:
        """The constraints added while a rewind window was open, in emission order.

        With ``Session(keep_log=True)`` every constraint added to the session.
        Outside windows nothing reads the log (a window reads what it added),
        and keeping every constraint and its origin alive would make the heap,
        and the garbage collector's full collections, grow with the program
        for no use: it is opt-in.
        """
        return self._log

    @property
    def tainted(self) -> bool:
        """Whether a shape error left half-applied constraints in the session."""
        return self._tainted

    @property
    def taint_error(self) -> ShapeError | None:
        """The shape error that tainted the session, if it is tainted."""
        return self._taint_error if self._tainted else None

    @property
    def closings(self) -> int:
        """How many times the session was closed."""
        return self._closings

    @property
    def window(self) -> Window | None:
        """The innermost open rewind window, if any."""
        return self._windows[-1] if self._windows else None

    @property
    def refs(self) -> Sequence[DimRef]:
        """The capture references of the session (rewinding drops later ones)."""
        return self._refs

    @property
    def registered_shapes(self) -> Sequence[Shape]:
        """The shapes the next closing will solve."""
        return self._shapes

    def dim_entry(self, var: DimVar) -> DimEntry:
        """What the solver knows about a dim variable."""
        self._leave_fast_mode()
        solver = self._solver
        link = solver.dim_subst.get(var.id)
        bounds = solver.dim_bounds.get(var.id)
        if bounds is None:
            return DimEntry(var, link, None, (), (), 1)
        return DimEntry(
            var,
            link,
            bounds.glb,
            tuple(v for v, _ in bounds.res),
            tuple(v for v, _ in bounds.opnd),
            bounds.at_least,
        )

    def row_entry(self, var: RowVar) -> RowEntry:
        """What the solver knows about a row variable."""
        self._leave_fast_mode()
        solver = self._solver
        value = solver.row_subst.get(var.id)
        bounds = solver.row_bounds.get(var.id)
        marks = solver.marks(var)
        if bounds is None:
            return RowEntry(var, value, (), (), (), marks)
        return RowEntry(
            var,
            value,
            tuple(row for row, _ in bounds.glbs),
            tuple(v for v, _ in bounds.res),
            tuple(v for v, _ in bounds.opnd),
            marks,
        )

    def state(self) -> dict[str, Any]:
        """A comparable copy of everything rewinding must restore (for tests).

        Reads raw state (no path compression), so reading it changes nothing.
        """
        self._leave_fast_mode()
        solver = self._solver
        return {
            "dim_subst": dict(solver.dim_subst),
            "dim_bounds": {
                vid: (
                    b.glb,
                    b.glb_origin,
                    tuple(b.res),
                    tuple(b.opnd),
                    b.at_least,
                    tuple(b.totals),
                )
                for vid, b in solver.dim_bounds.items()
            },
            "row_subst": dict(solver.row_subst),
            "row_bounds": {
                vid: (
                    tuple(b.glbs),
                    tuple(b.res),
                    tuple(b.opnd),
                    tuple(b.totals),
                )
                for vid, b in solver.row_bounds.items()
            },
            "row_marks": dict(solver.row_marks),
            "row_gen": dict(solver.row_gen),
            "totals": dict(solver.totals),
            "linears": dict(solver.linears),
            "prefixes": dict(solver.prefixes),
            "paddings": tuple(solver.paddings),
            "terminals": tuple(solver.terminals),
            "log": tuple(self._log),
            "shapes": tuple(
                (id(s), s.rows(), s.discarded, s.registered_at) for s in self._shapes
            ),
            "refs": tuple(
                (id(r), r.var, r.row, r.size, r.discarded) for r in self._refs
            ),
            "tainted": self._tainted,
            "taint_error": self._taint_error,
            "closings": self._closings,
        }

    # ---------------------------------------------------------------- guards

    @contextmanager
    def guard_forcing(self, guard: Callable[[str], None]) -> Iterator[None]:
        """Call ``guard(what)`` (which may raise) before closing or reading dims.

        A shape-scheme trace uses this to refuse anything that forces dims.
        """
        self._forcing_guards.append(guard)
        try:
            yield
        finally:
            self._forcing_guards.pop()

    def check_forcing(self, what: str) -> None:
        """Run the innermost forcing guard, if any."""
        if self._forcing_guards:
            self._forcing_guards[-1](what)

    @contextmanager
    def guard_relations(self, guard: Callable[[str, DimRef], None]) -> Iterator[None]:
        """Call ``guard(operation, ref)`` (which may raise) for each capture
        reference an operation relates to another (``set_equal``).

        A shape-scheme trace uses this to refuse relating a reference made
        before it, which a scheme cannot carry.
        """
        self._relation_guards.append(guard)
        try:
            yield
        finally:
            self._relation_guards.pop()

    @contextmanager
    def guard_constraints(self, guard: Callable[[Constraint], None]) -> Iterator[None]:
        """Call ``guard(constraint)`` (which may raise) before a constraint is added.

        A shape-scheme trace uses this to refuse what a scheme cannot carry
        before it is written (the innermost guard runs).
        """
        self._leave_fast_mode()
        self._constraint_guards.append(guard)
        try:
            yield
        finally:
            self._constraint_guards.pop()

    @contextmanager
    def observe_uses(self, observer: Callable[[Shape], None]) -> Iterator[None]:
        """Call ``observer(shape)`` for each shape an operation reads.

        Operations report their operands; shape schemes report the shapes they
        are applied to. A trace uses this to find the pre-existing shapes its
        function reads (the innermost observer is called).
        """
        self._leave_fast_mode()
        self._use_observers.append(observer)
        try:
            yield
        finally:
            self._use_observers.pop()

    def note_use(self, shape: Shape) -> None:
        """Report a shape read by an operation to the innermost use observer."""
        if self._use_observers:
            self._use_observers[-1](shape)

    def margins_of(self, shape: Shape) -> Mapping[Kind, tuple[tuple[int, int], ...]]:
        """The padding margins closing published for ``shape`` (per kind)."""
        return self._margins.get(shape, NO_MARGINS)

    def check_alive(self, shape: Shape) -> None:
        """Raise if the shape was discarded by a rewind or is from another session."""
        if shape.session is not self:
            raise ShapeError(f"the shape of '{shape.name}' belongs to another session")
        if shape.discarded:
            raise ShapeError(f"the shape of '{shape.name}' was discarded by a rewind")

    # -------------------------------------------------------------- rewinding

    @contextmanager
    def rewind(self) -> Iterator[Window]:
        """A window whose every effect on the session is undone when it ends.

        The variable counter is not rewound. Windows nest.
        """
        self._leave_fast_mode()
        trail = self._trail
        start = len(trail.entries)
        trail.depth += 1
        window = Window(self, start, len(self._log))
        self._windows.append(window)
        try:
            yield window
        finally:
            window.is_open = False
            self._windows.pop()
            trail.undo_to(start)
            trail.depth -= 1

    @contextmanager
    def provenance(
        self, *, scheme: str | None = None, application: str | None = None
    ) -> Iterator[None]:
        """Stamp origins made inside with a scheme and/or application site."""
        saved = (self._scheme, self._application)
        self._scheme = scheme if scheme is not None else self._scheme
        self._application = (
            application if application is not None else self._application
        )
        try:
            yield
        finally:
            self._scheme, self._application = saved

    # ------------------------------------------------------------ constraints

    @collector_paused
    def add(self, constraint: Constraint) -> None:
        """Log a constraint and solve it at Stage 1.

        A ``ShapeError`` raised while solving taints the session.
        """
        self._leave_fast_mode()
        self._add(constraint)

    def _add(self, constraint: Constraint) -> None:
        """The one route of a constraint into the solver (``add`` without
        pausing the collector: the operations call it, paused already): the
        innermost constraint guard sees it, the log keeps it if anything
        reads the log, the solver solves it at Stage 1, and a contradiction
        taints the session."""
        if self._constraint_guards:
            self._constraint_guards[-1](constraint)
        if self._keep_log or self._trail.depth:
            self._trail.append(self._log, constraint)
        solver = self._solver
        solver.trigger = constraint.origin
        try:
            solver.add(constraint)
        except ShapeError as error:
            self._taint(error)
            raise
        finally:
            solver.trigger = None

    def _taint(self, error: ShapeError) -> None:
        if not self._tainted:
            self._trail.set_attr(self, "_tainted", True)
            self._trail.set_attr(self, "_taint_error", error)

    def _publish_margins(self, holders: dict[int, list[tuple[Shape, Kind]]]) -> None:
        """Give the padded convolution axes their margins (``Shape.padding``)."""
        solver = self._solver
        widest: dict[tuple[int, Kind], list[tuple[int, int]]] = {}
        shapes: dict[int, Shape] = {}
        for padding in solver.paddings:
            kernel = solver.find_dim(padding.kernel)
            assert type(kernel) is Size, "closing left a kernel open"
            after = (kernel.n + 1) // 2
            margin = (kernel.n - after, after)
            for shape, kind in holders.get(id(padding.row), ()):
                key = (id(shape), kind)
                margins = widest.get(key)
                if margins is None:
                    length = len(shape.row(kind).dims)
                    margins = list(shape.margins.get(kind, ((0, 0),) * length))
                    widest[key] = margins
                    shapes[id(shape)] = shape
                index = padding.index % len(margins)
                margins[index] = (
                    max(margins[index][0], margin[0]),
                    max(margins[index][1], margin[1]),
                )
        for (shape_id, kind), margins in widest.items():
            shape = shapes[shape_id]
            self._trail.set_item(
                self._margins, shape, {**shape.margins, kind: tuple(margins)}
            )

    def register_shape(self, shape: Shape) -> None:
        """Have the next closing solve this shape (new shapes are registered).

        Registering a shape again before the next closing changes nothing.
        """
        self._leave_fast_mode()
        if shape.registered_at == self._closings:
            return
        self._trail.set_attr(shape, "registered_at", self._closings)
        self._trail.append(self._shapes, shape)

    def is_registered(self, shape: Shape) -> bool:
        """Whether the next closing will solve the shape."""
        return shape.registered_at == self._closings and not shape.discarded

    # ---------------------------------------------------------------- helpers

    def _origin(
        self,
        operation: str,
        tensor: str,
        operands: Sequence[Tensor] = (),
        *,
        detail: str | None = None,
        site: object = None,
    ) -> Origin:
        return Origin(
            operation,
            tensor,
            tuple([t.name for t in operands]),
            None,
            None,
            detail,
            self._scheme,
            self._application,
            site,
        )

    def _fail_input(self, message: str) -> NoReturn:
        raise ShapeError(message)

    def _check_text(self, operation: str, what: str, value: object) -> None:
        """A name, label or spec must be a string (a clear error, not a TypeError)."""
        if not isinstance(value, str):
            self._fail_input(f"{operation}: the {what} must be a string, got {value!r}")

    def _check_operands(
        self, operation: str, name: str, operands: Sequence[Any]
    ) -> None:
        self._check_text(operation, "name", name)
        for operand in operands:
            if not isinstance(operand, Tensor):
                self._fail_input(
                    f"{operation} '{name}': operands must be tensors, got {operand!r}"
                )
            if operand.shape.session is not self:
                self._fail_input(
                    f"{operation} '{name}': operand '{operand.name}' belongs to another "
                    f"session"
                )
            if operand.shape.discarded:
                self._fail_input(
                    f"{operation} '{name}': operand '{operand.name}' was discarded by a "
                    f"rewind"
                )
        if self._use_observers:
            for operand in operands:
                self._use_observers[-1](operand.shape)

    def _new_shape(self, name: str) -> Shape:
        return self.new_shape(
            name,
            Row((), self.fresh_row_var()),
            Row((), self.fresh_row_var()),
            Row((), self.fresh_row_var()),
        )

    def new_shape(
        self,
        name: str,
        batch: Row,
        input_: Row,
        output: Row,
        *,
        register: bool = True,
        created_at: int | None = None,
    ) -> Shape:
        """A shape of the given rows, discarded if a window around it is rewound.

        ``register``: have the next closing solve it. ``created_at``: a tick of :meth:`tick` shared by shapes made together
        (each takes one of its own by default).
        """
        self._leave_fast_mode()
        shape = Shape(self, name, batch, input_, output, created_at)
        if register:
            # A new shape is registered directly: if a rewind drops it from
            # the list, it is discarded as well, so its epoch needs no undo.
            shape.registered_at = self._closings
            self._trail.append(self._shapes, shape)
        if self._trail.depth:
            self._trail.on_undo(lambda: setattr(shape, "discarded", True))
        return shape

    # ----------------------------------------------------------------- leaves

    def dim_ref(self, label: str) -> DimRef:
        """A capture reference for the einsum label ``label``."""
        self._leave_fast_mode()
        self._check_text("dim_ref", "label", label)
        ref = DimRef(self, label, self.var_mark())
        self._trail.append(self._refs, ref)
        self._trail.on_undo(lambda: setattr(ref, "discarded", True))
        return ref

    @collector_paused
    def set_dim(
        self, ref: DimRef, n: int, *, basis: str = DEFAULT_BASIS, site: object = None
    ) -> None:
        """Fix the size the capture reference stands for."""
        self._leave_fast_mode()
        if not isinstance(ref, DimRef) or ref._session is not self:
            self._fail_input(f"set_dim needs a dim_ref() of this session, got {ref!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            self._fail_input(
                f"set_dim '{ref.label}': the size must be a positive integer, got {n!r}"
            )
        origin = self._origin("set_dim", ref.label, site=site)
        self._add(SetDim(ref, Size(n, basis), origin))

    @collector_paused
    def set_equal(self, first: DimRef, second: DimRef, *, site: object = None) -> None:
        """The two capture references stand for the same size (OCANNL's
        ``Shape.set_equal``).

        If one of them stands for a known size, the other is ``set_dim`` to it
        (both known: they must agree). Otherwise both must be bound by an
        einsum: two dims are equated, two rows too, and a row and a dim say
        the row holds as many elements as the dim has positions. A reference
        neither bound nor set gives too little to relate.
        """
        self._leave_fast_mode()
        for ref in (first, second):
            if not isinstance(ref, DimRef) or ref._session is not self:
                self._fail_input(
                    f"set_equal needs two dim_ref()s of this session, got {ref!r}"
                )
        labels = f"'{first.label}' and '{second.label}'"
        origin = self._origin(
            "set_equal", first.label, detail=f"= '{second.label}'", site=site
        )
        if self._relation_guards:
            for ref in (first, second):
                self._relation_guards[-1](origin.describe(), ref)
        known_first, known_second = first.known_size(), second.known_size()
        if known_first is not None and known_second is not None:
            if known_first.n != known_second.n:
                self._fail_input(
                    f"set_equal: the capture references {labels} stand for different "
                    f"sizes ({known_first!r} and {known_second!r})"
                )
            return
        if known_first is not None or known_second is not None:
            ref, size = (
                (second, known_first)
                if known_first is not None
                else (first, known_second)
            )
            assert size is not None
            self._add(SetDim(ref, size, origin))
            return
        if not first.is_bound or not second.is_bound:
            self._fail_input(
                f"set_equal: insufficient information between the capture "
                f"references {labels}: a reference must be bound by an einsum or "
                f"stand for a known size"
            )
        side_first, side_second = (
            Side(f"capture reference '{first.label}'"),
            Side(f"capture reference '{second.label}'"),
        )
        origin = origin.with_sides(side_first, side_second)
        bound_first = first.var if first.var is not None else first.row
        bound_second = second.var if second.var is not None else second.row
        if type(bound_first) is DimVar and type(bound_second) is DimVar:
            self._add(DimEq(bound_first, bound_second, origin))
        elif type(bound_first) is RowVar and type(bound_second) is RowVar:
            self._add(RowEq(Row((), bound_first), Row((), bound_second), origin))
        elif type(bound_first) is RowVar:
            assert type(bound_second) is DimVar
            self._add(TotalElems((Row((), bound_first),), bound_second, origin))
        else:
            assert type(bound_first) is DimVar and type(bound_second) is RowVar
            self._add(TotalElems((Row((), bound_second),), bound_first, origin))

    @collector_paused
    def total_elems(
        self,
        tensor: Tensor,
        count: int | DeferredCount,
        *,
        kinds: Sequence[Kind] = KINDS,
        site: object = None,
    ) -> None:
        """The rows ``kinds`` of ``tensor`` hold ``count`` elements in all.

        A :class:`~axisflow.shapes.constraints.DeferredCount` is resolved at
        closing (e.g. a count that depends on the precision).
        """
        self._leave_fast_mode()
        if not isinstance(tensor, Tensor):
            raise TypeError(f"total_elems: tensor must be a Tensor, got {tensor!r}")
        self._check_operands("total_elems", tensor.name, (tensor,))
        if not isinstance(count, DeferredCount) and (
            isinstance(count, bool) or not isinstance(count, int) or count < 1
        ):
            self._fail_input(
                f"total_elems '{tensor.name}': the count must be a positive integer or a "
                f"DeferredCount, got {count!r}"
            )
        rows = tuple(tensor.shape.row(k) for k in kinds)
        origin = self._origin(
            "total_elems", tensor.name, detail=f"{count} elements", site=site
        )
        self._add(TotalElems(rows, count, origin))

    # ----------------------------------------------------------------- closing

    @collector_paused  # closing makes no cycles; see axisflow.gc_pause
    def close(self) -> None:
        """Solve every registered shape to concrete dims (OCANNL's ``finish_inference``).

        Afterwards every registered shape has concrete rows, capture references
        publish their sizes, and the session forgets its open state.
        """
        self.check_forcing("closing the session")
        if self._fast is not None:
            self._close_fast()
            return
        if self._tainted:
            raise ShapeError(
                "cannot close: an earlier shape error left this session with "
                "half-applied constraints (it is tainted); rewind or start a new session"
            )
        solver = self._solver
        norm_row = solver.norm_row
        # Rows already concrete (most, after Stage 1) have nothing to close:
        # only the open ones go to the solver, in registration order.
        # The shapes holding each stored row, for the padded axes' margins.
        holders: dict[int, list[tuple[Shape, Kind]]] = {}
        if solver.paddings:
            # Only the padded rows: a list per stored row of every shape
            # would cost memory per shape of the program.
            padded = {id(padding.row) for padding in solver.paddings}
            for shape in self._shapes:
                for kind, row in zip(KINDS, shape.rows(), strict=True):
                    if id(row) in padded:
                        holders.setdefault(id(row), []).append((shape, kind))
        solved: list[tuple[Shape, str, Row]] = []
        open_rows: list[tuple[Shape, str, Row]] = []
        # Shapes share row objects (constant rows, a scheme's presolved rows):
        # one stored concrete is concrete wherever it occurs.
        concrete_ids: set[int] = set()
        for shape in self._shapes:
            for attr, row in zip(ROW_ATTRS, shape.rows(), strict=True):
                if id(row) in concrete_ids:
                    continue
                current = norm_row(row)
                if current.var is None and all(type(d) is Size for d in current.dims):
                    if current is row:
                        concrete_ids.add(id(row))
                    else:
                        solved.append((shape, attr, current))
                else:
                    open_rows.append((shape, attr, row))
        rows = [row for _, _, row in open_rows]
        rows.extend(Row((ref.var,)) for ref in self._refs if ref.var is not None)
        rows.extend(Row((), ref.row) for ref in self._refs if ref.row is not None)
        try:
            close_open_state(solver, rows)
        except ShapeError as error:
            self._taint(error)
            raise
        finally:
            solver.trigger = None
        set_attr = self._trail.set_attr
        for shape, attr, concrete in solved:
            set_attr(shape, attr, concrete)
        for shape, attr, row in open_rows:
            concrete = norm_row(row)
            assert concrete.is_concrete(), f"closing left {shape.name}.{attr} open"
            set_attr(shape, attr, concrete)
        if solver.paddings:
            self._publish_margins(holders)
        for ref in self._refs:
            if ref.is_bound:
                size = ref.known_size()
                assert size is not None, f"closing left capture '{ref.label}' open"
                set_attr(ref, "size", size)
                set_attr(ref, "var", None)
                set_attr(ref, "row", None)
        solver.reset()
        set_attr(self, "_shapes", [])
        set_attr(self, "_closings", self._closings + 1)
        if self._fast_enabled and not self._trail.depth:
            # Nothing is left open: the next operations may take the fast path.
            self._fast = []
