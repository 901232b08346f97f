// OCANNL's MLP (lib/nn_blocks.ml, `mlp` of `mlp_layer`s as in its moons demo):
// relu(({w} * x) + {b; o = [hid]}) twice, then {w_out} * hidden. Only the
// biases and the output layer say widths; every weight's output is inferred
// from the bias added to it, its input from the layer below.
//
//   xdsl-opt -p generalize-shapes,close-shapes examples/shapes/mlp_layer.mlir
//
// generalize-shapes traces @mlp once into a tprog.scheme; close-shapes then
// applies the scheme at both call sites instead of re-evaluating the body.

%w0 = tprog.param "...->..."
%b0 = tprog.param "...->16"
%w1 = tprog.param "...->..."
%b1 = tprog.param "...->16"
%w_out = tprog.param "...->1"

tprog.func @mlp(%x: !tprog.tensor) -> !tprog.tensor {
  %h0 = tprog.compose %w0, %x
  %z0 = tprog.pointwise %h0, %b0
  %a0 = tprog.pointwise %z0 {fn = "relu"}
  %h1 = tprog.compose %w1, %a0
  %z1 = tprog.pointwise %h1, %b1
  %a1 = tprog.pointwise %z1 {fn = "relu"}
  %y = tprog.compose %w_out, %a1
  tprog.return %y
}

%train = tprog.leaf "20|->2"
%test = tprog.leaf "100|->2"
%y_train = tprog.call @mlp(%train) at "train" : !tprog.tensor
%y_test = tprog.call @mlp(%test) at "test" : !tprog.tensor
