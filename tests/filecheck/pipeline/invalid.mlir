// Schedules that break a rule are rejected by check-schedules at the op that breaks it.
// RUN: xdsl-opt --split-input-file --verify-diagnostics -p check-schedules %s | filecheck %s

// A reader in the pass that scatters its factor.
batch.forest @f {
  batch.space i extent 4 elem 8
  batch.space a extent 3 elem 8
  batch.value @P [i_1, a_1] leaf "P"
  batch.value @Q [a_1, a_2] leaf "Q"
  batch.value @Y [a_1] leaf "Y"
  batch.value @X [i_1, a_1] contracted [a_2] = @P [i_1, a_2] * @Q [a_2, a_1]
  batch.value @R [i_1] contracted [a_1] = @X [i_1, a_1] * @Y [a_1]
  batch.tree @t {
    batch.loop i_1 slot 0 {
      batch.use @R [i_1] {
        batch.use @X [i_1, a_1] {
          batch.use @P [i_1, a_2]
          batch.use @Q [a_2, a_1]
        }
        batch.use @Y [a_1]
      }
    }
  }
  sched.schedule rounds 1 {
    sched.buffer @X bytes 96
    sched.buffer @R bytes 32
    sched.loop over i instance 0 pass 0 block 1 {
      sched.build @X slice [i_1:0] bytes 24
      sched.scatter @X
      sched.build @R slice [i_1:0] bytes 8
      sched.scatter @R
    }
    sched.output @t = @R
  }
}

// CHECK: sched.build: build of @R reads @X before the loop producing it closed

// -----
// A piece read in a later pass (a LoopLocal value used by two passes).
batch.forest @f {
  batch.space i extent 4 elem 8
  batch.space a extent 3 elem 8
  batch.value @P [i_1, a_1] leaf "P"
  batch.value @Q [a_1, a_2] leaf "Q"
  batch.value @Y [a_1] leaf "Y"
  batch.value @X [i_1, a_1] contracted [a_2] = @P [i_1, a_2] * @Q [a_2, a_1]
  batch.value @R [i_1] contracted [a_1] = @X [i_1, a_1] * @Y [a_1]
  batch.tree @t {
    batch.loop i_1 slot 0 {
      batch.use @R [i_1] {
        batch.use @X [i_1, a_1] {
          batch.use @P [i_1, a_2]
          batch.use @Q [a_2, a_1]
        }
        batch.use @Y [a_1]
      }
    }
  }
  sched.schedule rounds 1 {
    sched.loop over i instance 0 pass 0 block 1 {
      sched.build @X slice [i_1:0] bytes 24
    }
    sched.buffer @R bytes 32
    sched.loop over i instance 0 pass 1 block 1 {
      sched.build @R slice [i_1:0] bytes 8
      sched.scatter @R
    }
    sched.output @t = @R
  }
}

// CHECK: sched.build: build of @R reads @X, which is not available here

// -----
// Building an input.
batch.forest @f {
  batch.space i extent 4 elem 8
  batch.space a extent 3 elem 8
  batch.value @P [i_1, a_1] leaf "P"
  batch.value @Q [a_1, a_2] leaf "Q"
  batch.value @Y [a_1] leaf "Y"
  batch.value @X [i_1, a_1] contracted [a_2] = @P [i_1, a_2] * @Q [a_2, a_1]
  batch.value @R [i_1] contracted [a_1] = @X [i_1, a_1] * @Y [a_1]
  batch.tree @t {
    batch.loop i_1 slot 0 {
      batch.use @R [i_1] {
        batch.use @X [i_1, a_1] {
          batch.use @P [i_1, a_2]
          batch.use @Q [a_2, a_1]
        }
        batch.use @Y [a_1]
      }
    }
  }
  sched.schedule rounds 1 {
    sched.buffer @R bytes 32
    sched.loop over i instance 0 pass 0 block 1 {
      sched.build @X slice [i_1:0] bytes 24
      sched.build @R slice [i_1:0] bytes 8
      sched.scatter @R
    }
    sched.loop over i instance 0 pass 1 block 1 {
      sched.build @Y sum [i_1:0] bytes 8
    }
    sched.output @t = @R
  }
}

