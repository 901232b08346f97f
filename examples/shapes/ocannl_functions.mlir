// OCANNL's standard blocks (lib/nn_blocks.ml of github.com/ahrefs/ocannl) as
// tprog functions, the way a model applies them: a transformer block calls
// attention, layer norms and an MLP, which call a linear layer; a small CNN
// calls a convolution block twice. The blocks are those of ocannl_blocks.mlir.
//
//   xdsl-opt -p 'close-shapes{explain=true}' examples/shapes/ocannl_functions.mlir
//
// Every call site is served by a shape scheme: each function is traced once
// (callees first) and its scheme applied at every call, inside its callers'
// traces too. The blocks' parameters are module-level tensors passed as
// arguments (each layer its own); their sizes come from the applications.
// OCANNL's `Shape.set_dim` on the capture labels stands at module level: a
// capture reference is module-level here, and a scheme cannot carry set_dim
// on a reference made outside its trace (it binds the label, the module sets
// its size).

tprog.set_dim "h" = 4
tprog.set_dim "d" = 16
tprog.set_dim "e" = 16
tprog.set_dim "kh" = 3
tprog.set_dim "kw" = 3
tprog.set_dim "oc" = 8

// A linear layer: ({w} * x).
tprog.func @linear(%x: !tprog.tensor, %w: !tprog.tensor) -> !tprog.tensor {
  %wx = tprog.compose %w, %x
  tprog.return %wx
}

// mlp_layer: relu(({w} * x) + {b; o = [hid]}), then back to the input width.
tprog.func @mlp(%x: !tprog.tensor, %w: !tprog.tensor, %b: !tprog.tensor, %w_out: !tprog.tensor) -> !tprog.tensor {
  %wx = tprog.call @linear(%x, %w) at "up" : !tprog.tensor
  %wxb = tprog.pointwise %wx, %b
  %hidden = tprog.pointwise %wxb {fn = "relu"}
  %ff = tprog.call @linear(%hidden, %w_out) at "down" : !tprog.tensor
  tprog.return %ff
}

// layer_norm: mean and variance over the output axes, then gamma and beta.
tprog.func @layer_norm(%x: !tprog.tensor, %gamma: !tprog.tensor, %beta: !tprog.tensor) -> !tprog.tensor {
  %mean = tprog.einsum "...|..d..=>...|0" (%x) : !tprog.tensor
  %centered = tprog.pointwise %x, %mean {fn = "sub"}
  %squared = tprog.pointwise %centered, %centered {fn = "mul"}
  %variance = tprog.einsum "...|...=>...|0" (%squared) : !tprog.tensor
  %std = tprog.pointwise %variance {fn = "sqrt"}
  %normalized = tprog.pointwise %centered, %std {fn = "div"}
  %scaled = tprog.pointwise %gamma, %normalized {fn = "mul"}
  %ln = tprog.pointwise %scaled, %beta
  tprog.return %ln
}

// multi_head_attention: heads h, key width d, value width e.
tprog.func @attention(%x: !tprog.tensor, %w_q: !tprog.tensor, %w_k: !tprog.tensor, %w_v: !tprog.tensor, %w_o: !tprog.tensor) -> !tprog.tensor {
  %q = tprog.call @linear(%x, %w_q) at "q" : !tprog.tensor
  %k = tprog.call @linear(%x, %w_k) at "k" : !tprog.tensor
  %v = tprog.call @linear(%x, %w_v) at "v" : !tprog.tensor
  %scores = tprog.einsum " ... s | h d; ... t | h d => ... s | t -> h" (%q, %k) capture ["h", "d"] : !tprog.tensor
  %max = tprog.einsum " ... | t -> ... => ... | 0 -> ..." (%scores) : !tprog.tensor
  %shifted = tprog.pointwise %scores, %max {fn = "sub"}
  %exp = tprog.pointwise %shifted {fn = "exp"}
  %total = tprog.einsum " ... | t -> ... => ... | 0 -> ..." (%exp) : !tprog.tensor
  %attn = tprog.pointwise %exp, %total {fn = "div"}
  %mixed = tprog.einsum " ... s | t -> h; ... t | h e => ... s | h e" (%attn, %v) capture ["e"] : !tprog.tensor
  %attended = tprog.call @linear(%mixed, %w_o) at "o" : !tprog.tensor
  tprog.return %attended
}

