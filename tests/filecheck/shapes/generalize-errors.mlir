// Trace errors are diagnostics at the tprog.func, prefixed "tracing the shape
// scheme <label>: "; application errors at the call (the tprog.instantiate it
// became), prefixed "applying the shape scheme <label> to <application>: ".
// RUN: xdsl-opt -p generalize-shapes,close-shapes --split-input-file --verify-diagnostics %s | filecheck %s

// Refused: a precision-dependent element count (bytes over a precision that
// is only known at closing).
tprog.func @load(%x: !tprog.tensor) -> !tprog.tensor {
  tprog.total_elems %x = 48 bytes
  tprog.return %x
}
%a = tprog.leaf "3"
%y = tprog.call @load(%a) at "site" : !tprog.tensor
// CHECK:      tracing the shape scheme load: total_elems 'x' (<48 bytes at the tensor's precision> elements) has a precision-dependent element count <48 bytes at the tensor's precision>; a scheme cannot carry it (the count is only known at closing)
// CHECK:      "tprog.func"() <{sym_name = "load"
// CHECK-NEXT: ^^^^^^^^^^^^

// -----

// Refused: set_dim on a capture reference made outside the trace (the
// module's references are).
tprog.func @fix(%x: !tprog.tensor) -> !tprog.tensor {
  %y = tprog.einsum "h=>h" (%x) capture ["h"]
  tprog.set_dim "h" = 4
  tprog.return %y
}
%a = tprog.leaf "3"
%y = tprog.call @fix(%a) at "site" : !tprog.tensor
// CHECK:      tracing the shape scheme fix: set_dim on the capture reference 'h', made outside the traced window; a scheme cannot carry that (bind the reference in the function and set it outside)
// CHECK:      "tprog.func"() <{sym_name = "fix"
// CHECK-NEXT: ^^^^^^^^^^^^

// -----

// Refused: forcing dims (closing) inside the traced function.
tprog.func @force(%x: !tprog.tensor) -> !tprog.tensor {
  tprog.close
  tprog.return %x
}
%a = tprog.leaf "3"
%y = tprog.call @force(%a) at "site" : !tprog.tensor
// CHECK:      tracing the shape scheme force: the function forces dims (closing the session) while it is traced; a scheme cannot carry that (shapes are only closed after an application)
// CHECK:      "tprog.func"() <{sym_name = "force"
// CHECK-NEXT: ^^^^^^^^^^^^

// -----

// A contradiction among the function's own constraints is a shape error at
// trace time, even for a function nobody calls.
tprog.func @clash(%x: !tprog.tensor) -> !tprog.tensor {
  %p = tprog.leaf "3"
  %q = tprog.leaf "4"
  %s = tprog.pointwise %p, %q
  tprog.return %s
}
// CHECK:      tracing the shape scheme clash: pointwise 's' of p, q: output axes disagree: q.output has size 4, which does not broadcast to size 3 of s.output; only size 1 broadcasts
// CHECK:      "tprog.func"() <{sym_name = "clash"
// CHECK-NEXT: ^^^^^^^^^^^^

// -----

// A recursive function cannot be traced.
%v = tprog.leaf "3"
tprog.func @again(%in: !tprog.tensor) -> !tprog.tensor {
  %r = tprog.call @again(%in) at "inside" : !tprog.tensor
  tprog.return %r
}
%y = tprog.call @again(%v) at "first" : !tprog.tensor
// CHECK:      tracing the shape scheme again: recursive call @again -> @again cannot be traced
// CHECK:      "tprog.func"() <{sym_name = "again"
// CHECK-NEXT: ^^^^^^^^^^^^

// -----

// The shared weight is fixed: its input width comes from the first
// application, and the second one, with another width, is an error at that
// application (the tprog.instantiate the call became; close-shapes applies it).
%w = tprog.param "...->16"
tprog.func @layer(%in: !tprog.tensor) -> !tprog.tensor {
  %h = tprog.compose %w, %in
  tprog.return %h
}
%x = tprog.leaf "8|->3"
%y = tprog.call @layer(%x) at "first" : !tprog.tensor
%x2 = tprog.leaf "8|->5"
%y2 = tprog.call @layer(%x2) at "second" : !tprog.tensor
// CHECK:      applying the shape scheme layer to second: compose 'h' of w, x2 in shape scheme layer at application 'second': input and output axes disagree: x2.output has size 5, which does not broadcast to size 3 of w.input; only size 1 broadcasts
// CHECK:      %y2 = "tprog.instantiate"(%x2) <{scheme = @layer.scheme, application = "second"}> : (!tprog.tensor) -> !tprog.tensor
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^^^

// -----

// A failure found when closing names the scheme and the application, and is
// reported at the instantiation.
tprog.func @hidden(%x: !tprog.tensor) -> !tprog.tensor {
  %v = tprog.param "...->..."
  %h = tprog.compose %v, %x
  tprog.return %h
}
%a = tprog.leaf "3"
%y = tprog.call @hidden(%a) at "site" : !tprog.tensor
// CHECK:      You forgot to specify the hidden dimension(s) of parameter 'v': the number of its output axes {{.*}} cannot be inferred; give them in its spec (param 'v' (spec '...->...') in shape scheme hidden at application 'site')
// CHECK:      %y = "tprog.instantiate"(%a) <{scheme = @hidden.scheme, application = "site"}> : (!tprog.tensor) -> !tprog.tensor
// CHECK-NEXT: ^^^^^^^^^^^^^^^^^^^^^^^^

