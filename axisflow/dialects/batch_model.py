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
from typing import cast

from xdsl.dialects.builtin import ArrayAttr, ModuleOp, StringAttr, SymbolRefAttr
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
    ops_of,
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
from axisflow.roles.decision import LoopRole
from axisflow.roles.index import Index

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


def forest_model(forest: ForestOp, *, with_roles: bool = True) -> Forest:
    """The model of a verified ``batch.forest`` (one linear walk).

    ``with_roles``: read the ``roles`` attributes (absent roles are reported
    by the scheduler when it needs them). Raises ``ModelError`` for a forest
    the model cannot hold (for example a tree with two roots).
    """
    space_ops: list[SpaceOp] = []
    value_ops: dict[str, ValueOp] = {}
    tree_ops: list[TreeOp] = []
    for op in ops_of(forest.regions[0]):  # one pass over the forest's body
        if isinstance(op, ValueOp):
            value_ops[op.value_name] = op
        elif isinstance(op, TreeOp):
            tree_ops.append(op)
        elif isinstance(op, SpaceOp):
            space_ops.append(op)
    spaces = {
        op.space_key: Space(
            op.space_key, op.extent_value, op.elem_value, op.composite_extents
        )
        for op in space_ops
    }
    values: dict[str, Value] = {}
    roles: dict[tuple[str, str], LoopRole] = {}
    # One (immutable) Factor per factor attribute: values share them.
    factor_models: dict[int, Factor] = {}
    for name, op in value_ops.items():
        properties = op.properties
        factors: list[Factor] = []
        for f in cast(ArrayAttr[FactorAttr], properties["factors"]).data:
            factor = factor_models.get(id(f))
            if factor is None:
                factor = factor_models[id(f)] = Factor(
                    f.symbol, labels_of(f.indices), f.protos.pairs
                )
            factors.append(factor)
        tensor = cast(TextAttr | None, properties.get("tensor"))
        symmetry = cast(TextAttr | None, properties.get("symmetry"))
        values[name] = Value(
            name,
            labels_of(cast(ArrayAttr[IndexAttr], properties["result"])),
            labels_of(cast(ArrayAttr[IndexAttr], properties["contracted"])),
            tuple(factors),
            None if tensor is None else tensor.data,
            None if symmetry is None else symmetry.data,
            _layout(op) if op.attributes else None,
        )
        if with_roles:
            attr = op.attributes.get(ROLES_ATTR)
            if isinstance(attr, AxisRolesAttr):
                for axis, role in attr.as_dict().items():
                    roles[(name, axis.base_key)] = role
    model = Forest(
        forest.sym_name.data if forest.sym_name is not None else None,
        spaces,
        values,
        [],
        [],
        roles,
    )
    unslotted = 0
    sites = model.sites
    for number, tree_op in enumerate(tree_ops):
        tree = Tree(tree_op.tree_name, tree_op.coeff, None, tree_op.operator_texts)
        model.trees.append(tree)
        roots: list[int] = []
        # (item, loops around it, consumer site)
        items = ops_of(tree_op.regions[0])
        items.reverse()
        stack: list[tuple[Operation, tuple[Loop, ...], int | None]] = [
            (item, (), None) for item in items
        ]
        children: dict[int, list[int]] = {}
        while stack:
            item, loops, parent = stack.pop()
            if isinstance(item, UseOp):
                properties = item.properties
                carried = cast(ArrayAttr[IndexAttr], properties["carried"])
                protos = cast(ProtoMapAttr | None, properties.get("protos"))
                name = cast(SymbolRefAttr, properties["value"]).root_reference.data
                site = Site(
                    len(sites),
                    name,
                    number,
                    labels_of(carried),
                    loops,
                    parent,
                    protos=() if protos is None else protos.pairs,
                )
                sites.append(site)
                if parent is None:
                    roots.append(site.number)
                else:
                    children.setdefault(parent, []).append(site.number)
                inner = ops_of(item.regions[0])
                if inner:
                    inner.reverse()
                    stack.extend((child, loops, site.number) for child in inner)
            elif isinstance(item, LoopOp):
                slot = item.slot_value
                if slot is None:
                    unslotted += 1
                    instance = -unslotted
                else:
                    model.has_slots = True
                    instance = slot
                inner_loops = (*loops, Loop(instance, item.loop_index, slot))
                inner = ops_of(item.regions[0])
                inner.reverse()
                stack.extend((child, inner_loops, parent) for child in inner)
        for parent, found in children.items():
            sites[parent].children = tuple(found)
        if len(roots) > 1:
            raise ModelError(
                f"tree @{tree.name} has {len(roots)} root use-sites; a tree has one"
            )
        tree.root = roots[0] if roots else None
    renumber_unslotted(model)
    return model.finish()


# --------------------------------------------------------------------------
# Roles back into the IR
# --------------------------------------------------------------------------


def attach_roles(forest: ForestOp, verdicts: Verdicts, explain: bool = False) -> None:
    """Replace the ``roles`` (and ``why``) attributes of every value of
    ``forest`` by ``verdicts`` (values without verdicts get none)."""
    role_maps: dict[tuple[tuple[Index, LoopRole], ...], AxisRolesAttr] = {}
    for op in forest.values():
        attributes = op.attributes
        attributes.pop(ROLES_ATTR, None)
        attributes.pop(WHY_ATTR, None)
        found = verdicts.get(op.value_name)
        if not found:
            continue
        ordered = sorted(found.items(), key=lambda item: item[0].sort_key())
        key = tuple((axis, verdict.role) for axis, verdict in ordered)
        roles = role_maps.get(key)
        if roles is None:
            roles = role_maps[key] = AxisRolesAttr(key)
        attributes[ROLES_ATTR] = roles
        if explain:
            attributes[WHY_ATTR] = AxisReasonsAttr(
                [(axis, verdict.reason) for axis, verdict in ordered]
            )
