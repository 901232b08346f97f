"""Presolving (``scheme/presolve.py``) rule by rule, on schemes written as text.

Which variables a plan presolves (and which it blocks: a fixed-index minimum
above 1, a loose term, a padded axis's kernel, a capture input, which is a
source instead), the bounds it reads (an axis from the right of a longer
operand, a dim inequality with a size on its result side), the facts it
skips, what an application solves from concrete sources (a capture input
whose reference has a size), dropping what an unknown guard leaves
unsettled, and the size join itself.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from axisflow.shapes import DimVar, RowVar, Scheme, Session, Size, Tensor, scheme
from axisflow.shapes.scheme import presolve as P
from axisflow.shapes.scheme.read import build_scheme
from axisflow.shapes.scheme.text import parse_scheme_text
from axisflow.shapes.tensors import Shape
from axisflow.shapes.terms import Kind, Row
from tests.shapes.test_schemes import traced

ORIGIN = "('op' 't')"


def text_scheme(
    s: Session,
    lines: list[str],
    anchors: tuple[str, ...] = (),
    anchor_tensors: list[Tensor] | None = None,
) -> tuple[Scheme, dict[str, DimVar | RowVar]]:
    """A scheme from its text form, and its variables by their text names
    (``anchors``: ``name=spec`` of each anchor leaf, made in ``s`` and
    appended to ``anchor_tensors`` when given)."""
    made = [s.leaf(name, spec) for name, spec in (a.split("=") for a in anchors)]
    if anchor_tensors is not None:
        anchor_tensors.extend(made)
    sc = build_scheme(
        parse_scheme_text(lines),
        session=s,
        label="f",
        anchors=[tensor.shape for tensor in made],
        ref=s.dim_ref,
        old_dim=DimVar,
        old_row=RowVar,
    )
    dims = [v for v in (*sc.generalized, *sc.fixed) if type(v) is DimVar]
    rows = [v for v in (*sc.generalized, *sc.fixed) if type(v) is RowVar]
    names: dict[str, DimVar | RowVar] = {f"d{i + 1}": v for i, v in enumerate(dims)}
    names.update({f"r{i + 1}": v for i, v in enumerate(rows)})
    return sc, names


def presolvable(sc: Scheme, names: dict[str, DimVar | RowVar]) -> list[str]:
    plan = P.plan_presolve(sc)
    by_var = {v: n for n, v in names.items()}
    return [] if plan is None else sorted(by_var[v] for v, _b, _l in plan.order)


# One argument whose output row is the source [...r1], and an internal
# shape [...r2, d1, d2] that the argument broadcasts to.
AXES = [
    "generalized r1, r2, d1, d2",
    "fixed (none)",
    "arg 0 'x' [] | [] -> [...r1]",
    "result 0 'y' [] | [] -> []",
    "internal 0 'h' [] | [] -> [...r2, d1, d2]",
    f"ineq [...r2, d1, d2] <= [...r1] {ORIGIN}",
]


def open_results(sc: Scheme) -> tuple[Shape, ...]:
    """Result shapes for an application, open as a call's results are."""
    return tuple(sc.session.fresh(f"y{i}").shape for i in range(sc.num_results))


def presolved_candidates(
    sc: Scheme,
    plan: P.Presolve,
    args: tuple[Shape, ...],
    norm: Callable[[Row], Row],
) -> dict[DimVar | RowVar, object]:
    """What an application presolves, less the boundary variables it
    settles (read off the concrete argument rows)."""
    solved = P.presolved(sc, plan, args, open_results(sc), norm)
    return {var: value for var, value in solved.items() if var not in plan.settled}


def solved_for(sc: Scheme, spec: str) -> dict[DimVar | RowVar, object]:
    s = sc.session
    plan = P.plan_presolve(sc)
    assert plan is not None
    x = s.leaf("x", spec)
    return presolved_candidates(sc, plan, (x.shape,), s.solver.norm_row)


def test_the_axes_of_a_longer_operand_go_to_the_dims_from_the_right() -> None:
    s = Session()
    sc, v = text_scheme(s, AXES)
    assert presolvable(sc, v) == ["d1", "d2", "r2"]
    solved = solved_for(sc, "3,4,5")
    assert solved == {v["r2"]: Row((Size(3),)), v["d1"]: Size(4), v["d2"]: Size(5)}
    # A shorter operand: the first dim has no bound, and takes 1.
    solved = solved_for(sc, "7")
    assert solved == {v["r2"]: Row(()), v["d1"]: Size(1), v["d2"]: Size(7)}


