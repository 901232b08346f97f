"""``classify-axes``: attach a loop role to every value for every batch loop.

For each value of each ``batch.forest`` and each batch-loop axis enclosing any
of its use-sites, the role is decided on the forest model
(``axisflow.forest.roles.classify``) and attached as ``roles =
#batch.roles<LABEL = ROLE, ...>`` (a map from each loop label to its role);
with ``explain=true`` a ``why = #batch.why<LABEL = "...">`` map gives the
evidence. Re-running the pass recomputes and replaces both attributes, so it
is idempotent.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from axisflow.dialects.batch import ForestOp
from axisflow.dialects.batch_model import attach_roles, forest_model
from axisflow.forest.model import Forest, ModelError
from axisflow.forest.roles import classify
from axisflow.gc_pause import gc_paused


def classify_forest(forest: ForestOp, explain: bool = False) -> Forest:
    """Classify every value of ``forest``, attach the roles to the IR and
    return the model (with its roles). Raises ``ModelError`` for a forest the
    model cannot hold."""
    model = forest_model(forest, with_roles=False)
    attach_roles(forest, classify(model, explain=explain), explain)
    return model


@dataclass(frozen=True)
class ClassifyAxesPass(ModulePass):
    """Decide the loop role of every value for every enclosing batch-loop axis."""

    name = "classify-axes"

    explain: bool = False
    """Also attach ``why``: the use-site and index behind each role."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        with gc_paused():
            for forest in forests_in(op):
                try:
                    classify_forest(forest, self.explain)
                except ModelError as error:
                    raise PassFailedException(f"classify-axes: {error}") from None


def forests_in(op: Operation) -> Iterator[ForestOp]:
    """Every ``batch.forest`` nested in ``op``, without walking into forests."""
    for region in op.regions:
        for block in region.blocks:
            for child in block.ops:
                if isinstance(child, ForestOp):
                    yield child
                else:
                    yield from forests_in(child)
