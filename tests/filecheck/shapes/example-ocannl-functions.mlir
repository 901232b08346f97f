// OCANNL's standard blocks as functions (examples/shapes/ocannl_functions.mlir):
// a transformer encoder block calling attention, layer norms and an MLP, which
// call a linear layer; a CNN calling a convolution block. Every call site is
// served by a shape scheme, nested ones included, and the types are those of
// re-evaluating every call, through close-shapes alone and through
// generalize-shapes,close-shapes.
// RUN: xdsl-opt -p 'close-shapes{explain=true}' %examples/shapes/ocannl_functions.mlir | filecheck %s
// RUN: xdsl-opt -p 'close-shapes{calls=re-evaluate}' %examples/shapes/ocannl_functions.mlir > %t.re
// RUN: xdsl-opt -p close-shapes %examples/shapes/ocannl_functions.mlir | diff %t.re -
// RUN: xdsl-opt -p generalize-shapes,close-shapes %examples/shapes/ocannl_functions.mlir | sed -E '/^  tprog\.scheme /,/^  \}$/d; s/tprog\.instantiate @([A-Za-z0-9_]+)\.scheme\(/tprog.call @\1(/' | diff %t.re -
// RUN: xdsl-opt -p 'generalize-shapes{explain=true}' %examples/shapes/ocannl_functions.mlir | filecheck %s --check-prefix=GEN

// CHECK:      builtin.module attributes {tprog.served = "17 call sites: 17 served by a scheme, 0 re-evaluated"} {
// CHECK:        %q = tprog.call @linear(%x_3, %w_q) at "q" {tprog.served = "by a scheme"} : !tprog.tensor
// CHECK:        %mha = tprog.call @attention(%input, %w_q_1, %w_k_1, %w_v_1, %w_o_1) at "mha" {tprog.served = "by a scheme"} : !tprog.tensor
// CHECK:        %l0_w_q = tprog.param "...->..." : !tprog.tensor<"64->4,16">
// CHECK:        %l0_w_o = tprog.param "...->..." : !tprog.tensor<"4,16->64">
// CHECK:        %l0_w_up = tprog.param "...->..." : !tprog.tensor<"64->256">
// CHECK:        %l0_w_down = tprog.param "...->..." : !tprog.tensor<"256->64">
// CHECK:        %train2 = tprog.call @encoder_block({{.*}}) at "train-layer1" {tprog.served = "by a scheme"} : !tprog.tensor<"8,10|64">
// CHECK:        %eval2 = tprog.call @encoder_block({{.*}}) at "eval-layer1" {tprog.served = "by a scheme"} : !tprog.tensor<"1,32|64">
// CHECK:        %kernel1 = tprog.param "...->..." : !tprog.tensor<"3,3,3->8">
// CHECK:        %kernel2 = tprog.param "...->..." : !tprog.tensor<"3,3,8->8">
// CHECK:        %c1 = tprog.call @conv_block(%images, %kernel1, %bias1) at "conv1" {tprog.served = "by a scheme"} : !tprog.tensor<"8|4,4,8">
// CHECK-NEXT:   %c2 = tprog.call @conv_block(%c1, %kernel2, %bias2) at "conv2" {tprog.served = "by a scheme"} : !tprog.tensor<"8|1,1,8">
// CHECK:        %logits = tprog.call @linear(%pooled_1, %classes) at "classify" {tprog.served = "by a scheme"} : !tprog.tensor<"8|10">

// GEN:        builtin.module attributes {tprog.served = "17 call sites: 17 served by a scheme, 0 re-evaluated"} {
