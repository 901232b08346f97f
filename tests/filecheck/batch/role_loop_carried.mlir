// RUN: xdsl-opt -p 'classify-axes{explain=true}' %s | filecheck %s
// LoopCarried: A{;i_3} * A{;i_4} under a loop over i_3 only. The use-site
// A[i_4] reads a slot no loop binds (a lockstep slot beside a free one for
// the product), and the root is read outside every loop.

batch.forest {
  batch.value @A [i_1] leaf "A"
  batch.value @P [i_3, i_4] = @A [i_3] * @A [i_4]
  batch.tree @legality {
    batch.loop i_3 {
      batch.use @P [i_3, i_4] {
        batch.use @A [i_3]
        batch.use @A [i_4]
      }
    }
  }
}

// CHECK: batch.value @A [i_1] leaf "A" {roles = #batch.roles<i_3 = loop_carried>, why = #batch.why<i_3 = "use-site 1 of @A in tree @legality [i_4] carries i_4, bound by no enclosing loop of i">}
// CHECK: batch.value @P [i_3, i_4] = @A [i_3] * @A [i_4] {roles = #batch.roles<i_3 = loop_carried>, why = #batch.why<i_3 = "no enclosing loop of i at any use-site: a free result index">}
