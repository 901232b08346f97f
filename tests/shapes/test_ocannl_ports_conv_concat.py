"""OCANNL's own tests on bases, convolutions and concatenation, ported (issue 30).

As in ``test_ocannl_ports.py``: every case names the OCANNL file
(github.com/ahrefs/ocannl, ``test/``) and the line of its ``.expected``
output it reproduces, and drives :class:`~axisflow.shapes.Session` with the
same constraints (OCANNL's solver-level tests build ``Row.Dim_eq`` of an
``Affine`` or ``Concat`` dim; here the same equation is the
:class:`~axisflow.shapes.constraints.DimLinear` an einsum's affine or
concatenated axis makes) or the same operations (OCANNL's ``nn_blocks``
convolution and pooling, its block literals, its concatenation). A shape is
compared as OCANNL prints it (:func:`ocannl_shape`: ``0:2|3:2->1:2,2:3``).

OCANNL's operations, as einsums: a block literal ``[x1; x2]`` is
``Operation.stack`` (:func:`stack`: each part unsqueezed by ``"...|...->...
=> ...|...->0,..."``, then ``"...|...-> bt0,...; ...|...-> bt1,... =>
...|...-> bt0^bt1,..."``); ``x ++ "...|... => 0"`` sums to one number;
``nn_blocks.conv2d`` and ``max_pool2d`` are :func:`conv2d` and
:func:`max_pool2d` with the spec OCANNL's ppx makes of theirs (``stride``
and ``use_padding`` substituted). A parameter ``{ w }`` is ``param("w",
"...->...")``, a constant ``0.0`` a leaf of output ``[1]``.

Expectations the engine deliberately does not reproduce have their test in
the section at the end; ``docs/shapes.md`` (section 8) gives the reasons.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from axisflow.shapes import (
    DimEq,
    DimIneq,
    DimRef,
    DimVar,
    Kind,
    Origin,
    Row,
    RowEq,
    RowIneq,
    Session,
    ShapeError,
    Size,
    Tensor,
)
from axisflow.shapes.constraints import DimLinear, LinearKind, RowPrefix
from axisflow.shapes.spec import parse_shape_spec

ORIGIN = Origin("test", "test")


def ocannl_shape(tensor: Tensor) -> str:
    """A closed shape as OCANNL's ``Shape.to_string_hum`` prints it.

    Axes are numbered in memory order (batch, output, input) and printed
    ``batch|input->output``: batch ``[2]``, input ``[2]``, output ``[2, 3]``
    is ``0:2|3:2->1:2,2:3``; an empty batch or input row and its separator
    are left out unless it is all there is (``0:2->`` is input ``[2]`` only).
    """
    batch, input_, output = tensor.shape.dims()
    numbered = iter(range(len(batch) + len(output) + len(input_)))
    texts = {
        kind: ",".join(f"{next(numbered)}:{n}" for n in dims)
        for kind, dims in (("batch", batch), ("output", output), ("input", input_))
    }
    text = texts["output"]
    if input_:
        text = f"{texts['input']}->{text}"
    if batch:
        text = f"{texts['batch']}|{text}"
    return text


def linear(
    s: Session,
    kind: LinearKind,
    terms: Sequence[tuple[int, DimVar | Size]],
    const: int = 0,
    text: str = "axis",
) -> None:
    """The equation of an affine or concatenated axis (the axis is the last term)."""
    names = tuple(f"n{i}" for i in range(len(terms)))
    s.add(DimLinear(tuple(terms), const, names, text, ORIGIN, kind))


def concat(s: Session, parts: Sequence[DimVar | Size], axis: DimVar | Size) -> None:
    """OCANNL's ``Concat parts`` unified with ``axis``."""
    linear(s, LinearKind.CONCAT, [*((1, p) for p in parts), (-1, axis)], text="cat")


def conv(
    s: Session, over: DimVar | Size, kernel: DimVar | Size, axis: DimVar | Size
) -> None:
    """OCANNL's ``Affine {stride = 1; over; conv = Some {kernel; use_padding =
    false; dilation = 1}}`` unified with ``axis``: ``axis = over + kernel - 1``."""
    linear(s, LinearKind.CONVOLUTION, [(1, over), (1, kernel), (-1, axis)], -1)


def strided(s: Session, stride: int, over: DimVar | Size, axis: DimVar | Size) -> None:
    """OCANNL's ``Affine {stride; over; conv = None}`` unified with ``axis``."""
    linear(s, LinearKind.STRIDE, [(stride, over), (-1, axis)])


# ------------------------------------------------- test/einsum/test_dimension_labels


def test_same_basis_same_size_keeps_the_basis() -> None:
    """test_dimension_labels.expected:6-7: "Result bases: [batch]"."""
    s = Session()
    result = s.pointwise("result", s.leaf("t1", "4@batch"), s.leaf("t2", "4@batch"))
    s.close()
    assert result.shape.current()[2] == Row((Size(4, "batch"),))


@pytest.mark.parametrize(
    ("line", "first", "second"),
    [(10, "4@batch", "4@features"), (13, "4@batch", "4")],
    ids=["test_dimension_labels.expected:10", "test_dimension_labels.expected:13"],
)
def test_conflicting_bases_of_one_size_are_refused(
    line: int, first: str, second: str
) -> None:
    """Tests 2, 3: "solved dimensions for axis: different bases" (a named
    basis does not fuse with another, nor with the default)."""
    s = Session()
    with pytest.raises(ShapeError, match="different bases"):
        s.pointwise("result", s.leaf("t1", first), s.leaf("t2", second))
    assert line


def test_a_variable_solved_to_the_default_then_meeting_a_basis_conflicts() -> None:
    """test_dimension_labels.expected:19 (Test 4): ``x + [4]`` then ``+ [4@batch]``."""
    s = Session()
    step1 = s.pointwise("step1", s.param("x", "...->..."), s.leaf("unbased", "4"))
    with pytest.raises(ShapeError, match="different bases"):
        s.pointwise("result", step1, s.leaf("based", "4@batch"))
        s.close()


def test_a_variable_equated_to_two_bases_conflicts() -> None:
    """test_dimension_labels.expected:22 (Test 5): ``v = 4``, ``v = 4@batch``."""
    s = Session()
    v = s.fresh_dim_var()
    s.add(DimEq(v, Size(4), ORIGIN))
    with pytest.raises(ShapeError, match="different bases"):
        s.add(DimEq(v, Size(4, "batch"), ORIGIN))


def test_a_variable_solved_to_a_based_dim_keeps_its_basis() -> None:
    """test_dimension_labels.expected:25-26 (Test 5b): "Var v basis after solving: \"batch\""."""
    s = Session()
    v = s.fresh_dim_var()
    s.add(DimEq(v, Size(4, "batch"), ORIGIN))
    found = s.solver.find_dim(v)
    assert type(found) is Size and found.basis == "batch"


