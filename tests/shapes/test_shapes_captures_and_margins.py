"""Row captures, set_equal, padding margins and leading axes: the engine's rules.

The OCANNL expectations are in ``test_ocannl_ports_conv_concat.py``; these
pin the rules around them: what a second binding does, what closing
publishes, what a rewind undoes, what is refused before anything is written,
and what shape schemes refuse to carry.
"""

from __future__ import annotations

import pytest

from axisflow.shapes import (
    Kind,
    Origin,
    Row,
    RowIneq,
    Session,
    ShapeError,
    Size,
    SpecError,
    Tensor,
    scheme,
)
from axisflow.shapes.constraints import DimLinear, LinearKind

ORIGIN = Origin("test", "t")


# ------------------------------------------------------------ row captures


def test_a_row_capture_is_published_at_closing_and_survives_it() -> None:
    s = Session()
    r = s.dim_ref("r")
    s.einsum("z", "a..r..=>a", s.leaf("x", "2,3,4"), capture_dims=[r])
    assert r.row is not None and r.var is None
    s.close()
    assert (r.value, r.row, r.size) == (12, None, Size(12))


def test_an_open_row_capture_has_no_value_until_its_row_is_known() -> None:
    s = Session()
    r = s.dim_ref("r")
    x = s.leaf("x")
    s.einsum("z", "..r..=>", x, capture_dims=[r])
    assert r.value is None
    s.pointwise("p", x, s.leaf("y", "5,2"))
    s.close()
    assert r.value == 10


def test_set_dim_on_a_row_capture_is_a_total_of_its_row() -> None:
    """Before or after the binding: the row holds that many elements (the
    total puts them on the row's last open part)."""
    for before in (True, False):
        s = Session()
        r = s.dim_ref("r")
        if before:
            s.set_dim(r, 6)
        y = s.einsum("y", "..r.., a => a", s.param("w", "...->...,2"), capture_dims=[r])
        if not before:
            s.set_dim(r, 6)
        s.close()
        assert (r.value, y.shape.dims()) == (6, ((), (), (2,)))


def test_set_dim_on_a_row_capture_that_cannot_hold_it_fails() -> None:
    s = Session()
    r = s.dim_ref("r")
    s.einsum("y", "..r..=>", s.leaf("x", "2,3"), capture_dims=[r])
    with pytest.raises(ShapeError, match="cannot hold 5 elements"):
        s.set_dim(r, 5)
    assert s.tainted


def test_a_second_binding_equates_two_rows_or_a_row_and_a_dim() -> None:
    s = Session()
    r = s.dim_ref("r")
    x, y = s.leaf("x", "2,3"), s.leaf("y")
    s.einsum("a", "..r..=>", x, capture_dims=[r])
    s.einsum("b", "..r..=>", y, capture_dims=[r])
    n = s.dim_ref("n")
    s.einsum("c", "n=>", s.leaf("z"), capture_dims=[n])
    s.einsum("d", "..n..=>", s.leaf("v", "3,4"), capture_dims=[n])
    s.close()
    assert y.shape.dims()[2] == (2, 3)
    assert n.value == 12


@pytest.mark.parametrize("size", [6, 5])
def test_a_label_bound_to_a_row_capture_counts_the_row(size: int) -> None:
    """The reference captures a row first, then a label: the row holds as
    many elements as the label has positions (a total named after the
    label's einsum)."""
    s = Session()
    r = s.dim_ref("r")
    s.einsum("a", "..r..=>", s.leaf("x", "2,3"), capture_dims=[r])
    if size == 6:
        s.einsum("b", "r=>", s.leaf("y", "6"), capture_dims=[r])
        s.close()
        assert r.value == 6
        return
    with pytest.raises(ShapeError) as info:
        s.einsum("b", "r=>", s.leaf("y", "5"), capture_dims=[r])
    assert str(info.value) == (
        "einsum 'b' of y (spec 'r=>'): the axes [2, 3] cannot hold 5 elements "
        "(their known sizes multiply to 6)"
    )


