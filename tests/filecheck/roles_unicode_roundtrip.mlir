// classify-axes keys `roles`/`why` by loop label; a Unicode label (Κ_1) must
// print readably and read back (roles_escaped_keys.mlir: xDSL's escaped form).
// RUN: xdsl-opt -p 'classify-axes{explain=true}' %s | xdsl-opt | filecheck %s

batch.forest @df {
  batch.space Κ
  batch.value @g [μ̃_1, Κ_1] leaf "g"
  batch.value @h [μ̃_2, Κ_1] leaf "h"
  batch.value @v [μ̃_1, μ̃_2] contracted [Κ_1] = @g [μ̃_1, Κ_1] * @h [μ̃_2, Κ_1]
  batch.tree @t {
    batch.loop Κ_1 {
      batch.use @v [μ̃_1, μ̃_2] {
        batch.use @g [μ̃_1, Κ_1]
        batch.use @h [μ̃_2, Κ_1]
      }
    }
  }
}
// CHECK:      batch.value @g [μ̃_1, Κ_1] leaf "g" {roles = {"Κ_1" = #batch.role<loop_local>}, why = {"Κ_1" = "every Κ slot is bound to an enclosing loop at every use-site"}}
// CHECK:      batch.value @v [μ̃_1, μ̃_2] contracted [Κ_1] = @g [μ̃_1, Κ_1] * @h [μ̃_2, Κ_1] {roles = {"Κ_1" = #batch.role<reduction>}, why = {"Κ_1" = "contracts Κ_1 at its own node"}}