@pytest.mark.parametrize(
    ("line", "spec", "basis"),
    [(29, "4@batch", "batch"), (41, "5@idx", "idx")],
    ids=["test_dimension_labels.expected:29", "test_dimension_labels.expected:41"],
)
def test_a_basis_survives_inference(line: int, spec: str, basis: str) -> None:
    """Tests 6 and 8: "Bases: [batch]", "[idx]" (``Shape.to_bases`` after inference)."""
    s = Session()
    t = s.leaf("t", spec)
    s.close()
    (dim,) = t.shape.current()[2].dims
    assert type(dim) is Size and dim.basis == basis, line


def test_concat_keeps_the_basis_of_its_parts() -> None:
    """test_dimension_labels.expected:49-50 (Test 9): "Solved to d=5, basis=\"x\""."""
    s = Session()
    result, component = s.fresh_dim_var(), s.fresh_dim_var()
    concat(s, [component, Size(3, "x")], result)
    s.add(DimEq(component, Size(2, "x"), ORIGIN))
    assert s.solver.find_dim(result) == Size(5, "x")


def test_concat_with_conflicting_bases_is_refused() -> None:
    """test_dimension_labels.expected:53 (Test 10): "concat: conflicting dimension bases"."""
    s = Session()
    result, component = s.fresh_dim_var(), s.fresh_dim_var()
    concat(s, [component, Size(3, "y")], result)
    with pytest.raises(ShapeError, match="concat: conflicting dimension bases"):
        s.add(DimEq(component, Size(2, "x"), ORIGIN))


def test_concat_of_a_based_and_an_unbased_part_keeps_the_basis() -> None:
    """test_dimension_labels.expected:56-57 (Test 11): "Solved to d=5, basis=\"x\""."""
    s = Session()
    result, component = s.fresh_dim_var(), s.fresh_dim_var()
    concat(s, [component, Size(3)], result)
    s.add(DimEq(component, Size(2, "x"), ORIGIN))
    assert s.solver.find_dim(result) == Size(5, "x")


def test_convolution_with_matching_bases_keeps_them() -> None:
    """test_dimension_labels.expected:60-61 (Test 12): "Solved to d=6, basis=\"x\""."""
    s = Session()
    over, result = s.fresh_dim_var(), s.fresh_dim_var()
    conv(s, over, Size(3, "x"), result)
    s.add(DimEq(over, Size(4, "x"), ORIGIN))
    assert s.solver.find_dim(result) == Size(6, "x")


def test_convolution_with_conflicting_bases_is_refused() -> None:
    """test_dimension_labels.expected:64 (Test 13): "convolution: conflicting
    dimension bases between stride and kernel"."""
    s = Session()
    over, result = s.fresh_dim_var(), s.fresh_dim_var()
    conv(s, over, Size(3, "y"), result)
    with pytest.raises(
        ShapeError,
        match="convolution: conflicting dimension bases between stride and kernel",
    ):
        s.add(DimEq(over, Size(4, "x"), ORIGIN))


def test_stride_forward_passes_the_basis_on() -> None:
    """test_dimension_labels.expected:67-68 (Test 14): "Solved to d=8, basis=\"x\""."""
    s = Session()
    result = s.fresh_dim_var()
    strided(s, 2, Size(4, "x"), result)
    assert s.solver.find_dim(result) == Size(8, "x")


def test_stride_reverse_passes_the_basis_to_over() -> None:
    """test_dimension_labels.expected:71-72 (Test 15): "Solved over to d=4, basis=\"x\""."""
    s = Session()
    over = s.fresh_dim_var()
    strided(s, 2, over, Size(8, "x"))
    assert s.solver.find_dim(over) == Size(4, "x")


def test_convolution_forward_passes_the_basis_on() -> None:
    """test_dimension_labels.expected:75-76 (Test 16): "Solved to d=6, basis=\"x\""."""
    s = Session()
    result = s.fresh_dim_var()
    conv(s, Size(4, "x"), Size(3), result)
    assert s.solver.find_dim(result) == Size(6, "x")


def test_convolution_reverse_passes_the_basis_to_over() -> None:
    """test_dimension_labels.expected:79-80 (Test 17): "Solved over to d=4, basis=\"x\""."""
    s = Session()
    over = s.fresh_dim_var()
    conv(s, over, Size(3), Size(6, "x"))
    assert s.solver.find_dim(over) == Size(4, "x")


def test_a_kernel_solved_from_input_and_output_has_the_default_basis() -> None:
    """row.ml, ``unify_dim``: a kernel inferred from the input and the output
    is ``get_default_dim`` (the convolution's own basis stays on its axes)."""
    s = Session()
    kernel = s.fresh_dim_var()
    conv(s, Size(4, "x"), kernel, Size(6, "x"))
    assert s.solver.find_dim(kernel) == Size(3)


def test_mutual_inequalities_of_different_bases_are_refused() -> None:
    """test_dimension_labels.expected:83 (Test 18): "different bases"."""
    s = Session()
    r1, r2 = Row((Size(4, "x"),)), Row((Size(4, "y"),))
    with pytest.raises(ShapeError, match="different bases"):
        s.add(RowIneq(r1, r2, ORIGIN))
        s.add(RowIneq(r2, r1, ORIGIN))


def test_an_einsum_concatenation_keeps_the_basis() -> None:
    """The same rule through an einsum: ``"i; j => i^j"`` of ``2@x`` and ``3``."""
    s = Session()
    c = s.einsum("c", "i; j => i^j", s.leaf("a", "2@x"), s.leaf("b", "3"))
    s.close()
    assert c.shape.current()[2] == Row((Size(5, "x"),))


# ------------------------------------------------------ test/einsum/test_interleave


def einsum_into(
    s: Session, name: str, spec: str, operand: Tensor, result: Tensor
) -> None:
    """``result =+ id operand ~logic:spec`` (``%cd``): the spec's result rows
    are ``result``'s own (OCANNL's ``Defined_by_cd_logic`` shape logic)."""
    operand_labels, result_labels = spec.split("=>")
    s.einsum(name, f"{operand_labels}; {result_labels} => ", operand, result)


def test_interleave() -> None:
    """test_interleave.expected:5: "interleave shape 0:6" (``Operation.interleave``:
    ``..., i => ..., 2*i`` and ``..., i => ..., 2*i + 1``, spaces as written)."""
    s = Session()
    t = s.fresh("interleave")
    t1, t2 = s.leaf("t1", "3"), s.leaf("t2", "3")
    einsum_into(s, "even", "... | ... -> ..., i => ... | ... -> ..., 2*i", t1, t)
    einsum_into(s, "odd", "... | ... -> ..., i => ... | ... -> ..., 2*i + 1", t2, t)
    s.close()
    assert ocannl_shape(t) == "0:6"


