"""The physical residual: SeQuant's reserved operators and how the terms of
an expression assemble into one result tensor.

Pure Python and NumPy, no xDSL (``docs/residual.md``):

* ``operators``: ``Ŝ``, ``Â``, ``P̂`` exactly as SeQuant defines them, as
  weighted relabellings, and their application to a dense residual array;
* ``assembly``: which indices the residual carries and which terms share an
  operator (terms are summed first, then the operator acts once per group).
"""

from axisflow.residual.assembly import (
    OperatorGroup,
    ResidualError,
    ResidualLayout,
    residual_layout,
)
from axisflow.residual.operators import (
    LABELS,
    Operator,
    OperatorError,
    apply_operator,
    apply_operators,
    transform,
)

__all__ = [
    "LABELS",
    "Operator",
    "OperatorError",
    "OperatorGroup",
    "ResidualError",
    "ResidualLayout",
    "apply_operator",
    "apply_operators",
    "residual_layout",
    "transform",
]
