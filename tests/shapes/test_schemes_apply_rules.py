"""Applying a scheme (``scheme/apply.py``): details a mutation review found
unchecked, each pinned to an exact outcome."""

from __future__ import annotations

import pytest

from axisflow.shapes import Session, ShapeError, scheme
from tests.shapes.test_schemes import traced


@pytest.mark.parametrize("closed", [False, True])
def test_check_relates_a_capture_input_to_its_references_state(closed: bool) -> None:
    """The reference is bound to a variable of size 5 (before a closing) or
    to the size 5 (after one): check predicts that an application binding
    its label to 3 fails, with the capture's sides, and binds nothing."""
    s = Session()
    ref = s.dim_ref("h")
    sc = traced(s, lambda xs: [s.einsum("y", "h=>h", xs[0], capture_dims=[ref])])
    s.einsum("e", "h=>h", s.leaf("w", "5"), capture_dims=[ref])
    if closed:
        s.close()
    state = (ref.var, ref.size)
    with pytest.raises(ShapeError) as info:
        scheme.check(sc, application="probe", args=[s.leaf("x", "3")])
    assert str(info.value) == (
        "applying the shape scheme f to probe: einsum 'y' of x (spec 'h=>h') in "
        "shape scheme f at application 'probe': sizes disagree: label 'h' has size "
        "3 but capture reference 'h' has size 5"
    )
    assert [o.describe() for o in info.value.origins] == [
        "einsum 'y' of x (spec 'h=>h') in shape scheme f at application 'probe'"
    ]
    scheme.check(sc, application="probe", args=[s.leaf("z", "5")])
    assert (ref.var, ref.size) == state
