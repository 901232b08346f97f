"""Presolving: an application solves the scheme's internal-only rows outright.

The soundness oracle (``test_schemes_oracle``) compares every application with
re-evaluating the body, presolved or not; these tests pin down when presolving
happens, that a clash falls back to the full application (and its error), that
the join is the right one (against brute force), and that the oracle catches a
wrong join (a negative control).
"""

from __future__ import annotations

import dataclasses
import itertools
import weakref
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import axisflow.shapes.scheme.apply as apply_module
import axisflow.shapes.scheme.presolve as scheme_module
from axisflow.shapes import Session, ShapeError, Tensor, scheme
from axisflow.shapes.constraints import Mark
from axisflow.shapes.terms import Row, Size
from tests.shapes.test_schemes_oracle import (
    ANCHOR_ABOVE_PRESOLVED,
    CLOSED_ROW_TOO_SHORT,
    PARAMETER_ABOVE_PRESOLVED,
    RESULT_MERGED_WITH_PRESOLVED,
    RESULT_TAIL_MERGED_WITH_PRESOLVED,
    RESULT_TAIL_WITH_A_LONGER_ROW_ABOVE,
    SIZE_WRITTEN_IN_A_ROW,
    TIED_CHAIN_OF_TWO,
    TRACER_TEMPLATE_MARK,
    Op,
    Program,
    run,
)


def residual(s: Session, x: Tensor, w: Tensor) -> list[Tensor]:
    h = s.compose("h", w, x)
    a = s.pointwise("a", h)
    sq = s.pointwise("sq", a, a)
    return [s.pointwise("out", s.transpose("t", s.transpose("t0", sq)), h)]


def traced(s: Session) -> tuple[scheme.Scheme, Tensor]:
    w = s.param("w", "8->8")
    with s.rewind():
        mark = s.var_mark()
        x = s.fresh("x")
        sc = scheme.trace(
            s, var_mark=mark, label="block", args=[x], f=lambda: residual(s, x, w)
        )
    return sc, w


def internal_rows_open(applied: scheme.Application) -> list[str]:
    return [
        shape.name
        for shape in applied.internal
        if not all(row.is_concrete() for row in shape.rows())
    ]


def test_concrete_arguments_presolve_the_internal_rows() -> None:
    s = Session()
    sc, _ = traced(s)
    plan = scheme_module.presolve_plan(sc)
    assert plan is not None
    logged = len(s.log)
    applied = scheme.instantiate(
        sc, application="c", args=[s.leaf("x1", "5|->8")], results=[s.fresh("y")]
    )
    # Every internal row is solved at once (the result's rows stay open: a
    # later constraint may still reach them) ...
    assert internal_rows_open(applied) == ["out"]
    assert [shape.rows()[0] for shape in applied.internal[:-1]] == [Row((Size(5),))] * (
        len(applied.internal) - 1
    )
    # ... and their inequalities are not added.
    presolvable = sum(1 for var in plan.skipped if var is not None)
    assert presolvable > 0
    assert len(s.log) - logged < len(sc.facts) + 3 * 2


def test_open_arguments_and_windows_do_not_presolve() -> None:
    s = Session()
    sc, _ = traced(s)
    applied = scheme.instantiate(
        sc, application="c", args=[s.fresh("x1")], results=[s.fresh("y")]
    )
    assert "h" in internal_rows_open(applied)
    with s.rewind():
        inside = scheme.instantiate(
            sc, application="d", args=[s.leaf("x2", "5|->8")], results=[s.fresh("z")]
        )
        assert "h" in internal_rows_open(inside)
    # With a sabotage the mechanism runs as written, unpresolved.
    sabotaged = scheme.instantiate(
        sc,
        application="e",
        args=[s.leaf("x3", "5|->8")],
        results=[s.fresh("v")],
        sabotage=scheme.Sabotage.NO_MARKS,
    )
    assert "h" in internal_rows_open(sabotaged)


def test_presolved_and_re_evaluated_applications_close_alike() -> None:
    specs = ["5|->8", "1|->8", "2,5|->8", "|->8", "8|->8"]
    s = Session()
    sc, w = traced(s)
    results = []
    for index, spec in enumerate(specs):
        y = s.fresh(f"y{index}")
        scheme.instantiate(
            sc, application=f"c{index}", args=[s.leaf(f"x{index}", spec)], results=[y]
        )
        results.append(y)
    s.close()
    reference = Session()
    w_ref = reference.param("w", "8->8")
    expected = [
        residual(reference, reference.leaf(f"x{index}", spec), w_ref)[0]
        for index, spec in enumerate(specs)
    ]
    reference.close()
    assert [y.shape.dims() for y in results] == [t.shape.dims() for t in expected]
    assert w.shape.dims() == w_ref.shape.dims()


