"""The engine on the note's worked examples and the behaviours issue 5 lists."""

from __future__ import annotations

import gc

import pytest

from axisflow.shapes import (
    DeferredCount,
    DimVar,
    Kind,
    Origin,
    Row,
    RowIneq,
    Session,
    ShapeError,
    Side,
    Size,
)

# Each test runs on the concrete fast path and on the solver (tests/shapes/conftest.py).
pytestmark = pytest.mark.both_engine_paths

# ---------------------------------------------------------------- worked examples


def test_example_1_pointwise_bound_then_closing() -> None:
    # c = a + b, a's output [3] closed, b and c open.
    s = Session()
    a = s.leaf("a", "3")
    b = s.leaf("b")
    c = s.pointwise("c", a, b)
    c_out = c.shape.current()[2]
    assert c_out.var is not None and [d for d in c_out.dims] == [
        a.shape.current()[2].dims[0]
    ]
    assert c.shape.describe() == "...|...->...,3"
    # b.output is bounded below by c.output = <r>[3], not solved yet.
    b_out_var = b.shape.current()[2].var
    assert b_out_var is not None
    entry = s.row_entry(b_out_var)
    assert entry.value is None
    assert [repr(row) for row in entry.glbs] == [repr(c_out)]
    s.close()
    assert b.shape.dims() == ((), (), (3,))
    assert c.shape.dims() == ((), (), (3,))


def test_example_2_two_lower_bounds_demote_to_broadcast_unit() -> None:
    s = Session()
    three = s.leaf("three", "3")
    five = s.leaf("five", "5")
    x = s.leaf("x", "...|...->d".replace("d", "..."))  # all rows open
    s.pointwise("p", three, x)
    s.pointwise("q", five, x)
    # Not an error: x's axis must broadcast to both 3 and 5, so it is 1.
    s.close()
    assert x.shape.dims() == ((), (), (1,))


def test_example_3_compose_infers_the_contracted_axes() -> None:
    s = Session()
    w = s.param("w", "...->4")
    x = s.leaf("x", "3")
    y = s.compose("y", w, x)
    s.close()
    assert w.shape.dims() == ((), (3,), (4,))
    assert y.shape.dims() == ((), (), (4,))


# ------------------------------------------------------------------ broadcasting


def test_broadcasting_extends_rows_from_the_left() -> None:
    s = Session()
    a = s.leaf("a", "2,3")
    b = s.leaf("b", "3")
    c = s.leaf("c", "4,1,3")
    ab = s.pointwise("ab", a, b)
    abc = s.pointwise("abc", ab, c)
    s.close()
    assert ab.shape.dims() == ((), (), (2, 3))
    assert abc.shape.dims() == ((), (), (4, 2, 3))


def test_broadcasting_is_per_row() -> None:
    s = Session()
    a = s.leaf("a", "8|3->2")
    b = s.leaf("b", "2")
    c = s.pointwise("c", a, b)
    s.close()
    assert c.shape.dims() == ((8,), (3,), (2,))


def test_size_one_broadcasts_even_when_written_by_the_user() -> None:
    s = Session()
    a = s.leaf("a", "1,3")
    b = s.leaf("b", "5,1")
    c = s.pointwise("c", a, b)
    s.close()
    assert c.shape.dims() == ((), (), (5, 3))


def test_result_with_only_unit_operands_closes_to_one() -> None:
    s = Session()
    a = s.leaf("a", "1")
    b = s.leaf("b", "1")
    c = s.pointwise("c", a, b)
    d = s.pointwise("d", c, s.leaf("e", "7"))
    s.close()
    # c keeps NumPy's answer even though d broadcast it to 7.
    assert c.shape.dims() == ((), (), (1,))
    assert d.shape.dims() == ((), (), (7,))


def test_demotion_to_the_broadcast_unit_happens_at_stage_one() -> None:
    s = Session()
    x = s.leaf("x")
    s.einsum("e", "i=>i", x)  # x.output is one axis of unknown size
    s.pointwise("p", s.leaf("three", "3"), x)
    x_axis = x.shape.current()[2].dims[0]
    assert isinstance(x_axis, DimVar)
    assert s.dim_entry(x_axis).glb == Size(3)
    s.pointwise("q", s.leaf("five", "5"), x)
    # Lower bounds 3 and 5: only the broadcast unit is above both, at once.
    assert x.shape.dims() == ((), (), (1,))