// transformer_encoder_block: ln1 (input + mha input), then ln2 (x1 + ffn x1).
tprog.func @encoder_block(%input: !tprog.tensor, %w_q: !tprog.tensor, %w_k: !tprog.tensor, %w_v: !tprog.tensor, %w_o: !tprog.tensor, %g1: !tprog.tensor, %b1: !tprog.tensor, %w_up: !tprog.tensor, %b_up: !tprog.tensor, %w_down: !tprog.tensor, %g2: !tprog.tensor, %b2: !tprog.tensor) -> !tprog.tensor {
  %mha = tprog.call @attention(%input, %w_q, %w_k, %w_v, %w_o) at "mha" : !tprog.tensor
  %res1 = tprog.pointwise %input, %mha
  %x1 = tprog.call @layer_norm(%res1, %g1, %b1) at "ln1" : !tprog.tensor
  %ffn = tprog.call @mlp(%x1, %w_up, %b_up, %w_down) at "ffn" : !tprog.tensor
  %res2 = tprog.pointwise %x1, %ffn
  %x2 = tprog.call @layer_norm(%res2, %g2, %b2) at "ln2" : !tprog.tensor
  tprog.return %x2
}

// conv2d: "stride*oh+kh" axes (stride 2, padded: '='), then the bias; and a
// 2x2 max pool without padding ('<'), its window a constant of the block.
tprog.func @conv_block(%image: !tprog.tensor, %kernel: !tprog.tensor, %bias: !tprog.tensor) -> !tprog.tensor {
  %conv = tprog.einsum "... | 2*oh=+kh, 2*ow=+kw, ic; kh, kw, ic -> oc => ... | oh, ow, oc" (%image, %kernel) capture ["kh", "kw", "oc"] : !tprog.tensor
  %biased = tprog.pointwise %conv, %bias
  %relu = tprog.pointwise %biased {fn = "relu"}
  %window = tprog.leaf "2,2"
  %pooled = tprog.einsum "... | 2*ph<+wh, 2*pw<+ww, c; wh, ww => ... | ph, pw, c" (%relu, %window) : !tprog.tensor
  tprog.return %pooled
}

// Two encoder layers, each with its own parameters.
%l0_w_q = tprog.param "...->..."
%l0_w_k = tprog.param "...->..."
%l0_w_v = tprog.param "...->..."
%l0_w_o = tprog.param "...->..."
%l0_g1 = tprog.param "...->..."
%l0_b1 = tprog.param "...->..."
%l0_w_up = tprog.param "...->..."
%l0_b_up = tprog.param "...->256"
%l0_w_down = tprog.param "...->..."
%l0_g2 = tprog.param "...->..."
%l0_b2 = tprog.param "...->..."
%l1_w_q = tprog.param "...->..."
%l1_w_k = tprog.param "...->..."
%l1_w_v = tprog.param "...->..."
%l1_w_o = tprog.param "...->..."
%l1_g1 = tprog.param "...->..."
%l1_b1 = tprog.param "...->..."
%l1_w_up = tprog.param "...->..."
%l1_b_up = tprog.param "...->256"
%l1_w_down = tprog.param "...->..."
%l1_g2 = tprog.param "...->..."
%l1_b2 = tprog.param "...->..."

// A training batch and an evaluation batch through both layers.
%train = tprog.leaf "8,10|->64"
%train1 = tprog.call @encoder_block(%train, %l0_w_q, %l0_w_k, %l0_w_v, %l0_w_o, %l0_g1, %l0_b1, %l0_w_up, %l0_b_up, %l0_w_down, %l0_g2, %l0_b2) at "train-layer0" : !tprog.tensor
%train2 = tprog.call @encoder_block(%train1, %l1_w_q, %l1_w_k, %l1_w_v, %l1_w_o, %l1_g1, %l1_b1, %l1_w_up, %l1_b_up, %l1_w_down, %l1_g2, %l1_b2) at "train-layer1" : !tprog.tensor
%eval = tprog.leaf "1,32|->64"
%eval1 = tprog.call @encoder_block(%eval, %l0_w_q, %l0_w_k, %l0_w_v, %l0_w_o, %l0_g1, %l0_b1, %l0_w_up, %l0_b_up, %l0_w_down, %l0_g2, %l0_b2) at "eval-layer0" : !tprog.tensor
%eval2 = tprog.call @encoder_block(%eval1, %l1_w_q, %l1_w_k, %l1_w_v, %l1_w_o, %l1_g1, %l1_b1, %l1_w_up, %l1_b_up, %l1_w_down, %l1_g2, %l1_b2) at "eval-layer1" : !tprog.tensor

// A small CNN: two convolution blocks, then a linear classifier on the mean
// over the pooled positions.
%kernel1 = tprog.param "...->..."
%bias1 = tprog.param "...->..."
%kernel2 = tprog.param "...->..."
%bias2 = tprog.param "...->..."
%classes = tprog.param "...->10"
%images = tprog.leaf "8|16,16,3"
%c1 = tprog.call @conv_block(%images, %kernel1, %bias1) at "conv1" : !tprog.tensor
%c2 = tprog.call @conv_block(%c1, %kernel2, %bias2) at "conv2" : !tprog.tensor
%pooled = tprog.einsum "... | h, w, c => ... | c" (%c2) : !tprog.tensor
%logits = tprog.call @linear(%pooled, %classes) at "classify" : !tprog.tensor
