"""Loop-role analysis that does not depend on xDSL: indices and the decision tree."""

from axisflow.roles.decision import (
    EnclosingSlot,
    LoopRole,
    Occurrence,
    Verdict,
    classify_axis,
    decide_axis,
    occurrence_slot,
)
from axisflow.roles.index import Index

__all__ = [
    "EnclosingSlot",
    "Index",
    "LoopRole",
    "Occurrence",
    "Verdict",
    "classify_axis",
    "decide_axis",
    "occurrence_slot",
]