def test_result_side_unit_forces_the_operand_to_one() -> None:
    # 1 is the top of the broadcast order: only 1 broadcasts to 1.
    s = Session()
    a = s.leaf("a", "1->2")
    b = s.leaf("b")
    s.einsum("e", "i=>i", b)  # b.output is one axis of unknown size
    s.compose("c", a, b)  # a.input [1] must take b.output
    assert b.shape.dims() == ((), (), (1,))
    s.pointwise("q", b, s.leaf("five", "5"))
    s.close()
    assert b.shape.dims() == ((), (), (1,))


def test_row_lower_bounds_join_at_closing() -> None:
    # x must broadcast to p = <r>[3] and q = <r'>[2, 5]. The join keeps the
    # shorter bound's row variable (as OCANNL does), so x's extra axes are p's:
    # the most specific answer, x = [2, 1] and p = [2, 3].
    s = Session()
    x = s.leaf("x", "...")
    s.pointwise("p", s.leaf("three", "3"), x)
    s.pointwise("q", s.leaf("five", "2,5"), x)
    out_var = x.shape.current()[2].var
    assert out_var is not None
    assert len(s.row_entry(out_var).glbs) == 2
    s.close()
    assert x.shape.dims() == ((), (), (2, 1))


def test_terminal_row_takes_its_lower_bound() -> None:
    s = Session()
    x = s.leaf("x")
    s.pointwise("y", x, s.leaf("z", "2|4->5,6"))
    s.close()
    assert x.shape.dims() == ((2,), (4,), (5, 6))


# ------------------------------------------------------------------- compose


def test_compose_infers_the_hidden_dimension_of_a_second_layer() -> None:
    s = Session()
    x = s.leaf("x", "8|->3")
    w1 = s.param("w1", "...->16")
    h = s.pointwise("h", s.compose("wx", w1, x), s.param("b1", "16"))
    w2 = s.param("w2", "...->2")
    y = s.compose("y", w2, h)
    s.close()
    assert w1.shape.dims() == ((), (3,), (16,))
    assert w2.shape.dims() == ((), (16,), (2,))
    assert y.shape.dims() == ((8,), (), (2,))


def test_compose_contracts_input_with_output_and_keeps_batches() -> None:
    s = Session()
    a = s.leaf("a", "2|3->4")
    b = s.leaf("b", "2|5->3")
    c = s.compose("c", a, b)
    s.close()
    assert c.shape.dims() == ((2,), (5,), (4,))


def test_compose_operand_may_broadcast_into_the_contraction() -> None:
    s = Session()
    a = s.leaf("a", "3->4")
    b = s.leaf("b", "1")
    c = s.compose("c", a, b)
    s.close()
    assert c.shape.dims() == ((), (), (4,))


def test_transpose_swaps_input_and_output() -> None:
    s = Session()
    a = s.leaf("a", "2|3->4")
    t = s.transpose("t", a)
    s.close()
    assert t.shape.dims() == ((2,), (4,), (3,))


# -------------------------------------------------------------------- einsum


def test_einsum_closed_rows_matmul() -> None:
    s = Session()
    a = s.leaf("a", "2,3")
    b = s.leaf("b", "3,4")
    c = s.einsum("c", "ij;jk=>ik", a, b)
    s.close()
    assert c.shape.dims() == ((), (), (2, 4))


def test_einsum_closed_rows_reject_extra_axes() -> None:
    s = Session()
    a = s.leaf("a", "7,2,3")
    b = s.leaf("b", "3,4")
    with pytest.raises(ShapeError, match="different numbers of axes"):
        s.einsum("c", "ij;jk=>ik", a, b)


def test_einsum_equalities_do_not_broadcast() -> None:
    s = Session()
    a = s.leaf("a", "2,1")
    b = s.leaf("b", "3,4")
    with pytest.raises(ShapeError) as info:
        s.einsum("c", "ij;jk=>ik", a, b)
    assert str(info.value) == (
        "einsum 'c' of a, b (spec 'ij;jk=>ik'): output axes disagree: b.output has "
        "size 3 but spec 'ij;jk=>ik'.output has size 1"
    )


def test_einsum_open_rows_carry_the_other_axes() -> None:
    s = Session()
    x = s.leaf("x", "8,2|5,7->9")
    y = s.einsum("y", "...|h,d->...=>...|h->...", x)
    s.close()
    assert y.shape.dims() == ((8, 2), (5,), (9,))


