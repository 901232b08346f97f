// OCANNL's MLP (examples/shapes/mlp_layer.mlir): the biases decide the weights' widths,
// through a scheme traced once and applied at two call sites, and by re-evaluation.
// RUN: xdsl-opt -p generalize-shapes,close-shapes %examples/shapes/mlp_layer.mlir | filecheck %s
// RUN: xdsl-opt -p close-shapes %examples/shapes/mlp_layer.mlir | filecheck %s --check-prefix=EVAL

// CHECK: %w0 = tprog.param "...->..." : !tprog.tensor<"2->16">
// CHECK: %b0 = tprog.param "...->16" : !tprog.tensor<"16">
// CHECK: %w1 = tprog.param "...->..." : !tprog.tensor<"16->16">
// CHECK: %b1 = tprog.param "...->16" : !tprog.tensor<"16">
// CHECK: %w_out = tprog.param "...->1" : !tprog.tensor<"16->1">
// CHECK: tprog.scheme @mlp.scheme "mlp" for @mlp(%w0, %b0, %w1, %b1, %w_out) arity 1 results 1 {
// CHECK: %y_train = tprog.instantiate @mlp.scheme(%train) at "train" : !tprog.tensor<"20|1">
// CHECK: %y_test = tprog.instantiate @mlp.scheme(%test) at "test" : !tprog.tensor<"100|1">

// EVAL: %w0 = tprog.param "...->..." : !tprog.tensor<"2->16">
// EVAL: %b0 = tprog.param "...->16" : !tprog.tensor<"16">
// EVAL: %w1 = tprog.param "...->..." : !tprog.tensor<"16->16">
// EVAL: %b1 = tprog.param "...->16" : !tprog.tensor<"16">
// EVAL: %w_out = tprog.param "...->1" : !tprog.tensor<"16->1">
// EVAL: %y_train = tprog.call @mlp(%train) at "train" : !tprog.tensor<"20|1">
// EVAL: %y_test = tprog.call @mlp(%test) at "test" : !tprog.tensor<"100|1">