# ----------------------------------------- test/einsum/test_conv_padding: conv2d


def conv2d(
    s: Session,
    x: Tensor,
    *,
    kernel_size: int = 3,
    stride: int = 1,
    use_padding: bool = True,
    out_channels: int | None = None,
) -> tuple[Tensor, Tensor, Tensor]:
    """``Nn_blocks.conv2d`` (lib/nn_blocks.ml): the einsum of ``x`` with a
    kernel, captures ``kh``, ``kw`` and the row variable ``oc``, ``set_dim``
    on all three, plus a bias. Returns (output, kernel, bias)."""
    kh, kw, oc = (s.dim_ref(label) for label in ("kh", "kw", "oc"))
    s.set_dim(kh, kernel_size)
    s.set_dim(kw, kernel_size)
    if out_channels is not None:
        s.set_dim(oc, out_channels)
    pad = "=" if use_padding else "<"
    step = "" if stride == 1 else f"{stride}*"
    kernel = s.param("kernel", "...->...")
    convolved = s.einsum(
        "conv2d",
        f"... | {step}oh{pad}+kh, {step}ow{pad}+kw, ..ic..; kh, kw, ..ic.. -> ..oc.. "
        f"=> ... | oh, ow, ..oc..",
        x,
        kernel,
        capture_dims=[kh, kw, oc],
    )
    bias = s.param("bias", "...->...")
    return s.pointwise("+_conv2d", convolved, bias), kernel, bias


CONV2D = [
    # (expected line, side, stride, use_padding, printed shape)
    (12, 5, 1, True, "0:5,1:5,2:4"),
    (57, 5, 1, False, "0:3,1:3,2:4"),
    (84, 6, 2, True, "0:3,1:3,2:4"),
    (130, 9, 2, False, "0:4,1:4,2:4"),
]


@pytest.mark.parametrize(
    ("line", "side", "stride", "use_padding", "expected"),
    CONV2D,
    ids=[f"test_conv_padding.expected:{c[0]}" for c in CONV2D],
)
def test_nn_blocks_conv2d(
    line: int, side: int, stride: int, use_padding: bool, expected: str
) -> None:
    """``conv2d ~kernel_size:3 ~stride ~use_padding ~out_channels:4`` on a
    ``side x side x 1`` range: "+_conv2d shape ..."; the kernel is 3x3x1 to 4."""
    s = Session()
    output, kernel, _ = conv2d(
        s,
        s.leaf("input", f"{side},{side},1"),
        stride=stride,
        use_padding=use_padding,
        out_channels=4,
    )
    s.close()
    assert ocannl_shape(output) == expected, line
    assert kernel.shape.dims() == ((), (3, 3, 1), (4,))


def test_padded_convolution_input_margins() -> None:
    """test_conv_padding.expected:102: "Input: single prec 6+3x6+3x1": each
    padded axis of the 6x6x1 input has 3 positions of margin (row.ml,
    ``Conv_input``: ``(k + 1) / 2`` after, the rest of ``k`` before)."""
    s = Session()
    image = s.leaf("input", "6,6,1")
    conv2d(s, image, stride=2, out_channels=4)
    s.close()
    assert image.shape.padding(Kind.OUTPUT) == ((1, 2), (1, 2), (0, 0))
    assert image.shape.padding(Kind.BATCH) is None


@pytest.mark.parametrize(
    ("line", "side", "stride", "use_padding"),
    [(113, 6, 2, True), (166, 9, 2, False)],
    ids=["test_conv_padding.expected:113", "test_conv_padding.expected:166"],
)
def test_conv2d_summed_to_one_number(
    line: int, side: int, stride: int, use_padding: bool
) -> None:
    """``output ++ "...|... => 0"``: "=>_loss shape 0:1"."""
    s = Session()
    output, _, _ = conv2d(
        s,
        s.leaf("input", f"{side},{side},1"),
        stride=stride,
        use_padding=use_padding,
        out_channels=4,
    )
    loss = s.einsum("=>_loss", "...|... => 0", output)
    s.close()
    assert ocannl_shape(loss) == "0:1", line


# --------------------------------------------------- test/einsum/test_max_pool2d


def max_pool2d(
    s: Session, x: Tensor, *, stride: int = 2, window_size: int = 2
) -> Tensor:
    """``Nn_blocks.max_pool2d``: ``x @^+ "... | stride*oh< + wh, ...; wh, ww =>
    ... | oh, ow, ..c.." ["wh"; "ww"] (0.0 + 0.0)``, ``set_dim`` on the window."""
    wh, ww = s.dim_ref("wh"), s.dim_ref("ww")
    s.set_dim(wh, window_size)
    s.set_dim(ww, window_size)
    zeros = s.pointwise("+", s.leaf("0.0", "1"), s.leaf("0.0'", "1"))
    return s.einsum(
        "@^=>+_max_pool2d",
        f"... | {stride}*oh< + wh, {stride}*ow< + ww, ..c..; wh, ww => ... | oh, ow, ..c..",
        x,
        zeros,
        capture_dims=[wh, ww],
    )


MAX_POOL = [
    # (expected line, input, stride, window, printed shape)
    (37, "4,4,1", 2, 2, "0:2,1:2,2:1"),
    (89, "7,7,2", 2, 3, "0:3,1:3,2:2"),
    (133, "3,3,1", 2, 3, "0:1,1:1,2:1"),
    (147, "4,4,3", 2, 2, "0:2,1:2,2:3"),
]


@pytest.mark.parametrize(
    ("line", "spec", "stride", "window", "expected"),
    MAX_POOL,
    ids=[f"test_max_pool2d.expected:{c[0]}" for c in MAX_POOL],
)
def test_nn_blocks_max_pool2d(
    line: int, spec: str, stride: int, window: int, expected: str
) -> None:
    """ "@^=>+_max_pool2d shape ...": ``(input - window) / stride + 1`` per side."""
    s = Session()
    output = max_pool2d(s, s.leaf("input", spec), stride=stride, window_size=window)
    s.close()
    assert ocannl_shape(output) == expected, line


# ------------------------------------------------- test/einsum/test_padding_reset


