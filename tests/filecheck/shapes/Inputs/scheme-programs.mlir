// Programs that close-shapes infers by re-evaluating function bodies and
// generalize-shapes,close-shapes infers through shape schemes; the typed
// outputs must be identical (generalize-baseline.test compares them).

// Shared parameters, a capture input fixed at module level, a closing between
// applications, a precision-dependent total outside any function.
%w = tprog.param "...->8"
tprog.func @embed(%tok: !tprog.tensor) -> !tprog.tensor {
  %e = tprog.compose %w, %tok
  %h = tprog.einsum "...|h=>...|h" (%e) capture ["h"]
  tprog.return %h
}
tprog.set_dim "h" = 8
%t1 = tprog.leaf "4|->5"
%y1 = tprog.call @embed(%t1) at "first" : !tprog.tensor
tprog.close
%t2 = tprog.leaf "9|->5"
%y2 = tprog.call @embed(%t2) at "second" : !tprog.tensor
%d = tprog.leaf "2|->..."
tprog.total_elems %d = 48 bytes

// -----

// Two results, chained applications, a parameter made inside the body (one
// per application), open data arguments inferred from the body.
tprog.func @pair(%a: !tprog.tensor, %b: !tprog.tensor) -> (!tprog.tensor, !tprog.tensor) {
  %bias = tprog.param "...->3"
  %s = tprog.pointwise %a, %b, %bias
  %t = tprog.transpose %s
  %m = tprog.einsum "...|...->ij=>...|...->ji" (%s)
  tprog.return %t, %m
}
%x = tprog.leaf "2|->5,3"
%open = tprog.leaf
%p:2 = tprog.call @pair(%x, %open) at "first" : !tprog.tensor, !tprog.tensor
%q:2 = tprog.call @pair(%p#0, %x) at "chained" : !tprog.tensor, !tprog.tensor

// -----

// An inner function applied at module level and inside another function with
// different shapes: the inner body's values keep the unknown type; the outer
// body agrees across its applications and is typed.
tprog.func @inner(%v: !tprog.tensor) -> !tprog.tensor {
  %r = tprog.pointwise %v {fn = "relu"}
  tprog.return %r
}
tprog.func @outer(%u: !tprog.tensor) -> !tprog.tensor {
  %i = tprog.call @inner(%u) at "in-outer" : !tprog.tensor
  %o = tprog.transpose %i
  tprog.return %o
}
%a = tprog.leaf "3->4"
%b = tprog.leaf "6"
%ya = tprog.call @outer(%a) at "top" : !tprog.tensor
%yb = tprog.call @inner(%b) at "direct" : !tprog.tensor
%yc = tprog.call @outer(%a) at "again" : !tprog.tensor

// -----

// Capture input bound by an earlier application and left open, then related
// by a later one; a fixed-index einsum; an integer total in the body.
tprog.func @head(%x: !tprog.tensor) -> !tprog.tensor {
  %h = tprog.einsum "...|k,0=>...|k" (%x) capture ["k"]
  tprog.total_elems %h = 6
  tprog.return %h
}
%open = tprog.leaf "...|->...,2"
%y1 = tprog.call @head(%open) at "open" : !tprog.tensor
%y2 = tprog.call @head(%open) at "again" : !tprog.tensor
