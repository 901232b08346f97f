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
pipeline's forest model and schedule); this module spells the plan's steps.
Options: ``main=true`` adds ``func.func @main()`` that fills the inputs
deterministically, calls every forest's function and prints the results (see
``axisflow.lowering.harness``), ready for ``mlir-runner``. The forests are
replaced by the functions. A forest without schedule, or one that cannot be
lowered (a space without extent), fails the pass with a diagnostic naming it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

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
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.ir.affine import AffineExpr, AffineMap
from xdsl.passes import ModulePass
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


@dataclass
class _Builder:
    """Appends ops to the current block; index constants live at the top of
    the function (they dominate every use)."""

    entry: Block
    block: Block
    attributes: _Attributes = field(default_factory=_Attributes)
    constants: dict[tuple[str, float | int], SSAValue] = field(
        default_factory=dict[tuple[str, float | int], SSAValue]
    )
    constant_ops: list[Operation] = field(default_factory=list[Operation])

    def add(self, op: Operation) -> Operation:
        self.block.add_op(op)
        return op

    def index(self, value: int) -> SSAValue:
        return self._constant(
            ("index", value), lambda: IntegerAttr(value, IndexType()), f"c{value}"
        )

    def real(self, value: float) -> SSAValue:
        return self._constant(("f64", value), lambda: FloatAttr(value, f64))

    def integer(self, value: int) -> SSAValue:
        return self._constant(("i64", value), lambda: IntegerAttr(value, i64))

    def _constant(
        self,
        key: tuple[str, float | int],
        attr: Callable[[], IntegerAttr | FloatAttr],
        hint: str | None = None,
    ) -> SSAValue:
        """One ``arith.constant`` per distinct (type, value), made on first use."""
        found = self.constants.get(key)
        if found is None:
            op = arith.ConstantOp(attr())
            if hint is not None:
                op.result.name_hint = hint
            self.constant_ops.append(op)
            found = self.constants[key] = op.result
        return found

    def finish(self) -> None:
        first = self.entry.first_op
        for op in self.constant_ops:
            if first is None:
                self.entry.add_op(op)
            else:
                self.entry.insert_op_before(op, first)

    def loop(self, start: int, stop: int, step: int) -> tuple[scf.ForOp, Block]:
        body = Block(arg_types=[IndexType()])
        op = scf.ForOp(self.index(start), self.index(stop), self.index(step), [], body)
        self.add(op)
        return op, body

    def loop_nest(self, shape: Sequence[int]) -> tuple[list[SSAValue], Block]:
        """Nested ``scf.for`` over every element of ``shape``; returns the
        induction variables and the innermost body (the caller yields)."""
        ivs: list[SSAValue] = []
        outer = self.block
        for extent in shape:
            _, body = self.loop(0, extent, 1)
            ivs.append(body.args[0])
            self.block = body
        innermost = self.block
        self.block = outer
        return ivs, innermost


def _yield_nest(innermost: Block, outer: Block) -> None:
    """Terminate every ``scf.for`` body from ``innermost`` out to ``outer``."""
    block: Block | None = innermost
    while block is not None and block is not outer:
        block.add_op(scf.YieldOp())
        parent = block.parent_op()
        block = None if parent is None else parent.parent_block()


