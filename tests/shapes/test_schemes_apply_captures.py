"""How an application binds a capture reference, as re-running the body would.

The body's einsum binds the reference to its label's dim variable. An
application binds it to the application's own variable for that label (no
extra variable); when the scheme solved the label's size, to a fresh dim
variable equal to that size: a reference is always bound to a variable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from axisflow.shapes import (
    DimRef,
    DimVar,
    Kind,
    RowEq,
    Sabotage,
    Session,
    ShapeError,
    Side,
    Size,
    Tensor,
    scheme,
)
from axisflow.shapes.constraints import CaptureBind, TotalElems
from axisflow.shapes.terms import Row, RowVar
from tests.shapes.test_schemes import apply, traced


def test_a_capture_binds_the_applications_own_variable_for_the_label() -> None:
    s = Session()
    ref = s.dim_ref("h")
    sc = traced(s, lambda xs: [s.einsum("y", "h=>h", xs[0], capture_dims=[ref])])
    (capture,) = sc.captures
    assert type(capture.dim) is DimVar  # open in the scheme
    x = s.leaf("x")  # its output is open too
    y = apply(sc, "call", x)[0]
    ((), (), (output,)) = (row.dims for row in y.shape.current())
    assert ref.var == output
    assert x.shape.current()[2].dims == (output,)
    assert ref.value is None
    s.set_dim(ref, 7)
    s.close()
    assert y.shape.dims() == x.shape.dims() == ((), (), (7,))


def test_a_capture_solved_in_the_scheme_binds_a_variable_of_that_size() -> None:
    s = Session()
    ref = s.dim_ref("h")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        return [s.einsum("y", "h;h=>h", xs[0], s.leaf("five", "5"), capture_dims=[ref])]

    sc = traced(s, body)
    (capture,) = sc.captures
    assert capture.dim == Size(5)  # solved in the scheme
    y = apply(sc, "call", s.leaf("x"))[0]
    assert type(ref.var) is DimVar
    assert s.solver.find_dim(ref.var) == Size(5)
    assert ref.value == 5  # published after Stage 1
    s.close()
    assert ref.value == 5 and y.shape.dims() == ((), (), (5,))


def test_the_fresh_variable_of_a_solved_capture_is_tied_with_the_captures_origin() -> (
    None
):
    """The log shows the equality and the binding, both named for the einsum."""
    s = Session(keep_log=True)
    ref = s.dim_ref("h")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        return [s.einsum("y", "h;h=>h", xs[0], s.leaf("five", "5"), capture_dims=[ref])]

    sc = traced(s, body)
    x = s.leaf("x")
    start = len(s.log)
    apply(sc, "call", x)
    where = (
        "einsum 'y' of x, five (spec 'h;h=>h') in shape scheme f at application 'call'"
    )
    assert [str(c) for c in s.log[start:]][-2:] == [
        f"{ref.var!r} = 5  ({where})",
        f"capture 'h' := {ref.var!r}  ({where})",
    ]


# ------------------------------------- captures bound between pending facts


def _captures_between_totals(
    s: Session, refs: Sequence[DimRef]
) -> Callable[[Sequence[Tensor]], list[Tensor]]:
    """A body binding the capture references ``a``, ``r`` (a row) and ``k``
    before its first, second and third pending total respectively."""
    a, r, k = refs

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        u = s.einsum("u", "...|a=>...|a", xs[0], capture_dims=[a])
        s.total_elems(u, 6, kinds=[Kind.BATCH])
        v = s.einsum("v", "..r..|j=>..r..|j", u, capture_dims=[r])
        s.total_elems(u, 12, kinds=[Kind.BATCH, Kind.OUTPUT])
        w = s.einsum("w", "...|k=>...|k", v, capture_dims=[k])
        s.total_elems(w, 12, kinds=[Kind.BATCH, Kind.OUTPUT])
        return [w]

    return body


def _bindings_and_totals(s: Session, start: int) -> list[str]:
    """The labels bound and the totals added since ``start`` of the log, in order."""
    return [
        c.ref.label if type(c) is CaptureBind else "total"
        for c in s.log[start:]
        if type(c) in (CaptureBind, TotalElems)
    ]


def _three_refs(s: Session) -> list[DimRef]:
    return [s.dim_ref(label) for label in ("a", "r", "k")]


def test_captures_bound_between_pending_facts_keep_their_places_among_them() -> None:
    """Each capture is bound after as many of the scheme's pending facts as
    the body had added when it bound it, as re-running the body does: a
    total waiting on a captured size must come after the binding."""
    s = Session(keep_log=True)
    refs = _three_refs(s)
    sc = traced(s, _captures_between_totals(s, refs))
    assert [(c.ref.label, c.before) for c in sc.captures] == [
        ("a", 0),
        ("r", 1),
        ("k", 2),
    ]
    start = len(s.log)
    apply(sc, "call", s.leaf("x", "2,3|2"))
    through_scheme = _bindings_and_totals(s, start)

    again = Session(keep_log=True)
    start = len(again.log)
    _captures_between_totals(again, _three_refs(again))([again.leaf("x", "2,3|2")])
    assert through_scheme == _bindings_and_totals(again, start)
    assert through_scheme == ["a", "total", "r", "total", "k", "total"]
    s.close()
    assert [ref.value for ref in refs] == [2, 6, 2]


def test_check_relates_a_capture_bound_between_pending_facts_and_binds_none() -> None:
    """``check`` relates each capture input to its reference's state (a size
    set beforehand: the argument contradicts 5 and agrees with 2) and binds
    nothing."""
    for size, consistent in ((5, False), (2, True)):
        s = Session()
        refs = _three_refs(s)
        sc = traced(s, _captures_between_totals(s, refs))
        s.set_dim(refs[2], size)
        if consistent:
            scheme.check(sc, application="call", args=[s.leaf("x", "2,3|2")])
        else:
            with pytest.raises(ShapeError) as info:
                scheme.check(sc, application="call", args=[s.leaf("x", "2,3|2")])
            assert "capture reference 'k'" in str(info.value)
        assert [ref.is_bound for ref in refs] == [False, False, False]


def test_the_no_ref_inputs_sabotage_binds_no_capture_between_pending_facts() -> None:
    """The sabotage leaves out every capture input, those bound before a
    pending fact too (the sabotage tests rely on it)."""
    s = Session()
    refs = _three_refs(s)
    sc = traced(s, _captures_between_totals(s, refs))
    apply(sc, "call", s.leaf("x", "2,3|2"), sabotage=Sabotage.NO_REF_INPUTS)
    assert [ref.is_bound for ref in refs] == [False, False, False]


def test_an_open_row_capture_binds_the_applications_own_row_variable() -> None:
    """A row capture (``..h..``) open in the scheme binds the reference to
    the application's renamed row variable, the one the boundary equality
    ties to the argument's batch row: no extra variable, no extra equality."""
    s = Session(keep_log=True)
    ref = s.dim_ref("h")
    sc = traced(
        s, lambda xs: [s.einsum("y", "..h..|j=>..h..|j", xs[0], capture_dims=[ref])]
    )
    (capture,) = sc.captures
    assert type(capture.dim) is Row and capture.dim.dims == ()  # open in the scheme
    x = s.leaf("x", "...|5")
    start = len(s.log)
    apply(sc, "call", x)
    log = s.log[start:]
    (batch,) = [
        c
        for c in log
        if isinstance(c, RowEq) and c.origin.lhs == Side("a0", Kind.BATCH)
    ]
    assert type(ref.row) is RowVar and batch.a == Row((), ref.row)
    assert [type(c).__name__ for c in log if c.origin.operation == "einsum"] == [
        "CaptureBind"
    ]
    s.set_dim(ref, 6)
    s.close()
    assert x.shape.dims() == ((6,), (), (5,))


