"""The ``batch`` dialect: a forest of tensor contractions with its batch loops.

A ``batch.forest`` holds index spaces, values and trees::

    batch.forest @ccsd {
      batch.space i extent 80 elem 8
      batch.space Κ extent 1682
      batch.value @g [i_1, a_1, Κ_1] leaf "g" symmetry "N-N-N"
      batch.value @t [a_1, i_1] leaf "t"
      batch.value @v0 [Κ_1] contracted [a_1, i_1] = @g [i_1, a_1, Κ_1] * @t [a_1, i_1]
      batch.tree @term0 coeff -1/2 {
        batch.loop Κ_1 slot 0 {
          batch.use @v0 [Κ_1] {
            batch.use @g [i_1, a_1, Κ_1]
            batch.use @t [a_1, i_1]
          }
        }
      }
    }

* ``batch.value`` defines a value (symbol) in its own index frame: its result
  indices, the indices it contracts at its own node, and either a leaf tensor
  label, two factors (a pairwise contraction), or nothing (an opaque value).
* ``batch.tree`` is one evaluation tree (a term) with a rational coefficient.
  Its body nests ``batch.use`` (a use-site: a value with the indices it
  carries there, and the use-sites of its factors in its region) and
  ``batch.loop`` (a batch loop binding one index label, with an optional
  fusion slot) enclosing any part of the tree.

Verification that needs a table (symbols, spaces) builds it once per forest,
in ``ForestOp.verify``; the per-op verifiers then look names up in it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar, NoReturn, cast

from xdsl.dialects.builtin import (
    ArrayAttr,
    DictionaryAttr,
    FlatSymbolRefAttr,
    IntegerAttr,
    StringAttr,
    SymbolNameConstraint,
    SymbolRefAttr,
    i64,
)
from xdsl.dialects.utils.enum_attribute import EnumAttribute
from xdsl.ir import (
    Attribute,
    Block,
    Data,
    Dialect,
    Operation,
    ParametrizedAttribute,
    Region,
)
from xdsl.irdl import (
    AttrConstraint,
    IntConstraint,
    IRDLOperation,
    VerificationContext,
    irdl_attr_definition,
    irdl_op_definition,
    irdl_to_attr_constraint,
    lazy_traits_def,
    opt_prop_def,
    prop_def,
    region_def,
    traits_def,
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
from xdsl.traits import HasParent, NoTerminator
from xdsl.utils.exceptions import VerifyException

from axisflow.dialects.fast_verify import FastVerifiedOp
from axisflow.dialects.formats import (
    AttributeAnchor,
    Body,
    I64Integer,
    ListAnchor,
    NonEmptyBody,
    OptionalBody,
    UnknownKeyword,
)
from axisflow.dialects.integers import parse_int
from axisflow.dialects.keywords import END_OF_OP
from axisflow.dialects.labels import (
    parse_index,
    parse_index_list,
    parse_key,
    parse_label,
    parse_text,
    print_index_list,
    print_label,
    quote_text,
)
from axisflow.forest.frames import FrameError, expand_modes, mode_map, node_labels
from axisflow.gc_pause import gc_paused
from axisflow.numerals import I64_MAX
from axisflow.roles.decision import LoopRole
from axisflow.roles.index import Index, is_key_char

if TYPE_CHECKING:
    # xDSL's own TypeVar (its constraint signatures use typing_extensions').
    from typing_extensions import TypeVar

ROLES_ATTR = "roles"
"""Attribute of a ``batch.value`` holding its roles (``#batch.roles<...>``)."""
WHY_ATTR = "why"
"""Attribute of a ``batch.value`` explaining its roles (``#batch.why<...>``)."""
LAYOUT_ATTR = "layout"
"""Attribute of a leaf ``batch.value``: sizes of its bra, ket and aux groups."""

# --------------------------------------------------------------------------
# Attributes
# --------------------------------------------------------------------------


@irdl_attr_definition
class IndexAttr(ParametrizedAttribute):
    """One SeQuant index label, e.g. ``#batch.index<"a_1<i_1,i_2>">``.

    The label is kept as text (so any label round-trips); ``index`` parses it
    (cached). Ops verify their labels, so a malformed label is reported at the
    op that holds it.
    """

    name = "batch.index"

    label: StringAttr

    def __init__(self, label: str | StringAttr | Index) -> None:
        if isinstance(label, Index):
            label = label.full_label
        if isinstance(label, str):
            label = StringAttr(label)
        super().__init__(label)

    @property
    def index(self) -> Index:
        """The parsed label (cached); raises ``ValueError`` if it is malformed."""
        parsed = self.__dict__.get("_parsed")
        if parsed is None:
            parsed = parse_label(self.label.data)
            # A cache, not a parameter: attributes are frozen dataclasses.
            object.__setattr__(self, "_parsed", parsed)
        return parsed

    @staticmethod
    def of(index: Index) -> IndexAttr:
        """The (shared) attribute of ``index``: IR repeats few labels many times."""
        attr = _INDEX_ATTRS.get(index)
        if attr is None:
            attr = _INDEX_ATTRS[index] = IndexAttr(index)
        return attr

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        with parser.in_angle_brackets():
            return (StringAttr(parse_text(parser, "an index label")),)

    def print_parameters(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(quote_text(self.label.data))


_INDEX_ATTRS: dict[Index, IndexAttr] = {}


@irdl_custom_directive
class IndexList(CustomDirective):
    """``[a_1<i_1,i_2>, i_1]``: a list of SeQuant labels, read as raw text.

    Labels are not MLIR tokens (``a_1<i_1,i_2>``, ``μ̃_1``), so the list is
    scanned by :func:`~axisflow.dialects.labels.parse_index_list`.
    """

    indices: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.indices.set(state, _index_array(parse_index_list(parser)))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        indices = cast(
            ArrayAttr[IndexAttr], self.indices.get(op)
        )  # the property's constraint
        state.print_whitespace(printer)
        printer.print_string(print_index_list([attr.index for attr in indices.data]))


@irdl_custom_directive
class SharedSymbol(CustomDirective):
    """``@name``: a flat symbol reference, as ``$value`` reads and prints it,
    but one shared attribute per name (``_symbol_ref``): a forest names each
    value at every use-site of it, and the verifier's caches are keyed by
    the attributes' identity."""

    symbol: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.symbol.set(state, _symbol_ref(parser.parse_symbol_name().data))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        symbol = self.symbol.get(op)
        assert symbol is not None  # a required property
        state.print_whitespace(printer)
        printer.print_attribute(symbol)


@irdl_custom_directive
class NonEmptyIndexList(ListAnchor, IndexList):
    """An index list that anchors an optional clause: present when not empty."""

    indices: AttributeVariable  # parameters are read from the class's own fields


@irdl_attr_definition
class TextAttr(Data[str]):
    """A Unicode text that round-trips through xDSL's generic form,
    ``#batch.text<"δ">`` (a builtin string with non-ASCII characters would
    come back as bytes)."""

    name = "batch.text"

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> str:
        with parser.in_angle_brackets():
            return parse_text(parser, "a text")

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(quote_text(self.data))


@irdl_attr_definition
class RoleAttr(EnumAttribute[LoopRole]):  # pyright: ignore[reportInvalidTypeArguments]
    """A loop role: ``#batch.role<loop_local>`` (``reduction``, ``loop_carried``,
    ``loop_invariant``)."""

    name = "batch.role"

    def print_parameter(self, printer: Printer) -> None:
        with printer.in_angle_brackets():
            printer.print_string(self.data.value)

    @classmethod
    def parse_parameter(cls, parser: AttrParser) -> LoopRole:
        with parser.in_angle_brackets():
            return parser.parse_str_enum(LoopRole)  # pyright: ignore[reportArgumentType]


_ROLE_ATTRS = {role: RoleAttr(role) for role in LoopRole}


def _parse_axis_map(parser: AttrParser, parse_entry: Callable[[], Attribute]):
    """``<label = entry, ...>`` with raw-scanned labels; returns both lists."""
    axes: list[IndexAttr] = []
    entries: list[Attribute] = []
    parser.parse_punctuation("<")
    if parser.parse_optional_punctuation(">") is None:
        while True:
            axes.append(IndexAttr(parse_index(parser)))
            parser.parse_punctuation("=", " after an axis label")
            entries.append(parse_entry())
            if parser.parse_optional_punctuation(",") is None:
                break
        parser.parse_punctuation(">", " to close the axis map")
    return ArrayAttr(axes), ArrayAttr(entries)


def _print_axis_map(
    printer: Printer, axes: ArrayAttr[IndexAttr], entries: Sequence[str]
) -> None:
    printer.print_string(
        "<"
        + ", ".join(
            f"{print_label(axis.index)} = {entry}"
            for axis, entry in zip(axes.data, entries, strict=True)
        )
        + ">"
    )


@irdl_attr_definition
class AxisRolesAttr(ParametrizedAttribute):
    """The roles of one value per batch-loop axis (``classify-axes`` output):
    ``#batch.roles<b = loop_carried, Κ_1 = reduction>``.

    A dialect attribute rather than a builtin dictionary, because xDSL cannot
    read back dictionary keys such as ``Κ_1`` once it has printed them.
    """

    name = "batch.roles"

    axes: ArrayAttr[IndexAttr]
    roles: ArrayAttr[RoleAttr]

    def __init__(self, entries: Sequence[tuple[Index, LoopRole]]) -> None:
        # Shared arrays (one per distinct list): ``classify-axes`` writes a
        # few hundred distinct maps over a handful of axis and role lists.
        super().__init__(
            _index_array([axis for axis, _ in entries]),
            _role_array(tuple([role for _, role in entries])),
        )

    def as_dict(self) -> dict[Index, LoopRole]:
        """Axis index to role."""
        return {
            axis.index: role.data
            for axis, role in zip(self.axes.data, self.roles.data, strict=True)
        }

    def verify(self) -> None:
        if len(self.axes.data) != len(self.roles.data):
            raise VerifyException("batch.roles: one role per axis expected")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        def role() -> Attribute:
            return RoleAttr(parser.parse_str_enum(LoopRole))  # pyright: ignore[reportArgumentType]

        return _parse_axis_map(parser, role)

    def print_parameters(self, printer: Printer) -> None:
        _print_axis_map(printer, self.axes, [r.data.value for r in self.roles.data])


@irdl_attr_definition
class AxisReasonsAttr(ParametrizedAttribute):
    """Why each role was decided (``classify-axes{explain=true}``):
    ``#batch.why<c = "contracts c at its own node">``."""

    name = "batch.why"

    axes: ArrayAttr[IndexAttr]
    reasons: ArrayAttr[StringAttr]

    def __init__(self, entries: Sequence[tuple[Index, str]]) -> None:
        super().__init__(
            ArrayAttr(IndexAttr.of(axis) for axis, _ in entries),
            ArrayAttr(StringAttr(reason) for _, reason in entries),
        )

    def as_dict(self) -> dict[Index, str]:
        """Axis index to explanation."""
        return {
            axis.index: reason.data
            for axis, reason in zip(self.axes.data, self.reasons.data, strict=True)
        }

    def verify(self) -> None:
        if len(self.axes.data) != len(self.reasons.data):
            raise VerifyException("batch.why: one reason per axis expected")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return _parse_axis_map(
            parser, lambda: StringAttr(parse_text(parser, "a reason"))
        )

    def print_parameters(self, printer: Printer) -> None:
        _print_axis_map(
            printer, self.axes, [quote_text(r.data) for r in self.reasons.data]
        )


@irdl_attr_definition
class ProtoMapAttr(ParametrizedAttribute):
    """Explicit proto pairings: each proto mode of a value's frame with its
    label where the value is read, ``#batch.protos<i_1 = i_4, i_2 = i_3>``.

    Proto lists are symmetric sets, so the labels of a composite alone do not
    say which proto is which; this map does (``axisflow.forest.frames``).
    """

    name = "batch.protos"

    modes: ArrayAttr[IndexAttr]
    labels: ArrayAttr[IndexAttr]

    def __init__(self, pairs: Sequence[tuple[Index, Index]] = ()) -> None:
        super().__init__(
            ArrayAttr(IndexAttr.of(mode) for mode, _ in pairs),
            ArrayAttr(IndexAttr.of(label) for _, label in pairs),
        )

    @property
    def pairs(self) -> tuple[tuple[Index, Index], ...]:
        """``(frame mode, label)`` pairs (kept on the immutable attribute)."""
        found = self.__dict__.get("_pairs")
        if found is None:
            found = tuple(
                (mode.index, label.index)
                for mode, label in zip(self.modes.data, self.labels.data, strict=True)
            )
            # A cache, not a parameter: attributes are frozen dataclasses.
            object.__setattr__(self, "_pairs", found)
        return found

    def verify(self) -> None:
        if len(self.modes.data) != len(self.labels.data):
            raise VerifyException("batch.protos: one label per mode expected")

    @classmethod
    def parse_parameters(cls, parser: AttrParser) -> Sequence[Attribute]:
        return _parse_axis_map(parser, lambda: IndexAttr(parse_index(parser)))

    def print_parameters(self, printer: Printer) -> None:
        _print_axis_map(
            printer, self.modes, [print_label(a.index) for a in self.labels.data]
        )


_NO_PROTOS = ProtoMapAttr()


def parse_proto_pairs(parser: Parser) -> list[tuple[Index, Index]]:
    """The optional ``protos [mode = label, ...]`` of custom syntax."""
    pairs: list[tuple[Index, Index]] = []
    if not parser.parse_optional_keyword("protos"):
        return pairs
    parser.parse_punctuation("[", " to open the proto map")
    if parser.parse_optional_punctuation("]") is not None:
        return pairs
    while True:
        mode = parse_index(parser)
        parser.parse_punctuation("=", " after a proto mode (mode = label)")
        pairs.append((mode, parse_index(parser)))
        if parser.parse_optional_punctuation(",") is None:
            parser.parse_punctuation("]", " to close the proto map")
            return pairs


def print_proto_pairs(pairs: Sequence[tuple[Index, Index]]) -> str:
    """`` protos [i_1 = i_4, ...]`` (empty text for no pairs)."""
    if not pairs:
        return ""
    body = ", ".join(f"{m.full_label} = {t.full_label}" for m, t in pairs)
    return f" protos [{body}]"


@irdl_attr_definition
class FactorAttr(ParametrizedAttribute):
    """One factor of a contraction: a value symbol with the labels it carries
    in the defining value's frame and the explicit pairings of its proto
    modes, ``#batch.factor<@g, [#batch.index<"i_1">], #batch.protos<>>``."""

    name = "batch.factor"

    value: FlatSymbolRefAttr
    indices: ArrayAttr[IndexAttr]
    protos: ProtoMapAttr

    def __init__(
        self,
        value: str | FlatSymbolRefAttr,
        indices: Sequence[Index | IndexAttr],
        protos: Sequence[tuple[Index, Index]] = (),
    ) -> None:
        if isinstance(value, str):
            value = _symbol_ref(value)
        super().__init__(
            value, _index_array(indices), ProtoMapAttr(protos) if protos else _NO_PROTOS
        )

    @property
    def symbol(self) -> str:
        """The factor's value name (without ``@``)."""
        return self.value.root_reference.data


@dataclass(frozen=True)
class LabelListConstraint(AttrConstraint[ArrayAttr[IndexAttr]]):
    """``ArrayAttr[IndexAttr]``, checked once per distinct array.

    Label lists are shared attributes (one per distinct list), and xDSL's
    generic verifier checks every property of every op on every
    verification: this constraint checks an array's elements the first time
    and marks the (immutable) array, so later checks cost one lookup. The
    diagnostics are xDSL's own."""

    elements: AttrConstraint = field(
        default_factory=lambda: irdl_to_attr_constraint(ArrayAttr[IndexAttr])
    )

    @property
    def fast_equivalent(self) -> AttrConstraint:
        """What this constraint accepts, for ``fast_verify`` (which checks an
        array of instances inline)."""
        return self.elements

    def verify(self, attr: Attribute, constraint_context: VerificationContext) -> None:
        if isinstance(attr, ArrayAttr) and attr.__dict__.get("_label_list"):
            return
        self.elements.verify(attr, constraint_context)
        # A cache, not a parameter: attributes are frozen dataclasses.
        object.__setattr__(attr, "_label_list", True)

    def get_bases(self) -> set[type[Attribute]] | None:
        return self.elements.get_bases()

    def mapping_type_vars(
        self, type_var_mapping: Mapping[TypeVar, AttrConstraint | IntConstraint]
    ) -> LabelListConstraint:
        return self


LABEL_LIST = LabelListConstraint()


# --------------------------------------------------------------------------
# Helpers shared by the ops
# --------------------------------------------------------------------------


_SHARED_LIMIT = 65536
"""Bound on each table of shared attributes (cleared when full)."""
_INDEX_ARRAYS: dict[tuple[Index, ...], ArrayAttr[IndexAttr]] = {}
_SYMBOL_REFS: dict[str, SymbolRefAttr] = {}
_FACTORS: dict[tuple[object, ...], FactorAttr] = {}


def _index_array(indices: Sequence[Index | IndexAttr]) -> ArrayAttr[IndexAttr]:
    """The array attribute of a label list, one shared attribute per distinct
    list of ``Index`` (attributes are immutable values): IR repeats few label
    lists many times, and a shared array is built and checked once."""
    if all(isinstance(i, Index) for i in indices):
        key = cast(tuple[Index, ...], tuple(indices))
        found = _INDEX_ARRAYS.get(key)
        if found is None:
            if len(_INDEX_ARRAYS) >= _SHARED_LIMIT:
                _INDEX_ARRAYS.clear()
            found = _INDEX_ARRAYS[key] = ArrayAttr(IndexAttr.of(i) for i in key)
        return found
    return ArrayAttr(
        i if isinstance(i, IndexAttr) else IndexAttr.of(i) for i in indices
    )


_ROLE_ARRAYS: dict[tuple[LoopRole, ...], ArrayAttr[RoleAttr]] = {}


def _role_array(roles: tuple[LoopRole, ...]) -> ArrayAttr[RoleAttr]:
    """The (shared) array attribute of a list of roles."""
    found = _ROLE_ARRAYS.get(roles)
    if found is None:
        if len(_ROLE_ARRAYS) >= _SHARED_LIMIT:
            _ROLE_ARRAYS.clear()
        found = _ROLE_ARRAYS[roles] = ArrayAttr([_ROLE_ATTRS[role] for role in roles])
    return found


def _symbol_ref(name: str) -> SymbolRefAttr:
    """The (shared) ``@name`` attribute."""
    found = _SYMBOL_REFS.get(name)
    if found is None:
        if len(_SYMBOL_REFS) >= _SHARED_LIMIT:
            _SYMBOL_REFS.clear()
        found = _SYMBOL_REFS[name] = SymbolRefAttr(name)
    return found


def shared_factor(
    symbol: str, indices: Sequence[Index], protos: Sequence[tuple[Index, Index]]
) -> FactorAttr:
    """The (shared) factor attribute of ``@symbol [indices] protos [...]``."""
    key = (symbol, tuple(indices), tuple(protos))
    found = _FACTORS.get(key)
    if found is None:
        if len(_FACTORS) >= _SHARED_LIMIT:
            _FACTORS.clear()
        found = _FACTORS[key] = FactorAttr(symbol, indices, protos)
    return found


class ConsistentShapes:
    """Tuples of immutable attributes already found consistent by a check,
    kept across verifications (xdsl-opt verifies after parsing and after
    every pass; a pass such as ``classify-axes`` leaves the checked
    attributes as they were).

    An entry is looked up by the identities of its attributes and keeps the
    attributes themselves alive: while it exists no other object can have
    one of those identities, so a key matches only the very attributes it was
    made from, and attributes never change. Only successes are kept: a shape
    that fails is checked again and reports its error every time. Bounded
    (cleared when full)."""

    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: dict[tuple[int, ...], tuple[object, ...]] = {}

    def __contains__(self, shape: tuple[object, ...]) -> bool:
        return tuple(map(id, shape)) in self.entries

    def add(self, shape: tuple[object, ...]) -> None:
        """Record ``shape`` (a tuple of attributes) as consistent."""
        if len(self.entries) >= _SHARED_LIMIT:
            self.entries.clear()
        self.entries[tuple(map(id, shape))] = shape


_Labels = ArrayAttr[IndexAttr]
_Factors = ArrayAttr[FactorAttr]

_CONSISTENT_VALUES = ConsistentShapes()
"""``batch.value`` frames found consistent: result, contracted, leaf or
not, the factor attributes (``ValueOp._check_frame`` reads only these)."""
_CONSISTENT_FACTORS = ConsistentShapes()
"""Factor lists whose factor maps derive: the list, then each factor
value's result (``ForestTable.check_factors``)."""
_CONSISTENT_USES = ConsistentShapes()
"""Use-sites found consistent: the value's result and factor list, the
use-site's carried list and proto map, then per factor use-site its symbol,
carried list, proto map and its value's result (all ``_check_use`` reads)."""


def labels_of(array: ArrayAttr[IndexAttr]) -> tuple[Index, ...]:
    """The parsed labels of a label list (raises ``ValueError`` for a
    malformed one), kept on the (immutable, usually shared) attribute."""
    found = array.__dict__.get("_labels")
    if found is None:
        found = tuple(a.index for a in array.data)
        # A cache, not a parameter: attributes are frozen dataclasses.
        object.__setattr__(array, "_labels", found)
    return found


def ops_of(region: Region) -> list[Operation]:
    """The ops of the first block of ``region`` (none without a block), in
    order: the linked list read directly, without xDSL's view and iterator
    objects (the reader and the verifier visit every op of a forest)."""
    found: list[Operation] = []
    block = region.first_block
    op = None if block is None else block.first_op
    while op is not None:
        found.append(op)
        op = op.next_op
    return found


def _checked_indices(
    op: Operation, what: str, array: ArrayAttr[IndexAttr]
) -> list[Index]:
    """Parse every label of ``array``; a malformed one is a ``VerifyException``.

    Checked once per distinct array: the result is kept on the (immutable,
    usually shared) attribute."""
    known = array.__dict__.get("_checked_indices")
    if known is not None:
        return known
    indices: list[Index] = []
    for attr in array.data:
        try:
            indices.append(attr.index)
        except ValueError as error:
            raise VerifyException(
                f"{op.name}: malformed index in {what}: {error}"
            ) from None
    # A cache, not a parameter: attributes are frozen dataclasses.
    object.__setattr__(array, "_checked_indices", indices)
    return indices


def _int_attr(value: int, what: str) -> IntegerAttr:
    """An ``i64`` attribute; a value that does not fit is an error naming
    ``what`` (xDSL's own says only "out of range for type i64")."""
    if abs(value) > I64_MAX:
        raise VerifyException(f"{what} does not fit in i64 (|value| > {I64_MAX})")
    return IntegerAttr(value, i64)


def _parse_int(parser: Parser, what: str) -> int:
    """An integer that fits the op's ``i64`` property; else a located error."""
    return parse_int(parser, what)


# --------------------------------------------------------------------------
# Custom assembly-format directives (labels and texts are not MLIR tokens)
# --------------------------------------------------------------------------


class _SpaceKeyBase(CustomDirective):
    """An index-space key, bare (``i``, ``Κ``, ``μ̃``) or quoted; subclasses
    say which attribute holds it."""

    key: AttributeVariable

    def _attr(self, key: str) -> Attribute:
        raise NotImplementedError

    def _text(self, attr: Attribute) -> str:
        raise NotImplementedError

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.key.set(state, self._attr(parse_key(parser)))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        attr = self.key.get(op)
        assert attr is not None
        key = self._text(attr)
        state.print_whitespace(printer)
        printer.print_string(key if key[0].isalpha() else quote_text(key))


@irdl_custom_directive
class SpaceKey(_SpaceKeyBase):
    """An index-space key held as a :class:`TextAttr`."""

    key: AttributeVariable  # parameters are read from the class's own fields

    def _attr(self, key: str) -> Attribute:
        return TextAttr(key)

    def _text(self, attr: Attribute) -> str:
        assert isinstance(attr, TextAttr)
        return attr.data


@irdl_custom_directive
class IndexSpaceKey(_SpaceKeyBase):
    """An index-space key held as an :class:`IndexAttr` (``batch.space``)."""

    key: AttributeVariable  # parameters are read from the class's own fields

    def _attr(self, key: str) -> Attribute:
        return IndexAttr(key)

    def _text(self, attr: Attribute) -> str:
        assert isinstance(attr, IndexAttr)
        return attr.label.data


@irdl_custom_directive
class Label(CustomDirective):
    """One index label (``Κ_1``, ``a_1<i_1,i_2>``), quoted only if the lexer
    cannot start it."""

    index: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        self.index.set(state, IndexAttr.of(parse_index(parser)))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        attr = self.index.get(op)
        assert isinstance(attr, IndexAttr)
        state.print_whitespace(printer)
        printer.print_string(print_label(attr.index))


@irdl_custom_directive
class OperatorTexts(AttributeAnchor):
    """``["Ŝ{a_1,a_2;i_1,i_2}", ...]``: SeQuant operators, as written."""

    operators: AttributeVariable

    def check(self, parser: Parser, state: ParsingState, texts: list[str]) -> None:
        """Refuse malformed operators when parsed (none here: the verifier's)."""

    def parse(self, parser: Parser, state: ParsingState) -> None:
        texts = parser.parse_comma_separated_list(
            parser.Delimiter.SQUARE, lambda: parse_text(parser, "an operator")
        )
        self.check(parser, state, texts)
        self.operators.set(state, ArrayAttr([TextAttr(text) for text in texts]))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        texts = cast(
            ArrayAttr[TextAttr], self.operators.get(op)
        )  # the property's constraint
        state.print_whitespace(printer)
        printer.print_string(f"[{', '.join(quote_text(t.data) for t in texts)}]")


@irdl_custom_directive
class ProtoPairs(CustomDirective):
    """The optional ``protos [mode = label, ...]`` clause."""

    protos: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        pairs = parse_proto_pairs(parser)
        if pairs:
            self.protos.set(state, ProtoMapAttr(pairs))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        protos = self.protos.get(op)
        if isinstance(protos, ProtoMapAttr) and protos.pairs:
            state.print_whitespace(printer)
            printer.print_string(print_proto_pairs(protos.pairs).lstrip())


@irdl_custom_directive
class Coefficient(CustomDirective):
    """``-1/2``: a rational coefficient (numerator and denominator
    properties); present when it is not 1."""

    numerator: AttributeVariable
    denominator: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        negative = parser.parse_optional_punctuation("-") is not None
        numerator = _parse_int(parser, f"{state.op_type.name} coefficient")
        denominator = 1
        if parser.parse_optional_punctuation("/"):
            at = parser.pos
            denominator = _parse_int(
                parser, f"{state.op_type.name} coefficient denominator"
            )
            if denominator <= 0:
                parser.raise_error(
                    "coefficient denominator must be positive", at, parser.pos
                )
        coeff = Fraction(-numerator if negative else numerator, denominator)
        self.numerator.set(state, IntegerAttr(coeff.numerator, i64))
        self.denominator.set(state, IntegerAttr(coeff.denominator, i64))

    def _coeff(self, op: IRDLOperation) -> Fraction:
        numerator = self.numerator.get(op)
        denominator = self.denominator.get(op)
        assert isinstance(numerator, IntegerAttr)
        assert isinstance(denominator, IntegerAttr)
        return Fraction(numerator.value.data, denominator.value.data)

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        state.print_whitespace(printer)
        printer.print_string(str(self._coeff(op)))

    def is_present(self, op: IRDLOperation) -> bool:
        return self._coeff(op) != 1

    def is_anchorable(self) -> bool:
        return True

    def set_empty(self, state: ParsingState) -> None:
        self.numerator.set(state, IntegerAttr(1, i64))
        self.denominator.set(state, IntegerAttr(1, i64))


@irdl_custom_directive
class CompositeExtents(CustomDirective):
    """``{2 = 40, 3 = 12}``: extents per composite kind (number of protos)."""

    composite: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        parser.parse_punctuation("{")
        extents: dict[int, int] = {}
        while True:
            at = parser.pos
            protos = _parse_int(parser, "the number of protos of a composite kind")
            if protos in extents:
                parser.raise_error(f"composite kind {protos} given twice", at)
            parser.parse_punctuation("=")
            extents[protos] = _parse_int(parser, "a composite extent")
            if not parser.parse_optional_punctuation(","):
                break
        parser.parse_punctuation("}")
        table = {
            str(protos): IntegerAttr(size, i64)
            for protos, size in sorted(extents.items())
        }
        self.composite.set(state, DictionaryAttr(table))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        assert isinstance(op, SpaceOp)
        table = ", ".join(f"{p} = {n}" for p, n in op.composite_extents)
        state.print_whitespace(printer)
        printer.print_string(f"{{{table}}}")

    def is_present(self, op: IRDLOperation) -> bool:
        return isinstance(op, SpaceOp) and bool(op.composite_extents)

    def is_anchorable(self) -> bool:
        return True


@irdl_custom_directive
class Text(AttributeAnchor):
    """A string literal held as a :class:`TextAttr` (Unicode kept readable)."""

    text: AttributeVariable

    def parse(self, parser: Parser, state: ParsingState) -> None:
        what = f"the {self.text.name} of {state.op_type.name}"
        self.text.set(state, TextAttr(parse_text(parser, what)))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        text = self.text.get(op)
        assert isinstance(text, TextAttr)
        state.print_whitespace(printer)
        printer.print_string(quote_text(text.data))


@irdl_custom_directive
class Factors(ListAnchor):
    """``@x [i_1, a_1] * @y [a_1, i_2]``: the two factors of a contraction,
    each with its labels and optional ``protos [...]``."""

    factors: AttributeVariable

    @staticmethod
    def _parse_factor(parser: Parser) -> FactorAttr:
        symbol = parser.parse_symbol_name().data
        indices = parse_index_list(parser)
        return shared_factor(symbol, indices, parse_proto_pairs(parser))

    @staticmethod
    def _factor_text(factor: FactorAttr) -> str:
        labels = print_index_list([a.index for a in factor.indices.data])
        return f"@{factor.symbol} {labels}{print_proto_pairs(factor.protos.pairs)}"

    def parse(self, parser: Parser, state: ParsingState) -> None:
        first = self._parse_factor(parser)
        parser.parse_punctuation("*", " between the two factors")
        self.factors.set(state, ArrayAttr([first, self._parse_factor(parser)]))

    def print(self, printer: Printer, state: PrintingState, op: IRDLOperation) -> None:
        factors = cast(
            ArrayAttr[FactorAttr], self.factors.get(op)
        )  # the property's constraint
        state.print_whitespace(printer)
        printer.print_string(" * ".join(self._factor_text(f) for f in factors.data))


@irdl_custom_directive
class ValueKeywords(UnknownKeyword):
    """A misspelt clause of ``batch.value``: ``contracted``, then ``leaf``
    (with ``symmetry``) or ``=`` and the factors."""

    EXPECTED = ("contracted", "leaf", "=")

    def expected(self, state: ParsingState) -> tuple[str, ...]:
        properties = state.properties
        if "tensor" in properties:
            return ("symmetry",)
        factors = properties.get("factors")
        if isinstance(factors, ArrayAttr) and factors.data:
            return ()
        contracted = properties.get("contracted")
        if isinstance(contracted, ArrayAttr) and contracted.data:
            return ("leaf", "=")
        return self.EXPECTED

    def parse(self, parser: Parser, state: ParsingState) -> None:
        if "symmetry" not in state.properties:  # nothing may follow it but attributes
            super().parse(parser, state)


@irdl_custom_directive
class SpaceKeywords(UnknownKeyword):
    """A misspelt clause of ``batch.space``."""

    EXPECTED = ("extent", "elem", "composite")
    CLAUSES = ("extent", "elem", "composite")


@irdl_custom_directive
class TreeKeywords(UnknownKeyword):
    """A misspelt clause of ``batch.tree``."""

    EXPECTED = ("coeff", "operators")
    THEN = ("a region", *END_OF_OP)

    def expected(self, state: ParsingState) -> tuple[str, ...]:
        numerator = state.properties.get("coeff_num")
        denominator = state.properties.get("coeff_den")
        given = (numerator, denominator) != (IntegerAttr(1, i64), IntegerAttr(1, i64))
        return ("operators",) if given else self.EXPECTED


@irdl_custom_directive
class LoopKeywords(UnknownKeyword):
    """A misspelt ``slot`` of ``batch.loop`` (where no region follows)."""

    EXPECTED = ("slot",)
    THEN = ("a region", *END_OF_OP)
    CLAUSES = ("slot",)


# --------------------------------------------------------------------------
# Operations
# --------------------------------------------------------------------------


@irdl_op_definition
class SpaceOp(FastVerifiedOp):
    """An index space: ``batch.space a extent 896 elem 8 composite {2 = 40}``.

    ``extent`` (number of orbitals/functions) and ``elem`` (bytes per tensor
    element) are optional; memory accounting uses documented defaults.
    ``composite`` gives extents per composite kind, by number of protos: a
    composite ``a_1<i_1,i_2>`` of this space has extent 40 above (a kind not
    listed keeps the space's extent). It is a property holding a builtin
    dictionary (``composite = {"2" = 40 : i64}`` in the generic form), so
    MLIR reads it.
    """

    name = "batch.space"

    key = prop_def(IndexAttr)
    extent = opt_prop_def(IntegerAttr)
    elem = opt_prop_def(IntegerAttr)
    composite = opt_prop_def(DictionaryAttr)

    traits = lazy_traits_def(lambda: (HasParent(ForestOp),))

    custom_directives = (IndexSpaceKey, I64Integer, CompositeExtents, SpaceKeywords)
    assembly_format = (
        "custom<IndexSpaceKey>($key) (`extent` custom<I64Integer>($extent)^)? "
        "(`elem` custom<I64Integer>($elem)^)? "
        "(`composite` custom<CompositeExtents>($composite)^)? "
        "custom<SpaceKeywords>() attr-dict"
    )

    def __init__(
        self,
        key: str,
        extent: int | None = None,
        elem: int | None = None,
        composites: Sequence[tuple[int, int]] = (),
    ):
        table = {
            str(protos): _int_attr(size, f"batch.space {key}: composite extent")
            for protos, size in sorted(composites)
        }
        super().__init__(
            properties={
                "key": IndexAttr(key),
                "extent": None
                if extent is None
                else _int_attr(extent, f"batch.space {key}: extent"),
                "elem": None
                if elem is None
                else _int_attr(elem, f"batch.space {key}: elem"),
                "composite": DictionaryAttr(table) if table else None,
            }
        )

    @property
    def composite_extents(self) -> tuple[tuple[int, int], ...]:
        """``(number of protos, extent)`` per composite kind, sorted."""
        if self.composite is None:
            return ()
        found: list[tuple[int, int]] = []
        for protos, size in self.composite.data.items():
            if not (protos.isascii() and protos.isdigit()) or not isinstance(
                size, IntegerAttr
            ):
                continue  # reported by verify_
            found.append((int(protos), size.value.data))
        return tuple(sorted(found))

    @property
    def extent_value(self) -> int | None:
        """The extent, if given."""
        return None if self.extent is None else self.extent.value.data

    @property
    def elem_value(self) -> int | None:
        """The element size in bytes, if given."""
        return None if self.elem is None else self.elem.value.data

    @property
    def space_key(self) -> str:
        """The base key of the space (``i``, ``Κ``, ``μ̃``)."""
        return self.key.label.data

    def verify_own(self) -> None:
        key = self.space_key
        if not key or not all(is_key_char(c) for c in key):
            raise VerifyException(f"batch.space: malformed index-space key {key!r}")
        for what, value in (("extent", self.extent_value), ("elem", self.elem_value)):
            if value is not None and value <= 0:
                raise VerifyException(
                    f"batch.space {key}: {what} must be positive, got {value}"
                )
        if self.composite is not None:
            for protos, size in self.composite.data.items():
                if not (protos.isascii() and protos.isdigit()) or int(protos) == 0:
                    raise VerifyException(
                        f"batch.space {key}: composite kind {protos!r} must be a "
                        "positive number of protos"
                    )
                if not isinstance(size, IntegerAttr) or size.value.data <= 0:
                    raise VerifyException(
                        f"batch.space {key}: extent of composite kind {protos} "
                        "must be a positive integer"
                    )


@irdl_op_definition
class ValueOp(FastVerifiedOp):
    """A value of the forest, in its own index frame.

    ``batch.value @v [i_1, i_2] contracted [a_1] = @x [i_1, a_1] * @y [a_1, i_2]``
    (a pairwise contraction), ``batch.value @t [a_1, i_1] leaf "t"`` (an input
    tensor, optional ``symmetry "N-N-S"``) or ``batch.value @w [i_1]`` (opaque:
    only its indices are known). ``contracted`` lists the indices summed at
    this node (on both factors, absent from the result).
    """

    name = "batch.value"

    sym_name = prop_def(SymbolNameConstraint())
    result = prop_def(LABEL_LIST)
    contracted = prop_def(LABEL_LIST)
    tensor = opt_prop_def(TextAttr)
    symmetry = opt_prop_def(TextAttr)
    factors = prop_def(ArrayAttr[FactorAttr])

    traits = lazy_traits_def(lambda: (HasParent(ForestOp),))

    custom_directives = (IndexList, NonEmptyIndexList, Text, Factors, ValueKeywords)
    assembly_format = (
        "$sym_name custom<IndexList>($result) "
        "(`contracted` custom<NonEmptyIndexList>($contracted)^)? "
        "(`leaf` custom<Text>($tensor)^ (`symmetry` custom<Text>($symmetry)^)?) : "
        "((`=` custom<Factors>($factors)^)?)? custom<ValueKeywords>() attr-dict"
    )

    def __init__(
        self,
        sym_name: str,
        result: Sequence[Index | IndexAttr],
        contracted: Sequence[Index | IndexAttr] = (),
        *,
        tensor: str | None = None,
        symmetry: str | None = None,
        factors: Sequence[FactorAttr] = (),
    ):
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "result": _index_array(result),
                "contracted": _index_array(contracted),
                "tensor": None if tensor is None else TextAttr(tensor),
                "symmetry": None if symmetry is None else TextAttr(symmetry),
                "factors": ArrayAttr(factors),
            }
        )

    @property
    def value_name(self) -> str:
        """The symbol name (without ``@``)."""
        return self.sym_name.data

    @property
    def result_indices(self) -> tuple[Index, ...]:
        """Result indices (labels of the value's own frame)."""
        return labels_of(self.result)

    @property
    def contracted_indices(self) -> tuple[Index, ...]:
        """Indices contracted at this node."""
        return labels_of(self.contracted)

    @property
    def is_leaf(self) -> bool:
        """Whether this is an input tensor."""
        return self.tensor is not None

    def verify_own(self) -> None:
        # The rules below depend only on these (shared, immutable) attributes.
        shape = (
            self.result,
            self.contracted,
            self.tensor is None,
            *self.factors.data,
        )
        if shape in _CONSISTENT_VALUES:
            return
        self._check_frame()
        _CONSISTENT_VALUES.add(shape)

    def _check_frame(self) -> None:
        name = f"batch.value @{self.value_name}"
        result = _checked_indices(self, "the result", self.result)
        contracted = _checked_indices(self, "the contracted indices", self.contracted)
        _no_duplicates(name, "result", result)
        _no_duplicates(name, "contracted", contracted)
        if set(result) & set(contracted):
            both = sorted(set(result) & set(contracted))
            raise VerifyException(f"{name}: {both[0]} is both a result and contracted")
        factors = self.factors.data
        if factors and self.tensor is not None:
            raise VerifyException(f"{name}: a leaf tensor cannot have factors")
        if factors and len(factors) != 2:
            raise VerifyException(
                f"{name}: a contraction has exactly 2 factors, got {len(factors)}"
            )
        if not factors:
            return
        left = _checked_indices(self, "factor 1", factors[0].indices)
        right = _checked_indices(self, "factor 2", factors[1].indices)
        # An index is on a factor when it is one of the factor's modes (a proto
        # counts: the factor depends on it); a proto of a result composite
        # stays in the result, it is not summed.
        on_both = set(expand_modes(left)) & set(expand_modes(right))
        result_modes = set(expand_modes(result))
        expected = {i for i in (*left, *right) if i in on_both} - result_modes
        if set(contracted) != expected:
            raise VerifyException(
                f"{name}: contracted indices must be those on both factors and not "
                f"modes of the result: expected {print_index_list(sorted(expected))}, "
                f"got {print_index_list(contracted)}"
            )
        available = set(left) | set(right)
        for index in result:
            if index not in available and index not in on_both:
                raise VerifyException(f"{name}: result index {index} is on no factor")
        # In the factors' order: a set's order would change with PYTHONHASHSEED.
        for index in (*left, *right):
            if index not in on_both and index not in result_modes:
                raise VerifyException(
                    f"{name}: index {index} is on one factor only and not in the "
                    "result (an index is either kept or contracted between the two "
                    "factors)"
                )


