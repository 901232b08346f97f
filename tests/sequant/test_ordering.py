"""Term plans and the labels their values carry."""

from __future__ import annotations

from pathlib import Path

import pytest

from axisflow.order import ORDERS, Costs, Extents, Order, expand_modes
from axisflow.roles.index import Index
from axisflow.sequant import parse
from axisflow.sequant.ordering import batched_size, plan_term, step_labels, term_modes

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sequant"
EXTENTS = Extents.make({"i": 80, "a": 896, "μ̃": 896, "Κ": 1682, "a<2>": 40})


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.txt")), ids=lambda p: p.name)
def test_every_value_carries_exactly_the_modes_the_plan_keeps(
    path: Path, order: Order
) -> None:
    for term in parse(path.read_text("utf-8")).terms:
        plan = plan_term(term, Costs(EXTENTS), order)
        for (result, contracted), kept in zip(
            step_labels(term, plan), plan.kept, strict=True
        ):
            assert frozenset(expand_modes(result)) == kept
            assert not set(contracted) & set(result)


def test_a_mode_needed_only_through_a_composite_stays_as_an_index() -> None:
    # i_1 is on X and Y only, but the composite c_1<i_1> of Z and W depends on
    # it: summing i_1 at X*Y would be wrong, so X*Y keeps it.
    (term,) = parse("X{;i_1} * Y{i_1;} * Z{c_1<i_1>;} * W{;c_1<i_1>}").terms
    plan = plan_term(term, Costs(Extents()), "file")
    (first, _), _, _ = step_labels(term, plan)
    assert first == (Index.parse("i_1"),)


def test_parenthesized_terms_keep_their_pairs() -> None:
    (term,) = parse("(g{a_1;i_1} * t{i_1;j_1}) * (f{j_1;k_1} * u{k_1;a_1})").terms
    for order in ORDERS:
        plan = plan_term(term, Costs(EXTENTS), order)
        assert plan.steps == ((0, 1), (2, 3), (4, 5))


def test_batched_sizes_slice_looped_modes_until_a_reduction() -> None:
    i1, i2, a1, k1 = map(Index.parse, ["i_1", "i_2", "a_1", "Κ_1"])
    extents = Extents.make({"i": 10, "a": 7, "Κ": 5})
    modes = frozenset({i1, i2, a1, k1})
    size = batched_size(extents, [k1, i1], modes, frozenset({i1, i2}))
    # Carries both looped modes: a slice of each.
    assert size(frozenset({i1, k1, a1}), frozenset({i1, k1, a1})) == 7
    # Κ_1 (the outer loop) summed below: i_1 now counts in full.
    assert size(frozenset({i1, a1}), frozenset({i1, k1, a1})) == 70
    # i_1 (the inner loop) summed below: Κ_1 stays sliced.
    assert size(frozenset({k1, a1}), frozenset({i1, k1, a1})) == 7
    # The root: its full buffer.
    assert size(frozenset({i1, i2}), modes) == 100


def test_term_modes_include_protos() -> None:
    (term,) = parse("t{a_1<i_1,i_2>;i_3}").terms
    assert term_modes(term) == frozenset(
        map(Index.parse, ["a_1<i_1,i_2>", "i_1", "i_2", "i_3"])
    )