def test_einsum_one_operand_with_batch_row() -> None:
    s = Session()
    x = s.leaf("x", "4|6")
    y = s.einsum("y", "...|h=>...|h", x)
    s.close()
    assert y.shape.dims() == ((4,), (), (6,))


def test_einsum_shared_row_variable_across_tensors() -> None:
    s = Session()
    a = s.leaf("a", "5|2,3")
    b = s.leaf("b", "5|3,4")
    c = s.einsum("c", "...|ij;...|jk=>...|ik", a, b)
    s.close()
    assert c.shape.dims() == ((5,), (), (2, 4))


def test_einsum_named_row_variable_spans_kinds() -> None:
    s = Session()
    a = s.leaf("a", "2,3|->7")
    b = s.einsum("b", "..r..|->i=>i->..r..", a)
    s.close()
    assert b.shape.dims() == ((), (7,), (2, 3))


def test_einsum_infers_operand_rows() -> None:
    s = Session()
    a = s.leaf("a", "2,3")
    w = s.param("w")
    c = s.einsum("c", "ij;jk->l=>ik->l", a, w)
    s.einsum("d", "k=>k", s.leaf("k", "6"))
    s.pointwise("e", c, s.leaf("f", "5->2,6"))
    s.close()
    # j from a; k and l are the lower bounds e's broadcasting put on w's dims.
    assert w.shape.dims() == ((), (3, 5), (6,))
    assert c.shape.dims() == ((), (2, 5), (6,))


def test_einsum_fixed_index_needs_enough_positions() -> None:
    s = Session()
    a = s.leaf("a", "2,3")
    with pytest.raises(ShapeError, match="indexed at position 4"):
        s.einsum("c", "i4=>i", a)
    s2 = Session()
    b = s2.leaf("b")
    s2.einsum("c", "i,4=>i", b)
    s2.close()
    assert b.shape.dims() == ((), (), (1, 5))


def test_einsum_arity_mismatch_is_refused_before_anything_is_written() -> None:
    s = Session()
    a = s.leaf("a", "2")
    before = s.state()
    with pytest.raises(ShapeError, match="has 2 operand\\(s\\) but 1 were given"):
        s.einsum("c", "i;i=>i", a)
    assert s.state() == before
    assert not s.tainted


# ------------------------------------------------------------------- totals


def test_total_elems_solves_the_single_unknown_dim() -> None:
    s = Session()
    x = s.leaf("x", "...->3")
    s.total_elems(x, 12)
    s.close()
    assert x.shape.dims() == ((), (4,), (3,))


def test_total_elems_puts_the_elements_on_the_last_open_row() -> None:
    s = Session()
    x = s.leaf("x")
    s.total_elems(x, 24)
    s.close()
    assert x.shape.dims() == ((), (), (24,))


def test_total_elems_contradiction_names_the_rows() -> None:
    s = Session()
    x = s.leaf("x", "2->5")
    with pytest.raises(ShapeError, match=r"total_elems 'x'.*cannot hold 12 elements"):
        s.total_elems(x, 12)


def test_total_elems_checked_once_dims_are_known() -> None:
    s = Session()
    x = s.leaf("x", "...")
    s.total_elems(x, 6)
    s.pointwise("y", x, s.leaf("z", "3"))
    s.close()
    assert x.shape.dims() == ((), (), (2, 3))


def test_total_elems_deferred_count_resolves_at_closing() -> None:
    calls: list[int] = []

    def bytes_over_precision() -> int:
        calls.append(1)
        return 96 // 4

    s = Session()
    x = s.leaf("x", "...->3")
    s.total_elems(x, DeferredCount("file bytes / precision", bytes_over_precision))
    assert calls == []
    s.close()
    assert calls == [1]
    assert x.shape.dims() == ((), (8,), (3,))


def test_total_elems_bad_count_is_refused() -> None:
    s = Session()
    x = s.leaf("x")
    with pytest.raises(ShapeError, match="positive integer"):
        s.total_elems(x, 0)


# ------------------------------------------------------- the hidden dimension


def test_parameter_with_unspecified_output_is_the_hidden_dimension_error() -> None:
    s = Session()
    w = s.param("w", "...->...")
    s.compose("y", w, s.leaf("x", "3"))
    with pytest.raises(ShapeError) as info:
        s.close()
    message = str(info.value)
    assert "You forgot to specify the hidden dimension(s) of parameter 'w'" in message
    assert "output axes" in message
    assert info.value.origins[0].tensor == "w"


