"""Evaluating a ``tprog`` program into a shape session: the interpreter.

:class:`ProgramEvaluator` walks a ``tprog`` module (:mod:`axisflow.dialects.tprog`)
and maps each operation to a call of the shape engine
(:mod:`axisflow.shapes`) through a dispatch table that extensions (the
generalizer of :mod:`axisflow.dialects.tprog_generalize`) add to. It
evaluates the module's top-level operations in order, creating a tensor per
value; a ``tprog.call`` gives its results the shapes re-evaluating the
callee's body on the call's arguments gives (OCANNL's behaviour, and the
baseline shape schemes are measured against), with origins naming the
application site.

How calls are evaluated (``share_calls``): re-evaluation runs the body at
every call, keeping every constraint and variable of every run until
closing. Sharing traces each function with two or more applications once,
in a rewind window, into a shape scheme held in memory, bottom-up over the
call graph (:class:`~axisflow.dialects.tprog_calls.CallGraph`: a callee is
traced before its callers, whose traces apply its scheme), and instantiates
it at every call, so a call site keeps what its application adds (presolved
variables, renamed open state) instead of a re-run body. The typed module
is the same (the shape schemes' oracle, and a hypothesis test comparing the
two modes byte for byte). What no scheme carries (the specification's
refusals), a recursive function and one applied once are re-evaluated, and
:attr:`ProgramEvaluator.call_report` records why; if anything fails while
sharing, :class:`RetryByReEvaluation` asks the caller to evaluate the module
again by re-evaluation, so every diagnostic is re-evaluation's.

Shape schemes written in the IR (``generalize-shapes``): a ``tprog.scheme`` is
rebuilt in the session where it stands, and each ``tprog.instantiate``
applies it without running any body; its ``values`` lines tell which shape of
an application each body value has, so bodies are annotated as under
re-evaluation. ``tprog.total_elems`` and ``tprog.close`` are evaluated where
they stand (``bytes_per_element`` turns a byte count into elements at
closing).

A shape error becomes a diagnostic at the operation whose constraint failed
(the origin's ``site``), with the engine's message. This module imports the
dialect and the engine, and no pass: the ``close-shapes`` and
``generalize-shapes`` passes are thin wrappers around it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Block, Operation, SSAValue
from xdsl.utils.exceptions import DiagnosticException

from axisflow.dialects.integers import count_value
from axisflow.dialects.tprog import (
    CallOp,
    CloseOp,
    ComposeOp,
    EinsumOp,
    FuncOp,
    InstantiateOp,
    LeafOp,
    ParamOp,
    PointwiseOp,
    ReturnOp,
    SchemeOp,
    SetDimOp,
    TotalElemsOp,
    TransposeOp,
    ValueEntry,
)
from axisflow.dialects.tprog_calls import CallGraph, CallReport
from axisflow.shapes import (
    DeferredCount,
    DimRef,
    Scheme,
    Session,
    Shape,
    ShapeError,
    Tensor,
    UntraceableScheme,
    scheme,
)
from axisflow.shapes.scheme.read import build_scheme
from axisflow.shapes.scheme.text import parse_scheme_text


class ShapeDiagnostic(DiagnosticException):
    """A shape error reported at an operation."""


def fail_at(op: Operation, message: str) -> NoReturn:
    """Raise a diagnostic attached to ``op`` (printed by ``--verify-diagnostics``)."""
    op.emit_error(message, ShapeDiagnostic(message))


@dataclass
class Frame:
    """One evaluation context: the module, or one application of a function."""

    values: dict[SSAValue, Tensor]
    application: str | None = None


class BodyShapes:
    """What the applications of a function gave one of its body's values,
    as far as the value's type needs it.

    The value is typed with the shape every application agrees on, else
    left unknown (``close-shapes``). ``first``: the first application's
    shape. A later shape whose stored rows are concrete, as are the first
    one's, is compared at once (concrete rows are final): an equal one is
    not kept, and one that differs makes the type unknown whatever comes
    later (``differs``), so no shape is kept from then on. ``pending``: the
    shapes compared at the closing. ``count``: the applications seen.
    Keeping only these lets the shapes of the applications that agree or
    no longer matter be freed (a presolved application's concrete internal
    shapes are not registered with the closing either).
    """

    __slots__ = ("count", "differs", "first", "pending")

    def __init__(self, first: Shape) -> None:
        self.first = first
        self.pending: list[Shape] = []
        self.differs = False
        self.count = 1

    def add(self, shape: Shape) -> None:
        """One more application's shape of the value."""
        self.count += 1
        if self.differs or shape is self.first:
            return
        settled = True
        for mine, theirs in zip(self.first.rows(), shape.rows(), strict=True):
            if mine is theirs:
                continue
            if mine.is_concrete() and theirs.is_concrete():
                if mine != theirs:
                    self.differs = True
                    self.pending.clear()
                    return
            else:
                settled = False
        if not settled:
            self.pending.append(shape)

    def agreed(self) -> Shape | None:
        """The shape every application agrees on, read after the closing
        (``None``: they differ)."""
        if self.differs:
            return None
        first = self.first.rows()
        if all(shape.rows() == first for shape in self.pending):
            return self.first
        return None


