// The bundled example of docs/shapes-tutorial.md.
// RUN: xdsl-opt -p close-shapes %examples/shapes/mlp.mlir | filecheck %s
// The pass is idempotent, and its output parses back (custom and generic).
// RUN: xdsl-opt -p close-shapes,close-shapes %examples/shapes/mlp.mlir | filecheck %s
// RUN: xdsl-opt -p close-shapes --print-op-generic %examples/shapes/mlp.mlir | xdsl-opt | filecheck %s

// CHECK:      %w1 = tprog.param "...->64" : !tprog.tensor<"784->64">
// CHECK-NEXT: %b1 = tprog.param "64" : !tprog.tensor<"64">
// CHECK-NEXT: %w2 = tprog.param "...->10" : !tprog.tensor<"64->10">
// CHECK-NEXT: %b2 = tprog.param "10" : !tprog.tensor<"10">
// The two applications give the body different batch sizes: its values keep
// the unknown type, and each call result carries its own shape.
// CHECK-NEXT: tprog.func @mlp(%x: !tprog.tensor) -> !tprog.tensor {
// CHECK-NEXT:   %h = tprog.compose %w1, %x : !tprog.tensor
// CHECK:      %train = tprog.leaf "32|->784" : !tprog.tensor<"32|784">
// CHECK-NEXT: %test = tprog.leaf "1000|->784" : !tprog.tensor<"1000|784">
// CHECK-NEXT: %y_train = tprog.call @mlp(%train) at "train" : !tprog.tensor<"32|10">
// CHECK-NEXT: %y_test = tprog.call @mlp(%test) at "test" : !tprog.tensor<"1000|10">