def test_two_padded_operations_on_one_input() -> None:
    """test_padding_reset.expected:9, 13, 17: "-_input shape 0:4,1:4",
    "@^=>+_pooled shape 0:4,1:4", "*._conv_out shape 0:4,1:4" (a max-pool
    and a convolution, both padded, on the same input; ``set_dim`` after the
    operations)."""
    s = Session()
    image = s.leaf("input", "4,4")
    pooled = s.einsum(
        "@^=>+_pooled",
        "oh=+wh, ow=+ww; wh, ww => oh, ow",
        image,
        s.pointwise("0.0 + 0.0", s.leaf("0.0", "1"), s.leaf("0.0'", "1")),
        capture_dims=[wh := s.dim_ref("wh"), ww := s.dim_ref("ww")],
    )
    s.set_dim(wh, 3)
    s.set_dim(ww, 3)
    conv_out = s.einsum(
        "*._conv_out",
        "oh=+kh, ow=+kw; kh, kw => oh, ow",
        image,
        s.pointwise("1.0 + 0.0", s.leaf("1.0", "1"), s.leaf("0.0", "1")),
        capture_dims=[kh := s.dim_ref("kh"), kw := s.dim_ref("kw")],
    )
    s.set_dim(kh, 3)
    s.set_dim(kw, 3)
    s.close()
    assert [ocannl_shape(t) for t in (image, pooled, conv_out)] == ["0:4,1:4"] * 3
    # The comment of test_padding_reset.ml: "For a 3x3 window: left_pad=1, right_pad=2."
    assert image.shape.padding("output") == ((1, 2), (1, 2))


def test_the_widest_margins_of_two_kernels_win() -> None:
    """shape.ml, ``update_padding``: an axis two padded convolutions read takes
    the larger margin on each side."""
    s = Session()
    image = s.leaf("input", "8")
    ones = s.leaf("ones", "1")
    s.einsum(
        "a",
        "o=+k; k => o",
        image,
        s.pointwise("k3", ones),
        capture_dims=[k := s.dim_ref("k")],
    )
    s.set_dim(k, 3)
    s.einsum(
        "b",
        "o=+j; j => o",
        image,
        s.pointwise("k4", ones),
        capture_dims=[j := s.dim_ref("j")],
    )
    s.set_dim(j, 4)
    s.close()
    assert image.shape.padding("output") == ((2, 2),)


# ------------------------------------------- test/operations/test_block_tensor


UNSQUEEZE = {
    "output": "...|...->... => ...|...->0,...",
    "input": "...|...->... => ...|0,...->...",
    "batch": "...|...->... => 0,...|...->...",
}


def stack(s: Session, name: str, axis: str, parts: Sequence[Tensor]) -> Tensor:
    """``Operation.stack axis parts`` (tensor/operation.ml): unsqueeze each
    part by a new leading axis of the kind, then concatenate along it."""
    labels = [f"bt{i}" for i in range(len(parts))]
    joined = "^".join(labels)
    if axis == "output":
        spec = "; ".join(f"...|...-> {label},..." for label in labels)
        spec += f" => ...|...-> {joined},..."
    elif axis == "input":
        spec = "; ".join(f"...|{label},...->..." for label in labels)
        spec += f" => ...|{joined},...->..."
    else:
        spec = "; ".join(f"{label},...|...->..." for label in labels)
        spec += f" => {joined},...|...->..."
    unsqueezed = [
        s.einsum(f"{name}_{i}", UNSQUEEZE[axis], part) for i, part in enumerate(parts)
    ]
    return s.einsum(name, spec, *unsqueezed)


def block_shape(build: Callable[[Session, Tensor, Tensor, Tensor], object]) -> str:
    s = Session()
    x1, x2, x3 = s.leaf("x1", "3"), s.leaf("x2", "3"), s.leaf("x5", "3")
    t = build(s, x1, x2, x3)
    assert isinstance(t, Tensor)
    s.close()
    return ocannl_shape(t)


def stacked(s: Session, axis: str, *parts: Tensor) -> Tensor:
    return stack(s, f"++^{axis}{s.var_mark()}", axis, parts)


BLOCKS: list[tuple[int, Callable[[Session, Tensor, Tensor, Tensor], object], str]] = [
    (8, lambda s, a, b, c: stacked(s, "output", a, b), "0:2,1:3"),
    (45, lambda s, a, b, c: stacked(s, "output", a, b, c), "0:3,1:3"),
    (
        58,
        lambda s, a, b, c: stacked(
            s, "output", stacked(s, "output", a, b), stacked(s, "output", a, b)
        ),
        "0:2,1:2,2:3",
    ),
    (
        73,
        lambda s, a, b, c: stacked(
            s,
            "output",
            *[
                stacked(
                    s, "output", stacked(s, "output", a, b), stacked(s, "output", a, b)
                )
                for _ in range(2)
            ],
        ),
        "0:2,1:2,2:2,3:3",
    ),
    (
        98,
        lambda s, a, b, c: stacked(
            s, "output", stacked(s, "input", a, b), stacked(s, "input", a, b)
        ),
        "2:2->0:2,1:3",
    ),
    (
        112,
        lambda s, a, b, c: stacked(
            s, "batch", stacked(s, "output", a, b), stacked(s, "output", a, b)
        ),
        "0:2|1:2,2:3",
    ),
    (
        125,
        lambda s, a, b, c: stacked(
            s,
            "batch",
            *[
                stacked(
                    s, "output", stacked(s, "input", a, b), stacked(s, "input", a, b)
                )
                for _ in range(2)
            ],
        ),
        "0:2|3:2->1:2,2:3",
    ),
    (294, lambda s, a, b, c: stacked(s, "output", a), "0:1,1:3"),
    (451, lambda s, a, b, c: stacked(s, "output", a, b), "0:2,1:3"),
]


@pytest.mark.parametrize(
    ("line", "build", "expected"),
    BLOCKS,
    ids=[f"test_block_tensor.expected:{b[0]}" for b in BLOCKS],
)
def test_block_literals(
    line: int, build: Callable[[Session, Tensor, Tensor, Tensor], object], expected: str
) -> None:
    """``[x1; x2]``, ``[x1; x2; x5]``, nested lists, a tuple inside a list, a
    list inside an array, all three, ``[x1]``, ``TDSL.O.stack `Output``."""
    assert block_shape(build) == expected, line


def test_block_literals_of_other_kinds() -> None:
    """test_block_tensor.expected:20 ``[|x3; x4|]`` "0:2|1:2" and :32
    ``(x1, x2)`` "1:2->0:3"."""
    s = Session()
    batched = stacked(s, "batch", s.leaf("x3", "2"), s.leaf("x4", "2"))
    input_stack = stacked(s, "input", s.leaf("x1", "3"), s.leaf("x2", "3"))
    s.close()
    assert (ocannl_shape(batched), ocannl_shape(input_stack)) == ("0:2|1:2", "1:2->0:3")


def test_a_stacked_literal_with_input_axes() -> None:
    """test_block_tensor.expected:438: ``[m1; m2]`` of 2->2: "2:2->0:2,1:2"."""
    s = Session()
    stacked_mat = stacked(s, "output", s.leaf("m1", "2->2"), s.leaf("m2", "2->2"))
    s.close()
    assert ocannl_shape(stacked_mat) == "2:2->0:2,1:2"