def test_a_fixed_index_minimum_above_one_blocks_a_dim() -> None:
    s = Session()
    sc, v = text_scheme(
        s, [*AXES, f"at_least d1 2 {ORIGIN}", f"at_least d2 1 {ORIGIN}"]
    )
    assert presolvable(sc, v) == ["d2", "r2"]
    plan = P.plan_presolve(sc)
    assert plan is not None
    # The inequality bounds d1 too (not presolved): it is not skipped; the
    # minimum of 1 on d2 holds once d2 is presolved.
    assert plan.skipped == (None, None, (v["d2"],))


def test_loose_terms_and_padded_kernels_are_blocked() -> None:
    s = Session()
    old = s.fresh_dim_var()
    sc, v = text_scheme(
        s,
        [
            *AXES,
            f"pad internal 0 output -1 d2 {ORIGIN}",
            f"loose d1 = old d{old.id}",
        ],
    )
    assert presolvable(sc, v) == ["r2"]


def test_a_dim_inequality_with_a_size_as_its_result_bounds_nothing() -> None:
    """``4 <= d3`` only bounds the operand (presolving keeps it); the facts
    after it are read all the same."""
    s = Session()
    sc, v = text_scheme(
        s,
        [
            "generalized r1, d1, d2, d3",
            "fixed (none)",
            "arg 0 'x' [] | [] -> [...r1, d1]",
            "result 0 'y' [] | [] -> []",
            "internal 0 'h' [] | [] -> [d2, d3]",
            f"dim_ineq 4 <= d3 {ORIGIN}",
            f"dim_ineq d2 <= d1 {ORIGIN}",
        ],
    )
    assert presolvable(sc, v) == ["d2", "d3"]
    plan = P.plan_presolve(sc)
    assert plan is not None
    assert plan.skipped == (None, (v["d2"],))
    solved = solved_for(sc, "6")
    assert solved == {v["d2"]: Size(6), v["d3"]: Size(1)}


def test_a_capture_input_is_a_source_when_its_reference_has_a_size() -> None:
    s = Session()
    lines = [
        "generalized d1, d2",
        "fixed (none)",
        "arg 0 'x' [] | [] -> []",
        "result 0 'y' [] | [] -> []",
        "internal 0 'h' [] | [] -> [d2]",
        f"dim_ineq d2 <= d1 {ORIGIN}",
        f"capture 'h' d1 {ORIGIN}",
    ]
    sc, v = text_scheme(s, lines)
    plan = P.plan_presolve(sc)
    assert plan is not None
    assert [where for where, _ in plan.sources] == [(P.CAPTURE, 0, 0)]
    assert solved_for(sc, "") == {}  # the reference stands for nothing yet
    s.set_dim(sc.captures[0].ref, 5)
    assert solved_for(sc, "") == {v["d2"]: Size(5)}


def test_an_unknown_guard_drops_what_it_guards() -> None:
    """``r3`` lies above ``r2``, and also broadcasts from the argument's
    input row: when that row is open, ``r2`` is not presolved although its
    own bound is known (closing may read it through ``r3``), nor is ``r3``,
    nor ``r4`` above it."""
    s = Session()
    lines = [
        "generalized r1, r2, r3, r4, r5",
        "fixed (none)",
        "arg 0 'x' [] | [...r5] -> [...r1]",
        "result 0 'y' [] | [] -> []",
        "internal 0 'a' [] | [] -> [...r2]",
        "internal 1 'b' [] | [] -> [...r3]",
        "internal 2 'c' [] | [] -> [...r4]",
        f"ineq [...r2] <= [...r1] {ORIGIN}",
        f"ineq [...r3] <= [...r2] {ORIGIN}",
        f"ineq [...r3] <= [...r5] {ORIGIN}",
        f"ineq [...r4] <= [...r3] {ORIGIN}",
    ]
    sc, v = text_scheme(s, lines)
    assert presolvable(sc, v) == ["r2", "r3", "r4"]
    plan = P.plan_presolve(sc)
    assert plan is not None
    x = s.leaf("x", "...->2")
    assert presolved_candidates(sc, plan, (x.shape,), s.solver.norm_row) == {}
    z = s.leaf("z", "1,1->2")
    assert presolved_candidates(sc, plan, (z.shape,), s.solver.norm_row) == {
        v["r2"]: Row((Size(2),)),
        v["r3"]: Row((Size(1), Size(2))),
        v["r4"]: Row((Size(1), Size(2))),
    }