@pytest.mark.parametrize("row_first", [True, False])
def test_a_counted_row_with_axes_before_its_variable_keeps_them(
    row_first: bool,
) -> None:
    """``2,...`` captured as a row that a label counts 6: closing puts the
    elements after the written 2 (``[2, 3]``), as OCANNL's rows hold their
    leading axes, instead of giving the whole row 6 against its 2."""
    s = Session()
    r = s.dim_ref("r")
    x = s.leaf("x", "2,...")
    y = s.leaf("y", "6")
    einsums = [("a", "..r..=>", x), ("b", "r=>", y)]
    for name, spec, operand in einsums if row_first else einsums[::-1]:
        s.einsum(name, spec, operand, capture_dims=[r])
    s.close()
    assert (x.shape.dims(), r.value) == (((), (), (2, 3)), 6)


def test_a_capture_of_a_name_the_spec_does_not_have_is_refused() -> None:
    s = Session()
    with pytest.raises(ShapeError, match="names no label or row variable"):
        s.einsum("z", "..r..=>", s.leaf("x", "2"), capture_dims=[s.dim_ref("q")])
    assert not s.tainted


def test_a_rewind_forgets_a_row_binding() -> None:
    s = Session()
    r = s.dim_ref("r")
    with s.rewind():
        s.einsum("z", "..r..=>", s.leaf("x", "2"), capture_dims=[r])
        assert r.row is not None
    assert r.row is None and r.value is None


# --------------------------------------------------------------- set_equal


def test_set_equal_refuses_what_is_not_a_reference_of_the_session() -> None:
    s, other = Session(), Session()
    with pytest.raises(ShapeError, match="set_equal needs two dim_ref"):
        s.set_equal(s.dim_ref("a"), other.dim_ref("b"))
    with pytest.raises(ShapeError, match="set_equal needs two dim_ref"):
        s.set_equal("a", s.dim_ref("b"))  # type: ignore[arg-type]


def test_set_equal_with_one_known_size_sets_the_other_either_way() -> None:
    for first_known in (True, False):
        s = Session()
        known, bound = s.dim_ref("k"), s.dim_ref("i")
        s.set_dim(known, 5, basis="x")
        s.einsum("z", "i=>i", s.param("w", "...->..."), capture_dims=[bound])
        if first_known:
            s.set_equal(known, bound)
        else:
            s.set_equal(bound, known)
        s.close()
        assert bound.value == 5
        assert bound.size == Size(5, "x")


def test_set_equal_of_two_known_sizes_compares_them_only() -> None:
    s = Session()
    a, b = s.dim_ref("a"), s.dim_ref("b")
    s.set_dim(a, 4, basis="x")
    s.set_dim(b, 4)
    s.set_equal(a, b)  # OCANNL compares the numbers
    assert (a.size, b.size) == (Size(4, "x"), Size(4))


def test_set_equal_of_a_bound_and_an_unbound_unknown_is_refused() -> None:
    s = Session()
    i = s.dim_ref("i")
    s.einsum("z", "i=>i", s.leaf("x"), capture_dims=[i])
    with pytest.raises(
        ShapeError,
        match="insufficient information between the capture references 'i' and 'u'",
    ):
        s.set_equal(i, s.dim_ref("u"))
    assert not s.tainted


def test_set_equal_of_a_dim_and_a_row_counts_the_row_by_the_dim() -> None:
    """Either way round, and the dim known only after: the total waits."""
    for dim_first in (True, False):
        s = Session()
        row, dim = s.dim_ref("r"), s.dim_ref("d")
        x = s.leaf("x")
        s.einsum("a", "..r..=>", x, capture_dims=[row])
        s.einsum("b", "d=>", s.leaf("y"), capture_dims=[dim])
        if dim_first:
            s.set_equal(dim, row)
        else:
            s.set_equal(row, dim)
        s.set_dim(dim, 6)
        s.pointwise("p", x, s.leaf("z", "2,1"))
        s.close()
        assert (row.value, x.shape.dims()[2]) == (6, (2, 3))


def test_a_total_counted_by_a_dim_sizes_the_dim_once_the_rows_are_known() -> None:
    s = Session()
    row, dim = s.dim_ref("r"), s.dim_ref("d")
    s.einsum("a", "..r..=>", s.leaf("x"), capture_dims=[row])
    s.einsum("b", "d=>", s.leaf("y"), capture_dims=[dim])
    s.set_equal(row, dim)
    assert dim.value is None
    s.close()
    assert (row.value, dim.value) == (1, 1)


# ------------------------------------------------------------ padding margins


def test_a_row_without_a_padded_axis_has_no_margins() -> None:
    s = Session()
    x = s.leaf("x", "5")
    s.einsum("y", "o<+k; k => o", x, s.leaf("w", "3"))
    s.close()
    assert x.shape.padding(Kind.OUTPUT) is None


