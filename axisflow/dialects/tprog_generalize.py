"""The generalizer: trace every ``tprog.func`` once into a ``tprog.scheme``.

What the ``generalize-shapes`` pass runs (:class:`Generalizer`, an extension
of the interpreter :class:`~axisflow.dialects.tprog_eval.ProgramEvaluator`).

The pass evaluates, in order, the module-level operations function bodies
can depend on (those connected by shared values or capture labels to what a
body reads), to have the tensors the bodies read; but a ``tprog.call`` no
longer re-evaluates its callee: the callee is traced once, in a rewind window,
into a shape scheme (:mod:`axisflow.shapes.scheme`), and every call becomes a
``tprog.instantiate`` of that scheme at the call's application site.
Applications at module level are left to ``close-shapes`` (their results are
open placeholders here, and module-level ``tprog.close`` is skipped), so the
pass costs the operations the traces depend on plus one trace per function;
calls inside a traced body are instantiated, being part of the traced
function. The other module-level operations are ``close-shapes``' business,
their shape errors included.

* A function is traced where its first module-level call stands (its anchors,
  the module-level tensors its body reads, exist there), after the functions
  it calls (so that a body's calls are instantiations too). Functions never
  called from module level are traced at the end of the module.
* Each scheme becomes a ``tprog.scheme`` operation just before the call that
  caused its trace (callees first), or at the end of the module; its operands
  are its anchors and its ``values`` lines tell which shape of an application
  each value of the body has, so ``close-shapes`` annotates bodies as under
  re-evaluation.
* Capture references are made for every label of the module before anything
  is evaluated: they are module-level, so a capture in a body is an input of
  its scheme, and ``tprog.set_dim`` in a body cannot be carried.

``close-shapes`` then rebuilds each scheme and instantiates it; no body runs.
A trace error is a diagnostic at the ``tprog.func`` (``tracing the shape
scheme <label>: ...``), an application error one at the call (``applying the
shape scheme <label> to <application>: ...``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects.builtin import StringAttr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from axisflow.dialects.tprog import (
    CallOp,
    CloseOp,
    EinsumOp,
    FuncOp,
    InstantiateOp,
    SchemeOp,
    SetDimOp,
    ValueEntry,
)
from axisflow.dialects.tprog_eval import Frame, ProgramEvaluator, fail_at
from axisflow.shapes import Scheme, Shape, ShapeError, Tensor, scheme


@dataclass
class _Placed:
    """A scheme traced by the pass, and where its operation goes."""

    func: FuncOp
    scheme: Scheme
    values: list[ValueEntry]
    body_values: list[SSAValue]  # the value each entry of ``values`` names
    before: Operation | None  # None: at the end of the module
    symbol: str = ""


@dataclass
class Generalizer(ProgramEvaluator):
    """Evaluates a module, tracing functions into schemes instead of re-running them."""

    placed: dict[str, _Placed] = field(default_factory=dict)
    scheme_of_function: dict[str, str] = field(default_factory=dict)
    calls: list[CallOp] = field(default_factory=list)
    _tracing: list[str] = field(default_factory=list)
    # Where each body value is (function, argument or operation and result):
    # fixed while the pass traces, and asked for by every trace that reaches
    # the body through a call chain.
    _places: dict[SSAValue, tuple[str, int | None, int | None, int | None] | None] = (
        field(default_factory=dict)
    )
    _positions: dict[Block, dict[Operation, int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        super().__post_init__()
        self.handlers[CallOp] = self._call_by_scheme
        self.handlers[InstantiateOp] = self._instantiate_here
        self.handlers[CloseOp] = self._skip_closing
        for op in self.module.ops:
            if isinstance(op, SchemeOp) and op.function is not None:
                self.scheme_of_function[op.function.root_reference.data] = (
                    op.sym_name.data
                )
        # Every capture reference is module-level: make them all before any
        # trace, so that a body's captures are inputs of its scheme.
        for op in self.module.walk():
            if isinstance(op, EinsumOp):
                for label in op.capture_labels:
                    self.ref(label)
            elif isinstance(op, SetDimOp):
                self.ref(op.label.data)

    # ------------------------------------------------------------- evaluation

    def run(self) -> None:
        """Evaluate what the traces need, trace every function, rewrite the calls."""
        needed = self._needed_ops()
        for op in list(self.module.ops):
            if op in needed or type(op) not in self.handlers:
                self.evaluate_op(op, self.top)
            else:
                # Not evaluated; its results take their anonymous names in the
                # same order as when it was, so a body's names do not change.
                for value in op.results:
                    self.name_of(value)
        for func in list(self._functions.values()):
            self.ensure_scheme(func, None)
        self._rewrite()

    def _needed_ops(self) -> set[Operation]:
        """The module-level operations whose tensors a trace can read.

        A trace reads module-level tensors (its anchors) and the capture
        references; what they hold when it runs depends only on the
        operations connected to them by shared values or labels (the solver
        relates the variables of one operation's tensors only). So the needed
        operations are the connected components, over values and labels, of
        what function bodies read, plus every call, instantiation and scheme
        (they trace, stand for results, rebuild schemes). The rest is left to
        close-shapes: evaluating it here would only cost time (and find its
        shape errors twice).
        """
        parent: dict[object, object] = {}

        def find(node: object) -> object:
            root = parent.setdefault(node, node)
            while root != parent[root]:
                root = parent[root]
            while node != root:  # path compression
                parent[node], node = root, parent[node]
            return root

        def union(first: object, second: object) -> None:
            a, b = find(first), find(second)
            if a != b:
                parent[a] = b

        always: list[Operation] = []
        nodes_of: list[tuple[Operation, list[object]]] = []
        read: list[object] = []
        for op in self.module.ops:
            if isinstance(op, FuncOp):
                read.extend(_read_by_body(op))
                continue
            if isinstance(op, CallOp | InstantiateOp | SchemeOp):
                always.append(op)
                if isinstance(op, SchemeOp):
                    read.extend(op.anchors)
                continue
            nodes = [*op.operands, *op.results, *_labels(op)]
            if nodes:
                for node in nodes[1:]:
                    union(nodes[0], node)
                nodes_of.append((op, nodes))
        roots = {find(node) for node in read}
        needed = set(always)
        needed.update(op for op, nodes in nodes_of if find(nodes[0]) in roots)
        return needed

    def _call_by_scheme(self, op: Operation, frame: Frame) -> None:
        assert isinstance(op, CallOp)
        callee = op.callee.root_reference.data
        func = self._functions.get(callee)
        if func is None:
            fail_at(op, f"{op.name}: no tprog.func named @{callee}")
        self.calls.append(op)
        if frame is self.top:
            self.ensure_scheme(func, op)
            self._placeholders(op, frame)
            return
        # Inside a trace: the application is part of the traced function.
        sc, scheme_op = self._scheme_for(op, callee)
        arguments = [self.tensor(op, value, frame) for value in op.arguments]
        applied = self.apply_scheme(
            op, frame, sc, scheme_op, arguments, op.application.data
        )
        placed = self.placed.get(callee)
        if placed is not None:
            self._annotate_placed(placed, applied, arguments)

    def _placeholders(self, op: Operation, frame: Frame) -> None:
        """Results of a module-level application, for what later operations read.

        The pass only needs the module's tensors to trace functions: it does
        not apply schemes at module level (close-shapes does). A later trace
        reading such a result sees an open shape; the scheme then ties its
        variables to the tensor as an anchor, which is sound whatever the
        result turns out to be.
        """
        for value in op.results:
            self.define(frame, value, self.session.fresh(self.name_of(value), site=op))

    def _instantiate_here(self, op: Operation, frame: Frame) -> None:
        """A tprog.instantiate of an earlier run: as a call, applied only in traces."""
        if frame is self.top:
            self._placeholders(op, frame)
            self.call_report.served(op)
        else:
            super()._instantiate(op, frame)

    def _skip_closing(self, op: Operation, frame: Frame) -> None:
        """Module-level closings are close-shapes' business.

        Closing here would close the placeholder results of module-level
        applications to arbitrary shapes, which later traces would take as
        facts. Inside a trace the handler is the usual one, which refuses.
        """
        if frame is not self.top:
            super()._close(op, frame)

    def _scheme_for(self, op: Operation, callee: str) -> tuple[Scheme, SchemeOp | None]:
        placed = self.placed.get(callee)
        if placed is not None:
            return placed.scheme, None
        symbol = self.scheme_of_function.get(callee)
        found = self.schemes.get(symbol) if symbol is not None else None
        if found is None:
            fail_at(
                op,
                f"{op.name}: @{callee} has no shape scheme here (a recursive call "
                f"cannot be traced)",
            )
        return found

    def _annotate_placed(
        self, placed: _Placed, applied: scheme.Application, arguments: list[Tensor]
    ) -> None:
        """As ``annotate_from``, for a scheme whose operation is not written yet."""
        for entry, value in zip(placed.values, placed.body_values, strict=True):
            if entry.where == "arg":
                shape = arguments[entry.index].shape
            elif entry.where == "internal":
                shape = applied.internal[entry.index]
            else:
                shape = placed.scheme.anchors[entry.index].shape
            self.note_body_shape(value, shape)

    # ---------------------------------------------------------------- tracing

    def ensure_scheme(self, func: FuncOp, before: Operation | None) -> None:
        """Trace ``func`` (and first the functions it calls) unless it has a scheme.

        Depth first with an explicit stack (``self._tracing`` is the chain of
        functions being traced), so a call chain of any length is traced.
        """
        if self._is_done(func):
            return
        self._enter(func)
        # per function being traced: its callees still to visit
        pending: list[list[FuncOp]] = [self._callees(func)]
        while pending:
            callees = pending[-1]
            if callees:
                callee = callees.pop()
                if not self._is_done(callee):
                    self._enter(callee)
                    pending.append(self._callees(callee))
                continue
            pending.pop()
            name = self._tracing[-1]
            current = self._functions[name]
            try:
                traced, values, body_values = self._trace(current)
            finally:
                self._tracing.pop()
            self.placed[name] = _Placed(current, traced, values, body_values, before)

    def _is_done(self, func: FuncOp) -> bool:
        name = func.sym_name.data
        return name in self.placed or name in self.scheme_of_function

    def _enter(self, func: FuncOp) -> None:
        name = func.sym_name.data
        if name in self._tracing:
            chain = " -> ".join(f"@{n}" for n in (*self._tracing, name))
            fail_at(
                func,
                f"tracing the shape scheme {name}: recursive call {chain} cannot be "
                f"traced",
            )
        self._tracing.append(name)

    def _callees(self, func: FuncOp) -> list[FuncOp]:
        """The functions ``func`` calls, in reverse call order (popped first
        to last, so callees are traced in the order of their calls)."""
        found = [
            callee
            for op in func.body.block.ops
            if isinstance(op, CallOp)
            and (callee := self._functions.get(op.callee.root_reference.data))
            is not None
        ]
        return found[::-1]

    def _trace(self, func: FuncOp) -> tuple[Scheme, list[ValueEntry], list[SSAValue]]:
        name = func.sym_name.data
        try:
            traced, recorded = self.trace_body(func)
        except ShapeError as error:
            fail_at(func, str(error))
        values, body_values = self._value_entries(traced, recorded)
        if traced.loose:
            fail_at(
                func,
                f"tracing the shape scheme {name}: the scheme depends on open "
                f"variables no module-level tensor holds; it cannot be written as a "
                f"tprog.scheme",
            )
        return traced, values, body_values

    def _value_entries(
        self, traced: Scheme, recorded: list[tuple[SSAValue, Shape]]
    ) -> tuple[list[ValueEntry], list[SSAValue]]:
        """Where each value of a traced body stands in the scheme, and the
        values these entries name."""
        entries: list[ValueEntry] = []
        body_values: list[SSAValue] = []
        locate, places = traced.locate, self._places
        for value, shape in recorded:
            where = locate(shape)
            if where is None or where[0] == "result":
                continue
            if value in places:
                place = places[value]
            else:
                place = places[value] = self._place(value)
            if place is None:
                continue
            entries.append(ValueEntry(*place, where[0], where[1]))
            body_values.append(value)
        return entries, body_values

    def _place(
        self, value: SSAValue
    ) -> tuple[str, int | None, int | None, int | None] | None:
        """A body value's function, and its argument or operation and result
        numbers (``None`` for a value outside function bodies)."""
        owner = _owner_function(value)
        if owner is None:
            return None
        if isinstance(value, BlockArgument):
            return (owner.sym_name.data, value.index, None, None)
        if isinstance(value, OpResult):
            block = value.op.parent_block()
            assert block is not None
            if block not in self._positions:
                self._positions[block] = {
                    op: index for index, op in enumerate(block.ops)
                }
            position = self._positions[block][value.op]
            return (owner.sym_name.data, None, position, value.index)
        return None

    # -------------------------------------------------------------- rewriting

    def _rewrite(self) -> None:
        taken = {
            op.sym_name.data
            for op in self.module.ops
            if isinstance(op, FuncOp | SchemeOp)
        }
        module_values = {
            id(tensor.shape): value for value, tensor in self.top.values.items()
        }
        block = self.module.body.block
        # One attribute per distinct line, as MLIR uniques attributes: a
        # caller's scheme repeats the lines of the bodies it reaches.
        attributes: dict[str, StringAttr] = {}

        def attribute(text: str) -> StringAttr:
            found = attributes.get(text)
            if found is None:
                found = attributes[text] = StringAttr(text)
            return found

        for name, placed in self.placed.items():
            symbol = f"{name}.scheme"
            counter = 1
            while symbol in taken:
                counter += 1
                symbol = f"{name}.scheme{counter}"
            taken.add(symbol)
            placed.symbol = symbol
            self.scheme_of_function[name] = symbol
            anchors: list[SSAValue] = []
            for anchor in placed.scheme.anchors:
                value = module_values.get(id(anchor.shape))
                if value is None:
                    fail_at(
                        placed.func,
                        f"tracing the shape scheme {name}: the body reads "
                        f"'{anchor.shape.name}', which is not a module-level tensor "
                        f"here; a tprog.scheme cannot refer to it",
                    )
                anchors.append(value)
            scheme_op = SchemeOp(
                symbol,
                name,
                anchors,
                placed.scheme.arity,
                placed.scheme.num_results,
                [attribute(line) for line in placed.scheme.to_lines()],
                function=name,
                values=[attribute(str(entry)) for entry in placed.values],
            )
            if placed.before is None:
                block.add_op(scheme_op)
            else:
                Rewriter.insert_op(scheme_op, InsertPoint.before(placed.before))
        for call in self.calls:
            callee = call.callee.root_reference.data
            instantiation = InstantiateOp(
                self.scheme_of_function[callee],
                call.arguments,
                call.application.data,
                call.res.types,
            )
            for old, new in zip(call.res, instantiation.res, strict=True):
                if old.name_hint:
                    new.name_hint = old.name_hint
            Rewriter.replace_op(call, instantiation)
            self.call_report.served(instantiation)


def _labels(op: Operation) -> list[object]:
    """The capture labels an operation uses, as nodes of ``_needed_ops``."""
    if isinstance(op, EinsumOp):
        return [("label", label) for label in op.capture_labels]
    if isinstance(op, SetDimOp):
        return [("label", op.label.data)]
    return []


def _read_by_body(func: FuncOp) -> list[object]:
    """The module-level values and capture labels a function body reads."""
    read: list[object] = []
    for op in func.body.walk():
        read.extend(_labels(op))
        for value in op.operands:
            owner = _owner_function(value)
            if owner is None:
                read.append(value)
    return read


def _owner_function(value: SSAValue) -> FuncOp | None:
    """The ``tprog.func`` whose body defines ``value``."""
    if isinstance(value, BlockArgument):
        owner = value.block.parent_op()
    elif isinstance(value, OpResult):
        owner = value.op.parent_op()
    else:
        return None
    return owner if isinstance(owner, FuncOp) else None
