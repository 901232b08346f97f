// Every tprog op and type prints in its custom syntax and parses back,
// in both the custom and the generic format.
// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s

%x = tprog.leaf "8|->3"
%d = tprog.leaf : !tprog.tensor
%w = tprog.param "...->16" : !tprog.tensor
%p = tprog.param
%s = tprog.leaf : !tprog.tensor<"8|3,5->4">
%e = tprog.leaf "" : !tprog.tensor<"">
%b = tprog.leaf "2@rgb" : !tprog.tensor<"2@rgb">
%pw = tprog.pointwise %x, %d, %w {fn = "add"}
%c = tprog.compose %w, %x : !tprog.tensor
%t = tprog.transpose %c
%z = tprog.einsum "...|i;i->j=>...|j" (%x, %p) capture ["j"]
tprog.set_dim "j" = 4
tprog.func @pair(%a: !tprog.tensor, %a2: !tprog.tensor) -> (!tprog.tensor, !tprog.tensor) {
  %sum = tprog.pointwise %a, %a2
  tprog.return %sum, %a
}
%r:2 = tprog.call @pair(%x, %d) at "site" : !tprog.tensor, !tprog.tensor
tprog.func @nothing() -> () {
  tprog.return
}
tprog.call @nothing() at "void"

// CHECK:      %x = tprog.leaf "8|->3" : !tprog.tensor
// CHECK-NEXT: %d = tprog.leaf : !tprog.tensor
// CHECK-NEXT: %w = tprog.param "...->16" : !tprog.tensor
// CHECK-NEXT: %p = tprog.param : !tprog.tensor
// CHECK-NEXT: %s = tprog.leaf : !tprog.tensor<"8|3,5->4">
// CHECK-NEXT: %e = tprog.leaf "" : !tprog.tensor<"">
// CHECK-NEXT: %b = tprog.leaf "2@rgb" : !tprog.tensor<"2@rgb">
// CHECK-NEXT: %pw = tprog.pointwise %x, %d, %w {fn = "add"} : !tprog.tensor
// CHECK-NEXT: %c = tprog.compose %w, %x : !tprog.tensor
// CHECK-NEXT: %t = tprog.transpose %c : !tprog.tensor
// CHECK-NEXT: %z = tprog.einsum "...|i;i->j=>...|j" (%x, %p) capture ["j"] : !tprog.tensor
// CHECK-NEXT: tprog.set_dim "j" = 4
// CHECK-NEXT: tprog.func @pair(%a: !tprog.tensor, %a2: !tprog.tensor) -> (!tprog.tensor, !tprog.tensor) {
// CHECK-NEXT:   %sum = tprog.pointwise %a, %a2 : !tprog.tensor
// CHECK-NEXT:   tprog.return %sum, %a
// CHECK-NEXT: }
// CHECK-NEXT: %r, %r_1 = tprog.call @pair(%x, %d) at "site" : !tprog.tensor, !tprog.tensor
// CHECK-NEXT: tprog.func @nothing() {
// CHECK-NEXT:   tprog.return
// CHECK-NEXT: }
// CHECK-NEXT: tprog.call @nothing() at "void"
