"""Contraction order: which pairs of a product to contract first.

Pure Python, no xDSL (below the dialects, like ``axisflow.roles``):

* ``extents``: extents of index spaces and of composite kinds (``a<2>``),
  the one sizing convention of the project;
* ``search``: plans for one product under ``order=file|flops|memory``
  (exact dynamic programming, greedy fallback), with a hook for sizes under
  batch loops, and a cache (``PlanCache``) that finds each network's plan
  once for the terms of an expression.
"""

from axisflow.forest.frames import expand_modes
from axisflow.order.extents import (
    DEFAULT_EXTENT,
    ExtentError,
    Extents,
    parse_extents,
    split_kind,
)
from axisflow.order.search import (
    CONNECTED_MAX,
    EXACT_ALL_MAX,
    MEMORY_TOLERANCE,
    ORDERS,
    PAIR_BUDGET,
    SHARED_PAIRS,
    Costs,
    Order,
    Plan,
    PlanCache,
    SizeHook,
    forget_shared_pairs,
    plan_product,
)

__all__ = [
    "CONNECTED_MAX",
    "DEFAULT_EXTENT",
    "EXACT_ALL_MAX",
    "MEMORY_TOLERANCE",
    "ORDERS",
    "PAIR_BUDGET",
    "SHARED_PAIRS",
    "Costs",
    "ExtentError",
    "Extents",
    "Order",
    "Plan",
    "PlanCache",
    "SizeHook",
    "expand_modes",
    "forget_shared_pairs",
    "parse_extents",
    "plan_product",
    "split_kind",
]