def _generic(
    inputs: Sequence[SSAValue],
    output: SSAValue,
    maps: Sequence[AffineMapAttr],
    reductions: Sequence[bool],
    combine: str,
    builder: _Builder,
    coeff: float | None = None,
) -> GenericOp:
    """One ``linalg.generic``; ``combine``: ``product`` (``out += prod(ins)``),
    ``add`` (``out += in``), ``copy`` (``out = in``) or ``scale`` (``out =
    coeff * in``)."""
    body = Block(arg_types=[f64] * (len(inputs) + 1))
    *ins, out = body.args
    result: SSAValue
    if combine == "product":
        acc: SSAValue | None = None
        for arg in ins:
            if acc is None:
                acc = arg
            else:
                mul = arith.MulfOp(acc, arg)
                body.add_op(mul)
                acc = mul.result
        if acc is None:
            raise ValueError("a contraction needs a factor")
        add = arith.AddfOp(out, acc)
        body.add_op(add)
        result = add.result
    elif combine == "add":
        add = arith.AddfOp(out, ins[0])
        body.add_op(add)
        result = add.result
    elif combine == "copy":
        result = ins[0]
    else:
        assert coeff is not None
        mul = arith.MulfOp(builder.real(coeff), ins[0])
        body.add_op(mul)
        result = mul.result
    body.add_op(YieldOp(result))
    attributes = builder.attributes
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
    builder: _Builder,
) -> GenericOp:
    """``out = coeff * in`` or ``out += coeff * in`` (all dimensions
    ``parallel``; with no input, ``in`` is 1: the output gets ``coeff``);
    a coefficient of 1 multiplies nothing."""
    body = Block(arg_types=[f64] * (len(inputs) + 1))
    *ins, out = body.args
    value: SSAValue
    if ins:
        value = ins[0]
        if coeff != 1.0:
            mul = arith.MulfOp(builder.real(coeff), value)
            body.add_op(mul)
            value = mul.result
    else:
        value = builder.real(coeff)
    if accumulate:
        add = arith.AddfOp(out, value)
        body.add_op(add)
        value = add.result
    body.add_op(YieldOp(value))
    iterators = [builder.attributes.parallel] * rank
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
        self.builder = _Builder(entry, entry, self.attributes)
        self.steps(plan.steps)
        entry.add_op(func.ReturnOp())
        self.builder.finish()
        return func.FuncOp(plan.name, FunctionType.from_lists(types, []), Region(entry))

    def steps(self, steps: Sequence[Step]) -> None:
        builder = self.builder
        for step in steps:
            if isinstance(step, Loop):
                _, body = builder.loop(step.start, step.stop, step.block)
                self.ivs[step.instance] = body.args[0]
                body.args[0].name_hint = _hint(f"at_{step.space}{step.instance}")
                outer = builder.block
                builder.block = body
                self.steps(step.body)
                body.add_op(scf.YieldOp())
                builder.block = outer
                del self.ivs[step.instance]
            elif isinstance(step, Alloc):
                tensor = self.tensor(step.tensor)
                alloc_type = self.attributes.memref(tensor.shape)
                op = builder.add(memref.AllocOp([], [], alloc_type))
                hint = _hint(tensor.value)
                if tensor.kind == "piece" and tensor.value in self.buffered:
                    hint = f"{hint}_piece"
                elif tensor.kind == "operand":  # a copy of the residual
                    hint = f"{hint}_operand"
                op.results[0].name_hint = hint
                self.values[step.tensor] = op.results[0]
            elif isinstance(step, Zero):
                target = self.values[step.tensor]
                builder.add(FillOp([builder.real(0.0)], [target], ()))
            elif isinstance(step, Free):
                builder.add(memref.DeallocOp.get(self.values.pop(step.tensor)))
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
        op = memref.SubviewOp(
            source,
            offsets,
            [],
            [],
            attributes.array(static),
            attributes.array(window.sizes),
            attributes.array([1] * len(window.sizes)),
            attributes.view(window.sizes, tensor.shape),
        )
        self.builder.add(op)
        op.result.name_hint = f"{_hint(tensor.value)}_blk"
        return op.result

    def contract(self, step: Contract) -> None:
        dims = len(step.extents)
        operands = [self.view(window) for window in step.operands]
        maps = [self.attributes.map(dims, dims_of) for dims_of in step.operand_dims]
        maps.append(self.attributes.identity(step.rank, dims))
        target = self.values[step.target]
        self.builder.add(
            _generic(operands, target, maps, step.reductions, "product", self.builder)
        )

    def write_back(self, step: WriteBack) -> None:
        piece = self.values[step.piece]
        target = self.view(step.target)
        rank = len(step.target.sizes)
        identity = self.attributes.identity(rank, rank)
        combine = "add" if step.accumulate else "copy"
        self.builder.add(
            _generic(
                [piece],
                target,
                [identity, identity],
                [False] * rank,
                combine,
                self.builder,
            )
        )

    def add_scaled(self, step: AddScaled) -> None:
        """``target (+)= coeff * source`` over the target window, the source
        read through its permuted indexing map (no input for a number)."""
        builder = self.builder
        target = self.view(step.target)
        rank = len(step.target.sizes)
        identity = self.attributes.identity(rank, rank)
        inputs: list[SSAValue] = []
        maps: list[AffineMapAttr] = []
        if step.source is not None:
            inputs.append(self.values[step.source])
            maps.append(self.attributes.map(rank, step.source_dims))
        maps.append(identity)
        builder.add(
            _scaled_generic(
                inputs, target, maps, rank, float(step.coeff), step.accumulate, builder
            )
        )

    def output(self, step: Emit) -> None:
        output = self.values[step.output]
        coeff = float(step.coeff)
        builder = self.builder
        if step.source is None:
            builder.add(FillOp([builder.real(coeff)], [output], ()))
            return
        rank = len(self.tensor(step.output).shape)
        identity = self.attributes.identity(rank, rank)
        source = self.values[step.source]
        combine = "copy" if coeff == 1.0 else "scale"
        builder.add(
            _generic(
                [source],
                output,
                [identity, identity],
                [False] * rank,
                combine,
                builder,
                coeff,
            )
        )