def test_compose_template_row_is_safe_to_guess() -> None:
    # w's input row is open; compose gives it a template row variable marked
    # safe-to-guess, so closing makes it empty instead of raising.
    s = Session()
    w = s.param("w", "...->4")
    s.compose("y", w, s.leaf("x", "3"))
    s.close()
    assert w.shape.dims() == ((), (3,), (4,))


def test_parameter_row_used_only_pointwise_is_safe_to_guess() -> None:
    s = Session()
    b = s.param("b", "...->4")
    s.pointwise("y", s.leaf("x", "4"), b)
    s.close()
    assert b.shape.dims() == ((), (), (4,))


def test_parameter_row_used_in_compose_is_not_safe_to_guess() -> None:
    s = Session()
    b = s.param("b", "...->4")
    s.pointwise("y", s.leaf("x", "4"), b)
    s.compose("z", b, s.leaf("v", "..."))
    with pytest.raises(
        ShapeError, match=r"hidden dimension\(s\) of parameter 'b'.*input axes"
    ):
        s.close()


def test_parameter_dim_without_bound_is_the_hidden_dimension_error() -> None:
    s = Session()
    w = s.param("w")
    s.einsum("y", "i;ij=>j", s.leaf("x", "3"), w)
    with pytest.raises(
        ShapeError, match=r"hidden dimension\(s\) of parameter 'w'.*size of one"
    ):
        s.close()


def test_data_leaf_dims_without_bound_become_one() -> None:
    s = Session()
    w = s.leaf("w")
    s.einsum("y", "i;ij=>j", s.leaf("x", "3"), w)
    s.close()
    assert w.shape.dims() == ((), (), (3, 1))


def test_parameter_hidden_dimension_set_through_a_capture_reference() -> None:
    s = Session()
    hidden = s.dim_ref("j")
    w = s.param("w")
    s.einsum("y", "i;ij=>j", s.leaf("x", "3"), w, capture_dims=[hidden])
    assert hidden.value is None
    s.set_dim(hidden, 16)
    assert hidden.value == 16
    s.close()
    assert w.shape.dims() == ((), (), (3, 16))
    assert hidden.value == 16


# ------------------------------------------------------------ capture references


def test_capture_reference_binding_and_value() -> None:
    s = Session()
    h = s.dim_ref("h")
    x = s.leaf("x", "8|5,64")
    s.einsum("y", "...|h,d=>...|h", x, capture_dims=[h])
    assert h.value == 5


def test_set_dim_before_binding_applies_when_bound() -> None:
    s = Session()
    h = s.dim_ref("h")
    s.set_dim(h, 4)
    x = s.leaf("x", "3")
    with pytest.raises(ShapeError) as info:
        s.einsum("y", "h=>h", x, capture_dims=[h])
    assert str(info.value) == (
        "einsum 'y' of x (spec 'h=>h'): sizes disagree: label 'h' has size 3 but "
        "capture reference 'h' has size 4"
    )


def test_capture_reference_bound_twice_relates_both_bindings() -> None:
    s = Session()
    h = s.dim_ref("h")
    a = s.leaf("a")
    s.einsum("p", "h=>h", a, capture_dims=[h])
    s.einsum("q", "h=>h", s.leaf("b", "7"), capture_dims=[h])
    s.close()
    assert a.shape.dims() == ((), (), (7,))


def test_capture_reference_label_must_be_in_the_spec() -> None:
    s = Session()
    h = s.dim_ref("h")
    with pytest.raises(ShapeError, match="names no label"):
        s.einsum("y", "i=>i", s.leaf("x", "2"), capture_dims=[h])


def test_set_dim_rejects_non_positive_sizes() -> None:
    s = Session()
    with pytest.raises(ShapeError, match="positive integer"):
        s.set_dim(s.dim_ref("h"), 0)


# -------------------------------------------------------------------- bases


def test_sizes_must_agree_in_basis() -> None:
    s = Session()
    a = s.leaf("a", "3@rgb")
    b = s.leaf("b", "3")
    with pytest.raises(ShapeError, match="different bases"):
        s.pointwise("c", a, b)


def test_size_one_has_no_basis() -> None:
    s = Session()
    c = s.pointwise("c", s.leaf("a", "3@rgb"), s.leaf("b", "1@xyz"))
    s.close()
    assert c.shape.dims() == ((), (), (3,))
    assert c.shape.describe() == "3@rgb"


