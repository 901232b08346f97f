"""The :class:`Scheme` value and what an application makes (:class:`Application`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from axisflow.shapes.constraints import (
    Mark,
)
from axisflow.shapes.scheme.data import (
    Anchor,
    CaptureInput,
    Fact,
    InternalRows,
    LooseVariable,
    Padding,
    Rows,
    compile_fact,
)
from axisflow.shapes.scheme.text import scheme_lines
from axisflow.shapes.session import Session
from axisflow.shapes.tensors import Shape
from axisflow.shapes.terms import (
    DimVar,
    Origin,
    Row,
    RowVar,
)


class Scheme:
    """A traced function's shapes; see the module docstring and :func:`trace`.

    Variables: ``generalized`` scheme variables stand for the trace's own;
    ``fixed`` ones for pre-existing open variables (tied to the anchors).
    Both are renamed per application; the anchors' equalities keep the fixed
    ones tied to the tensors they stand for.
    """

    def __init__(
        self,
        *,
        session: Session,
        label: str,
        args: tuple[Rows, ...],
        results: tuple[Rows, ...],
        anchors: tuple[Anchor, ...],
        internal: tuple[InternalRows, ...],
        facts: tuple[Fact, ...],
        marks: tuple[tuple[RowVar, Mark], ...],
        gens: tuple[tuple[RowVar, int], ...],
        captures: tuple[CaptureInput, ...],
        loose: tuple[LooseVariable, ...],
        generalized: tuple[DimVar | RowVar, ...],
        fixed: tuple[DimVar | RowVar, ...],
        closings: int,
        arg_names: tuple[str, ...],
        result_names: tuple[str, ...],
        traced_args: tuple[Shape, ...] = (),
        traced_results: tuple[Shape, ...] = (),
        traced_internal: tuple[Shape, ...] = (),
        paddings: tuple[Padding, ...] = (),
    ) -> None:
        self.session = session
        self.label = label
        self.args = args
        self.results = results
        self.anchors = anchors
        self.internal = internal
        self.facts = facts
        self.marks = marks
        self.gens = gens
        self.captures = captures
        self.loose = loose
        self.generalized = generalized
        self.fixed = fixed
        self.closings = closings
        self.arg_names = arg_names
        self.result_names = result_names
        self.traced_args = traced_args
        self.traced_results = traced_results
        self.traced_internal = traced_internal
        self.paddings = paddings
        self._dims = tuple(v for v in (*generalized, *fixed) if type(v) is DimVar)
        self._rows = tuple(v for v in (*generalized, *fixed) if type(v) is RowVar)
        # The distinct origins of the facts and captures, stamped once per
        # application, and each fact as (kind code, terms..., origin index).
        origins: dict[int, Origin] = {}
        for item in (*facts, *captures, *paddings):
            origins.setdefault(id(item.origin), item.origin)
        self._origins = tuple(origins.values())
        self._origin_index = {key: i for i, key in enumerate(origins)}
        self._plan = tuple(compile_fact(fact, self._origin_index) for fact in facts)
        self._places: dict[int, tuple[str, int]] | None = None
        # Presolved values per source values (presolve.Solved).
        self._presolve_memo: dict[tuple[Row | None, ...], Any] = {}

    @property
    def arity(self) -> int:
        """The number of arguments."""
        return len(self.args)

    @property
    def num_results(self) -> int:
        """The number of results."""
        return len(self.results)

    def locate(self, shape: Shape) -> tuple[str, int] | None:
        """Where a shape of the trace stands in the scheme.

        ``("arg", i)``, ``("internal", i)``, ``("anchor", i)`` or ``("result",
        i)`` (the first that applies); ``None`` for a shape the scheme does not
        hold. Tools use it to relate the values of a traced body to an
        application's shapes.
        """
        if self._places is None:
            places: dict[int, tuple[str, int]] = {}
            for what, shapes in (
                ("result", self.traced_results),
                ("anchor", tuple(a.shape for a in self.anchors)),
                ("internal", self.traced_internal),
                ("arg", self.traced_args),
            ):
                for index, candidate in enumerate(shapes):
                    places[id(candidate)] = (what, index)
            self._places = places
        return self._places.get(id(shape))

    def to_lines(self) -> list[str]:
        """The scheme as text, one item per line (see :mod:`.text`)."""
        return scheme_lines(self)

    def __str__(self) -> str:
        header = (
            f"shape scheme {self.label}: {self.arity} argument(s), "
            f"{self.num_results} result(s)"
        )
        return "\n".join([header, *("  " + line for line in self.to_lines())])

    def __repr__(self) -> str:
        return f"<Scheme {self.label}/{self.arity}->{self.num_results}>"


@dataclass(frozen=True)
class Application:
    """What :func:`instantiate` made: the application's internal shapes.

    ``internal[i]`` has the renamed rows of ``scheme.internal[i]``; it is
    registered with the next closing unless ``NO_INTERNAL_ROWS`` was given
    or presolving made it concrete (nothing to close; see
    :func:`~axisflow.shapes.scheme.presolve.concrete_internal`).
    """

    scheme: Scheme
    application: str
    internal: tuple[Shape, ...]
