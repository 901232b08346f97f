"""The closing rules OCANNL has and the engine once lacked (issue 14, section 1).

Each case cites the OCANNL source (github.com/ahrefs/ocannl) it reproduces.
"""

from __future__ import annotations

import itertools

import pytest

from axisflow.shapes import (
    Session,
    ShapeError,
    SpecError,
)


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