@pytest.mark.parametrize(
    ("sizes", "joined"),
    [
        ((1, 1), Size(1)),
        ((1, 2, 1, 2), Size(2)),
        ((2, 3), None),
        ((Size(2, "t"), Size(2)), None),
        ((), Size(1)),
    ],
)
def test_the_size_join_is_the_one_size_other_than_one(
    sizes: tuple[int | Size, ...], joined: Size | None
) -> None:
    assert P.join_sizes(n if isinstance(n, Size) else Size(n) for n in sizes) == joined


def two_row_scheme(extra: list[str], arg_output: str = "[...r1, d1, d2]") -> list[str]:
    return [
        "generalized r1, r2, r3, d1, d2, d3, d4",
        "fixed (none)",
        f"arg 0 'x' [] | [] -> {arg_output}",
        "result 0 'y' [] | [] -> []",
        "internal 0 'h' [] | [] -> [...r2, d3]",
        "internal 1 'k' [] | [] -> [d4]",
        *extra,
    ]


def test_a_source_row_s_dims_are_read_from_the_right() -> None:
    """The argument's row [...r1, d1, d2] holds [3, 4, 5]: d1 = 4, d2 = 5,
    and what is bounded by them takes those sizes."""
    s = Session()
    sc, v = text_scheme(
        s,
        two_row_scheme([f"dim_ineq d3 <= d1 {ORIGIN}", f"dim_ineq d4 <= d2 {ORIGIN}"]),
    )
    solved = solved_for(sc, "3,4,5")
    assert (solved[v["d3"]], solved[v["d4"]]) == (Size(4), Size(5))


def test_an_operand_row_with_a_size_and_a_source_dim() -> None:
    """``[...r2, d3] <= [...r1, 4]``: the operand's value is the source's
    leading axes then the written 4; a result row that writes a size where
    the operand has another one is Stage 1's error (nothing presolved), one
    that writes the operand's size is not."""
    s = Session()
    lines = two_row_scheme([f"ineq [...r2, d3] <= [...r1, 4] {ORIGIN}"], "[...r1]")
    sc, v = text_scheme(s, lines)
    solved = solved_for(sc, "3")
    assert (solved[v["r2"]], solved[v["d3"]]) == (Row((Size(3),)), Size(4))
    s = Session()
    same, w = text_scheme(
        s, two_row_scheme([f"ineq [...r2, 4] <= [...r1] {ORIGIN}"], "[...r1]")
    )
    assert solved_for(same, "3,4")[w["r2"]] == Row((Size(3),))
    s = Session()
    clash, _ = text_scheme(
        s, two_row_scheme([f"ineq [...r2, 3] <= [...r1] {ORIGIN}"], "[...r1]")
    )
    assert solved_for(clash, "5,2") == {}
    s = Session()
    closed, u = text_scheme(
        s, two_row_scheme([f"ineq [d3, d4] <= [...r1] {ORIGIN}"], "[...r1]")
    )
    solved = solved_for(closed, "3,4")
    assert (solved[u["d3"]], solved[u["d4"]]) == (Size(3), Size(4))
    assert solved_for(closed, "2,3,4") == {}  # more axes than the closed row


def test_a_dim_two_arguments_share_is_read_once() -> None:
    """Two source rows hold the same variable (the function equates them):
    equal actual sizes presolve, unequal ones leave it to the application,
    which reports the boundary's error."""
    s = Session()
    sc, v = text_scheme(
        s,
        [
            "generalized d1, d2",
            "fixed (none)",
            "arg 0 'a' [] | [] -> [d1]",
            "arg 1 'b' [] | [] -> [d1]",
            "result 0 'y' [] | [] -> []",
            "internal 0 'h' [] | [] -> [d2]",
            f"dim_ineq d2 <= d1 {ORIGIN}",
        ],
    )
    plan = P.plan_presolve(sc)
    assert plan is not None
    a, b, c = s.leaf("a", "3"), s.leaf("b", "3"), s.leaf("c", "4")
    norm = s.solver.norm_row
    assert presolved_candidates(sc, plan, (a.shape, b.shape), norm) == {
        v["d2"]: Size(3)
    }
    assert presolved_candidates(sc, plan, (a.shape, c.shape), norm) == {}
    short = s.leaf("e", "")
    assert presolved_candidates(sc, plan, (short.shape, b.shape), norm) == {}


