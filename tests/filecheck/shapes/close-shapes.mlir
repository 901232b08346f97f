// close-shapes writes the inferred shape onto every tensor value.
// RUN: xdsl-opt -p close-shapes --split-input-file %s | filecheck %s

// Worked example 1: c = a + b with a's output [3] and b open (a data leaf):
// c.output = [...r, 3] and b.output >= c.output; closing gives [3] for both.
%a = tprog.leaf "3"
%b = tprog.leaf
%c = tprog.pointwise %a, %b
// CHECK:      %a = tprog.leaf "3" : !tprog.tensor<"3">
// CHECK-NEXT: %b = tprog.leaf : !tprog.tensor<"3">
// CHECK-NEXT: %c = tprog.pointwise %a, %b : !tprog.tensor<"3">

// -----

// Worked example 2: lower bounds 3 and 5 on one axis: x broadcasts (1).
%x = tprog.leaf
%e = tprog.einsum "i=>i" (%x)
%three = tprog.leaf "3"
%five = tprog.leaf "5"
%p = tprog.pointwise %three, %x
%q = tprog.pointwise %five, %x
// CHECK:      %x = tprog.leaf : !tprog.tensor<"1">
// CHECK:      %p = tprog.pointwise %three, %x : !tprog.tensor<"3">
// CHECK-NEXT: %q = tprog.pointwise %five, %x : !tprog.tensor<"5">

// -----

// Worked example 3: w * x infers w's input row from x's output row.
%w = tprog.param "...->4"
%v = tprog.leaf "3"
%y = tprog.compose %w, %v
// CHECK:      %w = tprog.param "...->4" : !tprog.tensor<"3->4">
// CHECK-NEXT: %v = tprog.leaf "3" : !tprog.tensor<"3">
// CHECK-NEXT: %y = tprog.compose %w, %v : !tprog.tensor<"4">

// -----

// Broadcasting from the left, row by row.
%m = tprog.leaf "8|2,3"
%n = tprog.leaf "4,1,3"
%s = tprog.pointwise %m, %n
// CHECK: %s = tprog.pointwise %m, %n : !tprog.tensor<"8|4,2,3">

// -----

// Einsum with closed rows, with open rows, and a capture reference fixed by
// set_dim that determines a parameter's hidden dimension.
%l = tprog.leaf "2,3"
%r = tprog.leaf "3,4"
%mm = tprog.einsum "ij;jk=>ik" (%l, %r)
%data = tprog.leaf "8,2|5,7->9"
%heads = tprog.einsum "...|h,d->...=>...|h->..." (%data)
%in = tprog.leaf "3"
%wp = tprog.param
%proj = tprog.einsum "i;ij=>j" (%in, %wp) capture ["j"]
tprog.set_dim "j" = 16
// CHECK:      %mm = tprog.einsum "ij;jk=>ik" (%l, %r) : !tprog.tensor<"2,4">
// CHECK:      %heads = tprog.einsum "...|h,d->...=>...|h->..." (%data) : !tprog.tensor<"8,2|5->9">
// CHECK:      %wp = tprog.param : !tprog.tensor<"3,16">
// CHECK-NEXT: %proj = tprog.einsum "i;ij=>j" (%in, %wp) capture ["j"] : !tprog.tensor<"16">

// -----

// Transpose swaps input and output.
%u = tprog.leaf "2|3->4"
%ut = tprog.transpose %u
// CHECK: %ut = tprog.transpose %u : !tprog.tensor<"2|4->3">
