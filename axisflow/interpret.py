"""Run a lowered module in xDSL's interpreter, where ``mlir-runner`` is absent.

xDSL's interpreter implements ``func``, ``scf``, ``arith``, ``memref`` and
``linalg`` (``linalg.generic``, ``linalg.fill``) on ``ShapedArray``; this
module adds what the lowered module uses beyond them:

* ``memref.subview`` as a strided view sharing its source's storage (writes
  through a view reach the buffer, as in MLIR);
* ``arith.sitofp`` and ``arith.bitcast`` (``f64`` -> ``i64``), used by the
  generated ``main``;
* ``printI64``/``printNewline``, the C runner library's print functions,
  collected as text.

``run_main`` returns exactly the text ``mlir-runner`` prints for ``@main``.

A module that cannot run (hand-edited, fuzzed) gets a ``RunError`` naming
the op at fault, never a Python exception from inside the interpreter: a
loop step that is not positive, an allocation that would take the live
memory above ``memory_limit`` (checked before it is made, as the NumPy
evaluator does; ``DEFAULT_MEMORY_LIMIT``), a load or store outside its
buffer, an integer division by zero, a shift beyond the width, calls nested
deeper than ``MAX_CALL_DEPTH``, an entry function with arguments or without
a body. Loops nest as deep as the reader's bracket limit allows
(``axisflow.cli.MAX_NESTING``): ``axisflow-run`` runs on the deep stack of
``axisflow-opt``.

Stock ``xdsl-run`` (xDSL 0.75) cannot run a lowered module: it registers a
fixed list of interpreter functions (no plugin hook: a ``Universe`` carries
dialects, passes, targets and frontends only), and that list lacks
``arith.sitofp``, ``memref.subview``, ``arith.bitcast`` and the print
functions, so it stops at the first ``arith.sitofp`` of ``@main``. The
console script ``axisflow-run FILE.mlir`` (``main`` below) is ``xdsl-run``
for lowered modules: it prints what ``mlir-runner`` prints.
"""

from __future__ import annotations

import argparse
import math
import re
import struct
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from xdsl.context import Context
from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    i64,
)
from xdsl.dialects.linalg.ops import FillOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    OpImplResult,
    PythonValues,
    impl,
    impl_external,
    register_impls,
)
from xdsl.interpreters import arith as arith_impls
from xdsl.interpreters import func as func_impls
from xdsl.interpreters import linalg as linalg_impls
from xdsl.interpreters import memref as memref_impls
from xdsl.interpreters import scf as scf_impls
from xdsl.interpreters.builtin import xtype_for_el_type
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import TypedPtr
from xdsl.ir import Block, BlockArgument, Operation, OpResult, SSAValue
from xdsl.irdl.dominance import DominanceInfo
from xdsl.utils.exceptions import InterpretationError
from xdsl.utils.lexer import Input, Span

from axisflow.lowering.plan import row_major_strides
from axisflow.numerals import NumeralError, check_count, natural
from axisflow.scheduling.contraction import DEFAULT_MEMORY_LIMIT
from axisflow.scheduling.memory import format_bytes, format_count
from axisflow.xdsl_compat import StepHookInterpreter

MAX_CALL_DEPTH = 1000
"""Deepest chain of ``func.call`` the interpreter follows (a function that
calls itself without end stops here, with a message, not a RecursionError)."""


class RunError(InterpretationError):
    """A lowered module that cannot run: ``op`` is where (``None`` when no op
    is at fault, as for a missing entry function)."""

    def __init__(self, message: str, op: Operation | None = None) -> None:
        super().__init__(message)
        self.op = op


@dataclass
class StridedView(ShapedArray[Any]):
    """A rectangular window of another array's storage."""

    start: int = 0
    steps: tuple[int, ...] = ()

    def offset(self, index: Sequence[int]) -> int:
        _check_index(index, self.shape)
        return self.start + sum(i * s for i, s in zip(index, self.steps, strict=True))


@dataclass
class CheckedArray(ShapedArray[Any]):
    """An allocated buffer whose every access is checked against its shape
    (xDSL's ``ShapedArray`` reads past its end, or fails in ``struct``)."""

    def offset(self, index: Sequence[int]) -> int:
        _check_index(index, self.shape)
        return super().offset(index)


class OutOfBounds(InterpretationError):
    """An index outside the shape of the buffer it reads or writes."""