# ---------------------------------------------------------- contradictions


def test_pointwise_contradiction_message() -> None:
    s = Session()
    a = s.leaf("a", "3")
    b = s.leaf("b", "5")
    with pytest.raises(ShapeError) as info:
        s.pointwise("c", a, b)
    assert str(info.value) == (
        "pointwise 'c' of a, b: output axes disagree: b.output has size 5, which "
        "does not broadcast to size 3 of c.output; only size 1 broadcasts"
    )
    assert [o.tensor for o in info.value.origins] == ["c"]
    assert s.tainted


def test_compose_contradiction_names_both_kinds() -> None:
    s = Session()
    w = s.leaf("w", "4->2")
    x = s.leaf("x", "3")
    with pytest.raises(ShapeError) as info:
        s.compose("y", w, x)
    assert str(info.value) == (
        "compose 'y' of w, x: input and output axes disagree: x.output has size 3, "
        "which does not broadcast to size 4 of w.input; only size 1 broadcasts"
    )


def test_operand_with_more_axes_than_a_closed_result() -> None:
    s = Session()
    w = s.leaf("w", "4->2")
    x = s.leaf("x", "5,4")
    with pytest.raises(ShapeError) as info:
        s.compose("y", w, x)
    assert str(info.value) == (
        "compose 'y' of w, x: input and output axes disagree: x.output [5, 4] has "
        "more axes than w.input [4], which is closed (an operand broadcasts only "
        "to a result with at least as many axes)"
    )


def test_contradiction_found_later_names_both_origins() -> None:
    s = Session()
    x = s.leaf("x")
    s.pointwise("p", x, s.leaf("a", "3"))  # x.output >= p.output = [..., 3]
    with pytest.raises(ShapeError) as info:
        s.einsum("e", "i;i=>i", x, s.leaf("b", "5"))  # x.output = [5]
    assert str(info.value) == (
        "pointwise 'p' of x, a: output axes disagree: x.output has size 5, which "
        "does not broadcast to size 3 of p.output; only size 1 broadcasts "
        "(found while solving einsum 'e' of x, b (spec 'i;i=>i'))"
    )
    assert [o.tensor for o in info.value.origins] == ["p", "e"]


def test_einsum_contradiction_names_tensor_and_spec() -> None:
    s = Session()
    a = s.leaf("a", "2,3")
    b = s.leaf("b", "4,5")
    with pytest.raises(ShapeError) as info:
        s.einsum("c", "ij;jk=>ik", a, b)
    message = str(info.value)
    assert message.startswith(
        "einsum 'c' of a, b (spec 'ij;jk=>ik'): output axes disagree:"
    )
    assert "b.output" in message or "a.output" in message


def test_tainted_session_refuses_to_close() -> None:
    s = Session()
    with pytest.raises(ShapeError):
        s.pointwise("c", s.leaf("a", "3"), s.leaf("b", "5"))
    with pytest.raises(ShapeError, match="tainted"):
        s.close()


def test_infinite_rows_are_refused() -> None:
    s = Session()
    x = s.leaf("x")
    with pytest.raises(ShapeError, match="infinitely many axes"):
        s.einsum("y", "...;...i=>...", x, x)


def test_cyclic_inequalities_are_refused() -> None:
    # r1 ⊑ [...r2, a] and r2 ⊑ [...r1, b]: each row needs more axes than the other.
    s = Session()
    origin = Origin("test", "t", lhs=Side("p", Kind.OUTPUT), rhs=Side("q", Kind.OUTPUT))
    r1, r2 = s.fresh_row_var(), s.fresh_row_var()
    a, b = s.fresh_dim_var(), s.fresh_dim_var()
    s.add(RowIneq(Row((), r1), Row((a,), r2), origin))
    with pytest.raises(
        ShapeError, match="more than 64 axes in one row: the inequalities are cyclic"
    ):
        s.add(RowIneq(Row((), r2), Row((b,), r1), origin))


def test_bad_operands_are_refused_without_taint() -> None:
    s = Session()
    other = Session().leaf("o", "2")
    with pytest.raises(ShapeError, match="belongs to another session"):
        s.pointwise("c", other)
    with pytest.raises(ShapeError, match="at least one operand"):
        s.pointwise("c")
    with pytest.raises(ShapeError, match="operands must be tensors"):
        s.compose("c", s.leaf("a", "2"), "b")  # type: ignore[arg-type]
    assert not s.tainted


