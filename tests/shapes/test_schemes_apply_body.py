"""What one application of a scheme writes (``scheme/apply.py``, ``_apply``).

An application is the trace replayed on the call's shapes: the boundary
equalities, the anchors' equalities, the loose variables' ties, the compiled
facts (presolved ones skipped), the policy marks and template depths of the
renamed rows, and the capture bindings, each with an origin that names the
scheme, the application and the site. The tests pin that written list
exactly (``Session(keep_log=True)`` keeps every constraint), each sabotage's
exact effect on it, and the closed shapes it leads to.
"""

from __future__ import annotations

from collections.abc import Sequence

from axisflow.shapes import (
    DimEq,
    DimRef,
    Kind,
    Origin,
    RowEq,
    Sabotage,
    Scheme,
    Session,
    Tensor,
    scheme,
)
from axisflow.shapes.constraints import Mark, PolicyMark
from axisflow.shapes.terms import Row, Size
from tests.shapes.test_schemes import traced

STAMPED = " in shape scheme pair at application 'site')"
"""How every origin the application writes ends (its scheme and application)."""


def pair_scheme(s: Session) -> tuple[Tensor, DimRef, Scheme]:
    """A two-argument scheme with every kind of part an application writes.

    An anchored weight ``w`` (open input row), a loose dim and a loose row
    (old variables tied inside the body, held by no anchored shape), a
    minimum from a fixed index (index ``2`` needs an axis of size 3 or more), a
    capture reference, policy marks, template depths, and internal rows of
    ``h`` that presolve (they occur only as operands).
    """
    w = s.param("w", "...->4")
    ref = s.dim_ref("h")
    old_dim, old_row = s.fresh_dim_var(), s.fresh_row_var()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        h = s.compose("h", w, xs[0])
        s.einsum("y", "...,i,2=>...,i", xs[0])
        g = s.einsum("g", "...|h=>...|h", xs[1], capture_dims=[ref])
        (label,) = g.shape.current()[2].dims
        s.add(DimEq(label, old_dim, Origin("tie", "g")))
        s.add(RowEq(Row((), old_row), g.shape.current()[0], Origin("tie", "g")))
        return [s.pointwise("z", h, xs[1]), g]

    return w, ref, traced(s, body, arity=2, label="pair")


def written(
    sabotage: Sabotage | None,
) -> tuple[list[str], list[str], set[object], dict[str, object]]:
    """Apply the pair scheme at site ``"SITE"``: the constraints it wrote,
    their distinct origins (in full, sides and detail included), the sites
    they carry, and what the session knows afterwards."""
    s = Session(keep_log=True)
    w, ref, sc = pair_scheme(s)
    x0, x1 = s.leaf("x0", "->2,6,5"), s.leaf("x1", "7|->4")
    r0, r1 = s.fresh("r0"), s.fresh("r1")
    start = len(s.log)
    applied = scheme.instantiate(
        sc,
        application="site",
        args=[x0, x1],
        results=[r0, r1],
        sabotage=sabotage,
        site="SITE",
    )
    log = s.log[start:]
    origins: list[Origin] = []
    for constraint in log:
        if constraint.origin not in origins:
            origins.append(constraint.origin)
    row_gen = dict(s.state()["row_gen"])
    s.close()
    after: dict[str, object] = {
        "row_gen": row_gen,
        "results": (r0.shape.dims(), r1.shape.dims()),
        "w": w.shape.dims(),
        "internal": [shape.dims() for shape in applied.internal],
        "h": ref.value,
    }
    lines = [str(c) for c in log]
    assert all(line.endswith(STAMPED) for line in lines)
    return (
        [line.removesuffix(STAMPED) for line in lines],
        [repr(o) for o in origins],
        {c.origin.site for c in log},
        after,
    )


