tprog.func @f(%x: !tprog.tensor) -> !tprog.tensor {
  %h = tprog.pointwise %x, %later
  tprog.return %h
}
%later = tprog.leaf "3"
%in = tprog.leaf "3"
%y = tprog.call @f(%in) at "a" : !tprog.tensor
