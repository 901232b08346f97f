// RUN: xdsl-opt -p 'classify-axes{explain=true}' %s | filecheck %s
// Settled point 2: an occurrence under a loop of i that carries no i slot is
// LoopCarried (the conservative answer). In IR this needs an inconsistent
// relabelling, which the verifier rejects; the decision tree keeps the rule
// for direct callers (tests/roles/test_classify_axis.py).
//
// What used to reach it: @x carries only the composite a_1<i_1>. Its
// proto i_1 (a mode of @x's own frame) is labelled i_1 at the first
// use-site and i_2 at the second, which no loop binds: i_1 is not sliced at
// every occurrence, so the proto is no i slot of @x, which then neither
// carries nor contracts an i index: LoopInvariant (read in full). The roles
// do not depend on the labels (frames.mlir).

batch.forest {
  batch.value @x [a_1<i_1>] leaf "x"
  batch.value @P [a_1<i_1>, a_2<i_2>] = @x [a_1<i_1>] * @x [a_2<i_2>]
  batch.tree @t {
    batch.loop i_1 {
      batch.use @P [a_1<i_1>, a_2<i_2>] {
        batch.use @x [a_1<i_1>]
        batch.use @x [a_2<i_2>]
      }
    }
  }
}

// CHECK: batch.value @x [a_1<i_1>] leaf "x" {roles = #batch.roles<i_1 = loop_invariant>, why = #batch.why<i_1 = "neither carries nor contracts an index of i">}