# The pair scheme applied to x0 ``->2,6,5`` and x1 ``7|->4`` in a fresh
# session, in the order it is written: no argument equality (both argument
# rows are concrete, so the scheme's argument variables are settled to
# their values and every equality would hold as written), the results'
# equalities (one per row kind; ``g``'s rows are x1's, settled), the
# anchor's equality (only w's open input row: its batch and output rows
# are concrete and still hold), the loose variables' ties, the compiled
# facts on the settled values (the presolved rows of ``h`` appear as their
# value ``[]``: its batch row; its input and output rows, the only ones
# ``z``'s broadcast from and empty here, are not presolved, as closing may
# merge them with ``z``'s), the policy marks of the rows still open and the
# capture binding (its scheme variable, x1's output dim, settled to 4, so
# bound through a fresh d105). d92 onwards are the application's renamed
# variables (r84 to r90 the placeholders' rows, d5 and r6 the loose old
# variables, r1 w's input row).
WRITTEN = [
    "[...r94] = [...r84]  (result 'z' of r0 (result 0)",
    "[...r95] = [...r85]  (result 'z' of r0 (result 0)",
    "[...r96, 4] = [...r86]  (result 'z' of r0 (result 0)",
    "[7] = [...r88]  (result 'g' of r1 (result 1)",
    "[] = [...r89]  (result 'g' of r1 (result 1)",
    "[4] = [...r90]  (result 'g' of r1 (result 1)",
    "[...r99, d92, d93] = [...r1]  (anchor 'w' (a pre-existing shape)",
    "4 = d5  (fixed variable 'd5'",
    "[7] = [...r6]  (fixed variable 'r6'",
    "d93 ⊑ 5  (compose 'h' of w, x0",
    "d92 ⊑ 6  (compose 'h' of w, x0",
    "4 ⊑ 4  (pointwise 'z' of h, x1",
    "5 >= 3  (einsum 'y' of x0 (spec '...,i,2=>...,i')",
    "[...r94] ⊑ []  (pointwise 'z' of h, x1",
    "[...r95] ⊑ [...r97]  (pointwise 'z' of h, x1",
    "[...r96] ⊑ [...r98]  (pointwise 'z' of h, x1",
    "[...r99] ⊑ [2]  (compose 'h' of w, x0",
    "[...r94] ⊑ [7]  (pointwise 'z' of h, x1",
    "used_in_pointwise [...r95]  (policy mark 'pair'",
    "used_in_pointwise [...r97]  (policy mark 'pair'",
    "safe_to_guess [...r98]  (policy mark 'pair'",
    "safe_to_guess [...r99]  (policy mark 'pair'",
    "used_in_spec_or_compose [...r99]  (policy mark 'pair'",
    "safe_to_guess [...r96]  (policy mark 'pair'",
    "d105 = 4  (einsum 'g' of x1 (spec '...|h=>...|h')",
    "capture 'h' := d105  (einsum 'g' of x1 (spec '...|h=>...|h')",
]

WRITTEN_UNGENERALIZED = [
    "[...r64, d66, d65] = [...r78]  (argument 'a0' of x0 (argument 0)",
    "[...r70] = [...r80]  (argument 'a1' of x1 (argument 1)",
    "[d72] = [...r82]  (argument 'a1' of x1 (argument 1)",
    "[...r50] = [...r84]  (result 'z' of r0 (result 0)",
    "[...r51] = [...r85]  (result 'z' of r0 (result 0)",
    "[...r75, 4] = [...r86]  (result 'z' of r0 (result 0)",
    "[...r70] = [...r88]  (result 'g' of r1 (result 1)",
    "[] = [...r89]  (result 'g' of r1 (result 1)",
    "[d72] = [...r90]  (result 'g' of r1 (result 1)",
    "[...r69, d67, d68] = [...r1]  (anchor 'w' (a pre-existing shape)",
    "d72 = d5  (fixed variable 'd5'",
    "[...r70] = [...r6]  (fixed variable 'r6'",
    "d68 ⊑ d65  (compose 'h' of w, x0",
    "d67 ⊑ d66  (compose 'h' of w, x0",
    "4 ⊑ d72  (pointwise 'z' of h, x1",
    "d65 >= 3  (einsum 'y' of x0 (spec '...,i,2=>...,i')",
    "[...r50] ⊑ [...r56]  (pointwise 'z' of h, x1",
    "[...r51] ⊑ [...r57]  (pointwise 'z' of h, x1",
    "[...r75] ⊑ [...r63]  (pointwise 'z' of h, x1",
    "[...r69] ⊑ [...r64]  (compose 'h' of w, x0",
    "[...r50] ⊑ [...r70]  (pointwise 'z' of h, x1",
    "used_in_pointwise [...r51]  (policy mark 'pair'",
    "used_in_pointwise [...r57]  (policy mark 'pair'",
    "safe_to_guess [...r63]  (policy mark 'pair'",
    "used_in_spec_or_compose [...r64]  (policy mark 'pair'",
    "safe_to_guess [...r69]  (policy mark 'pair'",
    "used_in_spec_or_compose [...r69]  (policy mark 'pair'",
    "used_in_spec_or_compose [...r70]  (policy mark 'pair'",
    "safe_to_guess [...r75]  (policy mark 'pair'",
    "capture 'h' := d72  (einsum 'g' of x1 (spec '...|h=>...|h')",
]

