"""The ``order`` option of the frontend: file order is today's fold exactly,
parentheses are kept, CSE survives reordering, batch-aware sizes steer the
memory order, composite extents reach the IR and the memory model."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from axisflow.forest.frames import expand_modes
from axisflow.forest.model import Forest, Site
from axisflow.order import ORDERS, Costs, Extents, Order
from axisflow.pipeline import schedule_expression
from axisflow.roles.index import Index
from axisflow.sequant import (
    BatchPolicy,
    Expression,
    PolicyError,
    build_forest,
    parse,
    to_module,
)
from axisflow.sequant.ordering import plan_term
from axisflow.sequant.syntax import Term, repeat_with_fresh_labels

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sequant"
FILES = sorted(EXAMPLES.glob("*.txt"))


def _reference_fold(term: Term) -> list[tuple[tuple[Index, ...], tuple[Index, ...]]]:
    """(result, contracted) of every node of the left-to-right fold, by the
    frontend's rule: an index stays if it is external or a later tensor
    carries it; the contracted ones are on both operands and not modes of
    the result."""
    tensors = term.tensors
    externals = set(term.externals())
    last = {i: k for k, t in enumerate(tensors) for i in t.indices}
    carried = tensors[0].indices
    found: list[tuple[tuple[Index, ...], tuple[Index, ...]]] = []
    for position in range(1, len(tensors)):
        right = tensors[position].indices
        operands = carried + tuple(i for i in right if i not in carried)
        result = tuple(i for i in operands if i in externals or last[i] > position)
        modes = set(expand_modes(result))
        contracted = tuple(i for i in carried if i in right and i not in modes)
        found.append((result, contracted))
        carried = result
    return found


def _children(forest: Forest, site: Site) -> list[Site]:
    return [forest.sites[child] for child in site.children]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_file_order_is_the_left_to_right_fold_exactly(path: Path) -> None:
    expression = parse(path.read_text("utf-8"))
    forest = build_forest(expression, order="file")
    for tree, term in zip(forest.trees, expression.terms, strict=True):
        assert tree.root is not None
        spine = [forest.sites[tree.root]]
        while spine[-1].children:
            spine.append(forest.sites[spine[-1].children[0]])
        nodes = spine[-2::-1]  # bottom-up, without the first leaf
        expected = _reference_fold(term)
        assert len(nodes) == len(expected)
        for site, (result, contracted), tensor in zip(
            nodes, expected, term.tensors[1:], strict=True
        ):
            assert site.labels == result
            assert _children(forest, site)[1].labels == tensor.indices
            value = forest.values[site.value]
            assert tuple(site.mode_labels[m] for m in value.contracted) == contracted


@pytest.mark.parametrize("order", ORDERS)
def test_parenthesized_products_are_built_as_written(order: Order) -> None:
    text = "(g{a_1;i_1} * t{i_1;j_1}) * (f{j_1;k_1} * u{k_1;a_1})"
    forest = build_forest(parse(text), order=order)
    (tree,) = forest.trees
    assert tree.root is not None
    left, right = _children(forest, forest.sites[tree.root])
    assert [u.labels for u in _children(forest, left)] == [
        tuple(map(Index.parse, ["a_1", "i_1"])),
        tuple(map(Index.parse, ["i_1", "j_1"])),
    ]
    assert [u.labels for u in _children(forest, right)] == [
        tuple(map(Index.parse, ["j_1", "k_1"])),
        tuple(map(Index.parse, ["k_1", "a_1"])),
    ]


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize(
    "path", sorted(EXAMPLES.glob("csv_ccsd_*.txt")), ids=lambda p: p.name
)
def test_cse_shares_every_value_of_a_renamed_copy_after_reordering(
    path: Path, order: Order
) -> None:
    expression = parse(path.read_text("utf-8"))
    policy = BatchPolicy.make(extents="i=80,a=896,μ̃=896,Κ=1682,a<2>=40")
    alone = build_forest(expression, policy, order=order)
    twice = Expression(repeat_with_fresh_labels(expression.terms, 2))
    both = build_forest(twice, policy, order=order)
    assert both.values == alone.values
    roots = [
        both.sites[tree.root].value for tree in both.trees if tree.root is not None
    ]
    half = len(roots) // 2
    assert roots[:half] == roots[half:]


def test_flops_order_shares_intermediates_across_terms_of_the_doubles() -> None:
    expression = parse((EXAMPLES / "csv_ccsd_doubles_residual_df.txt").read_text())
    forest = build_forest(expression, BatchPolicy.make(extents="i=80,a=896,Κ=1682"))
    counts = dict.fromkeys(forest.values, 0)
    for site in forest.sites:
        counts[site.value] += 1
    shared = [
        name for name, v in forest.values.items() if v.factors and counts[name] > 1
    ]
    assert len(shared) >= 10


def test_batch_sizes_steer_the_memory_order() -> None:
    # B*X keeps (i_1, k_1): under batch=i only a slice of it lives at a time.
    text = "A{;i_1} * B{;j_1} * X{i_1,j_1;k_1}"
    extents = "i=10,j=10,k=3"
    plain = build_forest(parse(text), BatchPolicy.make((), extents), order="memory")
    batched = build_forest(parse(text), BatchPolicy.make("i", extents), order="memory")
    (tree,) = plain.trees
    assert tree.root is not None
    first, _ = _children(plain, plain.sites[tree.root])
    assert [u.value for u in _children(plain, first)] == ["A_0", "X_0"]
    (tree,) = batched.trees
    assert tree.root is not None
    first, second = _children(batched, batched.sites[tree.root])
    assert first.value == "A_0"
    assert [u.value for u in _children(batched, second)] == ["B_0", "X_0"]


def test_frontend_and_report_agree_on_the_multiply_adds() -> None:
    expression = parse((EXAMPLES / "csv_ccsd_energy_df.txt").read_text())
    extents = "i=80,a=896,μ̃=896,Κ=1682,a<2>=40,a<1>=60"
    costs = Costs(
        Extents.make({"i": 80, "a": 896, "μ̃": 896, "Κ": 1682, "a<2>": 40, "a<1>": 60})
    )
    # Term 2 repeats term 1 up to its last tensor: shared values count once.
    first = schedule_expression(
        Expression(expression.terms[1:2]), extents=extents, elem=8
    )
    assert first.report.flops == plan_term(expression.terms[1], costs, "flops").flops
    doubled = schedule_expression(
        Expression(repeat_with_fresh_labels(expression.terms[1:2], 2)),
        extents=extents,
        elem=8,
    )
    assert doubled.report.flops == first.report.flops
    report = json.loads(doubled.report.json_text())
    assert report["flops"] == first.report.flops
    assert f"multiply-adds: {first.report.flops:.4g}" in doubled.report.table()


def test_composite_extents_reach_the_ir_and_the_memory_model() -> None:
    text = "t{a_1<i_1,i_2>;i_1,i_2} * s{a_1<i_1,i_2>;i_1,i_2} * v{a_2<i_1>;i_1}"
    extents = "i=80,a=896,a<2>=40,a<1>=60"
    printed = str(to_module(parse(text), extents=extents, elem=8))
    assert "batch.space a extent 896 elem 8 composite {1 = 60, 2 = 40}" in printed
    forest = schedule_expression(text, extents=extents, elem=8)
    t, v = 40 * 80 * 80, 60 * 80
    assert forest.report.input_bytes == 8 * (2 * t + v)
    assert forest.report.extents["a<2>"] == 40


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"order": "fastest"}, "order must be one of file, flops, memory"),
        ({"extents": "a<0>=4"}, "composite kind 'a<0>' has no protos"),
        ({"extents": "a<1>=0"}, "extent of composite kind 'a<1>' must be positive"),
    ],
)
def test_order_and_extent_errors(options: dict[str, str], message: str) -> None:
    expression = parse("t{a_1<i_1>;i_1}")
    with pytest.raises(PolicyError, match=re.escape(message)):
        to_module(expression, **options)  # type: ignore[arg-type]
