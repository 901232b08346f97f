"""``lower-schedule``: each scheduled forest as a ``func.func`` over memrefs.

Run after ``classify-axes,schedule-batches``. Every ``batch.forest`` with a
``sched.schedule`` becomes ``func.func @<forest>(inputs..., outputs...)``
over ``memref<...xf64>`` (inputs in declaration order, then one output per
tree) written in the standard dialects only, so ``mlir-opt`` and any MLIR
pipeline take it further:

* ``scf.for`` over the blocks of each batch-loop pass;
* ``memref.subview`` for the block of an input, piece or buffer that a
  contraction reads or a write fills;
* ``memref.alloc``/``memref.dealloc`` where the schedule allocates a piece,
  buffer or value and after its last read; ``linalg.fill`` zeroes
  accumulators and contraction targets;
* one ``linalg.generic`` per contraction: loop dimensions are the node's
  modes, ``parallel`` for result modes and ``reduction`` for summed ones,
  indexing maps from the modes; a Reduction-role value is a partial sum
  added into its zeroed buffer across iterations, a LoopCarried one a
  scatter of each piece into its full buffer (both ``linalg.generic``).

The pass reads the IR only through ``axisflow.lowering.plan`` (built from the
pipeline's forest model and schedule); this module spells the plan's steps
with xDSL's ``Builder`` (each ``scf.for`` body built before its ``scf.yield``,
the constants hoisted to the top of the function) and replaces each forest
by its function through xDSL's ``Rewriter``.
Options: ``main=true`` adds ``func.func @main()`` that fills the inputs
deterministically, calls every forest's function and prints the results (see
``axisflow.lowering.harness``), ready for ``mlir-runner``. The forests are
replaced by the functions. A forest without schedule, or one that cannot be
lowered (a space without extent), fails the pass with a diagnostic naming it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import TypeVar

from xdsl.builder import Builder
from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    AffineMapAttr,
    DenseArrayBase,
    FloatAttr,
    FunctionType,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    StridedLayoutAttr,
    f64,
    i64,
)
from xdsl.dialects.linalg.attrs import IteratorTypeAttr
from xdsl.dialects.linalg.ops import FillOp, GenericOp, YieldOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.utils.exceptions import PassFailedException

from axisflow.dialects.batch import ForestOp
from axisflow.lowering import harness
from axisflow.lowering.plan import (
    AddScaled,
    Alloc,
    Contract,
    Emit,
    Free,
    Loop,
    LoweringError,
    Plan,
    Step,
    Tensor,
    Window,
    WriteBack,
    Zero,
    build_plan,
    row_major_strides,
)

PRINT_I64 = "printI64"
PRINT_NEWLINE = "printNewline"
"""Functions of MLIR's C runner library (``libmlir_c_runner_utils``)."""


class _Attributes:
    """Attributes the lowering repeats (types, maps, index lists), each built
    once: constructing xDSL attributes dominates the pass's time."""

    def __init__(self) -> None:
        self.memrefs: dict[tuple[int, ...], MemRefType] = {}
        self.views: dict[tuple[tuple[int, ...], tuple[int, ...]], MemRefType] = {}
        self.maps: dict[tuple[int, tuple[int, ...]], AffineMapAttr] = {}
        self.arrays: dict[tuple[int, ...], DenseArrayBase] = {}
        self.parallel = IteratorTypeAttr.parallel()
        self.reduction = IteratorTypeAttr.reduction()

    def memref(self, shape: Sequence[int]) -> MemRefType:
        """``memref<shape x f64>`` (identity layout)."""
        key = tuple(shape)
        found = self.memrefs.get(key)
        if found is None:
            found = self.memrefs[key] = MemRefType(f64, key)
        return found

    def view(self, sizes: Sequence[int], source: Sequence[int]) -> MemRefType:
        """The type of a block of a ``memref<source x f64>``: its strides,
        dynamic offset."""
        key = (tuple(sizes), tuple(source))
        found = self.views.get(key)
        if found is None:
            layout = StridedLayoutAttr(row_major_strides(source), None)
            found = self.views[key] = MemRefType(f64, key[0], layout)
        return found

    def map(self, dims: int, results: Sequence[int]) -> AffineMapAttr:
        """``affine_map<(d0, ...) -> (d_r, ...)>``."""
        key = (dims, tuple(results))
        found = self.maps.get(key)
        if found is None:
            exprs = tuple(AffineExpr.dimension(r) for r in results)
            found = self.maps[key] = AffineMapAttr(AffineMap(dims, 0, exprs))
        return found

    def identity(self, rank: int, dims: int) -> AffineMapAttr:
        """The map to the first ``rank`` of ``dims`` dimensions."""
        return self.map(dims, range(rank))

    def array(self, values: Sequence[int]) -> DenseArrayBase:
        """``array<i64: ...>``."""
        key = tuple(values)
        found = self.arrays.get(key)
        if found is None:
            found = self.arrays[key] = DenseArrayBase.from_list(i64, key)
        return found


