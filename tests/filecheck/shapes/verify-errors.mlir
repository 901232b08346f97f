// Verifier diagnostics: malformed specs and arity mismatches, naming the op.
// RUN: xdsl-opt --split-input-file --verify-diagnostics %s | filecheck %s

%x = tprog.leaf "8|x->3"
// CHECK: Operation does not verify: tprog.leaf: malformed shape spec '8|x->3' at position 2: expected a size (a positive integer, optionally @basis) or '...', got 'x'

// -----

%w = tprog.param "3->4->5"
// CHECK: Operation does not verify: tprog.param: malformed shape spec '3->4->5' at position 4: more than one '->' (input separator)

// -----

%x = tprog.leaf "2,3"
%z = tprog.einsum "ij;jk" (%x)
// CHECK: Operation does not verify: tprog.einsum: malformed einsum spec 'ij;jk' at position 5: expected '=>' before the result

// -----

%x = tprog.leaf "2,3"
%z = tprog.einsum "ij;jk=>ik" (%x)
// CHECK: Operation does not verify: tprog.einsum: spec 'ij;jk=>ik' has 2 operand(s) but the operation has 1

// -----

%x = tprog.leaf "2,3"
%z = tprog.einsum "ij=>ji" (%x) capture ["k"]
// CHECK: Operation does not verify: tprog.einsum: capture label 'k' is neither a label nor a row variable of spec 'ij=>ji'

// -----

%x = tprog.leaf "3"
tprog.func @id(%in: !tprog.tensor) -> !tprog.tensor {
  tprog.return %in
}
%y = tprog.call @id(%x, %x) at "site" : !tprog.tensor
// CHECK: Operation does not verify: tprog.call @id at 'site': @id takes 1 argument(s) but 2 are given

// -----

%x = tprog.leaf "3"
tprog.func @id(%in: !tprog.tensor) -> !tprog.tensor {
  tprog.return %in
}
%y:2 = tprog.call @id(%x) at "site" : !tprog.tensor, !tprog.tensor
// CHECK: Operation does not verify: tprog.call @id at 'site': @id returns 1 result(s) but the call has 2

// -----

%x = tprog.leaf "3"
%y = tprog.call @missing(%x) at "site" : !tprog.tensor
// CHECK: Operation does not verify: tprog.call: no tprog.func named @missing

// -----

tprog.func @two(%in: !tprog.tensor) -> (!tprog.tensor, !tprog.tensor) {
  tprog.return %in
}
// CHECK: Operation does not verify: tprog.return: @two has 2 result(s) but 1 value(s) are returned

// -----

%p = tprog.pointwise
// CHECK: Operation does not verify: tprog.pointwise needs at least one operand
