"""Memory accounting: sizes, defaults, live ranges, peaks, the report."""

from __future__ import annotations

import json
import re
import unicodedata

from axisflow.dialects.batch_model import forest_model
from axisflow.forest.builder import ForestBuilder, use
from axisflow.forest.model import Forest
from axisflow.passes.classify_axes import classify_forest
from axisflow.pipeline.api import schedule_expression
from axisflow.scheduling.memory import (
    DEFAULT_ELEM,
    DEFAULT_EXTENT,
    Sizing,
    display_width,
    format_bytes,
    lifetimes,
    memory_report,
    pad_to_width,
    peak,
    unbatched_schedule,
)
from axisflow.scheduling.scheduler import schedule_forest
from tests.conftest import EXAMPLES, example, only_forest

# Extents of examples/pipeline/four_tensor.mlir (8-byte elements).
A, B, C, D, E, F, I_, J, K, L = 2, 3, 4, 2, 3, 2, 2, 3, 2, 2


def classified(name: str) -> Forest:
    forest_op = only_forest(example(name))
    classify_forest(forest_op)
    return forest_model(forest_op)


def test_four_tensor_sizes_and_peaks_by_hand() -> None:
    forest = classified("pipeline/four_tensor.mlir")
    report = memory_report(forest, schedule_forest(forest).schedule)
    t1, t2, s = (8 * B * C * D * F, 8 * B * C * J * K, 8 * A * B * I_ * J)
    rows = {v.name: v for v in report.values}
    assert (rows["T1"].full_bytes, rows["T1"].piece_bytes) == (t1, t1 // B // C)
    assert (rows["T2"].full_bytes, rows["T2"].piece_bytes) == (t2, t2 // B // C)
    assert (rows["S"].full_bytes, rows["S"].piece_bytes) == (s, s // B)
    assert rows["S"].buffer_bytes == s and rows["T1"].buffer_bytes is None
    assert rows["S"].placement == ["b#0:scatter", "c#1:accumulate"]
    assert rows["T1"].placement == ["b#0:slice", "c#1:slice"]
    # Unbatched: T1, T2, S in turn; T1 dies when T2 is built, T2 when S is.
    assert report.unbatched_peak == max(t1 + t2, t2 + s) == 960
    # Scheduled: the S buffer lives across the loops; per iteration the T2
    # piece and the partial S are live together when S is built.
    assert report.scheduled_peak == s + t2 // (B * C) + s // B == 432
    assert report.scheduled_live == ["@S buffer", "@T2 piece", "@S piece"]
    inputs = 8 * (B * E * F * L + C * D * E * L + D * F * J * K + A * C * I_ * K)
    assert report.input_bytes == inputs


def test_four_tensor_peak_with_blocks_of_two() -> None:
    forest = classified("pipeline/four_tensor.mlir")
    report = memory_report(forest, schedule_forest(forest, block=2).schedule)
    # b block 2 (of 3), c block 2 (of 4)
    t2_piece = 8 * 2 * 2 * J * K
    s_piece = 8 * A * 2 * I_ * J
    assert report.scheduled_peak == 8 * A * B * I_ * J + t2_piece + s_piece


def test_sibling_nests_peaks_by_hand() -> None:
    forest = classified("pipeline/sibling_nests.mlir")
    report = memory_report(forest, schedule_forest(forest).schedule)
    i, a = 4, 3
    x, r1, r2 = 8 * i * a, 8 * i, 8 * i * i
    # Unbatched: X, R1 (output), R2 (output): X is read by R1 and R2.
    assert report.unbatched_peak == max(x + r1, x + r2)
    # Scheduled: R1's buffer is released by its output before the sibling
    # nest allocates R2's; X's buffer lives until R2 is built.
    assert report.scheduled_peak == x + r2 + r2 // i


def test_defaults_when_the_forest_declares_no_sizes() -> None:
    builder = ForestBuilder().input("A", "i_1 a_1").input("B", "a_1")
    builder.contraction("V", "i_1", "A i_1 a_1", "B a_1")
    builder.tree("t", use("V", "i_1", use("A", "i_1 a_1"), use("B", "a_1")))
    forest = builder.finish()
    sizing = Sizing(forest)
    assert sizing.extent("i") == DEFAULT_EXTENT and sizing.is_default("i")
    assert sizing.full_bytes(forest.values["V"]) == DEFAULT_EXTENT * DEFAULT_ELEM
    report = memory_report(forest, schedule_forest(forest).schedule)
    assert report.default_extents == ["a", "i"]
    assert "i=4*" in report.table()


def test_element_size_follows_the_spaces_of_the_modes() -> None:
    builder = ForestBuilder().space("i", 3, elem=4).space("a", 2, elem=2).space("k", 5)
    builder.input("X", "i_1 a_1").input("Y", "a_1").input("Z", "k_1")
    forest = builder.finish()
    sizing = Sizing(forest)
    assert sizing.elem(forest.values["X"]) == 4  # the larger of i and a
    assert sizing.elem(forest.values["Y"]) == 2
    assert sizing.elem(forest.values["Z"]) == 4  # k has none: the forest's largest
    assert sizing.full_bytes(forest.values["X"]) == 3 * 2 * 4


def test_proto_indices_are_modes_of_their_composite() -> None:
    builder = ForestBuilder().space("a", 5).space("i", 3).space("m", 2)
    builder.input("C", "a_1<i_1,i_2> m_1")
    forest = builder.finish()
    # modes a_1<i_1,i_2>, m_1, i_1, i_2
    assert Sizing(forest).elements(forest.values["C"]) == 5 * 2 * 3 * 3


def test_the_residual_is_sized_by_its_composite_kinds() -> None:
    # R{a_1<i_1,i_2>;i_1} with a<2> = 2 (the space a has 5): the residual
    # buffer, its operator steps and the evaluator's inputs all size a
    # composite mode by its kind, as every value is sized.
    planned = schedule_expression(
        "t{a_1<i_1,i_2>;i_1} * f{i_2;i_3} * s{i_3;i_2}",
        extents="a=5,i=3,a<2>=2",
        elem=8,
    )
    residual = planned.residual
    assert residual is not None
    assert [m.full_label for m in residual.modes] == ["a_1<i_1,i_2>", "i_1", "i_2"]
    assert planned.report.residual_bytes == 8 * 2 * 3 * 3
    sizing = Sizing(planned.model, {"a<2>": 2})
    assert sizing.mode_bytes(residual.modes) == 8 * 2 * 3 * 3
    assert Sizing(planned.model, {"a<2>": 4}).mode_bytes(residual.modes) == 8 * 4 * 9


def test_peak_sweep_releases_after_the_last_use() -> None:
    forest = classified("pipeline/four_tensor.mlir")
    found = lifetimes(forest, unbatched_schedule(forest))
    assert [(life.value, life.start, life.end) for life in found] == [
        ("T1", 1, 2),
        ("T2", 2, 3),
        ("S", 3, 4),
    ]
    assert peak(found).bytes == 960


def test_report_as_json_and_table() -> None:
    forest = classified("pipeline/demotion.mlir")
    report = memory_report(forest, schedule_forest(forest).schedule)
    data = json.loads(report.json_text())
    assert data["forest"] == "demotion"
    assert data["extents"] == {"a": 3, "Κ": 5}
    assert data["rounds"] == 2
    assert data["unbatched_peak_bytes"] == report.unbatched_peak
    w = next(v for v in data["values"] if v["name"] == "W")
    assert w == {
        "name": "W",
        "modes": ["Κ_1", "a_1"],
        "full_bytes": 5 * 3 * 8,
        "piece_bytes": 3 * 8,
        "buffer_bytes": 5 * 3 * 8,
        "placement": ["Κ#0:scatter"],
        "demoted_instances": [0],
    }
    table = report.table()
    assert "@W     Κ_1 a_1  120 B  24 B       120 B   Κ#0:scatter" in table
    assert "scheduling rounds: 2" in table


def test_format_bytes() -> None:
    assert format_bytes(1023) == "1023 B"
    assert format_bytes(1536) == "1.5 KiB"
    assert format_bytes(3 * 1024**3) == "3 GiB"


def test_display_width_counts_columns_not_code_points() -> None:
    assert display_width("μ̃_1") == 3  # μ, a combining tilde (no column), _, 1
    assert len("μ̃_1") == 4
    assert display_width("Κ_1 a_1<i_1>") == 12
    assert display_width("張量") == 4  # East Asian wide characters take two
    assert pad_to_width("μ̃_1", 5) == "μ̃_1  "


def _columns(line: str) -> list[int]:
    """Display columns where the cells of a table line start, counted without
    the helper under test: drop combining marks, then count code points."""
    visible = "".join(c for c in line if not unicodedata.combining(c))
    return [m.start() for m in re.finditer(r"(?<=  )\S", visible)]


def test_table_aligns_rows_with_combining_marks() -> None:
    # The CSV-CCSD energy has μ̃ (mu + U+0303) in some rows' modes only.
    text = (EXAMPLES / "sequant" / "csv_ccsd_energy_df.txt").read_text(encoding="utf-8")
    report = schedule_expression(text, "i", extents="i=3,a=2,μ̃=2,Κ=3").report
    lines = report.table().splitlines()
    header = next(k for k, line in enumerate(lines) if line.startswith("  value"))
    rows = [line for line in lines[header + 1 :] if line.startswith("  @")]
    with_tilde = [row for row in rows if "μ̃" in row]
    assert with_tilde and len(with_tilde) < len(rows)
    expected = _columns(lines[header])
    assert len(expected) == 6
    for row in rows:
        assert _columns(row) == expected, row
