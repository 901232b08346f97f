// RUN: xdsl-opt --split-input-file -p classify-axes %s | filecheck %s
// Roles do not depend on labels (issue 10). The value @f lives in its own
// frame [a_1<i_1>]; the use-site labels it [a_2<i_3>] under a loop over i_3,
// so its proto i_1 is i_3 there: sliced by the loop, LoopLocal, exactly as
// when the labels coincide (settled_sliced.mlir).

batch.forest @renamed {
  batch.value @f [a_1<i_1>] leaf "f"
  batch.value @t [a_1<i_1>, i_1] leaf "t"
  batch.value @r [i_1] contracted [a_1<i_1>] = @t [a_1<i_1>, i_1] * @f [a_1<i_1>]
  batch.tree @term {
    batch.loop i_3 {
      batch.use @r [i_3] {
        batch.use @t [a_2<i_3>, i_3]
        batch.use @f [a_2<i_3>]
      }
    }
  }
}

// CHECK-LABEL: batch.forest @renamed
// CHECK: batch.value @f [a_1<i_1>] leaf "f" {roles = #batch.roles<i_3 = loop_local>}
// CHECK: batch.value @t [a_1<i_1>, i_1] leaf "t" {roles = #batch.roles<i_3 = loop_local>}
