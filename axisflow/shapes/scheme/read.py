"""Rebuilding a scheme from its text form in a session (:func:`build_scheme`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from axisflow.shapes.constraints import (
    DimAtLeast,
    DimIneq,
    DimLinear,
    RowIneq,
    RowPrefix,
    Terminal,
    TotalElems,
)
from axisflow.shapes.refs import DimRef
from axisflow.shapes.scheme.data import (
    Anchor,
    CaptureInput,
    Fact,
    InternalRows,
    LooseVariable,
    Padding,
)
from axisflow.shapes.scheme.model import Scheme
from axisflow.shapes.scheme.text import (
    SchemeText,
    SchemeTextError,
    TextDim,
    TextRow,
    TextRows,
    VarName,
)
from axisflow.shapes.session import Session
from axisflow.shapes.tensors import Shape
from axisflow.shapes.terms import (
    Dim,
    DimVar,
    Row,
    RowVar,
    Size,
)

# ------------------------------------------------------------------ binding


def build_scheme(
    text: SchemeText,
    *,
    session: Session,
    label: str,
    anchors: Sequence[Shape],
    ref: Callable[[str], DimRef],
    old_dim: Callable[[int], DimVar] | None = None,
    old_row: Callable[[int], RowVar] | None = None,
) -> Scheme:
    """A scheme of ``session`` from its text form.

    Every declared variable gets a fresh variable of the session; anchors are
    given in order; ``ref(label)`` gives the capture reference of a label.
    Loose variables name the session's own variables and need ``old_dim`` /
    ``old_row`` (they cannot move between sessions).
    """
    if len(anchors) != len(text.anchors):
        raise SchemeTextError(
            f"the shape scheme {label} has {len(text.anchors)} anchor(s) but "
            f"{len(anchors)} shape(s) were given for them"
        )
    variables: dict[VarName, DimVar | RowVar] = {}
    for name in (*text.generalized, *text.fixed):
        variables[name] = (
            session.fresh_dim_var() if name.kind == "d" else session.fresh_row_var()
        )

    def var(name: VarName) -> DimVar | RowVar:
        found = variables.get(name)
        if found is None:
            raise SchemeTextError(
                f"the shape scheme {label} uses {name.kind}{name.number}, which it "
                f"does not declare"
            )
        return found

    def dim(term: TextDim) -> Dim:
        if isinstance(term, Size):
            return term
        found = var(term)
        assert type(found) is DimVar
        return found

    def row(term: TextRow) -> Row:
        dims, tail = term
        found = None if tail is None else var(tail)
        assert found is None or type(found) is RowVar
        return Row(tuple(dim(d) for d in dims), found)

    def rows3(terms: TextRows) -> tuple[Row, Row, Row]:
        return (row(terms[0]), row(terms[1]), row(terms[2]))

    facts: list[Fact] = []
    for kind, parts, origin in text.facts:
        if kind == "ineq":
            facts.append(RowIneq(row(parts[0]), row(parts[1]), origin))  # type: ignore[arg-type]
        elif kind == "dim_ineq":
            facts.append(DimIneq(dim(parts[0]), dim(parts[1]), origin))  # type: ignore[arg-type]
        elif kind == "at_least":
            facts.append(DimAtLeast(dim(parts[0]), parts[1], origin))  # type: ignore[arg-type]
        elif kind == "total":
            count = parts[1]
            facts.append(
                TotalElems(
                    tuple(row(r) for r in parts[0]),  # type: ignore[union-attr]
                    dim(count) if isinstance(count, VarName) else count,  # type: ignore[arg-type]
                    origin,
                )
            )
        elif kind == "linear":
            linear_kind, terms, const, axis = parts
            facts.append(
                DimLinear(
                    tuple((coeff, dim(term)) for coeff, term, _ in terms),  # type: ignore[union-attr]
                    const,  # type: ignore[arg-type]
                    tuple(name for _, _, name in terms),  # type: ignore[union-attr]
                    axis,  # type: ignore[arg-type]
                    origin,
                    linear_kind,  # type: ignore[arg-type]
                )
            )
        elif kind == "prefix":
            whole, beg, rest = parts
            facts.append(
                RowPrefix(
                    row(whole),  # type: ignore[arg-type]
                    tuple(dim(d) for d in beg),  # type: ignore[union-attr]
                    row(rest),  # type: ignore[arg-type]
                    origin,
                )
            )
        else:
            facts.append(Terminal(row(parts[0]), kind == "param", origin))  # type: ignore[arg-type]
    loose: list[LooseVariable] = []
    for term, old in text.loose:
        if old_dim is None or old_row is None:
            raise SchemeTextError(
                f"the shape scheme {label} depends on the open variable "
                f"{old.kind}{old.number} of the session it was traced in; it cannot "
                f"be rebuilt in another session"
            )
        if old.kind == "d":
            loose.append(LooseVariable(old_dim(old.number), dim(term)))  # type: ignore[arg-type]
        else:
            loose.append(LooseVariable(old_row(old.number), row(term)))  # type: ignore[arg-type]
    marks = []
    for name, mark in text.marks:
        found = var(name)
        assert type(found) is RowVar
        marks.append((found, mark))
    gens = []
    for name, gen in text.gens:
        found = var(name)
        assert type(found) is RowVar
        gens.append((found, gen))
    return Scheme(
        session=session,
        label=label,
        args=tuple(rows3(rows) for _, rows in text.args),
        results=tuple(rows3(rows) for _, rows in text.results),
        anchors=tuple(
            Anchor(shape, rows3(rows))
            for shape, (_, rows) in zip(anchors, text.anchors, strict=True)
        ),
        internal=tuple(InternalRows(name, rows3(rows)) for name, rows in text.internal),
        facts=tuple(facts),
        marks=tuple(marks),
        gens=tuple(gens),
        captures=tuple(
            CaptureInput(
                ref(ref_label),
                row(term) if isinstance(term, tuple) else dim(term),
                origin,
                before,
            )
            for ref_label, term, origin, before in text.captures
        ),
        loose=tuple(loose),
        generalized=tuple(var(name) for name in text.generalized),
        fixed=tuple(var(name) for name in text.fixed),
        closings=session.closings,
        arg_names=tuple(name for name, _ in text.args),
        result_names=tuple(name for name, _ in text.results),
        paddings=tuple(
            Padding(where, index, kind, axis, dim(kernel), origin)
            for where, index, kind, axis, kernel, origin in text.paddings
        ),
    )
