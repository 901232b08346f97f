"""Rewind windows restore everything they added; variable ids are never reused."""

from __future__ import annotations

import pytest

from axisflow.shapes import (
    DimEq,
    DimRef,
    DimVar,
    Mark,
    PolicyMark,
    Row,
    RowIneq,
    Session,
    ShapeError,
    Size,
    Tensor,
)
from axisflow.shapes.terms import format_concrete_shape


def solved_text(s: Session, rows: tuple[Row, Row, Row]) -> str:
    """The rows as currently solved, variables printed as ``...``."""
    batch, input_, output = (s.solver.norm_row(row) for row in rows)
    return format_concrete_shape((batch, input_, output))


def mlp_session() -> tuple[Session, dict[str, Tensor], DimRef]:
    """A session with open state: bounds, relations, marks, a capture, a total."""
    s = Session()
    x = s.leaf("x", "8|->3")
    w1 = s.param("w1", "...->...")
    hidden = s.dim_ref("j")
    h = s.einsum("h", "...|i;j->i=>...|j", x, w1, capture_dims=[hidden])
    b = s.leaf("b")
    y = s.pointwise("y", h, b)
    data = s.leaf("data", "...->3")
    s.total_elems(data, 12)
    return s, {"x": x, "w1": w1, "h": h, "b": b, "y": y, "data": data}, hidden


def test_rewind_restores_the_full_session_state() -> None:
    s, t, hidden = mlp_session()
    before = s.state()
    mark = s.var_mark()
    with s.rewind():
        z = s.leaf("z", "8|->16")
        s.pointwise("q", t["y"], z)  # solves h's row and the capture
        s.set_dim(s.dim_ref("k"), 3)
        s.compose("c", s.param("w2", "...->2"), t["y"])
        assert s.state() != before
    assert s.state() == before
    assert s.var_mark() > mark  # the counter is never rewound
    s.set_dim(hidden, 5)
    s.close()
    assert t["h"].shape.dims() == ((8,), (), (5,))
    assert t["w1"].shape.dims() == ((), (5,), (3,))


def test_rewind_restores_after_a_closing_inside_the_window() -> None:
    s, t, hidden = mlp_session()
    before = s.state()
    rows_before = t["y"].shape.rows()
    with s.rewind():
        s.pointwise("q", t["y"], s.leaf("z", "8|->16"))
        s.close()
        assert t["y"].shape.dims() == ((8,), (), (16,))
        assert hidden.value == 16
        assert s.closings == 1
    assert s.state() == before
    assert t["y"].shape.rows() == rows_before
    with pytest.raises(ShapeError, match="not solved yet"):
        t["y"].shape.dims()
    # The session is usable: the same program closes again, differently.
    s.pointwise("q", t["y"], s.leaf("z", "8|->5"))
    s.close()
    assert hidden.value == 5
    assert t["y"].shape.dims() == ((8,), (), (5,))


def test_rewind_restores_after_a_shape_error_and_clears_the_taint() -> None:
    s, t, _ = mlp_session()
    before = s.state()
    with pytest.raises(ShapeError), s.rewind():
        s.pointwise("q", t["x"], s.leaf("z", "7|->3"))
    assert s.state() == before
    assert not s.tainted


def test_nested_windows_follow_stack_discipline() -> None:
    s, t, _ = mlp_session()
    outer_before = s.state()
    with s.rewind() as outer:
        s.pointwise("p", t["y"], s.leaf("z", "8|->4"))
        inner_before = s.state()
        with s.rewind() as inner:
            s.pointwise("q", t["y"], s.leaf("v", "2"))
            inner_tensors = {c.origin.tensor for c in inner.constraints()}
        assert inner_tensors == {"q", "v"}
        assert s.state() == inner_before
        # The inner window's constraints are gone from the outer window's.
        assert {c.origin.tensor for c in outer.constraints()} == {"p", "z"}
    assert s.state() == outer_before


