// close-shapes applying tprog.scheme operations (as generalize-shapes writes
// them): an application error is a diagnostic at the tprog.instantiate,
// prefixed "applying the shape scheme <label> to <application>: ".
// RUN: xdsl-opt -p close-shapes --split-input-file --verify-diagnostics %s | filecheck %s

%w = tprog.param "...->4"
tprog.func @layer(%in: !tprog.tensor) -> !tprog.tensor {
  %h = tprog.compose %w, %in
  tprog.return %h
}
tprog.scheme @layer.scheme "layer" for @layer(%w) arity 1 results 1 {
  "generalized r1, r2, r3, r4, r5, r6"
  "fixed r7"
  "arg 0 'in' [...r1] | [...r2] -> [...r3]"
  "result 0 'h' [...r4] | [...r5] -> [...r6, 4]"
  "anchor 0 'w' [] | [...r7] -> [4]"
  "internal 0 'h' [...r4] | [...r5] -> [...r6, 4]"
  "ineq [...r4] <= [...r1] ('compose' 'h' of 'w', 'in' lhs 'h'.batch rhs 'in'.batch)"
  "ineq [...r5] <= [...r2] ('compose' 'h' of 'w', 'in' lhs 'h'.input rhs 'in'.input)"
  "ineq [...r7] <= [...r3] ('compose' 'h' of 'w', 'in' lhs 'w'.input rhs 'in'.output)"
  "mark used_in_spec_or_compose r7"
  "mark safe_to_guess r6"
  "gen r6 1"
}
%a = tprog.leaf "2|->3"
%ya = tprog.instantiate @layer.scheme(%a) at "first" : !tprog.tensor
%b = tprog.leaf "2|->5"
%yb = tprog.instantiate @layer.scheme(%b) at "second" : !tprog.tensor
// CHECK:      applying the shape scheme layer to second: compose 'h' of w, b in shape scheme layer at application 'second': input and output axes disagree: b.output has size 5, which does not broadcast to size 3 of w.input; only size 1 broadcasts
// CHECK:      %yb = "tprog.instantiate"(%b) <{scheme = @layer.scheme, application = "second"}> : (!tprog.tensor) -> !tprog.tensor
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^^^

// -----

// A boundary row that cannot agree with the argument.
tprog.scheme @vector.scheme "vector" () arity 1 results 1 {
  "generalized d1"
  "fixed (none)"
  "arg 0 'v' [] | [] -> [d1]"
  "result 0 'v' [] | [] -> [d1]"
}
%m = tprog.leaf "2,3"
%y = tprog.instantiate @vector.scheme(%m) at "site" : !tprog.tensor
// CHECK:      applying the shape scheme vector to site: argument 'v' of m (argument 0) in shape scheme vector at application 'site': output axes disagree: m.output [2, 3] and v.output [d{{[0-9]+}}] have different numbers of axes
// CHECK:      %y = "tprog.instantiate"(%m)

// -----

// A scheme is applied where it stands: an instantiation before it is an error.
%m = tprog.leaf "3"
%y = tprog.instantiate @late.scheme(%m) at "early" : !tprog.tensor
tprog.scheme @late.scheme "late" () arity 1 results 1 {
  "generalized r1"
  "fixed (none)"
  "arg 0 'v' [] | [] -> [...r1]"
  "result 0 'v' [] | [] -> [...r1]"
}
// CHECK: tprog.instantiate: the scheme @late.scheme is not known here: a tprog.scheme must come before its instantiations, at module level

// -----

// A scheme that depends on the open variables of the session it was traced
// in cannot be rebuilt in another one.
tprog.scheme @loose.scheme "loose" () arity 1 results 1 {
  "generalized (none)"
  "fixed d1"
  "arg 0 'v' [] | [] -> [d1]"
  "result 0 'v' [] | [] -> [d1]"
  "loose d1 = old d12"
}
// CHECK: tprog.scheme @loose.scheme: the shape scheme loose depends on the open variable d12 of the session it was traced in; it cannot be rebuilt in another session

// -----

// Every variable a scheme uses is declared.
tprog.scheme @undeclared.scheme "undeclared" () arity 1 results 1 {
  "generalized r1"
  "fixed (none)"
  "arg 0 'v' [] | [] -> [...r2]"
  "result 0 'v' [] | [] -> [...r1]"
}
// CHECK: tprog.scheme @undeclared.scheme: the shape scheme undeclared uses r2, which it does not declare
