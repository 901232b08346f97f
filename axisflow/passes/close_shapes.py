"""``close-shapes``: infer and write the concrete shape of every tensor value.

The pass runs the ``tprog`` interpreter (:class:`~axisflow.dialects.tprog_eval.ProgramEvaluator`)
over the module, closes the session, and rewrites every result type to
``!tprog.tensor<"...">``. How calls are evaluated (``calls``):
``re-evaluate`` runs the body at every call; ``shared`` (the default) traces
each function applied more than once into a shape scheme held in memory,
callees first, and instantiates it at each call, nested ones included. Both
write the same types and diagnostics (if anything fails while sharing, the
module is evaluated again by re-evaluation). ``explain`` writes how each
call site was served.

A value inside a function body gets a concrete type when every application
gives it the same shape (and ``annotate-functions`` is on); otherwise it keeps
``!tprog.tensor``, its per-call shapes being on the call results. A function
that is never called is left as it is.

A shape error becomes a diagnostic at the operation whose constraint failed;
``xdsl-opt --verify-diagnostics`` prints it without a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from xdsl.context import Context
from xdsl.dialects.builtin import FunctionType, ModuleOp
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from axisflow.dialects.tprog import UNKNOWN, FuncOp, ReturnOp, TensorType
from axisflow.dialects.tprog_eval import ProgramEvaluator, RetryByReEvaluation
from axisflow.gc_pause import gc_paused
from axisflow.shapes import Shape
from axisflow.xdsl_compat import set_value_type


def concrete_type(shape: Shape) -> TensorType:
    """The ``!tprog.tensor<...>`` type of a closed shape."""
    return TensorType(shape.rows())


class ConcreteTypes:
    """``concrete_type`` of many closed shapes, one type per distinct shape.

    Programs repeat a few shapes over many values; building the type (its
    parameters, verified) costs more than looking the rows' sizes up.
    """

    def __init__(self) -> None:
        self._types: dict[tuple[object, ...], TensorType] = {}

    def of(self, shape: Shape) -> TensorType:
        """The type of a closed shape."""
        key = (shape.batch.dims, shape.input.dims, shape.output.dims)
        found = self._types.get(key)
        if found is None:
            found = self._types[key] = concrete_type(shape)
        return found


@dataclass(frozen=True)
class CloseShapesPass(ModulePass):
    """Infer every tensor's shape and write it as its type.

    ``annotate_functions``: also type the values inside function bodies when
    all applications agree on their shape. ``bytes_per_element``: the
    precision that turns ``tprog.total_elems ... bytes`` into elements.
    ``calls``: ``shared`` (one trace per function applied more than once,
    its scheme instantiated at each call) or ``re-evaluate`` (the body runs at
    every call); both write the same types and diagnostics. ``explain``:
    write on each call site whether a scheme served it or why it was
    re-evaluated (``tprog.served``), and the counts on the module.
    """

    name = "close-shapes"

    annotate_functions: bool = True
    bytes_per_element: int = 4
    calls: Literal["shared", "re-evaluate"] = "shared"
    explain: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.bytes_per_element < 1:
            raise DiagnosticException(
                "close-shapes: bytes-per-element must be a positive integer"
            )
        with gc_paused():  # allocation-heavy; see axisflow.gc_pause
            self._apply(op)

    def _apply(self, op: ModuleOp) -> None:
        evaluator = self._evaluate(op)
        types = ConcreteTypes()
        updates: list[tuple[SSAValue, Attribute]] = [
            (value, types.of(tensor.shape))
            for value, tensor in evaluator.top.values.items()
        ]
        if self.annotate_functions:
            for value, shapes in evaluator.body_shapes.items():
                # Build a type only for the shape every application agrees on.
                agreed = shapes.agreed()
                updates.append((value, UNKNOWN if agreed is None else types.of(agreed)))
        forward = _forward_referenced(op)
        for value, new_type in updates:
            if value.type != new_type and value not in forward:
                _set_type(value, new_type)
        if self.annotate_functions:
            for func in op.ops:
                if isinstance(func, FuncOp):
                    _update_signature(func)
        if self.explain:
            evaluator.call_report.attach(op)
        # The handlers are the evaluator's own bound methods, a reference
        # cycle that would keep every tensor of the program alive until the
        # next cyclic collection, which then traverses them all (a tenth of
        # the pass on a 50,000-operation chain): reference counting frees them
        # here instead.
        evaluator.handlers.clear()

    def _evaluate(self, op: ModuleOp) -> ProgramEvaluator:
        """The evaluated module: calls shared when they can be, else re-evaluated.

        Sharing gives every value the shapes re-evaluation gives (the shape
        schemes' oracle); if anything fails, the module is evaluated again by
        re-evaluation, so the diagnostic is the one it reports.
        """
        evaluator = ProgramEvaluator(
            op,
            bytes_per_element=self.bytes_per_element,
            share_calls=self.calls == "shared",
        )
        if evaluator.share_calls:  # some function is called at several sites
            try:
                evaluator.evaluate()
                return evaluator
            except (RetryByReEvaluation, DiagnosticException):
                evaluator = ProgramEvaluator(
                    op,
                    bytes_per_element=self.bytes_per_element,
                    re_evaluation_reason=(
                        "applying the shapes through schemes failed, so the module "
                        "was evaluated again by re-evaluation"
                    ),
                )
        evaluator.evaluate()
        return evaluator


def _forward_referenced(module: ModuleOp) -> set[SSAValue]:
    """Results used before their definition (the module is a graph region).

    The custom syntax prints no operand types: the reader gives a forward
    reference the plain type and requires its definition to have that type,
    so these keep the type they were read with (a refined one would make the
    output unreadable). One walk, linear in the ops and their operands."""
    position: dict[Operation, int] = {}
    forward: set[SSAValue] = set()
    for number, op in enumerate(module.walk()):
        position[op] = number
        for operand in op.operands:
            owner = operand.owner
            if isinstance(owner, Operation) and owner not in position:
                forward.add(operand)  # defined further down
    return forward


def _set_type(value: SSAValue, new_type: Attribute) -> None:
    """Give a value its new type in place, as MLIR's ``Value::setType`` does.

    xDSL's ``Rewriter.replace_value_with_new_type`` makes a new value and
    moves every use to it: on a 50,000-operation chain that was a quarter of
    the pass, more than the shape engine. Nothing else holds the values while
    the pass runs, and the printed module is the same.
    """
    set_value_type(value, new_type)


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