def test_a_count_dim_is_blocked() -> None:
    """A dim a total is counted by waits for the total: presolving it from
    its operand (1 here) would contradict the count."""
    s = Session()
    sc, v = text_scheme(
        s,
        [
            "generalized r1, d1, d2",
            "fixed (none)",
            "arg 0 'x' [] | [...r1] -> [d1]",
            "result 0 'y' [] | [] -> []",
            "internal 0 'h' [] | [] -> [d2]",
            f"dim_ineq d2 <= d1 {ORIGIN}",
            f"total [...r1] = d2 {ORIGIN}",
        ],
    )
    assert presolvable(sc, v) == []


# An argument x, an internal h below it and the anchor w above h (row and
# dim): the scheme of the anchor tests below.
BELOW_AN_ANCHOR = [
    "generalized r1, r2, d1, d2",
    "fixed r3, d3",
    "arg 0 'x' [] | [] -> [...r1, d1]",
    "result 0 'y' [] | [] -> []",
    "anchor 0 'w' [] | [] -> [...r3, d3]",
    "internal 0 'h' [] | [] -> [...r2, d2]",
    f"ineq [...r2] <= [...r1] {ORIGIN}",
    f"ineq [...r3] <= [...r2] {ORIGIN}",
    f"dim_ineq d2 <= d1 {ORIGIN}",
    f"dim_ineq d3 <= d2 {ORIGIN}",
]


def test_what_broadcasts_into_an_anchor_waits_for_the_anchor() -> None:
    """``r2`` and ``d2`` broadcast into the anchor's row and dim: while the
    anchor is open the closing reads them through it (a leaf row takes the
    bounds of the rows it broadcasts to), so they are presolved only at an
    application where the anchor's row is concrete (its variables guard
    them): here after the session closed it."""
    s = Session()
    sc, v = text_scheme(
        s,
        BELOW_AN_ANCHOR,
        anchors=("w=...->...",),
        anchor_tensors=(made := []),
    )
    assert presolvable(sc, v) == ["d2", "r2"]
    plan = P.plan_presolve(sc)
    assert plan is not None
    guards = {
        var: guard for (var, _, _), guard in zip(plan.order, plan.guards, strict=True)
    }
    assert v["r3"] in guards[v["r2"]] and v["d3"] in guards[v["d2"]]
    x = s.leaf("x", "->4")
    norm = s.solver.norm_row
    assert presolved_candidates(sc, plan, (x.shape,), norm) == {}  # the anchor is open
    (w,) = made
    s.pointwise("z", w, s.leaf("u", "->4"))  # w takes [4] when closed
    s.close()
    assert presolved_candidates(sc, plan, (x.shape,), norm) == {
        v["r2"]: Row(()),
        v["d2"]: Size(4),
    }


def test_concrete_boundary_rows_settle_their_variables() -> None:
    """The argument's and the anchor's variables are settled from their
    concrete actual rows (an application then mints none of them and writes
    no equality for them); an open anchor row settles nothing, and an
    argument row the scheme's row cannot hold settles nothing at all."""
    s = Session(keep_log=True)
    # The scheme of the test above without the row broadcasting into w.
    lines = [line for line in BELOW_AN_ANCHOR if not line.startswith("ineq [...r3]")]
    made: list[Tensor] = []
    sc, v = text_scheme(s, lines, anchors=("w=...->...",), anchor_tensors=made)
    plan = P.plan_presolve(sc)
    assert plan is not None
    assert plan.settled == {v["r1"], v["d1"], v["r3"], v["d3"]}
    norm = s.solver.norm_row
    x = s.leaf("x", "->2,4")
    solved = P.presolved(sc, plan, (x.shape,), open_results(sc), norm)
    assert {var: solved[var] for var in plan.settled if var in solved} == {
        v["r1"]: Row((Size(2),)),
        v["d1"]: Size(4),
    }  # w is open: r3, d3 stay to the application's equality
    assert (
        P.presolved(sc, plan, (s.leaf("e", "->").shape,), open_results(sc), norm) == {}
    )
    (w,) = made
    s.pointwise("z", w, s.leaf("u", "->3,4"))
    s.close()  # w's output row is now [3, 4]
    solved = P.presolved(sc, plan, (x.shape,), open_results(sc), norm)
    assert solved[v["r3"]] == Row((Size(3),)) and solved[v["d3"]] == Size(4)
    start = len(s.log)
    applied = scheme.instantiate(
        sc, application="a", args=[s.leaf("x2", "->2,4")], results=[s.fresh("y")]
    )
    written = {c.origin.operation for c in s.log[start:]}
    assert "argument" not in written and "anchor" not in written
    assert "result" in written
    assert applied.internal[0].row(Kind.OUTPUT) == Row((Size(2), Size(4)))