def _check_index(index: Sequence[int], shape: Sequence[int]) -> None:
    if len(index) != len(shape) or any(
        not 0 <= i < extent for i, extent in zip(index, shape, strict=False)
    ):
        shown = ", ".join(map(str, index))
        raise OutOfBounds(
            f"index [{shown}] is outside the shape [{', '.join(map(str, shape))}]"
        )


def _layout(array: ShapedArray[Any]) -> tuple[int, tuple[int, ...]]:
    if isinstance(array, StridedView):
        return array.start, array.steps
    return 0, row_major_strides(array.shape)


@register_impls
@dataclass
class LoweredFunctions(InterpreterFunctions):
    """Interpreter implementations for the ops and externals above."""

    printed: list[str] = field(default_factory=list[str])

    @impl(memref.SubviewOp)
    def run_subview(
        self, interpreter: Interpreter, op: memref.SubviewOp, args: PythonValues
    ) -> PythonValues:
        source = cast(ShapedArray[Any], args[0])
        dynamic = [a.value.data for a in args[1:]]
        values = iter(dynamic)

        def resolve(static: Sequence[int]) -> list[int]:
            return [next(values) if s == DYNAMIC_INDEX else s for s in static]

        offsets = resolve(op.static_offsets.get_values())
        sizes = resolve(op.static_sizes.get_values())
        strides = resolve(op.static_strides.get_values())
        start, steps = _layout(source)
        for offset, size, extent in zip(offsets, sizes, source.shape, strict=True):
            if offset < 0 or offset + size > extent:
                raise InterpretationError(
                    f"memref.subview: [{offset}, {offset + size}) outside 0..{extent}"
                )
        base = start + sum(o * s for o, s in zip(offsets, steps, strict=True))
        view_steps = tuple(s * t for s, t in zip(steps, strides, strict=True))
        return (StridedView(source.data_ptr, sizes, base, view_steps),)

    @impl(arith.SIToFPOp)
    def run_sitofp(
        self, interpreter: Interpreter, op: arith.SIToFPOp, args: PythonValues
    ) -> PythonValues:
        value = cast(IntegerAttr, args[0]).value.data
        return (FloatAttr(float(value), op.result.type),)

    @impl(arith.BitcastOp)
    def run_bitcast(
        self, interpreter: Interpreter, op: arith.BitcastOp, args: PythonValues
    ) -> PythonValues:
        if op.result.type != i64:
            raise InterpretationError("arith.bitcast: only f64 -> i64 is implemented")
        value = cast(FloatAttr, args[0]).value.data
        (bits,) = struct.unpack("<q", struct.pack("<d", value))
        return (IntegerAttr(bits, i64),)

    @impl_external("printI64")
    def print_i64(
        self, interpreter: Interpreter, op: Any, args: PythonValues
    ) -> PythonValues:
        self.printed.append(str(cast(IntegerAttr, args[0]).value.data))
        return ()

    @impl_external("printNewline")
    def print_newline(
        self, interpreter: Interpreter, op: Any, args: PythonValues
    ) -> PythonValues:
        self.printed.append("\n")
        return ()


class _Limits:
    """What one run may use: live memory and call depth."""

    def __init__(self, memory_limit: int) -> None:
        self.memory_limit = memory_limit
        self.live: dict[int, int] = {}
        """Bytes of every buffer allocated and not freed, by identity."""
        self.calls = 0


def _signless(interpreter: Interpreter, value: Any, type_: Any) -> tuple[int, int]:
    """An integer operand as a signed value, with its bit width."""
    width = (
        interpreter.index_bitwidth
        if isinstance(type_, IndexType)
        else cast(IntegerType, type_).width.data
    )
    raw = cast(IntegerAttr, value).value.data
    raw &= (1 << width) - 1
    return (raw - (1 << width) if raw >> (width - 1) else raw), width


