// RUN: xdsl-opt --split-input-file --verify-diagnostics -p classify-axes %s | filecheck %s
// Protos that occur in one composite of a value's frame and nowhere else are
// interchangeable: a_1<i_2,i_1> is a_1<i_1,i_2> (proto lists are symmetric
// sets), and every pairing of i_1, i_2 with the use-site's is the same
// relabelling up to that symmetry. The use-sites below need no protos [...]
// (they used to be refused: "the pairing of the protos i_1, i_2 of
// a_1<i_1,i_2> with those of a_1<i_1,i_2> is ambiguous"). Roles are the
// decision tree's: every a slot of @f and @g is bound by the loop at every
// use-site (LoopLocal); @r sums a_1<i_1,i_2> at its node (Reduction).

batch.forest @interchangeable {
  batch.value @f [a_1<i_1,i_2>] leaf "f"
  batch.value @g [a_1<i_1,i_2>] leaf "g"
  batch.value @r [] contracted [a_1<i_1,i_2>] = @f [a_1<i_1,i_2>] * @g [a_1<i_1,i_2>]
  batch.tree @t {
    batch.loop a_1<i_2,i_1> slot 0 {
      batch.use @r [] {
        batch.use @f [a_1<i_2,i_1>]
        batch.use @g [a_1<i_2,i_1>]
      }
    }
  }
}

// CHECK-LABEL: batch.forest @interchangeable
// CHECK: batch.value @f [a_1<i_1,i_2>] leaf "f" {roles = #batch.roles<a_1<i_1,i_2> = loop_local>
// CHECK: batch.value @g [a_1<i_1,i_2>] leaf "g" {roles = #batch.roles<a_1<i_1,i_2> = loop_local>
// CHECK: batch.value @r [] contracted [a_1<i_1,i_2>] = @f [a_1<i_1,i_2>] * @g [a_1<i_1,i_2>] {roles = #batch.roles<a_1<i_1,i_2> = reduction>

// -----
// Other labels at the use-site: the same roles.

batch.forest @renamed {
  batch.value @f [a_1<i_1,i_2>] leaf "f"
  batch.value @g [a_1<i_1,i_2>] leaf "g"
  batch.value @r [] contracted [a_1<i_1,i_2>] = @f [a_1<i_1,i_2>] * @g [a_1<i_1,i_2>]
  batch.tree @t {
    batch.loop a_3<i_7,i_5> slot 0 {
      batch.use @r [] {
        batch.use @f [a_3<i_7,i_5>]
        batch.use @g [a_3<i_5,i_7>]
      }
    }
  }
}

// CHECK-LABEL: batch.forest @renamed
// CHECK: batch.value @f [a_1<i_1,i_2>] leaf "f" {roles = #batch.roles<a_3<i_5,i_7> = loop_local>
// CHECK: batch.value @g [a_1<i_1,i_2>] leaf "g" {roles = #batch.roles<a_3<i_5,i_7> = loop_local>
// CHECK: batch.value @r [] {{.*}} {roles = #batch.roles<a_3<i_5,i_7> = reduction>

// -----
// Protos shared by two composites: which pairing is meant changes the
// value's meaning, and nothing forces it: still an error.

batch.forest @shared {
  batch.value @p [a_1<i_1,i_2>, b_1<i_1,i_2>] leaf "p"
  batch.tree @t {
    batch.use @p [a_1<i_3,i_4>, b_1<i_3,i_4>]
  }
}

// CHECK: batch.use @p: the pairing of the protos i_1, i_2 of a_1<i_1,i_2> with those of a_1<i_3,i_4> is ambiguous; give it explicitly (protos [...])

// -----
// Protos with protos of their own (k_1 is shared by both): still an error.

batch.forest @nested {
  batch.value @q [a_1<i_1<k_1>,i_2<k_1>>] leaf "q"
  batch.tree @t {
    batch.use @q [a_1<i_3<k_2>,i_4<k_2>>]
  }
}

// CHECK: batch.use @q: the pairing of the protos i_1<k_1>, i_2<k_1> of a_1<i_1<k_1>,i_2<k_1>> with those of a_1<i_3<k_2>,i_4<k_2>> is ambiguous; give it explicitly (protos [...])
