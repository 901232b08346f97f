// A capture of a row variable (OCANNL's row capture): `capture ["i"]` on
// the spec's `..i..` binds the reference to the row's element count. The
// function binds it before its totals, and set_dim gave it 3: the binding's
// count is the first total closing reads, so %w0's batch row gets 3
// elements. Re-evaluating every call, sharing one trace, and
// generalize-shapes (whose scheme binds the capture input `before 0`, before
// its first pending fact) type the module alike.
// RUN: xdsl-opt -p 'close-shapes{calls=re-evaluate}' %s | filecheck %s
// RUN: xdsl-opt -p 'close-shapes{explain=true}' %s | filecheck %s --check-prefixes=CHECK,SHARED
// RUN: xdsl-opt -p generalize-shapes,close-shapes %s | filecheck %s --check-prefix=GENERALIZED
// RUN: xdsl-opt -p generalize-shapes %s | filecheck %s --check-prefix=SCHEME

%w0 = tprog.leaf "...,1|...->..."
tprog.set_dim "i" = 3
tprog.func @f(%fa0: !tprog.tensor) -> !tprog.tensor {
  %fv0 = tprog.einsum "..i..|j=>..i..|j" (%w0) capture ["i"] : !tprog.tensor
  tprog.total_elems %w0 = 3
  tprog.total_elems %fa0 = 6
  %fv1 = tprog.pointwise %fa0
  %fv2 = tprog.einsum "ij=>ji" (%fv1) capture ["i"] : !tprog.tensor
  tprog.return %fv2
}
%x0 = tprog.leaf "|->..."
%y0 = tprog.call @f(%x0) at "c0" : !tprog.tensor
%x1 = tprog.leaf "|->..."
%y1 = tprog.call @f(%x1) at "c1" : !tprog.tensor

// SHARED:       builtin.module attributes {tprog.served = "2 call sites: 2 served by a scheme, 0 re-evaluated"}
// CHECK:        %w0 = tprog.leaf "...,1|...->..." : !tprog.tensor<"3,1|1">
// CHECK:        tprog.func @f(%fa0: !tprog.tensor<"3,2">) -> !tprog.tensor<"2,3">
// CHECK-NEXT:     %fv0 = tprog.einsum "..i..|j=>..i..|j" (%w0) capture ["i"] : !tprog.tensor<"3,1|1">
// CHECK:          %fv2 = tprog.einsum "ij=>ji" (%fv1) capture ["i"] : !tprog.tensor<"2,3">
// CHECK:        %y0 = tprog.call @f(%x0) at "c0"
// CHECK-SAME:     : !tprog.tensor<"2,3">
// CHECK:        %y1 = tprog.call @f(%x1) at "c1"
// CHECK-SAME:     : !tprog.tensor<"2,3">

// GENERALIZED:  %w0 = tprog.leaf "...,1|...->..." : !tprog.tensor<"3,1|1">
// GENERALIZED:  %y0 = tprog.instantiate @f.scheme(%x0) at "c0" : !tprog.tensor<"2,3">
// GENERALIZED:  %y1 = tprog.instantiate @f.scheme(%x1) at "c1" : !tprog.tensor<"2,3">

// SCHEME:       "capture 'i' [...r2, 1] before 0 ('einsum' 'fv0' of 'w0' detail 'spec ''..i..|j=>..i..|j''')"
