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

Operations build constraints (:mod:`axisflow.shapes.constraints`) and hand
them to :meth:`Session.add`, which logs them and solves them at Stage 1. A
shape error raised while solving a constraint already logged *taints* the
session: its state then holds half-applied constraints and :meth:`close`
refuses to run. Malformed input (a bad spec, a wrong number of operands) is
refused before anything is written and does not taint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, NoReturn

from axisflow.gc_pause import collector_paused
from axisflow.shapes.constraints import (
    CaptureBind,
    Constraint,
    DeferredCount,
    DimAtLeast,
    DimEq,
    DimIneq,
    Mark,
    PolicyMark,
    RowEq,
    RowIneq,
    SetDim,
    Terminal,
    TotalElems,
)
from axisflow.shapes.errors import ShapeError
from axisflow.shapes.solver import DimBounds, RowBounds, Solver
from axisflow.shapes.spec import (
    FixedIndex,
    Label,
    LabelRow,
    parse_einsum_spec,
    parse_shape_spec,
)
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
    format_concrete_shape,
)
from axisflow.shapes.trail import Trail

Role = Literal["leaf", "param", "fresh", "result"]

_SPEC_SIDES = {kind: Side("its spec", kind) for kind in KINDS}
_ROW_ATTRS = tuple(kind.value for kind in KINDS)  # Shape's attributes, in row order


def shape_sides(name: str) -> tuple[Side, Side, Side]:
    """The sides naming a shape's batch, input and output rows in origins."""
    return (Side(name, Kind.BATCH), Side(name, Kind.INPUT), Side(name, Kind.OUTPUT))


