"""``generalize-shapes``: trace every ``tprog.func`` once into a ``tprog.scheme``.

The pass runs the generalizer (:class:`~axisflow.dialects.tprog_generalize.Generalizer`):
each function is traced once, in a rewind window, into a shape scheme written
as a ``tprog.scheme``, and every ``tprog.call`` becomes a
``tprog.instantiate`` of that scheme; ``close-shapes`` then applies the
schemes without running any body.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import DiagnosticException

from axisflow.dialects.tprog_generalize import Generalizer
from axisflow.gc_pause import gc_paused


@dataclass(frozen=True)
class GeneralizeShapesPass(ModulePass):
    """Trace each function into a ``tprog.scheme``; calls become instantiations.

    ``bytes_per_element``: the precision of ``tprog.total_elems ... bytes``
    (used if the module closes its shapes with ``tprog.close``).
    ``explain``: write on each call site that a scheme serves it
    (``tprog.served``), and the counts on the module. Every call is turned
    into an instantiation, or the pass reports why the function cannot be
    traced: what no scheme carries is an error here (``close-shapes``
    re-evaluates such a function instead).
    """

    name = "generalize-shapes"

    bytes_per_element: int = 4
    explain: bool = False

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        if self.bytes_per_element < 1:
            raise DiagnosticException(
                "generalize-shapes: bytes-per-element must be a positive integer"
            )
        with gc_paused():  # allocation-heavy; see axisflow.gc_pause
            generalizer = Generalizer(op, bytes_per_element=self.bytes_per_element)
            generalizer.run()
            if self.explain:
                generalizer.call_report.attach(op)
