"""The axisflow plugin for ``xdsl-opt`` (entry point group ``xdsl.universe``).

Import-light on purpose: every ``xdsl-opt`` run loads this module, so it only
names factories; each dialect, pass and frontend is imported when first used.
"""

from __future__ import annotations

from xdsl.universe import Universe

AXISFLOW_UNIVERSE = Universe(
    all_dialects={},
    all_passes={},
    all_frontends={},
)