@register_impls
@dataclass
class CheckedFunctions(InterpreterFunctions):
    """xDSL's implementations of the ops where bad input crashes them, each
    checked first: a positive loop step, allocations within the memory
    limit, buffers checked on every access, divisions by a nonzero number,
    shifts within the width, a bounded call depth, ``linalg.fill`` of any
    buffer or view."""

    limits: _Limits = field(default_factory=lambda: _Limits(DEFAULT_MEMORY_LIMIT))

    @impl(scf.ForOp)
    def run_for(
        self, interpreter: Interpreter, op: scf.ForOp, args: PythonValues
    ) -> PythonValues:
        lower, upper, step, *carried = args
        if step.value.data <= 0:
            raise RunError(
                f"scf.for: the step is {step.value.data}; it must be positive"
            )
        return (
            scf_impls.ScfFunctions()
            .run_for(interpreter, op, (lower, upper, step, *carried))
            .values
        )

    @impl(memref.AllocOp)
    def run_alloc(
        self, interpreter: Interpreter, op: memref.AllocOp, args: PythonValues
    ) -> PythonValues:
        memref_type = cast(MemRefType, op.memref.type)
        shape = list(memref_type.get_shape())
        if any(extent < 0 for extent in shape):
            raise RunError(f"memref.alloc: {memref_type} has dynamic sizes")
        xtype = xtype_for_el_type(
            memref_type.get_element_type(), interpreter.index_bitwidth
        )
        elements = math.prod(shape)
        needed = elements * xtype.compile_time_size
        live = sum(self.limits.live.values())
        if live + needed > self.limits.memory_limit:
            already = f", with {format_bytes(live)} live" if live else ""
            raise RunError(
                f"memref.alloc: {memref_type} needs {format_bytes(needed)} "
                f"({format_count(elements)} elements of "
                f"{xtype.compile_time_size} B){already}: above the memory limit "
                f"of {format_bytes(self.limits.memory_limit)} "
                "(axisflow-run --memory-limit BYTES)"
            )
        array = CheckedArray(TypedPtr[Any].zeros(elements, xtype=xtype), shape)
        self.limits.live[id(array.data_ptr.raw.memory)] = needed
        return (array,)

    @impl(memref.DeallocOp)
    def run_dealloc(
        self, interpreter: Interpreter, op: memref.DeallocOp, args: PythonValues
    ) -> PythonValues:
        array = cast(ShapedArray[Any], args[0])
        self.limits.live.pop(id(array.data_ptr.raw.memory), None)
        return ()

    @impl(FillOp)
    def run_fill(
        self, interpreter: Interpreter, op: FillOp, args: PythonValues
    ) -> PythonValues:
        # xDSL's fills the first elements of the storage (wrong for a view)
        # and refuses a buffer that is not all zeros.
        value, target = args[0], args[1]
        if not isinstance(target, ShapedArray):
            raise RunError("linalg.fill: only a memref can be filled here")
        array = cast(ShapedArray[Any], target)
        data = cast(FloatAttr | IntegerAttr, value).value.data
        for index in array.indices():
            array.store(index, data)
        return ()

    @impl(arith.DivSIOp)
    def run_divsi(
        self, interpreter: Interpreter, op: arith.DivSIOp, args: PythonValues
    ) -> PythonValues:
        _nonzero_divisor(interpreter, op, args)
        return arith_impls.ArithFunctions().run_divsi(interpreter, op, args).values

    @impl(arith.RemSIOp)
    def run_remsi(
        self, interpreter: Interpreter, op: arith.RemSIOp, args: PythonValues
    ) -> PythonValues:
        _nonzero_divisor(interpreter, op, args)
        return arith_impls.ArithFunctions().run_remsi(interpreter, op, args).values

    @impl(arith.FloorDivSIOp)
    def run_floordivsi(
        self, interpreter: Interpreter, op: arith.FloorDivSIOp, args: PythonValues
    ) -> PythonValues:
        _nonzero_divisor(interpreter, op, args)
        return arith_impls.ArithFunctions().run_floordivsi(interpreter, op, args).values

    @impl(arith.ShLIOp)
    def run_shli(
        self, interpreter: Interpreter, op: arith.ShLIOp, args: PythonValues
    ) -> PythonValues:
        _shift_within_width(interpreter, op, args)
        return arith_impls.ArithFunctions().run_shlsi(interpreter, op, args).values

    @impl(arith.ShRSIOp)
    def run_shrsi(
        self, interpreter: Interpreter, op: arith.ShRSIOp, args: PythonValues
    ) -> PythonValues:
        _shift_within_width(interpreter, op, args)
        return arith_impls.ArithFunctions().run_shrsi(interpreter, op, args).values

    @impl(func.CallOp)
    def run_call(
        self, interpreter: Interpreter, op: func.CallOp, args: PythonValues
    ) -> PythonValues:
        if self.limits.calls >= MAX_CALL_DEPTH:
            raise RunError(
                f"func.call: calls nested deeper than {MAX_CALL_DEPTH} (a function "
                "that calls itself without end?)"
            )
        self.limits.calls += 1
        try:
            return interpreter.call_op(op.callee, args)
        finally:
            self.limits.calls -= 1


def _nonzero_divisor(
    interpreter: Interpreter, op: Operation, args: PythonValues
) -> None:
    divisor, _ = _signless(interpreter, args[1], op.operands[1].type)
    if divisor == 0:
        raise RunError(f"{op.name}: division by zero")


