// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt --print-op-generic %s | filecheck %s --check-prefix=GENERIC
// RUN: xdsl-opt --print-op-generic %s | xdsl-opt | filecheck %s
// Explicit proto pairings round-trip in the custom and the generic form.

batch.forest @pairs {
  batch.value @c [a_1<i_1,i_2>] leaf "c"
  batch.value @d [a_1<i_1,i_2>, i_1] leaf "d"
  batch.value @v [i_1] contracted [a_1<i_1,i_2>] = @c [a_1<i_1,i_2>] protos [i_1 = i_1] * @d [a_1<i_1,i_2>, i_1]
  batch.tree @t {
    batch.loop i_5 {
      batch.use @v [i_5] {
        batch.use @c [a_3<i_4,i_5>] protos [i_1 = i_5]
        batch.use @d [a_3<i_4,i_5>, i_5]
      }
    }
  }
}

// CHECK:      batch.value @v [i_1] contracted [a_1<i_1,i_2>] = @c [a_1<i_1,i_2>] protos [i_1 = i_1] * @d [a_1<i_1,i_2>, i_1]
// CHECK:      batch.use @c [a_3<i_4,i_5>] protos [i_1 = i_5]
// CHECK-NEXT: batch.use @d [a_3<i_4,i_5>, i_5]

// GENERIC: #batch.protos<i_1 = i_1>
// GENERIC: protos = #batch.protos<i_1 = i_5>
