"""The ``sequant`` frontend of ``xdsl-opt``.

::

    xdsl-opt -f 'sequant{batch="Κ" extents="i=80,a=896,Κ=1682"}' eq.txt -p classify-axes

Options (``name{key=value ...}``; ``-`` and ``_`` are interchangeable in keys):

* ``batch``: index spaces to batch, outermost loop first (``batch="Κ",i``).
  xDSL's option lexer only reads ASCII words unquoted, so a Unicode key must
  be quoted (``batch="Κ"``) or spelled by its ASCII alias (``batch=Kappa``).
* ``extents``: space sizes, ``extents="i=80,a=896,Κ=1682"``, and sizes of
  composite kinds, ``a<2>=40`` (a composite of ``a`` with two protos).
* ``order``: how each product is binarized: ``file`` (left to right, as
  written), ``flops`` (the default: fewest multiply-adds) or ``memory``
  (smallest largest intermediate); parentheses are always kept.
* ``elem``: element size in bytes, declared on every space.
* ``separate-instances``: one fusion slot per loop (default: loops over one
  space at one nesting position share a slot across trees).
* ``share``: ``forest`` (the default: a value several trees build is
  shared), ``tree`` (each tree rebuilds it, in loops of its own: more
  multiply-adds, often a much smaller scheduled peak) or ``auto`` (the
  planner, ``axisflow.scheduling.planner``: which use-sites share a value,
  each tree's loop order and which trees run fused, for the objective; the
  default when an objective is given). The forest printed is the plan:
  schedule it with ``schedule-batches`` (add ``block=auto budget=...`` there
  for the blocks the budget allows).
* ``budget``: a memory budget (``budget=100GiB``, ``500MB``, ``4e9``): the
  fewest multiply-adds within it; ``max-extra-flops`` (``"5%"``, ``0.05``):
  the smallest peak within that much more multiply-adds than the shared
  forest's. At most one of them.
* ``forest``: the forest's symbol name (default: the input file's stem).
* ``quiet``: no notes on standard error (default false). An ``extents``
  entry naming a space the expression lacks is ignored with a note,
  ``note: sequant frontend: extents names a, Κ, which do not occur in the
  expression (its spaces: i); ignored`` (one extents text serves the
  energy, singles and doubles of a method).

``xdsl-opt`` refuses an input file whose extension is not the name of a
registered frontend, even with ``-f``; the universe therefore also registers
this frontend as ``txt`` (the extension of SeQuant's files), so both
``xdsl-opt -f sequant eq.txt`` and ``xdsl-opt eq.txt`` work.

Input errors (syntax, a term that cannot be a tree) are ``ParseError``\\ s
located in the input; option errors are ``DiagnosticException``\\ s. With
``--parsing-diagnostics`` / ``--verify-diagnostics`` xdsl-opt prints them
without a traceback.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from fractions import Fraction
from pathlib import PurePath
from typing import IO, ClassVar, cast

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.utils.frontend import Frontend
from xdsl.utils.lexer import Input, Span

from axisflow.dialects.batch import Batch
from axisflow.forest.model import Forest
from axisflow.notes import collected_notes
from axisflow.order import Order
from axisflow.residual import ResidualError
from axisflow.scheduling.options import OptionError, parse_budget, parse_fraction
from axisflow.sequant.forest import (
    BatchPolicy,
    PolicyError,
    build_forest,
    expression_layout,
)
from axisflow.sequant.syntax import Expression, SequantError, parse


def default_forest_name(input_name: str) -> str:
    """The input file's stem as an ASCII symbol name (``sequant`` for stdin)."""
    stem = PurePath(input_name).stem if input_name not in ("", "stdin") else ""
    name = re.sub(r"[^A-Za-z0-9_]", "_", stem)
    if not name or not (name[0].isalpha() or name[0] == "_"):
        name = f"sequant{'_' + name if name else ''}"
    return name


@dataclass(frozen=True)
class SequantFrontend(Frontend):
    """Reads SeQuant expression text into a ``batch.forest`` (see module doc)."""

    name: ClassVar[str] = "sequant"

    batch: tuple[str, ...] = ()
    extents: tuple[str, ...] = ()
    elem: int | None = None
    separate_instances: bool = False
    forest: str | None = None
    order: str = "flops"
    """``file``, ``flops`` or ``memory``; a plain string (checked when the
    forest is built) so that a wrong value is a diagnostic, not a traceback
    from xDSL's option parsing."""
    share: str = ""
    """``forest``, ``tree`` or ``auto`` (a plain string, checked like
    ``order``; empty: ``auto`` with an objective, else ``forest``)."""
    budget: str = ""
    """A memory budget (``100GiB``): the planner's objective."""
    max_extra_flops: str = ""
    """``5%``: the planner's other objective."""
    quiet: bool = False
    """No notes on standard error."""

    def parse(self, ctx: Context, input: IO[bytes], input_name: str) -> ModuleOp:
        """Parse, build the forest, emit IR; input errors are ``ParseError``."""
        from axisflow.dialects.batch_model import forest_module

        if Batch.name not in ctx.registered_dialect_names:
            ctx.load_dialect(Batch)
        data = input.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            span = Span(error.start, error.start + 1, Input(data, input_name))
            raise ParseError(span, "input is not valid UTF-8") from None
        try:
            budget = parse_budget(self.budget)
            extra = parse_fraction(self.max_extra_flops)
            if budget is not None and extra is not None:
                raise PolicyError("give either budget or max-extra-flops, not both")
            share = self.share or (
                "auto" if budget is not None or extra is not None else "forest"
            )
            policy = BatchPolicy.make(
                self.batch,
                ",".join(self.extents),
                self.elem,
                self.separate_instances,
                "forest" if share == "auto" else share,
            )
            expression = parse(text, input_name)
            with collected_notes() as notes:
                forest = build_forest(
                    expression,
                    policy,
                    self.forest or default_forest_name(input_name),
                    cast(Order, self.order),
                    # a plan must not depend on how the terms were written
                    # (unless the written order is the order asked for)
                    canonical=share == "auto" and self.order != "file",
                )
                if share == "auto":
                    forest = _planned(expression, forest, budget, extra)
        except OptionError as error:
            raise DiagnosticException(f"sequant frontend: {error}") from None
        except SequantError as error:
            offset = max(error.offset, 0)
            span = Span(offset, offset + 1, Input(text, input_name))
            raise ParseError(span, error.reason) from None
        except PolicyError as error:
            raise DiagnosticException(f"sequant frontend: {error}") from None
        if not self.quiet:
            for note in notes:
                sys.stderr.write(f"note: sequant frontend: {note}\n")
        return forest_module(forest)


def _planned(
    expression: Expression,
    forest: Forest,
    budget: int | None,
    extra: Fraction | None,
) -> Forest:
    """The planner's forest for the objective: the plans that never rebuild
    inside a loop (what ``schedule-batches`` schedules by default)."""
    from axisflow.scheduling.planner import plan_sharing

    layout = None
    try:
        layout = expression_layout(expression)
    except ResidualError as error:
        if any(term.operators for term in expression.terms):
            raise expression.error(error.reason, max(error.term, 0)) from None
    planned = plan_sharing(
        forest,
        layout,
        "auto",
        budget=budget,
        max_extra_flops=extra,
        rebuild_in_loops=False,
    )
    return planned.forest


@dataclass(frozen=True)
class SequantTextFrontend(SequantFrontend):
    """``SequantFrontend`` under the name ``txt``, so that xdsl-opt accepts
    ``.txt`` input files (it checks the extension even when ``-f`` is given)."""

    name: ClassVar[str] = "txt"
