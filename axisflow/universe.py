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
    from xdsl.utils.frontend import Frontend


AXISFLOW_UNIVERSE = Universe(
    all_dialects={},
    all_passes={},
    all_frontends={},
)
