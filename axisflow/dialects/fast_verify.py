"""Verification that costs what it checks, for ops without operands or results.

xDSL's generic verifier (``Operation.verify`` with ``OpDef.verify``) re-derives
on every op what the op's definition allows: operand, result, region and
successor counts through the variadic machinery, each property's constraint,
each trait. For the ``batch`` and ``sched`` ops (no operands, results or
successors; fixed regions; properties shared between ops), that was about half
of what a verification of a forest costs.

``FastVerifiedOp`` checks the same rules directly and checks a property value
once per distinct attribute (attributes are immutable, and the dialects share
one attribute per distinct label list, symbol or factor). It only ever
*accepts* faster: an op that is not exactly of the shape the fast check
understands (an operand, a result, a successor, a missing, unknown or
ill-typed property, a block argument, several blocks, a parent its
``HasParent`` trait does not allow) is verified by xDSL's generic path, so
every diagnostic is xDSL's own, with the same order and wording. The order of
the checks is xDSL's too: nested ops first, then the op's definition, then its
own rules (``verify_own``).
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.dialects.builtin import (
    ArrayAttr,
    ArrayOfConstraint,
    FlatSymbolRefAttr,
    SymbolRefAttr,
)
from xdsl.ir import Attribute, Operation
from xdsl.irdl import (
    AttrConstraint,
    BaseAttr,
    IRDLOperation,
    OpDef,
    OptionalDef,
    OptPropertyDef,
    RangeOf,
    SingleBlockRegionDef,
    VariadicDef,
    VerificationContext,
    irdl_to_attr_constraint,
)
from xdsl.traits import HasParent, NoTerminator, OpTrait
from xdsl.utils.exceptions import VerifyException

from axisflow.xdsl_compat import has_operands, has_successors

_VERIFIED = "_fast_verified_by"
"""Key, in an attribute's ``__dict__``, of the ids of the constraints that
accepted it (a cache, not a parameter: attributes are frozen dataclasses; the
constraints belong to op definitions, which live as long as the process)."""


_BASE = 0
"""Property kind: an instance of a class (xDSL's ``BaseAttr``)."""
_ARRAY = 1
"""Property kind: an ``ArrayAttr`` of instances of a class (xDSL's
``ArrayOfConstraint`` over ``RangeOf(BaseAttr(...))``)."""
_FLAT_SYMBOL = 2
"""Property kind: a ``SymbolRefAttr`` without nested references (xDSL's
``FlatSymbolRefAttr`` constraint)."""
_OTHER = 3
"""Property kind: any other constraint, checked once per attribute."""

_FLAT_SYMBOL_CONSTRAINT = irdl_to_attr_constraint(FlatSymbolRefAttr)


def _kind_of(constraint: AttrConstraint) -> tuple[int, type[Attribute] | None]:
    """How the fast check tests a property of ``constraint``: a kind above
    and its class. Each kind accepts exactly what xDSL's constraint accepts
    (a constraint may name such an equivalent as ``fast_equivalent``)."""
    equivalent = getattr(constraint, "fast_equivalent", None)
    if isinstance(equivalent, AttrConstraint):
        constraint = equivalent
    if isinstance(constraint, BaseAttr):
        return _BASE, constraint.attr
    if (
        isinstance(constraint, ArrayOfConstraint)
        and isinstance(constraint.elem_range_constraint, RangeOf)
        and type(constraint.elem_range_constraint) is RangeOf
        and isinstance(constraint.elem_range_constraint.constr, BaseAttr)
    ):
        return _ARRAY, constraint.elem_range_constraint.constr.attr
    if constraint == _FLAT_SYMBOL_CONSTRAINT:
        return _FLAT_SYMBOL, None
    return _OTHER, None


@dataclass(frozen=True)
class _Shape:
    """What an op definition allows, precomputed for the fast check."""

    properties: tuple[
        tuple[str, int, type[Attribute] | None, AttrConstraint, bool], ...
    ]
    """(name, kind, class, constraint, optional) per property of the
    definition (``_kind_of``: the kinds other than ``_OTHER`` are checked
    inline)."""
    names: frozenset[str]
    regions: int
    single_block: tuple[bool, ...]
    parents: tuple[type[Operation], ...] | None
    """``HasParent``'s op types (``None``: no such trait)."""
    other_traits: tuple[OpTrait, ...]
    """Traits checked as xDSL does (all but ``HasParent`` and ``NoTerminator``)."""
    usable: bool
    """Whether the definition is simple enough for the fast check at all."""


def _shape_of(op_def: OpDef) -> _Shape:
    usable = not (
        op_def.operands
        or op_def.results
        or op_def.successors
        or op_def.attributes
        or op_def.options
        or any(isinstance(r, VariadicDef | OptionalDef) for _, r in op_def.regions)
    )
    parents: tuple[type[Operation], ...] | None = None
    others: list[OpTrait] = []
    for trait in op_def.traits:
        if isinstance(trait, HasParent):
            parents = (*(parents or ()), *trait.op_types)
        elif not isinstance(trait, NoTerminator):
            others.append(trait)
    has_no_terminator = any(isinstance(t, NoTerminator) for t in op_def.traits)
    if op_def.regions and not has_no_terminator:
        usable = False  # the empty-block and terminator rules apply
    return _Shape(
        tuple(
            (
                name,
                *_kind_of(prop.constr),
                prop.constr,
                isinstance(prop, OptPropertyDef),
            )
            for name, prop in op_def.properties.items()
        ),
        frozenset(op_def.properties),
        len(op_def.regions),
        tuple(isinstance(r, SingleBlockRegionDef) for _, r in op_def.regions),
        parents,
        tuple(others),
        usable,
    )


_SHAPES: dict[type[Operation], _Shape] = {}


def _accepts(constraint: AttrConstraint, attr: Attribute) -> bool:
    """Whether ``constraint`` accepts ``attr``, checked once per attribute."""
    cache = getattr(attr, "__dict__", None)
    seen: set[int] | None = None if cache is None else cache.get(_VERIFIED)
    if seen is not None and id(constraint) in seen:
        return True
    try:
        constraint.verify(attr, VerificationContext())
    except VerifyException:
        return False
    if cache is not None:
        if seen is None:
            seen = set[int]()
            # A cache, not a parameter: attributes are frozen dataclasses.
            object.__setattr__(attr, _VERIFIED, seen)
        seen.add(id(constraint))
    return True


_NO_TERMINATOR: dict[type[Operation], bool] = {}


def _needs_no_terminator(op: Operation) -> bool:
    cls = type(op)
    found = _NO_TERMINATOR.get(cls)
    if found is None:
        found = _NO_TERMINATOR[cls] = op.has_trait(NoTerminator)
    return found


def _structure_ok(op: Operation, shape: _Shape) -> bool:
    """Whether xDSL's generic verifier would accept ``op`` (children aside);
    ``False`` means "let xDSL decide", not "invalid"."""
    if not shape.usable or has_operands(op) or op.results or has_successors(op):
        return False
    properties = op.properties
    present = 0
    for name, kind, base, constraint, optional in shape.properties:
        attr = properties.get(name)
        if attr is None:
            if optional:
                continue
            return False
        present += 1
        if kind == _BASE:
            if not isinstance(attr, base):  # pyright: ignore[reportArgumentType]
                return False
        elif kind == _ARRAY:
            if not isinstance(attr, ArrayAttr):
                return False
            for element in attr.data:  # pyright: ignore[reportUnknownVariableType]
                if not isinstance(element, base):  # pyright: ignore[reportArgumentType]
                    return False
        elif kind == _FLAT_SYMBOL:
            if not isinstance(attr, SymbolRefAttr):
                return False
            nested = attr.nested_references
            if not isinstance(nested, ArrayAttr) or nested.data:
                return False
        elif not _accepts(constraint, attr):
            return False
    if present != len(properties):  # a property the definition does not know
        return False
    regions = op.regions
    if len(regions) != shape.regions:
        return False
    for region, single in zip(regions, shape.single_block, strict=True):
        block = region.first_block
        if block is None:
            if single:
                return False
            continue
        if block.next_block is not None or block.args:
            return False
    block = op.parent
    if block is None:
        return True
    region = block.parent
    if region is None:
        return True
    parent = region.parent
    if (
        shape.parents is not None
        and parent is not None
        and not isinstance(parent, shape.parents)
    ):
        return False
    if block.last_op is op:
        # xDSL's terminator rule for the last op of a block: it holds when
        # the block is the only one of a region whose op needs no terminator.
        if region.first_block is not block or block.next_block is not None:
            return False
        if parent is not None and not _needs_no_terminator(parent):
            return False
    return True


class FastVerifiedOp(IRDLOperation):
    """An op verified by the fast check when it applies (module docstring).

    Subclasses put their own rules in ``verify_own`` (what ``verify_`` holds
    for other xDSL ops); ``verify_`` runs it after the generic checks."""

    def verify_own(self) -> None:
        """The op's rules beyond its IRDL definition."""

    def verify_(self) -> None:
        self.verify_own()

    def verify(self, verify_nested_ops: bool = True) -> None:
        cls = type(self)
        shape = _SHAPES.get(cls)
        if shape is None:
            shape = _SHAPES[cls] = _shape_of(self.get_irdl_definition())
        if not _structure_ok(self, shape):
            super().verify(verify_nested_ops)
            return
        # xDSL's order: nested ops first (Region.verify, Block.verify).
        if verify_nested_ops:
            # At most one block per region (checked above); the linked lists
            # directly, without xDSL's iterator objects.
            for region in self.regions:
                block = region.first_block
                if block is None:
                    continue
                child = block.first_op
                while child is not None:
                    if child.parent is not block:
                        raise ValueError(
                            "Parent pointer of operation does not refer to "
                            "containing region"
                        )
                    child.verify()
                    child = child.next_op
                if block.parent is not region:
                    raise ValueError(
                        "Parent pointer of block does not refer to containing region"
                    )
        for trait in shape.other_traits:
            try:
                trait.verify(self)
            except VerifyException as error:
                self.emit_error(f"Operation does not verify: {error}", error)
        try:
            self.verify_own()
        except VerifyException as error:
            self.emit_error(f"Operation does not verify: {error}", error)
