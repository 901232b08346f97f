// RUN: xdsl-opt -p 'classify-axes{explain=true}' %s > %t.once
// RUN: xdsl-opt -p 'classify-axes{explain=true},classify-axes{explain=true}' %s > %t.twice
// RUN: diff %t.once %t.twice
// RUN: xdsl-opt -p 'classify-axes{explain=true}' < %t.once | diff %t.once -
// RUN: xdsl-opt -p classify-axes < %t.once | filecheck %s
// Running the pass again recomputes and replaces the roles (and drops stale
// explanations when explain is off).

batch.forest {
  batch.value @g [i_1, Κ_1] leaf "g"
  batch.value @h [Κ_1, a_1] leaf "h"
  batch.value @w [i_1, a_1] contracted [Κ_1] = @g [i_1, Κ_1] * @h [Κ_1, a_1]
  batch.tree @t {
    batch.loop Κ_1 {
      batch.use @w [i_1, a_1] {
        batch.use @g [i_1, Κ_1]
        batch.use @h [Κ_1, a_1]
      }
    }
  }
}

// CHECK:     batch.value @w [i_1, a_1] contracted [Κ_1] = @g [i_1, Κ_1] * @h [Κ_1, a_1] {roles = #batch.roles<Κ_1 = reduction>}
// CHECK-NOT: why
