"""The axisflow plugin for ``xdsl-opt`` (entry point group ``xdsl.universe``).

Import-light on purpose: every ``xdsl-opt`` run loads this module, so it only
names factories; each dialect, pass and frontend is imported when first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from xdsl.universe import Universe

if TYPE_CHECKING:
    from xdsl.ir import Dialect
    from xdsl.passes import ModulePass


def _tprog_dialect() -> Dialect:
    from axisflow.dialects.tprog import Tprog

    return Tprog


def _close_shapes_pass() -> type[ModulePass]:
    from axisflow.passes.close_shapes import CloseShapesPass

    return CloseShapesPass


AXISFLOW_UNIVERSE = Universe(
    all_dialects={"tprog": _tprog_dialect},
    all_passes={"close-shapes": _close_shapes_pass},
    all_frontends={},
)