# Unrenamed, the argument rows are not settled: their equalities (less
# the rows written concrete, ``[]`` here, which hold as written) come first.
ARGUMENT_ORIGINS = [
    "Origin('argument', 'a0', ('x0',), Side('a0', <Kind.OUTPUT: 'output'>), Side('x0', <Kind.OUTPUT: 'output'>), 'argument 0', 'pair', 'site')",
    "Origin('argument', 'a1', ('x1',), Side('a1', <Kind.BATCH: 'batch'>), Side('x1', <Kind.BATCH: 'batch'>), 'argument 1', 'pair', 'site')",
    "Origin('argument', 'a1', ('x1',), Side('a1', <Kind.OUTPUT: 'output'>), Side('x1', <Kind.OUTPUT: 'output'>), 'argument 1', 'pair', 'site')",
]

ORIGINS = [
    "Origin('result', 'z', ('r0',), Side('z', <Kind.BATCH: 'batch'>), Side('r0', <Kind.BATCH: 'batch'>), 'result 0', 'pair', 'site')",
    "Origin('result', 'z', ('r0',), Side('z', <Kind.INPUT: 'input'>), Side('r0', <Kind.INPUT: 'input'>), 'result 0', 'pair', 'site')",
    "Origin('result', 'z', ('r0',), Side('z', <Kind.OUTPUT: 'output'>), Side('r0', <Kind.OUTPUT: 'output'>), 'result 0', 'pair', 'site')",
    "Origin('result', 'g', ('r1',), Side('g', <Kind.BATCH: 'batch'>), Side('r1', <Kind.BATCH: 'batch'>), 'result 1', 'pair', 'site')",
    "Origin('result', 'g', ('r1',), Side('g', <Kind.INPUT: 'input'>), Side('r1', <Kind.INPUT: 'input'>), 'result 1', 'pair', 'site')",
    "Origin('result', 'g', ('r1',), Side('g', <Kind.OUTPUT: 'output'>), Side('r1', <Kind.OUTPUT: 'output'>), 'result 1', 'pair', 'site')",
    "Origin('anchor', 'w', (), Side('w as traced', <Kind.INPUT: 'input'>), Side('w', <Kind.INPUT: 'input'>), 'a pre-existing shape', 'pair', 'site')",
    "Origin('fixed variable', 'd5', (), None, None, None, 'pair', 'site')",
    "Origin('fixed variable', 'r6', (), None, None, None, 'pair', 'site')",
    "Origin('compose', 'h', ('w', 'x0'), Side('w', <Kind.INPUT: 'input'>), Side('x0', <Kind.OUTPUT: 'output'>), None, 'pair', 'site')",
    "Origin('pointwise', 'z', ('h', 'x1'), Side('z', <Kind.OUTPUT: 'output'>), Side('x1', <Kind.OUTPUT: 'output'>), None, 'pair', 'site')",
    "Origin('einsum', 'y', ('x0',), None, None, \"spec '...,i,2=>...,i'\", 'pair', 'site')",
    "Origin('pointwise', 'z', ('h', 'x1'), Side('z', <Kind.BATCH: 'batch'>), Side('h', <Kind.BATCH: 'batch'>), None, 'pair', 'site')",
    "Origin('pointwise', 'z', ('h', 'x1'), Side('z', <Kind.INPUT: 'input'>), Side('h', <Kind.INPUT: 'input'>), None, 'pair', 'site')",
    "Origin('pointwise', 'z', ('h', 'x1'), Side('z', <Kind.OUTPUT: 'output'>), Side('h', <Kind.OUTPUT: 'output'>), None, 'pair', 'site')",
    "Origin('pointwise', 'z', ('h', 'x1'), Side('z', <Kind.BATCH: 'batch'>), Side('x1', <Kind.BATCH: 'batch'>), None, 'pair', 'site')",
    "Origin('policy mark', 'pair', (), None, None, None, 'pair', 'site')",
    "Origin('einsum', 'g', ('x1',), None, None, \"spec '...|h=>...|h'\", 'pair', 'site')",
]