def _shift_within_width(
    interpreter: Interpreter, op: Operation, args: PythonValues
) -> None:
    amount, width = _signless(interpreter, args[1], op.operands[1].type)
    if not 0 <= amount < width:
        raise RunError(f"{op.name}: shift by {amount}, outside 0..{width - 1}")


class _CheckedInterpreter(StepHookInterpreter):
    """xDSL's interpreter, remembering the innermost op an error came from."""

    def run_step(self, op: Operation, inputs: PythonValues) -> OpImplResult:
        try:
            return super().run_step(op, inputs)
        except RecursionError:
            raise
        except RunError as error:
            if error.op is None:
                error.op = op
            raise
        except OutOfBounds as error:  # a buffer's check: name the accessing op
            raise RunError(f"{op.name}: {error}", op) from None
        except Exception as error:  # xDSL's own failure: say where
            raise RunError(_describe_failure(op, error), op) from None


def _describe_failure(op: Operation, error: Exception) -> str:
    """The message of an error xDSL's interpreter raised at ``op``."""
    if isinstance(error, InterpretationError):
        return str(error)
    detail = str(error) or "no message"
    return f"{op.name}: xDSL's interpreter failed ({type(error).__name__}: {detail})"


def _entry_function(module: ModuleOp, symbol: str) -> func.FuncOp:
    """The function ``axisflow-run`` calls: it exists, has a body and takes
    no arguments. Raises ``RunError``."""
    functions = [op for op in module.walk() if isinstance(op, func.FuncOp)]
    for function in functions:
        if function.sym_name.data != symbol:
            continue
        inputs = function.function_type.inputs.data
        if inputs:
            plural = "argument" if len(inputs) == 1 else "arguments"
            types = ", ".join(str(t) for t in inputs)
            raise RunError(
                f"function @{symbol} takes {len(inputs)} {plural} ({types}); "
                "axisflow-run calls a function without arguments",
                function,
            )
        if function.is_declaration:
            raise RunError(
                f"function @{symbol} is a declaration without a body; nothing to run",
                function,
            )
        return function
    names = ", ".join(f"@{f.sym_name.data}" for f in functions) or "none"
    raise RunError(f"no function @{symbol} (functions: {names})")


def run_main(
    module: ModuleOp, symbol: str = "main", memory_limit: int = DEFAULT_MEMORY_LIMIT
) -> str:
    """Interpret ``@main`` (or the argument-less function ``symbol``) of a
    lowered module; the text it prints. Raises ``RunError`` naming the op at
    fault for a module that cannot run (module docstring); the buffers it
    allocates may hold ``memory_limit`` bytes at once."""
    from axisflow.cli import diagnostics_without_dump

    check_count("memory_limit", memory_limit)
    entry = _entry_function(module, symbol)
    check_dominance(module)
    interpreter = _CheckedInterpreter(module)
    extra = LoweredFunctions()
    for functions in (
        func_impls.FuncFunctions(),
        scf_impls.ScfFunctions(),
        arith_impls.ArithFunctions(),
        memref_impls.MemRefFunctions(),
        linalg_impls.LinalgFunctions(),
    ):
        interpreter.register_implementations(functions)
    interpreter.register_implementations(extra, override=True)
    interpreter.register_implementations(
        CheckedFunctions(_Limits(memory_limit)), override=True
    )
    with diagnostics_without_dump(True):
        interpreter.call_op(entry, ())
    return "".join(extra.printed)


def check_dominance(module: ModuleOp) -> None:
    """Every operand is defined where its use can see it, as MLIR requires
    (xDSL's verifier does not check it, and its interpreter then fails on
    the missing value). Raises ``RunError`` at the first op whose operand
    does not dominate it, in MLIR's wording."""
    index: dict[Operation, int] = {}
    for block in _blocks(module):
        for position, op in enumerate(block.ops):
            index[op] = position
    dominance: dict[int, DominanceInfo] = {}
    for user in module.walk():
        for number, operand in enumerate(user.operands):
            if not _dominates(operand, user, index, dominance):
                raise RunError(
                    f"{user.name}: operand #{number} ({_value_name(operand)}) does "
                    "not dominate this use (it is used before or outside the "
                    "region where it is defined)",
                    user,
                )


def _blocks(module: ModuleOp) -> list[Block]:
    blocks = list(module.body.blocks)
    for op in module.walk():
        for region in op.regions:
            blocks.extend(region.blocks)
    return blocks