def _hint(text: str) -> str:
    """An SSA name hint for ``text``: ASCII, and ``f_0`` as ``f0`` (xDSL's
    printer would read a ``_0`` suffix as its own uniquifier and drop it)."""
    cleaned = re.sub(r"_(\d+)$", r"\1", re.sub(r"[^A-Za-z0-9_]", "_", text))
    return cleaned if cleaned and not cleaned[0].isdigit() else f"v{cleaned}"


_OpT = TypeVar("_OpT", bound=Operation)


@dataclass
class _Emission:
    """Where the ops of one function go: xDSL's ``Builder`` at the current
    insertion point, and the function's constants, one ``arith.constant``
    per distinct (type, value), hoisted to the top of its entry block (they
    dominate every use)."""

    builder: Builder
    entry: Block
    attributes: _Attributes
    constants: dict[tuple[str, float | int], SSAValue] = field(
        default_factory=dict[tuple[str, float | int], SSAValue]
    )
    constant_ops: list[Operation] = field(default_factory=list[Operation])

    @staticmethod
    def into(entry: Block, attributes: _Attributes) -> _Emission:
        """Emission at the end of ``entry``, the function's entry block."""
        return _Emission(Builder(InsertPoint.at_end(entry)), entry, attributes)

    def add(self, op: _OpT) -> _OpT:
        """Insert ``op`` at the insertion point."""
        return self.builder.insert(op)

    def index(self, value: int) -> SSAValue:
        """The ``index`` constant ``value`` (named ``%c<value>``)."""
        return self._constant(
            ("index", value), lambda: IntegerAttr(value, IndexType()), f"c{value}"
        )

    def real(self, value: float) -> SSAValue:
        """The ``f64`` constant ``value``."""
        return self._constant(("f64", value), lambda: FloatAttr(value, f64))

    def integer(self, value: int) -> SSAValue:
        """The ``i64`` constant ``value``."""
        return self._constant(("i64", value), lambda: IntegerAttr(value, i64))

    def _constant(
        self,
        key: tuple[str, float | int],
        attr: Callable[[], IntegerAttr | FloatAttr],
        hint: str | None = None,
    ) -> SSAValue:
        """The constant of ``key``, made on first use (placed by ``finish``)."""
        found = self.constants.get(key)
        if found is None:
            op = arith.ConstantOp(attr())
            if hint is not None:
                op.result.name_hint = hint
            self.constant_ops.append(op)
            found = self.constants[key] = op.result
        return found

    def finish(self) -> None:
        """Put the constants at the top of the entry block, in order of first use."""
        Rewriter.insert_op(self.constant_ops, InsertPoint.at_start(self.entry))

    @contextmanager
    def loop(self, start: int, stop: int, step: int) -> Iterator[BlockArgument]:
        """An ``scf.for`` at the insertion point, yielding its induction
        variable; inside the ``with``, ops go into its body, before its
        ``scf.yield`` (where MLIR's ``scf::ForOp`` builder leaves them)."""
        terminator = scf.YieldOp()
        body = Block([terminator], arg_types=[IndexType()])
        bounds = (self.index(start), self.index(stop), self.index(step))
        self.add(scf.ForOp(*bounds, [], body))
        outer = self.builder.insertion_point
        self.builder.insertion_point = InsertPoint.before(terminator)
        try:
            yield body.args[0]
        finally:
            self.builder.insertion_point = outer

    @contextmanager
    def loop_nest(self, shape: Sequence[int]) -> Iterator[list[BlockArgument]]:
        """Nested ``scf.for`` over every element of ``shape``, yielding the
        induction variables; inside the ``with``, ops go into the innermost
        body."""
        with ExitStack() as nest:
            yield [nest.enter_context(self.loop(0, extent, 1)) for extent in shape]