def two_operand_body(s: Session, a: Tensor, b: Tensor) -> list[Tensor]:
    return [s.transpose("t", s.pointwise("h", a, b))]


def test_a_clash_of_presolved_bounds_fails_as_re_evaluation_does() -> None:
    s = Session()
    with s.rewind():
        mark = s.var_mark()
        a, b = s.fresh("a"), s.fresh("b")
        sc = scheme.trace(
            s,
            var_mark=mark,
            label="f",
            args=[a, b],
            f=lambda: two_operand_body(s, a, b),
        )
    with pytest.raises(ShapeError) as through_scheme:
        scheme.instantiate(
            sc,
            application="c",
            args=[s.leaf("x", "2|->4"), s.leaf("z", "3|->4")],
            results=[s.fresh("y")],
        )
    reference = Session()
    with pytest.raises(ShapeError) as re_evaluated:
        two_operand_body(
            reference, reference.leaf("x", "2|->4"), reference.leaf("z", "3|->4")
        )
    prefix = "applying the shape scheme f to c: pointwise 'h' of x, z in shape scheme f at application 'c'"
    detail = str(re_evaluated.value).split(": ", 1)[1]
    assert str(through_scheme.value) == f"{prefix}: {detail}"


# ------------------------------------------------------------ the join itself


def broadcasts_to(row: tuple[int, ...], target: tuple[int, ...]) -> bool:
    if len(row) > len(target):
        return False
    tail = target[len(target) - len(row) :]
    return all(d == 1 or d == t for d, t in zip(row, tail, strict=True))


def brute_force_join(rows: Sequence[tuple[int, ...]]) -> tuple[int, ...] | None:
    """The shortest row with the most 1s that every row broadcasts to."""
    length = max((len(r) for r in rows), default=0)
    values = sorted({d for r in rows for d in r} | {1})
    fitting = [
        candidate
        for candidate in itertools.product(values, repeat=length)
        if all(broadcasts_to(r, candidate) for r in rows)
    ]
    if not fitting:
        return None
    return max(fitting, key=lambda candidate: candidate.count(1))


size_rows = st.lists(st.sampled_from((1, 2, 3)), max_size=3).map(tuple)


@settings(max_examples=300, deadline=None)
@given(st.lists(size_rows, min_size=1, max_size=4))
def test_the_join_is_the_least_row_every_bound_broadcasts_to(
    rows: list[tuple[int, ...]],
) -> None:
    joined = scheme_module.join_concrete([Row(tuple(Size(n) for n in r)) for r in rows])
    expected = brute_force_join(rows)
    if expected is None:
        assert joined is None
    else:
        assert joined is not None
        assert tuple(d.n for d in joined.dims) == expected  # type: ignore[union-attr]


ALL_SHORT_ROWS = [
    row for length in range(3) for row in itertools.product((1, 2, 3), repeat=length)
]


@pytest.mark.parametrize("first", ALL_SHORT_ROWS)
def test_the_join_of_every_pair_of_short_rows_is_the_brute_force_one(
    first: tuple[int, ...],
) -> None:
    """Exhaustive over rows of up to two sizes from {1, 2, 3}, alone and in
    pairs (the deterministic counterpart of the search above)."""
    for rows in [[first]] + [[first, second] for second in ALL_SHORT_ROWS]:
        joined = scheme_module.join_concrete(
            [Row(tuple(Size(n) for n in r)) for r in rows]
        )
        expected = brute_force_join(rows)
        if expected is None:
            assert joined is None, rows
        else:
            assert joined is not None, rows
            assert tuple(d.n for d in joined.dims) == expected, rows  # type: ignore[union-attr]


