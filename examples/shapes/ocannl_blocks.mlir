// OCANNL's standard blocks (lib/nn_blocks.ml of github.com/ahrefs/ocannl) as
// tprog programs, with the widths written where OCANNL's code writes them.
//
//   xdsl-opt -p close-shapes examples/shapes/ocannl_blocks.mlir
//
// Parameters written "...->..." are OCANNL's inline parameters `{ w }`: no
// batch axes, everything else inferred.

// mlp_layer: relu(({w} * x) + {b; o = [hid]}). Only the bias says the hidden
// width; the weight's output is inferred from it (closing equates the
// product's output with w's, their only link).
%x = tprog.leaf "8,10|->64"
%w = tprog.param "...->..."
%b = tprog.param "...->256"
%wx = tprog.compose %w, %x
%wxb = tprog.pointwise %wx, %b
%hidden = tprog.pointwise %wxb {fn = "relu"}
%w_out = tprog.param "...->..."
%ff = tprog.compose %w_out, %hidden
%ff_res = tprog.pointwise %x, %ff

// layer_norm: mean and variance over the output axes ("... | ..d.. => ... | 0"),
// gamma and beta `{ gamma = 1. }` take the normalized shape from broadcasting.
%mean = tprog.einsum "...|..d..=>...|0" (%ff_res) : !tprog.tensor
%centered = tprog.pointwise %ff_res, %mean {fn = "sub"}
%squared = tprog.pointwise %centered, %centered {fn = "mul"}
%variance = tprog.einsum "...|...=>...|0" (%squared) : !tprog.tensor
%std = tprog.pointwise %variance {fn = "sqrt"}
%normalized = tprog.pointwise %centered, %std {fn = "div"}
%gamma = tprog.param "...->..."
%beta = tprog.param "...->..."
%scaled = tprog.pointwise %gamma, %normalized {fn = "mul"}
%ln = tprog.pointwise %scaled, %beta

// multi_head_attention: heads h, key width d and value width e are set, as
// OCANNL's Shape.set_dim does; the projections' outputs come from the einsums
// and w_o's output from the residual sum.
%w_q = tprog.param "...->..."
%w_k = tprog.param "...->..."
%w_v = tprog.param "...->..."
%q = tprog.compose %w_q, %ln
%k = tprog.compose %w_k, %ln
%v = tprog.compose %w_v, %ln
%scores = tprog.einsum " ... s | h d; ... t | h d => ... s | t -> h" (%q, %k) capture ["h", "d"] : !tprog.tensor
tprog.set_dim "h" = 4
tprog.set_dim "d" = 16
%max = tprog.einsum " ... | t -> ... => ... | 0 -> ..." (%scores) : !tprog.tensor
%shifted = tprog.pointwise %scores, %max {fn = "sub"}
%exp = tprog.pointwise %shifted {fn = "exp"}
%total = tprog.einsum " ... | t -> ... => ... | 0 -> ..." (%exp) : !tprog.tensor
%attn = tprog.pointwise %exp, %total {fn = "div"}
%mixed = tprog.einsum " ... s | t -> h; ... t | h e => ... s | h e" (%attn, %v) capture ["e"] : !tprog.tensor
tprog.set_dim "e" = 8
%w_o = tprog.param "...->..."
%attended = tprog.compose %w_o, %mixed
%block = tprog.pointwise %ln, %attended

// conv2d: "stride*oh+kh" axes (here stride 2 with padding: '=') give the
// output size from the input and the kernel; the bias takes the result shape.
%image = tprog.leaf "8|28,28,3"
%kernel = tprog.param "...->..."
%conv = tprog.einsum "... | 2*oh=+kh, 2*ow=+kw, ic; kh, kw, ic -> oc => ... | oh, ow, oc" (%image, %kernel) capture ["kh", "kw", "oc"] : !tprog.tensor
tprog.set_dim "kh" = 3
tprog.set_dim "kw" = 3
tprog.set_dim "oc" = 16
%conv_bias = tprog.param "...->..."
%conv_out = tprog.pointwise %conv, %conv_bias
// Without padding ('<') the window must fit: 28 = 1 * (oh - 1) + 5 gives 24.
%kernel5 = tprog.param "5,5,3->4"
%valid = tprog.einsum "... | oh<+kh, ow<+kw, ic; kh, kw, ic -> oc => ... | oh, ow, oc" (%image, %kernel5) : !tprog.tensor
