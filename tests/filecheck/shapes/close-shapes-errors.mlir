// Shape errors are diagnostics at the operation whose constraint failed.
// RUN: xdsl-opt -p close-shapes --split-input-file --verify-diagnostics %s | filecheck %s

%a = tprog.leaf "3"
%b = tprog.leaf "5"
%c = tprog.pointwise %a, %b
// CHECK:      pointwise 'c' of a, b: output axes disagree: b.output has size 5, which does not broadcast to size 3 of c.output; only size 1 broadcasts
// CHECK:      %c = "tprog.pointwise"(%a, %b) : (!tprog.tensor, !tprog.tensor) -> !tprog.tensor
// CHECK-NEXT: ^^^^^

// -----

// The hidden-dimension error, reported at the parameter.
%x = tprog.leaf "8|->3"
%w = tprog.param "...->..."
%h = tprog.compose %w, %x
// CHECK:      You forgot to specify the hidden dimension(s) of parameter 'w': the number of its output axes {{.*}} cannot be inferred; give them in its spec (param 'w' (spec '...->...'))
// CHECK:      %w = "tprog.param"() <{spec = "...->..."}> : () -> !tprog.tensor
// CHECK-NEXT: ^^^^^

// -----

// A contradiction between two applications of one function: the second
// application's input width disagrees with the shared weight, reported at
// the body op and naming the application.
%w = tprog.param "...->16"
tprog.func @layer(%in: !tprog.tensor) -> !tprog.tensor {
  %h = tprog.compose %w, %in
  tprog.return %h
}
%x = tprog.leaf "8|->3"
%y = tprog.call @layer(%x) at "first" : !tprog.tensor
%x2 = tprog.leaf "8|->5"
%y2 = tprog.call @layer(%x2) at "second" : !tprog.tensor
// CHECK:      compose 'h' of w, x2 at application 'second': input and output axes disagree: x2.output has size 5, which does not broadcast to size 3 of w.input; only size 1 broadcasts
// CHECK:      %h = "tprog.compose"(%w, %in) : (!tprog.tensor, !tprog.tensor) -> !tprog.tensor
// CHECK-NEXT: ^^^^^

// -----

// A contradiction found later names the constraint it breaks and the one
// being solved when it surfaced.
%x = tprog.leaf
%a = tprog.leaf "3"
%p = tprog.pointwise %x, %a
%b = tprog.leaf "5"
%e = tprog.einsum "i;i=>i" (%x, %b)
// CHECK:      pointwise 'p' of x, a: output axes disagree: x.output has size 5, which does not broadcast to size 3 of p.output; only size 1 broadcasts (found while solving einsum 'e' of x, b (spec 'i;i=>i'))
// CHECK:      %p = "tprog.pointwise"(%x, %a) : (!tprog.tensor, !tprog.tensor) -> !tprog.tensor
// CHECK-NEXT: ^^^^^

// -----

// Einsum equalities do not broadcast; rows without '...' are closed.
%l = tprog.leaf "7,2,3"
%r = tprog.leaf "3,4"
%mm = tprog.einsum "ij;jk=>ik" (%l, %r)
// CHECK: einsum 'mm' of l, r (spec 'ij;jk=>ik'): output axes disagree: l.output [7, 2, 3] and spec 'ij;jk=>ik'.output [{{.*}}] have different numbers of axes

// -----

// A capture reference fixed to a size that contradicts the data.
%v = tprog.leaf "3"
tprog.set_dim "h" = 4
%z = tprog.einsum "h=>h" (%v) capture ["h"]
// CHECK: einsum 'z' of v (spec 'h=>h'): sizes disagree: label 'h' has size 3 but capture reference 'h' has size 4

// -----

// A recursive function cannot be evaluated by re-evaluation.
%v = tprog.leaf "3"
tprog.func @f(%in: !tprog.tensor) -> !tprog.tensor {
  %r = tprog.call @f(%in) at "again" : !tprog.tensor
  tprog.return %r
}
%y = tprog.call @f(%v) at "first" : !tprog.tensor
// CHECK: tprog.call: recursive call @f -> @f cannot be evaluated

// -----

// Operands of sizes with different bases must not meet.
%rgb = tprog.leaf "3@rgb"
%xyz = tprog.leaf "3@xyz"
%mix = tprog.pointwise %rgb, %xyz
// CHECK: pointwise 'mix' of rgb, xyz: output axes disagree: xyz.output has size 3@xyz, which does not broadcast to size 3@rgb of mix.output (different bases)

// -----

// A function body may only use module-level tensors defined before the call.
tprog.func @late(%in: !tprog.tensor) -> !tprog.tensor {
  %s = tprog.pointwise %in, %later
  tprog.return %s
}
%v = tprog.leaf "3"
%y = tprog.call @late(%v) at "early" : !tprog.tensor
%later = tprog.leaf "3"
// CHECK: tprog.pointwise: operand 'later' has no tensor yet: a value used by a function body must be defined at module level before the calls that apply it

// -----

// Shapes are inferred op by op: a value is used after its definition.
%early = tprog.pointwise %after, %after
%after = tprog.leaf "2|3"
// CHECK: tprog.pointwise: operand 'after' is used before its definition: shapes are inferred op by op, in the order written

// -----

// Values without SSA names get stable numbered tensor names.
%0 = tprog.leaf "3"
%1 = tprog.leaf "5"
%2 = tprog.pointwise %0, %1
// CHECK: pointwise 'tensor3' of tensor1, tensor2: output axes disagree: tensor2.output has size 5, which does not broadcast to size 3 of tensor3.output; only size 1 broadcasts

// -----

// A convolution that does not fit its input: 6 = 2 * (o - 1) + 3 has no solution.
%x = tprog.leaf "6"
%k = tprog.leaf "3"
%y = tprog.einsum "2*o<+k; k => o" (%x, %k)
// CHECK: einsum 'y' of x, k (spec '2*o<+k; k => o'): the axis '2*o<+k' cannot hold with k = 3, 2*o<+k = 6: no positive size of 'o' satisfies it (o = 5/2)
