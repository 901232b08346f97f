"""The ``sched`` dialect: the ordered batch schedule of a ``batch.forest``.

``schedule-batches`` puts one ``sched.schedule`` at the end of each forest::

    batch.forest @four_tensor {
      ...values and trees...
      sched.schedule rounds 1 {
        sched.residual 0 [a, b, i, j] bytes 288
        sched.loop over b instance 0 pass 0 block 1 {
          sched.loop over c instance 1 pass 0 block 1 {
            sched.build @T1 slice [b:0, c:1] bytes 32
            sched.build @T2 slice [b:0, c:1] bytes 48
            sched.build @S slice [b:0] sum [c:1] bytes 96
            sched.accumulate @S into 0 for @S_term
          }
        }
        sched.output @S_term = @S into 0 direct
      }
    }

* ``sched.loop over <space> instance N pass P block B`` runs its body once
  per block of ``B`` elements of the space: pass ``P`` of loop instance ``N``
  (the fusion slot of the forest's loops).
* ``sched.build @v slice [m:N, ...] sum [m:N, ...]`` computes value ``@v``;
  ``m:N`` restricts mode ``m`` of ``@v``'s frame (a result mode under
  ``slice``, a mode summed at its node under ``sum``) to the current block of
  loop instance ``N``. ``demoted [N, ...]`` lists the loops on which its
  LoopLocal role was demoted; ``bytes`` is the size of one built piece.
* ``sched.buffer @v slice [...] zero bytes S`` is the storage that ``@v``
  leaves its loops into (full size except the listed slices; ``zero`` for an
  accumulator). ``sched.scatter @v`` / ``sched.accumulate @v`` write the piece
  just built into it.
* ``sched.output @tree = @v`` is the tree's result, ``coeff * @v``
  (``sched.output @tree`` for a tree that is a bare number); ``into G`` adds
  it into residual group ``G`` (``direct``: added piece by piece already).
* ``sched.residual G [modes] bytes S`` is the zeroed residual buffer of an
  operator group; ``sched.scatter/accumulate @v into G for @tree`` adds a
  root's piece straight into it; ``sched.apply G ["Ŝ{...}"] bytes S`` applies
  the group's operators and adds the result into group 0's
  (``docs/residual.md``).

Values are the forest's ``batch.value`` symbols; inputs are read, never built.
``sched.schedule``'s verifier checks structure only (schedule ops inside, every
symbol names a value or tree of the forest): xdsl-opt verifies after every
pass, and rebuilding the forest model each time cost more than the pass that
made the schedule, which checks it already. The ``check-schedules`` pass
(``axisflow.dialects.sched_model.check_schedule_op``) checks a schedule
written or edited by hand against its forest
(``axisflow.scheduling.check.check_schedule``, and every ``bytes`` against
the forest's sizes), reporting at the offending op.

The schedule model (``axisflow.scheduling.schedule``) converts to and from
these ops in ``axisflow.dialects.sched_model``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar, cast

from xdsl.dialects.builtin import (
    ArrayAttr,
    FlatSymbolRefAttr,
    IntegerAttr,
    SymbolRefAttr,
    UnitAttr,
    i64,
)
from xdsl.ir import Block, Dialect, Operation, ParametrizedAttribute, Region
from xdsl.irdl import (
    IRDLOperation,
    irdl_attr_definition,
    irdl_op_definition,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
)
from xdsl.irdl.declarative_assembly_format import (
    AttributeVariable,
    ParsingState,
    PrintingState,
    irdl_custom_directive,
)
from xdsl.parser import Parser
from xdsl.printer import Printer
from xdsl.traits import HasParent, NoTerminator
from xdsl.utils.exceptions import VerifyException

from axisflow.dialects.batch import (
    ForestOp,
    IndexAttr,
    IndexList,
    OperatorTexts,
    SpaceKey,
    TextAttr,
)
from axisflow.dialects.fast_verify import FastVerifiedOp
from axisflow.dialects.formats import (
    Body,
    Count,
    I64Count,
    ListAnchor,
    UnknownKeyword,
)
from axisflow.dialects.integers import count_attr, count_value, parse_int
from axisflow.dialects.labels import (
    parse_index,
)
from axisflow.residual import Operator, OperatorError
from axisflow.roles.index import Index, is_key_char
from axisflow.scheduling import schedule as model

# --------------------------------------------------------------------------
# Attributes and helpers
# --------------------------------------------------------------------------


@irdl_attr_definition
class BindAttr(ParametrizedAttribute):
    """A mode restricted to the current block of a loop instance (``m:N`` in
    custom syntax)."""

    name = "sched.bind"

    mode: IndexAttr
    instance: IntegerAttr

    def __init__(self, mode: Index, instance: int) -> None:
        super().__init__(IndexAttr.of(mode), IntegerAttr(instance, i64))

    @staticmethod
    def of(bind: model.Bind) -> BindAttr:
        """The (shared) attribute of ``bind``: schedules repeat few binds."""
        attr = _BIND_ATTRS.get(bind)
        if attr is None:
            attr = _BIND_ATTRS[bind] = BindAttr(bind.mode, bind.instance)
        return attr

    @property
    def bind(self) -> model.Bind:
        """The bind as the schedule model has it."""
        return model.Bind(self.mode.index, self.instance.value.data)


_BIND_ATTRS: dict[model.Bind, BindAttr] = {}


def _int(value: int) -> IntegerAttr:
    return IntegerAttr(value, i64)


def _binds(binds: Sequence[model.Bind]) -> ArrayAttr[BindAttr]:
    return ArrayAttr(BindAttr.of(b) for b in binds)


@irdl_custom_directive
class Binds(ListAnchor):
    """``[m:N, ...]`` with raw-text labels (``μ̃_1`` does not lex in MLIR).

    Anchors an optional clause: present when not empty.
    """

    binds: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        parser.parse_punctuation("[")
        binds: list[model.Bind] = []
        while parser.parse_optional_punctuation("]") is None:
            mode = parse_index(parser)
            parser.parse_punctuation(":", " after a mode (mode:instance)")
            instance = parse_int(parser, "a loop instance", allow_negative=False)
            binds.append(model.Bind(mode, instance))
            if parser.parse_optional_punctuation(",") is None:
                parser.parse_punctuation("]", " to close the list")
                break
        self.binds.set(state, _binds(binds))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        binds = cast(
            ArrayAttr[BindAttr], self.binds.get(op)
        )  # the property's constraint
        text = ", ".join(
            f"{b.mode.label.data}:{b.instance.value.data}" for b in binds.data
        )
        state.print_whitespace(printer)
        printer.print_string(f"[{text}]")


@irdl_custom_directive
class Demoted(Binds):
    """``[N, ...]``: the loop instances on which a role was demoted."""

    binds: AttributeVariable  # parameters are read from the class's own fields

    def parse(self, parser: Parser, state: ParsingState) -> None:
        numbers = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE,
            lambda: parse_int(parser, "a demoted instance", allow_negative=False),
        )
        self.binds.set(state, ArrayAttr(_int(i) for i in numbers))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        numbers = cast(
            ArrayAttr[IntegerAttr], self.binds.get(op)
        )  # the property's constraint
        state.print_whitespace(printer)
        printer.print_string(f"[{', '.join(str(i.value.data) for i in numbers)}]")


@irdl_custom_directive
class BuildKeywords(UnknownKeyword):
    """A misspelt clause of ``sched.build``."""

    EXPECTED = ("slice", "sum", "demoted", "bytes")
    THEN = ()
    CLAUSES = ("slices", "sums", "demoted")


@irdl_custom_directive
class BufferKeywords(UnknownKeyword):
    """A misspelt clause of ``sched.buffer``."""

    EXPECTED = ("slice", "zero", "bytes")
    THEN = ()
    CLAUSES = ("slices", "zero")


@irdl_custom_directive
class CheckedOperatorTexts(OperatorTexts):
    """Operators refused when parsed if malformed (a schedule is machine-written)."""

    operators: AttributeVariable  # parameters are read from the class's own fields

    def check(self, parser: Parser, state: ParsingState, texts: list[str]) -> None:
        for text in texts:
            try:
                Operator.parse(text)
            except OperatorError as error:
                parser.raise_error(f"{state.op_type.name}: {error}")


def _symbol(op_value: FlatSymbolRefAttr) -> str:
    return op_value.root_reference.data


def body_ops(region: Region) -> list[Operation]:
    """The ops of a schedule's or loop's single block, in order."""
    block = region.blocks.first
    return [] if block is None else list(block.ops)


_IN_SCHEDULE = lazy_traits_def(lambda: (HasParent(ScheduleOp, LoopOp),))


# --------------------------------------------------------------------------
# Operations
# --------------------------------------------------------------------------


@irdl_op_definition
class BuildOp(FastVerifiedOp):
    """Compute a value: ``sched.build @v slice [m:N] sum [k:M] bytes S``."""

    name = "sched.build"

    value = prop_def(FlatSymbolRefAttr)
    slices = prop_def(ArrayAttr[BindAttr])
    sums = prop_def(ArrayAttr[BindAttr])
    demoted = prop_def(ArrayAttr[IntegerAttr])
    size = prop_def(IntegerAttr, prop_name="bytes")
    """``i64``, or wider for dense sizes past 2**63 bytes (``count_attr``)."""

    traits = _IN_SCHEDULE

    custom_directives = (Binds, Demoted, BuildKeywords, Count)
    assembly_format = (
        "$value (`slice` custom<Binds>($slices)^)? (`sum` custom<Binds>($sums)^)? "
        "(`demoted` custom<Demoted>($demoted)^)? custom<BuildKeywords>() "
        "`bytes` custom<Count>($bytes) attr-dict"
    )

    def __init__(self, build: model.Build) -> None:
        super().__init__(
            properties={
                "value": SymbolRefAttr(build.value),
                "slices": _binds(build.slices),
                "sums": _binds(build.sums),
                "demoted": ArrayAttr(_int(i) for i in build.demoted),
                "bytes": count_attr(build.bytes),
            }
        )

    def to_model(self) -> model.Build:
        """The build as the schedule model has it."""
        return model.Build(
            _symbol(self.value),
            tuple(b.bind for b in self.slices.data),
            tuple(b.bind for b in self.sums.data),
            tuple(i.value.data for i in self.demoted.data),
            count_value(self.size),
        )

    def verify_own(self) -> None:
        if count_value(self.size) < 0:
            raise VerifyException("sched.build: bytes must be non-negative")


@irdl_op_definition
class BufferOp(FastVerifiedOp):
    """Storage a value leaves its loops into: ``sched.buffer @v slice [m:N]
    zero bytes S``."""

    name = "sched.buffer"

    value = prop_def(FlatSymbolRefAttr)
    slices = prop_def(ArrayAttr[BindAttr])
    zero = opt_prop_def(UnitAttr)
    size = prop_def(IntegerAttr, prop_name="bytes")

    traits = _IN_SCHEDULE

    custom_directives = (Binds, BufferKeywords, Count)
    assembly_format = (
        "$value (`slice` custom<Binds>($slices)^)? (`zero` $zero^)? "
        "custom<BufferKeywords>() `bytes` custom<Count>($bytes) attr-dict"
    )

    def __init__(self, buffer: model.Buffer) -> None:
        super().__init__(
            properties={
                "value": SymbolRefAttr(buffer.value),
                "slices": _binds(buffer.slices),
                "zero": UnitAttr() if buffer.zero else None,
                "bytes": count_attr(buffer.bytes),
            }
        )

    def to_model(self) -> model.Buffer:
        """The buffer as the schedule model has it."""
        return model.Buffer(
            _symbol(self.value),
            tuple(b.bind for b in self.slices.data),
            self.zero is not None,
            count_value(self.size),
        )

    def verify_own(self) -> None:
        if count_value(self.size) < 0:
            raise VerifyException("sched.buffer: bytes must be non-negative")


class _WriteOp(FastVerifiedOp):
    """Shared shape of ``sched.scatter`` and ``sched.accumulate``; with
    ``into G for @tree`` the piece (scaled by the tree's coefficient) is added
    into residual group ``G`` instead of a buffer."""

    value = prop_def(FlatSymbolRefAttr)
    into = opt_prop_def(IntegerAttr)
    tree = opt_prop_def(FlatSymbolRefAttr)

    traits = _IN_SCHEDULE

    custom_directives = (Count,)
    assembly_format = "$value (`into` custom<Count>($into) `for` $tree^)? attr-dict"

    def __init__(
        self, value: str, into: int | None = None, tree: str | None = None
    ) -> None:
        super().__init__(
            properties={
                "value": SymbolRefAttr(value),
                "into": None if into is None else count_attr(into),
                "tree": None if tree is None else SymbolRefAttr(tree),
            }
        )

    def verify_own(self) -> None:
        if (self.into is None) != (self.tree is None):
            raise VerifyException(f"{self.name}: 'into' and 'for' go together")

    def to_model(self) -> model.Write:
        """The write as the schedule model has it."""
        return model.Write(
            _symbol(self.value),
            isinstance(self, AccumulateOp),
            None if self.into is None else count_value(self.into),
            None if self.tree is None else _symbol(self.tree),
        )


@irdl_op_definition
class ScatterOp(_WriteOp):
    """Copy the piece of ``@v`` just built into its buffer: ``sched.scatter @v``."""

    name = "sched.scatter"


@irdl_op_definition
class AccumulateOp(_WriteOp):
    """Add the partial sum of ``@v`` just built into its buffer:
    ``sched.accumulate @v``."""

    name = "sched.accumulate"


@irdl_op_definition
class OutputOp(FastVerifiedOp):
    """A tree's result: ``sched.output @tree = @v`` (``coeff * @v``), added
    into residual group ``G`` with ``into G`` (``direct``: its pieces were
    added already)."""

    name = "sched.output"

    tree = prop_def(FlatSymbolRefAttr)
    value = opt_prop_def(FlatSymbolRefAttr)
    into = opt_prop_def(IntegerAttr)
    direct = opt_prop_def(UnitAttr)

    traits = _IN_SCHEDULE

    custom_directives = (Count,)
    assembly_format = (
        "$tree (`=` $value^)? (`into` custom<Count>($into)^)? (`direct` $direct^)? "
        "attr-dict"
    )

    def __init__(
        self,
        tree: str,
        value: str | None,
        into: int | None = None,
        direct: bool = False,
    ) -> None:
        super().__init__(
            properties={
                "tree": SymbolRefAttr(tree),
                "value": None if value is None else SymbolRefAttr(value),
                "into": None if into is None else count_attr(into),
                "direct": UnitAttr() if direct else None,
            }
        )

    def to_model(self) -> model.Output:
        """The output as the schedule model has it."""
        value = None if self.value is None else _symbol(self.value)
        into = None if self.into is None else count_value(self.into)
        return model.Output(_symbol(self.tree), value, into, self.direct is not None)


class _GroupStepOp(FastVerifiedOp):
    """What ``sched.residual`` and ``sched.apply`` share: an operator group,
    a bracketed list (``LIST``: the property and its directive) and a size,
    ``sched.<op> G [...] bytes S``."""

    group = prop_def(IntegerAttr)
    size = prop_def(IntegerAttr, prop_name="bytes")

    traits = _IN_SCHEDULE

    def __init__(self, group: int, items: ArrayAttr, size: int) -> None:
        super().__init__(
            properties={
                "group": count_attr(group),
                self.LIST: items,
                "bytes": count_attr(size),
            }
        )

    LIST: ClassVar[str]


def _group_step_format(items: str, directive: str) -> str:
    return f"custom<Count>($group) custom<{directive}>(${items}) `bytes` custom<Count>($bytes) attr-dict"


@irdl_op_definition
class ResidualOp(_GroupStepOp):
    """The zeroed residual buffer of an operator group, before everything:
    ``sched.residual 0 [a_1<i_1,i_2>, i_1, i_2] bytes S``."""

    name = "sched.residual"
    LIST: ClassVar[str] = "modes"

    modes = prop_def(ArrayAttr[IndexAttr])

    custom_directives = (Count, IndexList)
    assembly_format = _group_step_format("modes", "IndexList")

    def __init__(self, residual: model.Residual) -> None:
        modes = ArrayAttr([IndexAttr.of(m) for m in residual.modes])
        super().__init__(residual.group, modes, residual.bytes)

    def to_model(self) -> model.Residual:
        """The residual buffer as the schedule model has it."""
        modes = tuple(m.index for m in self.modes.data)
        return model.Residual(count_value(self.group), modes, count_value(self.size))


@irdl_op_definition
class ApplyOp(_GroupStepOp):
    """An operator step: ``sched.apply 0 ["Ŝ{a_1,a_2;i_1,i_2}"] bytes S``
    applies the group's operators (outermost first) to its residual and adds
    the result into group 0's; ``bytes`` is the extra residual it holds."""

    name = "sched.apply"
    LIST: ClassVar[str] = "operators"

    operators = prop_def(ArrayAttr[TextAttr])

    custom_directives = (Count, CheckedOperatorTexts)
    assembly_format = _group_step_format("operators", "CheckedOperatorTexts")

    def __init__(self, apply: model.Apply) -> None:
        operators = ArrayAttr([TextAttr(str(o)) for o in apply.operators])
        super().__init__(apply.group, operators, apply.bytes)

    def verify_own(self) -> None:
        for text in self.operators.data:
            try:
                Operator.parse(text.data)
            except OperatorError as error:
                raise VerifyException(f"sched.apply: {error}") from None

    def to_model(self) -> model.Apply:
        """The operator step as the schedule model has it."""
        operators = tuple(Operator.parse(t.data) for t in self.operators.data)
        return model.Apply(count_value(self.group), operators, count_value(self.size))


@irdl_op_definition
class LoopOp(FastVerifiedOp):
    """One pass of a loop instance:
    ``sched.loop over b instance 0 pass 0 block 1 { ... }``."""

    name = "sched.loop"

    space = prop_def(TextAttr)
    instance = prop_def(IntegerAttr)
    number = prop_def(IntegerAttr, prop_name="pass")
    block = prop_def(IntegerAttr)
    body = region_def("single_block")

    traits = lazy_traits_def(lambda: (HasParent(ScheduleOp, LoopOp), NoTerminator()))

    custom_directives = (SpaceKey, I64Count, Body)
    assembly_format = (
        "`over` custom<SpaceKey>($space) `instance` custom<I64Count>($instance) "
        "`pass` custom<I64Count>($pass) `block` custom<I64Count>($block) "
        "custom<Body>($body) attr-dict"
    )

    def __init__(
        self, loop: model.LoopPass, body: Sequence[Operation] | Region = ()
    ) -> None:
        region = body if isinstance(body, Region) else Region(Block(body))
        super().__init__(
            properties={
                "space": TextAttr(loop.space),
                "instance": _int(loop.instance),
                "pass": _int(loop.number),
                "block": _int(loop.block),
            },
            regions=[region],
        )

    def to_model(self) -> model.LoopPass:
        """The pass without its body."""
        return model.LoopPass(
            self.instance.value.data,
            self.space.data,
            self.number.value.data,
            self.block.value.data,
        )

    def verify_own(self) -> None:
        key = self.space.data
        if not key or not all(is_key_char(c) for c in key):
            raise VerifyException(f"sched.loop: malformed index-space key {key!r}")
        for what, attr in (("instance", self.instance), ("pass", self.number)):
            if attr.value.data < 0:
                raise VerifyException(f"sched.loop: {what} must be non-negative")
        if self.block.value.data < 1:
            raise VerifyException("sched.loop: block must be positive")


@irdl_op_definition
class ScheduleOp(FastVerifiedOp):
    """The ordered schedule of the enclosing forest: ``sched.schedule rounds N``.

    Its verifier checks the IR's structure (only schedule ops inside, every
    symbol names a value or tree of the forest) without rebuilding the forest
    model, so it costs what it checks; ``sched_model.check_schedule_op`` (the
    ``check-schedules`` pass) checks the whole schedule against the forest.
    """

    name = "sched.schedule"

    rounds = prop_def(IntegerAttr)
    body = region_def("single_block")

    traits = lazy_traits_def(lambda: (HasParent(ForestOp), NoTerminator()))

    custom_directives = (I64Count, Body)
    assembly_format = "`rounds` custom<I64Count>($rounds) custom<Body>($body) attr-dict"

    def __init__(self, rounds: int, body: Sequence[Operation] | Region = ()) -> None:
        region = body if isinstance(body, Region) else Region(Block(body))
        super().__init__(properties={"rounds": _int(rounds)}, regions=[region])

    def verify(self, verify_nested_ops: bool = True) -> None:
        super().verify(verify_nested_ops)
        # After the per-op verifiers; outside ``verify_`` so that the error is
        # reported at the offending op, not re-wrapped at this one.
        forest = self.parent_op()
        if not isinstance(forest, ForestOp):
            return
        check_structure(self, forest)


# --------------------------------------------------------------------------
# Structure
# --------------------------------------------------------------------------


def check_structure(op: ScheduleOp, forest: ForestOp) -> None:
    """The structural rules of a schedule: only schedule ops in its body, and
    every ``@value`` / ``@tree`` names a ``batch.value`` / ``batch.tree`` of
    ``forest``. Linear in the schedule's ops; no forest model is built."""
    values = {value.value_name for value in forest.values()}
    trees = {tree.tree_name for tree in forest.trees()}
    stack = list(body_ops(op.body))
    stack.reverse()
    while stack:
        child = stack.pop()
        if isinstance(child, LoopOp):
            inner = body_ops(child.body)
            inner.reverse()
            stack.extend(inner)
            continue
        if isinstance(child, ResidualOp | ApplyOp):
            continue  # no symbol: groups and sizes are the deep check's
        if isinstance(child, OutputOp | ScatterOp | AccumulateOp):
            tree = child.tree
            if tree is not None and _symbol(tree) not in trees:
                _fail(child, f"{_WHAT[type(child)]} of unknown tree @{_symbol(tree)}")
        if isinstance(child, OutputOp):
            if child.value is not None and _symbol(child.value) not in values:
                _fail(child, f"output of unknown value @{_symbol(child.value)}")
            continue
        if isinstance(child, BuildOp | BufferOp | ScatterOp | AccumulateOp):
            name = _symbol(child.value)
            if name not in values:
                _fail(child, f"{_WHAT[type(child)]} of unknown value @{name}")
            continue
        message = f"{child.name} is not a schedule op"
        child.emit_error(message, VerifyException(message))


_WHAT: dict[type[Operation], str] = {
    BuildOp: "build",
    BufferOp: "buffer",
    OutputOp: "output",
    ScatterOp: "write",
    AccumulateOp: "write",
}


def _fail(op: Operation, message: str) -> None:
    text = f"{op.name}: {message}"
    op.emit_error(text, VerifyException(text))


Sched = Dialect(
    "sched",
    [
        ScheduleOp,
        LoopOp,
        BuildOp,
        BufferOp,
        ScatterOp,
        AccumulateOp,
        OutputOp,
        ResidualOp,
        ApplyOp,
    ],
    [BindAttr],
)
"""The ``sched`` dialect."""
