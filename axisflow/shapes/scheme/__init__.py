"""Shape schemes (OCANNL's ``Shape.Scheme``): trace a function once, apply it often.

A tensor function's shapes amount to a *scheme*: the constraints its body
registers, read off a rewind window, with the solution equations of their
variables. Instantiating the scheme at a call site renames the variables the
trace minted (the *generalized* ones), keeps the pre-existing tensors' ones
(*fixed*: shared parameters and other *anchors*), relates the scheme's
boundary rows to the call's argument and result shapes, and solves at Stage 1.
No body runs again.

>>> from axisflow.shapes import Session, scheme
>>> s = Session()
>>> w = s.param("w", "...->4")                  # a shared parameter (an anchor)
>>> with s.rewind():
...     mark = s.var_mark()
...     x = s.fresh("x")                        # the tracer
...     layer = scheme.trace(s, var_mark=mark, label="layer", args=[x],
...                          f=lambda: [s.compose("h", w, x)])
>>> ys = []
>>> for site, spec in (("small", "2|->3"), ("big", "7|->3")):
...     y = s.fresh("y_" + site)
...     _ = scheme.instantiate(layer, application=site,
...                            args=[s.leaf("x_" + site, spec)], results=[y])
...     ys.append(y)
>>> s.close()
>>> [y.shape.dims() for y in ys], w.shape.dims()
([((2,), (), (4,)), ((7,), (), (4,))], ((), (3,), (4,)))

How a scheme is read off
========================
:func:`trace` runs the function inside the caller's rewind window, with
capture references made before it reading as unbound, closing and reading
dims refused (:class:`UntraceableScheme`), and every constraint checked for
what a scheme cannot carry. Then it re-solves the function's constraints at
Stage 1 in a nested scratch window: the trace's variables get fresh *scheme
variables*; a pre-existing variable is replaced by its solution as it stood
when the trace began, or, if it was open then, by a *placeholder* scheme
variable that the instantiation equates with the anchors' current rows. The
scheme is that scratch solution in normal form: its open variables' lower
bounds, relations, fixed-index minima, pending totals, terminal rows, policy
marks and template depths, plus the normalized boundary, anchor and internal
rows and the capture inputs. The scratch re-solve is also the end-of-trace
validation: a contradiction among the function's constraints is a
``ShapeError`` at trace time, as is a contradiction the function swallowed
(the session's taint).

Instantiating writes that normal form with fresh variables: the boundary
equalities first (as re-running the body on the arguments would), then the
anchors' equalities with their current rows, then the solution's facts,
solved at Stage 1. Already-solved parts of the body cost nothing; only what
depends on the arguments is solved again.

Modules, one stage each, each importing only those before it:
:mod:`.data` (plain data: what a scheme holds, the negative controls, the
refusal, compiled facts), :mod:`.text` (the text form: printing and parsing),
:mod:`.model` (the :class:`Scheme` value), :mod:`.presolve` (the internal
rows an application solves outright), :mod:`.trace` (reading a scheme off a
traced function), :mod:`.apply` (instantiating and checking, with the
presolve memo), :mod:`.read` (rebuilding a scheme from its text form).
"""

from axisflow.shapes.scheme.apply import check, instantiate, stale
from axisflow.shapes.scheme.data import (
    Anchor,
    CaptureInput,
    InternalRows,
    LooseVariable,
    Sabotage,
    UntraceableScheme,
)
from axisflow.shapes.scheme.model import Application, Scheme
from axisflow.shapes.scheme.trace import trace

__all__ = [
    "Anchor",
    "Application",
    "CaptureInput",
    "InternalRows",
    "LooseVariable",
    "Sabotage",
    "Scheme",
    "UntraceableScheme",
    "check",
    "instantiate",
    "stale",
    "trace",
]