def test_a_result_above_needs_what_it_broadcasts_from() -> None:
    """The result's row lies above ``r2`` and also broadcasts from the
    argument's input row: ``r2`` is presolved only when that row is known."""
    s = Session()
    sc, v = text_scheme(
        s,
        [
            "generalized r1, r2, r3, r4, d1, d2, d3, d4",
            "fixed (none)",
            "arg 0 'x' [] | [...r4, d3] -> [...r1, d1]",
            "result 0 'y' [] | [] -> [...r3, d2]",
            "internal 0 'h' [] | [] -> [...r2]",
            "internal 1 'k' [] | [] -> [d4]",
            f"ineq [...r2] <= [...r1] {ORIGIN}",
            f"ineq [...r3] <= [...r2] {ORIGIN}",
            f"ineq [...r3] <= [...r4] {ORIGIN}",
            f"dim_ineq d4 <= d1 {ORIGIN}",
            f"dim_ineq d2 <= d4 {ORIGIN}",
            f"dim_ineq d2 <= d3 {ORIGIN}",
        ],
    )
    assert presolvable(sc, v) == ["d4", "r2"]
    plan = P.plan_presolve(sc)
    assert plan is not None
    norm = s.solver.norm_row
    open_input = s.leaf("x", "...,1->5,6")
    assert presolved_candidates(sc, plan, (open_input.shape,), norm) == {}
    known = s.leaf("z", "1->5,6")
    assert presolved_candidates(sc, plan, (known.shape,), norm) == {
        v["r2"]: Row((Size(5),)),
        v["d4"]: Size(6),
    }


def test_a_bound_read_after_a_source_still_orders_the_variables() -> None:
    """``r3``'s bounds read the source first, then ``r2``: it is presolved
    after ``r2``, from both."""
    s = Session()
    sc, v = text_scheme(
        s,
        [
            "generalized r1, r2, r3",
            "fixed (none)",
            "arg 0 'x' [] | [] -> [...r1]",
            "result 0 'y' [] | [] -> []",
            "internal 0 'h' [] | [] -> [...r2]",
            "internal 1 'k' [] | [] -> [...r3]",
            f"ineq [...r3] <= [...r1] {ORIGIN}",
            f"ineq [...r3] <= [...r2] {ORIGIN}",
            f"ineq [...r2] <= [...r1] {ORIGIN}",
        ],
    )
    assert solved_for(sc, "3,2") == {
        v["r2"]: Row((Size(3), Size(2))),
        v["r3"]: Row((Size(3), Size(2))),
    }


def test_a_cycle_of_bounds_is_not_presolved() -> None:
    s = Session()
    sc, v = text_scheme(
        s,
        [
            "generalized r1, r2, r3",
            "fixed (none)",
            "arg 0 'x' [] | [] -> [...r1]",
            "result 0 'y' [] | [] -> []",
            "internal 0 'h' [] | [] -> [...r2]",
            "internal 1 'k' [] | [] -> [...r3]",
            f"ineq [...r2] <= [...r3] {ORIGIN}",
            f"ineq [...r3] <= [...r2] {ORIGIN}",
            f"ineq [...r2] <= [...r1] {ORIGIN}",
        ],
    )
    assert presolvable(sc, v) == []


@pytest.mark.parametrize(("gen", "presolved"), [(0, True), (1, False)])
def test_the_template_depth_limit_at_64_axes(gen: int, presolved: bool) -> None:
    """A row variable may get 64 axes in front of it, counting the axes
    templates already put in front of the variable it descends from."""
    s = Session()
    lines = [
        "generalized r1, r2",
        "fixed (none)",
        "arg 0 'x' [] | [] -> [...r1]",
        "result 0 'y' [] | [] -> []",
        "internal 0 'h' [] | [] -> [...r2]",
        f"ineq [...r2] <= [...r1] {ORIGIN}",
    ]
    if gen:
        lines.append(f"gen r2 {gen}")
    sc, v = text_scheme(s, lines)
    solved = solved_for(sc, ",".join(["2"] * 64))
    assert (v["r2"] in solved) == presolved


