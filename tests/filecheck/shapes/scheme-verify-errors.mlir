// Verifier and parser diagnostics of the shape-scheme operations.
// RUN: xdsl-opt --split-input-file --verify-diagnostics %s | filecheck %s

tprog.scheme @id.scheme "id" () arity 1 results 1 {
  "generalized r1"
  "fixed (none)"
  "arg 0 'v' [] | [] -> [...r1]"
  "result 0 'v' [] | [] -> [...r1]"
}
%a = tprog.leaf "3"
%y = tprog.instantiate @id.scheme(%a, %a) at "site" : !tprog.tensor
// CHECK: tprog.instantiate @id.scheme at 'site': the scheme takes 1 argument(s) but 2 are given

// -----

tprog.scheme @id.scheme "id" () arity 1 results 1 {
  "generalized r1"
  "fixed (none)"
  "arg 0 'v' [] | [] -> [...r1]"
  "result 0 'v' [] | [] -> [...r1]"
}
%a = tprog.leaf "3"
%y:2 = tprog.instantiate @id.scheme(%a) at "site" : !tprog.tensor, !tprog.tensor
// CHECK: tprog.instantiate @id.scheme at 'site': the scheme has 1 result(s) but the operation has 2

// -----

tprog.func @f(%x: !tprog.tensor) -> !tprog.tensor {
  tprog.return %x
}
%a = tprog.leaf "3"
%y = tprog.instantiate @f(%a) at "site" : !tprog.tensor
// CHECK: tprog.instantiate: no tprog.scheme named @f

// -----

tprog.scheme @bad.scheme "bad" () arity 1 results 0 {
  "generalized r1"
  "arg 0 'v' [] | [] -> [...r1"
}
// CHECK: tprog.scheme @bad.scheme: malformed shape scheme line 2 at column 27: expected ']', got the end of the line in "arg 0 'v' [] | [] -> [...r1"

// -----

tprog.scheme @bad.scheme "bad" () arity 2 results 0 {
  "generalized r1"
  "arg 0 'v' [] | [] -> [...r1]"
}
// CHECK: tprog.scheme @bad.scheme: arity is 2 but the scheme has 1 'arg' line(s)

// -----

%w = tprog.leaf "3"
tprog.scheme @bad.scheme "bad" (%w) arity 0 results 0 {
  "generalized (none)"
}
// CHECK: tprog.scheme @bad.scheme: anchors is 1 but the scheme has 0 'anchor' line(s)

// -----

tprog.scheme @bad.scheme "bad" () arity 0 results 0 {
  "generalized (none)"
  "shape r1"
}
// CHECK: tprog.scheme @bad.scheme: malformed shape scheme line 2 at column 0: unknown item 'shape' in 'shape r1'

// -----

tprog.scheme @bad.scheme "bad" () arity 0 results 0 {
  "generalized (none)"
} values {
  "@f op 0 = internal 0"
}
// CHECK: tprog.scheme @bad.scheme: malformed values line '@f op 0 = internal 0' (expected '@func arg I = where K' or '@func op J R = where K')

// -----

tprog.func @two(%x: !tprog.tensor, %z: !tprog.tensor) -> !tprog.tensor {
  tprog.return %x
}
tprog.scheme @two.scheme "two" for @two() arity 1 results 1 {
  "generalized r1"
  "fixed (none)"
  "arg 0 'v' [] | [] -> [...r1]"
  "result 0 'v' [] | [] -> [...r1]"
}
// CHECK: tprog.scheme @two.scheme: @two takes 2 argument(s) and returns 1, but the scheme has arity 1 and 1 result(s)
