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
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from xdsl.context import Context
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    FloatAttr,
    IntegerAttr,
    ModuleOp,
    i64,
)
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
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
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.utils.exceptions import InterpretationError

from axisflow.lowering.plan import row_major_strides


@dataclass
class StridedView(ShapedArray[Any]):
    """A rectangular window of another array's storage."""

    start: int = 0
    steps: tuple[int, ...] = ()

    def offset(self, index: Sequence[int]) -> int:
        if len(index) != len(self.shape):
            raise ValueError(f"Invalid indices {index} for shape {self.shape}")
        return self.start + sum(i * s for i, s in zip(index, self.steps, strict=True))


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


def run_main(module: ModuleOp) -> str:
    """Interpret ``@main`` of a lowered module; the text it prints."""
    interpreter = Interpreter(module)
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
    interpreter.call_op("main", ())
    return "".join(extra.printed)


def parse_lowered(text: str) -> ModuleOp:
    """Parse a lowered module (standard dialects only)."""
    from xdsl.dialects import get_all_dialects
    from xdsl.parser import Parser

    context = Context()
    for name, factory in get_all_dialects().items():
        context.register_dialect(name, factory)
    return Parser(context, text).parse_module()
