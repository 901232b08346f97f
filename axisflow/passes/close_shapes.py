"""``close-shapes``: infer and write the concrete shape of every tensor value.

The pass runs the shape engine (:mod:`axisflow.shapes`) over a ``tprog``
program: it evaluates the module's top-level operations in order, creating a
tensor per value; a ``tprog.call`` re-evaluates the callee's body on the call's
arguments (OCANNL's behaviour today, and the baseline shape schemes are
measured against), with origins naming the application site. Then it closes
the session and rewrites every result type to ``!tprog.tensor<"...">``.

A value inside a function body gets a concrete type when every application
gives it the same shape (and ``annotate-functions`` is on); otherwise it keeps
``!tprog.tensor``, its per-call shapes being on the call results. A function
that is never called is left as it is.

A shape error becomes a diagnostic at the operation whose constraint failed
(the origin's ``site``), with the engine's message, which names the
operations, tensors, sides and kinds of axes involved; ``xdsl-opt
--verify-diagnostics`` prints it without a traceback.

:class:`ProgramEvaluator` is the reusable part: it maps operations to engine
calls through a dispatch table that extensions (e.g. shape schemes) can add
to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NoReturn

from xdsl.context import Context
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Attribute, Block, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import Rewriter
from xdsl.utils.exceptions import DiagnosticException

from axisflow.dialects.tprog import (
    UNKNOWN,
    CallOp,
    ComposeOp,
    EinsumOp,
    FuncOp,
    LeafOp,
    ParamOp,
    PointwiseOp,
    ReturnOp,
    SetDimOp,
    TensorType,
    TransposeOp,
)
from axisflow.shapes import DimRef, Session, Shape, ShapeError, Tensor
from axisflow.shapes.terms import format_concrete_shape


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


@dataclass
class ProgramEvaluator:
    """Evaluates a ``tprog`` module into a shape session.

    ``handlers`` maps an operation class to a function evaluating it in a
    frame; extensions register more.
    """

    module: ModuleOp
    session: Session = field(default_factory=Session)
    handlers: dict[type[Operation], Callable[[Operation, Frame], None]] = field(
        default_factory=dict
    )
    body_shapes: dict[SSAValue, list[Shape]] = field(default_factory=dict)
    top: Frame = field(default_factory=lambda: Frame({}))
    _refs: dict[str, DimRef] = field(default_factory=dict)
    _functions: dict[str, FuncOp] = field(default_factory=dict)
    _active_calls: list[str] = field(default_factory=list)
    _anonymous: dict[SSAValue, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._functions = {
            op.sym_name.data: op for op in self.module.ops if isinstance(op, FuncOp)
        }
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
            fail_at(
                op,
                f"{op.name}: operand {self.name_of(value)!r} has no tensor yet: a value "
                f"used by a function body must be defined at module level before the "
                f"calls that apply it",
            )
        return tensor

    def define(self, frame: Frame, value: SSAValue, tensor: Tensor) -> None:
        """Bind a value to a tensor in a frame (and remember body shapes)."""
        frame.values[value] = tensor
        if frame is not self.top:
            self.body_shapes.setdefault(value, []).append(tensor.shape)

    def ref(self, label: str) -> DimRef:
        """The module's capture reference for an einsum label."""
        ref = self._refs.get(label)
        if ref is None:
            ref = self._refs[label] = self.session.dim_ref(label)
        return ref

    # ----------------------------------------------------------- evaluation

    def evaluate(self) -> None:
        """Evaluate the module's top-level operations, then close the session."""
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
            with self.session.provenance(application=frame.application):
                handler(op, frame)
        except ShapeError as error:
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
        try:
            self.session.set_dim(self.ref(op.label.data), op.size.data)
        except ShapeError as error:
            fail_at(op, str(error))

    def _call(self, op: Operation, frame: Frame) -> None:
        assert isinstance(op, CallOp)
        callee = op.callee.root_reference.data
        func = self._functions.get(callee)
        if func is None:
            fail_at(op, f"{op.name}: no tprog.func named @{callee}")
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


def concrete_type(shape: Shape) -> TensorType:
    """The ``!tprog.tensor<...>`` type of a closed shape."""
    return TensorType(format_concrete_shape(shape.rows()))


@dataclass(frozen=True)
class CloseShapesPass(ModulePass):
    """Infer every tensor's shape (calls by re-evaluation) and write it as its type.

    ``annotate_functions``: also type the values inside function bodies when
    all applications agree on their shape.
    """

    name = "close-shapes"

    annotate_functions: bool = True

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        evaluator = ProgramEvaluator(op)
        evaluator.evaluate()
        updates: list[tuple[SSAValue, Attribute]] = [
            (value, concrete_type(tensor.shape))
            for value, tensor in evaluator.top.values.items()
        ]
        if self.annotate_functions:
            for value, shapes in evaluator.body_shapes.items():
                types = {concrete_type(shape) for shape in shapes}
                updates.append((value, types.pop() if len(types) == 1 else UNKNOWN))
        for value, new_type in updates:
            if value.type != new_type:
                Rewriter.replace_value_with_new_type(value, new_type)
        if self.annotate_functions:
            for func in op.ops:
                if isinstance(func, FuncOp):
                    _update_signature(func)


def _update_signature(func: FuncOp) -> None:
    """Make the signature agree with the (re)typed arguments and returned values."""
    block = func.body.block
    ret = block.last_op
    outputs = (
        [value.type for value in ret.values]
        if isinstance(ret, ReturnOp)
        else list(func.function_type.outputs)
    )
    func.properties["function_type"] = FunctionType.from_lists(
        [arg.type for arg in block.args], outputs
    )