def _no_duplicates(name: str, what: str, indices: Sequence[Index]) -> None:
    seen: set[Index] = set()
    for index in indices:
        if index in seen:
            raise VerifyException(f"{name}: index {index} repeated in the {what}")
        seen.add(index)


def _at_most_one_block(op: Operation, region: Region) -> None:
    block = region.first_block
    if block is None:
        return
    if block.next_block is not None:
        raise VerifyException(f"{op.name}: the body has at most one block")
    if block.args:
        raise VerifyException(f"{op.name}: the body takes no block arguments")


@irdl_op_definition
class TreeOp(FastVerifiedOp):
    """One evaluation tree (a term): ``batch.tree @term0 coeff -1/2 { ... }``;
    ``operators ["Ŝ{a_1,a_2;i_1,i_2}"]`` lists the SeQuant operators applied
    to the term (``docs/residual.md``)."""

    name = "batch.tree"

    sym_name = prop_def(SymbolNameConstraint())
    coeff_num = prop_def(IntegerAttr)
    coeff_den = prop_def(IntegerAttr)
    operators = opt_prop_def(ArrayAttr[TextAttr])
    body = region_def()

    traits = lazy_traits_def(lambda: (HasParent(ForestOp), NoTerminator()))

    custom_directives = (Coefficient, OperatorTexts, TreeKeywords, OptionalBody)
    assembly_format = (
        "$sym_name (`coeff` custom<Coefficient>($coeff_num, $coeff_den)^)? "
        "(`operators` custom<OperatorTexts>($operators)^) : (custom<TreeKeywords>())? "
        "custom<OptionalBody>($body) attr-dict"
    )

    def __init__(
        self,
        sym_name: str,
        coeff: Fraction | int = 1,
        body: Region | None = None,
        operators: Sequence[str] = (),
    ):
        coeff = Fraction(coeff)
        super().__init__(
            properties={
                "sym_name": StringAttr(sym_name),
                "coeff_num": _int_attr(
                    coeff.numerator, f"batch.tree @{sym_name}: coefficient numerator"
                ),
                "coeff_den": _int_attr(
                    coeff.denominator,
                    f"batch.tree @{sym_name}: coefficient denominator",
                ),
                "operators": ArrayAttr([TextAttr(o) for o in operators])
                if operators
                else None,
            },
            regions=[Region(Block()) if body is None else body],
        )

    @property
    def operator_texts(self) -> tuple[str, ...]:
        """The operators applied to the term, as written."""
        return () if self.operators is None else tuple(t.data for t in self.operators)

    @property
    def tree_name(self) -> str:
        """The symbol name (without ``@``)."""
        return self.sym_name.data

    @property
    def coeff(self) -> Fraction:
        """The term's rational coefficient."""
        return Fraction(self.coeff_num.value.data, self.coeff_den.value.data)

    def items(self) -> Iterator[Operation]:
        """The top-level items (uses and loops) of the tree."""
        return iter(ops_of(self.regions[0]))

    def verify_own(self) -> None:
        _at_most_one_block(self, self.body)
        if self.coeff_den.value.data <= 0:
            raise VerifyException(
                f"batch.tree @{self.tree_name}: coefficient denominator must be "
                "positive"
            )


