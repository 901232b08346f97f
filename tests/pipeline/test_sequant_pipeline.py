"""The pipeline on real equations (CSV-CCSD with density fitting).

For the energy and the singles residual batched over Κ and over i: the
schedule agrees numerically with the unbatched forest, and every size and
both peaks of the memory report equal those recomputed from the printed IR
by ``tests/pipeline/independent.py``.
"""

from __future__ import annotations

import re
from io import StringIO
from pathlib import Path

import pytest
from xdsl.printer import Printer

from axisflow.pipeline import ForestSchedule, schedule_expression
from axisflow.scheduling.evaluate import compare
from axisflow.sequant import parse
from tests.conftest import EXAMPLES
from tests.pipeline import independent

EXTENTS = "i=3,a=2,μ̃=2,Κ=3"


# never_worse=False, accumulate=False: the scheduler's own schedule, which
# these tests check in detail against an independent reading of the IR.


def equation(name: str) -> str:
    return Path(EXAMPLES / "sequant" / f"{name}.txt").read_text(encoding="utf-8")


def printed(forest: ForestSchedule) -> str:
    stream = StringIO()
    Printer(stream=stream).print_op(forest.forest)
    return stream.getvalue()


@pytest.mark.parametrize("name", ["csv_ccsd_energy_df", "csv_ccsd_singles_residual_df"])
@pytest.mark.parametrize("batch", ["Κ", "i"])
def test_real_equations_agree_and_their_memory_is_accounted(
    name: str, batch: str
) -> None:
    expression = parse(equation(name), source=name)
    forest = schedule_expression(
        expression,
        batch,
        extents=EXTENTS,
        elem=8,
        name=name,
        never_worse=False,
        accumulate=False,
    )
    text = printed(forest)
    assert "sched.loop over " + batch in text

    comparison = compare(forest.model, forest.schedule, seed=7)
    assert comparison.agrees, comparison.errors
    assert len(comparison.errors) == len(expression.terms)

    facts = independent.read_forest(text)
    report = forest.report
    for row in report.values:
        assert row.full_bytes == facts.size(row.name), row.name
    for line in text.splitlines():
        if m := re.search(
            r"sched\.(build|buffer) @(\w+)(?: slice \[([^\]]*)\])?.* bytes (\d+)", line
        ):
            sliced = {
                b.rsplit(":", 1)[0] for b in independent.split_labels(m.group(3) or "")
            }
            assert int(m.group(4)) == facts.size(m.group(2), sliced), line
    rows = {row.name: row for row in report.values}
    for m in re.finditer(
        r"sched\.build @(\w+)(?: slice \[([^\]]*)\])?.* bytes (\d+)", text
    ):
        assert rows[m.group(1)].piece_bytes == int(m.group(3))

    assert report.scheduled_peak == independent.schedule_peak(text, facts)
    plain = schedule_expression(
        expression,
        (),
        extents=EXTENTS,
        elem=8,
        name=name,
        never_worse=False,
        accumulate=False,
    )
    assert "sched.loop" not in printed(plain)
    assert report.unbatched_peak == independent.schedule_peak(printed(plain), facts)


@pytest.mark.parametrize("batch", ["Κ", "i", "Κ,i"])
def test_the_doubles_residual_agrees_at_small_extents(batch: str) -> None:
    forest = schedule_expression(
        equation("csv_ccsd_doubles_residual_df"),
        batch,
        extents="i=2,a=2,μ̃=2,Κ=2",
        elem=8,
        block=2 if batch == "Κ" else 1,
    )
    assert compare(forest.model, forest.schedule, seed=3).agrees


def test_cross_iteration_outer_product_from_sequant_text() -> None:
    forest = schedule_expression(
        equation("legality_cross_iteration"),
        "i",
        extents="i=4",
        elem=8,
        never_worse=False,
        accumulate=False,
    )
    (row,) = forest.report.values
    assert (row.full_bytes, row.piece_bytes, row.buffer_bytes) == (128, 8, 128)
    assert row.placement == ["i#0:scatter", "i#1:scatter"]
    assert compare(forest.model, forest.schedule).agrees


def test_separate_instances_run_each_tree_in_its_own_nest() -> None:
    expression = parse(equation("csv_ccsd_energy_df"))
    # About the file-order forest (its slot numbering): order="file".
    fused = schedule_expression(
        expression,
        "Κ",
        extents=EXTENTS,
        elem=8,
        order="file",
        never_worse=False,
        accumulate=False,
    )
    separate = schedule_expression(
        expression,
        "Κ",
        extents=EXTENTS,
        elem=8,
        separate_instances=True,
        order="file",
        never_worse=False,
        accumulate=False,
    )
    loop = r"sched\.loop over Κ instance (\d+) pass (\d+)"
    assert re.findall(loop, printed(fused)) == [("0", "0")]
    # Terms 1-4 get slots 0-3. Term 2 repeats term 1 up to the last product, so
    # its Κ values are term 1's (built once, in slot 0) and slot 1 builds
    # nothing. The first of them is used under slots 0 and 1: LoopCarried
    # (instance-aware), scattered, so slot 0 is split to accumulate over it.
    assert re.findall(loop, printed(separate)) == [
        ("0", "0"),
        ("0", "1"),
        ("2", "0"),
        ("3", "0"),
    ]
    assert "sched.scatter @v2" in printed(separate)
    assert compare(separate.model, separate.schedule).agrees
