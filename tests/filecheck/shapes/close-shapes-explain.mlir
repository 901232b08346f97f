// close-shapes{explain=true} writes how each call site was served: by a shape
// scheme (the callee traced once, its scheme applied here), or re-evaluated
// and why; and the counts on the module. Nested calls are served bottom-up:
// @block's trace applies @linear's scheme, so @block's scheme carries it.
// RUN: xdsl-opt -p 'close-shapes{explain=true}' %s | filecheck %s
// The report changes nothing else: the types are re-evaluation's.
// RUN: xdsl-opt -p 'close-shapes{calls=re-evaluate}' %s > %t.re
// RUN: xdsl-opt -p close-shapes %s | diff %t.re -
// RUN: xdsl-opt -p 'close-shapes{calls=re-evaluate explain=true}' %s | filecheck %s --check-prefix=RE

%w = tprog.param "...->8"
tprog.func @linear(%x: !tprog.tensor) -> !tprog.tensor {
  %h = tprog.compose %w, %x
  tprog.return %h
}
tprog.func @block(%x: !tprog.tensor) -> !tprog.tensor {
  %a = tprog.call @linear(%x) at "first" : !tprog.tensor
  %r = tprog.pointwise %a {fn = "relu"}
  %b = tprog.call @linear(%r) at "second" : !tprog.tensor
  tprog.return %b
}
tprog.func @load(%x: !tprog.tensor) -> !tprog.tensor {
  tprog.total_elems %x = 96 bytes
  tprog.return %x
}
tprog.func @wrap(%x: !tprog.tensor) -> !tprog.tensor {
  %l = tprog.call @load(%x) at "inside" : !tprog.tensor
  tprog.return %l
}
tprog.func @once(%x: !tprog.tensor) -> !tprog.tensor {
  %t = tprog.transpose %x
  tprog.return %t
}
tprog.func @unused(%x: !tprog.tensor) -> !tprog.tensor {
  %u = tprog.call @once(%x) at "never" : !tprog.tensor
  tprog.return %u
}
%p = tprog.leaf "2|->8"
%q = tprog.leaf "5|->8"
%yp = tprog.call @block(%p) at "p" : !tprog.tensor
%yq = tprog.call @block(%q) at "q" : !tprog.tensor
%d = tprog.leaf "3,8"
%l1 = tprog.call @wrap(%d) at "l1" : !tprog.tensor
%l2 = tprog.call @wrap(%d) at "l2" : !tprog.tensor
%o = tprog.call @once(%p) at "o" : !tprog.tensor

// CHECK:      builtin.module attributes {tprog.served = "9 call sites: 4 served by a scheme, 4 re-evaluated, 1 never evaluated (in functions never applied)"} {
// CHECK:        %a = tprog.call @linear(%x_1) at "first" {tprog.served = "by a scheme"} : !tprog.tensor
// CHECK:        %b = tprog.call @linear(%r) at "second" {tprog.served = "by a scheme"} : !tprog.tensor
// CHECK:        %l = tprog.call @load(%x_3) at "inside" {tprog.served = "re-evaluated: tracing the shape scheme load: total_elems 'x' (<96 bytes at the tensor's precision> elements) has a precision-dependent element count <96 bytes at the tensor's precision>; a scheme cannot carry it (the count is only known at closing)"} : !tprog.tensor<"3,8">
// CHECK:        %u = tprog.call @once(%x_5) at "never" {tprog.served = "never evaluated (its function is never applied)"} : !tprog.tensor
// CHECK:        %yp = tprog.call @block(%p) at "p" {tprog.served = "by a scheme"} : !tprog.tensor<"2|8">
// CHECK-NEXT:   %yq = tprog.call @block(%q) at "q" {tprog.served = "by a scheme"} : !tprog.tensor<"5|8">
// CHECK:        %l1 = tprog.call @wrap(%d) at "l1" {tprog.served = "re-evaluated: it calls @load, which is re-evaluated: tracing the shape scheme load: {{.*}}"} : !tprog.tensor<"3,8">
// CHECK-NEXT:   %l2 = tprog.call @wrap(%d) at "l2" {tprog.served = "re-evaluated: it calls @load, which is re-evaluated: tracing the shape scheme load: {{.*}}"} : !tprog.tensor<"3,8">
// CHECK-NEXT:   %o = tprog.call @once(%p) at "o" {tprog.served = "re-evaluated: @once is called once (one run costs less than a trace and an application)"} : !tprog.tensor<"2|8->">

// RE:         builtin.module attributes {tprog.served = "9 call sites: 0 served by a scheme, 8 re-evaluated, 1 never evaluated (in functions never applied)"} {
// RE:           %yp = tprog.call @block(%p) at "p" {tprog.served = "re-evaluated: calls=re-evaluate"} : !tprog.tensor<"2|8">
