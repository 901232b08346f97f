// A shared value read from two sibling nests, forcing a split.
// X(i,a) = sum_b P(i,b) Q(b,a) is built per block of i in the nest of
// @first (slot 0) and read there by R1, and by the sibling nest of @second
// (slot 1). Instance-aware roles make X LoopCarried: it is scattered into a
// full buffer, the loop of slot 0 is split so that R1 runs in a second pass,
// and the nest of slot 1 runs after the first pass has closed.
batch.forest @sibling_nests {
  batch.space i extent 4 elem 8
  batch.space a extent 3 elem 8
  batch.value @P [i_1, a_1] leaf "P"
  batch.value @Q [a_1, a_2] leaf "Q"
  batch.value @Y [a_1] leaf "Y"
  batch.value @Z [a_1, i_1] leaf "Z"
  batch.value @X [i_1, a_1] contracted [a_2] = @P [i_1, a_2] * @Q [a_2, a_1]
  batch.value @R1 [i_1] contracted [a_1] = @X [i_1, a_1] * @Y [a_1]
  batch.value @R2 [i_1, i_2] contracted [a_1] = @X [i_1, a_1] * @Z [a_1, i_2]
  batch.tree @first {
    batch.loop i_1 slot 0 {
      batch.use @R1 [i_1] {
        batch.use @X [i_1, a_1] {
          batch.use @P [i_1, a_2]
          batch.use @Q [a_2, a_1]
        }
        batch.use @Y [a_1]
      }
    }
  }
  batch.tree @second coeff -1/2 {
    batch.loop i_1 slot 1 {
      batch.use @R2 [i_1, i_2] {
        batch.use @X [i_1, a_1] {
          batch.use @P [i_1, a_2]
          batch.use @Q [a_2, a_1]
        }
        batch.use @Z [a_1, i_2]
      }
    }
  }
}
