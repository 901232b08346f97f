"""``classify-axes`` decides the roles on the model as read from verified IR
(``forest_model(..., finish=False)``): the roles derive the only derived data
they read (the mode maps of use-sites of values with proto modes). These
tests hold that model against the finished one on random expressions with
composites and nested protos, and on the bundled SeQuant equations."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from axisflow.dialects.batch import ForestOp
from axisflow.dialects.batch_model import forest_model, forest_module
from axisflow.forest.model import Forest, ModelError, Site
from axisflow.forest.roles import Verdicts, classify
from axisflow.passes.classify_axes import classify_forest
from axisflow.roles.index import Index
from axisflow.sequant import BatchPolicy, Expression, build_forest, parse
from tests.forest.strategies import expressions

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "sequant"

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def verified_forest(expression: Expression, batch: str) -> ForestOp:
    """The ``batch.forest`` op of ``expression`` batched over ``batch``,
    verified as xdsl-opt verifies it before a pass."""
    policy = BatchPolicy(spaces=tuple(s for s in batch.split(",") if s))
    module = forest_module(build_forest(expression, policy))
    module.verify()
    forest = module.body.block.first_op
    assert isinstance(forest, ForestOp)
    return forest


def evidence(verdicts: Verdicts) -> dict[tuple[str, Index], tuple[object, ...]]:
    """Every verdict's role and evidence, by value and axis."""
    return {
        (name, axis): (v.role, v.reason, v.occurrence, v.index, v.details)
        for name, found in verdicts.items()
        for axis, v in found.items()
    }


def both_ways(
    forest: ForestOp, explain: bool
) -> tuple[Forest, Verdicts, Forest, Verdicts]:
    finished = forest_model(forest, with_roles=False)
    read = forest_model(forest, with_roles=False, finish=False)
    return (
        finished,
        classify(finished, explain=explain),
        read,
        classify(read, explain=explain),
    )


@SETTINGS
@given(expressions())
def test_the_roles_of_the_read_model_are_those_of_the_finished_one(
    case: tuple[Expression, str],
) -> None:
    expression, batch = case
    forest = verified_forest(expression, batch)
    for explain in (False, True):
        finished, on_finished, read, on_read = both_ways(forest, explain)
        assert evidence(on_read) == evidence(on_finished)
        assert read.roles == finished.roles


@pytest.mark.parametrize(
    ("equation", "batch"),
    [
        ("csv_ccsd_energy_df.txt", "i,Κ"),
        ("csv_ccsd_singles_residual_df.txt", "i"),
        ("csv_ccsd_doubles_residual_df.txt", "i,μ̃"),
    ],
)
def test_the_bundled_equations_classify_alike_read_or_finished(
    equation: str, batch: str
) -> None:
    expression = parse((EXAMPLES / equation).read_text(encoding="utf-8"))
    forest = verified_forest(expression, batch)
    finished, on_finished, read, on_read = both_ways(forest, explain=True)
    assert evidence(on_read) == evidence(on_finished)
    assert read.roles == finished.roles
    # Composite indices with sliced protos are among them: the read model
    # derived those mode maps, and only those.
    with_protos = {
        name
        for name, value in read.values.items()
        if any(i.protos for i in value.result)
    }
    mapped = {site.value for site in read.sites if site.mode_map}
    assert mapped <= with_protos
    assert mapped, f"{equation}: no use-site of a value with proto modes was read"


def test_classify_forest_returns_the_verdicts_it_attached() -> None:
    expression = parse(
        (EXAMPLES / "csv_ccsd_energy_df.txt").read_text(encoding="utf-8")
    )
    forest = verified_forest(expression, "i,Κ")
    verdicts = classify_forest(forest)
    again = forest_model(forest)  # reads the roles attached to the IR
    assert again.roles == {
        (name, axis.base_key): verdict.role
        for name, found in verdicts.items()
        for axis, verdict in found.items()
    }
    assert again.roles


def test_a_use_site_of_an_unknown_value_is_a_model_error() -> None:
    expression = parse("A{i_1;a_1} * B{a_1;i_1}")
    read = forest_model(
        verified_forest(expression, "i"), with_roles=False, finish=False
    )
    read.sites.append(Site(len(read.sites), "nowhere", 0, (Index("i", 1),), (), None))
    with pytest.raises(
        ModelError, match=r"^use-site of @nowhere in tree @\S+: unknown value @nowhere$"
    ):
        classify(read)


def test_a_proto_mode_map_that_does_not_derive_is_a_model_error() -> None:
    # A value with a composite read under labels that do not relabel it: the
    # read model derives its mode map only when the roles need it, and the
    # failure names the use-site.
    expression = parse("A{a_1<i_1>;i_1} * B{i_1;a_1<i_1>}")
    read = forest_model(
        verified_forest(expression, "i"), with_roles=False, finish=False
    )
    site = next(
        s for s in read.sites if any(i.protos for i in read.values[s.value].result)
    )
    broken = Site(
        len(read.sites),
        site.value,
        site.tree,
        tuple(Index("j", 1) for _ in site.labels),
        site.loops,
        site.parent,
    )
    read.sites.append(broken)
    with pytest.raises(ModelError, match=rf"^use-site of @{site.value} in tree @\S+: "):
        read.site_mode_map(broken)