def test_a_parameter_in_a_block_takes_its_siblings_rank() -> None:
    """test_block_tensor.expected:144, 158: ``[[x1; x2]; {c}]`` is
    "0:2,1:2,2:3" and ``c`` "0:2,1:3"."""
    s = Session()
    c = s.param("c", "...->...")
    inner = stacked(s, "output", s.leaf("x1", "3"), s.leaf("x2", "3"))
    mixed = stacked(s, "output", inner, c)
    s.close()
    assert (ocannl_shape(mixed), ocannl_shape(c)) == ("0:2,1:2,2:3", "0:2,1:3")


@pytest.mark.parametrize(
    ("line", "parts", "expected"),
    [(305, 2, "0:2,1:2"), (320, 3, "0:3,1:2")],
    ids=["test_block_tensor.expected:305", "test_block_tensor.expected:320"],
)
def test_sin_of_a_stacked_literal(line: int, parts: int, expected: str) -> None:
    """``sin [g1; g2]`` (and three parts), then ``++ "...|... => 0"``: the
    stacked axis is sized by its parts before the result's free axis is."""
    s = Session()
    leaves = [s.leaf(f"g{i}", "2") for i in range(parts)]
    result = s.pointwise("sin", stacked(s, "output", *leaves))
    loss = s.einsum("loss", "...|... => 0", result)
    s.close()
    assert (ocannl_shape(result), ocannl_shape(loss)) == (expected, "0:1"), line


def test_sin_of_a_nested_stacked_literal() -> None:
    """test_block_tensor.expected:341: ``sin [[n1; n2]; [n3; n4]]`` "0:2,1:2,2:2"."""
    s = Session()
    n = [s.leaf(f"n{i}", "2") for i in range(4)]
    nested = stacked(
        s, "output", stacked(s, "output", n[0], n[1]), stacked(s, "output", n[2], n[3])
    )
    result = s.pointwise("sin", nested)
    s.close()
    assert ocannl_shape(result) == "0:2,1:2,2:2"


def test_a_parameter_sized_only_through_a_concatenation() -> None:
    """test_block_tensor.expected:171, 178: ``(a_e, b_e, {c_e}) ++^ "ii; jj;
    kk => ii^jj^kk" + fixed7`` is "0:7": ``kk`` is 7 - 2 - 3 = 2."""
    s = Session()
    c_e = s.param("c_e", "...->...")
    joined = s.einsum(
        "++^", "ii; jj; kk => ii^jj^kk", s.leaf("a_e", "2"), s.leaf("b_e", "3"), c_e
    )
    resid = s.pointwise("+_concat_resid", joined, s.leaf("fixed7", "7"))
    s.close()
    assert (ocannl_shape(resid), c_e.shape.dims()) == ("0:7", ((), (), (2,)))


CONCATS = [
    # (expected line, the program, printed shape)
    (
        187,
        lambda s: s.pointwise(
            "+_concat_2c",
            s.leaf("fixed5", "5"),
            s.einsum("++^", "ii; jj => ii^jj", s.leaf("pf1", "2"), s.leaf("pf2", "3")),
        ),
        "0:5",
    ),
    (
        199,
        lambda s: s.pointwise(
            "+_nested_dim",
            s.einsum(
                "nested_concat",
                "ii; jjkk => ii^jjkk",
                s.leaf("ng1", "2"),
                s.einsum(
                    "bc_g", "jj; kk => jj^kk", s.leaf("ng2", "3"), s.leaf("ng3", "2")
                ),
            ),
            s.leaf("fixed7g", "7"),
        ),
        "0:7",
    ),
    (
        212,
        lambda s: s.pointwise(
            "+_concat_g",
            s.einsum(
                "++^",
                "ii; jj; kk => ii^jj^kk",
                s.leaf("q1", "2"),
                s.leaf("q2", "3"),
                s.leaf("q3", "2"),
            ),
            s.leaf("fixed7h", "7"),
        ),
        "0:7",
    ),
    (
        282,
        lambda s: s.pointwise(
            "+_glb_result",
            s.einsum(
                "++^",
                "ii; jj; kk => ii^jj^kk",
                s.leaf("r1", "2"),
                s.leaf("r2", "3"),
                s.leaf("r3", "2"),
            ),
            s.einsum(
                "++^'",
                "pp; qq; rr => pp^qq^rr",
                s.leaf("s1", "2"),
                s.leaf("s2", "3"),
                s.leaf("s3", "2"),
            ),
        ),
        "0:7",
    ),
]


@pytest.mark.parametrize(
    ("line", "build", "expected"),
    CONCATS,
    ids=[f"test_block_tensor.expected:{c[0]}" for c in CONCATS],
)
def test_concatenations_added_to_a_size(
    line: int, build: Callable[[Session], Tensor], expected: str
) -> None:
    """Tests 5f, 5g, 5h, 5i: a concatenation (two or three parts, nested, or
    two of them) added to a fixed axis."""
    s = Session()
    t = build(s)
    s.close()
    assert ocannl_shape(t) == expected, line


# ----------------------------------------- test/operations/test_concat_graph


CONCAT_GRAPH = [
    # (expected line, parts, printed shape)
    (12, ("3", "2"), "0:5"),
    (39, ("2", "3", "2"), "0:7"),
    (71, ("2", "1", "2"), "0:5"),
    (135, ("1", "3", "2"), "0:6"),
    (164, ("2", "3", "1"), "0:6"),
]


@pytest.mark.parametrize(
    ("line", "parts", "expected"),
    CONCAT_GRAPH,
    ids=[f"test_concat_graph.expected:{c[0]}" for c in CONCAT_GRAPH],
)
def test_sin_of_a_concatenation(
    line: int, parts: tuple[str, ...], expected: str
) -> None:
    """``sin ((x1, x2) ++^ "a; b => a^b")`` and the three-part ones (a part of
    size 1 first, inside, last), summed by ``++ "...|... => 0"`` ("0:1")."""
    s = Session()
    labels = "abc"[: len(parts)]
    spec = "; ".join(labels) + " => " + "^".join(labels)
    leaves = [s.leaf(f"x{i}", size) for i, size in enumerate(parts)]
    result = s.pointwise("sin", s.einsum("++^", spec, *leaves))
    loss = s.einsum("=>_loss", "...|... => 0", result)
    s.close()
    assert (ocannl_shape(result), ocannl_shape(loss)) == (expected, "0:1"), line


def test_sin_of_a_nested_concatenation() -> None:
    """test_concat_graph.expected:103: ``sin (((n1, n2) ++^ ..., n3) ++^ ...)`` "0:7"."""
    s = Session()
    inner = s.einsum("inner", "a; b => a^b", s.leaf("n1", "2"), s.leaf("n2", "3"))
    nested = s.pointwise(
        "sin", s.einsum("++^", "a; b => a^b", inner, s.leaf("n3", "2"))
    )
    s.close()
    assert ocannl_shape(nested) == "0:7"