def emit_main(plans: Sequence[Plan]) -> list[Operation]:
    """``func.func @main()`` (fill inputs, call each forest, print outputs,
    free) and the declarations of the runner-library print functions."""
    entry = Block()
    builder = _Builder(entry, entry)
    print_i64 = func.FuncOp.external(PRINT_I64, [i64], [])
    print_newline = func.FuncOp.external(PRINT_NEWLINE, [], [])
    for plan in plans:
        arguments: list[SSAValue] = []
        for number, tensor_number in enumerate(plan.inputs):
            tensor = plan.tensors[tensor_number]
            alloc = builder.add(
                memref.AllocOp([], [], builder.attributes.memref(tensor.shape))
            )
            buffer = alloc.results[0]
            buffer.name_hint = _hint(tensor.value)
            _fill(builder, buffer, tensor.shape, number)
            arguments.append(buffer)
        outputs: list[tuple[SSAValue, Tensor]] = []
        for tensor_number in plan.outputs:
            tensor = plan.tensors[tensor_number]
            alloc = builder.add(
                memref.AllocOp([], [], builder.attributes.memref(tensor.shape))
            )
            alloc.results[0].name_hint = _hint(tensor.value)
            outputs.append((alloc.results[0], tensor))
            arguments.append(alloc.results[0])
        builder.add(func.CallOp(plan.name, arguments, []))
        for buffer, tensor in outputs:
            _print(builder, buffer, tensor.shape)
        for argument in arguments:
            builder.add(memref.DeallocOp.get(argument))
    entry.add_op(func.ReturnOp())
    builder.finish()
    main = func.FuncOp("main", FunctionType.from_lists([], []), Region(entry))
    return [main, print_i64, print_newline]


def _fill(builder: _Builder, buffer: SSAValue, shape: Sequence[int], k: int) -> None:
    """Store the harness formula (``axisflow.lowering.harness``) everywhere."""
    outer = builder.block
    ivs, innermost = builder.loop_nest(shape)
    builder.block = innermost
    flat = builder.index(0)
    for iv, stride in zip(ivs, row_major_strides(shape), strict=True):
        scaled = builder.add(arith.MuliOp(iv, builder.index(stride))).results[0]
        flat = builder.add(arith.AddiOp(flat, scaled)).results[0]
    square = builder.add(arith.MuliOp(builder.index(harness.FILL_SQUARE), flat))
    linear = builder.add(
        arith.AddiOp(square.results[0], builder.index(harness.FILL_LINEAR))
    )
    poly = builder.add(arith.MuliOp(linear.results[0], flat))
    constant = harness.FILL_INPUT * k + harness.FILL_OFFSET
    shifted = builder.add(arith.AddiOp(poly.results[0], builder.index(constant)))
    modulo = builder.add(
        arith.RemSIOp(shifted.results[0], builder.index(harness.FILL_MODULUS))
    )
    centered = builder.add(
        arith.SubiOp(modulo.results[0], builder.index(harness.FILL_CENTER))
    )
    wide = builder.add(arith.IndexCastOp(centered.results[0], i64))
    real = builder.add(arith.SIToFPOp(wide.results[0], f64))
    scaled_real = builder.add(
        arith.MulfOp(real.results[0], builder.real(harness.FILL_SCALE))
    )
    builder.add(memref.StoreOp.get(scaled_real.results[0], buffer, ivs))
    builder.block = outer
    _yield_nest(innermost, outer)


def _print(builder: _Builder, buffer: SSAValue, shape: Sequence[int]) -> None:
    """Print the element count, then every element's bits (row-major)."""
    count = 1
    for extent in shape:
        count *= extent
    builder.add(func.CallOp(PRINT_I64, [builder.integer(count)], []))
    builder.add(func.CallOp(PRINT_NEWLINE, [], []))
    outer = builder.block
    ivs, innermost = builder.loop_nest(shape)
    builder.block = innermost
    load = builder.add(memref.LoadOp.get(buffer, ivs))
    bits = builder.add(arith.BitcastOp(load.results[0], i64))
    builder.add(func.CallOp(PRINT_I64, [bits.results[0]], []))
    builder.add(func.CallOp(PRINT_NEWLINE, [], []))
    builder.block = outer
    _yield_nest(innermost, outer)


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
        function = _FunctionEmitter(plan, attributes).emit()
        block = forest.parent_block()
        assert block is not None
        block.insert_op_before(function, forest)
        block.erase_op(forest)
    if main:
        for op in emit_main(plans):
            module.body.block.add_op(op)
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
