// Malformed schedule syntax is a located parse error.
// RUN: xdsl-opt --split-input-file --parsing-diagnostics %s | filecheck %s

batch.forest {
  sched.schedule rounds 1 {
    sched.build @X slice [i_1 0] bytes 8
  }
}
// CHECK: Expected ':' after a mode (mode:instance)

// -----

batch.forest {
  sched.schedule rounds 1 {
    sched.loop over i instance 0 block 1 {
    }
  }
}
// CHECK: Expected 'pass'

// -----

batch.forest {
  sched.schedule rounds 1 {
    sched.buffer @X zero
  }
}
// CHECK: Expected 'bytes'