# ------------------------------------ test/operations/test_concat_dim_solver


def test_two_concatenations_bounding_one_operand_commit_it() -> None:
    """test_concat_dim_solver.expected (operations):5: ``Concat[2;3] ⊑ v`` and
    ``Concat[1;4] ⊑ v``: "operand committed to the merged size-5 GLB" (``v =
    5`` holds, ``v = 6`` conflicts)."""

    def bounded(size: int) -> None:
        s = Session()
        v, first, second = (s.fresh_dim_var() for _ in range(3))
        concat(s, [Size(2), Size(3)], first)
        concat(s, [Size(1), Size(4)], second)
        s.add(DimIneq(first, v, ORIGIN))
        s.add(DimIneq(second, v, ORIGIN))
        s.add(DimEq(v, Size(size), ORIGIN))

    bounded(5)
    with pytest.raises(ShapeError, match="does not broadcast"):
        bounded(6)


def test_two_incompatible_concatenations_demote_the_operand() -> None:
    """test_concat_dim_solver.expected (operations):7: ``Concat[2;3] ⊑ v`` and
    ``Concat[2;4] ⊑ v``: "operand demoted to broadcast-top (size 1)"."""
    s = Session()
    v, first, second = (s.fresh_dim_var() for _ in range(3))
    concat(s, [Size(2), Size(3)], first)
    concat(s, [Size(2), Size(4)], second)
    s.add(DimIneq(first, v, ORIGIN))
    s.add(DimIneq(second, v, ORIGIN))
    assert s.solver.find_dim(v) == Size(1)


def test_a_concatenation_bound_leaves_the_operand_open_at_stage_1() -> None:
    """test_concat_dim_solver.expected (operations):9: below closing, "the
    operand left unsolved for a later stage"."""
    s = Session()
    v, first, second = (s.fresh_dim_var() for _ in range(3))
    concat(s, [Size(2), Size(3)], first)
    concat(s, [Size(1), Size(4)], second)
    s.add(DimIneq(first, v, ORIGIN))
    s.add(DimIneq(second, v, ORIGIN))
    assert s.solver.find_dim(v) == v


def test_a_solved_part_crosses_into_an_all_variable_side() -> None:
    """test_concat_dim_solver.expected (operations):13: ``[a; b] = [4; e]``:
    "leftover bound b = 4" (here closing: ``a`` takes its least size, 1, and
    so does ``e``)."""
    s = Session()
    a, b, e, axis = (s.fresh_dim_var() for _ in range(4))
    concat(s, [a, b], axis)
    concat(s, [Size(4), e], axis)
    shape = s.new_shape("t", Row(()), Row(()), Row((a, b, e)))
    s.close()
    assert shape.dims()[2][1] == 4


def test_an_affine_part_does_not_tie_two_variables() -> None:
    """test_concat_dim_solver.expected (operations):17: ``[a; c] = [2*w; b]``:
    "a and b left independent (a:=5, b:=7 both consistent)"."""
    s = Session()
    a, c, b, w, doubled, axis = (s.fresh_dim_var() for _ in range(6))
    strided(s, 2, w, doubled)
    concat(s, [a, c], axis)
    concat(s, [doubled, b], axis)
    s.add(DimEq(a, Size(5), ORIGIN))
    s.add(DimEq(b, Size(7), ORIGIN))
    shape = s.new_shape("t", Row(()), Row(()), Row((a, c, b, w)))
    s.close()
    a_size, c_size, b_size, w_size = shape.dims()[2]
    assert (a_size, b_size) == (5, 7) and a_size + c_size == 2 * w_size + b_size


# ----------------------------------------- test/einsum/test_concat_dim_solver


def test_two_all_variable_concatenations_bounding_one_operand_close() -> None:
    """test_concat_dim_solver.expected (einsum):6: two ``Concat [_; _] ⊑ vv``:
    "two Concat GLB bounds merge at stage 4 [solved]"."""
    s = Session()
    vv = s.fresh_dim_var()
    dims = [vv]
    for _ in range(2):
        parts = [s.fresh_dim_var(), s.fresh_dim_var()]
        axis = s.fresh_dim_var()
        concat(s, parts, axis)
        s.add(DimIneq(axis, vv, ORIGIN))
        dims += [*parts, axis]
    shape = s.new_shape("t", Row(()), Row(()), Row(tuple(dims)))
    s.close()
    assert shape.dims()[2][1:] == (1, 1, 2, 1, 1, 2)


def test_all_variable_concatenations_are_left_pending_at_stage_1() -> None:
    """test_concat_dim_solver.expected (einsum):13: "3-var = 2-var deferred
    at stage 1 [deferred(1)]"."""
    s = Session()
    parts = [s.fresh_dim_var() for _ in range(5)]
    axis = s.fresh_dim_var()
    concat(s, parts[:3], axis)
    concat(s, parts[3:], axis)
    assert len(s.solver.linears) == 2
    assert all(s.solver.find_dim(p) == p for p in parts)


# --------------------------------------------- test/einsum/test_beg_dims_alignment


def test_a_shape_spec_puts_leading_axes_before_the_row_variable() -> None:
    """test_beg_dims_alignment.expected:4: "3, ..rho.., 7" has ``beg_dims =
    [3]`` and ``dims = [7]`` (here a leaf spec, whose row variable is ``...``)."""
    row = parse_shape_spec("3,...,7").output
    assert (row.beg, row.sizes, row.is_open) == ((Size(3),), (Size(7),), True)


def test_leading_axes_survive_substitution() -> None:
    """test_beg_dims_alignment.expected:8: "3, ..rho.., 7" with ``rho := [4]``
    is ``[3, 4, 7]``."""
    s = Session()
    front, rho = s.fresh_row_var(), s.fresh_row_var()
    whole = Row((Size(7),), front)
    s.add(RowPrefix(Row((), front), (Size(3),), Row((), rho), ORIGIN))
    s.add(RowEq(Row((), rho), Row((Size(4),)), ORIGIN))
    assert s.solver.norm_row(whole) == Row((Size(3), Size(4), Size(7)))


def test_a_leaf_with_leading_axes_closes_around_its_row_variable() -> None:
    """A leaf ``"3,...,7"`` alone closes to ``[3, 7]``; added to ``[3, 5, 7]``
    it takes ``[3, 5, 7]`` (its row variable, not its leading axis, takes the
    axes in between)."""
    s = Session()
    alone = s.leaf("alone", "3,...,7")
    used = s.param("used", "3,...,7")
    s.pointwise("sum", used, s.leaf("y", "3,5,7"))
    s.close()
    assert alone.shape.dims()[2] == (3, 7)
    assert used.shape.dims()[2] == (3, 5, 7)