def _dominates(
    value: SSAValue,
    user: Operation,
    index: dict[Operation, int],
    dominance: dict[int, DominanceInfo],
) -> bool:
    """Whether ``value`` is visible at ``user``: defined earlier in a block
    enclosing it (an op's results are not visible in its own regions), or in
    a block of the same region that dominates the enclosing one."""
    if isinstance(value, BlockArgument):
        home, defining = value.block, None
    else:
        assert isinstance(value, OpResult)
        defining = value.op
        home = defining.parent_block()
        if home is None:
            return False
    op: Operation | None = user
    while op is not None:
        block = op.parent_block()
        if block is None:
            return False
        if block is home:
            return defining is None or (
                defining is not op and index[defining] < index[op]
            )
        region = block.parent
        if region is not None and region is home.parent:
            info = dominance.get(id(region))
            if info is None:
                info = dominance[id(region)] = DominanceInfo(region)
            return info.strictly_dominates(home, block)
        op = block.parent_op()
    return False


def _value_name(value: SSAValue) -> str:
    return f"%{value.name_hint}" if value.name_hint else "an unnamed value"


def parse_lowered(text: str, name: str = "<input>") -> ModuleOp:
    """Parse a lowered module (standard dialects only); ``name`` is the file
    its errors name."""
    from xdsl.parser import Parser

    return Parser(_lowered_context(), text, name).parse_module()


def _memory_limit(text: str) -> int:
    """``--memory-limit``: a positive number of bytes (ASCII digits)."""
    try:
        value = natural(text, "--memory-limit")
    except NumeralError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    if value < 1:
        raise argparse.ArgumentTypeError(
            f"--memory-limit must be positive, got {value}"
        )
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """``axisflow-run FILE.mlir [--symbol main] [--memory-limit BYTES]``:
    interpret a lowered module's entry function and print what it prints
    (``-``: standard input). Errors are one message on standard error
    (located at the op or text at fault), exit status 1."""
    from axisflow.cli import in_deep_thread

    parser = argparse.ArgumentParser(
        prog="axisflow-run",
        description="Run a module lowered by lower-schedule in xDSL's "
        "interpreter; prints what mlir-runner prints.",
    )
    parser.add_argument("file", help="the lowered module (- for standard input)")
    parser.add_argument(
        "--symbol", default="main", help="the function to call (no arguments)"
    )
    parser.add_argument(
        "--memory-limit",
        type=_memory_limit,
        default=DEFAULT_MEMORY_LIMIT,
        metavar="BYTES",
        help="most bytes the module's buffers may hold at once (default 2 GiB)",
    )
    args = parser.parse_args(argv)
    return in_deep_thread(lambda: _run(args.file, args.symbol, args.memory_limit))


def _run(file: str, symbol: str, memory_limit: int) -> int:
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from axisflow.cli import LocatingParser, check_mlir_text

    source: Input | None = None
    starts: dict[Operation, int] = {}
    name = "stdin" if file == "-" else file  # as axisflow-opt names it
    try:
        if file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(file, "rb") as handle:
                data = handle.read()
        text = check_mlir_text(data, name)
        source = Input(text, name)
        module = LocatingParser(_lowered_context(), text, name, starts).parse_module()
        module.verify()
        printed = run_main(module, symbol, memory_limit)
    except OSError as error:
        return _fail(f"{file}: {error.strerror or error}")
    except RunError as error:
        return _fail(_located(str(error), error.op, source, starts, name))
    except (ParseError, DiagnosticException) as error:
        return _fail(str(error))
    except RecursionError:
        return _fail(f"{name}: nesting too deep for xDSL's recursive interpreter")
    sys.stdout.write(printed)
    return 0


def _lowered_context() -> Context:
    from xdsl.dialects import get_all_dialects

    context = Context()
    for dialect, factory in get_all_dialects().items():
        context.register_dialect(dialect, factory)
    return context


def _located(
    message: str,
    op: Operation | None,
    source: Input | None,
    starts: dict[Operation, int],
    file: str,
) -> str:
    """``message`` at ``op``'s position in ``source`` (its first word under
    carets), or after the file name when no op of the input is known."""
    while op is not None and op not in starts:
        op = op.parent_op()
    if op is None or source is None:
        return f"{file}: {message}"
    start = starts[op]
    word = re.compile(r"[^\s(]+").match(source.content, start)
    end = word.end() if word is not None else start + 1
    return Span(start, end, source).print_with_context(message)


def _fail(message: str) -> int:
    print(f"axisflow-run: {message.rstrip()}", file=sys.stderr)
    return 1
