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
from axisflow.forest.model import ModelError
from axisflow.forest.roles import Verdicts, classify
from axisflow.gc_pause import gc_paused


def classify_forest(forest: ForestOp, explain: bool = False) -> Verdicts:
    """Classify every value of ``forest``, attach the roles to the IR and
    return the verdicts (value -> loop label -> role and reason). Raises
    ``ModelError`` for a forest the model cannot hold.

    ``forest`` must verify (as xDSL promises a pass: xdsl-opt verifies
    before every pass). The model is not finished: the roles derive only the
    mode maps they read (use-sites of values with proto modes); the
    consistency of frames, factor maps and use-sites that ``Forest.finish``
    would check again is the verifier's."""
    model = forest_model(forest, with_roles=False, finish=False)
    verdicts = classify(model, explain=explain)
    attach_roles(forest, verdicts, explain)
    return verdicts


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
    """Every ``batch.forest`` nested in ``op``, without walking into forests.

    In program order; iterative, so modules nested at any depth are fine."""
    pending: list[Operation] = [op]
    while pending:
        current = pending.pop()
        if current is not op and isinstance(current, ForestOp):
            yield current
            continue
        children = [
            child
            for region in current.regions
            for block in region.blocks
            for child in block.ops
        ]
        pending.extend(reversed(children))
