// A forest the pass cannot schedule fails with a diagnostic naming it.
// RUN: xdsl-opt --verify-diagnostics -p schedule-batches %s | filecheck %s --check-prefix=UNCLASSIFIED
// RUN: xdsl-opt --verify-diagnostics -p 'classify-axes,schedule-batches{max-rounds=1}' %s | filecheck %s --check-prefix=BOUND
// RUN: xdsl-opt --verify-diagnostics -p 'classify-axes,schedule-batches{report=xml}' %s | filecheck %s --check-prefix=OPTION

batch.forest @demotion {
  batch.space Κ extent 5 elem 8
  batch.space a extent 3 elem 8
  batch.value @P [Κ_1, a_1] leaf "P"
  batch.value @U [Κ_1, a_1] leaf "U"
  batch.value @V [Κ_1] leaf "V"
  batch.value @W [Κ_1, a_1] = @P [Κ_1, a_1] * @U [Κ_1, a_1]
  batch.value @X [a_1] contracted [Κ_1] = @W [Κ_1, a_1] * @V [Κ_1]
  batch.value @R [Κ_1] contracted [a_1] = @X [a_1] * @W [Κ_1, a_1]
  batch.tree @term0 {
    batch.loop Κ_1 slot 0 {
      batch.use @R [Κ_1] {
        batch.use @X [a_1] {
          batch.use @W [Κ_1, a_1] {
            batch.use @P [Κ_1, a_1]
            batch.use @U [Κ_1, a_1]
          }
          batch.use @V [Κ_1]
        }
        batch.use @W [Κ_1, a_1] {
          batch.use @P [Κ_1, a_1]
          batch.use @U [Κ_1, a_1]
        }
      }
    }
  }
}

// UNCLASSIFIED: schedule-batches: batch.forest @demotion: value @R has no loop role for index space Κ (run classify-axes first)
// BOUND: schedule-batches: batch.forest @demotion: the demotion fixpoint was not reached within 1 rounds (max-rounds); decided so far: @W on loop instance 0
// OPTION: schedule-batches: report must be one of none, table, json, got 'xml'
