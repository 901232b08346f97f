// generalize-shapes traces each function once into a tprog.scheme and turns
// every call into a tprog.instantiate; close-shapes then closes shapes from
// the schemes. The printed scheme round-trips, in custom and generic form.
// RUN: xdsl-opt -p generalize-shapes --split-input-file %s | filecheck %s
// RUN: xdsl-opt -p generalize-shapes --split-input-file %s | xdsl-opt --split-input-file | filecheck %s
// RUN: xdsl-opt -p generalize-shapes --split-input-file --print-op-generic %s | xdsl-opt --split-input-file | filecheck %s
// RUN: xdsl-opt -p generalize-shapes,close-shapes --split-input-file %s | filecheck %s --check-prefix=CLOSED
// RUN: xdsl-opt -p 'generalize-shapes{explain=true}' --split-input-file %s | filecheck %s --check-prefix=EXPLAIN
// Generalizing twice changes nothing.
// RUN: xdsl-opt -p generalize-shapes --split-input-file %s > %t.once.mlir
// RUN: xdsl-opt -p generalize-shapes --split-input-file %t.once.mlir | diff %t.once.mlir -

// Generalization and a shared parameter: the batch rows are generalized (the
// two applications do not interfere); the weight %w was made before the trace,
// so its open input row is a fixed variable tied to %w, the scheme's anchor.
%w = tprog.param "...->4"
tprog.func @layer(%in: !tprog.tensor) -> !tprog.tensor {
  %h = tprog.compose %w, %in
  tprog.return %h
}
%a = tprog.leaf "2|->3"
%b = tprog.leaf "7|->3"
%ya = tprog.call @layer(%a) at "small" : !tprog.tensor
%yb = tprog.call @layer(%b) at "big" : !tprog.tensor
// CHECK:      %b = tprog.leaf "7|->3" : !tprog.tensor
// CHECK-NEXT: tprog.scheme @layer.scheme "layer" for @layer(%w) arity 1 results 1 {
// CHECK-NEXT:   "generalized r1, r2, r3, r4, r5, r6"
// CHECK-NEXT:   "fixed r7"
// CHECK-NEXT:   "arg 0 'in' [...r1] | [...r2] -> [...r3]"
// CHECK-NEXT:   "result 0 'h' [...r4] | [...r5] -> [...r6, 4]"
// CHECK-NEXT:   "anchor 0 'w' [] | [...r7] -> [4]"
// CHECK-NEXT:   "internal 0 'h' [...r4] | [...r5] -> [...r6, 4]"
// CHECK-NEXT:   "ineq [...r4] <= [...r1] ('compose' 'h' of 'w', 'in' lhs 'h'.batch rhs 'in'.batch)"
// CHECK-NEXT:   "ineq [...r5] <= [...r2] ('compose' 'h' of 'w', 'in' lhs 'h'.input rhs 'in'.input)"
// CHECK-NEXT:   "ineq [...r7] <= [...r3] ('compose' 'h' of 'w', 'in' lhs 'w'.input rhs 'in'.output)"
// CHECK-NEXT:   "mark used_in_spec_or_compose r7"
// CHECK-NEXT:   "mark safe_to_guess r6"
// CHECK-NEXT:   "gen r6 1"
// CHECK-NEXT: } values {
// CHECK-NEXT:   "@layer arg 0 = arg 0"
// CHECK-NEXT:   "@layer op 0 0 = internal 0"
// CHECK-NEXT: }
// CHECK-NEXT: %ya = tprog.instantiate @layer.scheme(%a) at "small" : !tprog.tensor
// CHECK-NEXT: %yb = tprog.instantiate @layer.scheme(%b) at "big" : !tprog.tensor
// CLOSED:      %w = tprog.param "...->4" : !tprog.tensor<"3->4">
// CLOSED:      %ya = tprog.instantiate @layer.scheme(%a) at "small" : !tprog.tensor<"2|4">
// CLOSED-NEXT: %yb = tprog.instantiate @layer.scheme(%b) at "big" : !tprog.tensor<"7|4">

// -----

// A capture input: the module's reference "i" is set before the call, but
// the scheme does not depend on it (it reads as unbound during the trace);
// each application relates the dim of its first binding (d1) to it.
%x = tprog.leaf "3"
tprog.func @scale(%v: !tprog.tensor) -> !tprog.tensor {
  %e = tprog.einsum "...|i=>...|i" (%v) capture ["i"]
  %s = tprog.pointwise %e, %x
  tprog.return %s
}
tprog.set_dim "i" = 3
%a = tprog.leaf "5|->3"
%y = tprog.call @scale(%a) at "site" : !tprog.tensor
// CHECK:      tprog.scheme @scale.scheme "scale" for @scale(%x) arity 1 results 1 {
// CHECK-NEXT:   "generalized r1, d1, r2, r3, r4"
// CHECK-NEXT:   "fixed (none)"
// CHECK-NEXT:   "arg 0 'v' [...r1] | [] -> [d1]"
// CHECK:        "dim_ineq 3 <= d1 ('pointwise' 's' of 'e', 'x' lhs 's'.output rhs 'e'.output)"
// CHECK:        "capture 'i' d1 ('einsum' 'e' of 'v' detail 'spec ''...|i=>...|i''')"
// CHECK:      %y = tprog.instantiate @scale.scheme(%a) at "site" : !tprog.tensor
// CLOSED:     %y = tprog.instantiate @scale.scheme(%a) at "site" : !tprog.tensor<"5|3">