def test_the_oracle_catches_a_wrong_join(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: presolving to the first bound instead of the join.
    The result broadcasts from two rows (the sum and its transpose), so the
    sum's rows are presolved outright (not tied to the result's: their
    inequalities are skipped and nothing checks the presolved value)."""
    program = Program(
        anchors=(),
        arity=2,
        body=(Op("pointwise", (0, 1)), Op("transpose", (2,)), Op("pointwise", (3, 2))),
        results=(4,),
        calls=((("leaf", "3|->4"), ("leaf", "2,3|->4")),),
        close_before=(False,),
        set_dim=None,
    )
    expected = run(program, through_schemes=False)
    assert run(program, through_schemes=True) == expected
    monkeypatch.setattr(scheme_module, "join_concrete", lambda rows: rows[0])
    assert run(program, through_schemes=True) != expected


@pytest.mark.parametrize("program", [ANCHOR_ABOVE_PRESOLVED, PARAMETER_ABOVE_PRESOLVED])
def test_a_row_below_an_open_anchor_row_is_not_presolved(
    program: Program, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An internal row that broadcasts to a row that also broadcasts from an
    open anchor row (a leaf without spec, a parameter with open rows) is left
    to the closing, which reads it; presolved anyway (no guards), the
    application disagrees with re-evaluation."""
    expected = run(program, through_schemes=False)
    assert run(program, through_schemes=True) == expected
    monkeypatch.setattr(
        scheme_module,
        "_guards",
        lambda candidates, results_above, anchored, above, below: {
            var: frozenset() for var in candidates
        },
    )
    assert run(program, through_schemes=True) != expected


def test_the_guards_name_what_lies_above() -> None:
    """In the residual block every internal row is presolvable: the rows
    above them are internal or the result's, and the guards of the first
    internal rows include the argument's rows they are ultimately joined
    with."""
    s = Session()
    sc, _ = traced(s)
    plan = scheme_module.presolve_plan(sc)
    assert plan is not None
    assert len(plan.guards) == len(plan.order)
    order = [var for var, _bounds, _gen in plan.order]
    # Every guard is a source or another presolvable variable.
    sources = plan.source_vars
    assert all(g in sources or g in order for guards in plan.guards for g in guards)
    assert any(guards for guards in plan.guards)


