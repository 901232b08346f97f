// RUN: xdsl-opt %s | filecheck %s
// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt %s --print-op-generic | xdsl-opt | filecheck %s
// RUN: xdsl-opt -p classify-axes %s | xdsl-opt --print-op-generic | xdsl-opt | filecheck %s --check-prefix=ROLES
// Every construct of the dialect, with labels of every shape of the label
// grammar, survives printing and parsing in custom and generic form.

batch.forest @all attributes {origin = "hand-written"} {
  batch.space i extent 80 elem 8
  batch.space a extent 896 composite {2 = 40, 1 = 60}
  batch.space Κ extent 1682
  batch.space μ̃ extent 896
  batch.space i↑
  batch.value @g [i_1, a_1<i_1,i_2>, Κ_1] leaf "g" symmetry "N-N-N"
  batch.value @t [a_1<i_2,i_1>, i_1] leaf "t"
  batch.value @C [μ̃_1152, i↑_1, i_6<i_1,i_5<i_2,i_1>>] leaf "δ"
  batch.value @v0 [i_1, Κ_1] contracted [a_1<i_1,i_2>] = @g [i_1, a_1<i_1,i_2>, Κ_1] * @t [a_1<i_1,i_2>, i_1]
  batch.value @opaque [i]
  batch.tree @term0 coeff -1/2 {
    batch.loop Κ_2 slot 0 {
      batch.use @v0 [i_3, Κ_2] {
        batch.loop i_3 {
          batch.use @g [i_3, a_3<i_3,i_4>, Κ_2]
        }
        batch.use @t [a_3<i_3,i_4>, i_3]
      }
    }
  }
  batch.tree @term1 {
    batch.use @C [μ̃_7, i↑_2, i_6<i_1,i_5<i_2,i_1>>]
  }
}

// CHECK:      batch.forest @all attributes {origin = "hand-written"} {
// CHECK-NEXT:   batch.space i extent 80 elem 8
// CHECK-NEXT:   batch.space a extent 896 composite {1 = 60, 2 = 40}
// CHECK-NEXT:   batch.space Κ extent 1682
// CHECK-NEXT:   batch.space μ̃ extent 896
// CHECK-NEXT:   batch.space i↑
// CHECK-NEXT:   batch.value @g [i_1, a_1<i_1,i_2>, Κ_1] leaf "g" symmetry "N-N-N"
// CHECK-NEXT:   batch.value @t [a_1<i_1,i_2>, i_1] leaf "t"
// CHECK-NEXT:   batch.value @C [μ̃_1152, i↑_1, i_6<i_1,i_5<i_1,i_2>>] leaf "δ"
// CHECK-NEXT:   batch.value @v0 [i_1, Κ_1] contracted [a_1<i_1,i_2>] = @g [i_1, a_1<i_1,i_2>, Κ_1] * @t [a_1<i_1,i_2>, i_1]
// CHECK-NEXT:   batch.value @opaque [i]
// CHECK-NEXT:   batch.tree @term0 coeff -1/2 {
// CHECK-NEXT:     batch.loop Κ_2 slot 0 {
// CHECK-NEXT:       batch.use @v0 [i_3, Κ_2] {
// CHECK-NEXT:         batch.loop i_3 {
// CHECK-NEXT:           batch.use @g [i_3, a_3<i_3,i_4>, Κ_2]
// CHECK-NEXT:         }
// CHECK-NEXT:         batch.use @t [a_3<i_3,i_4>, i_3]
// CHECK-NEXT:       }
// CHECK-NEXT:     }
// CHECK-NEXT:   }
// CHECK-NEXT:   batch.tree @term1 {
// CHECK-NEXT:     batch.use @C [μ̃_7, i↑_2, i_6<i_1,i_5<i_1,i_2>>]
// CHECK-NEXT:   }
// CHECK-NEXT: }

// ROLES: batch.value @g [i_1, a_1<i_1,i_2>, Κ_1] leaf "g" symmetry "N-N-N" {roles = #batch.roles<i_3 = loop_carried, Κ_2 = loop_local>}
// ROLES: batch.value @v0 [i_1, Κ_1] {{.*}} {roles = #batch.roles<Κ_2 = loop_carried>}