def test_every_capture_input_with_a_size_is_a_source() -> None:
    s = Session()
    sc, v = text_scheme(
        s,
        [
            "generalized d1, d2, d3, d4",
            "fixed (none)",
            "arg 0 'x' [] | [] -> []",
            "result 0 'y' [] | [] -> []",
            "internal 0 'h' [] | [] -> [d3, d4]",
            f"dim_ineq d3 <= d1 {ORIGIN}",
            f"dim_ineq d4 <= d2 {ORIGIN}",
            f"capture 'h' d1 {ORIGIN}",
            f"capture 'e' d2 {ORIGIN}",
        ],
    )
    s.set_dim(sc.captures[0].ref, 5)
    s.set_dim(sc.captures[1].ref, 7)
    assert solved_for(sc, "") == {v["d3"]: Size(5), v["d4"]: Size(7)}


def test_a_bound_reading_a_source_then_a_presolvable_dim_waits_for_the_dim() -> None:
    """``[...r2] <= [...r1, d2]``: the operand reads the source ``r1``, then
    ``d2``, itself presolved from the source ``d1``; ``r2`` is presolved
    after ``d2`` (whatever their ids), from both."""
    s = Session()
    sc, v = text_scheme(
        s,
        [
            "generalized r1, d1, d2, r2",
            "fixed (none)",
            "arg 0 'x' [] | [] -> [...r1, d1]",
            "result 0 'y' [] | [] -> []",
            "internal 0 'h' [] | [] -> [...r2]",
            "internal 1 'k' [] | [] -> [d2]",
            f"dim_ineq d2 <= d1 {ORIGIN}",
            f"ineq [...r2] <= [...r1, d2] {ORIGIN}",
        ],
    )
    assert v["r2"].id > v["d2"].id  # ready first if it did not wait
    assert solved_for(sc, "3,4") == {
        v["d2"]: Size(4),
        v["r2"]: Row((Size(3), Size(4))),
    }


def test_a_closed_operand_row_is_read_as_its_axes() -> None:
    s = Session()
    sc, v = text_scheme(
        s,
        [
            "generalized d1, r1",
            "fixed (none)",
            "arg 0 'x' [] | [] -> [d1]",
            "result 0 'y' [] | [] -> []",
            "internal 0 'h' [] | [] -> [...r1]",
            f"ineq [...r1] <= [d1, 2] {ORIGIN}",
        ],
    )
    assert solved_for(sc, "3") == {v["r1"]: Row((Size(3), Size(2)))}


def test_a_cycle_above_a_candidate_ends_the_guard_search() -> None:
    """``r3`` and ``r4`` bound each other above ``r2``: the search of what
    lies above ``r2`` visits each once and ends; ``r2`` is presolvable, but
    its guards (the cycle, never presolved) leave it to the application."""
    s = Session()
    sc, v = text_scheme(
        s,
        [
            "generalized r1, r2, r3, r4",
            "fixed (none)",
            "arg 0 'x' [] | [] -> [...r1]",
            "result 0 'y' [] | [] -> []",
            "internal 0 'h' [] | [] -> [...r2]",
            "internal 1 'k' [] | [] -> [...r3]",
            "internal 2 'm' [] | [] -> [...r4]",
            f"ineq [...r2] <= [...r1] {ORIGIN}",
            f"ineq [...r3] <= [...r2] {ORIGIN}",
            f"ineq [...r4] <= [...r3] {ORIGIN}",
            f"ineq [...r3] <= [...r4] {ORIGIN}",
        ],
    )
    assert presolvable(sc, v) == ["r2"]
    assert solved_for(sc, "3") == {}