// -----

// Callees are traced first, so the scheme of @outer instantiates @inner's
// and its values lines annotate @inner's body too; a function never called
// is traced at the end of the module.
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
// CHECK:      %i = tprog.instantiate @inner.scheme(%j) at "in-outer" : !tprog.tensor
// CHECK:      %q = tprog.leaf "6,1->1" : !tprog.tensor
// CHECK-NEXT: tprog.scheme @inner.scheme "inner" for @inner() arity 1 results 1 {
// CHECK:      tprog.scheme @outer.scheme "outer" for @outer() arity 2 results 2 {
// CHECK:      } values {
// CHECK-NEXT:   "@outer arg 0 = arg 0"
// CHECK-NEXT:   "@outer arg 1 = arg 1"
// CHECK-NEXT:   "@outer op 0 0 = internal 0"
// CHECK-NEXT:   "@inner arg 0 = arg 0"
// CHECK-NEXT:   "@inner op 0 0 = internal 1"
// CHECK-NEXT:   "@outer op 1 0 = internal 2"
// CHECK-NEXT: }
// CHECK-NEXT: %o, %o_1 = tprog.instantiate @outer.scheme(%p, %q) at "top" : !tprog.tensor, !tprog.tensor
// CHECK-NEXT: tprog.scheme @unused.scheme "unused" for @unused() arity 1 results 1 {
// CLOSED:     tprog.func @inner(%v: !tprog.tensor<"2->3">) -> !tprog.tensor<"3->2"> {
// CLOSED:     %o, %o_1 = tprog.instantiate @outer.scheme(%p, %q) at "top" : !tprog.tensor<"6,3->2">, !tprog.tensor<"3->2">

// -----

// A convolution, a concatenation, and axes written before a row variable:
// their pending equations (linear equations, a row prefix) are carried by
// the schemes and renamed at each application like every other fact.
%kernel = tprog.param "...->..."
tprog.func @conv(%img: !tprog.tensor) -> !tprog.tensor {
  %c = tprog.einsum "... | 2*oh=+kh, ic; kh, ic -> oc => ... | oh, oc" (%img, %kernel) capture ["kh", "oc"]
  %j = tprog.einsum "... | h, i; ... | h, j => ... | h, i^j" (%c, %c)
  tprog.return %j
}
tprog.func @rotate(%x: !tprog.tensor) -> !tprog.tensor {
  %r = tprog.einsum "... | a, ..r.. => ... | ..r.., a" (%x)
  tprog.return %r
}
tprog.set_dim "kh" = 3
tprog.set_dim "oc" = 4
%small = tprog.leaf "2|8,3"
%big = tprog.leaf "5|12,3"
%ys = tprog.call @conv(%small) at "small" : !tprog.tensor
%yb = tprog.call @conv(%big) at "big" : !tprog.tensor
%r2 = tprog.call @rotate(%ys) at "conv-out" : !tprog.tensor
%r3 = tprog.call @rotate(%small) at "image" : !tprog.tensor
// CHECK:        "linear stride [2 d2 'oh', -1 d1 '2*oh=+kh'] 0 '2*oh=+kh' ('einsum' 'c' of 'img', 'kernel' detail 'spec ''... | 2*oh=+kh, ic; kh, ic -> oc => ... | oh, oc''')"
// CHECK-NEXT:   "linear concat [1 d6 'i', 1 d6 'j', -1 d3 'i^j'] 0 'i^j' ('einsum' 'j' of 'c', 'c' detail 'spec ''... | h, i; ... | h, j => ... | h, i^j''')"
// CHECK:        "prefix [...r2] begins [d1] rest [...r3] ('einsum' 'r' of 'x' lhs 'spec ''... | a, ..r.. => ... | ..r.., a''' rhs 'spec ''... | a, ..r.. => ... | ..r.., a''' detail 'spec ''... | a, ..r.. => ... | ..r.., a''')"
// CLOSED:     %ys = tprog.instantiate @conv.scheme(%small) at "small" : !tprog.tensor<"2|4,8">
// CLOSED-NEXT: %yb = tprog.instantiate @conv.scheme(%big) at "big" : !tprog.tensor<"5|6,8">
// CLOSED:     %r2 = tprog.instantiate @rotate.scheme(%ys) at "conv-out" : !tprog.tensor<"2|8,4">
// CLOSED-NEXT: %r3 = tprog.instantiate @rotate.scheme(%small) at "image" : !tprog.tensor<"2|3,8">
// EXPLAIN:    builtin.module attributes {tprog.served = "4 call sites: 4 served by a scheme, 0 re-evaluated"} {
// EXPLAIN:    %ys = tprog.instantiate @conv.scheme(%small) at "small" {tprog.served = "by a scheme"} : !tprog.tensor