def test_a_tracer_template_mark_is_not_given_to_a_longer_argument(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The tracer's input row took a template whose tail is safe to guess;
    the argument's row already has that axis, so re-evaluation makes no
    template and the closing refuses to guess the parameter's output row.
    Written anyway (the boundary equality passing the tracer's mark to the
    argument's tail), the application closes where re-evaluation fails."""
    expected = run(TRACER_TEMPLATE_MARK, through_schemes=False)
    assert expected == ("closing failed",)
    assert run(TRACER_TEMPLATE_MARK, through_schemes=True) == expected
    monkeypatch.setattr(
        apply_module,
        "_untemplated_tails",
        lambda sc, args, sabotages, norm_row: frozenset(),
    )
    assert run(TRACER_TEMPLATE_MARK, through_schemes=True) != expected


@pytest.mark.parametrize("program", [CLOSED_ROW_TOO_SHORT, SIZE_WRITTEN_IN_A_ROW])
def test_presolving_keeps_stage_1_errors_of_the_inequalities_it_skips(
    program: Program, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An inequality into a closed row, or into a row that writes a size,
    whose operand does not fit is Stage 1's error; presolving the row's
    variables skips the inequality, so the plan checks it (``closed``,
    ``fixed``). Without those checks the application passes where
    re-evaluation fails."""
    expected = run(program, through_schemes=False)
    assert expected == ("failed at call", 0)
    assert run(program, through_schemes=True) == expected
    real_plan = scheme_module.plan_presolve

    def unchecked(sc: scheme.Scheme) -> scheme_module.Presolve | None:
        plan = real_plan(sc)
        return None if plan is None else dataclasses.replace(plan, closed=(), fixed=())

    monkeypatch.setattr(scheme_module, "plan_presolve", unchecked)
    assert_disagrees(monkeypatch, program, expected)


def attention(s: Session, x: Tensor, w_q: Tensor, w_k: Tensor) -> list[Tensor]:
    q, k = s.compose("q", w_q, x), s.compose("k", w_k, x)
    scores = s.einsum("scores", " ... s | h d; ... t | h d => ... s | t -> h", q, k)
    shifted = s.pointwise(
        "shifted", scores, s.einsum("max", "...|t->...=>...|0->...", scores)
    )
    return [s.pointwise("exp", shifted)]


def assert_disagrees(
    monkeypatch: pytest.MonkeyPatch, program: Program, expected: object
) -> None:
    """With the sabotage ``monkeypatch`` holds, the program's application
    disagrees with re-evaluation's ``expected`` (the plans made before
    are forgotten, so the sabotage reaches every scheme)."""
    monkeypatch.setattr(scheme_module, "_PLANS", weakref.WeakKeyDictionary())
    try:
        outcome: object = run(program, through_schemes=True)
    except AssertionError as error:  # the oracle's own check: check vs instantiate
        outcome = str(error)
    assert outcome != expected


def traced_attention(s: Session) -> scheme.Scheme:
    """Attention's scheme, its weights declared ``8->2,4`` in ``s``."""
    w_q, w_k = s.param("w_q", "8->2,4"), s.param("w_k", "8->2,4")
    with s.rewind():
        mark = s.var_mark()
        x = s.fresh("x")
        return scheme.trace(
            s,
            var_mark=mark,
            label="attn",
            args=[x],
            f=lambda: attention(s, x, w_q, w_k),
        )


def test_dims_and_rows_with_axes_presolve() -> None:
    """Attention's batch rows end with the sequence axis (``... s``): rows
    with an axis after their variable, and dims between them. With concrete
    weights and data every axis is presolved right after the application,
    as closing would make it; the rows that closing's single-neighbour
    merges chain to the result's (``exp``'s rows broadcast from
    ``shifted``'s alone, ``shifted``'s batch row from the one batch row
    ``q``, ``k``, ``scores`` and ``max`` share) keep an open tail, as
    re-evaluation's templates do: a caller may still give the result's rows
    leading axes, and re-evaluation would give them to all of these."""
    s = Session()
    sc = traced_attention(s)
    plan = scheme_module.presolve_plan(sc)
    assert plan is not None
    kinds = {type(var).__name__ for var, _bounds, _limit in plan.order}
    assert kinds == {"DimVar", "RowVar"}
    applied = scheme.instantiate(
        sc, application="c", args=[s.leaf("x1", "3,5|->8")], results=[s.fresh("y")]
    )
    assert internal_rows_open(applied) == [
        "q",
        "k",
        "scores",
        "max",
        "shifted",
        "exp",
    ]
    shared_batch = {shape.rows()[0] for shape in applied.internal[:4]}
    assert len(shared_batch) == 1
    (batch,) = shared_batch
    assert batch.var is not None and batch.dims == (Size(3), Size(5))
    assert all(
        row.is_concrete() for shape in applied.internal[:4] for row in shape.rows()[1:]
    )
    tail_vars = {row.var for row in applied.internal[-2].rows()[1:]}
    assert None not in tail_vars and len(tail_vars) == 2
    assert [row.dims for row in applied.internal[-2].rows()[1:]] == [
        (Size(5),),
        (Size(2),),
    ]
    s.close()
    reference = Session()
    (expected,) = attention(
        reference,
        reference.leaf("x1", "3,5|->8"),
        reference.param("w_q", "8->2,4"),
        reference.param("w_k", "8->2,4"),
    )
    reference.close()
    assert applied.internal[-1].dims() == expected.shape.dims()


def test_the_inequality_between_two_tied_tails_is_kept(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A chain of two tied rows: the application keeps the inequality that
    relates their template tails, which carries the result's later axes
    down the chain (negative control: skipping it as if both rows were
    presolved outright disagrees)."""
    program = TIED_CHAIN_OF_TWO
    expected = run(program, through_schemes=False)
    assert run(program, through_schemes=True) == expected
    real_facts = apply_module.facts_to_add

    def untied_facts(
        sc: scheme.Scheme,
        pre: scheme_module.Presolve | None,
        solved: dict[Any, Any],
    ) -> Any:
        templated = getattr(solved, "templated", None)
        if not templated:
            return real_facts(sc, pre, solved)
        kept = dict(templated)
        templated.clear()  # the facts read as if nothing were templated
        try:
            return real_facts(sc, pre, solved)
        finally:
            templated.update(kept)

    monkeypatch.setattr(apply_module, "facts_to_add", untied_facts)
    assert_disagrees(monkeypatch, program, expected)


def test_a_row_the_results_tail_may_take_is_not_presolved_beside_a_longer_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A row the result broadcasts from alone, which also broadcasts to a
    longer row, is left to the application's inequalities (negative
    control: presolving it, as a template or outright, disagrees)."""
    program = RESULT_TAIL_WITH_A_LONGER_ROW_ABOVE
    expected = run(program, through_schemes=False)
    assert run(program, through_schemes=True) == expected
    real_tied = scheme_module._tied  # pyright: ignore[reportPrivateUsage]

    def presolving_shared(*args: Any) -> tuple[set[Any], set[Any]]:
        tied, _shared = real_tied(*args)
        return tied, set()

    monkeypatch.setattr(scheme_module, "_tied", presolving_shared)
    assert_disagrees(monkeypatch, program, expected)


def test_a_tied_rows_tail_has_the_template_depth_and_marks_stage_1_gives_it() -> None:
    """The shared batch row of attention's q, k, scores and max is tied to
    the result's: the application mints its tail with the template depth
    and policy marks Stage 1 gives the tail of that row when nothing is
    presolved (the same application inside a rewind window): the scheme's
    depth of the row plus its one presolved axis, safe to guess."""
    s = Session()
    sc = traced_attention(s)

    def batch_tail() -> tuple[int, frozenset[object]]:
        applied = scheme.instantiate(
            sc,
            application="c",
            args=[s.leaf("x1", "3,5|->8")],
            results=[s.fresh("y")],
        )
        batch = s.solver.norm_row(applied.internal[0].rows()[0])
        assert batch.dims == (Size(3), Size(5)) and batch.var is not None
        return s.solver.template_depth(batch.var.id), s.solver.marks(batch.var)

    with s.rewind():  # nothing is presolved in a window
        unpresolved = batch_tail()
    plan = scheme_module.presolve_plan(sc)
    assert plan is not None and plan.tied  # the row is presolved as a template
    assert batch_tail() == unpresolved
    assert unpresolved[0] == 1 and Mark.SAFE_TO_GUESS in unpresolved[1]


@pytest.mark.parametrize(
    "program",
    [RESULT_MERGED_WITH_PRESOLVED, RESULT_TAIL_MERGED_WITH_PRESOLVED],
    ids=["no axes", "a template"],
)
def test_a_row_tied_to_the_result_keeps_its_tail_open(
    program: Program, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The soak's programs: the result broadcasts only from an internal row
    (bounds without axes; bounds with axes, through a transpose).
    Re-evaluation leaves that row bare, or its template's tail, until
    closing merges it with the result's, to which the caller later gives
    axes (the next call's total; the next call, merged on with rows an open
    anchor's closing sizes); presolving it outright cuts the tie (negative
    control: without ``tied`` the application disagrees)."""
    expected = run(program, through_schemes=False)
    assert run(program, through_schemes=True) == expected
    real_plan = scheme_module.plan_presolve

    def untied(sc: scheme.Scheme) -> scheme_module.Presolve | None:
        plan = real_plan(sc)
        return None if plan is None else dataclasses.replace(plan, tied=frozenset())

    monkeypatch.setattr(scheme_module, "plan_presolve", untied)
    assert_disagrees(monkeypatch, program, expected)


def test_a_presolved_application_registers_only_its_open_internal_shapes() -> None:
    s = Session()
    sc, _ = traced(s)
    applied = scheme.instantiate(
        sc, application="c", args=[s.leaf("x1", "5|->8")], results=[s.fresh("y")]
    )
    # The internal shapes presolving made concrete leave the closing nothing
    # to decide: only the open one (tied to the result) is registered.
    assert [shape.name for shape in applied.internal if s.is_registered(shape)] == [
        "out"
    ]
    # With an open argument, and in a rewind window (a trace reads what its
    # window registers), every internal shape is registered.
    unsolved = scheme.instantiate(
        sc, application="d", args=[s.fresh("x2")], results=[s.fresh("z")]
    )
    assert all(s.is_registered(shape) for shape in unsolved.internal)
    with s.rewind():
        inside = scheme.instantiate(
            sc, application="e", args=[s.leaf("x3", "5|->8")], results=[s.fresh("v")]
        )
        assert all(s.is_registered(shape) for shape in inside.internal)
    s.close()
    assert [shape.dims()[0] for shape in applied.internal] == [(5,)] * len(
        applied.internal
    )


def test_a_concrete_padded_internal_shape_is_registered_for_its_margins() -> None:
    """A constant image inside the function, convolved with the argument:
    concrete at every application, yet registered, so that the closing
    publishes its margins as it does for the einsum's own image."""
    s = Session()
    with s.rewind():
        mark = s.var_mark()
        kernel = s.fresh("kernel")

        def body() -> list[Tensor]:
            image = s.leaf("image", "4|8")
            return [s.einsum("y", "... | 2*o=+k; k => ... | o", image, kernel)]

        sc = scheme.trace(s, var_mark=mark, label="conv", args=[kernel], f=body)
    applied = scheme.instantiate(
        sc, application="c", args=[s.leaf("k", "3")], results=[s.fresh("y")]
    )
    (image,) = [shape for shape in applied.internal if shape.name == "image"]
    assert all(row.is_concrete() for row in image.rows())
    assert s.is_registered(image)
    s.close()
    reference = Session()
    expected = reference.leaf("image", "4|8")
    reference.einsum(
        "y", "... | 2*o=+k; k => ... | o", expected, reference.leaf("k", "3")
    )
    reference.close()
    assert image.padding("output") == expected.shape.padding("output") == ((1, 2),)