AFTER = {
    # The renamed rows keep the trace's template depths (r104 is w's input
    # tail r9 at depth 2, r100 z's output tail r4 and r102 h's at 1; h's
    # presolved batch row takes none); r107 and r109 inherit theirs when
    # Stage 1 solves r104, r98.
    "row_gen": {98: 1, 99: 2, 96: 1, 102: 3, 104: 1},
    "results": (((7,), (), (4,)), ((7,), (), (4,))),
    "w": ((), (2, 6, 5), (4,)),
    "internal": [
        ((), (), (4,)),
        ((), (), (2, 6)),
        ((7,), (), (4,)),
        ((7,), (), (4,)),
    ],
    "h": 4,
}


def test_an_application_writes_every_part_of_the_trace_with_its_origins() -> None:
    lines, origins, sites, after = written(None)
    assert lines == WRITTEN
    assert origins == ORIGINS
    assert sites == {"SITE"}
    assert after == AFTER


def test_no_generalization_writes_the_same_parts_on_the_schemes_own_variables() -> None:
    """Sabotaged, nothing is renamed (and nothing presolved or settled): the
    list on the scheme's variables (r50 to r75), with the argument
    equalities, and the same origins after theirs; one application alone
    still closes to the same shapes."""
    lines, origins, sites, after = written(Sabotage.NO_GENERALIZATION)
    assert lines == WRITTEN_UNGENERALIZED
    assert origins == ARGUMENT_ORIGINS + ORIGINS
    assert sites == {"SITE"}
    assert after == {
        **AFTER,
        "row_gen": {63: 1, 69: 2, 75: 1, 94: 3, 96: 1},
    }


def test_a_concrete_anchor_row_the_rewind_reopened_is_tied_again() -> None:
    """The body ties w's input row to ``[3]``, so at the end of the trace the
    anchored row is concrete; the trace's rewind reopens it. The application
    must write the anchor's equality again (a concrete anchor row is skipped
    only when it still holds), and w closes to width 3."""
    s = Session()
    w = s.param("w", "...->4")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        s.add(RowEq(w.shape.row(Kind.INPUT), Row((Size(3),)), Origin("tie", "w")))
        return [s.compose("y", w, xs[0])]

    sc = traced(s, body, label="lay")
    assert "anchor 0 'w' [] | [3] -> [4]" in sc.to_lines()
    assert w.shape.describe() == "...->4"
    y = s.fresh("y")
    scheme.instantiate(sc, application="site", args=[s.leaf("x", "->3")], results=[y])
    s.close()
    assert (w.shape.dims(), y.shape.dims()) == (((), (3,), (4,)), ((), (), (4,)))


def test_a_row_presolving_leaves_open_keeps_its_inequality() -> None:
    """``t`` is internal and bounded by the argument only, so it presolves
    where that argument's row is concrete: x0's input and output rows are,
    its batch row is not (it is tied to ``[5]`` only after the application).
    The inequalities of t's presolved rows are skipped, the one of its open
    batch row is written, so t's batch closes to x0's."""
    s = Session()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        return [s.pointwise("y", s.pointwise("t", xs[0]), xs[1])]

    sc = traced(s, body, arity=2, label="two")
    x0, x1 = s.leaf("x0", "...|->3"), s.leaf("x1", "->3")
    y = s.fresh("y")
    applied = scheme.instantiate(sc, application="site", args=[x0, x1], results=[y])
    s.add(RowEq(x0.shape.row(Kind.BATCH), Row((Size(5),)), Origin("test", "x0")))
    s.close()
    assert [shape.dims() for shape in applied.internal] == [
        ((5,), (), (3,)),
        ((5,), (), (3,)),
    ]
    assert y.shape.dims() == ((5,), (), (3,))