// CHECK: sched.build: build of @Y, an input (inputs are only read)

// -----
// A partial sum that is never accumulated.
batch.forest @f {
  batch.space i extent 4 elem 8
  batch.space a extent 3 elem 8
  batch.value @P [i_1, a_1] leaf "P"
  batch.value @Q [a_1, a_2] leaf "Q"
  batch.value @Y [a_1] leaf "Y"
  batch.value @X [i_1, a_1] contracted [a_2] = @P [i_1, a_2] * @Q [a_2, a_1]
  batch.value @R [i_1] contracted [a_1] = @X [i_1, a_1] * @Y [a_1]
  batch.tree @t {
    batch.loop i_1 slot 0 {
      batch.use @R [i_1] {
        batch.use @X [i_1, a_1] {
          batch.use @P [i_1, a_2]
          batch.use @Q [a_2, a_1]
        }
        batch.use @Y [a_1]
      }
    }
  }
  sched.schedule rounds 1 {
    sched.build @X bytes 96
    sched.loop over a instance 1 pass 0 block 1 {
      sched.build @R sum [a_1:1] bytes 32
    }
    sched.output @t = @R
  }
}

// CHECK: sched.build: partial sums of @R are never accumulated into a buffer

// -----
// A wrong size.
batch.forest @f {
  batch.space i extent 4 elem 8
  batch.space a extent 3 elem 8
  batch.value @P [i_1, a_1] leaf "P"
  batch.value @Q [a_1, a_2] leaf "Q"
  batch.value @Y [a_1] leaf "Y"
  batch.value @X [i_1, a_1] contracted [a_2] = @P [i_1, a_2] * @Q [a_2, a_1]
  batch.value @R [i_1] contracted [a_1] = @X [i_1, a_1] * @Y [a_1]
  batch.tree @t {
    batch.loop i_1 slot 0 {
      batch.use @R [i_1] {
        batch.use @X [i_1, a_1] {
          batch.use @P [i_1, a_2]
          batch.use @Q [a_2, a_1]
        }
        batch.use @Y [a_1]
      }
    }
  }
  sched.schedule rounds 1 {
    sched.buffer @R bytes 33
    sched.loop over i instance 0 pass 0 block 1 {
      sched.build @X slice [i_1:0] bytes 24
      sched.build @R slice [i_1:0] bytes 8
      sched.scatter @R
    }
    sched.output @t = @R
  }
}

// CHECK: sched.buffer @R: declares 33 bytes, but the forest's sizes give 32

// -----
// Passes out of order.
batch.forest @f {
  batch.space i extent 4 elem 8
  batch.space a extent 3 elem 8
  batch.value @P [i_1, a_1] leaf "P"
  batch.value @Q [a_1, a_2] leaf "Q"
  batch.value @Y [a_1] leaf "Y"
  batch.value @X [i_1, a_1] contracted [a_2] = @P [i_1, a_2] * @Q [a_2, a_1]
  batch.value @R [i_1] contracted [a_1] = @X [i_1, a_1] * @Y [a_1]
  batch.tree @t {
    batch.loop i_1 slot 0 {
      batch.use @R [i_1] {
        batch.use @X [i_1, a_1] {
          batch.use @P [i_1, a_2]
          batch.use @Q [a_2, a_1]
        }
        batch.use @Y [a_1]
      }
    }
  }
  sched.schedule rounds 1 {
    sched.buffer @R bytes 32
    sched.loop over i instance 0 pass 1 block 1 {
      sched.build @X slice [i_1:0] bytes 24
      sched.build @R slice [i_1:0] bytes 8
      sched.scatter @R
    }
    sched.output @t = @R
  }
}

