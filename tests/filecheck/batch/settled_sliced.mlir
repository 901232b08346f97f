// RUN: xdsl-opt --split-input-file -p classify-axes %s | filecheck %s
// Settled point 3: the sliced rule. A value carrying only the composite
// a_1<i_1> under a loop over i_1 is sliced through its proto index: i_1 is in
// its sliced modes (it encloses every occurrence), so the proto counts as a
// carried i slot, bound by the loop: LoopLocal.

batch.forest @sliced {
  batch.value @f [a_1<i_1>] leaf "f"
  batch.value @t [a_1<i_1>, i_1] leaf "t"
  batch.value @r [i_1] contracted [a_1<i_1>] = @t [a_1<i_1>, i_1] * @f [a_1<i_1>]
  batch.tree @term {
    batch.loop i_1 {
      batch.use @r [i_1] {
        batch.use @t [a_1<i_1>, i_1]
        batch.use @f [a_1<i_1>]
      }
    }
  }
}

// CHECK-LABEL: batch.forest @sliced
// CHECK: batch.value @f [a_1<i_1>] leaf "f" {roles = #batch.roles<i_1 = loop_local>}

// -----

// Not sliced: one occurrence of @f is outside every loop over i, so the meet
// of the enclosing loops is empty; the proto is not a slot and @f neither
// carries nor contracts an i index: LoopInvariant.

batch.forest @unsliced {
  batch.value @f [a_1<i_1>] leaf "f"
  batch.value @t [a_1<i_1>, i_1] leaf "t"
  batch.value @r [i_1] contracted [a_1<i_1>] = @t [a_1<i_1>, i_1] * @f [a_1<i_1>]
  batch.value @s [a_1<i_1>, a_2<i_2>] = @f [a_1<i_1>] * @f [a_2<i_2>]
  batch.tree @term {
    batch.loop i_1 {
      batch.use @r [i_1] {
        batch.use @t [a_1<i_1>, i_1]
        batch.use @f [a_1<i_1>]
      }
    }
  }
  batch.tree @other {
    batch.use @s [a_1<i_1>, a_2<i_2>] {
      batch.use @f [a_1<i_1>]
      batch.use @f [a_2<i_2>]
    }
  }
}

// CHECK-LABEL: batch.forest @unsliced
// CHECK: batch.value @f [a_1<i_1>] leaf "f" {roles = #batch.roles<i_1 = loop_invariant>}
