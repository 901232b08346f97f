// RUN: xdsl-opt --split-input-file --verify-diagnostics %s | filecheck %s
// The verifier names the op and the offending index or symbol; no traceback.

batch.forest {
  batch.value @A [i_1] leaf "A"
  batch.tree @t {
    batch.use @B [i_1]
  }
}

// CHECK: batch.use @B: use of unknown value @B
// CHECK-NOT: Traceback

// -----

batch.forest {
  batch.value @A [i_1] leaf "A"
  batch.value @A [i_2] leaf "A2"
}

// CHECK: batch.value @A: duplicate value name @A

// -----

"builtin.module"() ({
  "batch.forest"() ({
    "batch.value"() <{sym_name = "A", result = [#batch.index<"i_1">], contracted = [], factors = [], tensor = #batch.text<"A">}> : () -> ()
    "batch.tree"() <{sym_name = "t", coeff_num = 1 : i64, coeff_den = 1 : i64}> ({
      "batch.use"() <{value = @A, carried = [#batch.index<"i__1">]}> ({}) : () -> ()
    }) : () -> ()
  }) : () -> ()
}) : () -> ()

// CHECK: batch.use: malformed index in the carried indices: malformed index label 'i__1' at position 2: expected an ordinal (digits) after '_', found '_'

// -----

batch.forest {
  batch.space i
  batch.value @A [i_1, x_1] leaf "A"
  batch.tree @t {
    batch.loop x_1 {
      batch.use @A [i_1, x_1]
    }
  }
}

// CHECK: batch.loop x_1: loop over undeclared index space 'x' (declare it with batch.space)

// -----

batch.forest {
  batch.value @A [i_1, a_1] leaf "A"
  batch.tree @t {
    batch.use @A [i_1]
  }
}

// CHECK: batch.use @A: carries 1 indices, but @A has 2 ([i_1, a_1])

// -----

batch.forest {
  batch.value @A [i_1] leaf "A"
  batch.value @B [i_1] leaf "B"
  batch.value @P [i_1, i_2] = @A [i_1] * @A [i_2]
  batch.tree @t {
    batch.use @P [i_1, i_2] {
      batch.use @A [i_1]
      batch.use @B [i_2]
    }
  }
}

// CHECK: batch.use @P: factor use-site names @B, but @P is built from @A

// -----

batch.forest {
  batch.value @A [i_1] leaf "A"
  batch.value @P [i_1, i_2] = @A [i_1] * @A [i_2]
  batch.tree @t {
    batch.use @P [i_3, i_4] {
      batch.use @A [i_3]
    }
  }
}

// CHECK: batch.use @P: expected 2 factor use-sites in its region, found 1

// -----

batch.forest {
  batch.value @g [i_1, a_1] leaf "g"
  batch.value @t [a_1, i_1] leaf "t"
  batch.value @e [] contracted [i_1, a_1] = @g [i_1, a_1] * @t [a_1, i_1]
  batch.tree @t {
    batch.use @e [] {
      batch.use @g [i_1, a_1]
      batch.use @t [a_2, i_1]
    }
  }
}

// CHECK: batch.use @e: the value's index a_1 is labelled both a_1 and a_2 here

// -----

batch.forest {
  batch.value @g [i_1, a_1] leaf "g"
  batch.tree @t {
    batch.use @g [a_1, i_1]
  }
}

// CHECK: batch.use @g: index a_1 stands for i_1 of the value's frame, which is of another index space

// -----

batch.forest {
  batch.value @g [i_1, a_1] leaf "g"
  batch.value @t [a_1, i_1] leaf "t"
  batch.value @e [i_1] contracted [a_1, i_1] = @g [i_1, a_1] * @t [a_1, i_1]
}

// CHECK: batch.value @e: i_1 is both a result and contracted

// -----

batch.forest {
  batch.value @g [i_1, a_1] leaf "g"
  batch.value @t [a_1, i_1] leaf "t"
  batch.value @e [i_1] = @g [i_1, a_1] * @t [a_1, i_1]
}

// CHECK: batch.value @e: contracted indices must be those on both factors and not modes of the result: expected [a_1], got []

// -----

batch.forest {
  batch.value @g [i_1, a_1] leaf "g"
  batch.value @t [a_2] leaf "t"
  batch.value @e [i_1] = @g [i_1, a_1] * @t [a_2]
}

// CHECK: batch.value @e: index {{a_1|a_2}} is on one factor only and not in the result

// -----

batch.forest {
  batch.value @g [i_1] leaf "g"
  batch.value @e [i_1, i_2] = @g [i_1] * @h [i_2]
}

// CHECK: batch.value @e: factor names unknown value @h

// -----

batch.forest {
  batch.value @g [i_1] leaf "g"
  batch.value @x [i_1, i_2] = @g [i_1] * @y [i_2]
  batch.value @y [i_2] contracted [i_1] = @x [i_1, i_2] * @g [i_1]
}

// CHECK: depends on itself

// -----

batch.forest {
  batch.space i extent 4
  batch.space i extent 5
}

// CHECK: batch.space i: duplicate index space 'i'

// -----

batch.forest {
  batch.space i extent 0
}

// CHECK: batch.space i: extent must be positive, got 0

// -----

batch.forest {
  batch.space a extent 9 composite {1 = 0}
}

// CHECK: batch.space a: extent of composite kind 1 must be a positive integer

// -----

batch.forest {
  batch.space a extent 9 composite {0 = 3}
}

// CHECK: batch.space a: composite kind '0' must be a positive number of protos

// -----

"batch.forest"() ({
  "batch.space"() <{key = #batch.index<"a">, composite = {"x" = 3 : i64}}> : () -> ()
}) : () -> ()

// CHECK: batch.space a: composite kind 'x' must be a positive number of protos

// -----

batch.forest {
  batch.value @A [i_1] leaf "A"
  batch.loop i_1 {
    batch.use @A [i_1]
  }
}

// CHECK: 'batch.loop' expects parent op to be one of 'batch.tree', 'batch.loop', 'batch.use'

// -----

batch.forest {
  batch.value @A [i_1, i_1] leaf "A"
}

// CHECK: batch.value @A: index i_1 repeated in the result

// -----

// A proto of a result composite stays in the result: it is not contracted.
batch.forest {
  batch.value @x [a_1<i_1,i_2>, i_1, i_2] leaf "x"
  batch.value @y [i_1, i_2] leaf "y"
  batch.value @e [a_1<i_1,i_2>] contracted [i_1, i_2] = @x [a_1<i_1,i_2>, i_1, i_2] * @y [i_1, i_2]
}

// CHECK: batch.value @e: contracted indices must be those on both factors and not modes of the result: expected [], got [i_1, i_2]

// -----

// A pairing of symmetric protos that nothing forces must be given when it
// matters: i_1, i_2 are shared by two composites (alone in one, they are
// interchangeable: interchangeable-protos.mlir).
batch.forest {
  batch.value @c [a_1<i_1,i_2>, b_1<i_1,i_2>] leaf "c"
  batch.tree @t {
    batch.use @c [a_3<i_4,i_5>, b_3<i_4,i_5>]
  }
}

// CHECK: batch.use @c: the pairing of the protos i_1, i_2 of a_1<i_1,i_2> with those of a_3<i_4,i_5> is ambiguous; give it explicitly (protos [...])

// -----

// A given pairing must be one: i_1 is no proto of the composite's image.
batch.forest {
  batch.value @c [a_1<i_1,i_2>] leaf "c"
  batch.tree @t {
    batch.use @c [a_3<i_4,i_5>] protos [i_1 = i_6]
  }
}

// CHECK: batch.use @c: proto i_1 of a_1<i_1,i_2> maps to i_6, which is not a proto of a_3<i_4,i_5>