def _generic(
    inputs: Sequence[SSAValue],
    output: SSAValue,
    maps: Sequence[AffineMapAttr],
    reductions: Sequence[bool],
    combine: str,
    emission: _Emission,
    coeff: float | None = None,
) -> GenericOp:
    """One ``linalg.generic``; ``combine``: ``product`` (``out += prod(ins)``),
    ``add`` (``out += in``), ``copy`` (``out = in``) or ``scale`` (``out =
    coeff * in``)."""
    body = Block(arg_types=[f64] * (len(inputs) + 1))
    inside = Builder(InsertPoint.at_end(body))
    *ins, out = body.args
    result: SSAValue
    if combine == "product":
        acc: SSAValue | None = None
        for arg in ins:
            acc = arg if acc is None else inside.insert(arith.MulfOp(acc, arg)).result
        if acc is None:
            raise ValueError("a contraction needs a factor")
        result = inside.insert(arith.AddfOp(out, acc)).result
    elif combine == "add":
        result = inside.insert(arith.AddfOp(out, ins[0])).result
    elif combine == "copy":
        result = ins[0]
    else:
        assert coeff is not None
        result = inside.insert(arith.MulfOp(emission.real(coeff), ins[0])).result
    inside.insert(YieldOp(result))
    attributes = emission.attributes
    iterators = [
        attributes.reduction if reduced else attributes.parallel
        for reduced in reductions
    ]
    return GenericOp(list(inputs), [output], Region(body), maps, iterators)


def _scaled_generic(
    inputs: Sequence[SSAValue],
    output: SSAValue,
    maps: Sequence[AffineMapAttr],
    rank: int,
    coeff: float,
    accumulate: bool,
    emission: _Emission,
) -> GenericOp:
    """``out = coeff * in`` or ``out += coeff * in`` (all dimensions
    ``parallel``; with no input, ``in`` is 1: the output gets ``coeff``);
    a coefficient of 1 multiplies nothing."""
    body = Block(arg_types=[f64] * (len(inputs) + 1))
    inside = Builder(InsertPoint.at_end(body))
    *ins, out = body.args
    value: SSAValue
    if ins:
        value = ins[0]
        if coeff != 1.0:
            value = inside.insert(arith.MulfOp(emission.real(coeff), value)).result
    else:
        value = emission.real(coeff)
    if accumulate:
        value = inside.insert(arith.AddfOp(out, value)).result
    inside.insert(YieldOp(value))
    iterators = [emission.attributes.parallel] * rank
    return GenericOp(list(inputs), [output], Region(body), maps, iterators)


