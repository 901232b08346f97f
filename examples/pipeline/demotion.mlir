// A forest that needs a demotion round (density-fitting shape, batched over Κ).
//   W(Κ,a) = P(Κ,a) U(Κ,a)        LoopLocal on Κ: one block per iteration
//   X(a)   = sum_Κ W(Κ,a) V(Κ)    Reduction on Κ: accumulated over the loop
//   R(Κ)   = sum_a X(a) W(Κ,a)    reads X, so it runs after the loop closes
// R needs a second pass of the Κ loop, but W is built in the first: W is read
// by two passes and is demoted to LoopCarried (scattered into a full buffer),
// which moves X to a pass of its own. The fixpoint needs two rounds.
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
