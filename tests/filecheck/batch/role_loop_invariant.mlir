// RUN: xdsl-opt -p classify-axes %s | filecheck %s
// LoopInvariant: the loop over b encloses values that neither carry nor
// contract an index of b; they can be hoisted above the loop.

batch.forest {
  batch.value @B [b, e] leaf "B"
  batch.value @D [d, e] leaf "D"
  batch.value @C [d, f] leaf "C"
  batch.value @T [d, b] contracted [e] = @D [d, e] * @B [b, e]
  batch.value @U [f, b] contracted [d] = @C [d, f] * @T [d, b]
  batch.tree @hoist {
    batch.loop b {
      batch.use @U [f, b] {
        batch.use @C [d, f]
        batch.use @T [d, b] {
          batch.use @D [d, e]
          batch.use @B [b, e]
        }
      }
    }
  }
}

// CHECK:      batch.value @B [b, e] leaf "B" {roles = #batch.roles<b = loop_local>}
// CHECK-NEXT: batch.value @D [d, e] leaf "D" {roles = #batch.roles<b = loop_invariant>}
// CHECK-NEXT: batch.value @C [d, f] leaf "C" {roles = #batch.roles<b = loop_invariant>}
// CHECK-NEXT: batch.value @T [d, b] contracted [e] = @D [d, e] * @B [b, e] {roles = #batch.roles<b = loop_local>}