class _FunctionEmitter:
    """One plan as ``func.func``."""

    def __init__(self, plan: Plan, attributes: _Attributes) -> None:
        self.plan = plan
        self.attributes = attributes
        self.values: dict[int, SSAValue] = {}
        self.ivs: dict[int, SSAValue] = {}
        self.buffered = {t.value for t in plan.tensors if t.kind == "buffer"}
        """Values with a buffer: their pieces are named ``<value>_piece``."""

    def tensor(self, number: int) -> Tensor:
        return self.plan.tensors[number]

    def emit(self) -> func.FuncOp:
        plan = self.plan
        arguments = [*plan.inputs, *plan.outputs]
        types = [self.attributes.memref(self.tensor(t).shape) for t in arguments]
        entry = Block(arg_types=types)
        for number, arg in zip(arguments, entry.args, strict=True):
            self.values[number] = arg
            arg.name_hint = _hint(self.tensor(number).value)
        self.emission = _Emission.into(entry, self.attributes)
        self.steps(plan.steps)
        self.emission.add(func.ReturnOp())
        self.emission.finish()
        return func.FuncOp(plan.name, FunctionType.from_lists(types, []), Region(entry))

    def steps(self, steps: Sequence[Step]) -> None:
        emission = self.emission
        for step in steps:
            if isinstance(step, Loop):
                with emission.loop(step.start, step.stop, step.block) as iv:
                    self.ivs[step.instance] = iv
                    iv.name_hint = _hint(f"at_{step.space}{step.instance}")
                    self.steps(step.body)
                    del self.ivs[step.instance]
            elif isinstance(step, Alloc):
                tensor = self.tensor(step.tensor)
                alloc_type = self.attributes.memref(tensor.shape)
                alloc = emission.add(memref.AllocOp([], [], alloc_type))
                hint = _hint(tensor.value)
                if tensor.kind == "piece" and tensor.value in self.buffered:
                    hint = f"{hint}_piece"
                elif tensor.kind == "operand":  # a copy of the residual
                    hint = f"{hint}_operand"
                alloc.memref.name_hint = hint
                self.values[step.tensor] = alloc.memref
            elif isinstance(step, Zero):
                target = self.values[step.tensor]
                emission.add(FillOp([emission.real(0.0)], [target], ()))
            elif isinstance(step, Free):
                emission.add(memref.DeallocOp.get(self.values.pop(step.tensor)))
            elif isinstance(step, Contract):
                self.contract(step)
            elif isinstance(step, WriteBack):
                self.write_back(step)
            elif isinstance(step, AddScaled):
                self.add_scaled(step)
            else:
                self.output(step)

    def view(self, window: Window) -> SSAValue:
        """The window as a ``memref.subview`` of its tensor (or the tensor)."""
        source = self.values[window.tensor]
        if window.is_whole:
            return source
        tensor = self.tensor(window.tensor)
        attributes = self.attributes
        offsets = [self.ivs[o] for o in window.offsets if o is not None]
        static = [DYNAMIC_INDEX if o is not None else 0 for o in window.offsets]
        op = self.emission.add(
            memref.SubviewOp(
                source,
                offsets,
                [],
                [],
                attributes.array(static),
                attributes.array(window.sizes),
                attributes.array([1] * len(window.sizes)),
                attributes.view(window.sizes, tensor.shape),
            )
        )
        op.result.name_hint = f"{_hint(tensor.value)}_blk"
        return op.result

    def contract(self, step: Contract) -> None:
        dims = len(step.extents)
        operands = [self.view(window) for window in step.operands]
        maps = [self.attributes.map(dims, dims_of) for dims_of in step.operand_dims]
        maps.append(self.attributes.identity(step.rank, dims))
        target = self.values[step.target]
        self.emission.add(
            _generic(operands, target, maps, step.reductions, "product", self.emission)
        )

    def write_back(self, step: WriteBack) -> None:
        piece = self.values[step.piece]
        target = self.view(step.target)
        rank = len(step.target.sizes)
        identity = self.attributes.identity(rank, rank)
        combine = "add" if step.accumulate else "copy"
        self.emission.add(
            _generic(
                [piece],
                target,
                [identity, identity],
                [False] * rank,
                combine,
                self.emission,
            )
        )

    def add_scaled(self, step: AddScaled) -> None:
        """``target (+)= coeff * source`` over the target window, the source
        read through its permuted indexing map (no input for a number)."""
        emission = self.emission
        target = self.view(step.target)
        rank = len(step.target.sizes)
        identity = self.attributes.identity(rank, rank)
        inputs: list[SSAValue] = []
        maps: list[AffineMapAttr] = []
        if step.source is not None:
            inputs.append(self.values[step.source])
            maps.append(self.attributes.map(rank, step.source_dims))
        maps.append(identity)
        emission.add(
            _scaled_generic(
                inputs, target, maps, rank, float(step.coeff), step.accumulate, emission
            )
        )

    def output(self, step: Emit) -> None:
        output = self.values[step.output]
        coeff = float(step.coeff)
        emission = self.emission
        if step.source is None:
            emission.add(FillOp([emission.real(coeff)], [output], ()))
            return
        rank = len(self.tensor(step.output).shape)
        identity = self.attributes.identity(rank, rank)
        source = self.values[step.source]
        combine = "copy" if coeff == 1.0 else "scale"
        emission.add(
            _generic(
                [source],
                output,
                [identity, identity],
                [False] * rank,
                combine,
                emission,
                coeff,
            )
        )