def test_non_string_names_specs_and_kinds_are_refused() -> None:
    s = Session()
    a = s.leaf("a", "3")
    with pytest.raises(ShapeError, match="the name must be a string, got 3"):
        s.leaf(3)  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="the spec must be a string, got 3"):
        s.param("w", 3)  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="the spec must be a string, got None"):
        s.einsum("e", None, a)  # type: ignore[arg-type]
    with pytest.raises(ShapeError, match="no axis kind 'rows'"):
        s.total_elems(a, 3, kinds=["rows"])  # type: ignore[list-item]
    assert not s.tainted
    s.total_elems(a, 3, kinds=["output"])  # type: ignore[list-item]
    s.close()
    assert a.shape.dims() == ((), (), (3,))


def test_constraints_read_as_text() -> None:
    s = Session(keep_log=True)
    a = s.leaf("a", "3")
    s.pointwise("c", a)
    ineq = next(c for c in s.log if isinstance(c, RowIneq))
    assert str(ineq).endswith("(pointwise 'c' of a)")
    assert " ⊑ " in str(ineq)


def test_dims_before_closing_raise_unless_solved() -> None:
    s = Session()
    a = s.leaf("a", "2|3->4")
    b = s.leaf("b")
    assert a.shape.dims() == ((2,), (3,), (4,))
    with pytest.raises(ShapeError, match="not solved yet"):
        b.shape.dims()


def test_closing_forgets_open_state_and_allows_more_work() -> None:
    s = Session()
    x = s.leaf("x", "3")
    y = s.pointwise("y", x, s.leaf("b"))
    s.close()
    assert s.solver.dim_subst == {} and s.solver.row_bounds == {}
    assert s.registered_shapes == []
    z = s.pointwise("z", y, s.leaf("c", "2,1"))
    s.close()
    assert z.shape.dims() == ((), (), (2, 3))
    assert s.closings == 2


def test_origins_carry_the_kind_of_axes() -> None:
    s = Session(keep_log=True)
    a = s.leaf("a", "3")
    b = s.leaf("b", "4|->3")
    s.pointwise("c", a, b)
    kinds = {c.origin.lhs.kind for c in s.log if c.origin.lhs is not None}
    assert kinds == {Kind.BATCH, Kind.INPUT, Kind.OUTPUT}


def test_forcing_guard_stops_closing_and_reading_dims() -> None:
    class Refused(Exception):
        pass

    def refuse(what: str) -> None:
        raise Refused(what)

    s = Session()
    a = s.leaf("a", "3")
    with s.guard_forcing(refuse):
        with pytest.raises(Refused, match="closing the session"):
            s.close()
        with pytest.raises(Refused, match="reading the dims of 'a'"):
            a.shape.dims()
    s.close()
    assert a.shape.dims() == ((), (), (3,))


def test_provenance_stamps_application() -> None:
    s = Session()
    with s.provenance(application="site1"):
        c = s.pointwise("c", s.leaf("a", "3"))
    assert c.origin.application == "site1"
    assert "at application 'site1'" in c.origin.describe()


def test_the_log_keeps_window_constraints_unless_asked_for_all() -> None:
    s = Session()
    a = s.leaf("a", "3")
    s.pointwise("b", a)
    assert s.log == []  # nothing outside windows: no heap growth for no reader
    with s.rewind() as window:
        s.pointwise("c", a)
        inside = window.constraints()
        assert inside and all(c.origin.tensor == "c" for c in inside)
        assert list(s.log) == list(inside)
    assert s.log == []
    kept = Session(keep_log=True)
    kept.pointwise("b", kept.leaf("a", "3"))
    assert {c.origin.tensor for c in kept.log} == {"a", "b"}


def test_operations_pause_the_collector_and_restore_it() -> None:
    s = Session()
    during: list[bool] = []
    with s.guard_constraints(lambda constraint: during.append(gc.isenabled())):
        s.leaf("a", "3")
    assert during and not any(during)
    assert gc.isenabled()
    with pytest.raises(ShapeError):
        s.pointwise("bad", s.leaf("b", "3"), s.leaf("c", "4"))
    assert gc.isenabled()  # restored on error too
    gc.disable()
    try:
        s.leaf("d", "3")
        assert not gc.isenabled()  # a paused collector stays paused
    finally:
        gc.enable()
