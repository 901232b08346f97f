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
tprog.total_elems %d = 24
tprog.total_elems %p = 48 bytes {why = "a file"}
tprog.close
tprog.scheme @pair.scheme "pair" for @pair(%w) arity 2 results 2 {
  "generalized r1, r2, r3"
  "fixed (none)"
  "arg 0 'a' [...r1] | [] -> [3, 1@rgb]"
  "arg 1 'a2' [] | [...r2] -> [...r3]"
  "result 0 'sum' [...r1] | [] -> [3, 1]"
  "result 1 'a' [...r1] | [] -> [3, 1]"
  "anchor 0 'w' [] | [] -> [16]"
  "ineq [...r1] <= [...r2] ('pointwise' 'sum' of 'a', 'a2' lhs 'sum'.batch rhs 'a2'.batch detail 'it''s quoted' scheme 'inner' at 'site > deep')"
} values {
  "@pair arg 1 = arg 1"
  "@pair op 0 0 = internal 0"
}
tprog.scheme @bare.scheme "bare" () arity 0 results 0 {
}
%i:2 = tprog.instantiate @pair.scheme(%x, %d) at "applied" : !tprog.tensor, !tprog.tensor

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
// CHECK-NEXT: tprog.total_elems %d = 24
// CHECK-NEXT: tprog.total_elems %p = 48 bytes {why = "a file"}
// CHECK-NEXT: tprog.close
// CHECK-NEXT: tprog.scheme @pair.scheme "pair" for @pair(%w) arity 2 results 2 {
// CHECK-NEXT:   "generalized r1, r2, r3"
// CHECK-NEXT:   "fixed (none)"
// CHECK-NEXT:   "arg 0 'a' [...r1] | [] -> [3, 1@rgb]"
// CHECK-NEXT:   "arg 1 'a2' [] | [...r2] -> [...r3]"
// CHECK-NEXT:   "result 0 'sum' [...r1] | [] -> [3, 1]"
// CHECK-NEXT:   "result 1 'a' [...r1] | [] -> [3, 1]"
// CHECK-NEXT:   "anchor 0 'w' [] | [] -> [16]"
// CHECK-NEXT:   "ineq [...r1] <= [...r2] ('pointwise' 'sum' of 'a', 'a2' lhs 'sum'.batch rhs 'a2'.batch detail 'it''s quoted' scheme 'inner' at 'site > deep')"
// CHECK-NEXT: } values {
// CHECK-NEXT:   "@pair arg 1 = arg 1"
// CHECK-NEXT:   "@pair op 0 0 = internal 0"
// CHECK-NEXT: }
// CHECK-NEXT: tprog.scheme @bare.scheme "bare" () arity 0 results 0 {
// CHECK-NEXT: }
// CHECK-NEXT: %i, %i_1 = tprog.instantiate @pair.scheme(%x, %d) at "applied" : !tprog.tensor, !tprog.tensor