def emit_main(plans: Sequence[Plan]) -> list[Operation]:
    """``func.func @main()`` (fill inputs, call each forest, print outputs,
    free) and the declarations of the runner-library print functions."""
    entry = Block()
    emission = _Emission.into(entry, _Attributes())
    print_i64 = func.FuncOp.external(PRINT_I64, [i64], [])
    print_newline = func.FuncOp.external(PRINT_NEWLINE, [], [])
    for plan in plans:
        arguments: list[SSAValue] = []
        for number, tensor_number in enumerate(plan.inputs):
            tensor = plan.tensors[tensor_number]
            alloc_type = emission.attributes.memref(tensor.shape)
            buffer = emission.add(memref.AllocOp([], [], alloc_type)).memref
            buffer.name_hint = _hint(tensor.value)
            _fill(emission, buffer, tensor.shape, number)
            arguments.append(buffer)
        outputs: list[tuple[SSAValue, Tensor]] = []
        for tensor_number in plan.outputs:
            tensor = plan.tensors[tensor_number]
            alloc_type = emission.attributes.memref(tensor.shape)
            buffer = emission.add(memref.AllocOp([], [], alloc_type)).memref
            buffer.name_hint = _hint(tensor.value)
            outputs.append((buffer, tensor))
            arguments.append(buffer)
        emission.add(func.CallOp(plan.name, arguments, []))
        for buffer, tensor in outputs:
            _print(emission, buffer, tensor.shape)
        for argument in arguments:
            emission.add(memref.DeallocOp.get(argument))
    emission.add(func.ReturnOp())
    emission.finish()
    main = func.FuncOp("main", FunctionType.from_lists([], []), Region(entry))
    return [main, print_i64, print_newline]


def _fill(emission: _Emission, buffer: SSAValue, shape: Sequence[int], k: int) -> None:
    """Store the harness formula (``axisflow.lowering.harness``) everywhere."""
    with emission.loop_nest(shape) as ivs:
        add, index = emission.add, emission.index
        flat = index(0)
        for iv, stride in zip(ivs, row_major_strides(shape), strict=True):
            scaled = add(arith.MuliOp(iv, index(stride))).result
            flat = add(arith.AddiOp(flat, scaled)).result
        square = add(arith.MuliOp(index(harness.FILL_SQUARE), flat)).result
        linear = add(arith.AddiOp(square, index(harness.FILL_LINEAR))).result
        poly = add(arith.MuliOp(linear, flat)).result
        constant = harness.FILL_INPUT * k + harness.FILL_OFFSET
        shifted = add(arith.AddiOp(poly, index(constant))).result
        modulo = add(arith.RemSIOp(shifted, index(harness.FILL_MODULUS))).result
        centered = add(arith.SubiOp(modulo, index(harness.FILL_CENTER))).result
        wide = add(arith.IndexCastOp(centered, i64)).result
        real = add(arith.SIToFPOp(wide, f64)).result
        value = add(arith.MulfOp(real, emission.real(harness.FILL_SCALE))).result
        add(memref.StoreOp.get(value, buffer, ivs))


