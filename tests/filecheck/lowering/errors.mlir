// Forests that cannot be lowered fail with a diagnostic naming the forest.
// RUN: xdsl-opt --split-input-file --verify-diagnostics -p lower-schedule %s | filecheck %s

// No schedule: lower-schedule needs schedule-batches first.
batch.forest @unscheduled {
  batch.space i extent 2 elem 8
  batch.value @A [i_1] leaf "A"
  batch.value @V [i_1, i_2] = @A [i_1] * @A [i_2]
  batch.tree @term0 {
    batch.use @V [i_1, i_2] {
      batch.use @A [i_1]
      batch.use @A [i_2]
    }
  }
}

// CHECK: lower-schedule: batch.forest @unscheduled: it has no sched.schedule (run schedule-batches first)

// -----

// A space without extent: the memrefs need static sizes.
batch.forest @unsized {
  batch.space i elem 8
  batch.value @A [i_1] leaf "A"
  batch.value @V [i_1, i_2] = @A [i_1] * @A [i_2]
  batch.tree @term0 {
    batch.use @V [i_1, i_2] {
      batch.use @A [i_1]
      batch.use @A [i_2]
    }
  }
  sched.schedule rounds 1 {
    sched.build @V bytes 128
    sched.output @term0 = @V
  }
}

// CHECK: lower-schedule: batch.forest @unsized: index space i has no extent (declare `batch.space i extent N`; the SeQuant frontend takes extents=...)

