"""Row-polymorphic shape inference in the style of OCANNL (pure Python, no IR).

>>> from axisflow.shapes import Session, ShapeError
>>> s = Session()
>>> x = s.leaf("x", "8|->3")
>>> w = s.param("w", "...->16")
>>> h = s.compose("h", w, x)
>>> s.close()
>>> h.shape.dims()
((8,), (), (16,))

Modules, each importing only those listed before it:
:mod:`~axisflow.shapes.terms` (dims, rows, origins),
:mod:`~axisflow.shapes.errors`, :mod:`~axisflow.shapes.refs` (capture
references), :mod:`~axisflow.shapes.constraints` (constraints as plain data),
:mod:`~axisflow.shapes.spec` (spec parsers and einsum spec-to-rows),
:mod:`~axisflow.shapes.trail` (undo trail), :mod:`~axisflow.shapes.solver`
(Stage 1), :mod:`~axisflow.shapes.closing` (closing, one function per step),
:mod:`~axisflow.shapes.operations` (the operations, OCANNL's ``shape.ml``),
:mod:`~axisflow.shapes.session` (sessions, windows, hooks: the public API),
:mod:`~axisflow.shapes.scheme` (shape schemes: trace once, instantiate at every
call site). See ``docs/shapes.md`` and ``docs/shape-schemes.md``.
"""

from axisflow.shapes import scheme
from axisflow.shapes.constraints import (
    CaptureBind,
    Constraint,
    DeferredCount,
    DimAtLeast,
    DimEq,
    DimIneq,
    Mark,
    PolicyMark,
    RowEq,
    RowIneq,
    SetDim,
    Terminal,
    TotalElems,
)
from axisflow.shapes.errors import ShapeError, SpecError
from axisflow.shapes.refs import DimRef
from axisflow.shapes.scheme import Sabotage, Scheme, UntraceableScheme
from axisflow.shapes.session import DimEntry, RowEntry, Session, Window
from axisflow.shapes.tensors import Shape, Tensor
from axisflow.shapes.terms import (
    BROADCAST_UNIT,
    KINDS,
    DimVar,
    Kind,
    Origin,
    Row,
    RowVar,
    Side,
    Size,
)

__all__ = [
    "BROADCAST_UNIT",
    "KINDS",
    "CaptureBind",
    "Constraint",
    "DeferredCount",
    "DimAtLeast",
    "DimEntry",
    "DimEq",
    "DimIneq",
    "DimRef",
    "DimVar",
    "Kind",
    "Mark",
    "Origin",
    "PolicyMark",
    "Row",
    "RowEntry",
    "RowEq",
    "RowIneq",
    "RowVar",
    "Sabotage",
    "Scheme",
    "Session",
    "SetDim",
    "Shape",
    "ShapeError",
    "Side",
    "Size",
    "SpecError",
    "Tensor",
    "Terminal",
    "TotalElems",
    "UntraceableScheme",
    "Window",
    "scheme",
]
