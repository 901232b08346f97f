"""Engine hooks added for shape schemes: each does what its docstring says."""

from __future__ import annotations

import pytest

from axisflow.shapes import (
    Constraint,
    DeferredCount,
    Session,
    SetDim,
    Shape,
    ShapeError,
    TotalElems,
)
from axisflow.shapes.trail import MISSING


def test_registering_a_shape_twice_before_a_closing_registers_it_once() -> None:
    s = Session()
    a = s.leaf("a", "3")
    assert s.is_registered(a.shape)
    s.register_shape(a.shape)
    assert list(s.registered_shapes).count(a.shape) == 1
    s.close()
    assert not s.is_registered(a.shape)  # closing empties the list
    s.register_shape(a.shape)
    s.register_shape(a.shape)
    assert list(s.registered_shapes) == [a.shape]
    with s.rewind():
        b = s.leaf("b", "4")
        s.register_shape(a.shape)
        assert list(s.registered_shapes) == [a.shape, b.shape]
    assert list(s.registered_shapes) == [a.shape]
    assert not s.is_registered(b.shape)


def test_shape_creation_is_ordered_against_var_mark() -> None:
    s = Session()
    before = s.leaf("before")
    mark = s.var_mark()
    after = s.leaf("after")
    # A shape holding no variable at all is ordered too.
    bare = Shape(s, "bare", *before.shape.rows())
    assert before.shape.created_at < mark <= after.shape.created_at
    assert bare.created_at >= mark
    assert s.var_mark() > bare.created_at


def test_capture_references_made_in_a_window_are_discarded_by_its_rewind() -> None:
    s = Session()
    kept = s.dim_ref("k")
    with s.rewind():
        dropped = s.dim_ref("d")
        assert list(s.refs) == [kept, dropped]
    assert dropped.discarded and not kept.discarded
    assert list(s.refs) == [kept]


def test_the_session_knows_its_open_windows() -> None:
    s = Session()
    assert s.window is None
    x = s.leaf("x", "3")
    with s.rewind() as outer:
        assert s.window is outer and not outer.tainted_at_open
        with pytest.raises(ShapeError):
            s.pointwise("bad", x, s.leaf("y", "4"))
        with s.rewind() as inner:
            assert s.window is inner and inner.tainted_at_open
            assert inner.log_start == len(s.log)
            assert inner.trail_start == len(s.trail.entries)
        assert s.window is outer
    assert s.window is None


def test_the_error_that_tainted_the_session_is_kept_until_rewound() -> None:
    s = Session()
    x = s.leaf("x", "3")
    with s.rewind():
        with pytest.raises(ShapeError) as info:
            s.pointwise("bad", x, s.leaf("y", "4"))
        assert s.taint_error is info.value
        with pytest.raises(ShapeError):
            s.pointwise("worse", x, s.leaf("z", "5"))
        assert s.taint_error is info.value  # the first error tainted it
    assert s.taint_error is None and not s.tainted


def test_constraint_guard_runs_before_anything_is_written() -> None:
    s = Session()
    ref = s.dim_ref("h")
    x = s.leaf("x", "2")
    seen: list[Constraint] = []

    def refuse_set_dim(constraint: Constraint) -> None:
        seen.append(constraint)
        if isinstance(constraint, SetDim | TotalElems):
            raise ShapeError(f"refused {type(constraint).__name__}")

    before = s.state()
    with s.guard_constraints(refuse_set_dim):
        with pytest.raises(ShapeError, match="refused SetDim"):
            s.set_dim(ref, 3)
        with pytest.raises(ShapeError, match="refused TotalElems"):
            s.total_elems(x, DeferredCount("bytes", lambda: 2))
        assert s.state() == before
        s.pointwise("y", x)
    assert any(c.origin.tensor == "y" for c in seen)
    s.set_dim(ref, 3)  # the guard is gone
    assert ref.value == 3


def test_use_observer_sees_the_operands_of_operations() -> None:
    s = Session()
    a, b = s.leaf("a", "3"), s.leaf("b")
    used: list[str] = []
    with s.observe_uses(lambda shape: used.append(shape.name)):
        c = s.pointwise("c", a, b)
        s.compose("d", c, a)
        s.note_use(b.shape)
    s.pointwise("e", a)
    assert used == ["a", "b", "c", "a", "b"]


def test_trail_reads_values_from_before_a_point() -> None:
    s = Session()
    table: dict[str, int] = {"kept": 1, "changed": 2}
    trail = s.trail
    with s.rewind():
        start = len(trail.entries)
        trail.set_item(table, "changed", 20)
        trail.set_item(table, "changed", 200)
        trail.set_item(table, "added", 3)
        assert trail.values_before(start, table) == {"changed": 2, "added": MISSING}
    assert table == {"kept": 1, "changed": 2}
