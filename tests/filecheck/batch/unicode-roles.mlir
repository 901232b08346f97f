// classify-axes output with Unicode loop labels prints and parses back.
// RUN: xdsl-opt -p 'classify-axes{explain=true}' %s | xdsl-opt | filecheck %s

batch.forest @df {
  batch.value @W [Κ_1, a_1] leaf "W"
  batch.value @V [Κ_1] leaf "V"
  batch.value @X [a_1] contracted [Κ_1] = @W [Κ_1, a_1] * @V [Κ_1]
  batch.tree @t {
    batch.loop Κ_1 slot 0 {
      batch.use @X [a_1] {
        batch.use @W [Κ_1, a_1]
        batch.use @V [Κ_1]
      }
    }
  }
}

// CHECK: batch.value @W [Κ_1, a_1] leaf "W" {roles = {"Κ_1" = #batch.role<loop_local>}, why = {"Κ_1" = "every Κ slot is bound to an enclosing loop at every use-site"}}
// CHECK: batch.value @X [a_1] contracted [Κ_1] = @W [Κ_1, a_1] * @V [Κ_1] {roles = {"Κ_1" = #batch.role<reduction>}, why = {"Κ_1" = "contracts Κ_1 at its own node"}}