def test_check_with_a_concrete_capture_input_binds_nothing() -> None:
    """The capture input's label is 3 in the scheme and the reference is
    unbound: check relates it to nothing and binds nothing. Nothing is
    generalized either, so the check mints no variable at all (ids are
    never reused: the next variable is the one after the last minted)."""
    s = Session()
    ref = s.dim_ref("h")
    sc = traced(
        s,
        lambda xs: [
            s.einsum("y", "h;h=>h", xs[0], s.leaf("three", "3"), capture_dims=[ref])
        ],
    )
    assert (sc.generalized, sc.fixed) == ((), ())
    x = s.leaf("x", "3")
    before = s.fresh_dim_var().id
    scheme.check(sc, application="probe", args=[x])
    assert s.fresh_dim_var().id == before + 1
    assert (ref.var, ref.size) == (None, None)


def test_no_generalization_never_lowers_a_template_depth() -> None:
    """Sabotaged, the applications share the scheme's own rows, so the
    depth the scheme gives its row (1: y's output tail) can meet a depth the
    session raised meanwhile: tying the row to q's output tail (depth 3, the
    three axes of ``->5,4,3`` it was templated behind) raises it to 3. The
    next application keeps 3: a depth only grows (it bounds the axes later
    templates may add)."""
    s = Session()
    sc = traced(s, lambda xs: [s.pointwise("y", xs[0], s.leaf("c", "->3"))])
    ((var, gen),) = sc.gens
    sabotage = Sabotage.NO_GENERALIZATION
    scheme.instantiate(
        sc,
        application="a0",
        args=[s.fresh("x0")],
        results=[s.fresh("r0")],
        sabotage=sabotage,
    )
    q = s.pointwise("q", s.fresh("u"), s.leaf("e", "->5,4,3"))
    tail = q.shape.current()[2].var
    assert tail is not None
    row_gen = s.state()["row_gen"]
    assert (gen, row_gen[var.id], row_gen[tail.id]) == (1, 1, 3)
    s.add(RowEq(Row((), tail), Row((), var), Origin("tie", "q")))
    assert s.state()["row_gen"][var.id] == 3
    scheme.instantiate(
        sc,
        application="a1",
        args=[s.fresh("x1")],
        results=[s.fresh("r1")],
        sabotage=sabotage,
    )
    assert s.state()["row_gen"][var.id] == 3


def _two_chains(s: Session, xs: Sequence[Tensor]) -> list[Tensor]:
    """Two internal tensors templated behind 1 and 3 axes from the first
    argument, and the result templated behind 1 axis from the second."""
    a = s.pointwise("a", xs[0], s.leaf("c", "->3"))
    s.pointwise("b", a, s.leaf("d", "->5,4,3"))
    return [s.pointwise("out", xs[1], s.leaf("e", "->2"))]


def test_rows_after_presolved_ones_still_get_their_template_depths() -> None:
    """On a concrete first argument the application presolves the internal
    rows (their depths are moot); the result's open output tail still gets
    the depth re-running the body gives it (1: templated behind ``2``)."""
    s = Session()
    sc = traced(s, lambda xs: _two_chains(s, xs), arity=2)
    assert [gen for _, gen in sc.gens] == [1, 3, 1]
    out = s.fresh("out")
    scheme.instantiate(
        sc, application="call", args=[s.leaf("x", "2|->3"), s.fresh("z")], results=[out]
    )
    tail = out.shape.current()[2].var
    assert tail is not None

    again = Session()
    (rerun,) = _two_chains(again, [again.leaf("x", "2|->3"), again.fresh("z")])
    rerun_tail = rerun.shape.current()[2].var
    assert rerun_tail is not None
    depth_through_scheme = s.state()["row_gen"].get(tail.id)
    assert depth_through_scheme == again.state()["row_gen"].get(rerun_tail.id) == 1


def _template_into_anchor(s: Session) -> tuple[Tensor, Scheme]:
    """The oracle's ``TEMPLATE_UNIFIED_INTO_ANCHOR``: the trace unified the
    row an operation's template would have had (re-running the body on a
    one-axis batch row makes one) into the parameter's open batch tail."""
    w0 = s.param("w0", "...,1,2|...->1,2")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        a0, a1 = xs
        v0 = s.pointwise("v0", a1, a1, a0)
        v1 = s.pointwise("v1", w0)
        s.einsum("v2", "...|ij;...|jk=>...|ik", v0, w0)
        s.pointwise("v3", a0, v1, a0)
        s.pointwise("v4", a0)
        return [w0, a1]

    return w0, traced(s, body, arity=2)


