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
  shared) or ``tree`` (each tree rebuilds it, in loops of its own: more
  multiply-adds, often a much smaller scheduled peak).
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
from pathlib import PurePath
from typing import IO, ClassVar, cast

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import DiagnosticException, ParseError
from xdsl.utils.frontend import Frontend
from xdsl.utils.lexer import Input, Span

from axisflow.dialects.batch import Batch
from axisflow.notes import collected_notes
from axisflow.order import Order
from axisflow.sequant.forest import BatchPolicy, PolicyError, build_forest
from axisflow.sequant.syntax import SequantError, parse


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
    share: str = "forest"
    """``forest`` or ``tree`` (a plain string, checked like ``order``)."""
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
            policy = BatchPolicy.make(
                self.batch,
                ",".join(self.extents),
                self.elem,
                self.separate_instances,
                self.share,
            )
            expression = parse(text, input_name)
            with collected_notes() as notes:
                forest = build_forest(
                    expression,
                    policy,
                    self.forest or default_forest_name(input_name),
                    cast(Order, self.order),
                )
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


@dataclass(frozen=True)
class SequantTextFrontend(SequantFrontend):
    """``SequantFrontend`` under the name ``txt``, so that xdsl-opt accepts
    ``.txt`` input files (it checks the extension even when ``-f`` is given)."""

    name: ClassVar[str] = "txt"
