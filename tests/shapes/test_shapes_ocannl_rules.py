"""OCANNL's rules the engine once lacked (issue 14, sections 1 and 2).

Closing (single-neighbour merge, one-pass commits), the name clash, affine,
strided and convolution axes, concatenation, axes before a row variable.
Cases that reproduce an OCANNL source cite it (github.com/ahrefs/ocannl).
"""

from __future__ import annotations

import itertools

import pytest

from axisflow.shapes import (
    Origin,
    Row,
    RowEq,
    Session,
    ShapeError,
    Size,
    SpecError,
    scheme,
)

# Each test runs on the concrete fast path and on the solver (tests/shapes/conftest.py).
pytestmark = pytest.mark.both_engine_paths


def _mlp_layer(s: Session, x_spec: str, hid: int):
    """OCANNL's ``mlp_layer``: ``relu(({w} * x) + {b; o = [hid]})`` (lib/nn_blocks.ml)."""
    x = s.leaf("x", x_spec)
    w = s.param("w", "...->...")
    b = s.param("b", f"...->{hid}")
    h = s.pointwise("relu", s.pointwise("add", s.compose("wx", w, x), b))
    return x, w, b, h


def test_mlp_layer_infers_weight_output_from_bias() -> None:
    """The bias decides the hidden width (lib/nn_blocks.ml ``mlp_layer``)."""
    s = Session()
    _, w, b, h = _mlp_layer(s, "8|784", 64)
    s.close()
    assert w.shape.dims() == ((), (784,), (64,))
    assert b.shape.dims() == ((), (), (64,))
    assert h.shape.dims() == ((8,), (), (64,))


def test_two_mlp_layers_chain_widths() -> None:
    """``mlp ~hid_dims:[16; 16]`` then ``{w_out} * hidden`` as in the moons demo."""
    s = Session()
    _, w1, _, h1 = _mlp_layer(s, "10|2", 16)
    w2 = s.param("w2", "...->...")
    b2 = s.param("b2", "...->16")
    h2 = s.pointwise("relu2", s.pointwise("add2", s.compose("w2h", w2, h1), b2))
    w_out = s.param("w_out", "...->1")
    y = s.compose("y", w_out, h2)
    s.close()
    assert w1.shape.dims() == ((), (2,), (16,))
    assert w2.shape.dims() == ((), (16,), (16,))
    assert w_out.shape.dims() == ((), (16,), (1,))
    assert y.shape.dims() == ((10,), (), (1,))


def test_open_leaf_composed_then_added_gets_the_bound() -> None:
    """An open data leaf composed with ``x`` and added to ``[16]`` gets output [16]."""
    s = Session()
    a = s.leaf("a")
    c = s.compose("c", a, s.leaf("x", "5"))
    s.pointwise("y", c, s.leaf("k", "16"))
    s.close()
    assert a.shape.dims() == ((), (5,), (16,))


def test_open_dim_keeps_numpy_broadcast_not_its_lower_bound() -> None:
    """Deliberate difference (docs/shapes.md): OCANNL's ``eliminate_dim_entry``
    (stage 6) would close this dim to its lower bound 7; here it is 1, the
    broadcast of its operands, as forward evaluation computes it."""
    s = Session()
    c = s.pointwise("c", s.leaf("a", "1"), s.leaf("b", "1"))
    s.pointwise("d", c, s.leaf("e", "7"))
    s.close()
    assert c.shape.dims() == ((), (), (1,))


@pytest.mark.parametrize("order", list(itertools.permutations(range(3))))
def test_closing_does_not_depend_on_creation_order(order: tuple[int, ...]) -> None:
    """Leaf a used as ``a + [3]``, leaf b as ``b + [5]``, then ``a + b``: a shape
    error in every order (issue 14 section 1.2; OCANNL test_closing_order.ml,
    "incompatible" case)."""
    s = Session()
    a = s.leaf("a")
    b = s.leaf("b")
    steps = [
        lambda: s.pointwise("p", a, s.leaf("k3", "3")),
        lambda: s.pointwise("q", b, s.leaf("k5", "5")),
        lambda: s.pointwise("r", a, b),
    ]
    for index in order:
        steps[index]()
    with pytest.raises(ShapeError, match="does not broadcast"):
        s.close()


def test_dim_label_and_row_variable_name_clash() -> None:
    """shape.ml ``check_dim_row_var_name_clash``: a name used both ways is an error."""
    with pytest.raises(
        SpecError, match="'d' is used both as an axis label and as a row variable"
    ):
        Session().einsum(
            "e", "..d.., d; d, e => ..d.., e", *(Session().leaf(n) for n in "ab")
        )


def test_name_clash_is_reported_before_operands_are_checked() -> None:
    s = Session()
    a, b = s.leaf("a"), s.leaf("b")
    with pytest.raises(SpecError, match="at position 0"):
        s.einsum("e", "..d.., d; d, e => ..d.., e", a, b)
    assert not s.tainted


def test_layer_applied_at_two_call_sites_takes_the_bias_width() -> None:
    """One weight, two call sites in one closing: w's output broadcasts to both
    products, whose bounds (the bias) it takes (docs/shapes.md section 8)."""
    s = Session()
    w = s.param("w", "...->...")
    b = s.param("b", "...->32")
    for site, batch in (("train", 20), ("test", 100)):
        wx = s.compose(f"wx_{site}", w, s.leaf(f"x_{site}", f"{batch}|2"))
        s.pointwise(f"h_{site}", wx, b)
    s.close()
    assert w.shape.dims() == ((), (2,), (32,))