def test_dropping_an_unsettled_variable_drops_what_it_guards() -> None:
    """``r4`` lies above ``r2`` and ``r3``; ``r6`` lies above ``r2`` only and
    also broadcasts from the argument's input row. With that row open,
    ``r6`` is not presolved, so ``r2`` (below it) is unsettled; ``r3`` and
    ``r4``, whose own guards are presolved, are guarded by ``r2`` and go
    with it. With the row known, all four are presolved."""
    s = Session()
    sc, v = text_scheme(
        s,
        [
            "generalized r1, r2, r3, r4, r5, r6",
            "fixed (none)",
            "arg 0 'x' [] | [...r5] -> [...r1]",
            "result 0 'y' [] | [] -> []",
            "internal 0 'a' [] | [] -> [...r2]",
            "internal 1 'b' [] | [] -> [...r3]",
            "internal 2 'c' [] | [] -> [...r4]",
            "internal 3 'd' [] | [] -> [...r6]",
            f"ineq [...r2] <= [...r1] {ORIGIN}",
            f"ineq [...r3] <= [...r1] {ORIGIN}",
            f"ineq [...r4] <= [...r2] {ORIGIN}",
            f"ineq [...r4] <= [...r3] {ORIGIN}",
            f"ineq [...r6] <= [...r2] {ORIGIN}",
            f"ineq [...r6] <= [...r5] {ORIGIN}",
        ],
    )
    assert presolvable(sc, v) == ["r2", "r3", "r4", "r6"]
    assert solved_for(sc, "...->2") == {}
    two = Row((Size(2),))
    assert solved_for(sc, "1->2") == {v[n]: two for n in ("r2", "r3", "r4", "r6")}


def test_a_capture_input_without_a_size_leaves_its_dim_to_the_argument() -> None:
    """The capture input's dim is also the argument's: a reference that
    stands for no size yet says nothing, and the argument's size is read."""
    s = Session()
    sc, v = text_scheme(
        s,
        [
            "generalized d1, d2",
            "fixed (none)",
            "arg 0 'x' [] | [] -> [d1]",
            "result 0 'y' [] | [] -> []",
            "internal 0 'h' [] | [] -> [d2]",
            f"dim_ineq d2 <= d1 {ORIGIN}",
            f"capture 'h' d1 {ORIGIN}",
        ],
    )
    assert solved_for(sc, "5") == {v["d2"]: Size(5)}


CLOSED_SOURCE = [
    "generalized d1, d2",
    "fixed (none)",
    "arg 0 'x' [] | [] -> [d1]",
    "result 0 'y' [] | [] -> []",
    "internal 0 'h' [] | [] -> [d2]",
    f"dim_ineq d2 <= d1 {ORIGIN}",
]
OPEN_SOURCE = two_row_scheme(
    [f"dim_ineq d3 <= d1 {ORIGIN}", f"dim_ineq d4 <= d2 {ORIGIN}"]
)


@pytest.mark.parametrize(
    ("lines", "spec"), [(CLOSED_SOURCE, "2,3"), (OPEN_SOURCE, "5")]
)
def test_a_source_row_that_cannot_hold_the_actual_row_presolves_nothing(
    lines: list[str], spec: str
) -> None:
    """A closed source row with fewer axes than the actual row, an open one
    that writes more axes than it has: the full application reports that."""
    s = Session()
    sc, _ = text_scheme(s, lines)
    assert solved_for(sc, spec) == {}


def test_a_size_a_source_row_writes_must_be_the_actual_one() -> None:
    s = Session()
    sc, v = text_scheme(
        s, two_row_scheme([f"ineq [...r2] <= [...r1] {ORIGIN}"], "[...r1, 4]")
    )
    assert solved_for(sc, "3,4")[v["r2"]] == Row((Size(3),))
    assert solved_for(sc, "3,5") == {}


def test_applications_with_the_same_arguments_share_their_concrete_rows() -> None:
    """Presolved values are kept per source values, and so are the concrete
    rows built from them: a second application with an argument of the same
    shape reuses the first one's internal rows instead of building its own."""
    s = Session()

    def body(xs: Sequence[Tensor]) -> list[Tensor]:
        s.pointwise("h", xs[0], s.leaf("c", "1"))
        return [xs[0]]

    sc = traced(s, body)
    applied = [
        scheme.instantiate(
            sc,
            application=f"a{i}",
            args=[s.leaf(f"x{i}", "2|3->4")],
            results=[s.fresh(f"y{i}")],
        )
        for i in range(2)
    ]
    first, second = (app.internal[1] for app in applied)
    assert first.dims() == second.dims() == ((2,), (3,), (4,))
    assert all(a is b for a, b in zip(first.rows(), second.rows(), strict=True))