def test_window_reads_off_its_constraints_in_emission_order() -> None:
    s, t, _ = mlp_session()
    with s.rewind() as window:
        z = s.leaf("z", "8|->4")
        s.pointwise("q", t["y"], z)
        constraints = window.constraints()
    assert constraints == tuple(
        c
        for c in constraints
        if c.origin.tensor in {"z", "q"}  # nothing from before the window
    )
    ineqs = [c for c in constraints if isinstance(c, RowIneq)]
    # pointwise emits C_k ⊑ A_k, C_k ⊑ B_k for batch, input, output in turn.
    assert [(str(c.origin.lhs), str(c.origin.rhs)) for c in ineqs] == [
        ("q.batch", "y.batch"),
        ("q.batch", "z.batch"),
        ("q.input", "y.input"),
        ("q.input", "z.input"),
        ("q.output", "y.output"),
        ("q.output", "z.output"),
    ]
    marks = [c for c in constraints if isinstance(c, PolicyMark)]
    assert {m.mark for m in marks} == {Mark.USED_IN_POINTWISE}
    with pytest.raises(ShapeError, match="read it off before it ends"):
        window.constraints()


def test_window_reports_young_variables_and_old_ones_it_changed() -> None:
    s, t, _ = mlp_session()
    y_output = t["y"].shape.current()[2]
    assert y_output.var is not None
    (y_axis,) = y_output.dims
    assert isinstance(y_axis, DimVar)
    untouched = t["data"].shape.current()[1].var
    assert untouched is not None
    with s.rewind() as window:
        s.pointwise("q", t["y"], s.leaf("z", "8|->4"))
        dims, rows = window.touched_variables()
        # y's (old) variables gained a relation and a lower bound in the window.
        assert not window.is_young(y_output.var)
        assert y_output.var.id in rows
        assert y_axis.id in dims
        assert s.dim_entry(y_axis).glb == Size(4)
        assert untouched.id not in rows
        # The template row variable q's output got is young.
        assert any(vid >= window.var_mark for vid in rows)


def test_shapes_made_in_a_rewound_window_are_discarded() -> None:
    s, t, _ = mlp_session()
    with s.rewind():
        z = s.leaf("z", "4")
    assert z.shape.discarded
    with pytest.raises(ShapeError, match="discarded by a rewind"):
        s.pointwise("q", t["y"], z)
    with pytest.raises(ShapeError, match="discarded by a rewind"):
        z.shape.dims()
    assert not s.tainted


def test_window_cost_does_not_depend_on_the_rest_of_the_session() -> None:
    """The trail a window writes has the same length in a small and a big session."""

    def window_trail_length(extra_ops: int) -> int:
        s = Session()
        x = s.leaf("x")
        for i in range(extra_ops):  # unrelated open constraints
            s.pointwise(f"u{i}", s.leaf(f"a{i}"), s.leaf(f"b{i}", "...,3"))
        with s.rewind():
            start = len(s.trail.entries)
            s.pointwise("q", x, s.leaf("z", "2|4->5"))
            s.compose("c", s.param("w", "...->7"), x)
            length = len(s.trail.entries) - start
        assert not s.trail.entries
        return length

    assert window_trail_length(0) == window_trail_length(300)


def test_replaying_a_window_reproduces_its_solution() -> None:
    """Constraints are plain data: re-adding them after a rewind solves the same."""
    s = Session()
    a = s.leaf("a", "...")
    b = s.leaf("b", "2,3")
    with s.rewind() as window:
        c = s.pointwise("c", a, b)
        constraints = window.constraints()
        solved = solved_text(s, c.shape.rows())
    assert c.shape.discarded
    for constraint in constraints:
        s.add(constraint)
    # The same solution, up to the names of the template variables.
    assert solved_text(s, c.shape.rows()) == solved
    s.close()
    assert a.shape.dims() == ((), (), (2, 3))


def test_add_taints_on_contradiction_and_rewind_untaints() -> None:
    s = Session()
    d = DimVar(s.var_mark())
    s.fresh_dim_var()
    s.add(DimEq(d, d, s.leaf("a", "3").origin))
    with s.rewind():
        x = s.leaf("x", "3")
        with pytest.raises(ShapeError):
            s.pointwise("y", x, s.leaf("z", "4"))
        assert s.tainted
    assert not s.tainted
