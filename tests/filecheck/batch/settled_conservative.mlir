// RUN: xdsl-opt -p 'classify-axes{explain=true}' %s | filecheck %s
// Settled point 2: an occurrence under a loop of i that carries no i slot is
// LoopCarried (the conservative answer). @x carries only the composite
// a_1<i_1>; i_1 is sliced at all its occurrences (both sit under the loop
// over i_1), so its proto is an i slot. The second occurrence carries
// a_2<i_2>, whose proto is not sliced: no i slot there.

batch.forest {
  batch.value @x [a_1<i_1>] leaf "x"
  batch.value @P [a_1<i_1>, a_2<i_2>] = @x [a_1<i_1>] * @x [a_2<i_2>]
  batch.tree @t {
    batch.loop i_1 {
      batch.use @P [a_1<i_1>, a_2<i_2>] {
        batch.use @x [a_1<i_1>]
        batch.use @x [a_2<i_2>]
      }
    }
  }
}

// CHECK: batch.value @x [a_1<i_1>] leaf "x" {roles = #batch.roles<i_1 = loop_carried>, why = #batch.why<i_1 = "use-site 1 of @x in tree @t [a_2<i_2>] is under a loop of i but carries no i index (inconsistent relabelling; conservative answer)">}
