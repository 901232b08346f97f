// OCANNL's standard blocks (examples/shapes/ocannl_blocks.mlir): MLP layer, layer norm,
// multi-head attention and 2-D convolution (padded, strided; unpadded).
// RUN: xdsl-opt -p close-shapes %examples/shapes/ocannl_blocks.mlir | filecheck %s

// CHECK: %x = tprog.leaf "8,10|->64" : !tprog.tensor<"8,10|64">
// CHECK: %w = tprog.param "...->..." : !tprog.tensor<"64->256">
// CHECK: %b = tprog.param "...->256" : !tprog.tensor<"256">
// CHECK: %wx = tprog.compose %w, %x : !tprog.tensor<"8,10|256">
// CHECK: %w_out = tprog.param "...->..." : !tprog.tensor<"256->64">
// CHECK: %ff = tprog.compose %w_out, %hidden : !tprog.tensor<"8,10|64">
// CHECK: %mean = tprog.einsum "...|..d..=>...|0" (%ff_res) : !tprog.tensor<"8,10|1">
// CHECK: %variance = tprog.einsum "...|...=>...|0" (%squared) : !tprog.tensor<"8,10|1">
// CHECK: %gamma = tprog.param "...->..." : !tprog.tensor<"64">
// CHECK: %beta = tprog.param "...->..." : !tprog.tensor<"64">
// CHECK: %ln = tprog.pointwise %scaled, %beta : !tprog.tensor<"8,10|64">
// CHECK: %w_q = tprog.param "...->..." : !tprog.tensor<"64->4,16">
// CHECK: %w_k = tprog.param "...->..." : !tprog.tensor<"64->4,16">
// CHECK: %w_v = tprog.param "...->..." : !tprog.tensor<"64->4,8">
// CHECK: %q = tprog.compose %w_q, %ln : !tprog.tensor<"8,10|4,16">
// CHECK: %k = tprog.compose %w_k, %ln : !tprog.tensor<"8,10|4,16">
// CHECK: %v = tprog.compose %w_v, %ln : !tprog.tensor<"8,10|4,8">
// CHECK: %scores = tprog.einsum " ... s | h d; ... t | h d => ... s | t -> h" (%q, %k) capture ["h", "d"] : !tprog.tensor<"8,10|10->4">
// CHECK: %max = tprog.einsum " ... | t -> ... => ... | 0 -> ..." (%scores) : !tprog.tensor<"8,10|1->4">
// CHECK: %total = tprog.einsum " ... | t -> ... => ... | 0 -> ..." (%exp) : !tprog.tensor<"8,10|1->4">
// CHECK: %mixed = tprog.einsum " ... s | t -> h; ... t | h e => ... s | h e" (%attn, %v) capture ["e"] : !tprog.tensor<"8,10|4,8">
// CHECK: %w_o = tprog.param "...->..." : !tprog.tensor<"4,8->64">
// CHECK: %attended = tprog.compose %w_o, %mixed : !tprog.tensor<"8,10|64">
// CHECK: %block = tprog.pointwise %ln, %attended : !tprog.tensor<"8,10|64">
// CHECK: %image = tprog.leaf "8|28,28,3" : !tprog.tensor<"8|28,28,3">
// CHECK: %kernel = tprog.param "...->..." : !tprog.tensor<"3,3,3->16">
// CHECK: %conv = tprog.einsum "... | 2*oh=+kh, 2*ow=+kw, ic; kh, kw, ic -> oc => ... | oh, ow, oc" (%image, %kernel) capture ["kh", "kw", "oc"] : !tprog.tensor<"8|14,14,16">
// CHECK: %conv_bias = tprog.param "...->..." : !tprog.tensor<"14,14,16">
// CHECK: %conv_out = tprog.pointwise %conv, %conv_bias : !tprog.tensor<"8|14,14,16">
// CHECK: %kernel5 = tprog.param "5,5,3->4" : !tprog.tensor<"5,5,3->4">
// CHECK: %valid = tprog.einsum "... | oh<+kh, ow<+kw, ic; kh, kw, ic -> oc => ... | oh, ow, oc" (%image, %kernel5) : !tprog.tensor<"8|24,24,4">
