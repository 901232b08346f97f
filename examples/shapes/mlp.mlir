// A two-layer perceptron whose parameters are made once and shared by every
// application of @mlp, applied to a training batch and a test batch.
//
//   xdsl-opt -p close-shapes examples/shapes/mlp.mlir
//
// Only the widths a person would choose are written down: the hidden width
// (64) and the number of classes (10). The input width of %w1 (784) comes
// from the data, the input width of %w2 (64) from the first layer, and every
// intermediate shape from broadcasting.

%w1 = tprog.param "...->64"
%b1 = tprog.param "64"
%w2 = tprog.param "...->10"
%b2 = tprog.param "10"

tprog.func @mlp(%x: !tprog.tensor) -> !tprog.tensor {
  %h = tprog.compose %w1, %x
  %hb = tprog.pointwise %h, %b1
  %a = tprog.pointwise %hb {fn = "relu"}
  %o = tprog.compose %w2, %a
  %logits = tprog.pointwise %o, %b2
  tprog.return %logits
}

%train = tprog.leaf "32|->784"
%test = tprog.leaf "1000|->784"
%y_train = tprog.call @mlp(%train) at "train" : !tprog.tensor
%y_test = tprog.call @mlp(%test) at "test" : !tprog.tensor