@irdl_op_definition
class LoopOp(FastVerifiedOp):
    """A batch loop binding one index label: ``batch.loop Κ_1 slot 0 { ... }``.

    It iterates over blocks of the label's index space and encloses part of a
    tree. Loops of different trees fused into one physical loop share a
    ``slot`` (instance number).
    """

    name = "batch.loop"

    index = prop_def(IndexAttr)
    slot = opt_prop_def(IntegerAttr)
    body = region_def()

    traits = lazy_traits_def(lambda: (HasParent(TreeOp, LoopOp, UseOp), NoTerminator()))

    custom_directives = (Label, I64Integer, LoopKeywords, OptionalBody)
    assembly_format = (
        "custom<Label>($index) (`slot` custom<I64Integer>($slot)^)? "
        "custom<LoopKeywords>() custom<OptionalBody>($body) attr-dict"
    )

    def __init__(
        self,
        index: Index | IndexAttr,
        slot: int | None = None,
        body: Region | None = None,
    ):
        super().__init__(
            properties={
                "index": index if isinstance(index, IndexAttr) else IndexAttr(index),
                "slot": None if slot is None else _int_attr(slot, "batch.loop slot"),
            },
            regions=[Region(Block()) if body is None else body],
        )

    @property
    def loop_index(self) -> Index:
        """The bound index label."""
        return self.index.index

    @property
    def slot_value(self) -> int | None:
        """The fusion slot, if given."""
        return None if self.slot is None else self.slot.value.data

    def items(self) -> Iterator[Operation]:
        """The items (uses and loops) directly inside the loop."""
        return iter(ops_of(self.regions[0]))

    def verify_own(self) -> None:
        _at_most_one_block(self, self.body)
        _checked_indices(self, "the loop index", ArrayAttr([self.index]))
        if self.slot_value is not None and self.slot_value < 0:
            raise VerifyException(
                f"batch.loop {self.index.label.data}: slot must be non-negative"
            )
        table = ForestTable.of(self)
        if table is not None and table.spaces:
            key = self.loop_index.base_key
            if key not in table.spaces:
                raise VerifyException(
                    f"batch.loop {self.loop_index}: loop over undeclared index space "
                    f"{key!r} (declare it with batch.space)"
                )