class Shape:
    """The three rows of a tensor, registered with its session's next closing.

    The rows are terms over the session's variables; :meth:`current` reads
    them through the solver, :meth:`dims` returns concrete sizes once every
    dim is solved. Closing rewrites the rows to their concrete values.
    """

    __slots__ = (
        "_session",
        "_sides",
        "batch",
        "created_at",
        "discarded",
        "input",
        "name",
        "output",
        "registered_at",
    )

    def __init__(
        self,
        session: Session,
        name: str,
        batch: Row,
        input_: Row,
        output: Row,
        sides: tuple[Side, Side, Side] | None = None,
    ):
        self._session = session
        self.name = name
        self.batch = batch
        self.input = input_
        self.output = output
        self.discarded = False
        # A tick of the variable counter (ids are never reused, so one is spent
        # on this): a shape made after ``var_mark()`` was read has
        # ``created_at >= mark``, one made before has ``created_at < mark``. A
        # shape scheme tells the shapes its function made from older ones so.
        self.created_at = session._mint()
        # The closing count when the shape was registered (-1: never), so that
        # registering twice before one closing registers once.
        self.registered_at = -1
        self._sides = sides if sides is not None else shape_sides(name)

    @property
    def session(self) -> Session:
        """The session the shape belongs to."""
        return self._session

    def rows(self) -> tuple[Row, Row, Row]:
        """The rows as stored (batch, input, output)."""
        return (self.batch, self.input, self.output)

    def side(self, kind: Kind) -> Side:
        """The side naming this shape's row of one kind in constraint origins."""
        return self._sides[KINDS.index(kind)]

    def row(self, kind: Kind | str) -> Row:
        """The stored row of one kind (``Kind.BATCH`` or ``"batch"``, ...)."""
        if kind == Kind.BATCH:
            return self.batch
        if kind == Kind.INPUT:
            return self.input
        if kind == Kind.OUTPUT:
            return self.output
        raise ShapeError(
            f"no axis kind {kind!r}: the kinds are 'batch', 'input' and 'output'"
        )

    def current(self) -> tuple[Row, Row, Row]:
        """The rows with everything solved so far substituted."""
        self._session.check_alive(self)
        norm_row = self._session.solver.norm_row
        return (norm_row(self.batch), norm_row(self.input), norm_row(self.output))

    def describe(self) -> str:
        """Spec-like text of the current rows, e.g. ``8|3->4`` or ``...|->d5``."""
        return format_concrete_shape(self.current())

    def dims(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
        """``(batch, input, output)`` sizes; raises ``ShapeError`` until all are solved."""
        self._session.check_forcing(f"reading the dims of '{self.name}'")
        rows = self.current()
        if not all(row.is_concrete() for row in rows):
            raise ShapeError(
                f"the shape of '{self.name}' is not solved yet "
                f"({format_concrete_shape(rows)}); call close() first"
            )
        batch, input_, output = (
            tuple(d.n for d in row.dims if type(d) is Size) for row in rows
        )
        return (batch, input_, output)

    def __repr__(self) -> str:
        return f"<Shape {self.name}: {format_concrete_shape(self.rows())}>"


@dataclass(frozen=True, eq=False)
class Tensor:
    """A tensor of a session: a name, a shape, its role and where it was made."""

    name: str
    shape: Shape
    role: Role
    origin: Origin


class DimRef:
    """A capture reference (OCANNL's ``delayed_var_ref``), made by ``dim_ref``.

    An einsum given ``capture_dims=[ref]`` binds the reference to the dim
    variable of its spec label ``ref.label``. :attr:`value` is the solved size
    (published at closing) or ``None``.
    """

    __slots__ = ("_session", "created_at", "discarded", "label", "size", "var")

    def __init__(self, session: Session, label: str, created_at: int) -> None:
        self._session = session
        self.label = label
        self.created_at = created_at
        self.var: DimVar | None = None
        self.size: Size | None = None
        self.discarded = False

    @property
    def session(self) -> Session:
        """The session the reference belongs to."""
        return self._session

    @property
    def value(self) -> int | None:
        """The size the reference stands for, if known."""
        if self.var is not None:
            dim = self._session.solver.find_dim(self.var)
            if type(dim) is Size:
                return dim.n
            return None
        return self.size.n if self.size is not None else None

    def __repr__(self) -> str:
        return f"<DimRef {self.label}={self.value}>"


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
        solver = self.session.solver
        dims: set[int] = set()
        rows: set[int] = set()

        row_tables = (
            solver.row_subst,
            solver.row_bounds,
            solver.row_marks,
            solver.row_gen,
        )
        for _tag, container, key, _old in self.session.trail.entries[
            self._trail_start :
        ]:
            if container is solver.dim_subst or container is solver.dim_bounds:
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


class Session:
    """A shape-inference session: make tensors, relate them, close.

    >>> s = Session()
    >>> w = s.param("w", "...->4")
    >>> x = s.leaf("x", "3")
    >>> y = s.compose("y", w, x)
    >>> s.close()
    >>> w.shape.dims(), y.shape.dims()
    (((), (3,), (4,)), ((), (), (4,)))
    """

    def __init__(self, *, keep_log: bool = False) -> None:
        self._next_id = 0
        self.trail = Trail()
        self.solver = Solver(self.trail, self._mint)
        self._keep_log = keep_log
        self._log: list[Constraint] = []
        self._shapes: list[Shape] = []
        self._refs: list[DimRef] = []
        self._tainted = False
        self._taint_error: ShapeError | None = None
        self._closings = 0
        self._scheme: str | None = None
        self._application: str | None = None
        self._forcing_guards: list[Callable[[str], None]] = []
        self._constraint_guards: list[Callable[[Constraint], None]] = []
        self._use_observers: list[Callable[[Shape], None]] = []
        self._windows: list[Window] = []

    # ------------------------------------------------------------ variables

    def _mint(self) -> int:
        vid = self._next_id
        self._next_id = vid + 1
        return vid

    def var_mark(self) -> int:
        """The variable counter: variables minted later have larger ids."""
        return self._next_id

    def fresh_dim_var(self) -> DimVar:
        """A new dim variable."""
        return DimVar(self._mint())

    def fresh_row_var(self) -> RowVar:
        """A new row variable."""
        return RowVar(self._mint())

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
        solver = self.solver
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
        solver = self.solver
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
        solver = self.solver
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
            "terminals": tuple(solver.terminals),
            "log": tuple(self._log),
            "shapes": tuple(
                (id(s), s.rows(), s.discarded, s.registered_at) for s in self._shapes
            ),
            "refs": tuple((id(r), r.var, r.size, r.discarded) for r in self._refs),
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
    def guard_constraints(self, guard: Callable[[Constraint], None]) -> Iterator[None]:
        """Call ``guard(constraint)`` (which may raise) before a constraint is added.

        A shape-scheme trace uses this to refuse what a scheme cannot carry
        before it is written (the innermost guard runs).
        """
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
        self._use_observers.append(observer)
        try:
            yield
        finally:
            self._use_observers.pop()

    def note_use(self, shape: Shape) -> None:
        """Report a shape read by an operation to the innermost use observer."""
        if self._use_observers:
            self._use_observers[-1](shape)

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
        trail = self.trail
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
        self._add(constraint)

    def _add(self, constraint: Constraint) -> None:
        # ``add`` without pausing the collector: operations call it, paused already.
        if self._constraint_guards:
            self._constraint_guards[-1](constraint)
        if self._keep_log or self.trail.depth:
            self.trail.append(self._log, constraint)
        solver = self.solver
        solver.trigger = constraint.origin
        try:
            self._dispatch(constraint)
            solver.run()
        except ShapeError as error:
            self._taint(error)
            raise
        finally:
            solver.trigger = None

    def _taint(self, error: ShapeError) -> None:
        if not self._tainted:
            self.trail.set_attr(self, "_tainted", True)
            self.trail.set_attr(self, "_taint_error", error)

    def _dispatch(self, c: Constraint) -> None:
        solver = self.solver
        if isinstance(c, RowIneq):
            solver.push_row_ineq(c.res, c.opnd, c.origin)
        elif isinstance(c, RowEq):
            solver.push_row_eq(c.a, c.b, c.origin)
        elif isinstance(c, DimIneq):
            solver.push_dim_ineq(c.res, c.opnd, c.origin)
        elif isinstance(c, DimEq):
            solver.push_dim_eq(c.a, c.b, c.origin)
        elif isinstance(c, Terminal):
            solver.add_terminal(c)
        elif isinstance(c, PolicyMark):
            solver.add_mark(c.row, c.mark)
        elif isinstance(c, TotalElems):
            solver.add_total(self._mint(), c)
        elif isinstance(c, DimAtLeast):
            solver.add_at_least(c.dim, c.n, c.origin)
        elif isinstance(c, CaptureBind):
            self._bind(c)
        else:
            self._set(c)

    def _bind(self, c: CaptureBind) -> None:
        ref = c.ref
        origin = c.origin.with_sides(
            Side(f"label '{ref.label}'"), Side(f"capture reference '{ref.label}'")
        )
        if ref.var is not None:
            self.solver.push_dim_eq(c.var, ref.var, origin)
            return
        self.trail.set_attr(ref, "var", c.var)
        if ref.size is not None:
            self.solver.push_dim_eq(c.var, ref.size, origin)

    def _set(self, c: SetDim) -> None:
        ref = c.ref
        if ref.var is not None:
            origin = c.origin.with_sides(
                Side(f"capture reference '{ref.label}'"),
                Side(f"set_dim({ref.label!r})"),
            )
            self.solver.push_dim_eq(ref.var, c.size, origin)
        elif ref.size is None:
            self.trail.set_attr(ref, "size", c.size)
        elif ref.size != c.size:
            self.solver.fail(
                f"the capture reference '{ref.label}' already stands for size "
                f"{ref.size!r}, not {c.size!r}",
                c.origin,
            )

    def register_shape(self, shape: Shape) -> None:
        """Have the next closing solve this shape (new shapes are registered).

        Registering a shape again before the next closing changes nothing.
        """
        if shape.registered_at == self._closings:
            return
        self.trail.set_attr(shape, "registered_at", self._closings)
        self.trail.append(self._shapes, shape)

    def is_registered(self, shape: Shape) -> bool:
        """Whether the next closing will solve the shape."""
        return shape.registered_at == self._closings and not shape.discarded

    # ---------------------------------------------------------------- helpers

    def _origin(
        self, operation: str, tensor: str, operands: Sequence[Tensor] = (), **kw: Any
    ) -> Origin:
        return Origin(
            operation,
            tensor,
            tuple(t.name for t in operands),
            scheme=self._scheme,
            application=self._application,
            **kw,
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
        sides: tuple[Side, Side, Side] | None = None,
        register: bool = True,
    ) -> Shape:
        """A shape of the given rows, discarded if a window around it is rewound.

        ``register``: have the next closing solve it. ``sides`` may share the
        sides of another shape of the same name (they only name its rows).
        """
        shape = Shape(self, name, batch, input_, output, sides)
        if register:
            # A new shape is registered directly: if a rewind drops it from
            # the list, it is discarded as well, so its epoch needs no undo.
            shape.registered_at = self._closings
            self.trail.append(self._shapes, shape)
        if self.trail.depth:
            self.trail.on_undo(lambda: setattr(shape, "discarded", True))
        return shape

    # ----------------------------------------------------------------- leaves

    def _terminal(
        self, name: str, spec: str | None, role: Role, site: object
    ) -> Tensor:
        is_param = role == "param"
        self._check_text(role, "name", name)
        if spec is not None:
            self._check_text(f"{role} '{name}'", "spec", spec)
        parsed = parse_shape_spec(spec) if spec is not None else None
        origin = self._origin(
            role, name, detail=None if spec is None else f"spec {spec!r}", site=site
        )
        shape = self._new_shape(name)
        for kind in KINDS:
            row = shape.row(kind)
            if parsed is not None:
                row_spec = parsed.row(kind)
                spec_row = Row(
                    row_spec.sizes, self.fresh_row_var() if row_spec.is_open else None
                )
                self._add(
                    RowEq(
                        row,
                        spec_row,
                        origin.with_sides(shape.side(kind), _SPEC_SIDES[kind]),
                    )
                )
            self._add(
                Terminal(row, is_param, origin.with_sides(shape.side(kind), None))
            )
        return Tensor(name, shape, role, origin)

    @collector_paused
    def leaf(
        self, name: str, spec: str | None = None, *, site: object = None
    ) -> Tensor:
        """A data tensor (terminal, not a parameter); ``spec=None`` leaves all rows open."""
        return self._terminal(name, spec, "leaf", site)

    @collector_paused
    def param(
        self, name: str, spec: str | None = None, *, site: object = None
    ) -> Tensor:
        """A parameter: unspecified dims are inferred; an uninferable one is an error at closing."""
        return self._terminal(name, spec, "param", site)

    @collector_paused
    def fresh(self, name: str, *, site: object = None) -> Tensor:
        """A tensor with all three rows open and no constraint (tracers, placeholders)."""
        self._check_text("fresh", "name", name)
        origin = self._origin("fresh", name, site=site)
        return Tensor(name, self._new_shape(name), "fresh", origin)

    # ------------------------------------------------------------- operations

    @collector_paused
    def pointwise(self, name: str, *operands: Tensor, site: object = None) -> Tensor:
        """An elementwise operation: every row of the result broadcasts from each operand's."""
        if not operands:
            self._fail_input(f"pointwise '{name}' needs at least one operand")
        self._check_operands("pointwise", name, operands)
        origin = self._origin("pointwise", name, operands, site=site)
        result = self._new_shape(name)
        for shape in (result, *(t.shape for t in operands)):
            self._add(
                PolicyMark(
                    shape.input,
                    Mark.USED_IN_POINTWISE,
                    origin,  # a mark cannot fail: no sides to name
                )
            )
        for kind in KINDS:
            for operand in operands:
                self._ineq(origin, result, kind, operand.shape, kind)
        return Tensor(name, result, "result", origin)

    def _ineq(
        self, origin: Origin, res: Shape, res_kind: Kind, opnd: Shape, opnd_kind: Kind
    ) -> None:
        """``res.res_kind ⊑ opnd.opnd_kind`` with the sides named in the origin."""
        self._add(
            RowIneq(
                res.row(res_kind),
                opnd.row(opnd_kind),
                origin.with_sides(res.side(res_kind), opnd.side(opnd_kind)),
            )
        )

    @collector_paused
    def compose(
        self, name: str, a: Tensor, b: Tensor, *, site: object = None
    ) -> Tensor:
        """``a * b``, matrix-style: ``a``'s input axes contract with ``b``'s output axes."""
        self._check_operands("compose", name, (a, b))
        origin = self._origin("compose", name, (a, b), site=site)
        result = self._new_shape(name)
        self._add(
            PolicyMark(
                a.shape.input,
                Mark.USED_IN_SPEC_OR_COMPOSE,
                origin,
            )
        )
        self._ineq(origin, a.shape, Kind.INPUT, b.shape, Kind.OUTPUT)
        self._ineq(origin, result, Kind.BATCH, a.shape, Kind.BATCH)
        self._ineq(origin, result, Kind.BATCH, b.shape, Kind.BATCH)
        self._ineq(origin, result, Kind.INPUT, b.shape, Kind.INPUT)
        self._ineq(origin, result, Kind.OUTPUT, a.shape, Kind.OUTPUT)
        return Tensor(name, result, "result", origin)

    @collector_paused
    def transpose(self, name: str, a: Tensor, *, site: object = None) -> Tensor:
        """Swap the input and output rows of ``a``."""
        self._check_operands("transpose", name, (a,))
        origin = self._origin("transpose", name, (a,), site=site)
        result = self._new_shape(name)
        self._ineq(origin, result, Kind.BATCH, a.shape, Kind.BATCH)
        self._ineq(origin, result, Kind.INPUT, a.shape, Kind.OUTPUT)
        self._ineq(origin, result, Kind.OUTPUT, a.shape, Kind.INPUT)
        return Tensor(name, result, "result", origin)

    @collector_paused
    def einsum(
        self,
        name: str,
        spec: str,
        *operands: Tensor,
        capture_dims: Sequence[DimRef] = (),
        site: object = None,
    ) -> Tensor:
        """Generalized einsum: each tensor's rows equal the spec's rows.

        Spec labels become fresh dim variables, ``...`` a fresh row variable
        per kind, ``..name..`` a fresh row variable per name. Each capture
        reference is bound to the variable of its label.
        """
        self._check_text("einsum", "name", name)
        self._check_text(f"einsum '{name}'", "spec", spec)
        if isinstance(capture_dims, str) or not isinstance(capture_dims, Sequence):
            raise TypeError(
                f"einsum '{name}': capture_dims must be a sequence of dim_ref()s, "
                f"got {capture_dims!r}"
            )
        parsed = parse_einsum_spec(spec)
        if len(parsed.operands) != len(operands):
            self._fail_input(
                f"einsum '{name}': spec {spec!r} has {len(parsed.operands)} operand(s) "
                f"but {len(operands)} were given"
            )
        self._check_operands("einsum", name, operands)
        labels_in_spec = parsed.labels()
        for ref in capture_dims:
            if not isinstance(ref, DimRef) or ref._session is not self:
                self._fail_input(
                    f"einsum '{name}': capture_dims must hold this session's dim_ref()s, "
                    f"got {ref!r}"
                )
            if ref.label not in labels_in_spec:
                self._fail_input(
                    f"einsum '{name}': capture reference '{ref.label}' names no label of "
                    f"spec {spec!r}"
                )
        origin = self._origin(
            "einsum", name, operands, detail=f"spec {spec!r}", site=site
        )
        result = self._new_shape(name)
        label_vars: dict[str, DimVar] = {}
        kind_vars: dict[Kind, RowVar] = {}
        named_vars: dict[str, RowVar] = {}
        at_least: list[tuple[DimVar, int]] = []

        def spec_row(labels: LabelRow, kind: Kind) -> Row:
            dims: list[Dim] = []
            for item in labels.items:
                if isinstance(item, Label):
                    var = label_vars.get(item.name)
                    if var is None:
                        var = label_vars[item.name] = self.fresh_dim_var()
                    dims.append(var)
                else:
                    var = self.fresh_dim_var()
                    if isinstance(item, FixedIndex):
                        at_least.append((var, item.index + 1))
                    dims.append(var)
            row_var: RowVar | None = None
            if labels.var == "":
                row_var = kind_vars.get(kind)
                if row_var is None:
                    row_var = kind_vars[kind] = self.fresh_row_var()
            elif labels.var is not None:
                row_var = named_vars.get(labels.var)
                if row_var is None:
                    row_var = named_vars[labels.var] = self.fresh_row_var()
            return Row(tuple(dims), row_var)

        equations: list[tuple[Row, Row, Side, Side]] = []
        spec_side = f"spec {spec!r}"
        for operand, labels in zip(operands, parsed.operands, strict=True):
            for kind in KINDS:
                equations.append(
                    (
                        operand.shape.row(kind),
                        spec_row(labels.row(kind), kind),
                        operand.shape.side(kind),
                        Side(spec_side, kind),
                    )
                )
        for kind in KINDS:
            equations.append(
                (
                    result.row(kind),
                    spec_row(parsed.result.row(kind), kind),
                    result.side(kind),
                    Side(spec_side, kind),
                )
            )
        for var in (*kind_vars.values(), *named_vars.values()):
            self._add(PolicyMark(Row((), var), Mark.USED_IN_SPEC_OR_COMPOSE, origin))
        for var, n in at_least:
            self._add(DimAtLeast(var, n, origin))
        for row, labels_row, lhs, rhs in equations:
            self._add(RowEq(row, labels_row, origin.with_sides(lhs, rhs)))
        for ref in capture_dims:
            self._add(CaptureBind(ref, label_vars[ref.label], origin))
        return Tensor(name, result, "result", origin)

    # ----------------------------------------------------- captures and totals

    def dim_ref(self, label: str) -> DimRef:
        """A capture reference for the einsum label ``label``."""
        self._check_text("dim_ref", "label", label)
        ref = DimRef(self, label, self.var_mark())
        self.trail.append(self._refs, ref)
        self.trail.on_undo(lambda: setattr(ref, "discarded", True))
        return ref

    @collector_paused
    def set_dim(
        self, ref: DimRef, n: int, *, basis: str = DEFAULT_BASIS, site: object = None
    ) -> None:
        """Fix the size the capture reference stands for."""
        if not isinstance(ref, DimRef) or ref._session is not self:
            self._fail_input(f"set_dim needs a dim_ref() of this session, got {ref!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            self._fail_input(
                f"set_dim '{ref.label}': the size must be a positive integer, got {n!r}"
            )
        origin = self._origin("set_dim", ref.label, site=site)
        self._add(SetDim(ref, Size(n, basis), origin))

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
        if self._tainted:
            raise ShapeError(
                "cannot close: an earlier shape error left this session with "
                "half-applied constraints (it is tainted); rewind or start a new session"
            )
        solver = self.solver
        norm_row = solver.norm_row
        # Rows already concrete (most, after Stage 1) have nothing to close:
        # only the open ones go to the solver, in registration order.
        solved: list[tuple[Shape, str, Row]] = []
        open_rows: list[tuple[Shape, str, Row]] = []
        # Shapes share row objects (constant rows, a scheme's presolved rows):
        # one stored concrete is concrete wherever it occurs.
        concrete_ids: set[int] = set()
        for shape in self._shapes:
            for attr, row in zip(_ROW_ATTRS, shape.rows(), strict=True):
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
        try:
            solver.close(rows)
        except ShapeError as error:
            self._taint(error)
            raise
        finally:
            solver.trigger = None
        set_attr = self.trail.set_attr
        for shape, attr, concrete in solved:
            set_attr(shape, attr, concrete)
        for shape, attr, row in open_rows:
            concrete = norm_row(row)
            assert concrete.is_concrete(), f"closing left {shape.name}.{attr} open"
            set_attr(shape, attr, concrete)
        for ref in self._refs:
            if ref.var is not None:
                dim = solver.find_dim(ref.var)
                assert type(dim) is Size, f"closing left capture '{ref.label}' open"
                set_attr(ref, "size", dim)
                set_attr(ref, "var", None)
        solver.reset()
        set_attr(self, "_shapes", [])
        set_attr(self, "_closings", self._closings + 1)
