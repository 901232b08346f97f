// RUN: xdsl-opt --split-input-file -p 'classify-axes{explain=true}' %s | filecheck %s
// Settled point 1: instance awareness. @X is built per batch inside the nest
// of tree @t0 and read under the same label i_1 inside the nest of tree @t1.
// Fused into one loop instance (same slot) it is LoopLocal; in sibling nests
// (different slots) it is LoopCarried: an assembled escape of its own nest.

batch.forest @fused {
  batch.value @x [i_1, a_1] leaf "x"
  batch.value @y [a_1] leaf "y"
  batch.value @X [i_1] contracted [a_1] = @x [i_1, a_1] * @y [a_1]
  batch.value @Z [i_1] = @X [i_1] * @X [i_1]
  batch.tree @t0 {
    batch.loop i_1 slot 0 {
      batch.use @Z [i_1] {
        batch.use @X [i_1] {
          batch.use @x [i_1, a_1]
          batch.use @y [a_1]
        }
        batch.use @X [i_1] {
          batch.use @x [i_1, a_1]
          batch.use @y [a_1]
        }
      }
    }
  }
  batch.tree @t1 {
    batch.loop i_1 slot 0 {
      batch.use @Z [i_1] {
        batch.use @X [i_1] {
          batch.use @x [i_1, a_1]
          batch.use @y [a_1]
        }
        batch.use @X [i_1] {
          batch.use @x [i_1, a_1]
          batch.use @y [a_1]
        }
      }
    }
  }
}

// CHECK-LABEL: batch.forest @fused
// CHECK: batch.value @X [i_1] contracted [a_1] = @x [i_1, a_1] * @y [a_1] {roles = #batch.roles<i_1 = loop_local>

// -----

batch.forest @siblings {
  batch.value @x [i_1, a_1] leaf "x"
  batch.value @y [a_1] leaf "y"
  batch.value @X [i_1] contracted [a_1] = @x [i_1, a_1] * @y [a_1]
  batch.value @Z [i_1] = @X [i_1] * @X [i_1]
  batch.tree @t0 {
    batch.loop i_1 slot 0 {
      batch.use @Z [i_1] {
        batch.use @X [i_1] {
          batch.use @x [i_1, a_1]
          batch.use @y [a_1]
        }
        batch.use @X [i_1] {
          batch.use @x [i_1, a_1]
          batch.use @y [a_1]
        }
      }
    }
  }
  batch.tree @t1 {
    batch.loop i_1 slot 1 {
      batch.use @Z [i_1] {
        batch.use @X [i_1] {
          batch.use @x [i_1, a_1]
          batch.use @y [a_1]
        }
        batch.use @X [i_1] {
          batch.use @x [i_1, a_1]
          batch.use @y [a_1]
        }
      }
    }
  }
}

// CHECK-LABEL: batch.forest @siblings
// CHECK: batch.value @X [i_1] contracted [a_1] = @x [i_1, a_1] * @y [a_1] {roles = #batch.roles<i_1 = loop_carried>, why = #batch.why<i_1 = "use-site 2 of @X in tree @t1 [i_1] reads i_1 from loop instance 1, but use-site 0 of @X in tree @t0 [i_1] binds that slot in instance 0">}
