"""``batch.forest`` IR -> the pipeline's forest model (one linear walk).

Roles are read from the ``roles`` attribute (``#batch.roles<...>``) that
``classify-axes`` attaches to each ``batch.value``, keyed by loop label; the
role depends only on the label's index space.
"""

from __future__ import annotations

from xdsl.ir import Operation

from axisflow.dialects.batch import AxisRolesAttr, ForestOp, LoopOp, UseOp
from axisflow.passes.classify_axes import ROLES_ATTR
from axisflow.pipeline.model import (
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
from axisflow.roles.decision import LoopRole


def forest_model(forest: ForestOp, *, with_roles: bool = True) -> Forest:
    """The model of a verified ``batch.forest``.

    ``with_roles``: read the ``roles`` attributes (absent roles are reported
    by the scheduler when it needs them). Raises ``ModelError`` for a forest
    the pipeline cannot model (a relabelling the verifier let through).
    """
    spaces = {
        op.space_key: Space(
            op.space_key, op.extent_value, op.elem_value, op.composite_extents
        )
        for op in forest.spaces()
    }
    values: dict[str, Value] = {}
    roles: dict[tuple[str, str], LoopRole] = {}
    for op in forest.values():
        values[op.value_name] = Value(
            op.value_name,
            op.result_indices,
            op.contracted_indices,
            tuple(
                Factor(f.symbol, tuple(a.index for a in f.indices.data))
                for f in op.factors.data
            ),
            None if op.tensor is None else op.tensor.data,
        )
        attr = op.attributes.get(ROLES_ATTR)
        if with_roles and isinstance(attr, AxisRolesAttr):
            for axis, role in attr.as_dict().items():
                roles[(op.value_name, axis.base_key)] = role
    model = Forest(
        forest.sym_name.data if forest.sym_name is not None else None,
        spaces,
        values,
        [],
        [],
        roles,
    )
    unslotted = 0
    for number, tree_op in enumerate(forest.trees()):
        tree = Tree(tree_op.tree_name, tree_op.coeff, None)
        model.trees.append(tree)
        roots: list[int] = []
        # (item, loops around it, consumer site)
        stack: list[tuple[Operation, tuple[Loop, ...], int | None]] = [
            (item, (), None) for item in reversed(list(tree_op.items()))
        ]
        children: dict[int, list[int]] = {}
        while stack:
            item, loops, parent = stack.pop()
            if isinstance(item, LoopOp):
                slot = item.slot_value
                if slot is None:
                    unslotted += 1
                    instance = -unslotted
                else:
                    model.has_slots = True
                    instance = slot
                inner = (*loops, Loop(instance, item.loop_index, slot))
                stack.extend(
                    (child, inner, parent) for child in reversed(list(item.items()))
                )
            elif isinstance(item, UseOp):
                site = Site(
                    len(model.sites),
                    item.value_name,
                    number,
                    item.carried_indices,
                    loops,
                    parent,
                )
                model.sites.append(site)
                if parent is None:
                    roots.append(site.number)
                else:
                    children.setdefault(parent, []).append(site.number)
                stack.extend(
                    (child, loops, site.number)
                    for child in reversed(list(item.items()))
                )
        for parent, found in children.items():
            model.sites[parent].children = tuple(found)
        if len(roots) > 1:
            raise ModelError(
                f"tree @{tree.name} has {len(roots)} root use-sites; a tree has one"
            )
        tree.root = roots[0] if roots else None
    renumber_unslotted(model)
    return model.finish()