# ------------------------------------------------- test/einsum/test_einsum_capture


def test_capture_a_row_variable() -> None:
    """test_einsum_capture.expected:8: "Row variable r (product of dims): 12"
    (``x3 +* "a..r..;..r..b=>ab" ["r"] y3``); and :15, ``dim a + dim j + dim
    r`` is 21."""
    s = Session()
    x, y = s.param("x", "...->2,3"), s.param("y", "...->3,4")
    a, b, c = (s.dim_ref(label) for label in "abc")
    s.einsum("z", "ab;bc=>ac", x, y, capture_dims=[a, b, c])
    j = s.dim_ref("j")
    s.einsum("y2", "ij=>ji", s.param("x2", "...->5,7"), capture_dims=[j])
    r = s.dim_ref("r")
    x3, y3 = s.param("x3", "...->2,3,4"), s.param("y3", "...->3,4,5")
    s.einsum("z3", "a..r..;..r..b=>ab", x3, y3, capture_dims=[r])
    s.close()
    assert r.value == 12
    assert (a.value or 0) + (j.value or 0) + r.value == 21


def test_set_dim_and_set_equal_on_unbound_references() -> None:
    """test_einsum_capture.expected:20-23: ``set_dim var1 42``; ``set_equal var2
    var1`` gives 42; two 42s are equal; 50 and 75 are "Cannot set equal
    dimensions for variable references with different values"."""
    s = Session()
    var1, var2, var3 = (s.dim_ref(f"test_var{i}") for i in (1, 2, 3))
    s.set_dim(var1, 42)
    s.set_equal(var2, var1)
    assert var2.value == 42
    s.set_dim(var3, 42)
    s.set_equal(var1, var3)
    var6, var7 = s.dim_ref("test_var6"), s.dim_ref("test_var7")
    s.set_dim(var6, 50)
    s.set_dim(var7, 75)
    with pytest.raises(ShapeError, match="stand for different sizes"):
        s.set_equal(var6, var7)
    assert not s.tainted


def test_set_equal_of_a_row_capture_and_an_unbound_reference() -> None:
    """test_einsum_capture.expected:30-32: ``s`` of ``"a..s..;..s..b=>ab"``
    over 2,6 and 6,3; ``set_equal s test_dim``: both 6."""
    s = Session()
    row, dim = s.dim_ref("s"), s.dim_ref("test_dim")
    x_row, y_row = s.param("x_row", "...->2,6"), s.param("y_row", "...->6,3")
    s.einsum("z_row", "a..s..;..s..b=>ab", x_row, y_row, capture_dims=[row])
    s.set_equal(row, dim)
    s.close()
    assert (row.value, dim.value) == (6, 6)


def _captured(s: Session, labels: str) -> dict[str, DimRef]:
    return {label: s.dim_ref(label) for label in labels}


def test_set_equal_in_shape_validation() -> None:
    """test_einsum_capture.expected:36-46: ``set_equal i k`` in a matrix
    product of 4,6 and 6,4 (c1 "4,4"); ``set_equal a d`` and ``c`` to a
    reference set to 7 (z2 "3,3", ``a=3, b=5, c=7, d=3``)."""
    s = Session()
    refs = _captured(s, "ijk")
    c1 = s.einsum(
        "c1",
        "ij;jk=>ik",
        s.param("a1", "...->4,6"),
        s.param("b1", "...->6,4"),
        capture_dims=list(refs.values()),
    )
    s.set_equal(refs["i"], refs["k"])
    more = _captured(s, "abcd")
    z2 = s.einsum(
        "z2",
        "abc;bcd=>ad",
        s.param("x2", "...->3,5,7"),
        s.param("y2", "...->5,7,3"),
        capture_dims=list(more.values()),
    )
    s.set_equal(more["a"], more["d"])
    fixed_c = s.dim_ref("fixed_c")
    s.set_dim(fixed_c, 7)
    s.set_equal(more["c"], fixed_c)
    s.close()
    assert (c1.shape.dims()[2], z2.shape.dims()[2]) == ((4, 4), (3, 3))
    assert [more[label].value for label in "abcd"] == [3, 5, 7, 3]


def test_set_equal_of_two_row_captures_and_of_a_row_and_a_dim() -> None:
    """test_einsum_capture.expected:51-52: ``set_equal row1 row2`` (r3
    "2,3,5", both totals 3); :56-58: ``set_equal mix n`` (m2 "8,2,4", ``n``
    and the total of ``mix`` 8)."""
    s = Session()
    row1, row2 = s.dim_ref("row1"), s.dim_ref("row2")
    r3 = s.einsum(
        "r3",
        "a, ..row1.., b; ..row2.., c => a, ..row1.., c",
        s.param("r1", "...->2,3,4"),
        s.param("r2", "...->3,5"),
        capture_dims=[row1, row2],
    )
    s.set_equal(row1, row2)
    mix, n = s.dim_ref("mix"), s.dim_ref("n")
    m2 = s.einsum(
        "m2",
        "..mix.., n => n, ..mix..",
        s.param("m1", "...->2,4,8"),
        capture_dims=[mix, n],
    )
    s.set_equal(mix, n)
    s.close()
    assert (r3.shape.dims()[2], row1.value, row2.value) == ((2, 3, 5), 3, 3)
    assert (m2.shape.dims()[2], n.value, mix.value) == ((8, 2, 4), 8, 8)


def test_set_equal_between_operations() -> None:
    """test_einsum_capture.expected:60-65: ``chain2 = chain1 ++ "a, b => b,
    a"``, ``chain4 = chain2 +* "e, d; e, f => d, f"`` with ``a = d``, ``b =
    e`` and ``d`` equal to a reference set to 4 (chain4 "4,6")."""
    s = Session()
    ab = _captured(s, "ab")
    chain2 = s.einsum(
        "chain2",
        "a, b => b, a",
        s.param("chain1", "...->4,5"),
        capture_dims=list(ab.values()),
    )
    edf = _captured(s, "def")
    chain4 = s.einsum(
        "chain4",
        "e, d; e, f => d, f",
        chain2,
        s.param("chain3", "...->5,6"),
        capture_dims=list(edf.values()),
    )
    s.set_equal(ab["a"], edf["d"])
    s.set_equal(ab["b"], edf["e"])
    final_size = s.dim_ref("final_size")
    s.set_dim(final_size, 4)
    s.set_equal(edf["d"], final_size)
    s.close()
    assert chain4.shape.dims()[2] == (4, 6)
    assert [r.value for r in (ab["a"], ab["b"], edf["d"], edf["e"], edf["f"])] == [
        4,
        5,
        4,
        5,
        6,
    ]


