"""axisflow: loop roles for batched tensor-network evaluation, and shape schemes.

The top-level package stays import-light (no xDSL import): ``xdsl-opt`` loads
``axisflow.universe`` through this package on every run.
"""

from axisflow.roles import Index, LoopRole, Occurrence, classify_axis

__all__ = ["Index", "LoopRole", "Occurrence", "classify_axis"]
__version__ = "0.1.0"
