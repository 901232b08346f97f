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
import struct
import sys
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


def run_main(module: ModuleOp, symbol: str = "main") -> str:
    """Interpret ``@main`` (or the argument-less function ``symbol``) of a
    lowered module; the text it prints."""
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
    interpreter.call_op(symbol, ())
    return "".join(extra.printed)


def parse_lowered(text: str) -> ModuleOp:
    """Parse a lowered module (standard dialects only)."""
    from xdsl.dialects import get_all_dialects
    from xdsl.parser import Parser

    context = Context()
    for name, factory in get_all_dialects().items():
        context.register_dialect(name, factory)
    return Parser(context, text).parse_module()


def main(argv: Sequence[str] | None = None) -> int:
    """``axisflow-run FILE.mlir [--symbol main]``: interpret a lowered
    module's entry function and print what it prints (``-``: standard
    input). Errors are one message on standard error, exit status 1."""
    from xdsl.utils.exceptions import DiagnosticException, ParseError

    from axisflow.cli import check_mlir_text

    parser = argparse.ArgumentParser(
        prog="axisflow-run",
        description="Run a module lowered by lower-schedule in xDSL's "
        "interpreter; prints what mlir-runner prints.",
    )
    parser.add_argument("file", help="the lowered module (- for standard input)")
    parser.add_argument(
        "--symbol", default="main", help="the function to call (no arguments)"
    )
    args = parser.parse_args(argv)
    try:
        if args.file == "-":
            data = sys.stdin.buffer.read()
        else:
            with open(args.file, "rb") as handle:
                data = handle.read()
        module = parse_lowered(check_mlir_text(data, args.file))
        module.verify()
        printed = run_main(module, args.symbol)
    except OSError as error:
        print(f"axisflow-run: {error}", file=sys.stderr)
        return 1
    except (ParseError, DiagnosticException, InterpretationError) as error:
        print(f"axisflow-run: {args.file}: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(printed)
    return 0
