"""The two bridges between the ``batch`` dialect and the forest model.

* ``forest_op(model)`` / ``forest_module(model)``: the emitter, model -> IR
  (the SeQuant frontend builds a model and emits it here);
* ``forest_model(op)``: the reader, IR -> model (``classify-axes``, the
  scheduler and ``sched.schedule``'s verifier read the IR through it);
* ``attach_roles(op, verdicts)``: the roles decided on the model, written
  back as ``roles`` (and ``why``) attributes of the ``batch.value`` ops.

Nothing else converts between the two; the reader and the emitter round-trip
(explicit proto pairings included: ``batch.use ... protos [i_1 = i_4]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any, cast

from xdsl.dialects.builtin import (
    IntegerAttr,
    ModuleOp,
    StringAttr,
)
from xdsl.ir import Block, Operation, Region

from axisflow.dialects.batch import (
    LAYOUT_ATTR,
    ROLES_ATTR,
    WHY_ATTR,
    AxisReasonsAttr,
    AxisRolesAttr,
    FactorAttr,
    ForestOp,
    IndexAttr,
    LoopOp,
    ProtoMapAttr,
    SpaceOp,
    TextAttr,
    TreeOp,
    UseOp,
    ValueOp,
    labels_of,
)
from axisflow.forest.frames import minimal_protos
from axisflow.forest.model import (
    Factor,
    Forest,
    Loop,
    ModelError,
    Site,
    Space,
    Tree,
    Value,
    renumber_unslotted,
)
from axisflow.forest.roles import Verdicts
from axisflow.roles.decision import LoopRole, Verdict
from axisflow.roles.index import Index
from axisflow.xdsl_compat import first_op_in, next_op_of

# --------------------------------------------------------------------------
# Emitter: model -> IR
# --------------------------------------------------------------------------


class _Emitter:
    """Builds the ops, sharing one ``IndexAttr`` per label (attributes are
    immutable; building and verifying one per occurrence dominated)."""

    def __init__(self, forest: Forest) -> None:
        self.forest = forest
        self.labels: dict[Index, IndexAttr] = {}

    def attrs(self, indices: Sequence[Index]) -> list[IndexAttr]:
        labels = self.labels
        found: list[IndexAttr] = []
        for index in indices:
            attr = labels.get(index)
            if attr is None:
                attr = labels[index] = IndexAttr(index)
            found.append(attr)
        return found

    def value_op(self, value: Value) -> ValueOp:
        if value.tensor is not None and not value.factors:
            op = ValueOp(
                value.name,
                self.attrs(value.result),
                self.attrs(value.contracted),
                tensor=value.tensor,
                symmetry=value.symmetry,
            )
            if value.layout is not None:
                op.attributes[LAYOUT_ATTR] = StringAttr(
                    ";".join(map(str, value.layout))
                )
            return op
        factors: list[FactorAttr] = []
        for k, factor in enumerate(value.factors):
            protos = factor.protos
            if len(value.factor_maps) == len(value.factors):
                frame = self.forest.values[factor.value].result
                protos = minimal_protos(frame, factor.labels, value.factor_maps[k])
            factors.append(FactorAttr(factor.value, self.attrs(factor.labels), protos))
        return ValueOp(
            value.name,
            self.attrs(value.result),
            self.attrs(value.contracted),
            factors=factors,
        )

    def items(self, sites: Sequence[Site], outer: tuple[Loop, ...]) -> list[Operation]:
        """The ops of ``sites`` (siblings) inside the loops ``outer``: runs of
        siblings under one further loop share its ``batch.loop``."""
        ops: list[Operation] = []
        run: list[Site] = []
        depth = len(outer)

        def flush() -> None:
            if run:
                loop = run[0].loops[depth]
                body = self.items(list(run), (*outer, loop))
                (index,) = self.attrs((loop.label,))
                ops.append(LoopOp(index, loop.slot, Region(Block(body))))
                run.clear()

        for site in sites:
            if site.loops[:depth] != outer:
                raise ModelError(
                    f"use-site of @{site.value}: its loops do not extend those of "
                    "its consumer"
                )
            if len(site.loops) == depth:
                flush()
                ops.append(self.use_op(site))
            elif run and run[0].loops[depth] != site.loops[depth]:
                flush()
                run.append(site)
            else:
                run.append(site)
        flush()
        return ops

    def use_op(self, site: Site) -> UseOp:
        carried = self.attrs(site.labels)
        value = self.forest.values[site.value]
        protos = site.protos
        if site.mode_map:
            protos = minimal_protos(value.result, site.labels, site.mode_map)
        if not site.children:
            return UseOp(site.value, carried, protos=protos)
        children = [self.forest.sites[n] for n in site.children]
        body = Region(Block(self.items(children, site.loops)))
        return UseOp(site.value, carried, body, protos)

    def tree_op(self, number: int, tree: Tree) -> TreeOp:
        items: list[Operation] = []
        if tree.root is not None:
            items = self.items([self.forest.sites[tree.root]], ())
        return TreeOp(tree.name, tree.coeff, Region(Block(items)), tree.operators)


def forest_op(forest: Forest) -> ForestOp:
    """The ``batch.forest`` of ``forest``: spaces, values (leaves carry
    ``layout``), then one tree per term with its loops and use-sites."""
    emitter = _Emitter(forest)
    ops: list[Operation] = [
        SpaceOp(space.key, space.extent, space.elem, space.composites)
        for space in forest.spaces.values()
    ]
    ops.extend(emitter.value_op(value) for value in forest.values.values())
    ops.extend(
        emitter.tree_op(number, tree) for number, tree in enumerate(forest.trees)
    )
    return ForestOp(ops, forest.name)


def forest_module(forest: Forest) -> ModuleOp:
    """A module holding the ``batch.forest`` of ``forest``."""
    return ModuleOp([forest_op(forest)])


# --------------------------------------------------------------------------
# Reader: IR -> model
# --------------------------------------------------------------------------


def _layout(op: ValueOp) -> tuple[int, int, int] | None:
    attr = op.attributes.get(LAYOUT_ATTR)
    if not isinstance(attr, StringAttr):
        return None
    parts = attr.data.split(";")
    if len(parts) != 3 or not all(p.isdigit() for p in parts):
        return None
    return (int(parts[0]), int(parts[1]), int(parts[2]))


def forest_model(
    forest: ForestOp, *, with_roles: bool = True, finish: bool = True
) -> Forest:
    """The model of a verified ``batch.forest`` (one linear walk).

    ``with_roles``: read the ``roles`` attributes (absent roles are reported
    by the scheduler when it needs them). ``finish``: derive the model
    (``Forest.finish``); without it the model is as read, for a caller that
    derives only what it needs (``classify-axes``: the roles). Raises ``ModelError``
    for a forest the model cannot hold (for example a tree with two roots).
    """
    spaces: dict[str, Space] = {}
    values: dict[str, Value] = {}
    roles: dict[tuple[str, str], LoopRole] = {}
    tree_ops: list[TreeOp] = []
    # One (immutable) Factor per factor attribute: values share them.
    factor_models: dict[int, Factor] = {}
    op = first_op_in(forest.regions[0])
    while op is not None:  # one pass over the forest's body
        kind = type(op)
        if kind is ValueOp or (kind is not TreeOp and isinstance(op, ValueOp)):
            name = _read_value(cast(ValueOp, op), values, factor_models)
            if with_roles:
                attr = op.attributes.get(ROLES_ATTR)
                if isinstance(attr, AxisRolesAttr):
                    for axis, role in attr.as_dict().items():
                        roles[(name, axis.base_key)] = role
        elif kind is TreeOp or isinstance(op, TreeOp):
            tree_ops.append(cast(TreeOp, op))
        elif isinstance(op, SpaceOp):
            spaces[op.space_key] = Space(
                op.space_key, op.extent_value, op.elem_value, op.composite_extents
            )
        op = next_op_of(op)
    model = Forest(
        forest.sym_name.data if forest.sym_name is not None else None,
        spaces,
        values,
        [],
        [],
        roles,
    )
    if _TreeReader(model).read(tree_ops):
        renumber_unslotted(model)
    return model.finish() if finish else model


def _read_value(
    op: ValueOp, values: dict[str, Value], factor_models: dict[int, Factor]
) -> str:
    """Add the model of ``op`` to ``values``; return its name.

    The properties are read from the op's dictionary: xDSL's accessors cost
    more than the rest of the read. (``Any``: the verifier checked their
    types.)"""
    properties: dict[str, Any] = op.properties
    name: str = properties["sym_name"].data
    factors: tuple[Factor, ...] = ()
    factor_attrs: tuple[FactorAttr, ...] = properties["factors"].data
    if factor_attrs:
        found: list[Factor] = []
        for f in factor_attrs:
            factor = factor_models.get(id(f))
            if factor is None:
                factor = factor_models[id(f)] = Factor(
                    f.value.root_reference.data, labels_of(f.indices), f.protos.pairs
                )
            found.append(factor)
        factors = tuple(found)
    tensor: TextAttr | None = properties.get("tensor")
    symmetry: TextAttr | None = properties.get("symmetry")
    values[name] = Value(
        name,
        labels_of(properties["result"]),
        labels_of(properties["contracted"]),
        factors,
        None if tensor is None else tensor.data,
        None if symmetry is None else symmetry.data,
        _layout(op) if op.attributes else None,
    )
    return name


_Resume = tuple[Operation | None, tuple[Loop, ...], int | None, list[int]]
"""Where the walk goes on when a region ends: the next op, the loops around
it, its consumer's site and the list of that consumer's factor sites."""


class _TreeReader:
    """The trees of a forest into ``model``: use-sites numbered in program
    order (depth first), each with the loops around it and its consumer."""

    def __init__(self, model: Forest) -> None:
        self.model = model
        self.unslotted = 0
        # One Loop per (slot, label) of slotted loops: a Loop is immutable,
        # and the fused loops of a forest repeat few of them.
        self.slotted: dict[tuple[int, int], Loop] = {}
        # One Fraction per (numerator, denominator): most terms repeat few.
        self.coefficients: dict[tuple[int, int], Fraction] = {}

    def read(self, tree_ops: list[TreeOp]) -> bool:
        """Read every tree; whether some loop has no slot (its instance is a
        negative placeholder for ``renumber_unslotted``)."""
        trees = self.model.trees
        for number, tree_op in enumerate(tree_ops):
            properties: dict[str, Any] = tree_op.properties
            key: tuple[int, int] = (
                properties["coeff_num"].value.data,
                properties["coeff_den"].value.data,
            )
            coeff = self.coefficients.get(key)
            if coeff is None:
                coeff = self.coefficients[key] = Fraction(*key)
            tree = Tree(
                properties["sym_name"].data,
                coeff,
                None,
                tree_op.operator_texts if "operators" in properties else (),
            )
            trees.append(tree)
            roots = self._sites(number, first_op_in(tree_op.regions[0]))
            if len(roots) > 1:
                raise ModelError(
                    f"tree @{tree.name} has {len(roots)} root use-sites; a tree has one"
                )
            tree.root = roots[0] if roots else None
        return self.unslotted > 0

    def _loop(self, op: Operation) -> Loop:
        properties: dict[str, Any] = op.properties
        index: IndexAttr = properties["index"]
        slot_attr: IntegerAttr | None = properties.get("slot")
        if slot_attr is None:
            self.unslotted += 1
            return Loop(-self.unslotted, index.index, None)
        label = index.index
        slot = slot_attr.value.data
        key = (slot, id(label))  # labels are shared (and alive with the IR)
        loop = self.slotted.get(key)
        if loop is None:
            loop = self.slotted[key] = Loop(slot, label, slot)
            self.model.has_slots = True
        return loop

    def _sites(self, number: int, op: Operation | None) -> list[int]:
        """The use-sites of tree ``number`` from its first item ``op``; the
        root sites' numbers. Iterative: a saved position per open region;
        each op's kind is told by its exact class first (``isinstance`` on
        xDSL's op classes goes through ``ABCMeta`` when it fails)."""
        sites = self.model.sites
        roots: list[int] = []
        resume: list[_Resume] = []
        loops: tuple[Loop, ...] = ()
        parent: int | None = None
        siblings = roots
        while True:
            while op is None:
                if not resume:
                    return roots
                inside = parent
                op, loops, parent, siblings_out = resume.pop()
                if inside != parent:  # a use-site's region ends: its factors
                    sites[cast(int, inside)].children = tuple(siblings)
                siblings = siblings_out
            kind = type(op)
            if kind is UseOp or (kind is not LoopOp and isinstance(op, UseOp)):
                properties: dict[str, Any] = op.properties
                protos: ProtoMapAttr | None = properties.get("protos")
                site_number = len(sites)
                site = Site(
                    site_number,
                    properties["value"].root_reference.data,
                    number,
                    labels_of(properties["carried"]),
                    loops,
                    parent,
                    (),
                    () if protos is None else protos.pairs,
                    {},  # the maps are derived by the model (finish)
                    {},
                )
                sites.append(site)
                siblings.append(site_number)
                inner = first_op_in(op.regions[0])
                if inner is not None:
                    resume.append((next_op_of(op), loops, parent, siblings))
                    siblings = []
                    parent = site_number
                    op = inner
                    continue
            elif kind is LoopOp or isinstance(op, LoopOp):
                loop = self._loop(op)
                inner = first_op_in(op.regions[0])
                if inner is not None:
                    resume.append((next_op_of(op), loops, parent, siblings))
                    loops = (*loops, loop)
                    op = inner
                    continue
            op = next_op_of(op)


