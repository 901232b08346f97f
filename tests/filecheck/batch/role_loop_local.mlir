// RUN: xdsl-opt -p classify-axes %s | filecheck %s
// LoopLocal: every i slot is bound to an enclosing loop of i at every
// use-site, including two nested loops of one space each binding a carried
// index of an outer product.

batch.forest {
  batch.space i
  batch.value @A [i_1] leaf "A"
  batch.value @B [i_1, i_2] leaf "B"
  batch.value @P [i_3, i_4] = @A [i_3] * @A [i_4]
  batch.value @R [i_3, i_4] = @P [i_3, i_4] * @B [i_3, i_4]
  batch.tree @outer_product {
    batch.loop i_3 {
      batch.loop i_4 {
        batch.use @R [i_3, i_4] {
          batch.use @P [i_3, i_4] {
            batch.use @A [i_3]
            batch.use @A [i_4]
          }
          batch.use @B [i_3, i_4]
        }
      }
    }
  }
}

// CHECK:      batch.value @A [i_1] leaf "A" {roles = #batch.roles<i_3 = loop_local, i_4 = loop_local>}
// CHECK-NEXT: batch.value @B [i_1, i_2] leaf "B" {roles = #batch.roles<i_3 = loop_local, i_4 = loop_local>}
// CHECK-NEXT: batch.value @P [i_3, i_4] = @A [i_3] * @A [i_4] {roles = #batch.roles<i_3 = loop_local, i_4 = loop_local>}
// The root's own occurrence is read outside the loops: it is assembled.
// CHECK-NEXT: batch.value @R [i_3, i_4] = @P [i_3, i_4] * @B [i_3, i_4] {roles = #batch.roles<i_3 = loop_carried, i_4 = loop_carried>}
