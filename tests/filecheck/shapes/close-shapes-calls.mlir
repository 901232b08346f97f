// Calls are inferred by re-evaluating the callee's body at each call site.
// RUN: xdsl-opt -p close-shapes --split-input-file %s | filecheck %s
// RUN: xdsl-opt -p 'close-shapes{annotate-functions=false}' --split-input-file %s | filecheck %s --check-prefix=BARE

// Applications with different batch sizes do not interfere; the shared
// parameter is the same at both. The body's values differ per call, so they
// keep the unknown type.
%w = tprog.param "...->4"
tprog.func @layer(%in: !tprog.tensor) -> !tprog.tensor {
  %h = tprog.compose %w, %in
  tprog.return %h
}
%a = tprog.leaf "2|->3"
%b = tprog.leaf "7|->3"
%ya = tprog.call @layer(%a) at "small" : !tprog.tensor
%yb = tprog.call @layer(%b) at "big" : !tprog.tensor
// CHECK:      %w = tprog.param "...->4" : !tprog.tensor<"3->4">
// CHECK-NEXT: tprog.func @layer(%in: !tprog.tensor) -> !tprog.tensor {
// CHECK-NEXT:   %h = tprog.compose %w, %in : !tprog.tensor
// CHECK:      %ya = tprog.call @layer(%a) at "small" : !tprog.tensor<"2|4">
// CHECK-NEXT: %yb = tprog.call @layer(%b) at "big" : !tprog.tensor<"7|4">

// -----

// When every application agrees, the body is typed too (unless disabled).
tprog.func @double(%in: !tprog.tensor) -> !tprog.tensor {
  %d = tprog.pointwise %in, %in
  tprog.return %d
}
%x = tprog.leaf "5|->3"
%once = tprog.call @double(%x) at "once" : !tprog.tensor
%twice = tprog.call @double(%once) at "twice" : !tprog.tensor
// CHECK:      tprog.func @double(%in: !tprog.tensor<"5|3">) -> !tprog.tensor<"5|3"> {
// CHECK-NEXT:   %d = tprog.pointwise %in, %in : !tprog.tensor<"5|3">
// CHECK:      %twice = tprog.call @double(%once) at "twice" : !tprog.tensor<"5|3">
// BARE:       tprog.func @double(%in: !tprog.tensor) -> !tprog.tensor {
// BARE-NEXT:    %d = tprog.pointwise %in, %in : !tprog.tensor
// BARE:       %twice = tprog.call @double(%once) at "twice" : !tprog.tensor<"5|3">

// -----

// Nested calls; a function with two results; an uncalled function is left alone.
tprog.func @inner(%v: !tprog.tensor) -> !tprog.tensor {
  %t = tprog.transpose %v
  tprog.return %t
}
tprog.func @outer(%j: !tprog.tensor, %k: !tprog.tensor) -> (!tprog.tensor, !tprog.tensor) {
  %i = tprog.call @inner(%j) at "in-outer" : !tprog.tensor
  %s = tprog.pointwise %i, %k
  tprog.return %s, %i
}
tprog.func @unused(%u: !tprog.tensor) -> !tprog.tensor {
  tprog.return %u
}
%p = tprog.leaf "2->3"
%q = tprog.leaf "6,1->1"
%o:2 = tprog.call @outer(%p, %q) at "top" : !tprog.tensor, !tprog.tensor
// CHECK:      tprog.func @inner(%v: !tprog.tensor<"2->3">) -> !tprog.tensor<"3->2"> {
// CHECK:      tprog.func @unused(%u: !tprog.tensor) -> !tprog.tensor {
// CHECK:      %o, %o_1 = tprog.call @outer(%p, %q) at "top" : !tprog.tensor<"6,3->2">, !tprog.tensor<"3->2">
