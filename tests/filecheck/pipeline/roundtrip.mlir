// A hand-written schedule parses, verifies and prints back, in the custom and
// in the generic form.
// RUN: xdsl-opt %s | xdsl-opt | filecheck %s
// RUN: xdsl-opt --print-op-generic %s | xdsl-opt | filecheck %s

batch.forest @pno {
  batch.space a extent 3 elem 8
  batch.space i extent 4 elem 8
  batch.space "μ̃" extent 2 elem 8
  batch.value @C [a_1<i_1>, μ̃_1] leaf "C"
  batch.value @t [a_1<i_1>, i_1] leaf "t"
  batch.value @V [μ̃_1, i_1] contracted [a_1<i_1>] = @C [a_1<i_1>, μ̃_1] * @t [a_1<i_1>, i_1]
  batch.value @E [] contracted [μ̃_1, i_1] = @V [μ̃_1, i_1] * @V [μ̃_1, i_1]
  batch.tree @term0 coeff -1/2 {
    batch.loop i_1 slot 0 {
      batch.use @E [] {
        batch.use @V [μ̃_1, i_1] {
          batch.use @C [a_1<i_1>, μ̃_1]
          batch.use @t [a_1<i_1>, i_1]
        }
        batch.use @V [μ̃_1, i_1] {
          batch.use @C [a_1<i_1>, μ̃_1]
          batch.use @t [a_1<i_1>, i_1]
        }
      }
    }
  }
  sched.schedule rounds 1 {
    sched.buffer @E zero bytes 8
    sched.loop over i instance 0 pass 0 block 2 {
      sched.build @V slice [i_1:0] bytes 32
      sched.build @E sum [i_1:0] bytes 8
      sched.accumulate @E
    }
    sched.output @term0 = @E
  }
}

// CHECK:      sched.schedule rounds 1 {
// CHECK-NEXT:   sched.buffer @E zero bytes 8
// CHECK-NEXT:   sched.loop over i instance 0 pass 0 block 2 {
// CHECK-NEXT:     sched.build @V slice [i_1:0] bytes 32
// CHECK-NEXT:     sched.build @E sum [i_1:0] bytes 8
// CHECK-NEXT:     sched.accumulate @E
// CHECK-NEXT:   }
// CHECK-NEXT:   sched.output @term0 = @E
// CHECK-NEXT: }