def test_set_equal_drives_a_matrix_product() -> None:
    """test_einsum_capture.expected:69-73: ``set_equal i i_size`` etc. after
    the einsum of two unspecified parameters: m1 "3,4", m2 "4,5", result "3,5"."""
    s = Session()
    m1, m2 = s.param("m1", "...->..."), s.param("m2", "...->...")
    refs = _captured(s, "ijk")
    result = s.einsum("result1", "ij;jk=>ik", m1, m2, capture_dims=list(refs.values()))
    for label, n in zip("ijk", (3, 4, 5), strict=True):
        size = s.dim_ref(f"{label}_size")
        s.set_dim(size, n)
        s.set_equal(refs[label], size)
    s.close()
    assert [t.shape.dims()[2] for t in (m1, m2, result)] == [(3, 4), (4, 5), (3, 5)]


def test_interdependent_set_equal() -> None:
    """test_einsum_capture.expected:88-92: ``"pqr;rst=>pqst"`` with ``p = t =
    4``, ``q = s``, ``r = 6``, ``q = 5``: "4,5,6", "6,5,4", "4,5,5,4"."""
    s = Session()
    c1, c2 = s.param("complex1", "...->..."), s.param("complex2", "...->...")
    refs = _captured(s, "pqrst")
    result = s.einsum(
        "complex_result", "pqr;rst=>pqst", c1, c2, capture_dims=list(refs.values())
    )
    size_constraint = s.dim_ref("size_constraint")
    s.set_dim(size_constraint, 4)
    s.set_equal(refs["p"], size_constraint)
    s.set_equal(refs["t"], size_constraint)
    s.set_equal(refs["q"], refs["s"])
    r_size, q_size = s.dim_ref("r_size"), s.dim_ref("q_size")
    s.set_dim(r_size, 6)
    s.set_equal(refs["r"], r_size)
    s.set_dim(q_size, 5)
    s.set_equal(refs["q"], q_size)
    s.close()
    assert [t.shape.dims()[2] for t in (c1, c2, result)] == [
        (4, 5, 6),
        (6, 5, 4),
        (4, 5, 5, 4),
    ]
    assert [refs[label].value for label in "pqrst"] == [4, 5, 6, 5, 4]


def test_set_equal_without_information_is_refused() -> None:
    """shape.ml, ``set_equal``: two references neither bound nor set are
    "set_equal: insufficient information between labels"."""
    s = Session()
    with pytest.raises(ShapeError, match="insufficient information"):
        s.set_equal(s.dim_ref("u"), s.dim_ref("w"))


# ------------------------------------------ deliberate differences (docs/shapes.md §8)


def test_difference_concatenations_of_variables_have_positive_parts() -> None:
    """test_concat_dim_solver.expected (einsum):8-11 and (operations):11, 15:
    OCANNL pairs the oldest variables of two all-variable concatenations and
    allows an empty part (``[a; b; c] = [d; e]``: ``a = d``, ``b = e``, ``c =
    0``); here every part has a positive size, and closing gives each
    concatenation the least size its parts allow (``1+1+1 = 1+2``; a shared
    first part: ``1+1+1 = 1+2``)."""

    def closed(sides: tuple[int, int], shared: bool) -> tuple[int, ...]:
        s = Session()
        first = [s.fresh_dim_var() for _ in range(sides[0])]
        second = [s.fresh_dim_var() for _ in range(sides[1])]
        if shared:
            second[0] = first[0]
        axis = s.fresh_dim_var()
        concat(s, first, axis)
        concat(s, second, axis)
        shape = s.new_shape("t", Row(()), Row(()), Row((*first, *second)))
        s.close()
        return shape.dims()[2]

    assert closed((3, 2), shared=False) == (1, 1, 1, 1, 2)
    assert closed((2, 3), shared=False) == (1, 2, 1, 1, 1)
    assert closed((3, 2), shared=True) == (1, 1, 1, 1, 2)
    assert closed((2, 3), shared=True) == (1, 2, 1, 1, 1)


def test_difference_no_pairing_links_two_concatenations() -> None:
    """test_concat_dim_solver.expected (operations):11, 15: after ``[a; b; c]
    = [d; e]`` and ``a := 7``, OCANNL reads ``d = 7`` (paired); here only the
    sums are equal, so ``d`` is free and closes to its least size."""
    s = Session()
    a, b, c, d, e, axis = (s.fresh_dim_var() for _ in range(6))
    concat(s, [a, b, c], axis)
    concat(s, [d, e], axis)
    s.add(DimEq(a, Size(7), ORIGIN))
    s.add(DimEq(b, Size(9), ORIGIN))
    shape = s.new_shape("t", Row(()), Row(()), Row((a, b, c, d, e)))
    s.close()
    assert shape.dims()[2] == (7, 9, 1, 1, 16)


def test_difference_leading_axes_broadcast_from_the_right() -> None:
    """test_beg_dims_alignment.expected:6: OCANNL aligns ``[2, ...rho, 4]``
    with ``[5, 2, 4]`` on the left (2 against 5: a mismatch) and inserts
    broadcast axes at the row variable; here rows broadcast from the right
    (NumPy's rule, new axes in front), so ``rho`` closes empty and
    ``[2, 4]`` broadcasts to ``[5, 2, 4]``."""
    s = Session()
    front, rho = s.fresh_row_var(), s.fresh_row_var()
    opnd = Row((Size(4),), front)
    s.add(RowPrefix(Row((), front), (Size(2),), Row((), rho), ORIGIN))
    s.add(RowIneq(Row((Size(5), Size(2), Size(4))), opnd, ORIGIN))
    shape = s.new_shape("t", Row(()), Row(()), opnd)
    s.close()
    assert shape.dims()[2] == (2, 4)


def test_difference_a_size_one_has_no_basis() -> None:
    """test_dimension_labels.expected:33-34, 37-38, 45-46 (``number
    ~axis_basis:"count"``, ``bits``, ``number_int``: a one-element axis keeps
    its basis in OCANNL); here a 1 is the broadcast unit and has no basis
    (docs/shapes.md §1), so ``1@count`` is ``1``."""
    s = Session()
    t = s.leaf("t", "1@count")
    s.close()
    (dim,) = t.shape.current()[2].dims
    assert dim == Size(1) and type(dim) is Size and dim.basis == "default"


def test_difference_a_padded_kernel_takes_no_part_in_the_basis() -> None:
    """row.ml merges a padded convolution's kernel basis into its axis only when
    both are substituted (``s_dim_one``), not when the axis is solved by
    unification (``unify_dim``: ``over``'s basis); here the kernel of a
    padded axis takes no part in its size, nor in its basis."""
    s = Session()
    out = s.einsum("o", "o=+k; k => o", s.leaf("x", "5@x"), s.leaf("w", "3@y"))
    s.close()
    assert out.shape.current()[2] == Row((Size(5, "x"),))