def _print(emission: _Emission, buffer: SSAValue, shape: Sequence[int]) -> None:
    """Print the element count, then every element's bits (row-major)."""
    count = 1
    for extent in shape:
        count *= extent
    emission.add(func.CallOp(PRINT_I64, [emission.integer(count)], []))
    emission.add(func.CallOp(PRINT_NEWLINE, [], []))
    with emission.loop_nest(shape) as ivs:
        load = emission.add(memref.LoadOp.get(buffer, ivs))
        bits = emission.add(arith.BitcastOp(load.res, i64))
        emission.add(func.CallOp(PRINT_I64, [bits.result], []))
        emission.add(func.CallOp(PRINT_NEWLINE, [], []))


def plan_of(forest: ForestOp) -> Plan:
    """The lowering plan of a scheduled ``batch.forest`` (the pass's only view
    of the IR). Raises ``LoweringError``."""
    from axisflow.dialects.batch_model import forest_model
    from axisflow.dialects.sched import ScheduleOp
    from axisflow.dialects.sched_model import check_schedule_op, schedule_from_op
    from axisflow.forest.model import ModelError

    schedule_op = next(
        (op for op in forest.body.block.ops if isinstance(op, ScheduleOp)), None
    )
    if schedule_op is None:
        raise LoweringError("it has no sched.schedule (run schedule-batches first)")
    # The sched verifier checks structure only; a schedule lowered to code
    # must obey every rule (a hand-written one may not).
    check_schedule_op(schedule_op)
    try:
        model = forest_model(forest, with_roles=False)
    except ModelError as error:
        raise LoweringError(str(error)) from None
    schedule, _ = schedule_from_op(schedule_op)
    return build_plan(model, schedule)


def _label(forest: ForestOp) -> str:
    name = forest.sym_name
    return "batch.forest (unnamed)" if name is None else f"batch.forest @{name.data}"


def lowered_module(plans: Sequence[Plan], *, main: bool = False) -> ModuleOp:
    """A module holding the ``func.func`` of each plan (and ``@main``)."""
    attributes = _Attributes()
    ops: list[Operation] = [_FunctionEmitter(p, attributes).emit() for p in plans]
    if main:
        ops.extend(emit_main(plans))
    return ModuleOp(ops)


def lower_module(module: ModuleOp, *, main: bool = False) -> list[Plan]:
    """Replace every ``batch.forest`` of ``module`` by its ``func.func`` (and
    add ``@main`` when asked). All forests are planned before the module
    changes; raises ``LoweringError`` naming the forest that failed."""
    forests = [op for op in module.walk() if isinstance(op, ForestOp)]
    plans: list[Plan] = []
    names: set[str] = set()
    for forest in forests:
        try:
            plan = plan_of(forest)
        except LoweringError as error:
            raise LoweringError(f"{_label(forest)}: {error}") from None
        if plan.name in names or (main and plan.name == "main"):
            raise LoweringError(
                f"{_label(forest)}: a second function named @{plan.name}"
            )
        names.add(plan.name)
        plans.append(plan)
    attributes = _Attributes()
    for forest, plan in zip(forests, plans, strict=True):
        Rewriter.replace_op(forest, _FunctionEmitter(plan, attributes).emit())
    if main:
        Rewriter.insert_op(emit_main(plans), InsertPoint.at_end(module.body.block))
    return plans


@dataclass(frozen=True)
class LowerSchedulePass(ModulePass):
    """Lower every scheduled forest to ``func``/``scf``/``memref``/``linalg``."""

    name = "lower-schedule"

    main: bool = False
    """Also emit ``@main``: deterministic inputs, the calls, printed results."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            lower_module(op, main=self.main)
        except LoweringError as error:
            raise PassFailedException(f"lower-schedule: {error}") from None