@irdl_op_definition
class UseOp(FastVerifiedOp):
    """A use-site: ``batch.use @v [i_3, a_2] { <factor use-sites> }``.

    The indices are those the value carries here, in the tree's own labels.
    The region holds the use-sites of the value's two factors (possibly inside
    loops) when the value is a contraction, and is empty otherwise.
    """

    name = "batch.use"

    value = prop_def(FlatSymbolRefAttr)
    carried = prop_def(LABEL_LIST)
    protos = opt_prop_def(ProtoMapAttr)
    body = region_def()

    traits = lazy_traits_def(lambda: (HasParent(TreeOp, LoopOp, UseOp), NoTerminator()))

    custom_directives = (SharedSymbol, IndexList, ProtoPairs, NonEmptyBody)
    assembly_format = (
        "custom<SharedSymbol>($value) custom<IndexList>($carried) "
        "custom<ProtoPairs>($protos) "
        "custom<NonEmptyBody>($body) attr-dict"
    )

    def __init__(
        self,
        value: str,
        carried: Sequence[Index | IndexAttr],
        body: Region | None = None,
        protos: Sequence[tuple[Index, Index]] = (),
    ):
        super().__init__(
            properties={
                "value": _symbol_ref(value),
                "carried": _index_array(carried),
                "protos": ProtoMapAttr(protos) if protos else None,
            },
            regions=[Region() if body is None else body],
        )

    @property
    def proto_pairs(self) -> tuple[tuple[Index, Index], ...]:
        """Explicit pairings: the value's proto modes with their labels here."""
        return () if self.protos is None else self.protos.pairs

    @property
    def value_name(self) -> str:
        """The used value's symbol name (without ``@``)."""
        return self.value.root_reference.data

    @property
    def carried_indices(self) -> tuple[Index, ...]:
        """The indices the value carries at this use-site."""
        return labels_of(self.carried)

    def items(self) -> Iterator[Operation]:
        """The items (uses and loops) directly inside the use-site's region."""
        return iter(ops_of(self.regions[0]))

    def factor_uses(self) -> list[UseOp]:
        """The use-sites of the factors, looking through loops."""
        found: list[UseOp] = []
        stack = ops_of(self.regions[0])
        stack.reverse()
        while stack:
            item = stack.pop()
            if isinstance(item, UseOp):
                found.append(item)
            elif isinstance(item, LoopOp):
                inner = ops_of(item.regions[0])
                inner.reverse()
                stack.extend(inner)
        return found

    def verify_own(self) -> None:
        _at_most_one_block(self, self.regions[0])
        properties = self.properties
        carried = _checked_indices(
            self, "the carried indices", cast(_Labels, properties["carried"])
        )
        table = ForestTable.of(self)
        if table is None:
            return
        name = cast(SymbolRefAttr, properties["value"]).root_reference.data
        value = table.values.get(name)
        if value is None:
            raise VerifyException(f"batch.use @{name}: use of unknown value @{name}")
        table.check_use(self, value, carried)