def test_a_row_capture_partly_solved_in_the_scheme_counts_its_axes_too() -> None:
    """The body writes an axis behind the captured row variable: the scheme's
    capture is ``[...r, d]``. The reference stands for the elements of the
    whole row (2 * 3), not of its open part alone."""
    s = Session()
    ref = s.dim_ref("h")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        y = s.einsum("y", "..h..|j=>..h..|j", xs[0], capture_dims=[ref])
        s.einsum("z", "...,k|j=>...,k|j", xs[0])
        return [y]

    sc = traced(s, body)
    (capture,) = sc.captures
    assert type(capture.dim) is Row
    assert capture.dim.var is not None and len(capture.dim.dims) == 1
    apply(sc, "call", s.leaf("x", "2,3|5"))
    assert type(ref.row) is RowVar
    s.close()
    assert ref.value == 6


@pytest.mark.parametrize(("batch", "count"), [("", 1), ("4", 4), ("2,3", 6)])
def test_a_row_capture_settled_from_a_concrete_argument_counts_its_elements(
    batch: str, count: int
) -> None:
    """The captured row is the argument's batch row; where the argument's
    batch row is concrete (no axes, one, two) the application settles it
    and binds the reference to a fresh row variable equal to it: the
    reference stands for its elements, as re-running the body gives."""
    s = Session()
    ref = s.dim_ref("h")
    sc = traced(
        s, lambda xs: [s.einsum("y", "..h..|j=>..h..|j", xs[0], capture_dims=[ref])]
    )
    apply(sc, "call", s.leaf("x", f"{batch}|5"))
    assert type(ref.row) is RowVar
    s.close()
    assert ref.value == count
    reference = Session()
    reference_ref = reference.dim_ref("h")
    reference.einsum(
        "y",
        "..h..|j=>..h..|j",
        reference.leaf("x", f"{batch}|5"),
        capture_dims=[reference_ref],
    )
    reference.close()
    assert reference_ref.value == count