def _marks_written(s: Session, start: int) -> list[str]:
    return [str(c) for c in s.log[start:] if type(c) is PolicyMark]


def test_a_templated_tail_takes_its_safe_to_guess_mark_after_the_schemes_marks() -> (
    None
):
    """The tail the trace unified away takes ``safe_to_guess`` at an
    application whose argument row has the axis (after the scheme's own
    marks, on the row it also marks ``used_in_spec_or_compose``); sabotaged
    (no generalization), on the scheme's own variable."""
    s = Session(keep_log=True)
    _, sc = _template_into_anchor(s)
    start = len(s.log)
    args = [s.leaf("x0"), s.leaf("x1", "1|->")]
    scheme.instantiate(
        sc, application="c0", args=args, results=[s.fresh("y0"), s.fresh("y1")]
    )
    written = _marks_written(s, start)
    where = "(policy mark 'f' in shape scheme f at application 'c0')"
    assert [line.split()[0] for line in written] == [
        "used_in_spec_or_compose",
        *["safe_to_guess"] * 5,
    ]
    templated = written[0].split()[1]
    assert written[-1] == f"safe_to_guess {templated}  {where}"

    s = Session(keep_log=True)
    _, sc = _template_into_anchor(s)
    own = sc.marks[0][0]
    start = len(s.log)
    args = [s.leaf("x0"), s.leaf("x1", "1|->")]
    scheme.instantiate(
        sc,
        application="c0",
        args=args,
        results=[s.fresh("y0"), s.fresh("y1")],
        sabotage=Sabotage.NO_GENERALIZATION,
    )
    assert _marks_written(s, start)[-1] == f"safe_to_guess [...{own!r}]  {where}"
    representative = s.solver.norm_row(Row((), own)).var
    assert representative is not None
    assert Mark.SAFE_TO_GUESS in s.solver.marks(representative)


def test_an_untemplated_tail_skips_only_its_own_safe_to_guess_mark() -> None:
    """The tracer's input tail is safe to guess; the argument's input row
    already has the axis, so that one mark is not written (re-running the
    body makes no template there) and every later mark still is."""
    s = Session(keep_log=True)
    w0 = s.param("w0", "...,1|...,1->...,1")
    sc = traced(
        s, lambda xs: [s.compose("v0", xs[0], w0), s.pointwise("p", xs[0])], arity=1
    )
    assert sc.marks[0][1] is Mark.SAFE_TO_GUESS
    start = len(s.log)
    scheme.instantiate(
        sc,
        application="c0",
        args=[s.leaf("x", "...|...,1->...")],
        results=[s.fresh("y"), s.fresh("z")],
    )
    written = [line.split()[0] for line in _marks_written(s, start)]
    assert written == [mark.value for _, mark in sc.marks[1:]]


def test_a_row_templated_from_two_arguments_takes_its_mark_once() -> None:
    """Both arguments of ``v0`` have the batch axis the trace's tails lack,
    so two inequalities make the same row a templated tail: it is marked
    ``safe_to_guess`` once."""
    s = Session(keep_log=True)
    w0 = s.param("w0", "...,1,2|...->1,2")

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        a0, a1, a2 = xs
        v0 = s.pointwise("v0", a1, a2, a0)
        v1 = s.pointwise("v1", w0)
        s.einsum("v2", "...|ij;...|jk=>...|ik", v0, w0)
        s.pointwise("v3", a0, v1, a0)
        return [w0, a1]

    sc = traced(s, body, arity=3)
    start = len(s.log)
    args = [s.leaf("x0"), s.leaf("x1", "1|->"), s.leaf("x2", "1|->")]
    scheme.instantiate(
        sc, application="c0", args=args, results=[s.fresh("y0"), s.fresh("y1")]
    )
    written = _marks_written(s, start)
    templated = written[0].split()[1]  # the row marked used_in_spec_or_compose
    assert [line.split()[:2] for line in written].count(
        ["safe_to_guess", templated]
    ) == 1
    # The scheme's marks but v1's and v3's (their rows are presolved), and
    # the templated row's.
    assert len(written) == len(sc.marks) - 2 + 1