@dataclass
class SharedBody:
    """A function's body traced once, applied at each of its module-level calls.

    ``values``: each body value with where it stands in an application
    (``"arg"``, ``"internal"`` or ``"anchor"`` and the index), for annotating
    the body as re-evaluation would.
    """

    scheme: Scheme
    values: list[tuple[SSAValue, str, int]]


class RetryByReEvaluation(Exception):
    """A shared application or its closing failed: evaluate again, re-evaluating.

    Raised instead of a diagnostic while calls are shared, so the error a
    user sees is always the one re-evaluation reports, not the scheme's.
    """


@dataclass
class ProgramEvaluator:
    """Evaluates a ``tprog`` module into a shape session.

    ``handlers`` maps an operation class to a function evaluating it in a
    frame; extensions register more. ``share_calls``: apply a function with
    several applications through one trace of its body (a shape scheme held
    in memory) instead of re-evaluating it at each; any shape error then
    raises :class:`RetryByReEvaluation`. It reads false after construction
    when no function can be shared. ``call_report``: how each call site was
    served; ``not_shared``: why a function is re-evaluated;
    ``re_evaluation_reason``: the reason for every call when nothing is
    shared (``calls=re-evaluate``, or the retry after a failure).
    """

    module: ModuleOp
    session: Session = field(default_factory=Session)
    handlers: dict[type[Operation], Callable[[Operation, Frame], None]] = field(
        default_factory=dict
    )
    body_shapes: dict[SSAValue, BodyShapes] = field(default_factory=dict)
    top: Frame = field(default_factory=lambda: Frame({}))
    bytes_per_element: int = 4
    schemes: dict[str, tuple[Scheme, SchemeOp]] = field(default_factory=dict)
    _refs: dict[str, DimRef] = field(default_factory=dict)
    _functions: dict[str, FuncOp] = field(default_factory=dict)
    _active_calls: list[str] = field(default_factory=list)
    _anonymous: dict[SSAValue, str] = field(default_factory=dict)
    _bodies: dict[str, list[Operation]] = field(default_factory=dict)
    _values: dict[SchemeOp, list[tuple[SSAValue, str, int]]] = field(
        default_factory=dict
    )
    # Inside a trace, shape errors must reach the trace (which prefixes them)
    # instead of becoming diagnostics at the failing operation.
    raw_errors: int = 0
    share_calls: bool = False
    shared: dict[str, SharedBody] = field(default_factory=dict)
    # How each call site was served (explain); why a function is re-evaluated.
    call_report: CallReport = field(default_factory=CallReport)
    re_evaluation_reason: str = "calls=re-evaluate"
    not_shared: dict[str, str] = field(default_factory=dict)
    _graph: CallGraph | None = None
    # Inside traces (innermost last): where each body value had its shape.
    _trace_values: list[list[tuple[SSAValue, Shape]]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._functions = {
            op.sym_name.data: op for op in self.module.ops if isinstance(op, FuncOp)
        }
        if self.share_calls:
            self._plan_sharing()
        self.handlers.update(
            {
                LeafOp: self._leaf,
                ParamOp: self._param,
                PointwiseOp: self._pointwise,
                ComposeOp: self._compose,
                TransposeOp: self._transpose,
                EinsumOp: self._einsum,
                SetDimOp: self._set_dim,
                CallOp: self._call,
                TotalElemsOp: self._total_elems,
                CloseOp: self._close,
                SchemeOp: self._scheme,
                InstantiateOp: self._instantiate,
            }
        )

    # ------------------------------------------------------------- helpers

    def name_of(self, value: SSAValue) -> str:
        """The tensor name of a value: its SSA name, else a stable numbered name."""
        if value.name_hint:
            return value.name_hint
        name = self._anonymous.get(value)
        if name is None:
            name = self._anonymous[value] = f"tensor{len(self._anonymous) + 1}"
        return name

    def tensor(self, op: Operation, value: SSAValue, frame: Frame) -> Tensor:
        """The tensor a value stands for in a frame (module values are visible)."""
        tensor = frame.values.get(value)
        if tensor is None:
            tensor = self.top.values.get(value)
        if tensor is None:
            name = self.name_of(value)
            owner = value.owner
            if (
                isinstance(owner, Operation)
                and owner.parent_block() is op.parent_block()
            ):
                fail_at(
                    op,
                    f"{op.name}: operand {name!r} is used before its definition: "
                    "shapes are inferred op by op, in the order written",
                )
            fail_at(
                op,
                f"{op.name}: operand {name!r} has no tensor yet: a value "
                f"used by a function body must be defined at module level before the "
                f"calls that apply it",
            )
        return tensor

    def define(self, frame: Frame, value: SSAValue, tensor: Tensor) -> None:
        """Bind a value to a tensor in a frame (and remember body shapes)."""
        frame.values[value] = tensor
        if frame is not self.top:
            self.note_body_shape(value, tensor.shape)

    def note_body_shape(self, value: SSAValue, shape: Shape) -> None:
        """A value of a function body has ``shape`` in one application."""
        if self._trace_values:
            self._trace_values[-1].append((value, shape))
            return
        seen = self.body_shapes.get(value)
        if seen is None:
            self.body_shapes[value] = BodyShapes(shape)
        else:
            seen.add(shape)

    def _plan_sharing(self) -> None:
        """Which functions may be applied through a trace, before evaluating.

        Every function with a call site, but a recursive one (its trace would
        apply itself) and one called exactly once, at module level (one run
        costs less than a trace and an application). Reads false after this
        when nothing can be shared: the module is then evaluated as
        re-evaluation does, errors included. Capture references are made up
        front, in the order re-evaluation makes them, when a body binds one:
        a reference made in a trace's window would be the trace's own.
        """
        graph = self._graph = CallGraph.of(self.module)
        every, top = graph.site_counts()
        candidates: list[str] = []
        for name in every:
            if name not in self._functions:
                continue  # the call fails, as re-evaluation's does
            if name in graph.recursive:
                self.not_shared[name] = (
                    f"@{name} is recursive (a call cycle cannot be traced)"
                )
            elif every[name] == 1 and top.get(name) == 1:
                self.not_shared[name] = (
                    f"@{name} is called once (one run costs less than a trace and "
                    f"an application)"
                )
            else:
                candidates.append(name)
        self.share_calls = bool(candidates)
        if not self.share_calls:
            return
        # Errors reach evaluate (which asks for re-evaluation), cheaply.
        self.raw_errors += 1
        reached = {*candidates}
        for name in candidates:
            reached.update(graph.below(name))
        if any(_binds_labels(self._functions[name]) for name in reached):
            for label in graph.labels_in_evaluation_order(self.module):
                self.ref(label)

    def ref(self, label: str) -> DimRef:
        """The module's capture reference for an einsum label."""
        ref = self._refs.get(label)
        if ref is None:
            ref = self._refs[label] = self.session.dim_ref(label)
        return ref

    # ----------------------------------------------------------- evaluation

    def evaluate(self) -> None:
        """Evaluate the module's top-level operations, then close the session."""
        if self.share_calls:
            try:
                for op in self.module.ops:
                    self.evaluate_op(op, self.top)
                self.session.close()
            except ShapeError as error:
                raise RetryByReEvaluation() from error
            return
        for op in self.module.ops:
            self.evaluate_op(op, self.top)
        try:
            self.session.close()
        except ShapeError as error:
            self.report(error, self.module)

    def evaluate_block(self, block: Block, frame: Frame) -> None:
        """Evaluate every operation of a block in a frame."""
        for op in block.ops:
            self.evaluate_op(op, frame)

    def evaluate_op(self, op: Operation, frame: Frame) -> None:
        """Evaluate one operation (functions and returns are evaluated by calls)."""
        handler = self.handlers.get(type(op))
        if handler is None:
            return
        try:
            if frame.application is None:
                # A module-level operation: the provenance would not change.
                handler(op, frame)
            else:
                with self.session.provenance(application=frame.application):
                    handler(op, frame)
        except ShapeError as error:
            if self.raw_errors:
                raise
            self.report(error, op)

    def report(self, error: ShapeError, fallback: Operation) -> NoReturn:
        """Turn a shape error into a diagnostic at the operation that caused it."""
        site = error.site
        fail_at(site if isinstance(site, Operation) else fallback, str(error))

    # ------------------------------------------------------------- handlers

    def _terminal(
        self, op: Operation, frame: Frame, make: Callable[..., Tensor]
    ) -> None:
        assert isinstance(op, LeafOp | ParamOp)
        tensor = make(self.name_of(op.result), op.spec_text, site=op)
        self.define(frame, op.result, tensor)

    def _leaf(self, op: Operation, frame: Frame) -> None:
        self._terminal(op, frame, self.session.leaf)

    def _param(self, op: Operation, frame: Frame) -> None:
        self._terminal(op, frame, self.session.param)

    def _pointwise(self, op: Operation, frame: Frame) -> None:
        assert isinstance(op, PointwiseOp)
        operands = [self.tensor(op, v, frame) for v in op.inputs]
        result = self.session.pointwise(self.name_of(op.result), *operands, site=op)
        self.define(frame, op.result, result)

    def _compose(self, op: Operation, frame: Frame) -> None:
        assert isinstance(op, ComposeOp)
        lhs, rhs = self.tensor(op, op.lhs, frame), self.tensor(op, op.rhs, frame)
        result = self.session.compose(self.name_of(op.result), lhs, rhs, site=op)
        self.define(frame, op.result, result)

    def _transpose(self, op: Operation, frame: Frame) -> None:
        assert isinstance(op, TransposeOp)
        operand = self.tensor(op, op.input, frame)
        result = self.session.transpose(self.name_of(op.result), operand, site=op)
        self.define(frame, op.result, result)

    def _einsum(self, op: Operation, frame: Frame) -> None:
        assert isinstance(op, EinsumOp)
        operands = [self.tensor(op, v, frame) for v in op.inputs]
        refs = [self.ref(label) for label in op.capture_labels]
        result = self.session.einsum(
            self.name_of(op.result), op.spec.data, *operands, capture_dims=refs, site=op
        )
        self.define(frame, op.result, result)

    def _set_dim(self, op: Operation, frame: Frame) -> None:
        assert isinstance(op, SetDimOp)
        # An error is reported at this operation (its origin names no site).
        self.session.set_dim(self.ref(op.label.data), count_value(op.size), site=op)

    def _call(self, op: Operation, frame: Frame) -> None:
        assert isinstance(op, CallOp)
        callee = op.callee.root_reference.data
        func = self._functions.get(callee)
        if func is None:
            fail_at(op, f"{op.name}: no tprog.func named @{callee}")
        if self.share_calls and callee not in self.not_shared:
            shared = self._shared_body(callee)
            if shared is not None:
                self._apply_shared(op, frame, shared)
                self.call_report.served(op)
                return
        self.call_report.re_evaluated(
            op, self.not_shared.get(callee, self.re_evaluation_reason)
        )
        if callee in self._active_calls:
            chain = " -> ".join(f"@{name}" for name in (*self._active_calls, callee))
            fail_at(op, f"{op.name}: recursive call {chain} cannot be evaluated")
        application = op.application.data
        if frame.application is not None:
            application = f"{frame.application} > {application}"
        arguments = [self.tensor(op, v, frame) for v in op.arguments]
        block = func.body.block
        inner = Frame({}, application)
        for arg, tensor in zip(block.args, arguments, strict=True):
            self.define(inner, arg, tensor)
        self._active_calls.append(callee)
        try:
            self.evaluate_block(block, inner)
        finally:
            self._active_calls.pop()
        ret = block.last_op
        assert isinstance(ret, ReturnOp), (
            "verified: a tprog.func ends with tprog.return"
        )
        for result, value in zip(op.res, ret.values, strict=True):
            self.define(frame, result, self.tensor(ret, value, inner))

    def _shared_body(self, name: str) -> SharedBody | None:
        """``name``'s traced body, tracing the functions it calls first.

        Bottom-up over the call graph: each callee is traced (or found
        untraceable) before its callers, so that a caller's trace applies
        its callees' schemes and its own scheme carries them. ``None`` when
        no scheme carries the function (``not_shared`` says why).
        """
        assert self._graph is not None
        for callee in self._graph.below(name):
            if callee not in self.not_shared:
                self._traced(callee)
        return self._traced(name)

    def _traced(self, name: str) -> SharedBody | None:
        """``name``'s traced body, traced now if it has none or a stale one."""
        if name in self.not_shared:
            return None
        shared = self.shared.get(name)
        if shared is not None and not scheme.stale(shared.scheme):
            return shared
        assert self._graph is not None
        for callee in self._graph.callees.get(name, ()):
            why = self.not_shared.get(callee)
            if why is not None:
                # Its trace would run the callee's body, which no scheme carries.
                self.not_shared[name] = (
                    f"it calls @{callee}, which is re-evaluated: {why}"
                )
                return None
        try:
            # A closing since the trace may have made it stale: trace anew.
            shared = self.shared[name] = self._trace_shared(self._functions[name])
        except UntraceableScheme as error:
            # What a scheme cannot carry: the trace wrote nothing (its window
            # is rewound); the function is re-evaluated at each call.
            self.not_shared[name] = str(error)
            return None
        return shared

    def _apply_shared(self, op: CallOp, frame: Frame, shared: SharedBody) -> None:
        """Apply a traced body at a call, giving the body's values their shapes."""
        arguments = [self.tensor(op, v, frame) for v in op.arguments]
        applied = self.apply_scheme(
            op, frame, shared.scheme, None, arguments, op.application.data
        )
        for value, where, index in shared.values:
            if where == "arg":
                shape = arguments[index].shape
            elif where == "internal":
                shape = applied.internal[index]
            else:
                shape = shared.scheme.anchors[index].shape
            self.note_body_shape(value, shape)

    def trace_body(self, func: FuncOp) -> tuple[Scheme, list[tuple[SSAValue, Shape]]]:
        """Trace ``func``'s body once, in a rewind window, into a shape scheme
        labelled with its name; with the scheme, where each value of the body
        (arguments first) had its shape during the trace. Shape errors reach
        the caller as ``ShapeError`` (the trace prefixes them)."""
        block = func.body.block
        session = self.session
        recorded: list[tuple[SSAValue, Shape]] = []
        with session.rewind():
            mark = session.var_mark()
            tracers = [
                session.fresh(self.name_of(arg), site=func) for arg in block.args
            ]
            frame = Frame({})
            for arg, tracer in zip(block.args, tracers, strict=True):
                frame.values[arg] = tracer
                recorded.append((arg, tracer.shape))

            def body() -> list[Tensor]:
                self.evaluate_block(block, frame)
                ret = block.last_op
                assert isinstance(ret, ReturnOp), "verified: a body ends with return"
                return [self.tensor(ret, value, frame) for value in ret.values]

            self._trace_values.append(recorded)
            self.raw_errors += 1
            try:
                traced = scheme.trace(
                    session,
                    var_mark=mark,
                    label=func.sym_name.data,
                    args=tracers,
                    f=body,
                )
            finally:
                self.raw_errors -= 1
                self._trace_values.pop()
        return traced, recorded

    def _trace_shared(self, func: FuncOp) -> SharedBody:
        """Trace ``func``'s body once, in a rewind window, into a shape scheme."""
        # A shape error propagates (raw_errors): evaluate() asks for
        # re-evaluation, whose diagnostic the user gets.
        traced, recorded = self.trace_body(func)
        values = [
            (value, where[0], where[1])
            for value, shape in recorded
            if (where := traced.locate(shape)) is not None and where[0] != "result"
        ]
        return SharedBody(traced, values)

    def _total_elems(self, op: Operation, frame: Frame) -> None:
        assert isinstance(op, TotalElemsOp)
        tensor = self.tensor(op, op.input, frame)
        count: int | DeferredCount = count_value(op.count)
        if op.counts_bytes:
            count = self.deferred_count(count_value(op.count))
        self.session.total_elems(tensor, count, site=op)

    def deferred_count(self, byte_count: int) -> DeferredCount:
        """Elements in ``byte_count`` bytes, at the precision known at closing."""
        precision = self.bytes_per_element

        def resolve() -> int:
            if byte_count % precision:
                raise ValueError(
                    f"{byte_count} bytes is not a whole number of "
                    f"{precision}-byte elements"
                )
            return byte_count // precision

        return DeferredCount(f"{byte_count} bytes at the tensor's precision", resolve)

    def _close(self, op: Operation, frame: Frame) -> None:
        assert isinstance(op, CloseOp)
        self.session.close()

    def _scheme(self, op: Operation, frame: Frame) -> None:
        """Rebuild a scheme in this session, its anchors being the operands' tensors."""
        assert isinstance(op, SchemeOp)
        anchors = [self.tensor(op, value, frame).shape for value in op.anchors]
        try:
            built = build_scheme(
                parse_scheme_text(op.text_lines),
                session=self.session,
                label=op.label.data,
                anchors=anchors,
                ref=self.ref,
            )
        except ShapeError as error:
            fail_at(op, f"{op.name} @{op.sym_name.data}: {error}")
        self.schemes[op.sym_name.data] = (built, op)

    def _instantiate(self, op: Operation, frame: Frame) -> None:
        assert isinstance(op, InstantiateOp)
        name = op.scheme.root_reference.data
        found = self.schemes.get(name)
        if found is None:
            fail_at(
                op,
                f"{op.name}: the scheme @{name} is not known here: a tprog.scheme must "
                f"come before its instantiations, at module level",
            )
        sc, scheme_op = found
        arguments = [self.tensor(op, value, frame) for value in op.arguments]
        self.apply_scheme(op, frame, sc, scheme_op, arguments, op.application.data)
        self.call_report.served(op)

    def apply_scheme(
        self,
        op: Operation,
        frame: Frame,
        sc: Scheme,
        scheme_op: SchemeOp | None,
        arguments: list[Tensor],
        site: str,
    ) -> scheme.Application:
        """Instantiate ``sc`` for ``op``: define its results, annotate bodies."""
        application = (
            site if frame.application is None else f"{frame.application} > {site}"
        )
        results = [
            self.session.fresh(self.name_of(value), site=op) for value in op.results
        ]
        try:
            applied = scheme.instantiate(
                sc,
                application=application,
                args=arguments,
                results=results,
                site=op,
            )
        except ShapeError as error:
            if self.raw_errors:
                raise
            fail_at(op, str(error))
        for value, tensor in zip(op.results, results, strict=True):
            self.define(frame, value, tensor)
        if scheme_op is not None:
            self.annotate_from(scheme_op, sc, applied, arguments)
        return applied

    def annotate_from(
        self,
        scheme_op: SchemeOp,
        sc: Scheme,
        applied: scheme.Application,
        arguments: list[Tensor],
    ) -> None:
        """Give the traced body's values the application's shapes (``values`` lines)."""
        resolved = self._values.get(scheme_op)
        if resolved is None:
            resolved = self._values[scheme_op] = [
                (value, entry.where, entry.index)
                for entry in scheme_op.value_entries
                if (value := self.body_value(entry)) is not None
            ]
        for value, where, index in resolved:
            if where == "arg":
                shape = arguments[index].shape
            elif where == "internal":
                shape = applied.internal[index]
            else:
                shape = sc.anchors[index].shape
            self.note_body_shape(value, shape)

    def body_value(self, entry: ValueEntry) -> SSAValue | None:
        """The body value a ``values`` line names (``None`` if it is gone)."""
        func = self._functions.get(entry.func)
        if func is None:
            return None
        block = func.body.block
        if entry.arg is not None:
            return block.args[entry.arg] if entry.arg < len(block.args) else None
        assert entry.op is not None and entry.result is not None
        ops = self._bodies.get(entry.func)
        if ops is None:
            ops = self._bodies[entry.func] = list(block.ops)
        if entry.op >= len(ops):
            return None
        results = ops[entry.op].results
        return results[entry.result] if entry.result < len(results) else None


def _binds_labels(func: FuncOp) -> bool:
    """Whether a function's body uses a capture label (an einsum or a ``set_dim``)."""
    return any(
        (isinstance(op, EinsumOp) and op.capture_labels) or isinstance(op, SetDimOp)
        for op in func.body.walk()
    )
