// Parse errors in tprog syntax point at the offending text.
// RUN: xdsl-opt --split-input-file --parsing-diagnostics %s | filecheck %s

%x = tprog.leaf : !tprog.tensor<"8|...">
// CHECK:      %x = tprog.leaf : !tprog.tensor<"8|...">
// CHECK-NEXT:                                 ^^^^^^^
// CHECK-NEXT: !tprog.tensor: a tensor type needs a concrete shape, '8|...' has '...'

// -----

%x = tprog.leaf : !tprog.tensor<"8|x">
// CHECK: !tprog.tensor: malformed shape spec '8|x' at position 2: expected a size (a positive integer, optionally @basis) or '...', got 'x'

// -----

%x = tprog.leaf "3"
%y = tprog.call @f(%x) "site" : !tprog.tensor
// CHECK: Expected 'at' followed by the application site's name

// -----

tprog.set_dim "h" = 0
// CHECK: tprog.set_dim: the size must be a positive integer
