"""Evaluate SeQuant expressions on the user's own tensors.

Pure Python and NumPy, no xDSL::

    from axisflow.execution import evaluate_expression, input_signatures

    for signature in input_signatures(parse(text)):  # what to give, axes
        ...
    result = evaluate_expression(text, {"g{i,i;a,a}": g_oovv, ...}, batch="i")
    result.residual                                  # NumPy array

* ``inputs``: which arrays an expression takes (keys, axis layout), reading
  them from mappings, ``.npz`` files and Zarr stores, and the checks
  (``read_inputs``, ``Inputs``, ``InputError``);
* ``evaluation``: ``evaluate_expression``, the residual unbatched or through
  a batched schedule, with the NumPy reference evaluator;
* ``dask_executor``: ``execute_expression``, the same plan run on Dask (one
  task per block of the outer loops), with its report.

See ``docs/execution.md``.
"""

from __future__ import annotations

from axisflow.execution.dask_executor import (
    BudgetError,
    Execution,
    ExecutionError,
    ExecutionReport,
    execute_expression,
)
from axisflow.execution.evaluation import Evaluation, evaluate_expression
from axisflow.execution.inputs import (
    SYMMETRY_TOLERANCE,
    ArrayLike,
    InputError,
    Inputs,
    InputSignature,
    InputSource,
    input_keys,
    input_signatures,
    read_inputs,
    signature_of,
)

__all__ = [
    "SYMMETRY_TOLERANCE",
    "ArrayLike",
    "BudgetError",
    "Evaluation",
    "Execution",
    "ExecutionError",
    "ExecutionReport",
    "InputError",
    "InputSignature",
    "InputSource",
    "Inputs",
    "evaluate_expression",
    "execute_expression",
    "input_keys",
    "input_signatures",
    "read_inputs",
    "signature_of",
]