@irdl_op_definition
class ForestOp(FastVerifiedOp):
    """A forest: index spaces, values and trees, ``batch.forest @name { ... }``.

    Its verifier builds the symbol and space tables once; the nested ops'
    verifiers look names up in them (no quadratic verification).
    """

    name = "batch.forest"

    sym_name = opt_prop_def(SymbolNameConstraint())
    body = region_def("single_block")

    traits = traits_def(NoTerminator())

    custom_directives = (Body,)
    assembly_format = "$sym_name attr-dict-with-keyword custom<Body>($body)"

    def __init__(
        self, body: Region | Sequence[Operation] = (), sym_name: str | None = None
    ):
        if not isinstance(body, Region):
            body = Region(Block(body))
        super().__init__(
            properties={"sym_name": None if sym_name is None else StringAttr(sym_name)},
            regions=[body],
        )

    def spaces(self) -> Iterator[SpaceOp]:
        """The declared index spaces."""
        return (op for op in self.body.block.ops if isinstance(op, SpaceOp))

    def values(self) -> Iterator[ValueOp]:
        """The values, in definition order."""
        return (op for op in self.body.block.ops if isinstance(op, ValueOp))

    def trees(self) -> Iterator[TreeOp]:
        """The trees, in order."""
        return (op for op in self.body.block.ops if isinstance(op, TreeOp))

    def verify(self, verify_nested_ops: bool = True) -> None:
        if len(self.body.blocks) != 1:
            # No table without the one block (an empty region in generic
            # form): xDSL's own check reports it, at this op.
            super().verify(verify_nested_ops)
            return
        # The collector paused: verifying allocates only short-lived acyclic
        # objects (freed by reference counting), and a full collection
        # started here would scan the whole parsed module for nothing.
        with gc_paused():
            table = ForestTable.build(self)
            ForestTable.active.append(table)
            try:
                super().verify(verify_nested_ops)
            finally:
                ForestTable.active.pop()

    def verify_own(self) -> None:
        table = ForestTable.of(self)
        if table is not None:
            table.check_factors()