# ------------------------------------------------ section 2: affine, concat, leading


def test_strided_axis_gives_the_output_from_the_input() -> None:
    s = Session()
    y = s.einsum("y", "2*o => o", s.leaf("x", "12"))
    s.close()
    assert y.shape.dims() == ((), (), (6,))


def test_strided_axis_gives_the_input_from_the_output() -> None:
    s = Session()
    x = s.leaf("x")
    s.einsum("y", "3*o => o", x, capture_dims=[ref := s.dim_ref("o")])
    s.set_dim(ref, 5)
    s.close()
    assert x.shape.dims() == ((), (), (15,))


def test_unpadded_convolution_with_dilation() -> None:
    """Size ``stride*(o-1) + dilation*(k-1) + 1``: 2*(o-1) + 2*(3-1) + 1 = 11 gives o = 4."""
    s = Session()
    y = s.einsum("y", "2*o<+2*k; k => o", s.leaf("x", "11"), s.leaf("kern", "3"))
    s.close()
    assert y.shape.dims() == ((), (), (4,))


def test_convolution_kernel_from_input_and_output() -> None:
    s = Session()
    kern = s.param("kern", "...->...")
    s.einsum(
        "y", "o<+k; k => o", s.leaf("x", "10"), kern, capture_dims=[o := s.dim_ref("o")]
    )
    s.set_dim(o, 8)
    s.close()
    assert kern.shape.dims() == ((), (), (3,))


def test_incompatible_stride_is_a_clear_error() -> None:
    s = Session()
    with pytest.raises(
        ShapeError,
        match=r"einsum 'y' .*the axis '2\*o<\+k' cannot hold with k = 3, .*"
        r"no positive size of 'o' satisfies it \(o = 5/2\)",
    ):
        s.einsum("y", "2*o<+k; k => o", s.leaf("x", "6"), s.leaf("kern", "3"))


def test_convolution_without_padding_marker_is_refused_before_writing() -> None:
    """OCANNL's shape.ml: "use_padding must be specified in convolution spec"."""
    s = Session()
    x, k = s.leaf("x", "6"), s.leaf("k", "3")
    with pytest.raises(ShapeError, match="use_padding must be specified"):
        s.einsum("y", "o+k; k => o", x, k)
    assert not s.tainted


def test_stride_must_be_a_positive_integer() -> None:
    with pytest.raises(
        SpecError, match="the stride must be a positive integer, got 's'"
    ):
        Session().einsum("y", "s*o => o", Session().leaf("x"))


def test_concatenated_axis_is_the_sum() -> None:
    s = Session()
    c = s.einsum("c", "i; j => i^j", s.leaf("a", "3"), s.leaf("b", "4"))
    s.close()
    assert c.shape.dims() == ((), (), (7,))


def test_concatenated_axis_gives_the_missing_part() -> None:
    s = Session()
    c = s.einsum("c", "i^j; i => j", s.leaf("ab", "10"), s.leaf("a", "4"))
    s.close()
    assert c.shape.dims() == ((), (), (6,))


def test_concatenation_that_cannot_hold() -> None:
    s = Session()
    with pytest.raises(
        ShapeError, match=r"the axis 'i\^j' cannot hold .*no positive size of 'j'"
    ):
        s.einsum("c", "i^j; i => j", s.leaf("ab", "3"), s.leaf("a", "4"))


def test_axes_before_a_row_variable_wait_for_the_operand() -> None:
    s = Session()
    x = s.fresh("x")
    y = s.einsum("y", "a, ..r.., b => b, ..r.., a", x)
    s.add(
        RowEq(
            x.shape.output, Row((Size(2), Size(3), Size(4), Size(5))), Origin("t", "t")
        )
    )
    s.close()
    assert y.shape.dims() == ((), (), (5, 3, 4, 2))


def test_axes_before_a_row_variable_need_enough_axes() -> None:
    s = Session()
    with pytest.raises(ShapeError, match="has fewer axes than the 2 written before"):
        s.einsum("y", "a, b, ..r.., c => c", s.leaf("x", "7,8"))


def test_open_axes_before_a_row_variable_close_to_exactly_the_written_ones() -> None:
    s = Session()
    y = s.einsum("y", "a, ..r.. => ..r.., a", s.fresh("x"))
    s.close()
    assert y.shape.dims() == ((), (), (1,))


def test_schemes_carry_pending_axis_equations() -> None:
    """A strided axis traced once gives each application its own size, as
    running the einsum at each call does (8 // 2 and 6 // 2)."""
    s = Session()
    with s.rewind():
        mark = s.var_mark()
        x = s.fresh("x")
        pool = scheme.trace(
            s,
            var_mark=mark,
            label="f",
            args=[x],
            f=lambda: [s.einsum("y", "2*o=>o", x)],
        )
    results = []
    for site, spec in (("a", "8"), ("b", "6")):
        y = s.fresh("y_" + site)
        scheme.instantiate(
            pool, application=site, args=[s.leaf(site, spec)], results=[y]
        )
        results.append(y)
    s.close()
    assert [y.shape.dims() for y in results] == [((), (), (4,)), ((), (), (3,))]