// CHECK: sched.loop: pass 1 of loop instance 0: expected pass 0 (passes are numbered in program order)

// -----
// An output inside a loop.
batch.forest @f {
  batch.space i extent 4 elem 8
  batch.space a extent 3 elem 8
  batch.value @P [i_1, a_1] leaf "P"
  batch.value @Q [a_1, a_2] leaf "Q"
  batch.value @Y [a_1] leaf "Y"
  batch.value @X [i_1, a_1] contracted [a_2] = @P [i_1, a_2] * @Q [a_2, a_1]
  batch.value @R [i_1] contracted [a_1] = @X [i_1, a_1] * @Y [a_1]
  batch.tree @t {
    batch.loop i_1 slot 0 {
      batch.use @R [i_1] {
        batch.use @X [i_1, a_1] {
          batch.use @P [i_1, a_2]
          batch.use @Q [a_2, a_1]
        }
        batch.use @Y [a_1]
      }
    }
  }
  sched.schedule rounds 1 {
    sched.loop over i instance 0 pass 0 block 1 {
      sched.build @X slice [i_1:0] bytes 24
      sched.build @R slice [i_1:0] bytes 8
      sched.output @t = @R
    }
  }
}

// CHECK: sched.output: outputs belong outside every loop

// -----
// A loop over another space than the mode it slices.
batch.forest @f {
  batch.space i extent 4 elem 8
  batch.space a extent 3 elem 8
  batch.value @P [i_1, a_1] leaf "P"
  batch.value @Q [a_1, a_2] leaf "Q"
  batch.value @Y [a_1] leaf "Y"
  batch.value @X [i_1, a_1] contracted [a_2] = @P [i_1, a_2] * @Q [a_2, a_1]
  batch.value @R [i_1] contracted [a_1] = @X [i_1, a_1] * @Y [a_1]
  batch.tree @t {
    batch.loop i_1 slot 0 {
      batch.use @R [i_1] {
        batch.use @X [i_1, a_1] {
          batch.use @P [i_1, a_2]
          batch.use @Q [a_2, a_1]
        }
        batch.use @Y [a_1]
      }
    }
  }
  sched.schedule rounds 1 {
    sched.buffer @R bytes 32
    sched.loop over a instance 0 pass 0 block 1 {
      sched.build @X slice [i_1:0] bytes 24
      sched.build @R slice [i_1:0] bytes 8
      sched.scatter @R
    }
    sched.output @t = @R
  }
}

// CHECK: sched.loop: loop instance 0 of the forest iterates i, not a

// -----
// A residual without a mode of the tree it receives (lower-schedule and the
// evaluator map the tree's root onto the residual's modes).
batch.forest @f {
  batch.space a extent 2
  batch.space i extent 3
  batch.value @t_0 [a_1, i_1] leaf "t"
  batch.tree @term0 {
    batch.use @t_0 [a_1, i_1]
  }
  sched.schedule rounds 1 {
    sched.residual 0 [a_1] bytes 16
    sched.output @term0 = @t_0 into 0
  }
}

// CHECK: sched.output: tree @term0 computes (a_1, i_1), the residual has modes (a_1)

// -----
// An operator over indices the residual does not have.
batch.forest @f {
  batch.space a extent 2
  batch.space i extent 3
  batch.value @t_0 [a_1, i_1] leaf "t"
  batch.tree @term0 {
    batch.use @t_0 [a_1, i_1]
  }
  sched.schedule rounds 1 {
    sched.residual 0 [a_1, i_1] bytes 48
    sched.output @term0 = @t_0 into 0
    sched.apply 0 ["Ŝ{a_1,a_2;i_1,i_2}"] bytes 48
  }
}

// CHECK: sched.apply: Ŝ{a_1,a_2;i_1,i_2} maps mode a_1 of the residual to a_2, which is not a mode of the residual
