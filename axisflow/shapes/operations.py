"""The operations of a session (OCANNL's ``shape.ml``): constraints per operation.

Each operation checks its input (a malformed call writes nothing), builds its
constraints and hands them to the session, which solves them at Stage 1:

* ``pointwise``: ``C_k ⊑ X_k`` for every operand and kind;
* ``compose``: ``A_input ⊑ B_output`` and the result's rows from both;
* ``transpose``: input and output swap;
* ``einsum``: each tensor's rows equal the spec's rows
  (:func:`~axisflow.shapes.spec.einsum_rows`), with the spec's pending
  equations;
* ``leaf``, ``param``, ``fresh``: a tensor's rows from its spec, terminal.

:class:`Operations` is mixed into :class:`~axisflow.shapes.session.Session`;
what it needs of the session is declared here and defined there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NoReturn

from axisflow.gc_pause import collector_paused
from axisflow.shapes.concrete import (
    broadcast,
    concrete_rows,
    concrete_spec_rows,
    fits,
)
from axisflow.shapes.constraints import (
    CaptureBind,
    Constraint,
    DimAtLeast,
    DimLinear,
    Mark,
    PaddedAxis,
    PolicyMark,
    RowEq,
    RowIneq,
    RowPrefix,
    Terminal,
)
from axisflow.shapes.refs import DimRef
from axisflow.shapes.spec import (
    ShapeSpec,
    einsum_rows,
    item_text,
    parse_einsum_spec,
    parse_shape_spec,
    unpadded_convolution,
)
from axisflow.shapes.tensors import FastShape, Role, Shape, Tensor
from axisflow.shapes.terms import (
    KINDS,
    DimVar,
    Kind,
    Origin,
    Row,
    RowVar,
    Side,
)

SPEC_SIDES = {kind: Side("its spec", kind) for kind in KINDS}


class Operations:
    """The tensor-making operations of a session."""

    # ---------------------------------------- provided by the session

    def _add(self, constraint: Constraint) -> None:
        raise NotImplementedError

    def _origin(
        self,
        operation: str,
        tensor: str,
        operands: Sequence[Tensor] = (),
        *,
        detail: str | None = None,
        site: object = None,
    ) -> Origin:
        raise NotImplementedError

    def _fail_input(self, message: str) -> NoReturn:
        raise NotImplementedError

    def _check_text(self, operation: str, what: str, value: object) -> None:
        raise NotImplementedError

    def _check_operands(
        self, operation: str, name: str, operands: Sequence[Any]
    ) -> None:
        raise NotImplementedError

    def _new_shape(self, name: str) -> Shape:
        raise NotImplementedError

    def register_shape(self, shape: Shape) -> None:
        """Have the next closing solve the shape (defined by the session)."""
        raise NotImplementedError

    def _leave_fast_mode(self) -> None:
        raise NotImplementedError

    def _fast_allowed(self) -> bool:
        raise NotImplementedError

    def _fast_result(
        self,
        op: str,
        name: str,
        args: object,
        origin: Origin,
        rows: tuple[Row, Row, Row],
        provisional: bool,
        mints: int,
    ) -> FastShape:
        raise NotImplementedError

    def fresh_dim_var(self) -> DimVar:
        """A fresh dim variable of the session."""
        raise NotImplementedError

    def fresh_row_var(self) -> RowVar:
        """A fresh row variable of the session."""
        raise NotImplementedError

    # ---------------------------------------------------- the operations

    def _terminal(
        self, name: str, spec: str | None, role: Role, site: object
    ) -> Tensor:
        is_param = role == "param"
        self._check_text(role, "name", name)
        if spec is not None:
            self._check_text(f"{role} '{name}'", "spec", spec)
        parsed = parse_shape_spec(spec) if spec is not None else None
        origin = self._origin(
            role, name, detail=None if spec is None else f"spec {spec!r}", site=site
        )
        if spec is not None and self._fast_allowed():
            rows = concrete_spec_rows(spec)
            if rows is not None:
                shape = self._fast_result(role, name, spec, origin, rows, False, 0)
                return Tensor(name, shape, role, origin)
        self._leave_fast_mode()
        shape = self._new_shape(name)
        self._emit_terminal(shape, parsed, is_param, origin)
        return Tensor(name, shape, role, origin)

    def _emit_terminal(
        self, shape: Shape, parsed: ShapeSpec | None, is_param: bool, origin: Origin
    ) -> None:
        """The general path of a leaf or parameter: its rows equal its spec's, terminal."""
        for kind in KINDS:
            row = shape.row(kind)
            if parsed is not None:
                row_spec = parsed.row(kind)
                spec_row = Row(
                    row_spec.sizes, self.fresh_row_var() if row_spec.is_open else None
                )
                if row_spec.beg:
                    # "3,...,7": [...s, 7] with s = [3, ...r] (as an einsum's
                    # axes before a row variable).
                    assert spec_row.var is not None
                    self._add(
                        RowPrefix(
                            Row((), spec_row.var),
                            row_spec.beg,
                            Row((), self.fresh_row_var()),
                            origin.with_sides(shape.side(kind), SPEC_SIDES[kind]),
                        )
                    )
                self._add(
                    RowEq(
                        row,
                        spec_row,
                        origin.with_sides(shape.side(kind), SPEC_SIDES[kind]),
                    )
                )
            self._add(
                Terminal(row, is_param, origin.with_sides(shape.side(kind), None))
            )

    @collector_paused
    def leaf(
        self, name: str, spec: str | None = None, *, site: object = None
    ) -> Tensor:
        """A data tensor (terminal, not a parameter); ``spec=None`` leaves all rows open."""
        return self._terminal(name, spec, "leaf", site)

    @collector_paused
    def param(
        self, name: str, spec: str | None = None, *, site: object = None
    ) -> Tensor:
        """A parameter: unspecified dims are inferred; an uninferable one is an error at closing."""
        return self._terminal(name, spec, "param", site)

    @collector_paused
    def fresh(self, name: str, *, site: object = None) -> Tensor:
        """A tensor with all three rows open and no constraint (tracers, placeholders)."""
        self._leave_fast_mode()
        self._check_text("fresh", "name", name)
        origin = self._origin("fresh", name, site=site)
        return Tensor(name, self._new_shape(name), "fresh", origin)

    # ------------------------------------------------------------- operations

    @collector_paused
    def pointwise(self, name: str, *operands: Tensor, site: object = None) -> Tensor:
        """An elementwise operation: every row of the result broadcasts from each operand's."""
        if not operands:
            self._fail_input(f"pointwise '{name}' needs at least one operand")
        self._check_operands("pointwise", name, operands)
        origin = self._origin("pointwise", name, operands, site=site)
        if self._fast_allowed():
            known = [concrete_rows(operand.shape) for operand in operands]
            if None not in known:
                found = [rows for rows, _ in known]  # type: ignore[misc]
                solved = [broadcast([rows[k].dims for rows in found]) for k in range(3)]
                if None not in solved:
                    (batch, b_ids), (input_, i_ids), (output, o_ids) = solved  # type: ignore[misc]
                    shape = self._fast_result(
                        "pointwise",
                        name,
                        tuple(operand.shape for operand in operands),
                        origin,
                        (Row(batch), Row(input_), Row(output)),
                        True,
                        b_ids + i_ids + o_ids,
                    )
                    return Tensor(name, shape, "result", origin)
        self._leave_fast_mode()
        result = self._new_shape(name)
        self._emit_pointwise(origin, result, [t.shape for t in operands])
        return Tensor(name, result, "result", origin)

    def _emit_pointwise(
        self, origin: Origin, result: Shape, operands: Sequence[Shape]
    ) -> None:
        """The general path of ``pointwise``: marks, then ``C_k ⊑ X_k``."""
        for shape in (result, *operands):
            self._add(
                PolicyMark(
                    shape.input,
                    Mark.USED_IN_POINTWISE,
                    origin,  # a mark cannot fail: no sides to name
                )
            )
        for kind in KINDS:
            for operand in operands:
                self._ineq(origin, result, kind, operand, kind)

    def _ineq(
        self, origin: Origin, res: Shape, res_kind: Kind, opnd: Shape, opnd_kind: Kind
    ) -> None:
        """``res.res_kind ⊑ opnd.opnd_kind`` with the sides named in the origin."""
        self._add(
            RowIneq(
                res.row(res_kind),
                opnd.row(opnd_kind),
                origin.with_sides(res.side(res_kind), opnd.side(opnd_kind)),
            )
        )

    @collector_paused
    def compose(
        self, name: str, a: Tensor, b: Tensor, *, site: object = None
    ) -> Tensor:
        """``a * b``, matrix-style: ``a``'s input axes contract with ``b``'s output axes."""
        self._check_operands("compose", name, (a, b))
        origin = self._origin("compose", name, (a, b), site=site)
        if self._fast_allowed():
            known_a, known_b = concrete_rows(a.shape), concrete_rows(b.shape)
            # ``a``'s input row is the result side of ``a.input ⊑ b.output``:
            # a result's open rows could take axes there (general path only).
            if known_a is not None and known_b is not None and not known_a[1]:
                rows_a, rows_b = known_a[0], known_b[0]
                batch = broadcast((rows_a[0].dims, rows_b[0].dims))
                input_ = rows_b[1].dims
                output = rows_a[2].dims
                if batch is not None and fits(rows_a[1].dims, rows_b[2].dims):
                    ids = batch[1]
                    ids += len(input_) + 1 if input_ else 0
                    ids += len(output) + 1 if output else 0
                    shape = self._fast_result(
                        "compose",
                        name,
                        (a.shape, b.shape),
                        origin,
                        (Row(batch[0]), rows_b[1], rows_a[2]),
                        True,
                        ids,
                    )
                    return Tensor(name, shape, "result", origin)
        self._leave_fast_mode()
        result = self._new_shape(name)
        self._emit_compose(origin, result, a.shape, b.shape)
        return Tensor(name, result, "result", origin)

    def _emit_compose(self, origin: Origin, result: Shape, a: Shape, b: Shape) -> None:
        """The general path of ``compose``."""
        self._add(
            PolicyMark(
                a.input,
                Mark.USED_IN_SPEC_OR_COMPOSE,
                origin,
            )
        )
        self._ineq(origin, a, Kind.INPUT, b, Kind.OUTPUT)
        self._ineq(origin, result, Kind.BATCH, a, Kind.BATCH)
        self._ineq(origin, result, Kind.BATCH, b, Kind.BATCH)
        self._ineq(origin, result, Kind.INPUT, b, Kind.INPUT)
        self._ineq(origin, result, Kind.OUTPUT, a, Kind.OUTPUT)

    @collector_paused
    def transpose(self, name: str, a: Tensor, *, site: object = None) -> Tensor:
        """Swap the input and output rows of ``a``."""
        self._check_operands("transpose", name, (a,))
        origin = self._origin("transpose", name, (a,), site=site)
        if self._fast_allowed():
            known = concrete_rows(a.shape)
            if known is not None:
                batch, input_, output = known[0]
                ids = sum(len(row.dims) + 1 for row in known[0] if row.dims)
                shape = self._fast_result(
                    "transpose",
                    name,
                    (a.shape,),
                    origin,
                    (batch, output, input_),
                    True,
                    ids,
                )
                return Tensor(name, shape, "result", origin)
        self._leave_fast_mode()
        result = self._new_shape(name)
        self._emit_transpose(origin, result, a.shape)
        return Tensor(name, result, "result", origin)

    def _emit_transpose(self, origin: Origin, result: Shape, a: Shape) -> None:
        """The general path of ``transpose``."""
        self._ineq(origin, result, Kind.BATCH, a, Kind.BATCH)
        self._ineq(origin, result, Kind.INPUT, a, Kind.OUTPUT)
        self._ineq(origin, result, Kind.OUTPUT, a, Kind.INPUT)

    @collector_paused
    def einsum(
        self,
        name: str,
        spec: str,
        *operands: Tensor,
        capture_dims: Sequence[DimRef] = (),
        site: object = None,
    ) -> Tensor:
        """Generalized einsum: each tensor's rows equal the spec's rows.

        Spec labels become fresh dim variables, ``...`` a fresh row variable
        per kind, ``..name..`` a fresh row variable per name. Each capture
        reference is bound to the variable of its label.
        """
        self._leave_fast_mode()
        self._check_text("einsum", "name", name)
        self._check_text(f"einsum '{name}'", "spec", spec)
        if isinstance(capture_dims, str) or not isinstance(capture_dims, Sequence):
            raise TypeError(
                f"einsum '{name}': capture_dims must be a sequence of dim_ref()s, "
                f"got {capture_dims!r}"
            )
        parsed = parse_einsum_spec(spec)
        if len(parsed.operands) != len(operands):
            self._fail_input(
                f"einsum '{name}': spec {spec!r} has {len(parsed.operands)} operand(s) "
                f"but {len(operands)} were given"
            )
        self._check_operands("einsum", name, operands)
        capturable = parsed.labels() | parsed.row_var_names()
        for ref in capture_dims:
            if not isinstance(ref, DimRef) or ref._session is not self:
                self._fail_input(
                    f"einsum '{name}': capture_dims must hold this session's dim_ref()s, "
                    f"got {ref!r}"
                )
            if ref.label not in capturable:
                self._fail_input(
                    f"einsum '{name}': capture reference '{ref.label}' names no label "
                    f"or row variable of spec {spec!r}"
                )
        unpadded = unpadded_convolution(parsed)
        if unpadded is not None:
            self._fail_input(
                f"einsum '{name}': spec {spec!r}: use_padding must be specified in "
                f"convolution spec (use = for true, < for false): "
                f"'{item_text(unpadded)}'"
            )
        origin = self._origin(
            "einsum", name, operands, detail=f"spec {spec!r}", site=site
        )
        result = self._new_shape(name)
        rows = einsum_rows(parsed, self.fresh_dim_var, self.fresh_row_var)
        spec_side = f"spec {spec!r}"
        for var in rows.row_vars:
            self._add(PolicyMark(Row((), var), Mark.USED_IN_SPEC_OR_COMPOSE, origin))
        for var, n in rows.at_least:
            self._add(DimAtLeast(var, n, origin))
        for front, beg, rest in rows.prefixes:
            self._add(
                RowPrefix(
                    Row((), front),
                    beg,
                    Row((), rest),
                    origin.with_sides(Side(spec_side), Side(spec_side)),
                )
            )
        for terms, const, names, text, kind in rows.linears:
            self._add(DimLinear(terms, const, names, text, origin, kind))
        tensors = (*(operand.shape for operand in operands), result)
        for shape, spec_rows in zip(
            tensors, (*rows.operands, rows.result), strict=True
        ):
            for kind, spec_row in zip(KINDS, spec_rows, strict=True):
                self._add(
                    RowEq(
                        shape.row(kind),
                        spec_row,
                        origin.with_sides(shape.side(kind), Side(spec_side, kind)),
                    )
                )
        for position, kind, index, kernel in rows.paddings:
            shape = tensors[position]
            if shape is not result:
                # Its closing publishes the margins (it may be closed already).
                self.register_shape(shape)
            self._add(
                PaddedAxis(
                    shape.row(kind),
                    index,
                    kernel,
                    origin.with_sides(shape.side(kind), Side(spec_side, kind)),
                )
            )
        for ref in capture_dims:
            var: DimVar | RowVar = (
                rows.labels[ref.label]
                if ref.label in rows.labels
                else rows.named_rows[ref.label]
            )
            self._add(CaptureBind(ref, var, origin))
        return Tensor(name, result, "result", origin)
