"""The ``tprog`` dialect: programs of tensor functions, for shape inference.

A module holds a *program*: tensor-producing operations at the top level, in
order, and ``tprog.func`` functions that calls apply. Values are tensors of
type ``!tprog.tensor`` (shape unknown) or ``!tprog.tensor<"8|3->4">`` (a
concrete shape in spec syntax, written by the ``close-shapes`` pass). A
tensor's name, used in shape errors, is its SSA name (``%h`` is ``h``).

.. code-block:: mlir

    %x = tprog.leaf "8|->3" : !tprog.tensor
    %w = tprog.param "...->16" : !tprog.tensor
    tprog.func @layer(%in: !tprog.tensor) -> !tprog.tensor {
      %h = tprog.compose %w, %in : !tprog.tensor
      tprog.return %h
    }
    %y = tprog.call @layer(%x) at "first" : !tprog.tensor

Operations: ``tprog.leaf`` (data) and ``tprog.param`` (a parameter), each with
an optional shape spec; ``tprog.pointwise``, ``tprog.compose``,
``tprog.transpose`` and ``tprog.einsum``; ``tprog.func``, ``tprog.return`` and
``tprog.call`` (which names its application site). A function body may use
tensors defined earlier at module level, e.g. shared parameters: that is how a
tensor function closes over the parameters it was made with.

Verifiers reject malformed specs (naming the spec and position), an einsum
whose spec names a different number of operands than it has, and calls and
returns whose arity does not match the function. Call verification looks the
callee up in a per-module table built once and revalidated on use, not by a
scan of the module per call.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar, cast

from xdsl.dialects.builtin import (
    ArrayAttr,
    FlatSymbolRefAttrConstr,
    FunctionType,
    IntAttr,
    IntegerAttr,
    NoneAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    UnitAttr,
)
from xdsl.dialects.utils import parse_func_op_like, print_func_op_like
from xdsl.ir import (
    Attribute,
    Block,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
    SSAValue,
    TypeAttribute,
)
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    operand_def,
    opt_prop_def,
    prop_def,
    region_def,
    result_def,
    traits_def,
    var_operand_def,
    var_result_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    CustomDirective,
    ParsingState,
    PrintingState,
    irdl_custom_directive,
)
from xdsl.parser import AttrParser, Parser
from xdsl.printer import Printer
from xdsl.traits import (
    HasParent,
    IsTerminator,
    SymbolOpInterface,
    SymbolTable,
    SymbolUserOpInterface,
)
from xdsl.utils.exceptions import VerifyException

from axisflow.dialects.formats import (
    AttributeAnchor,
    Count,
    DefaultTypes,
    DefinedTypes,
    PositiveCount,
    ResultTypes,
    UnknownKeyword,
)
from axisflow.dialects.integers import count_attr, count_value
from axisflow.numerals import NumeralError, natural
from axisflow.shapes.errors import ShapeError, SpecError
from axisflow.shapes.spec import (
    BASIS_LABEL_RE,
    parse_einsum_spec,
    parse_shape_spec,
)
from axisflow.shapes.terms import DEFAULT_BASIS, Row, Size, format_concrete_shape
from axisflow.xdsl_compat import print_new_line

Rows = tuple[Row, Row, Row]
"""A concrete shape: its batch, input and output rows, every dim a ``Size``."""


def concrete_rows(text: str) -> Rows:
    """The rows of a concrete shape spec; raises ``SpecError``/``ValueError``."""
    spec = parse_shape_spec(text)
    if spec.batch.is_open or spec.input.is_open or spec.output.is_open:
        raise ValueError(f"a tensor type needs a concrete shape, {text!r} has '...'")
    return (Row(spec.batch.sizes), Row(spec.input.sizes), Row(spec.output.sizes))


def _shape_parameters(rows: Rows) -> tuple[Attribute, ...]:
    """The parameters of ``TensorType`` for a concrete shape (canonical)."""
    sizes = [dim for row in rows for dim in row.dims]
    if row_var := next((row.var for row in rows if row.var is not None), None):
        raise ValueError(f"a tensor type needs a concrete shape, got row {row_var}")
    if not all(isinstance(dim, Size) for dim in sizes):
        raise ValueError("a tensor type needs a concrete shape, got a dim variable")
    bases = [dim.basis for dim in sizes if isinstance(dim, Size)]
    if all(basis == DEFAULT_BASIS for basis in bases):
        bases = []
    return (
        *(
            ArrayAttr([IntAttr(dim.n) for dim in row.dims if isinstance(dim, Size)])
            for row in rows
        ),
        ArrayAttr([StringAttr(basis) for basis in bases]),
    )


@irdl_attr_definition
class TensorType(ParametrizedAttribute, TypeAttribute):
    """``!tprog.tensor`` (shape unknown) or ``!tprog.tensor<"8|3->4">``.

    A known shape is held as its three rows of sizes, as xDSL's
    ``TensorType`` holds its shape, and the basis label of each dim (in
    batch, input, output order; empty when every basis is the default). Spec
    text is only the printed form. An unknown shape has ``NoneAttr`` rows.
    """

    name = "tprog.tensor"

    batch: ArrayAttr[IntAttr] | NoneAttr
    input: ArrayAttr[IntAttr] | NoneAttr
    output: ArrayAttr[IntAttr] | NoneAttr
    bases: ArrayAttr[StringAttr]

    def __init__(self, shape: str | Rows | None = None) -> None:
        """``shape``: spec text (``"8|3->4"``) or concrete rows; ``None``: unknown."""
        if shape is None:
            super().__init__(NoneAttr(), NoneAttr(), NoneAttr(), ArrayAttr(()))
            return
        rows = concrete_rows(shape) if isinstance(shape, str) else shape
        super().__init__(*_shape_parameters(rows))

    def _known_rows(self) -> tuple[ArrayAttr[IntAttr], ...] | None:
        rows = (self.batch, self.input, self.output)
        known = tuple(row for row in rows if isinstance(row, ArrayAttr))
        return known if len(known) == 3 else None

    @property
    def is_known(self) -> bool:
        """Whether the type carries a concrete shape."""
        return self._known_rows() is not None

    def dims(self) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]] | None:
        """``(batch, input, output)`` sizes, if known."""
        known = self._known_rows()
        if known is None:
            return None
        batch, input_, output = (tuple(size.data for size in row.data) for row in known)
        return (batch, input_, output)

    def rows(self) -> Rows | None:
        """The concrete shape as rows of sizes with their bases, if known."""
        known = self._known_rows()
        if known is None:
            return None
        bases = iter([basis.data for basis in self.bases.data])
        batch, input_, output = (
            Row(tuple(Size(size.data, next(bases, DEFAULT_BASIS)) for size in row.data))
            for row in known
        )
        return (batch, input_, output)

    @property
    def shape_text(self) -> str | None:
        """The concrete shape in spec syntax, if known."""
        rows = self.rows()
        return None if rows is None else format_concrete_shape(rows)

    def verify(self) -> None:
        rows = (self.batch, self.input, self.output)
        if all(isinstance(row, NoneAttr) for row in rows) and not self.bases.data:
            return
        known = self._known_rows()
        if known is None:
            raise VerifyException(
                "!tprog.tensor: the batch, input and output rows must be all known "
                "or all unknown"
            )
        count = sum(len(row.data) for row in known)
        if self.bases.data and len(self.bases.data) != count:
            raise VerifyException(
                f"!tprog.tensor: {len(self.bases.data)} basis labels for {count} dims"
            )
        sizes = [size.data for row in known for size in row.data]
        if any(size < 1 for size in sizes):
            raise VerifyException(
                f"!tprog.tensor: sizes must be positive integers, got {sizes}"
            )
        bases = [basis.data for basis in self.bases.data]
        if bases and all(basis == DEFAULT_BASIS for basis in bases):
            raise VerifyException(
                "!tprog.tensor: basis labels are listed only when one is not the default"
            )
        for size, basis in zip(sizes, bases, strict=False):
            if not BASIS_LABEL_RE.match(basis):
                raise VerifyException(f"!tprog.tensor: malformed basis label {basis!r}")
            if size == 1 and basis != DEFAULT_BASIS:
                raise VerifyException(
                    f"!tprog.tensor: a size 1 has the default basis, not {basis!r}"
                )

    def print_parameters(self, printer: Printer) -> None:
        text = self.shape_text
        if text is not None:
            with printer.in_angle_brackets():
                printer.print_string_literal(text)

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        if parser.parse_optional_characters("<") is None:
            return (NoneAttr(), NoneAttr(), NoneAttr(), ArrayAttr(()))
        start = parser.pos
        text = parser.parse_str_literal('a shape in spec syntax, e.g. "8|3->4"')
        end = parser.pos
        parser.parse_characters(">", " to end the !tprog.tensor shape")
        try:
            return _shape_parameters(concrete_rows(text))
        except (SpecError, ValueError) as error:
            parser.raise_error(f"!tprog.tensor: {error}", start, end)


UNKNOWN = TensorType()
"""``!tprog.tensor``: a tensor whose shape is not known yet."""


class _UnknownByDefault(DefaultTypes):
    """An omitted tensor type is ``!tprog.tensor`` (shape unknown)."""

    @classmethod
    def default_type(cls) -> Attribute:
        return UNKNOWN


# ---------------------------------------------------------------- helpers


def _check_spec(op: Operation, spec: str, parse: Callable[[str], object]) -> None:
    try:
        parse(spec)
    except SpecError as error:
        raise VerifyException(f"{op.name}: {error}") from error


# --------------------------------------------------------------------- leaves


class _TerminalOp(_UnknownByDefault, IRDLOperation):
    """Common syntax of leaves and parameters: ``"spec"? attr-dict (: type)?``."""

    spec = opt_prop_def(StringAttr)
    result = result_def(TensorType)

    custom_directives = (ResultTypes,)
    assembly_format = "$spec attr-dict custom<ResultTypes>(type($result))"

    def __init__(self, spec: str | None = None, result_type: Attribute = UNKNOWN):
        super().__init__(
            properties={"spec": None if spec is None else StringAttr(spec)},
            result_types=[result_type],
        )

    @property
    def spec_text(self) -> str | None:
        """The shape spec, if given."""
        return self.spec.data if self.spec is not None else None

    def verify_(self) -> None:
        if self.spec is not None:
            _check_spec(self, self.spec.data, parse_shape_spec)


@irdl_op_definition
class LeafOp(_TerminalOp):
    """A data tensor (OCANNL's non-parameter leaf): ``%x = tprog.leaf "8|->3"``.

    Without a spec all three rows are open and inferred from uses.
    """

    name = "tprog.leaf"


@irdl_op_definition
class ParamOp(_TerminalOp):
    """A parameter: ``%w = tprog.param "...->16"``; unspecified dims are inferred.

    A dim that nothing determines is the hidden-dimension error.
    """

    name = "tprog.param"


# ----------------------------------------------------------------- operations


@irdl_op_definition
class PointwiseOp(_UnknownByDefault, IRDLOperation):
    """Elementwise: ``%y = tprog.pointwise %a, %b``; each row broadcasts."""

    name = "tprog.pointwise"

    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)

    custom_directives = (DefinedTypes, ResultTypes)
    assembly_format = (
        "$inputs custom<DefinedTypes>(type(operands)) attr-dict "
        "custom<ResultTypes>(type($result))"
    )

    def __init__(
        self, inputs: Sequence[SSAValue | Operation], result_type: Attribute = UNKNOWN
    ):
        super().__init__(operands=[inputs], result_types=[result_type])

    def verify_(self) -> None:
        if not self.inputs:
            raise VerifyException(f"{self.name} needs at least one operand")


@irdl_op_definition
class ComposeOp(_UnknownByDefault, IRDLOperation):
    """Matrix-style ``%y = tprog.compose %w, %x``: w's input axes contract x's output."""

    name = "tprog.compose"

    lhs = operand_def(TensorType)
    rhs = operand_def(TensorType)
    result = result_def(TensorType)

    custom_directives = (DefinedTypes, ResultTypes)
    assembly_format = (
        "$lhs `,` $rhs custom<DefinedTypes>(type(operands)) attr-dict "
        "custom<ResultTypes>(type($result))"
    )

    def __init__(
        self,
        lhs: SSAValue | Operation,
        rhs: SSAValue | Operation,
        result_type: Attribute = UNKNOWN,
    ):
        super().__init__(operands=[lhs, rhs], result_types=[result_type])


@irdl_op_definition
class TransposeOp(_UnknownByDefault, IRDLOperation):
    """``%t = tprog.transpose %a``: swaps the input and output rows."""

    name = "tprog.transpose"

    input = operand_def(TensorType)
    result = result_def(TensorType)

    custom_directives = (DefinedTypes, ResultTypes)
    assembly_format = (
        "$input custom<DefinedTypes>(type(operands)) attr-dict "
        "custom<ResultTypes>(type($result))"
    )

    def __init__(self, input_: SSAValue | Operation, result_type: Attribute = UNKNOWN):
        super().__init__(operands=[input_], result_types=[result_type])


@irdl_custom_directive
class EinsumKeywords(UnknownKeyword):
    """A misspelt ``capture`` of ``tprog.einsum``."""

    EXPECTED = ("capture",)
    THEN = ("an attribute dictionary", "':' and the result type")


@irdl_op_definition
class EinsumOp(_UnknownByDefault, IRDLOperation):
    """``%z = tprog.einsum "ij;jk=>ik" (%a, %b)``: rows equal the spec's rows.

    ``capture ["h"]`` binds the module's capture reference for label ``h``
    (see ``tprog.set_dim``).
    """

    name = "tprog.einsum"

    spec = prop_def(StringAttr)
    capture = opt_prop_def(ArrayAttr[StringAttr])
    inputs = var_operand_def(TensorType)
    result = result_def(TensorType)

    custom_directives = (DefinedTypes, EinsumKeywords, ResultTypes)
    assembly_format = (
        "$spec ` ` `(` $inputs `)` custom<DefinedTypes>(type(operands)) "
        "(`capture` $capture^) : (custom<EinsumKeywords>())? attr-dict "
        "custom<ResultTypes>(type($result))"
    )

    def __init__(
        self,
        spec: str,
        inputs: Sequence[SSAValue | Operation],
        result_type: Attribute = UNKNOWN,
        capture: Sequence[str] = (),
    ):
        super().__init__(
            operands=[inputs],
            result_types=[result_type],
            properties={
                "spec": StringAttr(spec),
                "capture": ArrayAttr([StringAttr(c) for c in capture])
                if capture
                else None,
            },
        )

    @property
    def capture_labels(self) -> tuple[str, ...]:
        """The labels whose capture references the operation binds."""
        return tuple(label.data for label in self.capture.data) if self.capture else ()

    def verify_(self) -> None:
        _check_spec(self, self.spec.data, parse_einsum_spec)
        parsed = parse_einsum_spec(self.spec.data)
        if len(parsed.operands) != len(self.inputs):
            raise VerifyException(
                f"{self.name}: spec {self.spec.data!r} has {len(parsed.operands)} "
                f"operand(s) but the operation has {len(self.inputs)}"
            )
        # A label binds its size; a ``..name..`` row variable its element
        # count (OCANNL's row capture).
        capturable = parsed.labels() | parsed.row_var_names()
        for label in self.capture_labels:
            if label not in capturable:
                raise VerifyException(
                    f"{self.name}: capture label {label!r} is neither a label nor a "
                    f"row variable of spec {self.spec.data!r}"
                )


@irdl_op_definition
class SetDimOp(IRDLOperation):
    """``tprog.set_dim "h" = 64``: fix the size of the capture reference ``h``."""

    name = "tprog.set_dim"

    label = prop_def(StringAttr)
    size = prop_def(IntegerAttr)

    custom_directives = (PositiveCount,)
    assembly_format = "$label `=` custom<PositiveCount>($size) attr-dict"

    def __init__(self, label: str, size: int):
        super().__init__(
            properties={"label": StringAttr(label), "size": count_attr(size)}
        )

    def verify_(self) -> None:
        if count_value(self.size) < 1:
            raise VerifyException(f"{self.name}: the size must be a positive integer")


@irdl_custom_directive
class TotalElemsKeywords(UnknownKeyword):
    """A misspelt ``bytes`` of ``tprog.total_elems``."""

    EXPECTED = ("bytes",)


@irdl_op_definition
class TotalElemsOp(_UnknownByDefault, IRDLOperation):
    """``tprog.total_elems %x = 12``: the tensor holds that many elements.

    ``tprog.total_elems %x = 48 bytes`` gives a byte count instead: the
    element count is the bytes over the tensor's precision, which is only known
    when shapes are closed (a precision-dependent count; a shape scheme cannot
    carry one).
    """

    name = "tprog.total_elems"

    input = operand_def(TensorType)
    count = prop_def(IntegerAttr)
    bytes = opt_prop_def(UnitAttr)

    custom_directives = (DefinedTypes, PositiveCount, TotalElemsKeywords)
    assembly_format = (
        "$input custom<DefinedTypes>(type(operands)) `=` custom<PositiveCount>($count) "
        "(`bytes` $bytes^) : (custom<TotalElemsKeywords>())? attr-dict"
    )

    def __init__(
        self, input_: SSAValue | Operation, count: int, *, in_bytes: bool = False
    ):
        super().__init__(
            operands=[input_],
            properties={
                "count": count_attr(count),
                "bytes": UnitAttr() if in_bytes else None,
            },
        )

    @property
    def counts_bytes(self) -> bool:
        """Whether the count is in bytes (precision-dependent)."""
        return self.bytes is not None

    def verify_(self) -> None:
        if count_value(self.count) < 1:
            raise VerifyException(f"{self.name}: the count must be a positive integer")


@irdl_op_definition
class CloseOp(IRDLOperation):
    """``tprog.close``: close the shapes inferred so far (OCANNL's ``finish_inference``).

    Everything made before it gets concrete shapes there; later operations use
    them as concrete operands. A traced function may not close (it forces
    dims), so a shape scheme refuses a function body that does.
    """

    name = "tprog.close"

    assembly_format = "attr-dict"

    def __init__(self) -> None:
        super().__init__()


# ------------------------------------------------------------------ functions


@irdl_op_definition
class FuncOp(IRDLOperation):
    """A tensor function: ``tprog.func @f(%x: !tprog.tensor) -> !tprog.tensor {...}``.

    Not isolated from above: the body may use tensors defined earlier at module
    level (shared parameters).
    """

    name = "tprog.func"

    body = region_def("single_block")
    sym_name = prop_def(SymbolNameConstraint())
    function_type = prop_def(FunctionType)

    traits = traits_def(SymbolOpInterface())

    def __init__(
        self, name: str, arity: int, num_results: int, region: Region | None = None
    ):
        function_type = FunctionType.from_lists(
            [UNKNOWN] * arity, [UNKNOWN] * num_results
        )
        if region is None:
            region = Region(Block(arg_types=[UNKNOWN] * arity))
        super().__init__(
            properties={"sym_name": StringAttr(name), "function_type": function_type},
            regions=[region],
        )

    @property
    def arity(self) -> int:
        """The number of tensor arguments."""
        return len(self.function_type.inputs)

    @property
    def num_results(self) -> int:
        """The number of tensor results."""
        return len(self.function_type.outputs)

    def verify_(self) -> None:
        block = self.body.block
        if len(block.args) != self.arity:
            raise VerifyException(
                f"{self.name} @{self.sym_name.data}: the body takes {len(block.args)} "
                f"argument(s) but the signature has {self.arity}"
            )
        for attr in (*self.function_type.inputs, *self.function_type.outputs):
            if not isinstance(attr, TensorType):
                raise VerifyException(
                    f"{self.name} @{self.sym_name.data}: arguments and results must be "
                    f"!tprog.tensor, got {attr}"
                )
        if not isinstance(block.last_op, ReturnOp):
            raise VerifyException(
                f"{self.name} @{self.sym_name.data}: the body must end with tprog.return"
            )

    @classmethod
    def parse(cls, parser: Parser) -> FuncOp:
        name, inputs, outputs, region, extra, _arg_attrs, _res_attrs = (
            parse_func_op_like(
                parser, reserved_attr_names=("sym_name", "function_type")
            )
        )
        if region is None:
            parser.raise_error("tprog.func needs a body")
        op = cls(name, len(inputs), len(outputs), region)
        op.properties["function_type"] = FunctionType.from_lists(inputs, outputs)
        if extra is not None:
            op.attributes |= extra.data
        return op

    def print(self, printer: Printer) -> None:
        print_func_op_like(
            printer,
            self.sym_name,
            self.function_type,
            self.body,
            self.attributes,
            reserved_attr_names=("sym_name", "function_type"),
        )


@irdl_op_definition
class ReturnOp(_UnknownByDefault, IRDLOperation):
    """``tprog.return %y, %z``: the results of the enclosing ``tprog.func``."""

    name = "tprog.return"

    values = var_operand_def(TensorType)

    traits = traits_def(IsTerminator(), HasParent(FuncOp))

    custom_directives = (DefinedTypes,)
    assembly_format = "$values custom<DefinedTypes>(type(operands)) attr-dict"

    def __init__(self, values: Sequence[SSAValue | Operation] = ()):
        super().__init__(operands=[values])

    def verify_(self) -> None:
        func = self.parent_op()
        if isinstance(func, FuncOp) and len(self.values) != func.num_results:
            raise VerifyException(
                f"{self.name}: @{func.sym_name.data} has {func.num_results} result(s) "
                f"but {len(self.values)} value(s) are returned"
            )


class FunctionTables:
    """Per-module tables of ``tprog.func`` and ``tprog.scheme`` by name.

    Used to verify calls and instantiations.

    A module's table is built once and reused; an entry is trusted only if the
    function still sits in that module under that name, and a miss rebuilds
    the table, so passes that add, move or rename functions are seen.
    ``builds`` counts the tables built (tests check it stays at one per module).
    """

    def __init__(self) -> None:
        self._tables: weakref.WeakKeyDictionary[
            Operation, dict[str, FuncOp | SchemeOp]
        ] = weakref.WeakKeyDictionary()
        self.builds = 0

    def lookup(self, op: Operation, name: str) -> FuncOp | SchemeOp | None:
        """The ``tprog.func`` or ``tprog.scheme`` named ``name`` around ``op``."""
        table_op = op.parent_op()
        while table_op is not None and not table_op.has_trait(SymbolTable):
            table_op = table_op.parent_op()
        if table_op is None:
            return None
        table = self._tables.get(table_op)
        if table is not None:
            func = table.get(name)
            if (
                func is not None
                and func.parent_op() is table_op
                and func.sym_name.data == name
            ):
                return func
        table = {
            child.sym_name.data: child
            for child in table_op.regions[0].block.ops
            if isinstance(child, FuncOp | SchemeOp)
        }
        self._tables[table_op] = table
        self.builds += 1
        return table.get(name)


FUNCTION_TABLES = FunctionTables()


def lookup_function(op: Operation, name: str) -> FuncOp | None:
    """The ``tprog.func`` named ``name`` visible from ``op`` (see :class:`FunctionTables`)."""
    found = FUNCTION_TABLES.lookup(op, name)
    return found if isinstance(found, FuncOp) else None


def lookup_scheme(op: Operation, name: str) -> SchemeOp | None:
    """The ``tprog.scheme`` named ``name`` visible from ``op``."""
    found = FUNCTION_TABLES.lookup(op, name)
    return found if isinstance(found, SchemeOp) else None


class _CallSymbolUser(SymbolUserOpInterface):
    def verify(self, op: Operation) -> None:
        assert isinstance(op, CallOp)
        callee = op.callee.root_reference.data
        func = lookup_function(op, callee)
        if func is None:
            raise VerifyException(f"{op.name}: no tprog.func named @{callee}")
        if len(op.arguments) != func.arity:
            raise VerifyException(
                f"{op.name} @{callee} at {op.application.data!r}: @{callee} takes "
                f"{func.arity} argument(s) but {len(op.arguments)} are given"
            )
        if len(op.res) != func.num_results:
            raise VerifyException(
                f"{op.name} @{callee} at {op.application.data!r}: @{callee} returns "
                f"{func.num_results} result(s) but the call has {len(op.res)}"
            )


@irdl_custom_directive
class ApplicationSite(CustomDirective):
    """``at "site"``: the named application site of a call or an instantiation."""

    site: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        parser.parse_keyword("at", " followed by the application site's name")
        site = parser.parse_str_literal("the application site's name")
        self.site.set(state, StringAttr(site))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        site = self.site.get(op)
        assert isinstance(site, StringAttr)
        state.print_whitespace(printer)
        printer.print_string("at ")
        printer.print_string_literal(site.data)


def _application_format(target: str) -> str:
    return (
        f"${target} `(` $arguments `)` custom<DefinedTypes>(type(operands)) "
        "custom<ApplicationSite>($application) attr-dict "
        "custom<ResultTypes>(type($res))"
    )


class _ApplicationOp(_UnknownByDefault, IRDLOperation):
    """``@target(%a, ...) at "site" : types``: what calls and instantiations share.

    ``TARGET`` names the property holding the applied symbol.
    """

    TARGET: ClassVar[str]

    application = prop_def(StringAttr)
    arguments = var_operand_def(TensorType)
    res = var_result_def(TensorType)

    custom_directives = (DefinedTypes, ApplicationSite, ResultTypes)

    def __init__(
        self,
        target: str,
        arguments: Sequence[SSAValue | Operation],
        application: str,
        result_types: Sequence[Attribute],
    ):
        super().__init__(
            operands=[arguments],
            result_types=[result_types],
            properties={
                self.TARGET: SymbolRefAttr(target),
                "application": StringAttr(application),
            },
        )

    @property
    def target_name(self) -> str:
        """The name of the applied function or scheme."""
        target = self.properties[self.TARGET]
        assert isinstance(target, SymbolRefAttr)
        return target.root_reference.data


@irdl_op_definition
class CallOp(_ApplicationOp):
    """``%y = tprog.call @f(%x) at "site"``: applies a function at a named site."""

    name = "tprog.call"
    TARGET: ClassVar[str] = "callee"

    callee = prop_def(FlatSymbolRefAttrConstr)

    traits = traits_def(_CallSymbolUser())

    assembly_format = _application_format("callee")


# -------------------------------------------------------------- shape schemes

_VALUE_ENTRY = re.compile(
    r"@(?P<func>\S+) (?:arg (?P<arg>\d+)|op (?P<op>\d+) (?P<result>\d+)) = "
    r"(?P<where>arg|internal|anchor) (?P<index>\d+)\Z"
)


@dataclass(frozen=True)
class ValueEntry:
    """Where a value of a traced body stands in an application of a scheme.

    ``func``'s block argument ``arg``, or result ``result`` of the ``op``-th
    operation of its body, has the shape of the application's argument,
    internal shape or anchor number ``index`` (``where``).
    """

    func: str
    arg: int | None
    op: int | None
    result: int | None
    where: str
    index: int

    @classmethod
    def parse(cls, text: str) -> ValueEntry | None:
        """The entry a ``values`` line stands for, or ``None`` if malformed."""
        match = _VALUE_ENTRY.match(text)
        if match is None:
            return None

        def number(group: str) -> int | None:
            found = match.group(group)
            return None if found is None else natural(found, group)

        try:
            return cls(
                match.group("func"),
                number("arg"),
                number("op"),
                number("result"),
                match.group("where"),
                natural(match.group("index"), "index"),
            )
        except NumeralError:  # not ASCII digits, or too many of them
            return None

    def __str__(self) -> str:
        place = (
            f"arg {self.arg}" if self.arg is not None else f"op {self.op} {self.result}"
        )
        return f"@{self.func} {place} = {self.where} {self.index}"


@irdl_custom_directive
class StringLines(AttributeAnchor):
    """``{ "line" ... }``: an array of strings, one per line (shape schemes)."""

    lines: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        parser.parse_punctuation("{")
        lines: list[StringAttr] = []
        while parser.parse_optional_punctuation("}") is None:
            lines.append(
                StringAttr(
                    parser.parse_str_literal(" for a line of the shape scheme, or '}'")
                )
            )
        self.lines.set(state, ArrayAttr(lines))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        lines = cast(
            ArrayAttr[StringAttr], self.lines.get(op)
        )  # the property's constraint
        state.print_whitespace(printer)
        printer.print_string("{")
        with printer.indented():
            for line in lines.data:
                print_new_line(printer)
                printer.print_string_literal(line.data)
        print_new_line(printer)
        printer.print_string("}")


@irdl_custom_directive
class SchemeForKeyword(UnknownKeyword):
    """A misspelt ``for`` of ``tprog.scheme``."""

    EXPECTED = ("for",)
    THEN = ("'(' and the anchors",)


@irdl_custom_directive
class SchemeValuesKeyword(UnknownKeyword):
    """A misspelt ``values`` of ``tprog.scheme``."""

    EXPECTED = ("values",)


def _string_attr(text: str | StringAttr) -> StringAttr:
    return text if isinstance(text, StringAttr) else StringAttr(text)


@irdl_op_definition
class SchemeOp(_UnknownByDefault, IRDLOperation):
    """A shape scheme: a function's shapes, traced once (see ``generalize-shapes``).

    .. code-block:: mlir

        tprog.scheme @layer.scheme "layer" for @layer(%w) arity 1 results 1 {
          "generalized r1, r2, r3, r4, r5, r6"
          "fixed r7"
          "arg 0 'x' [...r1] | [...r2] -> [...r3]"
          ...
        } values {
          "@layer op 0 0 = internal 0"
        }

    ``label`` names the scheme in messages; ``for`` the function it was traced
    from; the operands are its *anchors*, the pre-existing tensors it reads
    (in the order of its ``anchor`` lines). The lines are the scheme's text
    form (:mod:`axisflow.shapes.scheme.text`); ``values`` tell which shape of
    an application each value of the traced body has (for annotating bodies).
    """

    name = "tprog.scheme"

    sym_name = prop_def(SymbolNameConstraint())
    label = prop_def(StringAttr)
    function = opt_prop_def(FlatSymbolRefAttrConstr)
    arity = prop_def(IntegerAttr)
    num_results = prop_def(IntegerAttr)
    lines = prop_def(ArrayAttr[StringAttr])
    values = opt_prop_def(ArrayAttr[StringAttr])
    anchors = var_operand_def(TensorType)

    traits = traits_def(SymbolOpInterface())

    custom_directives = (
        DefinedTypes,
        Count,
        StringLines,
        SchemeForKeyword,
        SchemeValuesKeyword,
    )
    assembly_format = (
        "$sym_name $label (`for` $function^ `(`) : (custom<SchemeForKeyword>() ` ` `(`)? "
        "$anchors `)` custom<DefinedTypes>(type(operands)) "
        "`arity` custom<Count>($arity) `results` custom<Count>($num_results) "
        "custom<StringLines>($lines) "
        "(`values` custom<StringLines>($values)^) : (custom<SchemeValuesKeyword>())? "
        "attr-dict"
    )

    def __init__(
        self,
        sym_name: str,
        label: str,
        anchors: Sequence[SSAValue | Operation],
        arity: int,
        num_results: int,
        lines: Sequence[str | StringAttr],
        *,
        function: str | None = None,
        values: Sequence[str | StringAttr] = (),
    ):
        """``lines`` and ``values`` may be given as attributes already made: a
        pass writing many schemes shares the attribute of a recurring line."""
        super().__init__(
            operands=[anchors],
            properties={
                "sym_name": StringAttr(sym_name),
                "label": StringAttr(label),
                "function": None if function is None else SymbolRefAttr(function),
                "arity": count_attr(arity),
                "num_results": count_attr(num_results),
                "lines": ArrayAttr([_string_attr(line) for line in lines]),
                "values": ArrayAttr([_string_attr(v) for v in values])
                if values
                else None,
            },
        )

    @property
    def text_lines(self) -> list[str]:
        """The scheme's lines."""
        return [line.data for line in self.lines.data]

    @property
    def value_entries(self) -> list[ValueEntry]:
        """The parsed ``values`` lines (malformed ones are a verifier error)."""
        if self.values is None:
            return []
        entries = [ValueEntry.parse(v.data) for v in self.values.data]
        return [entry for entry in entries if entry is not None]

    def verify_(self) -> None:
        from axisflow.shapes.scheme.text import parse_scheme_text

        where = f"{self.name} @{self.sym_name.data}"
        try:
            text = parse_scheme_text(self.text_lines)
        except ShapeError as error:
            raise VerifyException(f"{where}: {error}") from error
        counts = (
            ("arity", count_value(self.arity), len(text.args), "arg"),
            ("results", count_value(self.num_results), len(text.results), "result"),
            ("anchors", len(self.anchors), len(text.anchors), "anchor"),
        )
        for what, declared, listed, line in counts:
            if declared != listed:
                raise VerifyException(
                    f"{where}: {what} is {declared} but the scheme has {listed} "
                    f"'{line}' line(s)"
                )
        if self.values is not None:
            for value in self.values.data:
                if ValueEntry.parse(value.data) is None:
                    raise VerifyException(
                        f"{where}: malformed values line {value.data!r} (expected "
                        f"'@func arg I = where K' or '@func op J R = where K')"
                    )
        if self.function is not None:
            func = lookup_function(self, self.function.root_reference.data)
            if func is None:
                raise VerifyException(
                    f"{where}: no tprog.func named @{self.function.root_reference.data}"
                )
            if (func.arity, func.num_results) != (
                count_value(self.arity),
                count_value(self.num_results),
            ):
                raise VerifyException(
                    f"{where}: @{func.sym_name.data} takes {func.arity} argument(s) and "
                    f"returns {func.num_results}, but the scheme has arity "
                    f"{count_value(self.arity)} and {count_value(self.num_results)} result(s)"
                )


class _InstantiateSymbolUser(SymbolUserOpInterface):
    def verify(self, op: Operation) -> None:
        assert isinstance(op, InstantiateOp)
        name = op.scheme.root_reference.data
        found = lookup_scheme(op, name)
        where = f"{op.name} @{name} at {op.application.data!r}"
        if found is None:
            raise VerifyException(f"{op.name}: no tprog.scheme named @{name}")
        if len(op.arguments) != count_value(found.arity):
            raise VerifyException(
                f"{where}: the scheme takes {count_value(found.arity)} argument(s) but "
                f"{len(op.arguments)} are given"
            )
        if len(op.res) != count_value(found.num_results):
            raise VerifyException(
                f"{where}: the scheme has {count_value(found.num_results)} result(s) but the "
                f"operation has {len(op.res)}"
            )


@irdl_op_definition
class InstantiateOp(_ApplicationOp):
    """``%y = tprog.instantiate @layer.scheme(%x) at "first"``: apply a shape scheme.

    What a ``tprog.call`` becomes under ``generalize-shapes``: the scheme's
    constraints are instantiated at the named application site; no body runs.
    """

    name = "tprog.instantiate"
    TARGET: ClassVar[str] = "scheme"

    scheme = prop_def(FlatSymbolRefAttrConstr)

    traits = traits_def(_InstantiateSymbolUser())

    assembly_format = _application_format("scheme")


Tprog = Dialect(
    "tprog",
    [
        LeafOp,
        ParamOp,
        PointwiseOp,
        ComposeOp,
        TransposeOp,
        EinsumOp,
        SetDimOp,
        TotalElemsOp,
        CloseOp,
        FuncOp,
        ReturnOp,
        CallOp,
        SchemeOp,
        InstantiateOp,
    ],
    [TensorType],
)
"""The tensor-program dialect."""
