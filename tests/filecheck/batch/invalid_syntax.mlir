// RUN: xdsl-opt --split-input-file --parsing-diagnostics %s | filecheck %s
// Malformed labels in the custom syntax are reported at their exact position.

batch.forest {
  batch.value @t [a_1<i_1, i_2] leaf "t"
}

// CHECK: 5:31
// CHECK-NEXT: batch.value @t [a_1<i_1, i_2] leaf "t"
// CHECK-NEXT: ^
// CHECK-NEXT: malformed index label: expected ',' or '>' in a proto-index list, found ']'

// -----

batch.forest {
  batch.value @t [i_x] leaf "t"
}

// CHECK: malformed index label: expected an ordinal (digits) after '_', found 'x'

// -----

batch.forest {
  batch.value @e [i_1] contracted [a_1] = @g [i_1, a_1] @t [a_1]
}

// CHECK: Expected '*' between the two factors

// -----

batch.forest {
  batch.value @t [i_1 leaf "t"
}

// CHECK: expected ',' or ']' in an index list

// -----

batch.forest {
  batch.tree @t coeff 1/0 {
  }
}

// CHECK: coefficient denominator must be positive

// -----

batch.forest {
  batch.space i_1
}

// CHECK: invalid_syntax.mlir:{{[0-9]+}}:16
// CHECK: an index-space key has no ordinal or proto indices

// -----

batch.forest {
  batch.space a extent 9 composite {1 = 3, 1 = 4}
}

// CHECK: composite kind 1 given twice

// -----

// A proto listed twice: at the second.
batch.forest {
  batch.value @t [a_1<i_1, i_1>] leaf "t"
}

// CHECK: invalid_syntax.mlir:{{[0-9]+}}:28
// CHECK-NEXT: batch.value @t [a_1<i_1, i_1>] leaf "t"
// CHECK-NEXT: ^
// CHECK-NEXT: malformed index label: expected a proto index not listed before, found 'i'