# --------------------------------------------------------------------------
# Per-forest tables for verification
# --------------------------------------------------------------------------


@dataclass
class ForestTable:
    """Symbol and space tables of one forest, built once per verification."""

    forest: ForestOp
    values: dict[str, ValueOp] = field(default_factory=dict[str, ValueOp])
    spaces: dict[str, SpaceOp] = field(default_factory=dict[str, SpaceOp])
    factor_maps: dict[tuple[str, int], dict[Index, Index]] = field(
        default_factory=dict[tuple[str, int], dict[Index, Index]]
    )

    site_maps: dict[tuple[int, int, int], dict[Index, Index]] = field(
        default_factory=dict[tuple[int, int, int], dict[Index, Index]]
    )
    """Mode maps of use-sites, by the identities of the value's result list
    and the use-site's carried list and proto map (``site_map``)."""

    active: ClassVar[list[ForestTable]] = []
    """Tables of the forests being verified (innermost last)."""

    @staticmethod
    def build(forest: ForestOp) -> ForestTable:
        """Index the forest; duplicate names are reported at the second one."""
        table = ForestTable(forest)
        for op in forest.body.block.ops:
            if isinstance(op, ValueOp):
                name = op.value_name
                if name in table.values:
                    _fail_at(op, f"batch.value @{name}: duplicate value name @{name}")
                table.values[name] = op
            elif isinstance(op, SpaceOp):
                key = op.space_key
                if key in table.spaces:
                    _fail_at(op, f"batch.space {key}: duplicate index space {key!r}")
                table.spaces[key] = op
        return table

    @staticmethod
    def of(op: Operation) -> ForestTable | None:
        """The table of the forest enclosing ``op`` (built if not verifying).

        While a forest verifies, its table is reached directly: the ops its
        verifier visits are its own, so no walk up the parents."""
        if ForestTable.active:
            return ForestTable.active[-1]
        forest = op if isinstance(op, ForestOp) else None
        parent = op.parent_op()
        while forest is None and parent is not None:
            if isinstance(parent, ForestOp):
                forest = parent
            parent = parent.parent_op()
        if forest is None:
            return None
        for table in reversed(ForestTable.active):
            if table.forest is forest:
                return table
        return ForestTable.build(forest)

    def check_factors(self) -> None:
        """Every factor names a known value; no value depends on itself."""
        # Per value with factors: the attributes its factor maps derive from
        # (its factor list, each factor value's result), in the order of the
        # values; the maps of a shape found consistent before are.
        shapes: list[tuple[ValueOp, tuple[object, ...]]] = []
        for value in self.values.values():
            factors = cast(_Factors, value.properties["factors"])
            if not factors.data:
                continue
            shape: list[object] = [factors]
            for factor in factors.data:
                known = self.values.get(factor.symbol)
                if known is None:
                    _fail_at(
                        value,
                        f"batch.value @{value.value_name}: factor names unknown value "
                        f"@{factor.symbol}",
                    )
                known_result = cast(_Labels, known.properties["result"])
                if len(factor.indices.data) != len(known_result.data):
                    _fail_at(
                        value,
                        f"batch.value @{value.value_name}: factor @{factor.symbol} "
                        f"carries {len(factor.indices.data)} indices, but the value "
                        f"has {len(known_result.data)}",
                    )
                shape.append(known_result)
            shapes.append((value, tuple(shape)))
        self._check_acyclic()
        for value, attributes in shapes:
            if attributes in _CONSISTENT_FACTORS:
                continue
            for factor in value.factors.data:
                try:
                    self.factor_map(value, factor)
                except FrameError as error:
                    _fail_at(value, str(error))
            _CONSISTENT_FACTORS.add(attributes)

    def factor_map(self, value: ValueOp, factor: FactorAttr) -> dict[Index, Index]:
        """Factor modes -> the value's node modes (cached per factor)."""
        key = (value.value_name, id(factor))
        found = self.factor_maps.get(key)
        if found is None:
            found = mode_map(
                self.values[factor.symbol].result_indices,
                [a.index for a in factor.indices.data],
                factor.protos.pairs,
                f"batch.value @{value.value_name}: factor @{factor.symbol}",
            )
            self.factor_maps[key] = found
        return found

    def site_map(self, value: ValueOp, use: UseOp, where: str) -> dict[Index, Index]:
        """The value's modes -> labels at a use-site of it, per distinct
        (result list, carried list, proto map) attributes: use-sites repeat
        them, and the attributes are shared and immutable."""
        key = (id(value.result), id(use.carried), id(use.protos))
        found = self.site_maps.get(key)
        if found is None:
            found = mode_map(
                value.result_indices, use.carried_indices, use.proto_pairs, where
            )
            self.site_maps[key] = found
        return found

    def _check_acyclic(self) -> None:
        state: dict[str, int] = {}  # 1 = on the DFS stack, 2 = done
        for root in self.values:
            if root in state:
                continue
            stack: list[tuple[str, int]] = [(root, 0)]
            state[root] = 1
            while stack:
                name, position = stack[-1]
                factors = cast(_Factors, self.values[name].properties["factors"]).data
                if position == len(factors):
                    state[name] = 2
                    stack.pop()
                    continue
                stack[-1] = (name, position + 1)
                child = factors[position].symbol
                if state.get(child) == 1:
                    _fail_at(
                        self.values[name],
                        f"batch.value @{name}: value @{child} depends on itself",
                    )
                if child not in state:
                    state[child] = 1
                    stack.append((child, 0))

    def check_use(self, use: UseOp, value: ValueOp, carried: list[Index]) -> None:
        """A use-site matches its value: arity, factor use-sites, relabelling."""
        # Properties read from the dictionaries (every use-site of every
        # verification comes here; the accessors cost a call each).
        value_properties = value.properties
        result = labels_of(cast(_Labels, value_properties["result"]))
        if len(carried) != len(result):
            raise VerifyException(
                f"batch.use @{value.value_name}: carries {len(carried)} indices, "
                f"but @{value.value_name} has {len(result)} "
                f"({print_index_list(result)})"
            )
        factor_uses = use.factor_uses()
        use_properties = use.properties
        # The check reads only these (shared, immutable) attributes: found
        # consistent once, in this verification or an earlier one, they are.
        shape: list[object] = [
            value_properties["result"],
            value_properties["factors"],
            use_properties["carried"],
            use_properties.get("protos"),
        ]
        values = self.values
        for factor_use in factor_uses:
            factor_properties = factor_use.properties
            symbol = cast(SymbolRefAttr, factor_properties["value"])
            factor_value = values.get(symbol.root_reference.data)
            if factor_value is None:  # reported at the factor use-site
                self._check_use(use, value, factor_uses)
                return
            shape += (
                symbol,
                factor_properties["carried"],
                factor_properties.get("protos"),
                factor_value.properties["result"],
            )
        consistent = tuple(shape)
        if consistent in _CONSISTENT_USES:
            return
        self._check_use(use, value, factor_uses)
        _CONSISTENT_USES.add(consistent)

    def _check_use(
        self,
        use: UseOp,
        value: ValueOp,
        factor_uses: list[UseOp],
    ) -> None:
        name = f"batch.use @{value.value_name}"
        factors = value.factors.data
        if len(factor_uses) != len(factors):
            raise VerifyException(
                f"{name}: expected {len(factors)} factor use-sites in its region, "
                f"found {len(factor_uses)}"
            )
        for factor, factor_use in zip(factors, factor_uses, strict=True):
            if factor_use.value_name != factor.symbol:
                raise VerifyException(
                    f"{name}: factor use-site names @{factor_use.value_name}, but "
                    f"@{value.value_name} is built from @{factor.symbol}"
                )
        try:
            site_map = self.site_map(value, use, name)
            if not factors:
                return
            child_maps = [
                self.site_map(
                    self.values[f.symbol], factor_use, f"batch.use @{f.symbol}"
                )
                for f, factor_use in zip(factors, factor_uses, strict=True)
            ]
            node_labels(
                site_map,
                [self.factor_map(value, f) for f in factors],
                child_maps,
                name,
            )
        except FrameError as error:
            raise VerifyException(str(error)) from None


def _fail_at(op: Operation, message: str) -> NoReturn:
    """Report ``message`` at ``op`` (annotated in the printed IR) and raise."""
    op.emit_error(message, VerifyException(message))


Batch = Dialect(
    "batch",
    [SpaceOp, ValueOp, TreeOp, LoopOp, UseOp, ForestOp],
    [
        IndexAttr,
        TextAttr,
        RoleAttr,
        AxisRolesAttr,
        AxisReasonsAttr,
        ProtoMapAttr,
        FactorAttr,
    ],
)
"""The ``batch`` dialect."""
