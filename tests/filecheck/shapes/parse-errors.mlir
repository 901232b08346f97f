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

// -----

%a = tprog.leaf "3"
tprog.total_elems %a = 0
// CHECK:      tprog.total_elems %a = 0
// CHECK-NEXT:                        ^
// CHECK-NEXT:                        tprog.total_elems: the count must be a positive integer

// -----

tprog.scheme @s "s" () results 0 {
}
// CHECK: tprog.scheme @s "s" () results 0 {
// CHECK: Expected 'arity'

// -----

tprog.scheme @s "s" () arity 0 results 0 {
  generalized
}
// CHECK: string literal expected for a line of the shape scheme, or '}'
