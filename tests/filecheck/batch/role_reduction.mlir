// RUN: xdsl-opt -p 'classify-axes{explain=true}' %s | filecheck %s
// Reduction: the value carries no Κ index but contracts one at its own node;
// each iteration of the Κ loop contributes a partial sum.

batch.forest {
  batch.space i
  batch.space a
  batch.space Κ
  batch.value @g [i_1, Κ_1] leaf "g"
  batch.value @h [Κ_1, a_1] leaf "h"
  batch.value @w [i_1, a_1] contracted [Κ_1] = @g [i_1, Κ_1] * @h [Κ_1, a_1]
  batch.tree @density_fitted {
    batch.loop Κ_1 {
      batch.use @w [i_1, a_1] {
        batch.use @g [i_1, Κ_1]
        batch.use @h [Κ_1, a_1]
      }
    }
  }
}

// CHECK: batch.value @g [i_1, Κ_1] leaf "g" {roles = #batch.roles<Κ_1 = loop_local>
// CHECK: batch.value @w [i_1, a_1] contracted [Κ_1] = @g [i_1, Κ_1] * @h [Κ_1, a_1] {roles = #batch.roles<Κ_1 = reduction>, why = #batch.why<Κ_1 = "contracts Κ_1 at its own node">}
