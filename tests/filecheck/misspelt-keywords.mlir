// RUN: xdsl-opt --split-input-file --parsing-diagnostics %s | filecheck %s
// A misspelt keyword of a custom op syntax is reported where it stands, with
// the keywords the op accepts at that position (not as an unregistered op).

batch.forest {
  batch.value @A [i_1] leaff "A"
}

// CHECK:      batch.value @A [i_1] leaff "A"
// CHECK-NEXT:                      ^^^^^
// CHECK-NEXT: batch.value: unexpected 'leaff', expected 'contracted', 'leaf', '=', an attribute dictionary or the end of the op (did you mean 'leaf'?)

// -----

batch.forest {
  batch.value @A [i_1] contracted [a_1] lef "A"
}

// CHECK: batch.value: unexpected 'lef', expected 'leaf', '=', an attribute dictionary or the end of the op (did you mean 'leaf'?)

// -----

batch.forest {
  batch.value @A [i_1, i_2] leaf "A" symetry "N-N"
}

// CHECK: batch.value: unexpected 'symetry', expected 'symmetry', an attribute dictionary or the end of the op (did you mean 'symmetry'?)

// -----

batch.forest {
  batch.value @A [i_1] leaf "A"
  batch.value @B [i_1] leaf "B"
  batch.value @C [] contracted [i_1] = @A [i_1] * @B [i_1] leaf
}

// CHECK: batch.value: unexpected 'leaf', expected an attribute dictionary or the end of the op

// -----

batch.forest {
  batch.space i extnt 4
}

// CHECK: batch.space: unexpected 'extnt', expected 'extent', 'elem', 'composite', an attribute dictionary or the end of the op (did you mean 'extent'?)

// -----

batch.forest {
  batch.space i extent 4 elm 8
}

// CHECK: batch.space: unexpected 'elm', expected 'elem', 'composite', an attribute dictionary or the end of the op (did you mean 'elem'?)

// -----

// Clauses keep their order: after `elem`, `extent` is no longer expected.
batch.forest {
  batch.space i elem 8 extent 4
}

// CHECK: batch.space: unexpected 'extent', expected 'composite', an attribute dictionary or the end of the op

// -----

batch.forest {
  batch.tree @t coef 2 {
  }
}

// CHECK: batch.tree: unexpected 'coef', expected 'coeff', 'operators', a region, an attribute dictionary or the end of the op (did you mean 'coeff'?)

// -----

batch.forest {
  batch.space i
  batch.tree @t {
    batch.loop i_1 slt 0 {
    }
  }
}

// CHECK: batch.loop: unexpected 'slt', expected 'slot', a region, an attribute dictionary or the end of the op (did you mean 'slot'?)

// -----

batch.forest {
  sched.schedule rounds 1 {
    sched.build @X slice [i_1:0] summ [i_1:0] bytes 8
  }
}

// CHECK: sched.build: unexpected 'summ', expected 'sum', 'demoted' or 'bytes' (did you mean 'sum'?)

// -----

batch.forest {
  sched.schedule rounds 1 {
    sched.buffer @X zeros bytes 8
  }
}

// CHECK: sched.buffer: unexpected 'zeros', expected 'slice', 'zero' or 'bytes' (did you mean 'zero'?)

// -----

%x = tprog.leaf "3|4"
%y = tprog.einsum "...|i=>...|i" (%x) captur ["i"] : !tprog.tensor
// CHECK: tprog.einsum: unexpected 'captur', expected 'capture', an attribute dictionary or ':' and the result type (did you mean 'capture'?)

// -----

%x = tprog.leaf "3|4"
tprog.total_elems %x = 12 byte
// CHECK: tprog.total_elems: unexpected 'byte', expected 'bytes', an attribute dictionary or the end of the op (did you mean 'bytes'?)

// -----

tprog.scheme @s "s" fr @f() arity 1 results 1 {
}
// CHECK: tprog.scheme: unexpected 'fr', expected 'for' or '(' and the anchors (did you mean 'for'?)

// -----

// A following op in short form is not taken for a keyword: `value` is
// batch.value inside the forest, so this parses.
batch.forest {
  batch.value @A [i_1] value @B [i_1]
}
// CHECK:      batch.value @A [i_1]
// CHECK-NEXT: batch.value @B [i_1]