# --------------------------------------------------------------------------
# Roles back into the IR
# --------------------------------------------------------------------------


def attach_roles(forest: ForestOp, verdicts: Verdicts, explain: bool = False) -> None:
    """Replace the ``roles`` (and ``why``) attributes of every value of
    ``forest`` by ``verdicts`` (values without verdicts get none)."""
    # One attribute per distinct roles map, found by the verdicts' axes and
    # roles in their order (no sort per value): sorted once per distinct map.
    role_maps: dict[tuple[Index | LoopRole, ...], AxisRolesAttr] = {}
    op = first_op_in(forest.regions[0])
    while op is not None:
        kind = type(op)
        if kind is ValueOp or (kind is not TreeOp and isinstance(op, ValueOp)):
            attributes = op.attributes
            if attributes:
                attributes.pop(ROLES_ATTR, None)
                attributes.pop(WHY_ATTR, None)
            properties: dict[str, Any] = op.properties
            found = verdicts.get(properties["sym_name"].data)
            if found:
                # Axes and roles compare by identity (interned labels, enum
                # members): the key hashes without a Python call.
                key = (*found, *[verdict.role for verdict in found.values()])
                roles = role_maps.get(key)
                if roles is None:
                    roles = role_maps[key] = AxisRolesAttr(
                        [(axis, verdict.role) for axis, verdict in _sorted(found)]
                    )
                attributes[ROLES_ATTR] = roles
                if explain:
                    attributes[WHY_ATTR] = AxisReasonsAttr(
                        [(axis, verdict.reason) for axis, verdict in _sorted(found)]
                    )
        op = next_op_of(op)


def _sorted(found: dict[Index, Verdict]) -> list[tuple[Index, Verdict]]:
    """The verdicts of one value, ordered by axis as the IR shows them."""
    return sorted(found.items(), key=lambda item: item[0].sort_key())