def test_margins_are_published_at_closing_only() -> None:
    s = Session()
    x = s.leaf("x", "5,6")
    s.einsum("y", "a, o=+k; k => a, o", x, s.leaf("w", "4"))
    assert x.shape.padding("output") is None
    s.close()
    assert x.shape.padding("output") == ((0, 0), (2, 2))


def test_margins_of_an_axis_before_a_row_variable_count_from_the_front() -> None:
    s = Session()
    x = s.leaf("x", "5,6,7")
    s.einsum("y", "o=+k, ..r..; k => o, ..r..", x, s.leaf("w", "2"))
    s.close()
    assert x.shape.padding("output") == ((1, 1), (0, 0), (0, 0))


def test_margins_of_a_shape_closed_earlier_are_widened_by_a_later_closing() -> None:
    s = Session()
    x = s.leaf("x", "8")
    s.einsum("y", "o=+k; k => o", x, s.leaf("w", "2"))
    s.close()
    s.einsum("z", "o=+k; k => o", x, s.leaf("v", "5"))
    s.close()
    assert x.shape.padding("output") == ((2, 3),)


def test_padding_names_the_kinds_for_an_unknown_one() -> None:
    s = Session()
    x = s.leaf("x", "2")
    s.close()
    with pytest.raises(ShapeError, match="no axis kind 'width'"):
        x.shape.padding("width")


def test_a_rewind_undoes_published_margins() -> None:
    s = Session()
    x = s.leaf("x", "6")
    with s.rewind():
        s.einsum("y", "o=+k; k => o", x, s.leaf("w", "3"))
        s.close()
        assert x.shape.padding("output") == ((1, 2),)
    assert x.shape.padding("output") is None


# -------------------------------------------------------------- leading axes


def test_a_shape_spec_has_at_most_one_ellipsis_per_row() -> None:
    with pytest.raises(
        SpecError, match=r"at position 6: a row has at most one '\.\.\.'"
    ):
        Session().leaf("x", "...,3,...")


def test_leading_axes_that_do_not_fit_an_open_bound_go_in_front_of_it() -> None:
    """``2,...,7`` added to ``3,7``: the 2 fits nowhere on the result's axes,
    so it lands in front of them (the result takes it as a leading axis)."""
    s = Session()
    x = s.param("x", "2,...,7")
    p = s.pointwise("p", x, s.leaf("y", "3,7"))
    s.close()
    assert (x.shape.dims()[2], p.shape.dims()[2]) == ((2, 3, 7), (2, 3, 7))


def test_leading_axes_that_fit_nowhere_in_a_closed_bound_fail_at_closing() -> None:
    s = Session()
    x = s.param("x", "2,...,7")
    s.add(RowIneq(Row((Size(3), Size(7))), x.shape.row(Kind.OUTPUT), ORIGIN))
    with pytest.raises(
        ShapeError, match=r"x\.output has size 2 but its spec\.output has size 3"
    ):
        s.close()


# ------------------------------------------------------ what a trace refuses
# Row captures, padded convolutions and dim-counted totals are carried by
# schemes (tests/shapes/test_schemes_trace_rules.py); what the specification
# refuses stays refused: here a set_equal relating references made before
# the traced window.


def test_a_trace_refuses_set_equal_on_references_made_before_it() -> None:
    s = Session()
    row, dim = s.dim_ref("r"), s.dim_ref("d")
    with s.rewind():
        mark = s.var_mark()
        x = s.fresh("x")

        def body() -> list[Tensor]:
            s.einsum("a", "d=>", x, capture_dims=[dim])
            y = s.einsum("b", "..r..=>", s.leaf("y"), capture_dims=[row])
            s.set_equal(row, dim)
            return [y]

        with pytest.raises(
            scheme.UntraceableScheme, match="made outside the traced window"
        ):
            scheme.trace(s, var_mark=mark, label="f", args=[x], f=body)


def test_a_sum_equation_gives_a_solved_dim_the_default_basis() -> None:
    s = Session()
    d = s.fresh_dim_var()
    s.add(
        DimLinear(
            ((1, d), (1, Size(2, "x")), (-1, Size(5, "x"))),
            0,
            ("d", "two", "five"),
            "d+2",
            ORIGIN,
            LinearKind.SUM,
        )
    )
    assert s.solver.find_dim(d) == Size(3)
